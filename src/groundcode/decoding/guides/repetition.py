"""Stop a row that repeats itself: small models fall into loops (the same statement, or the same
few lines, over and over) and would run to the token limit.

The rule, on complete lines only (checked when a token holds a newline): the last `copies * p`
non-blank lines are `copies` identical runs of `p` lines (1 <= p <= `max_period`), and the run
holds code beyond bare punctuation/`pass`. The row stops with `Stop("repetition", cut)`, the
text cut after the FIRST run — what was written once is kept, the echoes are dropped — or, where
that run ends in a block's header or inside a bracket it opened, before them (`whole_line_cut`
of the kept text: `if not node[i]:` with no body, `submit(\n    executor,\n    Request(\n`). Three
copies by default: two identical consecutive lines are common in real code (`x += 1` twice,
blank separators are ignored), three identical runs in a row rarely are.

Inside one line too (`repeated_run`: a loop that never writes a newline, such as
`self.owner.get(self.owner.get(self.owner.get(`, `_format_format_format_format` or
`((((((((`): the line's text ends in identical runs of `p` characters holding a letter or
`_` — 3 runs when p >= 8, 4 when 2 <= p < 8 (`None, None, None` stays legal), 8 of one bracket;
never in a comment line. Cut after the first run, as for lines, when the looping line began
before the row's text; when the row has whole lines before it, the row ends at them instead
(`whole_line_cut`: the looping line goes, with up to two lines before it that open a block —
ending in `:`, `{`, `(` or `[` — whose body it was): `if self.stack_bottom_bottom_bottom` or
`d["k"] = d["k"]["k"]["` left a line that cannot compile in a body that could.
The stop's payload lists every run boundary (after the first copy, the second, ..., the text's
end): a repetition found below text already final ends after the first copy that final text
does not reach into (decoding/step.py), so the row still ends between whole runs.
Not here: the body's end (body_end.py), --stop line|statement (stop_at.py).
Test: tests/test_repetition.py.
"""
from __future__ import annotations

import re

from ...pycode import lex
from .base import Guide, RowView, Stop, token_flags

_TRIVIAL = re.compile(r"^\s*(pass|\.\.\.|[)\]}:,]*)\s*$")


def repeated_tail(text: str, copies: int = 3, max_period: int = 8) -> int | None:
    """Offset just after the first of `copies` identical runs of lines that end `text`'s complete
    lines, or None. Blank lines are ignored when comparing (they still count for offsets)."""
    ends = tail_runs(text, copies, max_period)
    return ends[0] if ends else None


def tail_runs(text: str, copies: int = 3, max_period: int = 8) -> tuple | None:
    """`repeated_tail`'s run boundaries: the offsets after the first, second, ... copy (the last
    is the end of `text`'s complete lines), or None."""
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
            # the first echoed line of each copy after the first, then the lines' end
            return tuple(starts[n - k * p] for k in range(copies - 1, 0, -1)) + (end + 1,)
    return None


_LINE_TAIL = 160                     # characters of the current line looked at


def repeated_run(text: str, max_period: int = 40) -> int | None:
    """Offset just after the first of the identical runs that end `text`'s current line (see
    the module docstring), or None."""
    ends = line_runs(text, max_period)
    return ends[0] if ends else None


def _line_tail(text: str) -> tuple | None:
    """The current line's last _LINE_TAIL characters and their offset in `text`; None for a line
    too short to loop or a comment line."""
    line = text[text.rfind("\n") + 1:]
    if len(line) < 8 or line.lstrip().startswith("#"):
        return None
    tail = line[-_LINE_TAIL:]
    return tail, len(text) - len(tail)


def _runs_from(tail: str, p: int, copies: int) -> int | None:
    """Where the identical runs of `p` characters ending `tail` begin, when there are at least
    `copies` of them and they hold a letter or `_`; else None."""
    n = len(tail)
    run = tail[n - p:]
    if not any(c.isalpha() or c == "_" for c in run):
        return None
    if not all(tail[n - k * p: n - (k - 1) * p] == run for k in range(2, copies + 1)):
        return None
    first = n - copies * p
    while first - p >= 0 and tail[first - p: first] == run:
        first -= p
    return first


