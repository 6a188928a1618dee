"""Analysis off the critical path: on a cache miss the dereference monitor leaves the step free,
tracks the name, and checks it when the answer lands (rolling back to the trigger if it cannot be
a member); at the row's end it settles what is still owed. Driven like the engine with a
hand-made vocabulary and an analyzer whose answers land when the test says so."""
from __future__ import annotations

import time
from pathlib import Path

from groundcode.analysis.base import Analysis
from groundcode.api import CodeContext
from groundcode.decoding.checkpoints import Checkpoints
from groundcode.decoding.guides.base import RowView, as_rollback
from groundcode.decoding.guides.dereference import NARROW, SPEC, WAIT, DereferenceMonitor, _digest
from groundcode.decoding.vocab import VocabIndex

TOKENS = ["", "self", ".", "_", "reg", "registered", "_updates", "append", "(", ")", "\n",
          "        ", " ", "=", "1", "return", "size", "foo", "fo", "o", "si", "ze", "real"]
T = {t: i for i, t in enumerate(TOKENS)}
MEMBERS = {"self": ["_registered_updates", "size", "register"], "self.size": ["real", "imag"]}


class Ticket:
    def __init__(self, answer):
        self.answer, self.landed, self.waited = answer, False, 0

    def result(self, timeout=0):
        if timeout:
            self.waited += 1
            self.landed = self.landed or self.land_on_wait     # a wait lets it land (for good)
        return self.answer if self.landed else None

    land_on_wait = True


class SlowAnalyzer:
    """Every answer is a cache miss that lands only when `land()` is called (or when waited)."""
    name, pid = "slow", None

    def __init__(self):
        self.tickets: list[Ticket] = []

    def deadline(self):
        return 0.5

    def ask(self, query):
        receiver = query.receiver
        if query.prefetch:
            return Ticket(None)
        names = frozenset(MEMBERS.get(receiver, ()))
        t = Ticket(Analysis(receiver, names, 120.0, False, None if names else "empty"))
        self.tickets.append(t)
        return t

    def land(self):
        for t in self.tickets:
            t.landed = True


def _row():
    before = "class A:\n    def f(self):\n        "
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="",
                      lex_prefix=before[before.index("    def"):], starts_at_line=False)
    return RowView(0, ctx, VocabIndex(TOKENS))


def _feed(mon, row, tok):
    """Engine order with rollbacks honoured: returns ("resample", allowed) or the rollback."""
    tid = T[tok]
    m = mon.mask(row)
    if m is None:
        redo = mon.check(row, tid)
        if redo is not None:
            return "resample", {row.vocab.texts[i] for i in redo}
    else:
        assert tid in set(m.tolist()), f"{tok!r} not allowed under the mask"
    ck = _ck(mon, row)
    ck.accept(tid)
    p = as_rollback(mon.advance(row, tid))
    ck.mark()
    if p is not None:
        _cut(mon, row, p)
    return "rollback", None if p is None else p.length


def _ck(mon, row):
    """The engine's checkpoints of this row (made on the first token, after reset)."""
    ck = getattr(row, "_ck", None)
    if ck is None:
        ck = row._ck = Checkpoints(row, [mon])
    return ck


def _cut(mon, row, proposal):
    """The engine takes the cut: every guide restored, then the proposer told."""
    _ck(mon, row).cut(proposal.length, [(mon, proposal)])


def _start(tokens):
    an = SlowAnalyzer()
    mon = DereferenceMonitor(an, grace_s=0)          # speculation itself: no grace wait
    row = _row()
    mon.reset(row)
    for tok in tokens:
        _feed(mon, row, tok)
    return an, mon, row


