"""Lexical facts about partial TypeScript / JavaScript code (the language layer's TypeScript half,
issue 32; Python's are pycode.py's): is a dot code (a member access, `?.` included) or inside a
string, template literal, comment, regular expression or number; the receiver before it; the
class and function whose braces are open at the cursor (`enclosing_scope`). A name after a dot is
never a declaration in TypeScript (members are declared in classes, interfaces and object
literals, without a dot: `could_bind` is False); in JavaScript `this.x = …` creates one, as in
Python.

    lx = Lexer(prefix)                 # the text before the generated region
    lx.dot_is_code(text, k)            # text grows at the end; rewind(n) after a cut
    lx.state_at(text, k)               # "code", "string", "template", "comment", "regex", "number"
    receiver_before(text, dot)         # `this.registry`, `foo(x)[0]`, `obj!`, `a?.b`

One incremental scanner (a state machine over characters, not a regular expression per token:
template literals nest code in `${…}`, and a `/` is a division or a regular expression by what
precedes it), with checkpoints at line starts so a question scans only from the last one; the
questions come on rare events (a token holding a dot), as for Python.
Used through languages.TYPESCRIPT / JAVASCRIPT (the dereference monitor, CodeContext).
Test: tests/test_languages_typescript.py.
"""
from __future__ import annotations

import bisect
import functools
import re
import threading

CODE, STRING, TEMPLATE, LINE_COMMENT, BLOCK_COMMENT, REGEX, NUMBER = (
    "code", "string", "template", "line_comment", "block_comment", "regex", "number")

# after these, a `/` starts a regular expression (else it divides)
_REGEX_AFTER_WORDS = frozenset({"return", "typeof", "case", "do", "else", "in", "of", "new", "delete",
                                "void", "throw", "instanceof", "yield", "await", "extends"})
_REGEX_AFTER_PUNCT = frozenset("(,=:[!&|?{};+-*%<>~^")
_CONTROL = frozenset({"if", "while", "for", "with"})


class _State:
    """The scanner's state after some prefix: the mode, the template-literal nesting (a stack of
    brace depths at which a `${` opened), the quote of an open string, whether a `/` here would
    start a regular expression, and the regex's class flag."""

    __slots__ = ("mode", "stack", "depth", "quote", "regex_ok", "in_class", "escape", "word",
                 "prev_word", "parens")

    def __init__(self):
        self.mode, self.stack, self.depth, self.quote = CODE, (), 0, ""
        self.regex_ok, self.in_class, self.escape, self.word = True, False, False, ""
        self.prev_word, self.parens = "", ()     # the word before; open `(`: after if/while/for?

    def copy(self) -> "_State":
        s = _State.__new__(_State)
        s.mode, s.stack, s.depth, s.quote = self.mode, self.stack, self.depth, self.quote
        s.regex_ok, s.in_class, s.escape, s.word = self.regex_ok, self.in_class, self.escape, self.word
        s.prev_word, s.parens = self.prev_word, self.parens
        return s


