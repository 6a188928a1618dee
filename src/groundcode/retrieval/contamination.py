"""Overlap between snippets and a benchmark (DS-1000): what must leave the corpus, and a report.

A snippet is contaminated (dropped) when
- its normalised code equals a benchmark solution's (`reference_code`), or
- it shares a run of CODE_N code tokens with a solution (a copied solution inside a longer
  example), or
- its description shares a run of TEXT_N words with a problem's prompt (the 13-gram test of the
  GPT-3 paper).
Shorter shared code runs (WEAK_N tokens) are counted as weak overlap and kept: idioms such as
`df.groupby('a').sum()` are what retrieval is for.

Not here: reading snippets (snippet_sources.py). Test: tests/test_snippets.py.
"""
from __future__ import annotations

import re
from collections import Counter

from .snippet import Snippet, normalise_code

CODE_N = 20
WEAK_N = 10
TEXT_N = 13
_CODE_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[a-z0-9]+")


def _code_tokens(code: str) -> list[str]:
    return _CODE_TOKEN.findall(normalise_code(code))


def _ngrams(tokens: list[str], n: int) -> set[tuple]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


class Contamination:
    """The benchmark side, indexed once: solutions' code n-grams and prompts' word n-grams."""

    def __init__(self, problems: list[dict]):
        self.exact = set()
        self.code_grams: set[tuple] = set()
        self.weak_grams: set[tuple] = set()
        self.text_grams: set[tuple] = set()
        for p in problems:
            code = p.get("reference_code") or ""
            self.exact.add(normalise_code(code))
            toks = _code_tokens(code)
            self.code_grams |= _ngrams(toks, CODE_N)
            self.weak_grams |= _ngrams(toks, WEAK_N)
            self.text_grams |= _ngrams(_WORD.findall((p.get("prompt") or "").lower()), TEXT_N)
        self.exact.discard("")
        self.problems = len(problems)

    def check(self, s: Snippet) -> str | None:
        """Why `s` must be dropped ("exact_code", "code_ngram", "description_ngram"), or None."""
        if normalise_code(s.code) in self.exact:
            return "exact_code"
        toks = _code_tokens(s.code)
        if _ngrams(toks, CODE_N) & self.code_grams:
            return "code_ngram"
        if _ngrams(_WORD.findall(s.description.lower()), TEXT_N) & self.text_grams:
            return "description_ngram"
        return None

    def weak(self, s: Snippet) -> bool:
        return bool(_ngrams(_code_tokens(s.code), WEAK_N) & self.weak_grams)

    def filter(self, snippets: list[Snippet]) -> tuple[list[Snippet], dict]:
        """(kept snippets, report {problems, dropped: {reason: n}, weak_overlap_kept, examples})."""
        kept, reasons, examples, weak = [], Counter(), [], 0
        for s in snippets:
            why = self.check(s)
            if why:
                reasons[why] += 1
                if len(examples) < 10:
                    examples.append({"source": s.source, "reason": why})
                continue
            weak += self.weak(s)
            kept.append(s)
        return kept, {"benchmark_problems": self.problems, "checked": len(snippets),
                      "dropped": dict(reasons), "weak_overlap_kept": weak,
                      "thresholds": {"code_tokens": CODE_N, "weak_code_tokens": WEAK_N,
                                     "description_words": TEXT_N},
                      "dropped_examples": examples}
