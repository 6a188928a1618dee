"""The language layer's one type: what a language answers (languages/__init__.py says where)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Language:
    name: str                          # "python", "typescript"
    extensions: tuple[str, ...]
    Lexer: type                        # Lexer(prefix): dot_is_code(text, k), line_start(), rewind(n)
    receiver_before: Callable[[str, int], str]
    could_bind: Callable[[str], bool]
    binding_verdict: Callable[[str], "bool | None"]
    enclosing_scope: Callable[[str], tuple]
    lex_prefix: Callable[[str], str]
    close_line: "Callable[[str, int, str, str], str] | None" = None   # (before, drop, generated,
                                       # after) -> what the analyzer's view puts after the cursor
                                       # so the cut keeps the file's brackets (CodeContext.splice)
    comment: str = "#"                 # a line comment's start (a prompt block's heading)
    Braces: "type | None" = None       # blocks end at their closing brace: Braces(depth).feed(text)
                                       # -> the offset of the `}` that closes (None: by indentation)
    inline_braces: "Callable[[str, str], int] | None" = None   # (before, owed) -> braces the
                                       # cursor's line opened in an expression (foo({ a: )
    StatementEnd: "type | None" = None  # StatementEnd().feed(text) -> where the first statement
                                       # ends (None: Python's tokenizer, pycode.Lexer)
    heuristics: bool = False           # the monitor's Python-only readings of the text (type
                                       # guesses, isinstance guards, rebinding keys, prefetches)
