"""The character scanner under TypeScript's lexical facts (typescript.py) and its blocks
(typescript_blocks.py): a state machine over characters — code, strings, template literals
(nesting code in `${…}`), comments, regular expressions (a `/` divides or starts one by what
precedes it) and numbers — and a scan that reports the code characters asked for (brackets).
Test: tests/test_languages_typescript.py.
"""
from __future__ import annotations

from ..lines import ECMASCRIPT as EOL     # JavaScript's line terminators: \r, \n, U+2028, U+2029

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
        elif c == st.quote or c in EOL:           # an unterminated string ends with its line
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
        if c in EOL:
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
    elif c in EOL:                                 # not a regex after all: back to code
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
