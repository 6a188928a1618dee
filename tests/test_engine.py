"""The engine loop: equal to transformers' greedy generate, batch-invariant, exact rollback,
seeded sampling, stopping at the end of a function body."""
from __future__ import annotations

import numpy as np
import torch

from groundcode.api import CodeContext
from groundcode.config import SamplingConfig
from groundcode.decoding.engine import Engine, RowSpec
from groundcode.decoding.guides.base import Guide
from groundcode.decoding.guides.body_end import BodyEnd
from groundcode.decoding.vocab import VocabIndex


def _engine(lm):
    return Engine(lm.model, lm.tokenizer, VocabIndex.for_tokenizer(lm.tokenizer))


def _ids(lm, text):
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def test_greedy_matches_transformers_generate(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "class Registry:\n    def register(self, update):\n        self.")
    out = eng.generate([RowSpec(prompt)], SamplingConfig(max_new_tokens=24))[0]
    ref = tiny_lm.model.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False,
                                 pad_token_id=tiny_lm.tokenizer.pad_token_id)
    want = ref[0, len(prompt):].tolist()
    n = len(out.tokens)
    assert out.tokens == want[:n]
    assert out.finish_reason in ("length", "eos")


def test_batch_rows_are_independent_of_padding(tiny_lm):
    eng = _engine(tiny_lm)
    a = _ids(tiny_lm, "import os\n")
    b = _ids(tiny_lm, "def read(path):\n    with open(path) as fh:\n        return fh.")
    s = SamplingConfig(max_new_tokens=12)
    both = eng.generate([RowSpec(a), RowSpec(b)], s)
    alone = [eng.generate([RowSpec(a)], s)[0], eng.generate([RowSpec(b)], s)[0]]
    assert [o.tokens for o in both] == [o.tokens for o in alone]


class _RollbackOnce(Guide):
    """Forces one rollback to `to` tokens after `at` tokens, then bans the token that had been
    chosen at position `to` so the continuation must differ."""

    def __init__(self, at, to):
        self.at, self.to = at, to

    def reset(self, row):
        self.done = False
        self.banned = None

    def advance(self, row, token):
        if not self.done and len(row.tokens) == self.at:
            self.done = True
            self.banned = row.tokens[self.to]
            return self.to
        return None

    def mask(self, row):
        if self.banned is not None and len(row.tokens) == self.to:
            ids = np.arange(row.vocab.size, dtype=np.int64)
            return ids[ids != self.banned]
        return None


def test_rollback_continues_exactly_like_a_fresh_run(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    s = SamplingConfig(max_new_tokens=10)
    for to in (0, 3):
        out = eng.generate([RowSpec(prompt, guides=[_RollbackOnce(at=6, to=to)])], s)[0]
        assert out.rollbacks == 1
        # A fresh greedy run on prompt + kept tokens + the token chosen after the rollback
        # must produce the same continuation: the masked cache columns are truly gone.
        head = out.tokens[: to + 1]
        fresh = eng.generate([RowSpec(prompt + head)], SamplingConfig(max_new_tokens=10 - to - 1))[0]
        assert out.tokens[to + 1:] == fresh.tokens


def test_sampling_is_seeded_per_row(tiny_lm):
    eng = _engine(tiny_lm)
    p = _ids(tiny_lm, "def get_latest(client, name):\n")
    s = SamplingConfig(temperature=1.0, top_p=0.95, seed=7, max_new_tokens=16)
    r1 = eng.generate([RowSpec(p, seed=1), RowSpec(p, seed=2)], s)
    r2 = eng.generate([RowSpec(p, seed=1)], s)
    assert r1[0].tokens == r2[0].tokens
    assert r1[0].tokens != r1[1].tokens


def test_body_end_stops_at_dedent_but_not_inside_strings(tiny_lm):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    ctx = CodeContext(path="x.py", repo=".", before="def f():\n", stop_indent=0,
                      lex_prefix="def f():\n")
    from groundcode.decoding.guides.base import RowView
    g = BodyEnd(0)
    row = RowView(0, ctx, vocab)
    g.reset(row)
    for piece, want in [("    x = '''\n", None), ("a\n", None), ("'''\n", None), ("    return x\n", None),
                        ("def", len("    x = '''\na\n'''\n    return x\n"))]:
        row.text += piece
        # the guide looks only at whether the last token had a newline
        tok = next(i for i, t in enumerate(vocab.texts) if ("\n" in t) == ("\n" in piece) and t)
        g.advance(row, tok)
        assert g.stop(row) == want
