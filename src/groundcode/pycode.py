"""Lexical facts about partial Python code, from the one Python lexer of the project (`lex`).

Used by guides on rare events only (a token that contains a dot, a line that dedents), never on
every step, and by the metrics (`code_tokens`, `identifiers`). `Lexer` keeps a "safe point"
(the start of the current logical line) so that each question lexes only that line. Also the
body-end rule (`ends_block`, `block_end`) shared by the engine's guide and scoring.
Not here: semantics (analysis/), the decoding loop. Test: tests/test_pycode.py.
"""
from __future__ import annotations

import keyword
import re

from .argscan import ArgScanner  # noqa: F401 (its home is argscan.py; imported from here too)
from .lines import LINE_BREAK, last_line, line_start, next_break, split_lines

_IDENT = re.compile(r"[A-Za-z0-9_]*")
_RELATIVE_DOT = re.compile(r"[ \t]*from[ \t]+\.+$")   # a line so far of `from` and dots
_ASSIGN_AFTER = re.compile(r"\s*(=(?!=)|:)")


def ident_run(text: str, start: int = 0) -> str:
    """The identifier characters at the start of text[start:]."""
    return _IDENT.match(text, start).group(0)


# The one Python lexer: a single alternation, longest forms first — strings (any prefix, triple
# or single quoted, possibly unterminated because partial code stops anywhere: an open triple
# quote runs to the end of the text, a single quote to the end of its line unless a backslash
# continues it there: `"…\<newline>…"` is one string), comments, numbers,
# names, operators. Tolerant (never raises) and the same on every Python version (tokenize is
# neither: it raises on partial code and splits f-strings since 3.12).
_STRING = r"""(?:[rRbBuUfF]{0,2})(?:'''[\s\S]*?(?:'''|$)|\"\"\"[\s\S]*?(?:\"\"\"|$)|'(?:\\[\s\S]|[^'\\\r\n])*'?|"(?:\\[\s\S]|[^"\\\r\n])*"?)"""
_TOKEN_RE = re.compile(
    rf"(?P<comment>\#[^\r\n]*)|(?P<string>{_STRING})|(?P<number>\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?|\.\d+)"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<op>\*\*=|//=|>>=|<<=|->|:=|\.\.\.|[-+*/%&|^@<>=!]=|\*\*|//|<<|>>|[-+*/%&|^~@<>=.,:;()\[\]{}])"
    r"|(?P<ws>\s+)|(?P<other>.)"
)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")


def lex(text: str, start: int = 0, end: int | None = None):
    """(kind, start, end) of the lexical tokens of text[start:end], offsets into `text`; kinds:
    comment, string, number, name, op, ws, other."""
    for m in _TOKEN_RE.finditer(text, start, len(text) if end is None else end):
        yield m.lastgroup, m.start(), m.end()


def code_tokens(code: str) -> list[str]:
    """Python lexical tokens of `code`, without comments and whitespace; never raises.

    A string literal is one token; an unterminated one runs to the end of its line (or text)."""
    return [code[s:e] for kind, s, e in lex(code) if kind not in ("comment", "ws")]


def identifiers(code: str) -> list[str]:
    """Identifier tokens of `code` in order (names that are not keywords)."""
    return [t for t in code_tokens(code) if t.isidentifier() and not keyword.iskeyword(t)]


class Lexer:
    """Answers 'is the character at offset k inside code (not a string, comment or number)?'
    for text that grows at the end (and is sometimes cut back). Keeps the starts of logical
    lines seen so far ("safe points"), so each question lexes only the current logical line."""

    def __init__(self, text: str = ""):
        self._safe = [0]          # offsets where a logical line starts, increasing
        self.scan(text, len(text))

    def rewind(self, length: int) -> None:
        while len(self._safe) > 1 and self._safe[-1] > length:
            self._safe.pop()

    def line_start(self) -> int:
        return self._safe[-1]

    def line_starts(self) -> list[int]:
        """Offsets where the logical lines seen so far start (after each line end)."""
        return list(self._safe)

    def scan(self, text: str, upto: int) -> list[tuple[str, int, int]]:
        """Lex text[line_start:upto]; record the logical lines that end in it (a newline outside
        brackets, strings and a backslash continuation); return the tokens."""
        toks = list(lex(text, self._safe[-1], upto))
        depth = 0
        prev = ""
        for kind, s, e in toks:
            if kind == "op":
                if text[s] in _OPEN:
                    depth += 1
                elif text[s] in _CLOSE:
                    depth = max(depth - 1, 0)
            elif kind == "ws" and depth == 0:
                # every line break of the run (\r\n, \r, \n: Python's, lines.py) ends a
                # line, but the first after a backslash; so the same lines are found whether
                # blank lines came one token at a time or in one run
                for k, nl in enumerate(LINE_BREAK.finditer(text, s, e)):
                    if (k or prev != "\\") and nl.end() > self._safe[-1]:
                        self._safe.append(nl.end())
            prev = text[s:e] if kind == "other" else ""
        return toks

    def dot_is_code(self, text: str, dot: int) -> bool:
        """True when text[dot] == '.' is an attribute access (an operator), not part of a
        string, comment or number, nor a relative import's (`from . import x`, `from ..pkg`:
        what follows is a module of the package, or nothing)."""
        if dot < self._safe[-1]:
            return False
        for kind, s, e in self.scan(text, dot + 1):
            if s <= dot < e:
                if kind != "op" or e - s != 1:
                    return False
                return not _RELATIVE_DOT.match(text, line_start(text, dot), dot + 1)
        return False


