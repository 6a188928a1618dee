"""Shrink a large module for linting one function: other functions become stubs, line numbers kept.

pylint's cost grows with the module (building it, inferring every `self.x = ...`, walking every
name), and the standing benchmark's biggest files have 2,000-5,000 lines: 1-4 s per sample. For
success rate only the scored function's lines matter, so in modules longer than a threshold every
*other* function body is blanked line by line, keeping (re-indented, on its own line) each
single-line `self.<attr> = ...` / `cls.<attr> = ...` assignment — the instance attributes that
no-member checks against — and ending in `raise NotImplementedError`, which astroid treats as
abstract: calls to stubbed functions infer to Uninferable, so pruning can hide an error behind a
stub's return value but cannot invent one. Module-level and class-level statements are untouched.
Text that does not parse (a broken sample) is returned as is.
Not here: running pylint (lint.py). Test: tests/test_bench_lint.py.
"""
from __future__ import annotations

import ast
from .. import pyparse

STUB = "raise NotImplementedError"


def _self_assignments(fn: ast.AST, lines: list[str]) -> list[tuple[int, str]]:
    """(line, source) of single-line `self.x = ...` / `cls.x = ...` statements anywhere in fn's body."""
    out = []
    for node in ast.walk(fn):
        if node is fn or not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.lineno != node.end_lineno:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in ("self", "cls")
               for t in targets):
            text = lines[node.lineno - 1]
            # a statement sharing its line with another (`a = 1; self.x = 2`) is left out
            if text.strip().endswith(";") or ";" in text:
                continue
            out.append((node.lineno, text.strip()))
    return out


def prune(text: str, first_line: int, last_line: int) -> str:
    """`text` with every function outside [first_line, last_line] stubbed; same number of lines."""
    try:
        tree = pyparse.parse(text)
    except (SyntaxError, ValueError):
        return text
    lines = text.split("\n")
    stubs = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside = child.lineno <= first_line and last_line <= child.end_lineno
                overlaps = not (child.end_lineno < first_line or child.lineno > last_line)
                if inside and (child.lineno, child.end_lineno) != (first_line, last_line) or overlaps:
                    if inside:
                        visit(child)      # the scored function is nested in this one: keep, look inside
                    continue
                stubs.append(child)
            elif isinstance(child, ast.ClassDef):
                visit(child)

    visit(tree)
    for fn in stubs:
        body_start = fn.body[0].lineno
        if body_start <= fn.lineno or fn.body[0].col_offset == 0:
            continue                      # one-line `def f(): ...` or odd layout: leave it
        indent = " " * fn.body[0].col_offset
        keep = _self_assignments(fn, lines)
        for ln in range(body_start, fn.end_lineno + 1):
            lines[ln - 1] = ""
        free = [ln for ln in range(body_start, fn.end_lineno + 1)]
        for ln, stmt in keep:
            lines[ln - 1] = indent + stmt
            free.remove(ln)
        if free:
            lines[free[-1] - 1] = indent + STUB
        else:
            lines[fn.end_lineno - 1] += "; " + STUB
    out = "\n".join(lines)
    try:
        pyparse.parse(out)
    except (SyntaxError, ValueError):
        return text                       # never make a file worse than it was
    return out
