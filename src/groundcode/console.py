"""The CLI's console: where one-line errors and tables go, and the quieting of libraries' own
output. A leaf (the `groundcode` commands in cli.py, server/cli.py and server/lsp_cli.py import
it; it imports none of them).

    err.print(...)          # rich on stderr
    error("message")        # one line on stderr, never markup
    _quiet_libraries()      # transformers' chatter off, deprecation warnings once
"""
from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape


def _console(stderr: bool) -> Console:
    """No emoji codes (`FILE:a:b` stays text), and a wide page when piped (rich would cut
    tables to 80 columns)."""
    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    return Console(stderr=stderr, emoji=False, width=None if tty else 200)


err = _console(stderr=True)


def error(message: str) -> None:
    """One line on stderr; the message is text, never rich markup."""
    err.print(f"[red]error:[/red] {escape(str(message))}", highlight=False, soft_wrap=True)


def _quiet_libraries() -> None:
    import warnings
    # a library's deprecation notice is said once per run, not once per forward pass (a
    # 27-minute `bench run` logged thousands); their causes are fixed where they are ours
    warnings.filterwarnings("once", category=FutureWarning)
    warnings.filterwarnings("once", category=DeprecationWarning)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:  # transformers missing or changed: only cosmetics are lost
        pass


def analyzer_option():
    """`--analyzer` of complete, generate, serve and lsp (one definition): jedi or an installed
    language server; $GROUNDCODE_ANALYZER sets the default (a config key every command reads)."""
    import typer
    return typer.Option("auto", "--analyzer", envvar="GROUNDCODE_ANALYZER",
                        help="auto (ty's answers checked by Jedi before a block where ty is installed, "
                             "else Jedi), jedi, a language server installed with `groundcode analyzers "
                             "install NAME` (ty, zuban, pyrefly, basedpyright, jedi-ls), or SERVER+jedi")


def analysis_deadline_option():
    """`--analysis-deadline` of complete, generate, serve and lsp (one definition, one default)."""
    import typer
    return typer.Option(2.0, "--analysis-deadline", help="seconds per (warm) analysis call before "
                        "its trigger fails open; the first, cold call may take up to 20 s")


def old_deadline_option():
    """complete's and generate's old `--deadline` (the analysis deadline): hidden, deprecated."""
    import typer
    return typer.Option(None, "--deadline", hidden=True, help="deprecated: --analysis-deadline")


def analysis_deadline(value: float, old: float | None) -> float:
    """--analysis-deadline, or the deprecated --deadline it replaced in complete and generate
    (in serve and lsp --deadline is the request's deadline: one word, one meaning), with a
    warning."""
    if old is None:
        return value
    err.print("[yellow]warning:[/yellow] --deadline is deprecated for complete and generate: it is "
              "--analysis-deadline (seconds per analysis call); in serve and lsp --deadline is the "
              "request's deadline", highlight=False)
    return old
