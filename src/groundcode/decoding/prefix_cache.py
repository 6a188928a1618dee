"""Prompt prefixes already prefilled, for reuse: the next keystroke's prompt shares almost all
of the previous one (llama.cpp's `cache_prompt`, vLLM's prefix caching).

    pc = PrefixCache(budget_bytes=512 << 20)
    n, layers = pc.lookup(prompt_ids)    # the longest stored common prefix, at most len - 1
                                         # tokens (the last one is fed to get logits); n = 0: none
    pc.store(prompt_ids, layers)         # one row's KV [(k, v)] over exactly these ids

Entries are single rows without padding (positions 0..n-1), so a hit is a slice of the stored
tensors; the engine copies it on the next forward, stored tensors are never written. LRU over
entries, bounded by the total bytes of their tensors; an entry that is a prefix of a new one is
dropped (the new one answers every lookup it answered). Thread-unsafe: the scheduler thread
owns it.
Test: tests/test_session.py.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from . import kv


def _common(a: np.ndarray, b: np.ndarray) -> int:
    m = min(len(a), len(b))
    if m == 0:
        return 0
    diff = np.flatnonzero(a[:m] != b[:m])
    return int(diff[0]) if len(diff) else m


class PrefixCache:
    def __init__(self, budget_bytes: int = 512 << 20, min_tokens: int = 4):
        self.budget = int(budget_bytes)
        self.min_tokens = min_tokens        # shorter common prefixes are not worth a lookup hit
        self._entries: OrderedDict = OrderedDict()   # key -> (ids array, layers, bytes)
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, ids) -> tuple[int, list | None]:
        a = np.asarray(ids, dtype=np.int64)
        best, best_key = 0, None
        for key, (b, _, _) in self._entries.items():
            n = _common(a, b)
            if n > best:
                best, best_key = n, key
        best = min(best, len(a) - 1)
        if best_key is None or best < self.min_tokens:
            self.misses += 1
            return 0, None
        self._entries.move_to_end(best_key)
        self.hits += 1
        layers = self._entries[best_key][1]
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in layers]

    def store(self, ids, layers) -> None:
        a = np.asarray(ids, dtype=np.int64)
        size = kv.nbytes(layers)
        if size > self.budget or len(a) < self.min_tokens:
            return
        key = a.tobytes()
        for k in [k for k, (b, _, _) in self._entries.items() if len(b) <= len(a) and _common(a, b) == len(b)]:
            self._drop(k)                    # a prefix of the new one (or the same prompt)
        self._entries[key] = (a, layers, size)
        self.bytes += size
        while self.bytes > self.budget and self._entries:
            self._drop(next(iter(self._entries)))
            self.evicted += 1

    def _drop(self, key) -> None:
        _, _, size = self._entries.pop(key)
        self.bytes -= size

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def stats(self) -> dict:
        return {"entries": len(self._entries), "bytes": self.bytes, "budget": self.budget,
                "hits": self.hits, "misses": self.misses, "evicted": self.evicted}
