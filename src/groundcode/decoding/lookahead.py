"""The scheduler's idle work (a mixin of scheduler.Scheduler): after a cursor suggestion, while
every session is idle and the machine is not busy with other processes, up to `lookahead` rows
that may not start as a suggestion there already does run, their text kept as drafts for the
next keystroke. A request that arrives ends them at once: between scheduler turns (`_preempt`),
or between two decoder layers of a forward under way (`_idle_work_gives_way`, preempt.py).
Test: tests/test_drafts.py.
"""
from __future__ import annotations

import time

from .jobs import _Ahead, _Job


BUSY_SHARE = 0.5            # other processes using more than this share of the cores: no idle work
_BUSY = {"t": 0.0, "busy": False}


def _busy_share() -> float:
    """BUSY_SHARE, or GROUNDCODE_BUSY_SHARE where set ("inf": idle work whatever the load; "0":
    only on a machine nothing else uses)."""
    import os
    raw = os.environ.get("GROUNDCODE_BUSY_SHARE", "")
    try:
        return float(raw) if raw else BUSY_SHARE
    except ValueError:
        return BUSY_SHARE


def _machine_busy() -> bool:
    """Other processes keep more than _busy_share() of the machine's cores busy (sampled at most
    once a second: the system's CPU time since the last sample minus this process's)."""
    now = time.monotonic()
    if now - _BUSY["t"] < 1.0:
        return _BUSY["busy"]
    try:
        import os

        import psutil
        total = psutil.cpu_percent(None) / 100.0                   # share of all cores, since the last call
        ours = psutil.Process().cpu_percent(None) / 100.0 / (os.cpu_count() or 1)
        _BUSY["busy"] = _BUSY["t"] > 0 and total - ours > _busy_share()
    except Exception:       # psutil missing: never "busy"
        _BUSY["busy"] = False
    _BUSY["t"] = now
    return _BUSY["busy"]


class Lookahead:
    def _interrupt(self) -> None:
        """(Any thread.) End the lookahead rows now — a wait on analysis included; the scheduler
        thread counts them at its next turn."""
        live = list(self._ahead_live)
        for job in live:
            job.stream.cancelled.set()
        if live or self._ahead:
            self._interrupted.set()

    def _idle_work_gives_way(self) -> bool:
        """(Between two layers of a forward, on this thread.) True when a request arrived and
        the forward under way is idle work only: it is abandoned (preempt.py)."""
        if not self._interrupted.is_set():
            return False
        p = self._prefilling
        return (p is None or p.ahead is not None) and all(r.job.ahead is not None for r in self.batch.rows) \
            and (p is not None or bool(self.batch.rows))

    def _drop_idle_work(self) -> None:
        """A lookahead forward was abandoned: its rows and its prefill end (their KV is partial)."""
        jobs = {id(r.job): r.job for r in self.batch.rows}
        if self._prefilling is not None:
            jobs[id(self._prefilling)] = self._prefilling
            self._prefilling = None
        for job in jobs.values():
            if not job.stream.closed:
                self.ahead_counts["preempted"] += 1
                job.stream.cancel()
                self._end_unstarted(job, "cancelled")
        self.ahead_counts["abandoned_forwards"] += 1
        self.batch = self._new_batch()
        self._ahead_live = []

    def _preempt(self) -> None:
        """A request arrived: every lookahead job ends (in this turn's sweep) or is dropped."""
        self.ahead_counts["dropped"] += len(self._ahead)
        self._ahead.clear()
        for job in self._ahead_live:
            if not job.stream.closed:
                self.ahead_counts["preempted"] += 1
                job.stream.cancel()
        self._ahead_live = []

    def _look_ahead(self, job: _Job, text: str) -> None:
        """Queue the next lookahead job after a suggestion (or a lookahead row) whose text at the
        cursor is known: same request, one more character it may not start with."""
        req, a = job.request, job.ahead
        at = len(job.prompt.owed) if job.prompt is not None else 0
        if len(text) <= at:
            return                          # not past the cursor yet (or an empty suggestion)
        if a is not None:
            a.spawned = True
        left = self.lookahead if a is None else a.left - 1
        if left <= 0 or job.warm or req.n != 1 or req.sampling.temperature > 0 or req.prompt_ids is not None \
                or req.logit_bias or job.ctx is None or job.ctx.kind != "cursor":
            return
        from ..contract import Stream
        stream = Stream(req, 1)
        stream.ahead = _Ahead((a.chars if a is not None else frozenset()) | {text[at]}, left)
        self._ahead.append(_Job(stream))