def line_runs(text: str, max_period: int = 40) -> tuple | None:
    """`repeated_run`'s run boundaries (the last is the end of `text`), or None."""
    got = _line_tail(text)
    if got is None:
        return None
    tail, base = got
    n = len(tail)
    if tail[-1] in "([" and n >= 8 and tail[-8:] == tail[-1] * 8:
        k = n - 8
        while k > 0 and tail[k - 1] == tail[-1]:
            k -= 1
        return tuple(range(base + k + 1, len(text) + 1))
    for p in range(2, max_period + 1):
        copies = 3 if p >= 8 else 4
        if copies * p > n:
            break
        first = _runs_from(tail, p, copies)
        if first is not None:
            return tuple(range(base + first + p, len(text) + 1, p))
    return None


_OPENS = (":", "{", "(", "[")


def whole_line_cut(text: str, headers: int = 2) -> int | None:
    """Where a row whose current line loops ends instead: the start of that line, moved back
    over blank lines and at most `headers` lines that open a block or a bracket (they would be
    left with nothing in them), and back to the start of the line that opened a bracket the
    text before the cut leaves open (`foo(\n    a,\n` is no whole statement); never to offset
    0, so only a line that starts inside `text` is dropped (a line that began before the row's
    text is the caller's). None: no whole line before the current one holds anything but
    blanks, or the bracket left open began on the row's first line."""
    end = text.rfind("\n") + 1
    while end > 0:
        cut, dropped, pos = end, 0, end
        while pos > 0:
            start = text.rfind("\n", 0, pos - 1) + 1
            ln = text[start: pos - 1].strip()
            if ln:                                # (a header at offset 0 may have begun before)
                if dropped == headers or start == 0 or ln.startswith("#") or not ln.endswith(_OPENS):
                    break
                dropped += 1
            cut = pos = start
        if not text[:cut].strip():
            return None
        opened = _open_bracket(text[:cut])
        if opened is None:
            return cut
        end = text.rfind("\n", 0, opened) + 1   # that line goes too, with its headers
    return None


def _open_bracket(code: str) -> int | None:
    """The offset of the outermost bracket `code` leaves open (strings and comments skipped:
    Python's lexer, close enough for TypeScript's brackets), or None."""
    stack: list[int] = []
    for kind, s, e in lex(code):
        if kind == "op":
            for i in range(s, e):
                if code[i] in "([{":
                    stack.append(i)
                elif code[i] in ")]}" and stack:
                    stack.pop()
    return stack[0] if stack else None


def inline_start(text: str, max_period: int = 40) -> int | None:
    """Where a loop inside the current line may be starting: the line ends in two identical runs
    of p >= 8 characters (three when 2 <= p < 8) holding a letter or `_`, or its last 4 or more
    characters (a letter among them) repeat the p >= 8 before them (`self.owner.get(self.owner.g`): the
    offset after the first run (what `line_runs` would cut to once the loop is found), or
    None."""
    got = _line_tail(text)
    if got is None:
        return None
    tail, base = got
    n = len(tail)
    best = None
    for p in range(2, max_period + 1):
        copies = 2 if p >= 8 else 3
        if copies * p > n:
            break
        first = _runs_from(tail, p, copies)
        if first is not None:
            at = base + first + p
            best = at if best is None else min(best, at)
    for p in range(8, max_period + 1):       # a second run being written: the line's last m
        m = 0                                 # characters repeat the p before them
        while m < n - p and tail[n - m - 1] == tail[n - m - 1 - p]:
            m += 1
        if m >= 4 and any(c.isalpha() or c == "_" for c in tail[n - m:]):
            at = base + n - m
            best = at if best is None else min(best, at)
    return best


