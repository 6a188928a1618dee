"""The language layer (issue 32): what the guides and contexts need to know about a language, one
module per language — python.py (its answers are pycode.py's) and typescript.py (TypeScript and
JavaScript). A context's language comes from its file's extension (`language_of`).

    lang = language_of(path)               # languages.python.PYTHON unless a TS/JS extension
    lang.Lexer(prefix).dot_is_code(text, k); lang.receiver_before(text, dot)
    lang.could_bind(line_before_receiver); lang.binding_verdict(after)
    lang.enclosing_scope(before) -> (scope, class offset | None, class indent | None)
    lang.lex_prefix(before)                # the tail of `before` a lexer starts from
    lang.comment                           # a line comment's start: `#`, `//`
    lang.close_line(before, drop, generated, after)   # the analyzer's view: brackets the cut left open
    lang.Braces, lang.inline_braces, lang.StatementEnd  # blocks and statements of brace languages (None: Python)
    lang.extensions; LANGUAGES (every one), SOURCE_SUFFIXES (their files' extensions)

Where the layer is used: the dereference monitor, CodeContext (and its splice), BraceEnd / BodyEnd
and StopAt (through the registry), the analyzer's choice and the server's readable files; other
Python-only guides (keyword arguments, tool calls) are built for Python contexts only.
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
