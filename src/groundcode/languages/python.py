"""Python in the language layer: its lexical facts are pycode.py's (unchanged), its contexts'
lexing prefix the last top-level statement (pycode.statement_tail)."""
from __future__ import annotations

from .. import pycode
from .base import Language


PYTHON = Language(name="python", extensions=(".py", ".pyi"), Lexer=pycode.Lexer, receiver_before=pycode.receiver_before, could_bind=pycode.could_bind,
                  binding_verdict=pycode.binding_verdict, enclosing_scope=pycode.enclosing_scope,
                  lex_prefix=pycode.statement_tail, heuristics=True)
