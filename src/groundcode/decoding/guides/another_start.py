"""A lookahead row's start: the first character it writes after the cursor is none of the ones
the suggestions at this place already start with (the scheduler's lookahead: while the session
is idle, the suggestion the user did not take is followed by the model's next choices, so that
a keystroke that types one of them finds a draft — decoding/scheduler.py).

    AnotherStart(at=len(prompt.owed), chars="o")   # the row's text[at] may not be "o"

Bans, through the `logits` hook, every token that would put one of `chars` at text offset `at`
of the row (the cursor: a healed row first re-writes the `at` characters its prompt gave back).
Stateless (derived from the row's text), so a rewind is exact; inactive once the row's text
reaches past `at`.
Test: tests/test_drafts.py.
"""
from __future__ import annotations

import numpy as np

from ..masking import NEG_INF, to_index
from .base import Guide, RowView, on_vocab


def _ids_with(vocab, p: int, chars: frozenset) -> np.ndarray:
    """Token ids whose text has one of `chars` at offset p (cached on the vocab, bounded)."""
    cache = on_vocab(vocab, "_char_at", dict)
    key = (p, chars)
    got = cache.get(key)
    if got is None:
        got = np.array([i for i, t in enumerate(vocab.texts) if len(t) > p and t[p] in chars], dtype=np.int64)
        if len(cache) >= 64:
            cache.pop(next(iter(cache)))
        cache[key] = got
    return got


class AnotherStart(Guide):
    stateless = True                  # its mask follows the row's length alone

    def __init__(self, at: int, chars):
        self.at, self.chars = int(at), frozenset(chars)

    def logits(self, row: RowView, scores) -> None:
        p = self.at - len(row.text)
        if p < 0 or not self.chars:
            return
        ids = _ids_with(row.vocab, p, self.chars)
        if len(ids):
            scores.index_fill_(0, to_index(ids, scores.device), NEG_INF)
