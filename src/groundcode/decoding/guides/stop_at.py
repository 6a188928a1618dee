"""Stop after the first line or the first statement of the completion (`--stop line|statement`).

line       stop at the first newline the completion writes (the rest of the cursor's line)
statement  stop at the end of the first complete logical line (brackets closed, not inside a
           string): `foo(a,\\n    b)\\n` is one statement; a compound header (`if x:`) ends at
           its colon's line, like a simple statement
(`block`, the default elsewhere, is BodyEnd: stop when the code dedents out of the block.)
Decided with Python's tokenizer (pycode.Lexer), on newline tokens only; where the file's
Language has a StatementEnd (TypeScript, JavaScript: brackets closed, not in a string,
template literal or comment, the line not ending in an operator that continues it), by it.
Test: tests/test_stop_at.py.
"""
from __future__ import annotations

from ...pycode import Lexer
from .base import Guide, RowView, Stop, token_flags

KINDS = ("block", "statement", "line")


class StopAt(Guide):
    def __init__(self, kind: str):
        if kind not in ("line", "statement"):
            raise ValueError(f"StopAt kind must be 'line' or 'statement', not {kind!r}")
        self.kind = kind

    def reset(self, row: RowView) -> None:
        self._ts = None
        if self.kind == "statement" and row.context.language.StatementEnd is not None:
            self._ts = row.context.language.StatementEnd()
        self._prefix = row.context.lex_prefix
        self._lexer = Lexer(self._prefix) if self._ts is None and self.kind == "statement" else None
        self._newline = token_flags(row.vocab)[1]
        self._cut: int | None = None

    def snapshot(self):
        return self._cut, (self._ts.snapshot() if self._ts is not None else None)

    def restore(self, row: RowView, snap) -> None:
        self._cut, ts = snap
        if self._ts is not None:
            self._ts.restore(ts)
        if self._lexer is not None:
            self._lexer.rewind(len(self._prefix) + len(row.text))

    def advance(self, row: RowView, token: int) -> int | None:
        if not self._newline[token] or self._cut is not None:
            return None
        text = row.text
        nl = len(text) - len(row.vocab.texts[token]) + row.vocab.texts[token].index("\n")
        if self.kind == "line":
            if text[:nl].strip():                 # a newline right at the start is no line yet
                self._cut = nl + 1
            return None
        if self._ts is not None:
            self._cut = self._ts.feed(text)
            return None
        full = self._prefix + text
        self._lexer.scan(full, len(full))                  # records logical-line ends
        p = len(self._prefix)
        prev = 0
        for e in (s - p for s in self._lexer.line_starts() if s > p):
            if e > len(text):
                break
            if any(ln.strip() and not ln.lstrip().startswith("#") for ln in text[prev:e].split("\n")):
                self._cut = e                 # the first logical line that holds code
                break
            prev = e
        return None

    def stop(self, row: RowView):
        return Stop(self.kind, cut=self._cut) if self._cut is not None else None
