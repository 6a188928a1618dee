"""The LSP server's text rules: positions in UTF-16/8/32 against Python indexes (non-ASCII
earlier on the line), where an inline completion ends, no suffix duplication, no completion
that ran into the token limit mid-statement."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from groundcode.server.lsp_text import from_index, grounded, shape, stop_for, title, to_index

LINE = 'tag = "é😀"; return self.x'


@pytest.mark.parametrize("encoding, end", [("utf-16", 26), ("utf-8", 29), ("utf-32", 25)])
def test_positions_round_trip_through_non_ascii(encoding, end):
    dot = LINE.index("self.") + len("self.")            # 24 Python characters
    units = {"utf-16": dot + 1, "utf-8": dot + 1 + 3, "utf-32": dot}[encoding]
    assert from_index(LINE, dot, encoding) == units
    assert to_index(LINE, units, encoding) == dot
    assert from_index(LINE, len(LINE), encoding) == end
    assert to_index(LINE, 10_000, encoding) == len(LINE)      # past the end: the end (LSP rule)
    emoji = LINE.index("😀")
    # a column inside the emoji (UTF-16, UTF-8) rounds up past it; in UTF-32 it is the next one
    assert to_index(LINE, from_index(LINE, emoji, encoding) + 1, encoding) == emoji + 1


def test_unknown_encoding_is_refused():
    with pytest.raises(ValueError):
        to_index("x", 0, "utf-7")


@pytest.mark.parametrize("head, stop", [
    ("        return self.", "statement"),
    ("    def total(self):", "block"),
    ("    else:  # the rest", "block"),
    ("    x = items[1:", "statement"),
    ("    key = lambda x:", "statement"),
    ('    s = "a:"', "statement"),
    ("    f(a,", "statement"),
])
def test_stop_boundary(head, stop):
    assert stop_for(head) == stop


def test_shape_drops_the_text_after_the_cursor_and_the_line_break():
    # `return len(self.|)`: the model, which does not see the `)`, closes len( itself
    assert shape("registry)\n", "stop", ")", head="    return len(self.") == "registry"
    assert shape("registry.size()\n", "stop", "", head="    return self.") == "registry.size()"
    assert shape("name, key):\n", "stop", "):", head="    def f(self, ") == "name, key"
    # `print(self.|)` + `registry.size()`: that `)` closes size(, the editor's closes print(
    assert shape("registry.size()\n", "stop", ")", head="    print(self.") == "registry.size()"
    # a tail that does not repeat the rest of the line stays
    assert shape("registry.size()\n", "stop", "  # note", head="    x = self.") == "registry.size()"
    assert shape("\n", "eos", "") == ""


def test_shape_never_ends_mid_statement_at_the_token_limit():
    assert shape("registry.size()\n        x = fo", "length", "") == "registry.size()"
    # no whole line: cut after the last grounded name, else nothing
    assert shape("registry.regis(1, 2", "length", "", ["registry"]) == "registry"
    assert shape("foo bar baz", "length", "", []) == ""


def test_grounded_and_title():
    t = SimpleNamespace(receiver="self", chosen="registry", candidates=5, constrained=True,
                        failed_open=False, reason=None, analysis_ms=3.04, rolled_back=False)
    gen = SimpleNamespace(triggers=[t])
    info = grounded(gen)
    want = {"receiver": "self", "chosen": "registry", "candidates": 5, "constrained": True,
            "failed_open": False, "reason": None, "analysis_ms": 3.0, "cut": None}
    assert len(info) == 1 and {k: info[0].get(k) for k in want} == want, info
    assert title(info) == "groundcode: grounded self.registry"
    assert title([]) == "groundcode: no member access"
    # the model's own pick, confirmed by the analyzer, counts as grounded; a receiver the
    # analyzer could not resolve is named as such
    free = dict(info[0], receiver="self.owner", chosen="get", constrained=False, failed_open=True,
                reason="empty")
    ok = dict(info[0], chosen="owner", constrained=False)
    assert title([ok, free]) == "groundcode: grounded self.owner; unresolved self.owner: empty"
    # a name a deadline (a cancel, the length limit) cut before it was checked: not shown,
    # and said so, never "no member access"
    cut = dict(info[0], chosen=None, constrained=False, cut="disc")
    assert title([cut]) == "groundcode: cut before self.disc"
    assert title([ok, cut]) == "groundcode: grounded self.owner; cut before self.disc"
    t.rolled_back, t.chosen, t.cut = True, None, "regi"          # a redo cut short is listed too
    assert grounded(gen)[0]["cut"] == "regi"
