"""The identifier trie of one lead, in the row layout the kernel walks (see kernel.py).

Every token whose text (after the lead) is an identifier run is an "ident" token of the run's
node; one whose run is followed by a non-identifier character is an "end" token of it. Nodes
are numbered in depth-first order of the sorted runs and rows grouped by parent, so a walk
along sorted names moves forward through memory. Built with numpy in a fraction of a second at
150k tokens; the root's rows are kept in the disk cache next to the token texts.
Not here: which tokens belong to a lead (lead.py), the walk (kernel.py). Test: tests/test_vocab.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernel import CODE


@dataclass
class Trie:
    hot: np.ndarray             # (nodes, 2) int64, the root last: what every step reads
    cold: np.ndarray            # (nodes, 2) int64: token ranges, read where a name ends
    ident_ids: np.ndarray       # int64: ident tokens, grouped by node
    ends_ids: np.ndarray        # int64: end tokens, grouped by node

    @property
    def root(self) -> int:
        return len(self.hot) - 1

    FIELDS = ("hot", "cold", "ident_ids", "ends_ids")

    def arrays(self) -> dict[str, np.ndarray]:
        return {"trie_hot": self.hot, "trie_cold": self.cold, "trie_ident_ids": self.ident_ids,
                "trie_ends_ids": self.ends_ids}

    @classmethod
    def from_arrays(cls, arrays) -> "Trie":
        return cls(*(np.ascontiguousarray(arrays[f"trie_{k}"], dtype=np.int64) for k in cls.FIELDS))

    @classmethod
    def build(cls, ident: dict[str, list[int]], ends: dict[str, list[int]]) -> "Trie":
        runs = sorted((set(ident) | set(ends)) - {""})
        node_of = {"": 0}
        parent, char = [-1], [0]
        for r in runs:  # sorted: most prefixes exist already; add the missing tail
            k = len(r)
            while r[:k] not in node_of:
                k -= 1
            for m in range(k + 1, len(r) + 1):
                node_of[r[:m]] = len(parent)
                parent.append(node_of[r[:m - 1]])
                char.append(ord(r[m - 1]))
        nn = len(parent)
        par = np.asarray(parent[1:], dtype=np.int64)
        ch = np.asarray(char[1:], dtype=np.int64)
        order = np.lexsort((ch, par))          # child rows grouped by parent, by character
        child_off = np.searchsorted(par[order], np.arange(nn + 1))
        code = CODE[ch[order]]
        if len(code) and code.min() < 0:
            raise ValueError("trie holds a character that is not an identifier character")
        mask = np.zeros(nn, dtype=np.uint64)
        np.bitwise_or.at(mask, par[order], np.left_shift(np.uint64(1), code.astype(np.uint64)))
        ident_off, ident_ids = _csr(ident, node_of, nn)
        ends_off, ends_ids = _csr(ends, node_of, nn)
        v = np.append(np.arange(1, nn, dtype=np.int64)[order], 0)   # node of each row
        i0, i1 = ident_off[v], ident_off[v + 1]
        first_ident = np.zeros(len(v), dtype=np.int64)   # ident token + 1 (0: none)
        has = i1 > i0
        first_ident[has] = ident_ids[i0[has]] + 1
        more = (i1 - i0 > 1).astype(np.uint64) << np.uint64(63)
        hot = np.empty((len(v), 2), dtype=np.int64)
        hot[:, 0] = mask[v].view(np.int64)
        hot[:, 1] = (child_off[v].astype(np.uint64) | (first_ident.astype(np.uint64) << np.uint64(32))
                     | more).view(np.int64)
        cold = np.empty((len(v), 2), dtype=np.int64)
        cold[:, 0] = ends_off[v] | (ends_off[v + 1] << 32)
        cold[:, 1] = i0 | (i1 << 32)
        return cls(hot, cold, ident_ids, ends_ids)


def _csr(groups: dict[str, list[int]], node_of: dict[str, int], nn: int):
    cnt = np.zeros(nn + 1, dtype=np.int64)
    rows = sorted((node_of[r], ids) for r, ids in groups.items() if r)
    for node, ids in rows:
        cnt[node + 1] = len(ids)
    off = np.cumsum(cnt)
    flat = np.fromiter((i for _, ids in rows for i in ids), dtype=np.int64, count=int(off[-1]))
    return off, flat
