"""A second opinion before a block (`--analyzer ty+jedi`): a fast analyzer's member answer
constrains at once; a name it lacks is neither refused nor rolled back until the careful
analyzer, asked only then, lacks it too. Driven like the engine (as tests/test_speculation.py)
with a hand-made vocabulary and analyzers whose answers land when the test says so."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis.base import Analysis, MembersQuery, NamesQuery, links
from groundcode.analysis.second_opinion import SecondOpinionAnalyzer
from groundcode.api import CodeContext
from groundcode.decoding.checkpoints import Checkpoints
from groundcode.decoding.guides.base import RowView, as_rollback
from groundcode.decoding.guides.dereference import NARROW, SPEC, WAIT, DereferenceMonitor
from groundcode.decoding.vocab import VocabIndex
from groundcode.errors import GroundcodeError

TOKENS = ["", "self", ".", "registered", "_updates", "(", ")", "\n", " ", "return", "size", "foo"]
T = {t: i for i, t in enumerate(TOKENS)}


class Ticket:
    def __init__(self, answer, landed):
        self.answer, self.landed = answer, landed

    def result(self, timeout=0):
        if timeout:
            self.landed = True                    # a wait lets it land
        return self.answer if self.landed else None


class Fake:
    """Answers `names` for `self` (failing with `failed` if given); at once, or on `land()`."""

    def __init__(self, name, names, at_once=True, failed=None):
        self.name, self.pid = name, None
        self.names, self.at_once, self.failed = frozenset(names), at_once, failed
        self.asked, self.tickets = [], []

    def deadline(self):
        return 0.5

    def ask(self, query):
        self.asked.append(query)
        names = frozenset() if self.failed else self.names
        t = Ticket(Analysis(query.receiver, names, 3.0, False, self.failed), self.at_once)
        self.tickets.append(t)
        return t

    def land(self):
        for t in self.tickets:
            t.landed = True

    def prewarm(self, at):
        pass

    def close(self):
        pass


def _row():
    before = "class A:\n    def f(self):\n        "
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="",
                      lex_prefix=before[before.index("    def"):], starts_at_line=False)
    return RowView(0, ctx, VocabIndex(TOKENS))


def _feed(mon, row, tok):
    """Engine order with rollbacks honoured: ("resample", allowed) or ("rollback", length|None)."""
    tid = T[tok]
    redo = mon.check(row, tid) if mon.mask(row) is None else None
    if redo is not None:
        return "resample", {row.vocab.texts[i] for i in redo}
    ck = getattr(row, "_ck", None) or Checkpoints(row, [mon])
    row._ck = ck
    ck.accept(tid)
    p = as_rollback(mon.advance(row, tid))
    ck.mark()
    if p is not None:
        ck.cut(p.length, [(mon, p)])
    return "rollback", None if p is None else p.length


def _start(careful, reproducible=False, fast_names=("size",)):
    fast = Fake("fast", fast_names)
    an = SecondOpinionAnalyzer(fast, careful)
    mon = DereferenceMonitor(an, reproducible=reproducible)
    row = _row()
    mon.reset(row)
    for tok in ["return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == NARROW                    # the fast answer is in: constrained at once
    return fast, mon, row


def test_a_name_the_fast_answer_has_never_asks_the_careful_analyzer():
    careful = Fake("careful", ["size", "registered_updates"], at_once=False)
    fast, mon, row = _start(careful)
    for tok in ["size", "("]:
        assert _feed(mon, row, tok) == ("rollback", None)
    assert careful.asked == [] and row.text == "return self.size("
    rec = row.triggers[-1]
    assert not rec.failed_open and rec.chosen == "size" and rec.analyzer == "fast+careful"


def test_a_name_only_the_careful_analyzer_knows_is_written_not_refused():
    careful = Fake("careful", ["size", "registered_updates"], at_once=False)
    fast, mon, row = _start(careful)
    assert _feed(mon, row, "registered") == ("rollback", None)    # not resampled: asked instead
    assert mon.state == SPEC and len(careful.asked) == 1
    assert careful.asked[0].receiver == "self"
    careful.land()
    _feed(mon, row, "_updates")
    assert mon.state == NARROW                   # the union has it: goes on under the mask
    assert _feed(mon, row, "(") == ("rollback", None)
    rec = row.triggers[-1]
    assert row.text == "return self.registered_updates("
    assert not rec.failed_open and not rec.rolled_back and rec.chosen == "registered_updates"
    assert len(careful.asked) == 1


def test_a_name_neither_knows_is_rolled_back_and_redone_under_both_answers():
    careful = Fake("careful", ["size", "registered_updates"], at_once=False)
    fast, mon, row = _start(careful)
    _feed(mon, row, "foo")
    _feed(mon, row, "(")                         # complete before the careful answer: owed
    assert mon.state == WAIT and len(mon.late) == 1
    careful.land()
    kind, back = _feed(mon, row, ")")
    assert back == 4 and row.text == "return self."
    assert mon.state == NARROW and row.triggers[-1].rolled_back
    kind, allowed = _feed(mon, row, "foo")
    assert kind == "resample" and {"size", "registered"} <= allowed and "foo" not in allowed


def test_a_careful_answer_that_fails_fails_the_trigger_open():
    careful = Fake("careful", (), at_once=False, failed="dynamic")
    fast, mon, row = _start(careful)
    _feed(mon, row, "foo")
    _feed(mon, row, "(")
    careful.land()
    assert _feed(mon, row, ")") == ("rollback", None)
    rec = row.triggers[-1]
    assert row.text == "return self.foo()" and rec.failed_open and rec.reason == "dynamic"
    assert not mon.late


def test_a_careful_answer_never_in_fails_open_at_the_rows_end():
    careful = Fake("careful", ["size"], at_once=False)
    fast, mon, row = _start(careful)
    _feed(mon, row, "foo")
    _feed(mon, row, "(")
    careful.tickets[0].result = lambda timeout=0: None        # hung
    assert mon.settle(row) is None
    rec = row.triggers[-1]
    assert rec.failed_open and rec.reason == "timeout" and row.text == "return self.foo("


def test_a_host_that_waits_asks_the_careful_analyzer_inside_the_check():
    careful = Fake("careful", ["size", "registered_updates"], at_once=False)
    fast, mon, row = _start(careful, reproducible=True)
    kind, allowed = _feed(mon, row, "foo")       # waited for: refused by both answers
    assert kind == "resample" and {"size", "registered"} <= allowed
    assert len(careful.asked) == 1


def test_a_host_that_waits_accepts_what_the_careful_analyzer_knows():
    careful = Fake("careful", ["size", "registered_updates"], at_once=False)
    fast, mon, row = _start(careful, reproducible=True)
    for tok in ["registered", "_updates", "("]:
        assert _feed(mon, row, tok) == ("rollback", None)
    rec = row.triggers[-1]
    assert row.text == "return self.registered_updates(" and not rec.failed_open


def test_the_analyzer_unions_answers_and_falls_back_when_the_fast_one_knows_nothing():
    careful = Fake("careful", ["size", "registered_updates"])
    an = SecondOpinionAnalyzer(Fake("fast", ["size", "real"]), careful)
    q = MembersQuery(None, "self", ("k",))
    a = an.ask(q).result(0)
    assert a.names == {"size", "real"} and a.second is not None and careful.asked == []
    u = a.second().result(0)
    assert u.names == {"size", "real", "registered_updates"} and u.second is None and u.failed is None
    assert a.second() is a.second()              # asked once per answer
    assert len(careful.asked) == 1

    empty = SecondOpinionAnalyzer(Fake("fast", (), failed="empty"), careful)
    b = empty.ask(q).result(0)
    assert b.names == careful.names and b.second is None
    assert isinstance(empty.ask(NamesQuery(None, ("k",))).result(0), Analysis)
    assert careful.asked[-1].__class__ is NamesQuery          # names: the careful analyzer's
    assert [x.name for x in links(empty)] == ["fast", "careful"]

    careful.asked.clear()
    an.ask(MembersQuery(None, "self", ("k2",), prefetch=True))   # a guess: the fast one's alone
    assert careful.asked == []


def test_the_analyzer_option_names_a_server_and_jedi(monkeypatch):
    from groundcode.analysis import lsp_servers
    from groundcode.analysis.lsp_servers import check_analyzer
    assert check_analyzer("jedi") == "jedi"
    monkeypatch.setattr(lsp_servers, "installed", lambda name: None)
    assert check_analyzer("auto") == "jedi"                   # ty not installed: Jedi alone
    monkeypatch.setattr(lsp_servers, "installed", lambda name: Path("/bin/true"))
    assert lsp_servers.resolve_analyzer("auto") == "ty+jedi"
    for bad in ("jedi+ty", "ty+zuban", "ty+", "+jedi", "ty+jedi+jedi"):
        with pytest.raises(GroundcodeError, match="SERVER\\+jedi"):
            check_analyzer(bad)
