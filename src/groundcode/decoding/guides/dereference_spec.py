"""The dereference monitor's speculation ledger (a mixin of DereferenceMonitor): a name decoded
while its answer runs (SPEC), answers owed at the row's end or landing late, the verdict once an
answer is in (keep, or roll back and redo under the mask), what a host that cannot roll back
declines, a chunked host's hold while an answer runs (`holding`), and what of the row's text is
final (`final_upto`) or may be shown when the row is
cut from outside (`end_at`: never a name not yet checked; tests/test_deadline_cut.py). The monitor's states are named here. Test: tests/test_speculation.py,
tests/test_dereference_states.py.
"""
from __future__ import annotations

import time

from .base import Rollback, RowView
from .narrowing import name_run

WAIT, NARROW, FREE, PENDING, SPEC = "wait", "narrow", "free", "pending", "spec"


class SpeculationLedger:
    def tokens_in_chunks(self) -> None:
        """An answer would always be past the horizon: no speculation; the row is held (not the
        batch) until the answer lands (`holding`)."""
        self.speculate, self.chunked = False, True

    def holding(self, row: RowView) -> bool:
        if not self.chunked or self.ticket is None or self.state not in (SPEC, FREE) or self.spec_typed:
            return False
        if self.ticket.result(0) is None:
            # a reproducible run holds it until the answer lands (PatientWait's limit: a hung
            # analyzer), never by a deadline that depends on the machine's load
            limit = getattr(self.waits, "limit_s", None) if self.reproducible else None
            if time.perf_counter() - self._asked_at < (limit or self.analyzer.deadline() or 2.0):
                return True
            self.record.reason = "timeout"        # failed open (the record says so already)
            self._give_up(self.ticket)
            self.ticket, self.state = None, WAIT
        else:
            self._poll_spec(row)                  # landed: the name is written under the mask
        self._snap_cache = None
        return False

    def rolled_back(self, row: RowView, proposal: Rollback) -> None:
        """Our proposal won: redo the trigger under the mask, no second chance to write freely."""
        nar, rec, need = proposal.payload
        if not any(t is rec for t in row.triggers):
            row.triggers.append(rec)              # a merged-dot trigger: its token is redone
        rec.rolled_back = True
        rec.chosen = None
        # a redo at the cursor's trigger keeps what the user typed of the name (`self.re|`)
        nar.need, nar.typed = need, self._cursor[1] if rec is self._cursor[0] else ""
        self.nar, self.record = nar, rec
        self.checkpoint, self.rollback_need = proposal.length, need
        # the token that will hold the dot: the last one kept, or (a merged-dot token redone,
        # `need` owes its head) the next one
        self.dot_tokens = proposal.length + (1 if need else 0)
        self.late = tuple(e for e in self.late if e[3] < proposal.length)
        self.ticket = None
        self.free_ok = False
        self.spec_typed, self.spec_done = "", False
        self.state = NARROW
        self._snap_cache = None

    def final_upto(self, row: RowView) -> int:
        """Text from the token that holds a trigger's dot is held back while the name after it
        is still being written (NARROW) or its answer is still owed (SPEC, FREE, PENDING, the
        late answers): a cut may take it back, and a row that ends now (a deadline, a cancel)
        shows only final text, so never a name the monitor has not finished checking."""
        if self.state is WAIT and not self.late:
            return len(row.text)
        dots = [e[5] for e in self.late]
        if self.state in (SPEC, FREE, PENDING, NARROW):
            dots.append(self.dot_tokens)
        return self._before_dot(row, min(dots)) if dots else len(row.text)

    @staticmethod
    def _before_dot(row: RowView, dot_tokens: int) -> int:
        """The text offset where the token that holds a trigger's dot starts (`dot_tokens`:
        the row's token count once that token was accepted; 0: the dot is before the cursor)."""
        k = dot_tokens - 1
        return row.ends[k - 1] if 0 < k <= len(row.ends) else (0 if k <= 0 else len(row.text))

    def end_at(self, row: RowView, reason: str) -> int:
        """The row ends now (a deadline, a cancel, the length limit, another guide's stop): a
        name still being written that is not yet a whole member, or one whose answer is still
        owed, is not shown — the text ends before the token that holds its dot (at
        `return self.di|` with `sc` written: nothing) — and its record says what was cut. A
        deadline or a cancel shows final text only, so there any name in progress is cut."""
        dots = []
        for e in self.late:                       # written before their answer came (a host
            e[1].cut = e[2]                       # that settles has polled them by now)
            dots.append(e[5])
        if self.state in (NARROW, SPEC, FREE, PENDING) and self.record is not None:
            nar = self.nar
            typed = nar.typed if nar is not None else self.spec_typed
            whole = reason not in ("deadline", "cancelled") and nar is not None \
                and not nar.need and nar.fits(typed)
            if not whole:
                self.record.cut = typed
                dots.append(self.dot_tokens)
        return self._before_dot(row, min(dots)) if dots else len(row.text)

    def declined(self, row: RowView, proposal: Rollback) -> None:
        """A host that does not roll back (replay): the name stays; carry on as after a binding."""
        rec = proposal.payload[1]
        rec.rolled_back = True
        rec.chosen = None
        if rec is self.record:       # an owed answer's proposal leaves the current trigger alone
            self.ticket, self.nar = None, None
            self.state = WAIT
        self._snap_cache = None

    def _spec_feed(self, row: RowView, t: str, i: int) -> int | None:
        s = t[i:]
        name = name_run(s, 0, self.spec_typed)
        self.spec_typed += name
        if len(name) == len(s):
            return self._poll_spec(row)        # the name goes on
        end = i + len(name)
        self.record.chosen = self.spec_typed
        self.name_end = len(row.text) - (len(t) - end)
        a = self.ticket.result(0)
        if a is not None:                      # landed just now: settle as without speculation
            self.ticket = None
            if self._answered(row, self.record, a) and not self.nar.fits(self.spec_typed):
                if self.state == FREE:
                    self.state = PENDING
                    return self._decide(row)
                if not self._ask_second(self.record, self.spec_typed):
                    if not self._confirm(row) or self.nar.fits(self.spec_typed):
                        self.state = WAIT                      # failed open, or a member
                        return self._scan(row, t, end)
                    return self._redo_under_mask(row)
            else:
                self.state = WAIT
                return self._scan(row, t, end)
        if self.state == FREE:
            self.state = PENDING               # a binding needs no answer: see what follows
            return self._decide(row)
        self._owe_answer(row)
        return self._scan(row, t, end)

    def _poll_spec(self, row: RowView) -> int | None:
        """Mid-name: has the answer landed? A name that cannot become a member is redone."""
        a = self.ticket.result(0)
        if a is None:
            if len(row.tokens) - self.dot_tokens > self.horizon:
                self.record.reason = "late"
                self._give_up(self.ticket)
                self.ticket = None
                self.state = WAIT
            return None
        self.ticket = None
        if not self._answered(row, self.record, a):
            self.state = WAIT                  # failed open after all
            return None
        self.nar.typed = self.spec_typed
        if self.nar.fits(self.spec_typed, complete=False):
            self.state = NARROW if self.state == SPEC else FREE
            return None
        if self.state == FREE:
            return None                        # FREE with candidates known: may be a binding
        if self._ask_second(self.record, self.spec_typed):
            return None                        # the careful analyzer decides: still SPEC
        if not self._confirm(row):
            return None                        # failed open
        if self.nar.fits(self.spec_typed, complete=False):
            self.state = NARROW
            return None
        return self._redo_under_mask(row)

    def _owe_answer(self, row: RowView) -> None:
        """The name is written before its answer came: verify it when the answer lands."""
        self.late = self.late + ((self.ticket, self.record, self.spec_typed, self.checkpoint,
                                  self.rollback_need, self.dot_tokens, self._extra_names),)
        self.ticket = None
        self.state = WAIT

    def _poll_late(self, row: RowView, settling: bool = False) -> int | None:
        """Settle the owed answers that have landed (`settling`: those not landed by now time
        out); roll back to the first name that is not a member (everything written after it
        goes too)."""
        keep = []
        for k, entry in enumerate(self.late):
            ticket, rec, name, checkpoint, need, dot_tokens, extra = entry
            a = ticket.result(0)
            if a is None:
                if settling:
                    rec.reason = "timeout"
                elif len(row.tokens) - dot_tokens > self.horizon:
                    rec.reason = "late"
                else:
                    keep.append(entry)
                    continue
                self._give_up(ticket)
                continue
            nar = self._narrowing(row, rec, a, extra)
            if nar is None or nar.fits(name):
                continue
            if nar.second is not None:         # a fast answer lacks the name: ask the careful one
                if not settling and self.speculate:   # owed in its place: the union
                    rec.failed_open, rec.reason = True, "pending"
                    keep.append((nar.second(), *entry[1:]))
                    continue
                nar = self._second_now(row, rec, nar, extra)
                if nar is None or nar.fits(name):
                    continue
            self.late = tuple(keep)
            return Rollback(checkpoint, "not a member", (nar, rec, need))
        self.late = tuple(keep)
        return None

    def _give_up(self, ticket) -> None:
        """An answer given up (late, timed out) stays given up: the text after its name may be
        declared final from then on, and a cut back to a checkpoint taken while it was owed
        (ours or another guide's) must not revive it — an answer landing after that would
        propose a cut below final text. Not part of the snapshot, on purpose."""
        self.given_up[id(ticket)] = ticket

    def _revive_none(self) -> bool:
        """After a restore: drop what the restored state still owes but was given up since
        (True: the state changed)."""
        g = self.given_up
        late = tuple(e for e in self.late if id(e[0]) not in g)
        changed = len(late) != len(self.late)
        self.late = late
        if self.ticket is not None and id(self.ticket) in g:
            self.ticket, changed = None, True
            if self.state in (SPEC, FREE, PENDING):
                self.state = WAIT                 # as when it was given up
        return changed

    def _owed_tickets(self) -> list:
        owed = [e[0] for e in self.late]
        if self.ticket is not None and self.state in (SPEC, FREE, PENDING):
            owed.append(self.ticket)
        return owed

    def owes(self, row: RowView):
        running = [t for t in self._owed_tickets() if t.result(0) is None]
        return (running, self.waits.until(self.analyzer.deadline() or 2.0)) if running else None

    def settle(self, row: RowView) -> int | None:
        """The row is about to finish: the answers still owed — waited for here, all together,
        up to the analyzer's deadline and the batch's shared window (WaitPolicy), unless the host
        polled them already (`row.polled`, Guide.owes) — and a roll back to a name that is not
        a member."""
        self._snap_cache = None
        owed = self._owed_tickets()
        if owed and not row.polled:
            self.waits.wait(owed, self.analyzer.deadline() or 2.0, row.cancelled)
        if self.ticket is not None and self.state in (SPEC, FREE, PENDING):
            a, ticket = self.ticket.result(0), self.ticket
            self.ticket = None
            if a is None:
                self.record.reason = "timeout"
                self._give_up(ticket)
            elif self._answered(row, self.record, a):
                back = self._whole_at_end(row, self.spec_typed)
                if back is not None:
                    return back
            self.state = WAIT
        elif self.state in (FREE, PENDING) and self.nar is not None:
            # at a binding position with the answer in hand (it landed before the name was
            # written): nothing after it binds what was written either
            back = self._whole_at_end(row, self.nar.typed or self.spec_typed)
            if back is not None:
                return back
            self.state = WAIT
        if self.late:
            return self._poll_late(row, settling=True)
        return None

    def _whole_at_end(self, row: RowView, typed: str) -> Rollback | None:
        """The row ends here, so the name is as long as it gets: unless it binds, it must be a
        whole member (`return self.` + EOS, or a name cut short, is redone under the mask)."""
        if self.record.binding or self.nar.fits(typed, complete=True):
            return None
        self.nar = self._second_now(row, self.record, self.nar, self._extra_names)
        if self.nar is not None and not self.nar.fits(typed, complete=True):
            return self._redo_under_mask(row)
        return None

    def _decide(self, row: RowView) -> int | None:
        verdict = self.lang.binding_verdict(row.text[self.name_end:])
        if verdict is None:
            return None
        if verdict:
            self.record.binding = True
            self.ticket = None
            self.state = WAIT
            return None
        if self.nar is not None and self.nar.second is not None:   # a fast answer lacks it
            name = self.nar.typed or self.spec_typed
            if not self._ask_second(self.record, name) and (not self._confirm(row) or self.nar.fits(name)):
                self.state = WAIT                # failed open, or a member after all
                return None
        if self.nar is None:             # not a binding, the answer still running: owe it
            self._owe_answer(row)
            t = row.vocab.texts[row.tokens[-1]]
            return self._scan(row, t, max(0, self.name_end - (len(row.text) - len(t))))
        return self._redo_under_mask(row)

    def _redo_under_mask(self, row: RowView) -> Rollback:
        """Not a member and not a binding: propose to undo the name and redo the trigger under
        the mask (the state changes in `rolled_back`, if the engine takes this cut)."""
        return Rollback(self.checkpoint, "not a member", (self.nar, self.record, self.rollback_need))
