"""Exact rewind for every guide: cutting a row back (by any guide) and feeding the same tokens
again gives the same masks, checks, rollback requests, stops and trigger records as a fresh
run. Driven like the engine, with a hand-made vocabulary and a fake analyzer (no model)."""
from __future__ import annotations

from pathlib import Path

import pytest

from fake_analyzer import FakeBase
from groundcode.analysis.base import Analysis
from groundcode.api import CodeContext
from groundcode.decoding.guides.base import RowView
from groundcode.decoding.guides.body_end import BodyEnd
from groundcode.decoding.guides.dereference import DereferenceMonitor
from groundcode.decoding.vocab import VocabIndex

TOKENS = ["", "self", ".", "_", "reg", "registered", "_updates", "append", "(", ")", "\n",
          "        ", " ", "=", "[]", ".append", "._", "x", "return", "updates", "size",
          ").", "foo", "1", "    ", "#", " c", "    def", " g", ":", "a"]
T = {t: i for i, t in enumerate(TOKENS)}


class FakeAnalyzer(FakeBase):
    def members(self, code, path, line, column, *, receiver, cache_key):
        names = frozenset({"self": ["_registered_updates", "size", "register"],
                           "self.size": ["bit_length", "real"],
                           "x": ["append", "add"]}.get(receiver, ()))
        return Analysis(receiver, names, 1.0, False, None if names else "empty")


def _ctx():
    before = "class A:\n    def f(self, x: list):\n        "
    return CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="",
                       lex_prefix=before[before.index("    def"):], starts_at_line=False)


def _guides(kind):
    if kind == "body_end":
        return [BodyEnd(4)]
    if kind == "dereference":
        return [DereferenceMonitor(FakeAnalyzer(), verify_first=False)]
    if kind == "dereference_verify_first":
        return [DereferenceMonitor(FakeAnalyzer())]
    return [BodyEnd(4), DereferenceMonitor(FakeAnalyzer())]


def _step(guides, row, tid):
    """One engine step with token `tid` sampled: what each guide said."""
    said = []
    for g in guides:
        m = g.mask(row)
        said.append(None if m is None else tuple(sorted(m.tolist())))
    for g in guides:
        m = g.check(row, tid)
        said.append(None if m is None else tuple(sorted(m.tolist())))
    row.tokens.append(tid)
    row.text += row.vocab.texts[tid]
    row.ends.append(len(row.text))
    said += [g.advance(row, tid) for g in guides]
    said += [g.stop(row) for g in guides]
    return said


def _cut(guides, row, length):
    del row.tokens[length:]
    del row.ends[length:]
    row.text = row.text[: row.ends[-1]] if row.ends else ""
    for g in guides:
        g.rewind(row, length)


def _triggers(row):
    return [(t.receiver, t.chosen, t.failed_open, t.binding, t.constrained) for t in row.triggers]


SEQ = ["self", ".", "_", "registered", "_updates", ".append", "(", "x", ")", "\n", "        ",
       "#", " c", "\n", "        ", "self", ".", "foo", " ", "=", " ", "x", ".", "append", "(", "1",
       ")", "\n", "        ", "return", " ", "x", ".", "foo", "(", ")", "\n", "        ", "return", " ", "self", ".", "size", ".", "real", "\n", "    def"]
VOCAB = VocabIndex(TOKENS + ["real"])
T["real"] = len(TOKENS)


@pytest.mark.parametrize("kind", ["body_end", "dereference", "dereference_verify_first", "both"])
def test_rollback_then_continue_equals_a_fresh_run(kind):
    ids = [T[s] for s in SEQ]
    fresh_g = _guides(kind)
    fresh = RowView(0, _ctx(), VOCAB)
    for g in fresh_g:
        g.reset(fresh)
    trace = [_step(fresh_g, fresh, t) for t in ids]
    assert any(x is not None for said in trace for x in said), "the sequence exercises the guide"
    for back_to in range(0, len(ids), 3):
        for went_to in (back_to + 1, back_to + 5, len(ids)):
            went_to = min(went_to, len(ids))
            gs = _guides(kind)
            row = RowView(0, _ctx(), VOCAB)
            for g in gs:
                g.reset(row)
            for t in ids[:went_to]:
                _step(gs, row, t)
            _cut(gs, row, back_to)
            again = [_step(gs, row, t) for t in ids[back_to:]]
            assert again == trace[back_to:], (kind, back_to, went_to)
            assert row.text == fresh.text
            assert _triggers(row) == _triggers(fresh), (kind, back_to, went_to)
