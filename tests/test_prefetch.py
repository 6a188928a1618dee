"""Prefetches that put answers in before the name after a dot is written: a local bound by a
line just generated, and the names a cursor's function dots into already (dereference.py)."""
from __future__ import annotations

from groundcode.analysis.base import Analysis, Answered
from groundcode.context import cursor_context, function_context
from groundcode.decoding.guides.base import RowView
from groundcode.decoding.guides.dereference import DereferenceMonitor
from groundcode.decoding.vocab import VocabIndex
from fake_analyzer import FakeBase

SRC = ("import os\nfrom shop.registry import Registry\n\n\nclass A:\n"
       "    def f(self, reg: Registry, n):\n        \"\"\"Doc.\"\"\"\n        box = Registry()\n"
       "        for item in reg.items():\n            box.add(item)\n        return self.size\n\n\n"
       "print(os.sep)\n")


class _Recorder(FakeBase):
    """Answers every question with one member; keeps the prefetches and the real questions."""

    def __init__(self):
        self.prefetched, self.real = [], []

    def ask(self, query):
        (self.prefetched if query.prefetch else self.real).append(query)
        return Answered(Analysis(query.receiver, frozenset({"add"}), 0.0, False))


def _feed(mon, row, texts, vocab):
    for t in texts:
        tok = vocab.texts.index(t)
        mon.check(row, tok)
        row.tokens.append(tok)
        row.text += t
        row.ends.append(len(row.text))
        mon.advance(row, tok)


def test_a_local_bound_by_a_generated_line_is_prefetched_under_the_key_its_trigger_uses(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(SRC)
    ctx = function_context(f, "A.f", tmp_path).continued("")    # the row starts after the indentation
    texts = ["", "conn = Registry()\n", "        total = (1 +\n", "            2)\n", "        conn", ".", "add", "()\n"]
    vocab = VocabIndex(texts)
    an = _Recorder()
    mon = DereferenceMonitor(an)
    row = RowView(0, ctx, vocab)
    mon.reset(row)
    before = len(an.prefetched)
    _feed(mon, row, texts[1:], vocab)
    new = [q for q in an.prefetched[before:]]
    # `conn = Registry()` is prefetched as `conn.` on the next line; `total = (1 +` is still open
    assert [q.receiver for q in new] == ["conn"]
    lines = new[0].at.code.splitlines()
    assert lines[new[0].at.line - 1] == "        conn." and lines[new[0].at.line - 2] == "        conn = Registry()"
    real = [q for q in an.real if q.receiver == "conn"]
    assert len(real) == 1 and real[0].key == new[0].key       # the trigger finds the prefetched answer


def test_a_cursor_context_prefetches_the_locals_its_function_dots_into(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(SRC)
    ctx = cursor_context(f, 11, len("        return self."), tmp_path)
    an = _Recorder()
    DereferenceMonitor(an).reset(RowView(0, ctx.continued(""), VocabIndex(["", "x"])))
    # box (bound above, dotted into) and reg (annotated); n is unannotated: never asked
    assert {q.receiver for q in an.prefetched} == {"box", "reg", "os"}
    assert [q.receiver for q in an.real] == ["self"]
