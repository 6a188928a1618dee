"""Find benchmark candidates in one Python file with `ast`: documented functions and dereference points.

Pure (text in, dataclasses out); no analysis, no sampling, no I/O. Positions: lines 1-based,
columns 0-based in characters (ast gives UTF-8 byte offsets; converted here). The sites
themselves come from repo.site_of (the one function-site extraction); here are the benchmark's
filters and the dereference points.
Not here: which candidates become tasks (builder.py). Test: tests/test_bench_builder.py.
"""
from __future__ import annotations

import ast

from ..repo import FunctionSite, char_col, site_of
from .. import pyparse

INITIALIZERS = {"__init__", "__new__", "__init_subclass__", "__post_init__", "__class_getitem__"}


def _trivial(body: list[ast.stmt]) -> bool:
    """A body that says nothing: pass, ..., or raise NotImplementedError."""
    if len(body) != 1:
        return False
    s = body[0]
    if isinstance(s, ast.Pass):
        return True
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and s.value.value is Ellipsis:
        return True
    if isinstance(s, ast.Raise) and s.exc is not None:
        exc = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def functions(code: str, require_docstring: bool = True) -> list[FunctionSite]:
    """Functions and methods with a non-trivial body starting on its own line (and a docstring
    when `require_docstring`). Functions nested in other functions are skipped (their context is
    another function's body). Raises SyntaxError when the file does not parse."""
    tree = pyparse.parse(code)
    lines = code.splitlines()
    out: list[FunctionSite] = []

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", True)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                site = _site(child, prefix, in_class, lines, require_docstring)
                if site:
                    out.append(site)

    visit(tree, "", False)
    return out


def _site(fn, prefix: str, in_class: bool, lines: list[str], require_docstring: bool) -> FunctionSite | None:
    site = site_of(fn, prefix + fn.name, in_class, lines)
    if site.docstring or ast.get_docstring(fn) is not None:
        doc_node = fn.body[0]
        last = lines[doc_node.end_lineno - 1]
        if last[char_col(last, doc_node.end_col_offset):].strip():
            return None            # `"""doc"""; x = 1`: no line boundary to start generating at
        rest = fn.body[1:]
    elif require_docstring:
        return None
    else:
        rest = fn.body
    if not rest or _trivial(rest) or rest[0].lineno < site.body_line or site.body_line <= fn.lineno:
        return None                # empty, trivial, or a one-line `def f(): return x`
    # the body must start at column 0 of its line (no `x = 1; y = 2` after the header's colon)
    first = lines[rest[0].lineno - 1]
    if first[:char_col(first, rest[0].col_offset)].strip():
        return None
    site.points = _points(rest, lines)
    return site


def _points(body: list[ast.stmt], lines: list[str]) -> list[tuple[int, int]]:
    """Positions right after each `expr.` in the body, where the member name begins, in order."""
    pts = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Attribute) or node.end_lineno is None:
                continue
            text = lines[node.end_lineno - 1]
            end = char_col(text, node.end_col_offset)
            start = end - len(node.attr)
            # the dot must sit right before the name (skip `x .y` and names split over lines)
            if start >= 1 and text[start - 1] == "." and text[start:end] == node.attr:
                pts.add((node.end_lineno, start))
    return sorted(pts)


def spread(points: list, k: int) -> list:
    """At most k items chosen uniformly across the list (first and last included; k = 1: the
    middle one; k <= 0: none)."""
    if len(points) <= k:
        return list(points)
    if k <= 1:
        return [points[len(points) // 2]] if k == 1 else []
    idx = sorted({round(i * (len(points) - 1) / (k - 1)) for i in range(k)})
    return [points[i] for i in idx]


def dereference_method(site: FunctionSite, min_lines: int = 7, min_statements: int = 2) -> bool:
    """MGD's target methods: not initializers, >= 2 top-level statements spanning >= 7 lines."""
    name = site.scope.rsplit(".", 1)[-1]
    return (site.is_method and name not in INITIALIZERS and site.statements >= min_statements
            and site.end_line - site.def_line + 1 >= min_lines and bool(site.points))


# -- the cursor kinds of the four-kind benchmark (issue 40) ------------------------------------
def name_points(tree: ast.AST, lines: list[str], first: int, last: int) -> list[tuple[int, int]]:
    """Where a name is read in lines [first, last]: the start of each `Name` in a load position
    that is not `self`/`cls` nor a builtin (the model must know it from the repository)."""
    import builtins
    skip = {"self", "cls"} | set(dir(builtins))
    pts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and first <= node.lineno <= last \
                and node.id not in skip and node.lineno == node.end_lineno:
            text = lines[node.lineno - 1]
            col = char_col(text, node.col_offset)
            if text[col:col + len(node.id)] == node.id:
                pts.add((node.lineno, col))
    return sorted(pts)


def call_points(tree: ast.AST, lines: list[str], first: int, last: int) -> list[tuple[int, int]]:
    """Right after the `(` of each call in lines [first, last] that passes arguments, where the
    `(` follows its callee on the same line."""
    pts = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not (node.args or node.keywords):
            continue
        f = node.func
        if not (first <= f.end_lineno <= last) or f.end_lineno is None:
            continue
        text = lines[f.end_lineno - 1]
        col = char_col(text, f.end_col_offset)
        if text[col:col + 1] == "(" and text[col + 1:].strip():
            pts.add((f.end_lineno, col + 1))
    return sorted(pts)


def keyword_points(tree: ast.AST, lines: list[str], first: int, last: int) -> list[tuple[int, int]]:
    """At the start of each keyword argument's name (`f(x, key=v)`: before `key`) in the calls of
    lines [first, last]: where the model must write a parameter's name (issue 41's invented
    parameter names; `**kw` has no name and is skipped)."""
    pts = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg is None or not (first <= kw.lineno <= last):
                continue
            text = lines[kw.lineno - 1]
            col = char_col(text, kw.col_offset)
            if text[col:col + len(kw.arg)] == kw.arg and text[col + len(kw.arg):].lstrip().startswith("="):
                pts.add((kw.lineno, col))
    return sorted(pts)


def import_points(tree: ast.Module, lines: list[str]) -> list[tuple[int, int]]:
    """Module-level one-line imports: right after `import ` (`import x`) or `from ` (`from x
    import y`), where the module's name begins."""
    pts = []
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno != node.end_lineno:
            continue
        text = lines[node.lineno - 1]
        col = char_col(text, node.col_offset)
        word = "import " if isinstance(node, ast.Import) else "from "
        if text.startswith(word, col) and text[col + len(word):].strip():
            pts.append((node.lineno, col + len(word)))
    return pts
