"""The API invocation in generated code: `receiver.name(args...)`, found in partial code.

    inv = extract_invocation("client.list_objects(Bucket=b, Pre", receiver="client")
    inv.name, inv.keywords, inv.complete      # "list_objects", ["Bucket"], False

The first call on `receiver` (any receiver when None; a plain `name(` when receiver == "") is
taken. The argument text is scanned character by character (strings, brackets, comments), so an
unclosed call still yields its name and the keywords written so far; a closed call is parsed with
`ast` (never executed) into positional arguments, keywords and `*`/`**` unpackings.
`query_text(inv)` is what the DAG loop searches with: the API-relevant words only (name and
keyword names), never the rest of the prompt.
Not here: judging a call against a signature (evaluation/api_metric.py). Test: tests/test_dag.py.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ..pycode import ArgScanner
from .. import pyparse

_CALL = re.compile(r"(?P<recv>(?:[A-Za-z_][\w]*\.)*)(?P<name>[A-Za-z_]\w*)[ \t]*(?P<paren>\()?")


@dataclass
class Invocation:
    receiver: str                     # "client" ("" for a plain call)
    name: str                         # "list_objects_v2"
    text: str                         # the call as written (up to its `)` when complete)
    called: bool = True               # a `(` follows the name
    complete: bool = False            # the parentheses are closed
    parsed: bool = False              # the closed call parsed as Python
    n_positional: int = 0
    keywords: list[str] = field(default_factory=list)
    star_args: bool = False           # `*x` among the arguments
    star_kwargs: bool = False         # `**x` among the arguments
    duplicate_keywords: bool = False
    start: int = 0                    # offset of the receiver/name in the code


def extract_invocation(code: str, receiver: str | None = None, start: int = 0) -> Invocation | None:
    """The first invocation in code[start:] (see the module docstring); None if there is none."""
    for m in _CALL.finditer(code, start):
        recv = m.group("recv")[:-1] if m.group("recv") else ""
        if m.start() > 0 and (code[m.start() - 1].isalnum() or code[m.start() - 1] in "_."):
            continue
        if receiver is not None and recv != receiver:
            continue
        name = m.group("name")
        if not m.group("paren"):
            if m.end() >= len(code.rstrip()) or receiver is not None:
                # `client.meta` / `client.list_objects` with no call (or cut off before the `(`)
                return Invocation(recv, name, code[m.start():m.end()].strip(), called=False,
                                  start=m.start())
            continue
        return _arguments(code, m.start(), m.end(), recv, name)
    return None


def _arguments(code: str, at: int, open_end: int, recv: str, name: str) -> Invocation:
    scan = ArgScanner()
    i = open_end
    while i < len(code) and not scan.closed:
        scan.step(code[i])
        scan.pos += 1
        i += 1
    inv = Invocation(recv, name, code[at:i], complete=scan.closed, start=at)
    inv.keywords = list(scan.used)
    if not scan.closed:
        return inv
    try:
        call = pyparse.parse(code[at:i], mode="eval").body
    except SyntaxError as exc:
        inv.duplicate_keywords = "repeated" in str(exc)
        return inv
    if not isinstance(call, ast.Call):
        return inv
    inv.parsed = True
    inv.n_positional = sum(not isinstance(a, ast.Starred) for a in call.args)
    inv.star_args = any(isinstance(a, ast.Starred) for a in call.args)
    inv.keywords = [k.arg for k in call.keywords if k.arg is not None]
    inv.star_kwargs = any(k.arg is None for k in call.keywords)
    inv.duplicate_keywords = len(set(inv.keywords)) < len(inv.keywords)   # a compile-time error
    return inv


def query_text(inv: Invocation) -> str:
    """The retrieval query for an invocation: its name and keyword names only."""
    return " ".join([inv.name, *inv.keywords])
