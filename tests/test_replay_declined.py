"""A replay (teacher forcing) declines the monitor's rollbacks: declining an owed answer's
proposal must not drop the answer of the trigger being written (dereference.py `declined`)."""
from __future__ import annotations

from groundcode.analysis.base import Analysis
from groundcode.context import function_context
from groundcode.decoding.guides.base import RowView
from groundcode.decoding.guides.dereference import DereferenceMonitor
from groundcode.decoding.vocab import VocabIndex
from fake_analyzer import FakeBase


class _Held:
    def __init__(self, receiver, names):
        self.answer, self.receiver, self.names = None, receiver, names

    def land(self):
        self.answer = Analysis(self.receiver, frozenset(self.names), 5.0, False)

    def result(self, timeout=0):
        return self.answer


class _Slow(FakeBase):
    """Answers only when the test lands them."""

    def __init__(self):
        self.tickets = {}

    def ask(self, query):
        t = self.tickets[query.receiver] = _Held(query.receiver, {"a": {"x"}, "b": {"y"}}.get(query.receiver, ()))
        if query.prefetch:
            t.land()
        return t


def test_declining_an_owed_answers_rollback_keeps_the_current_trigger(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    \"\"\"Doc.\"\"\"\n    return a.zz + b.y\n")
    ctx = function_context(f, "f", tmp_path).continued("")
    texts = ["", "return", " a", ".", "zz", " +", " b", ".", "y", "\n"]
    vocab = VocabIndex(texts)
    an = _Slow()
    mon = DereferenceMonitor(an)
    row = RowView(0, ctx, vocab)
    mon.reset(row)
    proposals = []
    for t in texts[1:]:
        if t == "y":                     # a's answer lands while b's is still running
            an.tickets["a"].land()
        if t == "\n":
            an.tickets["b"].land()
        tok = vocab.texts.index(t)
        mon.check(row, tok)
        row.tokens.append(tok)
        row.text += t
        row.ends.append(len(row.text))
        back = mon.advance(row, tok)
        if back is not None:
            proposals.append(back)
            mon.declined(row, back)      # what replay does
    a_rec, b_rec = row.triggers
    assert [p.payload[1] for p in proposals] == [a_rec] and a_rec.rolled_back
    assert not b_rec.failed_open and b_rec.reason is None     # b's answer was still judged
