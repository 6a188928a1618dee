"""Stop when the generated code dedents to (or past) a given column: the end of a function body
(back to the `def`'s level) or of the block a cursor is in. Checked when a line gets its first
non-blank character, by the one body-end rule (`pycode.ends_block`: lines inside multi-line
strings don't count), the rule scoring cuts completions with too. A line with no content yet may
still be cut (it may dedent): its text is held back from streams (`final_upto`)."""
from __future__ import annotations

from ...pycode import Lexer, ends_block
from .base import Guide, RowView, Stop, token_flags


class BodyEnd(Guide):
    def __init__(self, max_indent: int):
        self.max_indent = max_indent        # stop at a line whose indentation is <= this

    def reset(self, row: RowView) -> None:
        self._lexer = Lexer(row.context.lex_prefix)
        self._newline = token_flags(row.vocab)[1]
        self._has_content = False      # the current line already has a non-blank character
        self._cut: int | None = None

    def snapshot(self) -> tuple:
        return (self._has_content, self._cut)

    def restore(self, row: RowView, snap: tuple) -> None:
        self._has_content, self._cut = snap
        self._lexer.rewind(len(row.context.lex_prefix) + len(row.text))

    def final_upto(self, row: RowView) -> int:
        if self._has_content:
            return len(row.text)
        start = row.text.rfind("\n") + 1
        if start == 0 and not row.context.starts_at_line:
            return len(row.text)
        return start

    def advance(self, row: RowView, token: int) -> int | None:
        if self._has_content and not self._newline[token]:
            return None                # fast path: same line, already judged
        self._cut = self._judge(row)
        return None

    def stop(self, row: RowView) -> Stop | None:
        return None if self._cut is None else Stop("body_end", cut=self._cut)

    def _judge(self, row: RowView) -> int | None:
        text = row.text
        start = text.rfind("\n") + 1
        if start == 0 and not row.context.starts_at_line:
            self._has_content = True   # still on the cursor's own line
            return None
        if not text[start:].strip(" \t"):
            self._has_content = False
            return None
        self._has_content = True
        prefix = row.context.lex_prefix
        return start if ends_block(self._lexer, prefix, text, start, self.max_indent) else None