def open_paren(text: str, start: int = 0) -> int:
    """The offset of the `(` still open at the end of text[start:] (a logical line so far:
    `Lexer.line_start`) where it is the innermost open bracket; -1 where none is open or the
    innermost is a `[` or `{`. Brackets in strings and comments do not count."""
    stack: list[int] = []
    for kind, s, _e in lex(text, start):
        if kind == "op" and text[s] in _OPEN:
            stack.append(s)
        elif kind == "op" and text[s] in _CLOSE and stack:
            stack.pop()
    return stack[-1] if stack and text[stack[-1]] == "(" else -1


def receiver_before(text: str, dot: int) -> str:
    """The primary expression that ends right before text[dot] (`self.items`, `f(x)[0]`,
    `", "`)."""
    i = dot
    if i > 0 and text[i - 1] in "'\"":          # a string literal: `", ".join`
        q = text[i - 1]
        j = text.rfind(q, 0, i - 1)
        while j > 0 and text[j - 1] == "\\":
            j = text.rfind(q, 0, j - 1)
        if j >= 0:
            k = j
            while k > 0 and text[k - 1] in "bBrRfFuU":
                k -= 1
            return text[k:i]
    depth = 0
    closers = {")": "(", "]": "["}
    while i > 0:
        c = text[i - 1]
        if depth == 0 and (c.isalnum() or c == "_" or c == "."):
            i -= 1
        elif c in closers:
            depth += 1
            i -= 1
        elif c in "([" and depth > 0:
            depth -= 1
            i -= 1
            if depth == 0 and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
                continue
        elif depth > 0:
            i -= 1
        else:
            break
    return text[i:dot].strip()


def could_bind(line_before_receiver: str) -> bool:
    """Could an attribute written here be an assignment target (`self.x = ...`)? True at the
    start of a statement and inside a leading target list (`a, self.x = ...`). Comment lines
    and blank lines before the statement (the text may start at the previous logical line's
    end) do not count."""
    s = "\n".join(ln for ln in LINE_BREAK.split(line_before_receiver)
                  if ln.strip() and not ln.lstrip().startswith("#")).strip()
    if not s:
        return True
    return s.endswith(",") and "=" not in s and s.count("(") == s.count(")") \
        and s.count("[") == s.count("]")


def binding_verdict(after: str) -> bool | None:
    """Given the text that follows a complete attribute name, is that attribute being bound?
    True: `= ...`, `: T = ...`, or in a target list before `=`; False: anything else (a call,
    a subscript, `.`, `+=`, ...); None: cannot tell yet."""
    s = after.lstrip(" \t")
    if not s:
        return None
    if _ASSIGN_AFTER.match(s):
        return True
    if s[0] == ",":
        line, nl, _ = s.partition("\n")
        depth = 0
        for i, c in enumerate(line):
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == "=" and depth == 0 and line[i + 1:i + 2] != "=" and line[i - 1:i] not in "!<>=+-*/%&|^@":
                return True
        return False if nl else None
    if s[0] == "\\":
        return None
    return False


