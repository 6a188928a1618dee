"""Where a receiver's value may come from: the member vocabulary (analysis/vocabulary.py) may
hold a name only where the receiver cannot be a library object, since a library's members are
names the project never writes (a regex match's `.group`, argparse's `.add_parser`, a boto3
client's `.meta`): holding those to the project's names forbids correct code.

    foreign(receiver, params, text) -> reason | None

`text` is the code the receiver's bindings can be read from (the enclosing class or function,
up to the trigger). A receiver may be a library object — the reason says why — when it is
  - a call's or a subscript's result (`f().`, `x[0].`, `x.y().`),
  - a member of a member (`x.y.`, `self.a.b.`): the value of a name nobody typed,
  - a parameter of the function (any but self/cls: a caller may pass anything),
  - a name or `self.attr` bound by `for`, `with`, `import`, `except`, or assigned a call's
    result, another name or a parameter, or never bound where the text shows it.
None: every binding the text shows is a literal, a display or a comprehension of the project's
own code. Lexical only (regular expressions over the text; no analysis).
Test: tests/test_vocabulary.py.
"""
from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_]\w*")
_LITERAL = re.compile(r"""^\s*(?:[-+]?\d|['"\[{(]|[rbuf]+['"]|True\b|False\b|None\b|lambda\b)""", re.I)


def foreign(receiver: str, params, text: str) -> str | None:
    receiver = (receiver or "").strip()
    if not receiver or receiver[-1] in ")]" or "(" in receiver or "[" in receiver:
        return "a call's or subscript's result"
    parts = receiver.split(".")
    if not all(_IDENT.fullmatch(p) for p in parts):
        return "an expression"
    root = parts[0]
    if root in ("self", "cls"):
        if len(parts) == 1:
            return None
        if len(parts) > 2:
            return "a member of a member"
        target = rf"(?:self|cls)\.{re.escape(parts[1])}"
    else:
        if len(parts) > 1:
            return "a member of a member"
        if root in (params or ()):
            return "a parameter"
        target = rf"(?<![\w.]){re.escape(root)}"
    return _bindings(target, text)


def _bindings(target: str, text: str) -> str | None:
    if re.search(rf"\b(?:for|as|import)\s+(?:[\w, ]*,\s*)?{target}\b", text):
        return "bound by for/with/import/except"
    rhs = [m.group(1) for m in re.finditer(rf"^\s*{target}\s*(?::[^=\n]*)?=(?!=)\s*(.*)$", text, re.M)]
    if not rhs:
        return "bound where the text does not show"
    for value in rhs:
        if not _LITERAL.match(value):
            return "assigned a call's result or another name"
    return None
