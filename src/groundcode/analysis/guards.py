"""isinstance guards over a cursor: the classes a receiver is narrowed to where it is dotted.

    isinstance_guards(code, line, column, receiver) -> [(subject, (class expr, ...)), ...]

`if isinstance(reader, StringReader):` makes `reader` a `StringReader` inside the branch, and so
do `elif`/`while` tests (joined by `and`), `assert isinstance(x, C)` and an early exit
(`if not isinstance(x, C): return ...`) earlier in the same block, and an earlier operand of
`and` on the cursor's line (`isinstance(x, C) and x.`); Jedi narrows only names it
cannot type otherwise, so a typed receiver keeps its declared members there (`reader.source`
is a `Sequence`, no `startswith`). The subject is the receiver or a dotted prefix of it
(`reader` for `reader.source.`). A guard whose subject's root is rebound between it and the
cursor does not count. Text only, indentation-based (any width), tolerant of partial code;
`else` and `or` carry no positive fact and are skipped.
Not here: the members of the classes (jedi_receiver.py asks Jedi). Test: tests/test_guards.py.
"""
from __future__ import annotations

import ast
import re
from .. import pyparse

_HEADER = re.compile(r"(if|elif|while)\b(.*):\s*(#.*)?$", re.S)
_EXIT = re.compile(r"(return|raise|continue|break)\b")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t")) if line.strip() else -1


def _classes(node) -> tuple[str, ...]:
    elts = node.elts if isinstance(node, ast.Tuple) else [node]
    if all(isinstance(e, (ast.Name, ast.Attribute)) for e in elts):
        return tuple(ast.unparse(e) for e in elts)
    return ()


def _isinstance(node) -> tuple[str, tuple] | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
            and len(node.args) == 2 and not node.keywords:
        cls = _classes(node.args[1])
        if cls and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            return ast.unparse(node.args[0]), cls
    return None


def _holds(test) -> list:
    """isinstance facts that hold where `test` is true."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [f for v in test.values for f in _holds(v)]
    f = _isinstance(test)
    return [f] if f else []


def _fails(test) -> list:
    """isinstance facts that hold where `test` is false (`not isinstance(...)`, `... or ...`)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return [f for v in test.values for f in _fails(v)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _holds(test.operand)
    return []


def _test(header: str):
    m = _HEADER.match(header.strip())
    if m is None:
        return None, None
    try:
        return m.group(1), pyparse.parse(m.group(2).strip(), mode="eval").body
    except SyntaxError:
        return None, None


def _header_at(lines: list[str], k: int, stop: int) -> str:
    """The block header that starts at line k (it may span lines up to its colon)."""
    text = lines[k]
    j = k
    while not re.search(r":\s*(#.*)?$", text) and j + 1 < stop:
        j += 1
        text += "\n" + lines[j]
    return text


def isinstance_guards(code: str, line: int, column: int, receiver: str) -> list[tuple[str, tuple]]:
    """(subject, class expressions) of the guards that narrow `receiver` (or a dotted prefix of
    it) at the cursor (line 1-based, column 0-based), nearest first."""
    from ..lines import split_lines     # the Splice's lines (lines.py), never str.splitlines
    lines = split_lines(code)
    if not receiver or line - 1 >= len(lines):
        return []
    subjects = {receiver} | {receiver[:m.start()] for m in re.finditer(r"\.", receiver)}
    cur = line - 1
    level = _indent(lines[cur]) if lines[cur].strip() else len(lines[cur])
    found: list = _same_line(lines[cur][: max(0, column - 1 - len(receiver))], subjects)
    for k in range(cur - 1, -1, -1):
        ind = _indent(lines[k])
        if ind < 0 or lines[k].lstrip().startswith("#"):
            continue
        facts = []
        stripped = lines[k].strip()
        if ind < level:                                   # an enclosing block's header
            level = ind
            if re.match(r"(async\s+)?(def|class)\b", stripped):
                break
            kw, test = _test(_header_at(lines, k, cur))
            if test is not None:
                facts = _holds(test)
        elif ind == level:                                # an earlier statement of the block
            if stripped.startswith("assert "):
                try:
                    facts = _holds(pyparse.parse(stripped).body[0].test)
                except (SyntaxError, IndexError, AttributeError):
                    facts = []
            elif stripped.startswith("if "):
                kw, test = _test(_header_at(lines, k, cur))
                if test is not None and _exits(lines, k, level, cur):
                    facts = _fails(test)
        for subject, cls in facts:
            root = re.match(r"\w+", subject).group(0)
            if subject in subjects and not _rebound(lines[k + 1: cur], root):
                found.append((subject, cls))
    return found


_AND = re.compile(r"isinstance\(\s*([\w.]+)\s*,\s*(\([\w.,\s]*\)|[\w.]+)\s*\)\s*and\b")


def _same_line(head: str, subjects: set) -> list:
    """`isinstance(x, C) and ... x.` on the cursor's line: the later operands of `and` are
    evaluated only where the guard holds (an `or`, `if` or `else` after it: not sure)."""
    found = []
    for m in _AND.finditer(head):
        if m.group(1) in subjects and not re.search(r"\b(or|if|else|lambda)\b|;", head[m.end():]):
            try:
                cls = _classes(pyparse.parse(m.group(2), mode="eval").body)
            except SyntaxError:
                continue
            if cls:
                found.insert(0, (m.group(1), cls))
    return found


def _exits(lines: list[str], k: int, level: int, cur: int) -> bool:
    """Does the `if` block at line k always leave (its last statement returns, raises,
    continues or breaks) with no `elif`/`else` after it?"""
    head = lines[k].split(":", 1)
    if len(head) == 2 and head[1].strip() and not head[1].strip().startswith("#"):
        return bool(_EXIT.match(head[1].strip()))        # `if not ...: return`
    last = None
    j = k + 1
    while j < cur:
        ind = _indent(lines[j])
        if ind >= 0 and not lines[j].lstrip().startswith("#"):
            if ind <= level:
                if re.match(r"(elif|else)\b", lines[j].strip()):
                    return False
                break
            if last is None or ind <= _indent(lines[last]):
                last = j
        j += 1
    return last is not None and bool(_EXIT.match(lines[last].strip()))


def _rebound(lines: list[str], root: str) -> bool:
    r = re.escape(root)
    pat = re.compile(rf"(?<![\w.]){r}\s*(:[^=\n]*)?=(?!=)|\b(for|as)\s+{r}\b|(?<![\w.]){r}\s*,[^\n=]*=(?!=)")
    return any(pat.search(ln) for ln in lines)
