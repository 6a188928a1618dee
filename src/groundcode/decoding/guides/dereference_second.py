"""The dereference monitor's second opinion (a mixin of DereferenceMonitor): before it refuses or
rolls back a name that a fast analyzer's answer lacks, it asks the careful analyzer
(`Analysis.second`, analysis/second_opinion.py: `--analyzer ty+jedi`) and judges by the union of
both answers. A careful answer that fails (dynamic attributes, an untyped receiver, too late)
fails the trigger open: nothing is forbidden that the careful analyzer alone would allow.

Speculating hosts never wait for it: the name goes on as under a cache miss (SPEC, or an answer
owed once the name is complete, dereference_spec.py) and is judged when the careful answer
lands; one later than the horizon fails open ("late"). Hosts that wait (a reproducible run, a
host that cannot roll back) and a row that is settling wait for it through the batch's
WaitPolicy. Answers without a second opinion (every single analyzer's) change nothing here.
Test: tests/test_second_opinion.py.
"""
from __future__ import annotations

import time

from .base import RowView, TriggerRecord
from .dereference_spec import WAIT


class SecondOpinion:
    def _ask_second(self, rec: TriggerRecord, typed: str) -> bool:
        """`self.nar` lacks the name being written (`typed` so far): on a speculating host, ask
        the careful analyzer and go on speculating (True: `self.ticket` runs, `self.nar` is None;
        the caller sets the state). False: no second opinion is owed, or this host waits."""
        nar = self.nar
        if nar is None or nar.second is None or nar.need or not self.speculate:
            return False
        self.ticket, self.nar = nar.second(), None
        self.spec_typed, self.spec_done = typed, False
        self._asked_at = time.perf_counter()
        rec.failed_open, rec.reason = True, "pending"      # until the careful answer lands
        self._snap_cache = None
        return True

    def _second_now(self, row: RowView, rec: TriggerRecord, nar, extra: set):
        """Wait for the second opinion on `nar` (a host that waits, a row settling): the union's
        narrowing (what was typed kept); None: the trigger failed open (`rec` says why); `nar`
        itself where no second opinion is owed."""
        if nar is None or nar.second is None or nar.need:
            return nar
        b = self.waits.wait([nar.second()], self.analyzer.deadline() or 2.0, row.cancelled)[0]
        if b is None:
            rec.failed_open, rec.reason = True, "timeout"
            return None
        new = self._narrowing(row, rec, b, extra)
        if new is not None:
            new.typed = nar.typed
        return new

    def _confirm(self, row: RowView) -> bool:
        """`self.nar` lacks the name being written, on a host that waits: take the union (True),
        or fail the trigger open (False: back to WAIT)."""
        self.nar = self._second_now(row, self.record, self.nar, self._extra_names)
        self._snap_cache = None
        if self.nar is None:
            self.state = WAIT
            return False
        return True

