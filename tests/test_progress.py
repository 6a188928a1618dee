"""Long work tells where it is when not on a terminal (issue 28): a plain line per task at most
every interval, with done/total, rate and ETA, and a last line when it ends."""
from __future__ import annotations

import io
import time

from groundcode.progress import LineProgress, progress_bar


def test_lines_when_not_on_a_terminal():
    out = io.StringIO()
    with LineProgress(interval=0.05, stream=out) as bar:
        t = bar.add_task("bench monitored", total=10)
        for _ in range(10):
            time.sleep(0.02)
            bar.advance(t)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("bench monitored: 0/10")
    assert any("ETA" in ln and "/s" in ln for ln in lines[1:-1]), lines
    assert 3 <= len(lines) <= 8, lines                        # throttled, not one per step
    assert lines[-1].startswith("bench monitored: 10/10 (100.0%)") and "done in" in lines[-1]


def test_a_pipe_gets_lines_a_terminal_gets_the_bar():
    from rich.progress import Progress
    assert isinstance(progress_bar(), LineProgress)            # pytest's stdout is no terminal

    class Tty(io.StringIO):
        def isatty(self):
            return True
    from rich.console import Console
    bar = progress_bar(console=Console(file=Tty()))
    assert type(bar) is Progress