def _step(st: _State, text: str, i: int) -> int:
    """Advance the state over the character(s) at text[i]; returns the next index."""
    c = text[i]
    m = st.mode
    if m == CODE:
        if c.isalpha() or c in "_$" or (c.isdigit() and st.word):
            st.word += c
            st.regex_ok = False
            return i + 1
        word, st.word = st.word, ""
        if word:
            st.regex_ok = word in _REGEX_AFTER_WORDS
            st.prev_word = word
        if c.isdigit() or (c == "." and i + 1 < len(text) and text[i + 1].isdigit()
                           and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$)]"))):
            st.mode = NUMBER
            return i + 1
        if c in "'\"":
            st.mode, st.quote, st.escape = STRING, c, False
            return i + 1
        if c == "`":
            st.mode, st.escape = TEMPLATE, False
            return i + 1
        if c == "/":
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if nxt == "/":
                st.mode = LINE_COMMENT
                return i + 2
            if nxt == "*":
                st.mode = BLOCK_COMMENT
                return i + 2
            if st.regex_ok:
                st.mode, st.in_class, st.escape = REGEX, False, False
                return i + 1
            st.regex_ok = True
            return i + 1
        if c == "{":
            st.depth += 1
        elif c == "}":
            if st.stack and st.depth == st.stack[-1]:
                st.stack = st.stack[:-1]          # the end of a `${…}`: back in the template
                st.depth -= 1
                st.mode, st.escape = TEMPLATE, False
                return i + 1
            st.depth = max(0, st.depth - 1)
        if c.isspace():
            return i + 1
        st.regex_ok = c in _REGEX_AFTER_PUNCT
        if c == "(":                              # `if (…) /re/`: a regex may follow its `)`
            st.parens = st.parens + (st.prev_word in _CONTROL,)
        elif c == ")":
            st.regex_ok = bool(st.parens and st.parens[-1])
            st.parens = st.parens[:-1]
        st.prev_word = ""
        return i + 1
    if m == NUMBER:
        if c.isalnum() or c == "_" or (c == "." and _takes_fraction(_number_tail(text, i))) \
                or (c in "+-" and text[i - 1] in "eE" and not text[i - 2:i].lower().startswith("0x")):
            return i + 1
        st.mode, st.regex_ok = CODE, False
        return i                                  # this character again, as code
    if m == STRING:
        if st.escape:
            st.escape = False
        elif c == "\\":
            st.escape = True
        elif c == st.quote or c == "\n":          # an unterminated string ends with its line
            st.mode, st.regex_ok = CODE, False
        return i + 1
    if m == TEMPLATE:
        if st.escape:
            st.escape = False
        elif c == "\\":
            st.escape = True
        elif c == "`":
            st.mode, st.regex_ok = CODE, False
        elif c == "$" and i + 1 < len(text) and text[i + 1] == "{":
            st.depth += 1
            st.stack = st.stack + (st.depth,)
            st.mode, st.regex_ok = CODE, True
            return i + 2
        return i + 1
    if m == LINE_COMMENT:
        if c == "\n":
            st.mode = CODE
        return i + 1
    if m == BLOCK_COMMENT:
        if c == "*" and i + 1 < len(text) and text[i + 1] == "/":
            st.mode = CODE
            return i + 2
        return i + 1
    # REGEX
    if st.escape:
        st.escape = False
    elif c == "\\":
        st.escape = True
    elif c == "[":
        st.in_class = True
    elif c == "]":
        st.in_class = False
    elif c == "/" and not st.in_class:
        st.mode, st.regex_ok, st.word = CODE, False, "r"    # its flags read as a word
    elif c == "\n":                                # not a regex after all: back to code
        st.mode, st.regex_ok = CODE, True
    return i + 1


def _takes_fraction(tail: str) -> bool:
    """May a `.` after this number be its fraction? (`1.5`; not `0x1f.`, `1.5.`, `1e3.`, `10n.`)"""
    t = tail.lower()
    return not (t.startswith(("0x", "0b", "0o")) or "." in t or "e" in t or t.endswith("n"))


def _number_tail(text: str, i: int) -> str:
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "._"):
        j -= 1
    return text[j:i]


class Lexer:
    """The scanner over text that grows at the end (and is cut back): states are kept at line
    starts, so a question scans from the last line start before it."""

    def __init__(self, text: str = ""):
        self._offsets = [0]
        self._states = [_State()]
        self.scan_to(text, len(text))

    def rewind(self, length: int) -> None:
        k = bisect.bisect_right(self._offsets, length)
        del self._offsets[max(k, 1):]
        del self._states[max(k, 1):]

    def line_start(self) -> int:
        return self._offsets[-1]

    def scan_to(self, text: str, upto: int) -> _State:
        """The state right before text[upto], keeping a checkpoint at every line start passed."""
        k = bisect.bisect_right(self._offsets, upto) - 1
        i, st = self._offsets[k], self._states[k].copy()
        while i < upto:
            j = _step(st, text, i)
            if text[i] == "\n" and j > self._offsets[-1] and j <= upto:
                self._offsets.append(j)
                self._states.append(st.copy())
            i = j
        return st

    def state_at(self, text: str, k: int) -> str:
        """What text[k] is part of: code, string, template, line_comment, block_comment, regex,
        number."""
        st = self.scan_to(text, k)
        if st.mode == NUMBER:
            probe = st.copy()
            if _step(probe, text, k) > k:
                return NUMBER                     # text[k] goes on with the number
            st = probe                            # the number ended before it: code
        if st.mode == CODE:
            probe = st.copy()
            _step(probe, text, k)
            if probe.mode == NUMBER:
                return NUMBER                     # a number starts here (`.5`)
        return st.mode

    def dot_is_code(self, text: str, dot: int) -> bool:
        """text[dot] == '.' is a member access (`a.b`, `a?.b`), not a spread (`...`), a number,
        or part of a string, template, comment or regular expression."""
        if text[dot] != "." or self.state_at(text, dot) != CODE:
            return False
        if text[dot - 1: dot] == "." or text[dot + 1: dot + 2] == ".":
            return False                          # `...spread`
        return True


