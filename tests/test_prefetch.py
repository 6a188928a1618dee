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
    assert [q.receiver for q in new] == ["conn"] and new[0].soon    # before the other guesses
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


FILE = ("import os\nimport logging\nfrom shop.registry import Registry\n\n"
        "logger = logging.getLogger(__name__)\n\n\nclass A:\n"
        "    def __init__(self):\n        self.registry = Registry()\n\n"
        "    def g(self):\n        logger.info('x')\n        self.registry.add(os.path.join('a', 'b'))\n"
        "        return self.registry.items()\n\n"
        "    def f(self, n):\n        \"\"\"Doc.\"\"\"\n        return n\n")


class _Members(_Recorder):
    def ask(self, query):
        (self.prefetched if query.prefetch else self.real).append(query)
        return Answered(Analysis(query.receiver, frozenset({"add", "info", "registry"}), 0.0, False))


def _row(tmp_path, texts):
    f = tmp_path / "m.py"
    f.write_text(FILE)
    ctx = function_context(f, "A.f", tmp_path).continued("")    # the row starts after the indentation
    vocab = VocabIndex(texts)
    an = _Members()
    mon = DereferenceMonitor(an)
    row = RowView(0, ctx, vocab)
    mon.reset(row)
    return an, mon, row, vocab


def test_a_body_prefetches_what_its_file_and_class_dot_into_most_under_the_triggers_keys(tmp_path):
    texts = ["", "x = n\n", "        logger", "self", ".", "registry", "info", "(x)\n", "        "]
    an, mon, row, vocab = _row(tmp_path, texts)
    pre = {q.receiver: q for q in an.prefetched}
    # `self.registry.` twice in the class; the module's names (imports, a top-level assignment)
    # as the file dots into them; `n` (unannotated) and `x` (bound here) are not among them
    assert list(pre)[:2] == ["self", "self.registry"]
    assert {"logging", "logger", "os", "os.path"} <= set(pre) and len(pre) <= 8
    for q in pre.values():                 # each asked as a new statement of the body
        assert q.at.code.splitlines()[q.at.line - 1] == "        " + q.receiver + "."
    _feed(mon, row, ["x = n\n", "        logger", ".", "info", "(x)\n", "        ",
                     "self", ".", "registry", ".", "info", "(x)\n"], vocab)
    real = {q.receiver: q for q in an.real}
    assert real["logger"].key == pre["logger"].key
    assert real["self.registry"].key == pre["self.registry"].key


def test_a_self_attribute_assigned_in_the_function_is_not_served_the_prefetched_answer(tmp_path):
    texts = ["", "self", ".", "registry", " = Registry()\n", "        ", "info", "()\n"]
    an, mon, row, vocab = _row(tmp_path, texts)
    pre = {q.receiver: q for q in an.prefetched}
    _feed(mon, row, texts[1:5] + ["        ", "self", ".", "registry", ".", "info", "()\n"], vocab)
    real = [q for q in an.real if q.receiver == "self.registry"]
    # Jedi infers `self.registry` from this function's assignment too: another key
    assert len(real) == 1 and real[0].key != pre["self.registry"].key
