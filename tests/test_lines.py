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
