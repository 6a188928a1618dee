"""The tokens that start with one lead string (usually "", or a merged dot such as `.` or `).`),
keyed by what follows the lead, with the tables each way of answering needs, built on demand.

A token's rest (text after the lead) is its identifier run plus a remainder that is empty
("ident" token: allowed when the run is a prefix of a suffix) or starts with a non-identifier
character ("end" token: allowed when the run equals a suffix).
Not here: the answers (kernel.py, reference.py, index.py). Test: tests/test_vocab.py.
"""
from __future__ import annotations

import re

import numpy as np

from .trie import Trie

IDENT_RUN = re.compile(r"[A-Za-z0-9_]*")


class Lead:
    def __init__(self, items: list[tuple[str, int]], size: int, trie: Trie | None = None,
                 empty_mask: np.ndarray | None = None):
        self.size = size
        self.items = items                 # (rest, token id), rest non-empty
        self._trie = trie
        self._split: tuple[dict, dict] | None = None
        self._by_rest: dict[str, list[int]] | None = None
        self._sorted_rests: list[str] | None = None
        self._max_rest: int | None = None
        self._empty_bits: np.ndarray | None = None
        if empty_mask is None:
            empty_mask = np.zeros(size, dtype=bool)
            empty_mask[self.ends.get("", [])] = True
        self.empty_mask = empty_mask       # tokens allowed when the name may end here (suffix "")

    def _runs(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        if self._split is None:
            ident: dict[str, list[int]] = {}
            ends: dict[str, list[int]] = {}
            for rest, tid in self.items:
                run = IDENT_RUN.match(rest).group(0)
                (ident if run == rest else ends).setdefault(run, []).append(tid)
            self._split = (ident, ends)
        return self._split

    @property
    def ident(self) -> dict[str, list[int]]:
        return self._runs()[0]

    @property
    def ends(self) -> dict[str, list[int]]:
        return self._runs()[1]

    @property
    def trie(self) -> Trie:
        if self._trie is None:
            self._trie = Trie.build(self.ident, self.ends)
        return self._trie

    @property
    def has_trie(self) -> bool:
        return self._trie is not None

    def empty_bits(self) -> np.ndarray:
        """`empty_mask` packed into uint64 words, bit i of word i // 64 (for the kernel)."""
        if self._empty_bits is None:
            packed = np.packbits(self.empty_mask, bitorder="little")
            words = np.zeros((self.size + 63) // 64 * 8, dtype=np.uint8)
            words[:len(packed)] = packed
            self._empty_bits = words.view("<u8").astype(np.uint64)
        return self._empty_bits

    @property
    def by_rest(self) -> dict[str, list[int]]:
        if self._by_rest is None:
            by_rest: dict[str, list[int]] = {}
            for rest, tid in self.items:
                by_rest.setdefault(rest, []).append(tid)
            self._by_rest = by_rest
        return self._by_rest

    @property
    def sorted_rests(self) -> list[str]:
        if self._sorted_rests is None:
            self._sorted_rests = sorted(self.by_rest)
        return self._sorted_rests

    @property
    def max_rest(self) -> int:
        if self._max_rest is None:
            self._max_rest = max(map(len, self.by_rest), default=0)
        return self._max_rest