def test_a_pending_answer_leaves_the_step_free_and_a_late_non_member_is_rolled_back():
    an, mon, row = _start(["return", " ", "self", "."])
    assert mon.state == SPEC and mon.mask(row) is None          # nothing waits for Jedi
    _feed(mon, row, "foo")
    _feed(mon, row, "(")                                        # the name is complete: owed
    assert mon.state == WAIT and len(mon.late) == 1
    an.land()
    kind, back = _feed(mon, row, ")")                           # polled: `foo` is no member
    assert back == 4 and row.text == "return self."
    assert mon.state == NARROW and row.triggers[-1].rolled_back
    kind, allowed = _feed(mon, row, "foo")                      # now verified before accepting
    assert kind == "resample" and "size" in allowed and "foo" not in allowed
    _feed(mon, row, "size")
    _feed(mon, row, "\n")
    assert row.text == "return self.size\n" and mon.state == WAIT


def test_an_answer_within_the_grace_masks_the_name_before_it_is_written():
    an = SlowAnalyzer()
    mon = DereferenceMonitor(an)                 # the shipped grace: a miss waits 80 ms first
    row = _row()
    mon.reset(row)
    for tok in ["return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert an.tickets[-1].waited == 1 and mon.state == NARROW     # landed in the wait: masked
    assert not row.triggers[-1].failed_open
    kind, allowed = _feed(mon, row, "foo")
    assert kind == "resample" and "size" in allowed and "foo" not in allowed
    Ticket.land_on_wait = False                  # an answer later than the grace: speculate
    try:
        an = SlowAnalyzer()
        mon, row = DereferenceMonitor(an), _row()
        mon.reset(row)
        for tok in ["return", " ", "self", "."]:
            _feed(mon, row, tok)
        assert an.tickets[-1].waited >= 1 and mon.state == SPEC and mon.mask(row) is None
    finally:
        Ticket.land_on_wait = True


def test_an_answer_landing_mid_name_narrows_from_there():
    an, mon, row = _start(["return", " ", "self", ".", "si"])
    an.land()
    _feed(mon, row, "ze")                                       # `size`: fits, narrowing on
    assert mon.state in (NARROW, WAIT) and not row.triggers[-1].rolled_back
    assert not row.triggers[-1].failed_open and row.triggers[-1].analysis_ms == 120.0


def test_an_answer_landing_mid_name_that_cannot_fit_rolls_back_at_once():
    an, mon, row = _start(["return", " ", "self", ".", "fo"])
    an.land()
    kind, back = _feed(mon, row, "o")
    assert back == 4 and mon.state == NARROW and row.text == "return self."


def test_a_binding_needs_no_answer():
    an, mon, row = _start(["self", ".", "foo", " ", "=", " ", "1", "\n"])
    assert mon.state == WAIT and row.triggers[0].binding and row.triggers[0].chosen == "foo"
    assert not mon.late and mon.settle(row) is None


def test_the_row_end_settles_what_is_owed():
    an, mon, row = _start(["return", " ", "self", ".", "foo", "(", ")"])
    assert len(mon.late) == 1
    back = mon.settle(row)                                      # waits (bounded), then verifies
    assert back.length == 4 and an.tickets[0].waited == 1
    assert mon.state != NARROW and not row.triggers[-1].rolled_back   # asking changed nothing
    _cut(mon, row, back)
    assert mon.state == NARROW and row.triggers[-1].rolled_back


def test_a_row_ending_at_a_binding_position_with_the_answer_in_hand_is_redone():
    """`self.` at a statement's start may bind any name (FREE); an answer that landed in the
    grace wait leaves nothing owed, yet `self.` + EOS, or `self.foo` + EOS, binds nothing: the
    row's end redoes it under the mask as it does when the answer is still owed."""
    for written in ([], ["foo"]):
        an = SlowAnalyzer()
        mon, row = DereferenceMonitor(an), _row()
        mon.reset(row)
        for tok in ["self", ".", *written]:
            _feed(mon, row, tok)
        assert an.tickets[-1].landed and mon.nar is not None and not mon.late
        back = mon.settle(row)
        assert back is not None and back.length == 2, written        # back to `self.`
        _cut(mon, row, back)
        assert mon.state == NARROW and row.triggers[-1].rolled_back
    an = SlowAnalyzer()                                              # a member: it stands
    mon, row = DereferenceMonitor(an), _row()
    mon.reset(row)
    for tok in ["self", ".", "size"]:
        _feed(mon, row, tok)
    assert mon.settle(row) is None and not row.triggers[-1].rolled_back


def test_an_answer_later_than_the_horizon_fails_open():
    an = SlowAnalyzer()
    mon = DereferenceMonitor(an, horizon=3, grace_s=0)
    row = _row()
    mon.reset(row)
    for tok in ["return", " ", "self", ".", "foo", "(", ")", "\n", "return", " ", "1"]:
        _feed(mon, row, tok)
    assert not mon.late and row.triggers[0].failed_open and row.triggers[0].reason == "late"


def test_an_answer_given_up_stays_given_up_after_a_cut_to_before_it_was():
    """`groundcode generate` of the shop fixture's Cart.last failed in about half the runs:
    an answer given up as late (its name declared final) came back with an older checkpoint
    restored by a later trigger's cut, landed, and proposed a cut below the final text."""
    an = SlowAnalyzer()
    mon = DereferenceMonitor(an, horizon=4, grace_s=0)
    row = _row()
    mon.reset(row)
    for tok in ["return", " ", "self", ".", "foo", "(", "self", "."]:
        _feed(mon, row, tok)                       # `foo` owed; the second trigger at token 8
    assert len(mon.late) == 1 and mon.state == SPEC
    _feed(mon, row, "foo")                         # 9 - 4 > 4: the first answer is given up
    assert not mon.late and row.triggers[0].reason == "late"
    final = mon.final_upto(row)
    assert final == len("return self.foo(self")    # the first name is final text now
    _feed(mon, row, "(")                           # the second name is owed
    an.land()                                      # both answers land: neither is a member
    kind, back = _feed(mon, row, ")")
    assert back == 8 and row.text == "return self.foo(self." and mon.state == NARROW
    assert not mon.late and mon.final_upto(row) >= final   # not revived by the restore
    kind, allowed = _feed(mon, row, "foo")
    assert kind == "resample" and "size" in allowed
    kind, back = _feed(mon, row, "size")
    assert back is None and row.text == "return self.foo(self.size"
    assert mon.settle(row) is None and row.triggers[0].chosen == "foo"


class Timed:
    """An answer that lands `delay` seconds after it was asked, whatever the caller's deadline."""
    def __init__(self, answer, delay):
        self.answer, self.at = answer, time.perf_counter() + delay

    def result(self, timeout=0):
        left = self.at - time.perf_counter()
        if left > 0 and timeout:
            time.sleep(min(left, timeout))
        return self.answer if time.perf_counter() >= self.at else None


class LoadedAnalyzer:
    """A loaded machine: every answer takes longer than the analyzer's deadline."""
    name, pid = "loaded", None

    def __init__(self):
        self.queries = []

    def deadline(self):
        return 0.02

    def ask(self, query):
        self.queries.append(query)
        names = frozenset(MEMBERS.get(query.receiver, ()))
        return Timed(Analysis(query.receiver, names, 150.0, False, None if names else "empty"), 0.15)


def test_a_reproducible_monitor_waits_for_each_answer_whatever_the_deadline():
    """bench run's mode: the trigger waits for its own answer (past the deadline: only a hung
    analyzer ends the wait), no prefetch, the answer keyed by the exact splice, so the mask never
    depends on when the answer landed; the speculative monitor decodes on instead."""
    an = LoadedAnalyzer()
    mon = DereferenceMonitor(an, reproducible=True)
    row = _row()
    mon.reset(row)
    assert an.queries == []                                     # nothing prefetched
    for tok in ["return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == NARROW                                  # waited at the trigger
    q = an.queries[-1]
    assert q.key[-3:] == (_digest(q.at.code), q.at.line, q.at.column)
    kind, allowed = _feed(mon, row, "foo")
    assert kind == "resample" and "size" in allowed and "foo" not in allowed
    rec = row.triggers[-1]
    assert not rec.failed_open and not rec.rolled_back and rec.reason is None

    spec = DereferenceMonitor(LoadedAnalyzer())
    row = _row()
    spec.reset(row)
    for tok in ["return", " ", "self", "."]:
        _feed(spec, row, tok)
    assert spec.state == SPEC                                   # the editor's path: decode on