def indentation(line: str) -> str:
    """The leading spaces and tabs of `line`."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def indent_width(line: str) -> int:
    return len(indentation(line).expandtabs(8))


def ends_block(lexer: Lexer, prefix: str, text: str, start: int, max_indent: int,
               comments: bool = True) -> bool:
    """The body-end rule: does the (non-blank) line of `text` starting at offset `start` close a
    block whose lines are indented deeper than `max_indent`? Yes when it is indented at most
    `max_indent` and does not lie inside a (multi-line) string (`comments` False: nor is a
    comment line). `prefix` is the code before `text` from a statement start; `lexer` has seen
    it (and may have seen more of `text`)."""
    nb = next_break(text, start)
    line = text[start:] if nb is None else text[start:nb[0]]
    if indent_width(line) > max_indent or (not comments and line.lstrip().startswith("#")):
        return False
    full = prefix + text[:start] + "."
    return lexer.dot_is_code(full, len(full) - 1)


def block_end(text: str, max_indent: int, prefix: str = "", starts_at_line: bool = True,
              comments: bool = True) -> int | None:
    """Offset of the first line of `text` that ends the block (`ends_block`), or None. With
    `starts_at_line` False, text's first line continues a line of the prefix: never the end.
    The engine's stop, scoring's cut and the monitor's class end in the file all use it."""
    lexer = Lexer(prefix)
    first = None if starts_at_line else next_break(text)      # lines.py: \r\n, \r, \n
    if not starts_at_line and first is None:
        return None
    start = 0 if first is None else first[1]
    while start < len(text):
        nb = next_break(text, start)
        if text[start: len(text) if nb is None else nb[0]].strip() and \
                ends_block(lexer, prefix, text, start, max_indent, comments):
            return start
        if nb is None:
            return None
        start = nb[1]
    return None


