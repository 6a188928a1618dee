"""What a Python module binds at module level (`module_names`): imports, defs, classes,
assignments, loop and with targets outside any function or class, and every name a `global`
statement names. The names monitor's reading of the file around a cursor (python_scope.py) and
of a module's exports (python_modules.py) both ask it.
Test: tests/test_names_monitor.py.
"""
from __future__ import annotations

import ast
import re

import parso
from .. import pyparse


def module_names(code: str) -> frozenset:
    """The names `code` binds at module level (imports, defs, classes, assignments, loop and
    with targets outside any function or class) and every name a `global` statement names.

    Code Python's own parser reads is read by it (`ast`, ~5× faster than parso on a 3,000-line
    module: the file around a function is read once per function written); code it cannot read
    (unfinished, newer syntax) by parso with error recovery. Both give the same set on valid code,
    parso's reading of a definition included (`a.b = 1` binds `b`; a comprehension's variable at
    module level counts), except that `ast` also sees a walrus among a call's arguments: equal on
    2,168 files of the standard library and site-packages (session 30); tests/test_names_monitor.py."""
    fast = _ast_module_names(code)
    return fast if fast is not None else _parso_module_names(code)


_GLOBAL = re.compile(r"\bglobal\b")


def _ast_module_names(code: str) -> frozenset | None:
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: set[str] = set()

    def target(t) -> None:               # parso's _defined_names: `a.b = ...` defines b
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)
        elif isinstance(t, ast.Attribute):
            out.add(t.attr)

    def visit(node) -> None:             # at module level: never into a def's, class's or lambda's scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            for d in node.decorator_list:
                visit(d)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name != "*":
                    out.add(a.asname or a.name.split(".")[0])
            return
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension,
                               ast.NamedExpr)):
            target(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            target(node.optional_vars)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                target(t)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
        for child in ast.iter_child_nodes(node):
            visit(child)

    try:
        visit(tree)
    except RecursionError:
        return None
    if _GLOBAL.search(code):             # a walk of the whole tree only where one may be
        out.update(n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names)
    return frozenset(out)


def _parso_module_names(code: str) -> frozenset:
    module = parso.parse(code, error_recovery=True)
    out: set[str] = set()
    for name, uses in module.get_used_names().items():
        for n in uses:
            p = n.parent
            if p is not None and p.type == "global_stmt":
                out.add(name)
                break
            if n.is_definition() and _owner(n) == "file_input":
                out.add(name)
                break
    return frozenset(out)


def _owner(name) -> str:
    """The type of the scope a definition name belongs to."""
    p = name.parent
    if p.type in ("funcdef", "classdef") and p.children[1] is name:
        p = p.parent                      # `def f`: f belongs to the scope around the def
    while p is not None and p.type not in ("funcdef", "classdef", "lambdef", "file_input"):
        p = p.parent
    return p.type if p is not None else "file_input"
