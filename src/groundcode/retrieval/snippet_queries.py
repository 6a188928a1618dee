"""A held-out query set for snippet retrieval, built from the index itself (DS-1000-independent).

Query: the summary line of a documented object's docstring ("Compute the q-th percentile of
the data along the specified axis."). Relevant: every snippet of that object (its Examples).
The summary is never indexed (a snippet's description is the prose *inside* the Examples
section, its name the object's dotted name), and a query whose text equals any indexed
description is left out, so no query finds itself. Objects are split by a hash of their name
into dev (tuning, e.g. the ensemble weight) and test (reporting); a seeded sample caps the size.

Not here: the metrics (evaluation/metrics.py), running the retrievers
(benchmarks/retrieval_quality.py). Test: tests/test_retrievers.py.
"""
from __future__ import annotations

import hashlib
import random
from collections import defaultdict

from .snippet_index import SnippetIndex


def held_out_queries(index: SnippetIndex, n: int | None = 600, seed: int = 0, dev_share: float = 0.3,
                     min_words: int = 4) -> list[dict]:
    """[{query, name, relevant: [snippet index], split: dev|test}], sorted by name."""
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(index.snippets):
        if s.name:
            by_name[s.name].append(i)
    described = {" ".join(s.description.lower().split()) for s in index.snippets if s.description}
    out = []
    for name, summary in sorted(index.summaries().items()):
        text = " ".join(summary.split())
        if name not in by_name or len(text.split()) < min_words or text.lower() in described:
            continue
        h = int(hashlib.sha1(name.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        out.append({"query": text, "name": name, "relevant": by_name[name],
                    "split": "dev" if h < dev_share else "test"})
    if n is not None and len(out) > n:
        out = sorted(random.Random(seed).sample(out, n), key=lambda q: q["name"])
    return out
