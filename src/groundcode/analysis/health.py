"""An analyzer's health: its failures in a row, the reason of the last one, how long to wait
before the next restart (exponential backoff), and what it is doing now — for `/health`, the
LSP server's messages and the analyzers' restart decisions.

    h = Health("ty", "/repo", backoff_s=1.0, max_backoff_s=60.0)
    h.busy("initialize") ... h.idle()        # an operation running on the analyzer now
    h.failed("no answer to initialize in 30 s: killed")    # a hang, a flood, a crash
    h.answered()                             # a question was answered: the failures end
    h.backoff_left() -> float                # seconds before a restart may be tried
    h.report(deadline_s) -> {"status": "ok" | "degraded", "reason": ..., ...}

Degraded means questions are failing open now: the last operation failed (a hang killed, a
flood, a crash, a server that would not start) and no question has been answered since, or an
operation has been running longer than the analyzer's deadline (a server hung at `initialize`
before it is killed: every question meanwhile fails open as a timeout). Each change of status is
logged once on the `groundcode.analysis` logger (warning when it degrades, info when it
recovers). The restart backoff doubles with each failure in a row (`backoff_s`, 2x, 4x, … up to
`max_backoff_s`) and starts again from `backoff_s` after an answer. Thread-safe enough: plain
attribute writes from the analyzer's thread, reads from anywhere.
Test: tests/test_analyzer_faults.py.
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger("groundcode.analysis")


class Health:
    def __init__(self, name: str, root, backoff_s: float = 1.0, max_backoff_s: float = 60.0):
        self.name, self.root = name, str(root) if root is not None else None
        self.backoff_s, self.max_backoff_s = backoff_s, max(max_backoff_s, backoff_s)
        self.failures = 0              # in a row, since the last answer
        self.total = 0                 # failures since start
        self.reason: str | None = None
        self.failed_at = 0.0           # time.monotonic() of the last failure
        self._busy: tuple[str, float] | None = None
        self._told = False             # the degraded status was logged

    # -- what happens -----------------------------------------------------------------------
    def busy(self, what: str, since: float | None = None) -> None:
        """An operation runs (since `since`, time.monotonic(); now by default)."""
        self._busy = (what, time.monotonic() if since is None else since)

    def idle(self) -> None:
        self._busy = None

    def failed(self, reason: str) -> None:
        self.failures += 1
        self.total += 1
        self.reason = reason
        self.failed_at = time.monotonic()
        log.warning("analyzer %s (%s): %s; grounding fails open until it answers again (next restart "
                    "in %.1f s at the earliest)", self.name, self.root, reason, self.backoff_delay())
        self._told = True

    def answered(self) -> None:
        if self.failures or self._told:
            log.info("analyzer %s (%s) answers again", self.name, self.root)
        self.failures, self.reason, self._told = 0, None, False

    # -- what follows -----------------------------------------------------------------------
    def backoff_delay(self) -> float:
        if not self.failures:
            return 0.0
        return min(self.backoff_s * 2 ** min(self.failures - 1, 30), self.max_backoff_s)

    def backoff_left(self) -> float:
        """Seconds before the next restart may be tried (0: now)."""
        return max(0.0, self.backoff_delay() - (time.monotonic() - self.failed_at))

    def report(self, deadline_s: float) -> dict:
        """`status` ok or degraded, with the reason (what runs too long, or the last failure)."""
        busy = self._busy
        reason = None
        if busy is not None and time.monotonic() - busy[1] > deadline_s:
            reason = f"{busy[0]} unanswered for {time.monotonic() - busy[1]:.1f} s"
        elif self.failures:
            reason = self.reason
            left = self.backoff_left()
            if left > 0:
                reason += f" (next restart in {left:.1f} s)"
        if reason is not None and not self._told:
            log.warning("analyzer %s (%s): %s", self.name, self.root, reason)
            self._told = True
        return {"status": "degraded" if reason else "ok", "reason": reason,
                "failures_in_a_row": self.failures, "failures": self.total}
