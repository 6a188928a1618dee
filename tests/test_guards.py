"""isinstance guards over a cursor (analysis/guards.py)."""
from __future__ import annotations

import pytest

from groundcode.analysis.guards import isinstance_guards

CODE = '''class P:
    def __or__(self, other: "P"):
        if isinstance(self, Alt) and not self.protected:
            self.
        elif isinstance(other, (Alt, mod.Seq)):
            other.parsers.
        else:
            other.
        if not isinstance(other, Alt):
            return NotImplemented
        assert isinstance(other.head, Head), "a head"
        other.head.
        if isinstance(self, Alt) or other:
            self.
        if isinstance(self, Alt):
            self = other
            self.
        while isinstance(other, Alt):
            other.
'''


def _at(receiver: str, nth: int = 0):
    lines = CODE.splitlines()
    hits = [k for k, ln in enumerate(lines, 1) if ln.strip() == receiver + "."]
    k = hits[nth]
    return isinstance_guards(CODE, k, len(lines[k - 1]), receiver)


@pytest.mark.parametrize("receiver,nth,expected", [
    ("self", 0, [("self", ("Alt",))]),                          # `and`: both hold
    ("other.parsers", 0, [("other", ("Alt", "mod.Seq"))]),      # elif's own test, a tuple
    ("other", 0, []),                                            # else: nothing positive
    ("other.head", 0, [("other.head", ("Head",)), ("other", ("Alt",))]),   # assert, early exit
    ("self", 1, []),                                             # `or`: nothing holds
    ("self", 2, []),                                             # rebound after the guard
    ("other", 1, [("other", ("Alt",)), ("other", ("Alt",))]),   # while; and the early exit
])
def test_guards_that_narrow_a_receiver(receiver, nth, expected):
    assert _at(receiver, nth) == expected


def test_a_guard_outside_the_function_does_not_count():
    code = "if isinstance(x, A):\n    def f(x):\n        x.\n"
    assert isinstance_guards(code, 3, 10, "x") == []


def test_an_earlier_and_operand_on_the_cursors_line_narrows():
    code = "def f(p: Base):\n    if isinstance(p, Alt) and not p.\n"
    assert isinstance_guards(code, 2, len("    if isinstance(p, Alt) and not p."), "p") == [("p", ("Alt",))]
    code = "def f(p: Base):\n    if isinstance(p, Alt) or p.\n"
    assert isinstance_guards(code, 2, len("    if isinstance(p, Alt) or p."), "p") == []