_DEF = re.compile(r"(?:^|(?<=\r))([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.M)


def enclosing_scope(text: str) -> tuple[str, int | None, int | None]:
    """(qualified name, offset, indentation) of the innermost class of the code that ends
    `text`, the qualified name being that of the innermost def/class (`Class.method`, `f`,
    "" at module level). Indentation-based: works for any indentation width."""
    end_line = last_line(text)
    # A cursor at the start of an empty line is taken to be inside the innermost block.
    cur = indent_width(end_line) if end_line.strip() else len(end_line.expandtabs(8)) or 1 << 30
    chain: list[tuple[str, str, int, int]] = []      # (kind, name, offset, indent), outermost first
    for m in reversed(list(_DEF.finditer(text))):
        ind = len(m.group(1).expandtabs(8))
        if ind < cur:
            chain.insert(0, (m.group(2), m.group(3), m.start(), ind))
            cur = ind
            if ind == 0:
                break
    qual = ".".join(name for _, name, _, _ in chain)
    cls = next(((off, ind) for kind, _, off, ind in reversed(chain) if kind == "class"), (None, None))
    return qual, cls[0], cls[1]


def assigned_attributes(text: str, receiver: str) -> set[str]:
    """Names `n` that `text` binds as `receiver.n` (`= ...`, `: T = ...`, augmented, in a target
    list, `for`/`with ... as` targets): attributes that exist once that code has run."""
    r = re.escape(receiver)
    out = set(re.findall(rf"(?<![\w.]){r}\.(\w+)\s*(?::[^=\n]*)?(?:[-+*/%&|^@]|//|<<|>>|\*\*)?=(?!=)", text))
    out |= set(re.findall(rf"(?<![\w.]){r}\.(\w+)\s*,(?=[^\n=]*=(?!=))", text))
    out |= set(re.findall(rf"\b(?:for|as)\s+{r}\.(\w+)\b", text))
    return out


def used_attributes(text: str, receiver: str) -> set[str]:
    """Names `n` that `text` reads or writes as `receiver.n` in code (not in strings or
    comments); `receiver` is a dotted name (`self`, `self.parent`). A class's methods that read
    `self.n` say that `n` exists on its instances at run time (set by a subclass, a mixin's
    host, or dynamically), though no line of the class assigns it."""
    parts = receiver.split(".")
    toks = [(text[s:e], kind, s) for kind, s, e in lex(text) if kind not in ("ws", "comment")]
    out: set[str] = set()
    n = 2 * len(parts)
    for k in range(len(toks) - n):
        if toks[k][0] != parts[0] or toks[k][1] != "name" or (k and toks[k - 1][0] == "."):
            continue
        name, kind, at = toks[k + n]
        if all(toks[k + 2 * j - 1][0] == "." and toks[k + 2 * j][0] == parts[j] for j in range(1, len(parts))) \
                and toks[k + n - 1][0] == "." and kind == "name" and not keyword.iskeyword(name) \
                and not LINE_BREAK.search(text, toks[k + n - 1][2], at):   # `self.` ending a line: no use
            out.add(name)
    return out


_DEF_HEAD = re.compile(r"(?:^|(?<=\r))([ \t]*)(async[ \t]+)?def[ \t]+\w+[ \t]*\(", re.M)


class FunctionHeader:
    """The last `def` header of `text` (partial code that ends inside that function):

    start        offset of the `def` line in `text`
    body         offset of the line after the header's colon (len(text) if the text ends there)
    params       parameter names; annotations: {name: annotation text}
    indent       the body's indentation (of its first non-blank line, else the def's + 4)
    """

    __slots__ = ("start", "body", "params", "annotations", "indent")

    def __init__(self, start, body, params, annotations, indent):
        self.start, self.body, self.params, self.annotations, self.indent = \
            start, body, params, annotations, indent


_DOCSTRING = re.compile(r'\s*[rRuU]{0,2}("""|\'\'\')(.*?)\1', re.S)
# Jedi's own docstring patterns (jedi.inference.docstrings.DOCSTRING_PARAM_PATTERNS): Sphinx
# `:type name: T`, `:param T name:`, Epydoc `@type name: T`
_DOC_TYPES = (r"\s*:type\s+{}:\s*([^\n]+)", r"\s*:param\s+(\w+)\s+{}:[^\n]*", r"\s*@type\s+{}:\s*([^\n]+)")


def docstring_types(body: str, params: list[str]) -> dict[str, str]:
    """{parameter: type text} that a function's docstring declares, where `body` is the text
    from the body's first line on and the docstring is complete there. Only the forms Jedi
    reads (Sphinx `:type p: T`, `:param T p:`, Epydoc `@type p: T`; not numpydoc, which Jedi
    reads only with numpydoc installed): for such a parameter Jedi infers the declared type,
    as for an annotation, instead of guessing from call sites."""
    m = _DOCSTRING.match(body)
    if m is None:
        return {}
    doc, out = m.group(2), {}
    for p in params:
        for pat in _DOC_TYPES:
            t = re.search(pat.format(re.escape(p)), doc)
            if t and t.group(1).strip():
                out[p] = t.group(1).strip()
                break
    return out


def function_header(text: str) -> FunctionHeader | None:
    """The header of the function whose body `text` ends in, or None (no complete header)."""
    import ast

    from . import pyparse
    defs = list(_DEF_HEAD.finditer(text))
    if not defs:
        return None
    m = defs[-1]
    at = m.start() + len(m.group(1))
    head = text[at:]
    depth, colon = 0, -1
    for k, ch in enumerate(head):          # the header's colon: outside all brackets
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0:
            colon = k
            break
    if colon < 0:
        return None
    try:
        args = pyparse.parse(head[: colon + 1] + " pass\n").body[0].args
    except (SyntaxError, IndexError, AttributeError):
        return None
    every = args.posonlyargs + args.args + args.kwonlyargs
    nl = next_break(head, colon)
    body = at + nl[1] if nl is not None else len(text)
    lines = LINE_BREAK.split(text[body:])
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None and lines and len(lines[-1]) > len(m.group(1)):
        first = lines[-1]                  # the text ends with the body's indentation
    indent = indentation(first) if first is not None else m.group(1) + "    "
    return FunctionHeader(m.start(), body, [a.arg for a in every],
                          {a.arg: ast.unparse(a.annotation) for a in every if a.annotation is not None},
                          indent)


_IMPORT = re.compile(r"(?:^|(?<=\r))(?:from[ \t]+[\w.]+[ \t]+import[ \t]+\(?([^)\r\n#]*)|import[ \t]+([^\r\n#;]*))", re.M)


def imported_names(text: str) -> list[str]:
    """Names the module's top-level imports bind (`import os.path` binds `os`, `from m import
    A as B` binds `B`) that the text dots into somewhere (`name.`), in import order."""
    out: list[str] = []
    dotted = None                              # the names the text dots into: one pass, when asked
    for m in _IMPORT.finditer(text):
        for part in (m.group(1) or m.group(2) or "").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            name = words[-1] if len(words) == 3 and words[1] == "as" else words[0].split(".")[0]
            if name.isidentifier() and name not in out:
                if dotted is None:
                    dotted = set(_DOTTED_NAME.findall(text))
                if name in dotted:
                    out.append(name)
    return out


_DOTTED_NAME = re.compile(r"(?<![\w.])([^\W\d]\w*)\.\w")


def statement_tail(before: str, max_lines: int = 2000) -> str:
    """`before` from the last line that starts a top-level statement (column 0)."""
    lines = split_lines(before, keepends=True)
    lo = max(0, len(lines) - max_lines)
    for k in range(len(lines) - 1, lo - 1, -1):
        ln = lines[k]
        if ln[:1] not in ("", " ", "\t", "\n", "\r", "#", ")", "]", "}") and k < len(lines) - 1 \
                or (k == len(lines) - 1 and ln[:1] not in ("", " ", "\t", "#")):
            return "".join(lines[k:])
    return "".join(lines[lo:]) if lo else before
