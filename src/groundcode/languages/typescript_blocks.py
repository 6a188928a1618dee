"""Blocks and statements of partial TypeScript / JavaScript (the language layer's TypeScript
half, with typescript.py's scanner): where a block closes as code is written (`Braces`), where a
statement ends (`StatementEnd`), the braces the cursor's line opened in an expression
(`inline_braces`), and what the analyzer's view closes after a cut at the cursor (`close_line`).
The bracket scan of a file is incremental: checkpoints every 4 KB at line breaks, reused for a
text that shares the prefix (a keystroke rescans one stretch).
Used through languages.TYPESCRIPT / JAVASCRIPT. Test: tests/test_languages_typescript.py,
tests/test_stop_at.py, tests/test_ts_grounding.py.
"""
from __future__ import annotations

import functools
import re
import threading

from ..lines import ECMASCRIPT, line_start, next_break

from .typescript_scan import (BLOCK_COMMENT, CODE, LINE_COMMENT, NUMBER, REGEX, STRING, TEMPLATE, _scan_braces,
                         _scan_code, _State, _step)

_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _tracker(stack: list, base: int):
    """A _scan_code callback that keeps `stack` the brackets open ((offset + base, char))."""
    def on(k: int, c: str) -> None:
        if c in _CLOSER:
            stack.append((base + k, c))
        elif stack:
            stack.pop()
    return on


_EVERY = 4096            # a checkpoint of the bracket scan every this many characters
_scans: list = []        # the last texts scanned: (text, [(offset, state, open brackets), ...])
_scans_lock = threading.Lock()


