"""Stop a row that repeats itself: small models fall into loops (the same statement, or the same
few lines, over and over) and would run to the token limit.

The rule, on complete lines only (checked when a token holds a newline): the last `copies * p`
non-blank lines are `copies` identical runs of `p` lines (1 <= p <= `max_period`), and the run
holds code beyond bare punctuation/`pass`. The row stops with `Stop("repetition", cut)`, the
text cut after the FIRST run — what was written once is kept, the echoes are dropped. Three
copies by default: two identical consecutive lines are common in real code (`x += 1` twice,
blank separators are ignored), three identical runs in a row rarely are.
Not here: the body's end (body_end.py), --stop line|statement (stop_at.py).
Test: tests/test_repetition.py.
"""
from __future__ import annotations

import re

from .base import Guide, RowView, Stop, token_flags

_TRIVIAL = re.compile(r"^\s*(pass|\.\.\.|[)\]}:,]*)\s*$")


def repeated_tail(text: str, copies: int = 3, max_period: int = 8) -> int | None:
    """Offset just after the first of `copies` identical runs of lines that end `text`'s complete
    lines, or None. Blank lines are ignored when comparing (they still count for offsets)."""
    end = text.rfind("\n")
    if end < 0:
        return None
    lines, starts, pos = [], [], 0
    for ln in text[: end + 1].split("\n")[:-1]:
        if ln.strip():
            lines.append(ln.rstrip())
            starts.append(pos)
        pos += len(ln) + 1
    n = len(lines)
    for p in range(1, max_period + 1):
        if copies * p > n:
            break
        run = lines[n - p:]
        if all(_TRIVIAL.match(ln) for ln in run):
            continue
        if all(lines[n - k * p: n - (k - 1) * p] == run for k in range(2, copies + 1)):
            first_end = n - (copies - 1) * p            # index of the first echoed line
            return starts[first_end]
    return None


class RepetitionStop(Guide):
    def __init__(self, copies: int = 3, max_period: int = 8):
        self.copies, self.max_period = copies, max_period

    def reset(self, row: RowView) -> None:
        self._newline = token_flags(row.vocab)[1]
        self._cut: int | None = None

    def rewind(self, row: RowView, length: int) -> None:
        self._cut = None

    def advance(self, row: RowView, token: int) -> None:
        if self._newline[token] and self._cut is None:
            self._cut = repeated_tail(row.text, self.copies, self.max_period)
        return None

    def stop(self, row: RowView):
        return Stop("repetition", cut=self._cut) if self._cut is not None else None
