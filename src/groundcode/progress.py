"""Progress of long work (`bench run`, `bench score`, `augment`, `index`, `models pull`): a rich
bar on a terminal; elsewhere (a log file, CI, a background job) one plain line per task at most
every `interval` seconds (30 by default, $GROUNDCODE_PROGRESS_S) and when it ends:

    bench monitored: 120/1493 (8.0%) 1.9/s, ETA 12:02

    with progress_bar("[progress.description]{task.description}", BarColumn(), ...) as bar:
        t = bar.add_task("work", total=n); bar.advance(t)      # rich's Progress API either way
Test: tests/test_progress.py.
"""
from __future__ import annotations

import os
import sys
import time

from rich.progress import Progress

INTERVAL_S = 30.0


class LineProgress(Progress):
    """rich's Progress, drawing nothing, printing a line per task every `interval` seconds."""

    def __init__(self, *columns, interval: float | None = None, stream=None, **kw):
        kw.pop("transient", None)
        kw.pop("console", None)
        super().__init__(*columns, disable=True, **kw)
        env = os.environ.get("GROUNDCODE_PROGRESS_S")
        self.interval = float(env) if interval is None and env else (INTERVAL_S if interval is None else interval)
        self.stream = stream or sys.stderr
        self._said: dict = {}

    def _line(self, task_id, final: bool = False) -> None:
        t = next((t for t in self.tasks if t.id == task_id), None)
        if t is None:
            return
        now = time.monotonic()
        last = self._said.get(task_id)
        if not final and last is not None and now - last < self.interval:
            return
        if final and last == -1.0:
            return
        self._said[task_id] = -1.0 if final else now
        done, total = t.completed, t.total
        parts = [f"{t.description or 'progress'}: {done:g}"]
        if total:
            parts[0] += f"/{total:g} ({100 * done / total:.1f}%)"
        rate = t.speed or (done / t.elapsed if t.elapsed else None)
        if rate:
            parts.append(f"{rate:.2f}/s")
            if total and not final:
                left = max(0.0, (total - done) / rate)
                parts.append(f"ETA {int(left // 60)}:{int(left % 60):02d}")
        if final:
            parts.append(f"done in {t.elapsed or 0:.0f} s")
        print(", ".join(parts), file=self.stream, flush=True)

    def add_task(self, *a, **kw):
        task_id = super().add_task(*a, **kw)
        self._said[task_id] = None
        self._line(task_id)
        return task_id

    def advance(self, task_id, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._line(task_id)

    def update(self, task_id, **kw) -> None:
        super().update(task_id, **kw)
        self._line(task_id)

    def stop(self) -> None:
        for t in list(self.tasks):
            self._line(t.id, final=True)
        super().stop()


def is_terminal(console=None) -> bool:
    stream = getattr(console, "file", None) or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(*columns, **kw) -> Progress:
    """A rich Progress on a terminal, a LineProgress otherwise (same API)."""
    if is_terminal(kw.get("console")):
        return Progress(*columns, **kw)
    return LineProgress(*columns, **kw)