def _brackets_at_end(text: str) -> tuple[_State, tuple]:
    """The scanner's state at the end of `text` and the brackets open there ((offset, char),
    outermost first). Incremental: a text that shares a prefix with one scanned before (the
    same file as the user types, a row's context again) resumes from the last checkpoint in
    that prefix, so a keystroke costs a few thousand characters, not the file."""
    with _scans_lock:
        known = list(_scans)
    best = (0, _State(), ())
    for old, points in known:
        for off, st, opened in reversed(points):
            if off <= len(text) and off > best[0] and text[:off] == old[:off]:
                best = (off, st, opened)
                break
    off, st, opened = best
    st, stack, points = st.copy(), list(opened), [best] if off else []
    on = _tracker(stack, 0)
    i = off
    while i < len(text):                          # scan in checkpointed stretches
        nl = text.find("\n", (i // _EVERY + 1) * _EVERY)     # a stretch ends after a line break:
        end = len(text) if nl < 0 else nl + 1           # no token looks past it
        i = _scan_code(st, text[:end], i, "([{}])", on)
        if i == end and end < len(text):
            points.append((end, st.copy(), tuple(stack)))
    with _scans_lock:
        _scans[:] = ([(text, points)] + [x for x in _scans if x[0] is not text])[:4]
    return st, tuple(stack)


def _scan_after(before: str, text: str, at: int) -> tuple[_State, list]:
    """The scanner's state after `before` (its scan cached) and then `text`, and the brackets
    open there, `text`'s offsets counting from `at` (where it starts in the file's text)."""
    st, opened = _brackets_at_end(before)
    st, stack = st.copy(), list(opened)
    if text:
        _scan_code(st, text, 0, "([{}])", _tracker(stack, at))
    return st, stack


def _open_after(before: str, text: str, at: int) -> list:
    """The brackets open after `before` and then `text` (`_scan_after`)."""
    return _scan_after(before, text, at)[1]


def inline_braces(before: str, owed: str = "") -> int:
    """The braces open at the end of `before + owed` that its last line opened inside an expression or
    a one-line block (`foo({ a: 1, b: `, `if (x) { return a.`): code written at the cursor may
    close them without leaving the cursor's block. A `{` that ends the line's code (`if (x) {`)
    opens the block the cursor is in, and is not one."""
    stack = _open_after(before, owed, len(before))   # owed: the prompt's tail, re-written first
    text = before + owed
    start = line_start(text, None, ECMASCRIPT)
    return sum(1 for k, c in stack if c == "{" and k >= start and text[k + 1:].strip())


@functools.lru_cache(maxsize=16)
def _braces_closed(after: str) -> int:
    """How many braces opened before `after` it closes (its `}` beyond its own `{`)."""
    depth = low = 0

    def brace(k: int, d: int) -> None:
        nonlocal depth, low
        depth += d
        low = min(low, depth)
    _scan_braces(_State(), after, 0, brace)
    return -low


@functools.lru_cache(maxsize=16)
def _parens_closed(after: str) -> int:
    """How many parentheses opened before `after` it closes (its `)` beyond its own `(`)."""
    depth = low = 0

    def paren(k: int, c: str) -> None:
        nonlocal depth, low
        depth += 1 if c == "(" else -1
        low = min(low, depth)
    _scan_code(_State(), after, 0, "()", paren)
    return -low


def close_line(before: str, drop: int, generated: str, after: str) -> str:
    """What the analyzer's view puts after the cursor, on its line, so that the cut the cursor
    makes does not break the file's structure: a line written up to `obj.` (the rest of it not
    yet written) leaves its `(`/`[` open and lost the `{` whose `}` follows in `after` — and
    TypeScript's parser then ends the class early and loses the members declared after it.
    The brackets opened on the cursor's line are closed, and braces are added (`{`) or closed
    (`}` on the next line) so that `after`'s closing braces meet the blocks open at the cursor;
    a `)` of `after` that closes a call the cut part of the line opened (`this.|setOptions(` with
    its arguments on the lines below) gets its `(` (or the line's `)` is left to it).
    The line's brackets are left alone where the rest of the cursor's line is the user's text
    (`after`'s first line is not blank and nothing written yet broke the line: `foo(|)`); the
    braces are balanced always (a body's `after` starts with its own `}`, which closes no block
    written inside it). `before[:len(before) - drop] + generated` is the text before the cursor
    (`drop`: a name the cursor sits in)."""
    nl = next_break(after, 0, ECMASCRIPT)
    users_line = next_break(generated, 0, ECMASCRIPT) is None and \
        bool((after if nl is None else after[:nl[0]]).strip())
    head = len(before) - drop
    end_state, stack = _scan_after(before, generated, head)
    text_end = head + len(generated)
    start = line_start(before[:head] + generated, None, ECMASCRIPT)     # lines.py
    closers = []                               # (offset, closer), innermost first
    while not users_line and stack and stack[-1][0] >= start and stack[-1][0] < text_end:
        k, c = stack.pop()
        closers.append((k, _CLOSER[c]))
    opened = 0                                 # `(`s the cut part of the line opened that `after` closes
    if not users_line:                         # (`this.|setOptions(` with its arguments on the lines below)
        opened = _parens_closed(after) - sum(c == "(" for _, c in stack)
        while opened > 0 and closers and closers[-1][1] == ")":
            closers.pop()                      # `after`'s `)` closes it: `f(this.|x,` + `\n  y)`
            opened -= 1
    out = "".join(c for _, c in closers)
    if not users_line:
        text = before[:head] + generated
        sub = _open_substitution(end_state, text, start)
        if opened > 0 and sub < 0:             # else its `)` closes an enclosing call early, and the
            out = "(" * opened + out           # class ends there for the parser (pacer's `.on(`)
        if sub >= 0:                           # cut inside a template's `${`: close it and the
            out = "".join(c for k, c in closers if k > sub) + "}`" + \
                "".join(c for k, c in closers if k < sub)      # literal, else the file is text
        if not closers and text.rstrip(" \t").endswith(".") and _STATEMENT_NEXT.match(after):
            out += ";"                         # `this.` + a next line `if (…) {`: `this.if(…) {`
        out = _arrow_body(text[start:]) + out
    have = sum(c == "{" for _, c in stack)
    need = _braces_closed(after)
    if need > have:
        out += " " + "{" * (need - have)
    elif need < have:
        out += "\n" + "}" * (have - need)
    return out


# the next line of code (comments skipped) starts a statement no expression may continue into
_STATEMENT_NEXT = re.compile(r"(?:\s|//[^\n\r]*|/\*.*?\*/)*(?:if|for|while|do|switch|try|return|throw|"
                             r"const|let|var|break|continue)\b", re.S)


def _open_substitution(st: _State, text: str, start: int) -> int:
    """The offset of the template literal's `${` the end of `text` (scanner state `st`) is
    inside, where the cursor's line (from `start`) opened it; -1 elsewhere."""
    if st.mode != CODE or not st.stack:
        return -1
    return text.rfind("${", start)


# the cursor's line up to the cursor ends inside an arrow function's return type, its `=>` cut
# (`xs.map((x): Ns.Box<` …): where an arrow may start (the line's start, `=`, `(`, `,`, `=>`,
# `return`), an optional `async` and type parameters, the parameters, `:` and a type so far
_ARROW_RETURN = re.compile(r"(?:^|[=(,]|=>|\breturn|\byield)\s*(?:async\s*)?(?:<[^<>()]*>\s*)?"
                           r"\([^()]*\)\s*:\s*([\w$.\s<>\[\],|&]*)$")


def _arrow_body(line: str) -> str:
    """What completes an arrow function whose return type the cursor is in: its type arguments'
    `>`s and a body (` => undefined`). Without its `=>`, `(x): Ns.` is no arrow to TypeScript's
    parser (the parameters read as a parenthesized expression) and the position after the dot
    reads as an expression: the answer would list the namespace's values, not its types."""
    m = _ARROW_RETURN.search(line)
    if m is None:
        return ""
    t = m.group(1)
    return ">" * max(0, t.count("<") - t.count(">")) + " => undefined"


class Braces:
    """The brace depth of code written after a block's `{`, scanned as it grows: `feed(text)`
    returns the offset in `text` of the `}` that closes the block (depth below 0), or None.
    Strings, comments, regular expressions and template literals are skipped (a `}` that closes a
    template's `${` is not the block's). `snapshot()` / `restore(snap)` for rollbacks."""

    def __init__(self, depth: int = 0):
        self.st, self.pos, self.depth = _State(), 0, depth

    def feed(self, text: str) -> int | None:
        def brace(k: int, d: int) -> bool:
            self.depth += d
            return self.depth < 0
        self.pos = _scan_braces(self.st, text, self.pos, brace)
        return self.pos if self.depth < 0 else None

    def snapshot(self) -> tuple:
        return self.st.copy(), self.pos, self.depth

    def restore(self, snap: tuple) -> None:
        st, self.pos, self.depth = snap
        self.st = st.copy()


_CONTINUES = frozenset("=+-*/%&|^!?:,.<>([{~")


class StatementEnd:
    """Where the first complete statement of code written at a cursor ends: the first line break
    in code (not in a string, template literal or block comment) after code, with every bracket
    the text opened closed and the line not ending in an operator that continues it (`a +`,
    `x =`, `foo(`, `.then(`…): `foo(a,\n  b);\n` is one statement, `if (x) {…}` ends at its `}`'s
    line. `feed(text)` (text grows at its end) returns the offset after that line break, or None;
    `snapshot()` / `restore(snap)` for rollbacks. Python's statements: pycode.Lexer (stop_at.py)."""

    def __init__(self):
        self.st, self.pos, self.depth, self.code, self.last = _State(), 0, 0, False, ""

    def feed(self, text: str) -> int | None:
        st, i = self.st, self.pos
        while i < len(text):
            c, mode = text[i], st.mode
            j = _step(st, text, i)
            if mode == CODE:
                if c == "\n" and st.mode == CODE and self.code and self.depth <= 0 \
                        and (self.last not in _CONTINUES or text[i - 2:i] in ("++", "--")):
                    self.pos = i + 1
                    return i + 1
                if c in "([{":
                    self.depth += 1
                elif c in ")]" or (c == "}" and st.mode == CODE):
                    self.depth -= 1
                if not c.isspace() and st.mode not in (LINE_COMMENT, BLOCK_COMMENT):
                    self.code, self.last = True, c
            elif mode in (STRING, TEMPLATE, NUMBER, REGEX):
                self.last = "x"                   # a literal ends nothing: no operator after it
            i = j
        self.pos = i
        return None

    def snapshot(self) -> tuple:
        return self.st.copy(), self.pos, self.depth, self.code, self.last

    def restore(self, snap: tuple) -> None:
        st, self.pos, self.depth, self.code, self.last = snap
        self.st = st.copy()
