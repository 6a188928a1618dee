"""How long decoding may block on analysis answers: one policy for every guide of a batch.

Guides never call an analyzer synchronously inside a step: they `ask` and poll their tickets
(`result(0)`) and decode on while an answer runs (speculation). Where a guide must have the
answer before it goes on (a row about to finish with names still unverified, a host that cannot
roll back, a tool call), it waits through `WaitPolicy.wait(tickets, deadline)`:

  * all of a guide's tickets are waited for together, up to one instant (not one deadline each
    in turn);
  * that instant is also bounded by a window shared by every row that waits in the same step:
    the first wait opens it (`budget_s` long; None: the deadline of that wait), and later waits
    end with it. N rows settling in one step cost the batch one budget, not N deadlines. Once
    a window has run out (a wait ended with answers still running), the next one opens at the
    next step (`new_step()`, called by the engine between steps) — or, for a host that never
    calls it, once as much time as the window's waits blocked has passed since it ended:
    stalled analysis then takes at most half of the wall time. A window whose waits all got
    their answers leaves no such pause.

A brief wait (`brief`: a member question's grace before its monitor speculates) has a window of
its own, shared the same way by the brief waits of one step: it is spent apart from the window
above, so a row's end in the same step still waits for what it owes.

`PatientWait` is the policy of reproducible runs (MonitorConfig.reproducible, `bench run`'s
default): a wait lasts until its answers land, bounded only by `limit_s` (a hung analyzer),
never by the caller's deadline nor by a window other rows opened, so whether an answer is used
never depends on the machine's load or on the batch's other rows.

Thread-safe (one policy per Generator, shared by all its rows). Not here: tickets (base.py),
the guides' states. Test: tests/test_wait.py.
"""
from __future__ import annotations

import threading
import time


class WaitPolicy:
    def __init__(self, budget_s: float | None = None):
        self.budget_s = budget_s
        self._lock = threading.Lock()
        self._window_end = 0.0
        self._blocked = 0.0          # time waits blocked in the current window
        self._fresh = True           # a new window may open now
        self._ran_out = False        # a wait of the current window ended unanswered at its end
        self.waited_s = 0.0          # total blocked time (reports)
        self.waits = 0
        self._brief: WaitPolicy | None = None   # the window of brief waits (`brief`)

    def new_step(self) -> None:
        with self._lock:
            if time.perf_counter() >= self._window_end:
                self._fresh = True
            brief = self._brief
        if brief is not None:
            brief.new_step()

    def brief(self, tickets, span_s: float, cancelled=None) -> list:
        """A short wait that is no row's due (a miss's grace before the monitor speculates):
        bounded by a window of its own, `span_s` long and shared by the brief waits of the same
        step, so it never ends the deadline window a row's end waits in."""
        with self._lock:
            if self._brief is None or self._brief.budget_s != span_s:
                self._brief = WaitPolicy(span_s)
            brief = self._brief
        return brief.wait(tickets, span_s, cancelled)

    def until(self, deadline_s: float) -> float:
        """The perf_counter instant a wait that starts now may last until."""
        now = time.perf_counter()
        with self._lock:
            if now >= self._window_end:
                if self._ran_out and not (self._fresh or now >= self._window_end + self._blocked):
                    return now               # this step's window has run out
                self._window_end = now + (self.budget_s if self.budget_s is not None else deadline_s)
                self._blocked = 0.0
                self._fresh = self._ran_out = False
            return min(now + deadline_s, self._window_end)

    SLICE_S = 0.01     # with `cancelled`: how often a wait looks at it

    def wait(self, tickets, deadline_s: float, cancelled=None) -> list:
        """Block until every ticket has its answer or the wait's instant passes; the answers
        (None for those still running). `cancelled` (a threading.Event, the row's): the wait
        ends as soon as it is set (a cancel, or a request that preempts a lookahead row)."""
        tickets = [t for t in tickets if t is not None]
        t0 = time.perf_counter()
        end = self.until(deadline_s)
        out = []
        for t in tickets:
            a = t.result(0)
            while a is None and not (cancelled is not None and cancelled.is_set()):
                left = end - time.perf_counter()
                if left <= 0:
                    break
                a = t.result(left if cancelled is None else min(left, self.SLICE_S))
            out.append(a)
        with self._lock:
            if any(a is None for a in out) and end >= self._window_end:
                self._ran_out = True
            dt = time.perf_counter() - t0
            self.waited_s += dt
            self._blocked += dt
            self.waits += 1
        return out


class PatientWait(WaitPolicy):
    """Every wait lasts until its answers land or `limit_s` passes (a hung analyzer: the Jedi
    client replaces a worker busy for longer than its kill_after_s, 30 s); deadlines are ignored."""

    def __init__(self, limit_s: float = 60.0):
        super().__init__(None)
        self.limit_s = limit_s

    def new_step(self) -> None:
        pass

    def until(self, deadline_s: float) -> float:
        return time.perf_counter() + self.limit_s
