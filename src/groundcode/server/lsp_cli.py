"""The `groundcode lsp` command (typer): flags into a Completer, then the stdio server. pygls is
imported only when the command runs (server/lsp.py).

    groundcode lsp [--model tiny] [--workspace DIR ...] [--max-new-tokens 64] [--debounce-ms 50]
                   [--stop auto|statement|line|block] [--deadline 30] [--analysis-deadline 2]
                   [--no-monitor] [--suffix-tokens 0]

Tested by tests/test_lsp_server.py and tests/test_lsp_nvim.py (which start it as a process).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Optional

import typer

from ..console import analysis_deadline_option, analyzer_option


def lsp_cmd(model: Optional[str] = typer.Option(None, "--model", "-m", help="registry name, tiny, a "
                                                "local path or an HF id (default: smollm2-135m once pulled)"),
            workspace: List[Path] = typer.Option([], "--workspace", "-w", help="analyzer root "
                                                 "(repeatable; the editor's workspace folders are added)"),
            device: Optional[str] = typer.Option(None, help="cpu, cuda, ..."),
            dtype: Optional[str] = typer.Option(None, help="float32, bfloat16, float16, int8 (CPU), gguf (CPU: llama.cpp) "
                                                "(default on a CPU: gguf where llama-cpp-python is installed and the model is a registry model, else int8 with AVX512-BF16/AMX, else float32; bfloat16 on CUDA)"),
            max_new_tokens: int = typer.Option(64, "--max-new-tokens", "-n", help="cap per completion; "
                                               "a completion normally ends at its line, statement or block"),
            stop: str = typer.Option("auto", "--stop", help="auto: a block after a ':' that opens one, "
                                     "else the statement; or line, statement, block"),
            debounce_ms: float = typer.Option(50.0, "--debounce-ms", help="wait this long before "
                                              "starting a request (a newer one on the document replaces it)"),
            deadline: float = typer.Option(30.0, "--deadline", help="seconds per request, as `serve "
                                           "--deadline`: the completion is cut there at a grounded "
                                           "boundary (finish_reason deadline)"),
            analysis_deadline: float = analysis_deadline_option(),
            python: Optional[Path] = typer.Option(None, "--python", help="the interpreter whose "
                                                  "installed libraries the analyzer sees (default: "
                                                  "the workspace's .venv, else this one)"),
            no_monitor: bool = typer.Option(False, "--no-monitor", help="plain decoding (no grounding)"),
            suffix_tokens: int = typer.Option(0, "--suffix-tokens", help="the code after the cursor "
                                              "a fill-in-the-middle model sees (tokens; re-read at every "
                                              "keystroke: longer is slower on a CPU; 0: none, the "
                                              "editor's measured best, docs/EDITORS.md)"),
            lookahead: int = typer.Option(2, "--lookahead", help="after a suggestion, this many rows "
                                          "with other first characters run while idle: drafts for "
                                          "the next keystroke (0: off)"),
            analyzer: str = analyzer_option(),
            trust: bool = typer.Option(False, "--trust", help="trust the --workspace roots and the "
                                       "folders the editor names at initialize (never one added "
                                       "later): the analyzer may start their own .venv/venv "
                                       "interpreter (also the initialization option "
                                       "{\"trust\": true}; untrusted: its "
                                       "site-packages are read as files, nothing of it runs)"),
            log_level: str = typer.Option("WARNING", "--log-level", help="stderr logging")) -> None:
    """Serve completions to an editor over the Language Server Protocol (stdio)."""
    from ..console import _quiet_libraries, error
    from ..errors import GroundcodeError
    _quiet_libraries()
    try:
        level = logging.getLevelNamesMapping().get(log_level.upper())
        if not isinstance(level, int):
            raise GroundcodeError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {log_level!r}")
        logging.basicConfig(level=level, format="groundcode-lsp %(levelname)s %(message)s")
        # a library's warnings (torch, transformers) are not errors: an editor logs every stderr
        # line of a server as one, so they go to the log only when asked for (--log-level INFO)
        logging.captureWarnings(True)
        logging.getLogger("py.warnings").setLevel(logging.INFO if level <= logging.INFO else logging.CRITICAL)
        completer, serve_stdio = _prepare(model, workspace, device, dtype, max_new_tokens, stop,
                                          debounce_ms, deadline, python, no_monitor, lookahead, trust,
                                          analyzer, analysis_deadline, suffix_tokens)
    except GroundcodeError as exc:
        error(str(exc))
        raise typer.Exit(2)
    serve_stdio(completer)


def _prepare(model, workspace, device, dtype, max_new_tokens, stop, debounce_ms, deadline, python,
             no_monitor, lookahead: int = 2, trust: bool = False, analyzer: str = "jedi",
             analysis_deadline: float = 2.0, suffix_tokens: int = 0):
    """Check the flags (one-line errors) and start loading the model: (Completer, serve)."""
    from ..config import MonitorConfig, PromptConfig
    from ..errors import GroundcodeError
    if max_new_tokens < 1:
        raise GroundcodeError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    if deadline <= 0:
        raise GroundcodeError(f"--deadline must be > 0 seconds, got {deadline}")
    if analysis_deadline <= 0:
        raise GroundcodeError(f"--analysis-deadline must be > 0 seconds, got {analysis_deadline}")
    if debounce_ms < 0:
        raise GroundcodeError(f"--debounce-ms must be >= 0, got {debounce_ms}")
    if lookahead < 0:
        raise GroundcodeError(f"--lookahead must be >= 0, got {lookahead}")
    if suffix_tokens < 0:
        raise GroundcodeError(f"--suffix-tokens must be >= 0, got {suffix_tokens}")
    from ..analysis.lsp_servers import check_analyzer
    analyzer = check_analyzer(analyzer)       # not installed: one line now, not per request
    if stop not in ("auto", "line", "statement", "block"):
        raise GroundcodeError(f"--stop must be auto, line, statement or block, got {stop!r}")
    for w in workspace:
        if not w.is_dir():
            raise GroundcodeError(f"--workspace {w} is not a directory")
    try:
        from .lsp import serve_stdio
    except ImportError as exc:
        raise GroundcodeError(f"groundcode lsp needs pygls: pip install 'groundcode[lsp]' ({exc})") from None
    from .lsp_completer import Completer

    def load():
        from ..api import Generator
        from ..models.load import serving_dtype
        from ..session import Session
        gen = Generator(model, MonitorConfig(enabled=not no_monitor, analyzer=analyzer,
                                             deadline_s=analysis_deadline), device=device,
                        dtype=serving_dtype(dtype, device, model), prompt=PromptConfig(suffix_tokens=suffix_tokens))
        Session(gen, lookahead=lookahead)     # the generator's session: the editor's
        return gen

    completer = Completer(load, workspace, max_new_tokens=max_new_tokens, debounce_s=debounce_ms / 1000,
                          deadline_s=deadline, stop=stop, python=python, trust=trust)
    return completer, serve_stdio
