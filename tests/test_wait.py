"""The analysis wait policy (analysis/wait.py): a guide's tickets are waited for together, and
every row that waits in the same step shares one window (the batch pays one budget).

What is asserted is how long the policy *asked* its tickets to block (`Never.waited`: the sum of
the timeouts it handed them) or that an answer came back, not the wall time, so a loaded machine
(a sleep that oversleeps) cannot fail them; the few wall-time bounds left are far from the
values they separate (issue 39)."""
from __future__ import annotations

import time

from groundcode.analysis.wait import PatientWait, WaitPolicy


class Never:
    def __init__(self):
        self.waited = 0.0

    def result(self, timeout=0):
        if timeout:
            time.sleep(timeout)
            self.waited += timeout
        return None


class Lands:
    def __init__(self, at):
        self.at = at

    def result(self, timeout=0):
        left = self.at - time.perf_counter()
        if left > 0 and timeout:
            time.sleep(min(left, timeout))
        return "answer" if time.perf_counter() >= self.at else None


def test_tickets_are_waited_for_together_up_to_one_deadline():
    p = WaitPolicy()
    tickets = [Never(), Never(), Never()]
    assert p.wait(tickets, 0.2) == [None, None, None]
    assert sum(t.waited for t in tickets) <= 0.2          # one deadline for all, not 3 x 0.2


def test_rows_of_one_step_share_the_window_and_a_new_step_opens_another():
    p = WaitPolicy(budget_s=0.2)
    rows = [Never() for _ in range(5)]
    for t in rows:                                        # five rows settle in the same step
        p.wait([t], 2.0)
    assert sum(t.waited for t in rows) <= 0.2             # one budget, not 5 x 2 s
    p.new_step()
    t1 = time.perf_counter()
    assert p.wait([Lands(time.perf_counter() + 0.05)], 20.0) == ["answer"]
    assert time.perf_counter() - t1 < 10                  # an answer ends the wait (not its 20 s)


def test_a_window_whose_waits_were_answered_leaves_no_pause():
    p = WaitPolicy(budget_s=0.1)
    assert p.wait([Lands(time.perf_counter() + 0.02)], 2.0) == ["answer"]
    time.sleep(0.12)                                      # the window has passed, unexhausted
    t0 = time.perf_counter()
    assert p.wait([Lands(time.perf_counter() + 0.05)], 2.0) == ["answer"]   # a fresh window:
    assert time.perf_counter() - t0 >= 0.04                                  # it waited


def test_a_patient_wait_outlasts_deadlines_and_other_rows_windows_up_to_its_limit():
    """Reproducible runs: an answer is waited for past the caller's deadline and past the window
    another row's wait opened; only the limit (a hung analyzer) ends a wait."""
    p = PatientWait(limit_s=2.0)
    assert p.wait([Lands(time.perf_counter() + 0.2)], 0.01) == ["answer"]
    assert p.wait([Lands(time.perf_counter() + 0.2)], 0.01) == ["answer"]   # no shared window
    q = PatientWait(limit_s=0.1)
    never = Never()
    assert q.wait([never], 30.0) == [None] and never.waited <= 0.1    # the limit, not the 30 s


def test_a_wait_ends_when_its_row_is_cancelled():
    # a cancel (or a request that preempts a lookahead row) must not sit out the deadline
    import threading
    for policy in (WaitPolicy(), PatientWait(limit_s=30.0)):
        cancelled = threading.Event()
        threading.Timer(0.1, cancelled.set).start()
        t0 = time.perf_counter()
        assert policy.wait([Never(), Never()], 60.0, cancelled) == [None, None]
        assert time.perf_counter() - t0 < 30                      # the cancel, not the 60 s
    # an answer that lands before the cancel is still returned
    t = time.perf_counter()
    assert WaitPolicy().wait([Lands(t + 0.05)], 10.0, threading.Event()) == ["answer"]


def test_brief_waits_share_a_window_of_their_own_and_leave_the_steps_window_whole():
    p = WaitPolicy()
    rows = [Never() for _ in range(4)]
    for t in rows:                                        # four misses' grace in one step
        assert p.brief([t], 0.2) == [None]
    assert sum(t.waited for t in rows) <= 0.2 + 1e-9      # one grace for the step, not 4 x 0.2 s
    owed = Lands(time.perf_counter() + 0.3)               # a row's end in the same step still
    assert p.wait([owed], 2.0) == ["answer"]              # waits for what it owes
