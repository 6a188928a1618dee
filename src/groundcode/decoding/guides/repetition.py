"""Stop a row that repeats itself: small models fall into loops (the same statement, or the same
few lines, over and over) and would run to the token limit.

The rule, on complete lines only (checked when a token holds a newline): the last `copies * p`
non-blank lines are `copies` identical runs of `p` lines (1 <= p <= `max_period`), and the run
holds code beyond bare punctuation/`pass`. The row stops with `Stop("repetition", cut)`, the
text cut after the FIRST run — what was written once is kept, the echoes are dropped. Three
copies by default: two identical consecutive lines are common in real code (`x += 1` twice,
blank separators are ignored), three identical runs in a row rarely are.

Inside one line too (`repeated_run`: a loop that never writes a newline, such as
`self.owner.get(self.owner.get(self.owner.get(`, `_format_format_format_format` or
`((((((((`): the line's text ends in identical runs of `p` characters holding a letter or
`_` — 3 runs when p >= 8, 4 when 2 <= p < 8 (`None, None, None` stays legal), 8 of one bracket;
never in a comment line. Cut after the first run, as for lines.
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


_LINE_TAIL = 160                     # characters of the current line looked at


def repeated_run(text: str, max_period: int = 40) -> int | None:
    """Offset just after the first of the identical runs that end `text`'s current line (see
    the module docstring), or None."""
    start = text.rfind("\n") + 1
    line = text[start:]
    if len(line) < 8 or line.lstrip().startswith("#"):
        return None
    tail = line[-_LINE_TAIL:]
    base = len(text) - len(tail)
    n = len(tail)
    if tail[-1] in "([" and n >= 8 and tail[-8:] == tail[-1] * 8:
        k = n - 8
        while k > 0 and tail[k - 1] == tail[-1]:
            k -= 1
        return base + k + 1
    for p in range(2, max_period + 1):
        copies = 3 if p >= 8 else 4
        if copies * p > n:
            break
        run = tail[n - p:]
        if not any(c.isalpha() or c == "_" for c in run):
            continue
        if all(tail[n - k * p: n - (k - 1) * p] == run for k in range(2, copies + 1)):
            first = n - copies * p                    # the first run starts here
            while first - p >= 0 and tail[first - p: first] == run:
                first -= p
            return base + first + p
    return None


class RepetitionStop(Guide):
    def __init__(self, copies: int = 3, max_period: int = 8):
        self.copies, self.max_period = copies, max_period

    def reset(self, row: RowView) -> None:
        self._newline = token_flags(row.vocab)[1]
        self._cut: int | None = None

    def snapshot(self):
        """Its state is the repetition found so far (None: none): a cut by any guide restores
        it, so a row cut back before the repetition does not stop one token into its redo."""
        return self._cut

    def restore(self, row: RowView, snap) -> None:
        self._cut = snap

    def advance(self, row: RowView, token: int) -> None:
        if self._cut is None:
            if self._newline[token]:
                self._cut = repeated_tail(row.text, self.copies, self.max_period)
            else:
                self._cut = repeated_run(row.text)
        return None

    def stop(self, row: RowView):
        return Stop("repetition", cut=self._cut) if self._cut is not None else None
