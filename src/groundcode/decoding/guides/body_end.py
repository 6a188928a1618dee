"""Stop when the generated code dedents to (or past) a given column: the end of a function body
(back to the `def`'s level) or of the block a cursor is in. Checked when a line gets its first
non-blank character; lines inside multi-line strings don't count."""
from __future__ import annotations

from ...pycode import Lexer
from .base import Guide, RowView


class BodyEnd(Guide):
    def __init__(self, max_indent: int):
        self.max_indent = max_indent        # stop at a line whose indentation is <= this

    def reset(self, row: RowView) -> None:
        self._checked_line = -1
        self._lexer = Lexer(getattr(row.context, "lex_prefix", ""))

    def rewind(self, row: RowView, length: int) -> None:
        self._checked_line = -1
        self._lexer.rewind(len(getattr(row.context, "lex_prefix", "")) + len(row.text))

    def stop(self, row: RowView) -> int | None:
        text = row.text
        start = text.rfind("\n") + 1
        if start == 0 and not getattr(row.context, "starts_at_line", True):
            return None                     # still on the cursor's own line
        if start == self._checked_line:
            return None
        line = text[start:]
        stripped = line.lstrip(" \t")
        if not stripped:
            return None
        self._checked_line = start
        width = len(line[: len(line) - len(stripped)].expandtabs(8))
        if width > self.max_indent:
            return None
        # A dedented line inside a multi-line string is not the end of the block.
        prefix = getattr(row.context, "lex_prefix", "")
        full = prefix + text[:start] + "x"
        if not self._lexer.dot_is_code(full[:-1] + ".", len(full) - 1):
            return None
        return start
