"""Line breaks as editors, the LSP and Python's tokenizer count them: `\\r\\n`, `\\r`, `\\n` — never
`str.splitlines`' others (form feed, `\\v`, `\\x1c`-`\\x1e`, `\\x85`, U+2028/2029), which a Python
file may hold inside a line (a form feed is legal whitespace): every cursor computation (line,
column → offset and back) goes through here.

    split_lines(text, keepends=False) -> [line, ...]   # as str.splitlines, with those breaks only
    end_position(prefix) -> (line 1-based, column)     # where `prefix` ends
Test: tests/test_lines.py.
"""
from __future__ import annotations

import re

LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    lines = _LINE.findall(text)
    return lines if keepends else [ln.rstrip("\r\n") for ln in lines]


def end_position(prefix: str) -> tuple[int, int]:
    """(line 1-based, column 0-based) of the end of `prefix`."""
    breaks = list(LINE_BREAK.finditer(prefix))
    if not breaks:
        return 1, len(prefix)
    return len(breaks) + 1, len(prefix) - breaks[-1].end()
