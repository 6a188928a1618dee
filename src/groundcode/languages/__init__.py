"""The language layer (issue 32): what the guides and contexts need to know about a language, one
module per language — python.py (its answers are pycode.py's) and typescript.py (TypeScript and
JavaScript). A context's language comes from its file's extension (`language_of`).

    lang = language_of(path)               # languages.python.PYTHON unless a TS/JS extension
    lang.Lexer(prefix).dot_is_code(text, k); lang.receiver_before(text, dot)
    lang.could_bind(line_before_receiver); lang.binding_verdict(after)
    lang.enclosing_scope(before) -> (scope, class offset | None, class indent | None)
    lang.lex_prefix(before)                # the tail of `before` a lexer starts from
    lang.comment                           # a line comment's start: `#`, `//`
    lang.extensions; LANGUAGES (every one), SOURCE_SUFFIXES (their files' extensions)

Where the layer is used so far: the dereference monitor and CodeContext; other Python-only guides
(keyword arguments, tool calls, body end by indentation) are built for Python contexts only.
Test: tests/test_languages_typescript.py.
"""
from __future__ import annotations

from pathlib import Path

from .base import Language
from .python import PYTHON
from .typescript import JAVASCRIPT, TYPESCRIPT

__all__ = ["JAVASCRIPT", "LANGUAGES", "PYTHON", "SOURCE_SUFFIXES", "TYPESCRIPT", "Language", "language_of"]

LANGUAGES = (PYTHON, TYPESCRIPT, JAVASCRIPT)
SOURCE_SUFFIXES = tuple(e for lang in LANGUAGES for e in lang.extensions)


def language_of(path: str | Path | None) -> Language:
    suffix = Path(path).suffix.lower() if path else ""
    return next((lang for lang in LANGUAGES if suffix in lang.extensions), PYTHON)
