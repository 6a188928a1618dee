"""One line splitter for every cursor computation (lines.py): `\\r\\n`, `\\r`, `\\n` only. A form
feed (legal Python whitespace), `\\v`, `\\x85` or U+2028 inside a line used to move the cursor to
another line (`self.re|` completed as `s(1,`)."""
from __future__ import annotations

import pytest

from groundcode.lines import end_position, split_lines

ODD = ["\x0c", "\x0b", "\x85", "\u2028", "\u2029", "\x1c"]


def test_split_lines_knows_only_the_three_line_breaks():
    assert split_lines("") == [] and split_lines("a\n") == ["a"] and split_lines("a\r\nb\rc") == ["a", "b", "c"]
    assert split_lines("a\r\nb", keepends=True) == ["a\r\n", "b"]
    for c in ODD:
        assert split_lines(f"x{c}y\nz") == [f"x{c}y", "z"], repr(c)
    assert end_position("a\nb\x0cc") == (2, 3) and end_position("a\r\nbc") == (2, 2) and end_position("ab") == (1, 2)


@pytest.mark.parametrize("odd", ODD)
def test_the_cursor_stays_on_its_line(odd, tmp_path):
    from groundcode.context import cursor_context
    from groundcode.server.guard import check_position, cursor_of
    text = f"class Cart:\n    {odd}# section\n    def last(self):\n        return self.re\n"
    ctx = cursor_context(tmp_path / "m.py", 4, len("        return self.re"), tmp_path, text=text)
    assert ctx.before.endswith("        return self.re") and ctx.after == ""
    prefix = text[: text.index("self.re") + len("self.re")]
    assert cursor_of(prefix) == (4, len("        return self.re"))
    check_position(text, 4, len("        return self.re"))


def test_the_structured_endpoint_and_the_lsp_put_the_cursor_on_its_line(tmp_path):
    from groundcode.server.lsp_completer import _LINE_BREAK
    text = "class Cart:\n    \x0c\n    def last(self):\n        return self.re\n"
    assert _LINE_BREAK.split(text)[3] == "        return self.re"


# -- the property test: random files with mixed breaks, every position computation agrees ---------
import ast
import random

from groundcode.lines import (ECMASCRIPT, LSP, ends_line, last_line, line_start, line_text,
                              next_break, offset)
from groundcode.server.guard import check_position, cursor_of

PIECES = ["a", "b", "x1", " ", "    ", "é", "\U0001d4b3", "\n", "\r", "\r\n", "\u2028", "\u2029", "\x0c", "\x85", "\v"]


def _reference(text: str, breaks: str) -> list[tuple[int, int]]:
    """(line 1-based, column) of every index of `text`, by walking it one character at a time:
    `\\r\\n` is one break; an index between its `\\r` and `\\n` is given the `\\r`'s position."""
    out, line, col, i = [], 1, 0, 0
    while i <= len(text):
        out.append((line, col))
        if i == len(text):
            break
        c = text[i]
        if c == "\r" and text[i + 1: i + 2] == "\n":
            out.append((line, col + 1))           # between the pair: not a position of its own
            i += 2
            line, col = line + 1, 0
        elif c in breaks:
            i += 1
            line, col = line + 1, 0
        else:
            i, col = i + 1, col + 1
    return out


def _files(seed: int, n: int = 300):
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 40)))


def _inside_crlf(text: str, i: int) -> bool:
    return 0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n"


