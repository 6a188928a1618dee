"""CodeBLEU for Python through the `codebleu` package (0.7.0, tree-sitter-python 0.21.0).

The only module that imports codebleu. Not here: BLEU-4 and the other pure metrics (metrics.py).
Test: `.venv/bin/python -m pytest tests/test_metrics.py -q -k codebleu` (the package README's example).
"""
from __future__ import annotations

import logging

from ..errors import GroundcodeError

WEIGHTS = (0.25, 0.25, 0.25, 0.25)   # ngram, weighted ngram, syntax (AST), dataflow — the paper's default


def _calc():
    try:
        from codebleu import calc_codebleu
    except ImportError as e:  # optional dependency: the `bench` extra
        raise GroundcodeError("CodeBLEU needs the bench extra: pip install 'groundcode[bench]'") from e
    # codebleu warns on the root logger whenever a snippet has no data flow (common for short
    # bodies); drop exactly that message, leave the root logger's configuration alone.
    root = logging.getLogger()
    if not any(isinstance(f, _NoDataflowWarning) for f in root.filters):
        root.addFilter(_NoDataflowWarning())
    return calc_codebleu


class _NoDataflowWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "data-flow match score degenerates" not in record.getMessage()


def codebleu(reference: str, candidate: str) -> dict[str, float]:
    """CodeBLEU of one candidate against one reference: the score and its four components.

    An empty candidate scores 0 everywhere (codebleu itself would divide by zero)."""
    if not candidate.strip() or not reference.strip():
        return {"codebleu": 0.0, "ngram_match_score": 0.0, "weighted_ngram_match_score": 0.0,
                "syntax_match_score": 0.0, "dataflow_match_score": 0.0}
    out = _calc()([reference], [candidate], lang="python", weights=WEIGHTS, tokenizer=None)
    return {k: float(v) for k, v in out.items()}
