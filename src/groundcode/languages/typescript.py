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

One incremental scanner (typescript_scan.py: a state machine over characters, not a regular expression per token:
template literals nest code in `${…}`, and a `/` is a division or a regular expression by what
precedes it), with checkpoints at line starts so a question scans only from the last one; the
questions come on rare events (a token holding a dot), as for Python.
Used through languages.TYPESCRIPT / JAVASCRIPT (the dereference monitor, CodeContext).
Test: tests/test_languages_typescript.py.
"""
from __future__ import annotations

import bisect
import re

from .typescript_scan import EOL, CODE, NUMBER, _scan_braces, _State, _step


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
            if text[i] in EOL and j > self._offsets[-1] and j <= upto:   # lines.py's ECMASCRIPT
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




def _languages():
    from .. import pycode
    from .base import Language
    from .typescript_blocks import Braces, StatementEnd, close_line, inline_braces
    ts = Language(name="typescript", extensions=(".ts", ".tsx", ".mts", ".cts"), Lexer=Lexer, receiver_before=receiver_before, could_bind=could_bind_ts,
                  binding_verdict=_binding_never, enclosing_scope=enclosing_scope, lex_prefix=_whole, close_line=close_line, comment="//",
                  Braces=Braces, inline_braces=inline_braces, StatementEnd=StatementEnd)
    js = Language(name="javascript", extensions=(".js", ".jsx", ".mjs", ".cjs"), Lexer=Lexer, receiver_before=receiver_before, could_bind=pycode.could_bind,
                  binding_verdict=pycode.binding_verdict, enclosing_scope=enclosing_scope, lex_prefix=_whole, close_line=close_line, comment="//",
                  Braces=Braces, inline_braces=inline_braces, StatementEnd=StatementEnd)
    return ts, js


TYPESCRIPT, JAVASCRIPT = _languages()