@pytest.mark.parametrize("breaks", [LSP, ECMASCRIPT], ids=["lsp", "ecmascript"])
def test_every_position_computation_agrees_on_random_files(breaks):
    for text in _files(39):
        ref = _reference(text, breaks)
        lines = split_lines(text, keepends=True, breaks=breaks)
        assert "".join(lines) == text
        assert split_lines(text, breaks=breaks) == [ln.rstrip(breaks) for ln in lines]
        for i in range(len(text) + 1):
            if _inside_crlf(text, i):
                continue
            line, col = ref[i]
            assert end_position(text[:i], breaks) == (line, col), (text, i)
            if breaks is LSP:                     # what the server checks a client's cursor with
                assert cursor_of(text[:i]) == (line, col)
                check_position(text, line, col)
            assert offset(text, line, col, breaks) == i, (text, i)
            assert line_start(text, i, breaks) == i - col, (text, i)
            assert line_text(text, line, breaks) == (lines[line - 1].rstrip(breaks) if line <= len(lines) else "")
            assert last_line(text[:i], breaks) == text[i - col:i]
            assert ends_line(text[:i], breaks) == (col == 0)
            nb = next_break(text, i, breaks)
            rest = [k for k in range(i, len(text)) if ref[k + 1][0] > ref[i][0] and not _inside_crlf(text, k + 1)]
            assert (nb[1] if nb else None) == (rest[0] + 1 if rest else None), (text, i)


def test_python_parso_and_the_lsp_count_the_lsp_breaks():
    """ast's line numbers, parso's (Jedi's) lines and the LSP client's positions are lines.py's."""
    import parso
    from groundcode.analysis.lsp_messages import _position, utf16
    from groundcode.lines import LINE_BREAK
    for text in _files(7, 200):
        assert parso.split_lines(text) == LINE_BREAK.split(text)
        for i in range(len(text) + 1):
            if _inside_crlf(text, i):
                continue
            line, col = end_position(text[:i])
            p = _position(text, i)
            assert (p.line, p.character) == (line - 1, utf16(text[i - col:i], col))
    ends = ["\n", "\r", "\r\n", "\r", "\n", "\r\n", "\r", "\n"]
    body = "".join(f"x{k} = 1  # {c}\u2028{c}\x0c{c}\x85" + brk for k, (c, brk) in enumerate(zip("abcdefgh", ends)))
    for k, stmt in enumerate(ast.parse(body).body):          # U+2028, \f, \x85 in a comment: one line
        assert stmt.lineno == k + 1 == end_position(body[: body.index(f"x{k} =")])[0]


def test_edits_and_splices_land_where_the_lsp_puts_them():
    """A ranged didChange applied the LSP's way turns the old text into the new one; a splice's
    cursor (context.py) is the offset where the generated text ends, for Jedi and the server."""
    from lsprotocol import types as T
    from groundcode.analysis.lsp_client import LspAnalyzer
    from groundcode.analysis.lsp_messages import _position, edit
    from groundcode.context import cursor_context

    def apply(old, change):
        if isinstance(change, T.TextDocumentContentChangeWholeDocument):
            return change.text
        r = change.range
        def at(p):
            start = offset(old, p.line + 1, 0)
            head = line_text(old, p.line + 1)
            k = 0
            while len(head[:k].encode("utf-16-le")) // 2 < p.character:
                k += 1
            return start + k
        return old[: at(r.start)] + change.text + old[at(r.end):]

    rng = random.Random(5)
    files = list(_files(11, 150))
    for old in files:
        new = rng.choice(files)
        assert apply(old, edit(old, new)) == new, (old, new)
        cut = rng.randrange(len(old) + 1)
        new = old[:cut] + rng.choice(["self.", "x\r\ny", "\u2028", ""]) + old[cut:]
        assert apply(old, edit(old, new)) == new, (old, new)
    for text in files:
        for i in range(len(text) + 1):
            if _inside_crlf(text, i):
                continue
            line, col = end_position(text[:i])
            ctx = cursor_context("m.py", line, col, ".", text=text)
            assert ctx.before == text[:i]
            for gen in ("", "self.", "a\rb.", "a\r\nb"):
                sp = ctx.splice(gen)
                at = len(ctx.before) + len(gen)
                assert offset(sp.code, sp.line, sp.column) == at, (text, i, gen)
                assert LspAnalyzer._position(sp) == _position(sp.code, at)
