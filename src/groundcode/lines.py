"""Line breaks, as each consumer of a cursor counts them: every cursor and splice computation
(line, column -> offset and back, where a line starts, the text of a line) goes through here.

Who counts what (decided per consumer; tests/test_lines.py holds each to it):

    LSP          \\r\\n, \\r, \\n     the LSP specification (positions sent to every language server:
                                  ty, pyright, basedpyright, zuban, pyrefly, jedi-ls, TypeScript 7's
                                  `tsc --lsp`, measured: a U+2028 above the cursor is not a line to it)
    PYTHON       \\r\\n, \\r, \\n     Python's tokenizer and `ast` (lineno), parso and so Jedi: the same
                                  three; U+2028/2029, form feed, \\v, \\x1c-\\x1e, \\x85 are characters
                                  inside a line (a form feed is legal whitespace; U+2028 may sit in a
                                  string or a comment)
    ECMASCRIPT   + U+2028, U+2029  JavaScript/TypeScript's own line terminators: where a `//` comment
                                  ends for the language's scanner (languages/typescript_scan.py) and
                                  tsc's diagnostics count lines — never a position sent over LSP

`str.splitlines` counts all of the above and more: it is never used for a position.
`LSP` and `PYTHON` are the same set, so a `Splice` (context.py: line 1-based, column 0-based in
code points) means the same line to Jedi, to `ast` and to every server; the LSP client only turns
the column into UTF-16 units.

    split_lines(text, keepends=False)   -> [line, ...]   as str.splitlines, with those breaks only
    end_position(prefix)                -> (line 1-based, column) where `prefix` ends
    line_start(text, index=None)        -> offset where the line holding `index` (default: the end)
                                           starts; never between a \\r and its \\n
    last_line(text)                     -> text[line_start(text):]
    line_text(text, line)               -> the line (1-based) without its break, "" past the end
    offset(text, line, column)          -> the index of (line 1-based, column)
    ends_line(text)                     -> True when `text` is empty or ends with a line break
    next_break(text, index)             -> (start, end) of the first break at or after `index`
Every function takes `breaks=` (LSP by default; ECMASCRIPT for JavaScript/TypeScript's scanner).
Test: tests/test_lines.py (a seeded property test over random files with mixed breaks, and the
acceptance test: a lone CR, CRLF and U+2028 above the cursor ground as LF does).
"""
from __future__ import annotations

import re

LSP = "\r\n"                       # the break characters of a set (\r\n counts as one break)
PYTHON = LSP
ECMASCRIPT = "\r\n\u2028\u2029"

_BREAK = {LSP: re.compile(r"\r\n|\r|\n"), ECMASCRIPT: re.compile("\r\n|\r|\n|\u2028|\u2029")}
_LINE = {LSP: re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z"),
         ECMASCRIPT: re.compile("[^\r\n\u2028\u2029]*(?:\r\n|\r|\n|\u2028|\u2029)|[^\r\n\u2028\u2029]+\\Z")}
LINE_BREAK = _BREAK[LSP]           # the LSP's and Python's breaks, as one pattern


def _simple(text: str, breaks: str) -> bool:
    """Only `\\n` can break a line in `text` (the common case: str.count and rfind are exact)."""
    return "\r" not in text and (breaks is LSP or ("\u2028" not in text and "\u2029" not in text))


def split_lines(text: str, keepends: bool = False, breaks: str = LSP) -> list[str]:
    lines = _LINE[breaks].findall(text)
    if keepends:
        return lines
    return [ln.rstrip(breaks) for ln in lines]        # a line holds one break, at its end


def line_start(text: str, index: int | None = None, breaks: str = LSP) -> int:
    """Where the line holding `index` starts (the end of the break before it); an index between
    a `\\r` and its `\\n` belongs to the line the pair ends."""
    i = len(text) if index is None else index
    if _simple(text, breaks):
        return text.rfind("\n", 0, i) + 1
    if 0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n":
        i -= 1
    return max(text.rfind(c, 0, i) for c in breaks) + 1


def last_line(text: str, breaks: str = LSP) -> str:
    return text[line_start(text, None, breaks):]


def end_position(prefix: str, breaks: str = LSP) -> tuple[int, int]:
    """(line 1-based, column 0-based) of the end of `prefix` (a prefix that ends in a lone `\\r`
    ends a line: the text after it is not known)."""
    if _simple(prefix, breaks):
        return prefix.count("\n") + 1, len(prefix) - (prefix.rfind("\n") + 1)
    n = len(_BREAK[breaks].findall(prefix))
    return n + 1, len(prefix) - line_start(prefix, None, breaks)


def offset(text: str, line: int, column: int, breaks: str = LSP) -> int:
    """The index of (line 1-based, column 0-based) in `text` (the column is not checked)."""
    if line <= 1:
        return column
    if _simple(text, breaks):
        at = -1
        for _ in range(line - 1):
            at = text.find("\n", at + 1)
            if at < 0:
                return len(text)
        return at + 1 + column
    for k, m in enumerate(_BREAK[breaks].finditer(text), 2):
        if k == line:
            return m.end() + column
    return len(text)


def line_text(text: str, line: int, breaks: str = LSP) -> str:
    """Line `line` (1-based) of `text` without its break; "" past the end."""
    start = offset(text, line, 0, breaks)
    if start >= len(text) or (line > 1 and start == 0):
        return ""
    m = _BREAK[breaks].search(text, start)
    return text[start: m.start() if m else len(text)]


def next_break(text: str, index: int = 0, breaks: str = LSP) -> tuple[int, int] | None:
    """(start, end) of the first line break at or after `index` (a `\\r\\n` whole), or None."""
    if 0 < index < len(text) and text[index - 1] == "\r" and text[index] == "\n":
        return index, index + 1
    m = _BREAK[breaks].search(text, index)
    return (m.start(), m.end()) if m else None


def ends_line(text: str, breaks: str = LSP) -> bool:
    """`text` is empty or ends with a line break (the next character starts a line)."""
    return not text or text[-1] in breaks