def _complete_lines(text: str, keep: int) -> tuple:
    """The last `keep` non-blank complete lines of `text` (right-stripped) and their offsets."""
    end = text.rfind("\n")
    lines, starts = [], []
    pos = end
    while pos >= 0 and len(lines) < keep:
        prev = text.rfind("\n", 0, pos)
        ln = text[prev + 1: pos].rstrip()
        if ln.strip():
            lines.append(ln)
            starts.append(prev + 1)
        pos = prev
    return tuple(reversed(lines)), tuple(reversed(starts))


def copy_start(lines: tuple, starts: tuple, partial: str, line_start: int,
               max_period: int = 8) -> int | None:
    """Where a second copy of a run of lines begins, if the text may be writing one: the
    complete lines (`lines`, `starts`: the last ones) end in lines equal to those `p` lines
    before them, and the unfinished line (`partial`, from `line_start`) is the start of the
    line `p` before it (its indentation, or nothing yet, is); or that line alone is. None: no
    copy is being written."""
    n = len(lines)
    partial = partial.rstrip("\r")
    best = None
    for p in range(1, min(max_period, n) + 1):
        if not lines[n - p].startswith(partial):
            continue                              # the line being written is no copy
        m = 0
        while n - m - 1 - p >= 0 and lines[n - m - 1] == lines[n - m - 1 - p]:
            m += 1
        if all(_TRIVIAL.match(ln) for ln in lines[n - m - p: n - m]):
            continue
        at = starts[n - m] if m else line_start
        best = at if best is None else min(best, at)
    return best


class RepetitionStop(Guide):
    """Also holds back from final text what it may cut (`final_upto`): from where a second copy
    of a run of lines may be being written, until the text goes on otherwise (text streamed as
    final is never taken back, so without the hold a repetition found at its third copy could
    not drop the second: every copy was kept). A loop inside one line is held from its second
    run of 8 characters or more (its third when shorter: `None, None` is common,
    `inline_start`): without that hold `self.owner.get(self.owner.get(self.owner.get(` kept all
    three copies whenever no other guide held the line (the README fixture's test, in
    isolation). Below the row's first line, text is final a whole line at a time, and a line
    that opens a block with the first line of its body (`whole_line_cut`: where a loop in the
    line being written would end the row), so a later line's loop never leaves a piece of a
    line; the first line streams token by token. Found below final text all the same, a loop
    ends at the first boundary final text does not reach into (decoding/step.py)."""

    def __init__(self, copies: int = 3, max_period: int = 8):
        self.copies, self.max_period = copies, max_period

    def reset(self, row: RowView) -> None:
        self._newline = token_flags(row.vocab)[1]
        self._cut: tuple | None = None            # the run boundaries (the cut first)
        self._lines: tuple = ((), ())             # the last complete lines, their offsets

    def snapshot(self):
        """Its state is the repetition found so far (None: none) and what it reads of the lines:
        a cut by any guide restores it, so a row cut back before the repetition does not stop
        one token into its redo."""
        return self._cut, self._lines

    def restore(self, row: RowView, snap) -> None:
        self._cut, self._lines = snap

    def advance(self, row: RowView, token: int) -> None:
        if self._cut is None:
            if self._newline[token]:
                runs = tail_runs(row.text, self.copies, self.max_period)
                # the first run may end in a block's header or inside a bracket (the loop was
                # `)`-less calls, or a body then its header): the row ends before them instead
                whole = whole_line_cut(row.text[:runs[0]]) if runs else None
                self._cut = runs if whole is None or whole >= runs[0] else (whole,) + runs
                self._lines = _complete_lines(row.text, 3 * self.max_period + 1)
            else:
                runs = line_runs(row.text)
                whole = whole_line_cut(row.text) if runs else None
                self._cut = runs if whole is None else (whole,) + runs
        return None

    def final_upto(self, row: RowView) -> int:
        text = row.text
        start = text.rfind("\n") + 1
        held = [h for h in (copy_start(*self._lines, text[start:], start, self.max_period),
                            inline_start(text), whole_line_cut(text)) if h is not None]
        return min(held) if held else len(text)

    def stop(self, row: RowView):
        c = self._cut
        return Stop("repetition", cut=c[0], payload=c) if c is not None else None
