"""Token healing: the prompt gave back its trailing whitespace; the completion must re-write it.

While the generated text is shorter than `owed`, only tokens that agree with the rest of it are
allowed: a token that is a prefix of the rest (`"    "` of eight spaces), or one that starts
with the whole rest and goes on (`"        return"`, or Qwen's `"       "` + `" return"`) — but
not with more indentation (a space or tab right after owed indentation would over-indent). So
the model itself chooses how the indentation merges with the next word, whatever the
tokenizer. Stateless (derived from the row's text), so a rewind is exact.
Not here: where the owed text comes from (decoding/prompt.py). Test: tests/test_prompt.py.
"""
from __future__ import annotations

import bisect

import numpy as np

from .base import Guide, RowView, on_vocab


class _Agreeing:
    """Per vocab: token ids whose text agrees with a short string (cached per string)."""

    def __init__(self, texts: list[str]):
        order = sorted((t, i) for i, t in enumerate(texts) if t)
        self.sorted_texts = [t for t, _ in order]
        self.sorted_ids = np.array([i for _, i in order], dtype=np.int64)
        self.by_text: dict[str, list[int]] = {}
        for t, i in order:
            self.by_text.setdefault(t, []).append(i)
        self.cache: dict[str, np.ndarray] = {}

    def ids(self, rest: str) -> np.ndarray:
        got = self.cache.get(rest)
        if got is None:
            lo = bisect.bisect_left(self.sorted_texts, rest)
            hi = bisect.bisect_left(self.sorted_texts, rest + "\U0010ffff")
            # whole rest, then anything but more indentation
            going_on = [i for t, i in zip(self.sorted_texts[lo:hi], self.sorted_ids[lo:hi].tolist())
                        if len(t) == len(rest) or rest[-1] not in " \t" or t[len(rest)] not in " \t"]
            parts = [np.array(going_on, dtype=np.int64)]
            parts += [np.array(self.by_text.get(rest[:k], []), dtype=np.int64) for k in range(1, len(rest))]
            got = np.unique(np.concatenate(parts))
            self.cache[rest] = got
        return got


def agreeing(vocab) -> _Agreeing:
    return on_vocab(vocab, "_agreeing", lambda: _Agreeing(vocab.texts))


class Heal(Guide):
    stateless = True                  # its mask follows the row's text alone

    def __init__(self, owed: str):
        self.owed = owed

    def reset(self, row: RowView) -> None:
        self._index = agreeing(row.vocab) if self.owed else None

    def mask(self, row: RowView) -> np.ndarray | None:
        if len(row.text) >= len(self.owed):
            return None
        ids = self._index.ids(self.owed[len(row.text):])
        return ids if len(ids) else None