def receiver_before(text: str, dot: int) -> str:
    """The expression that ends right before text[dot]: `this.registry`, `this.#items` (a
    `#private` field), `foo(x)[0]`, `obj!` (a non-null assertion; the `!` of `!obj.` is a logical
    not, not part of it), `a?.b` (of `a?.b.`), `"s"`, `` `t` ``."""
    i = dot
    if i > 0 and text[i - 1] == "?":              # `a?.`: the receiver is `a`
        i -= 1
    end = i
    if i > 0 and text[i - 1] in "'\"`":           # a literal: `"a,b".split`
        q = text[i - 1]
        j = text.rfind(q, 0, i - 1)
        while j > 0 and text[j - 1] == "\\":
            j = text.rfind(q, 0, j - 1)
        if j >= 0:
            return text[j:end]
    depth = 0
    while i > 0:
        c = text[i - 1]
        if depth == 0 and (c.isalnum() or c in "_$.!#" or (c == "?" and text[i: i + 1] == ".")):
            i -= 1
        elif c in ")]" or (c == ">" and (depth > 0 or text[i: i + 1] == "(")):   # `f<T>(`
            depth += 1
            i -= 1
        elif c in "([<" and depth > 0:
            depth -= 1
            i -= 1
            if depth == 0 and i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$"):
                continue
        elif depth > 0:
            i -= 1
        else:
            break
    return text[i:end].strip().lstrip("!")       # `!obj.`: a logical not, not the receiver's


_CLASS = re.compile(r"\bclass\s+([A-Za-z_$][\w$]*)")
_FUNCTION = re.compile(r"(?:\bfunction\s*\*?\s*([A-Za-z_$][\w$]*)"
                       r"|(?:\b(?:const|let|var)\s+|^|[\s,;])([A-Za-z_$][\w$]*)\s*[:=]\s*(?:async\s*)?(?:function\b|\([^()]*\)\s*(?::[^=]*)?=>|[A-Za-z_$][\w$]*\s*=>)"
                       r"|^\s*(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*\*?\s*([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\()")
_KEYWORDS_NOT_NAMES = frozenset({"if", "for", "while", "switch", "catch", "with", "return", "function"})


def _scan_code(st: _State, text: str, i: int, chars: str, on) -> int:
    """Advance `st` over text[i:], calling on(k, c) at every character of `chars` that is code
    (strings, comments, regular expressions and template literals skipped; a `}` that closes a
    template's `${` is not code). A true return stops the scan: the offset of that character;
    else the offset the scan ended at."""
    while i < len(text):
        c, mode = text[i], st.mode
        j = _step(st, text, i)
        if mode == CODE and c in chars and (c != "}" or st.mode == CODE) and on(i, c):
            return i
        i = j
    return i


def _scan_braces(st: _State, text: str, i: int, brace) -> int:
    """_scan_code over braces: brace(k, +1 | -1)."""
    return _scan_code(st, text, i, "{}", lambda k, c: brace(k, 1 if c == "{" else -1))


_CLOSER = {"(": ")", "[": "]", "{": "}"}


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

    def on(k: int, c: str) -> None:
        if c in _CLOSER:
            stack.append((k, c))
        elif stack:
            stack.pop()
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


def inline_braces(before: str, owed: str = "") -> int:
    """The braces open at the end of `before + owed` that its last line opened inside an expression or
    a one-line block (`foo({ a: 1, b: `, `if (x) { return a.`): code written at the cursor may
    close them without leaving the cursor's block. A `{` that ends the line's code (`if (x) {`)
    opens the block the cursor is in, and is not one."""
    st, opened = _brackets_at_end(before)         # cached: the splice scans the same `before`
    stack = list(opened)
    if owed:                                      # the prompt's last characters, re-written first
        def on(k: int, c: str) -> None:
            if c in _CLOSER:
                stack.append((len(before) + k, c))
            elif stack:
                stack.pop()
        _scan_code(st.copy(), owed, 0, "([{}])", on)
    text = before + owed
    line_start = text.rfind("\n") + 1
    return sum(1 for k, c in stack if c == "{" and k >= line_start and text[k + 1:].strip())


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


