"""Benchmark metrics as pure functions of strings, sets and score lists.

What is here (tokens from the project's one lexer, pycode.code_tokens): BLEU-4 (CodeXGLUE's
smoothing; parity with sacrebleu's add-1 smoothing tested), EditSim (rapidfuzz), exact match,
next-identifier match, identifier-sequence match, prefix match, identifier precision/recall,
dependency coverage, and the unbiased pass@k / score@k estimators (MGD Appendix D).
What is not: CodeBLEU (codebleu_adapter.py, tree-sitter), success rate (lint.py runs pylint in a
subprocess), the analysis that finds dependencies (analysis/jedi_oracle.py) — these take their inputs here.
Test: `.venv/bin/python -m pytest tests/test_metrics.py -q` (hand-computed values).
"""
from __future__ import annotations

import math
from collections import Counter
from math import comb

from ..pycode import code_tokens, identifiers  # noqa: F401  (the one lexer; public here)

# ---------------------------------------------------------------- similarity metrics (ToolGen IV)

def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu4(reference: str, candidate: str) -> float:
    """Sentence BLEU-4 over code tokens, uniform weights, brevity penalty, add-one smoothing.

    Smoothing (Lin & Och 2004, as in CodeXGLUE's smooth_bleu): precisions for n >= 2 are
    (matches + 1) / (candidate n-grams + 1), so one missing 4-gram does not zero the score.
    Empty candidate -> 0.0; identical non-empty texts -> 1.0."""
    ref, cand = code_tokens(reference), code_tokens(candidate)
    if not cand or not ref:
        return 1.0 if not cand and not ref else 0.0
    log_p = 0.0
    for n in range(1, 5):
        c, r = _ngrams(cand, n), _ngrams(ref, n)
        matches = sum(min(cnt, r[g]) for g, cnt in c.items())
        total = max(len(cand) - n + 1, 0)
        if n == 1:
            if matches == 0:
                return 0.0
            p = matches / total
        else:
            p = (matches + 1) / (total + 1)
        log_p += math.log(p) / 4
    bp = 1.0 if len(cand) > len(ref) else math.exp(1 - len(ref) / len(cand))
    return bp * math.exp(log_p)


def _normalise_ws(code: str) -> str:
    """Lines stripped of trailing whitespace, blank lines dropped, common indentation removed."""
    lines = [ln.rstrip() for ln in code.splitlines() if ln.strip()]
    if not lines:
        return ""
    indent = min(len(ln) - len(ln.lstrip()) for ln in lines)
    return "\n".join(ln[indent:] for ln in lines)


def edit_sim(reference: str, candidate: str) -> float:
    """EditSim = 1 - Levenshtein / max(len) on whitespace-normalised text, in [0, 1] (rapidfuzz)."""
    from rapidfuzz.distance import Levenshtein
    a, b = _normalise_ws(reference), _normalise_ws(candidate)
    if not a and not b:
        return 1.0
    return float(Levenshtein.normalized_similarity(a, b))


def exact_match(reference: str, candidate: str) -> float:
    """1.0 when the two texts have the same code tokens (comments/whitespace ignored), else 0.0."""
    return float(code_tokens(reference) == code_tokens(candidate))


# ---------------------------------------------------------------- match metrics (MGD section 3)

def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def next_identifier_match(reference: str, candidate: str) -> float:
    """NIM: 1.0 when the first identifier of the candidate equals the reference's first one.

    At a dereference point (`obj.|`) this is the member the model picked."""
    ref, cand = identifiers(reference), identifiers(candidate)
    return float(bool(ref) and bool(cand) and ref[0] == cand[0])


def identifier_sequence_match(reference: str, candidate: str) -> float:
    """ISM: longest common prefix of the identifier sequences / number of reference identifiers."""
    ref = identifiers(reference)
    if not ref:
        return 1.0 if not identifiers(candidate) else 0.0
    return _common_prefix(ref, identifiers(candidate)) / len(ref)


def prefix_match(reference: str, candidate: str) -> float:
    """PM: longest common prefix of the code-token sequences / number of reference tokens."""
    ref = code_tokens(reference)
    if not ref:
        return 1.0 if not code_tokens(candidate) else 0.0
    return _common_prefix(ref, code_tokens(candidate)) / len(ref)


def identifier_precision_recall(reference: str, candidate: str) -> tuple[float, float]:
    """(precision, recall) of the candidate's distinct identifiers against the reference's.

    Precision of an empty candidate is 0 (it proposed nothing right); recall of an empty
    reference is 1 (nothing was missed)."""
    ref, cand = set(identifiers(reference)), set(identifiers(candidate))
    hit = len(ref & cand)
    precision = hit / len(cand) if cand else 0.0
    recall = hit / len(ref) if ref else 1.0
    return precision, recall


# ---------------------------------------------------------------- repository-level (ToolGen IV)

def dependency_coverage(reference_deps: set[str] | list[str], sample_deps: set[str] | list[str]) -> float:
    """DepCov of one sample: share of the reference's repository-level dependencies the sample uses.

    A reference without dependencies is vacuously covered (1.0); builders only emit function
    tasks with at least one dependency, so this case is rare."""
    ref = set(reference_deps)
    if not ref:
        return 1.0
    return len(ref & set(sample_deps)) / len(ref)


# ---------------------------------------------------------------- aggregation over n samples

def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k) for c correct of n samples."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def score_at_k(scores: list[float], k: int) -> float:
    """score@k,n (MGD Appendix D): expected max of a random k-subset of the n scores.

    = sum_{i=1}^{n-k+1} C(n-i, k-1) * S_desc[i] / C(n, k). Equals pass@k on 0/1 scores."""
    n = len(scores)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n} k={k}")
    desc = sorted(scores, reverse=True)
    total = sum(comb(n - i, k - 1) * desc[i - 1] for i in range(1, n - k + 2))
    return total / comb(n, k)


# ---------------------------------------------------------------- retrieval

def reciprocal_rank(ranked: list, relevant) -> float:
    """1 / (1-based rank of the first relevant item in `ranked`), 0 when none is there."""
    rel = set(relevant)
    for i, x in enumerate(ranked):
        if x in rel:
            return 1.0 / (i + 1)
    return 0.0


def recall_at_k(ranked: list, relevant, k: int) -> float:
    """1 when any relevant item is among the first k (the paper's recall@k), else 0."""
    rel = set(relevant)
    return 1.0 if any(x in rel for x in ranked[:k]) else 0.0