def close_line(before: str, drop: int, generated: str, after: str) -> str:
    """What the analyzer's view puts after the cursor, on its line, so that the cut the cursor
    makes does not break the file's structure: a line written up to `obj.` (the rest of it not
    yet written) leaves its `(`/`[` open and lost the `{` whose `}` follows in `after` — and
    TypeScript's parser then ends the class early and loses the members declared after it.
    The brackets opened on the cursor's line are closed, and braces are added (`{`) or closed
    (`}` on the next line) so that `after`'s closing braces meet the blocks open at the cursor.
    Nothing when the rest of the cursor's line in `after` is not blank (its text is the user's).
    `before[:len(before) - drop] + generated` is the text before the cursor (`drop`: a name the
    cursor sits in)."""
    nl = after.find("\n")
    if (after if nl < 0 else after[:nl]).strip():
        return ""
    st, opened = _brackets_at_end(before)
    head = len(before) - drop
    stack = list(opened)
    if generated:
        def on(k: int, c: str) -> None:
            if c in _CLOSER:
                stack.append((head + k, c))
            elif stack:
                stack.pop()
        _scan_code(st.copy(), generated, 0, "([{}])", on)
    text_end = head + len(generated)
    line_start = (before[:head] + generated).rfind("\n") + 1
    out = ""
    while stack and stack[-1][0] >= line_start and stack[-1][0] < text_end:
        out += _CLOSER[stack.pop()[1]]
    have = sum(c == "{" for _, c in stack)
    need = _braces_closed(after)
    if need > have:
        out += " " + "{" * (need - have)
    elif need < have:
        out += "\n" + "}" * (have - need)
    return out


def open_blocks(before: str) -> list[str]:
    """The headers of the `{` blocks still open at the end of `before`, outermost first (code
    braces only: strings, comments, regular expressions and template literals skipped)."""
    opened: list[int] = []

    def brace(k: int, d: int) -> None:
        if d > 0:
            opened.append(k)
        elif opened:
            opened.pop()
    _scan_braces(_State(), before, 0, brace)
    heads = []
    for k in opened:
        start = max(before.rfind(";", 0, k), before.rfind("{", 0, k), before.rfind("}", 0, k)) + 1
        heads.append(" ".join(before[start:k].split()))
    return heads


def enclosing_scope(before: str) -> tuple[str, None, None]:
    """("Class.method" | "method" | "Class" | "<module>", None, None): the innermost function-like
    block open at the end of `before` and the class around it (the cache scope of an answer; the
    class's text is Python's business: None, None)."""
    cls = fn = ""
    for head in open_blocks(before):
        m = _CLASS.search(head)
        if m:
            cls, fn = m.group(1), ""
            continue
        f = _FUNCTION.search(head)
        name = next((g for g in f.groups() if g), "") if f else ""
        if name and name not in _KEYWORDS_NOT_NAMES:
            fn = name
    scope = ".".join(x for x in (cls, fn) if x)
    return scope or "<module>", None, None


def could_bind_ts(line_before_receiver: str) -> bool:
    return False


def _binding_never(after: str) -> bool:
    return False


def _whole(before: str) -> str:
    return before




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


def _languages():
    from .. import pycode
    from .base import Language
    ts = Language(name="typescript", extensions=(".ts", ".tsx", ".mts", ".cts"), Lexer=Lexer, receiver_before=receiver_before, could_bind=could_bind_ts,
                  binding_verdict=_binding_never, enclosing_scope=enclosing_scope, lex_prefix=_whole, close_line=close_line, comment="//",
                  Braces=Braces, inline_braces=inline_braces, StatementEnd=StatementEnd)
    js = Language(name="javascript", extensions=(".js", ".jsx", ".mjs", ".cjs"), Lexer=Lexer, receiver_before=receiver_before, could_bind=pycode.could_bind,
                  binding_verdict=pycode.binding_verdict, enclosing_scope=enclosing_scope, lex_prefix=_whole, close_line=close_line, comment="//",
                  Braces=Braces, inline_braces=inline_braces, StatementEnd=StatementEnd)
    return ts, js


TYPESCRIPT, JAVASCRIPT = _languages()
