"""Which attribute names a class or module makes up at run time, read from its text with `ast`
(no Jedi here; jedi_classes.py and jedi_worker.py hand it the text).

    closed_getattr(fn)          the names a *closed* `__getattr__` answers, or None (open)
    getattr_names(text, line)   the same for the `def __getattr__` at `line` of a module's text
    class_dynamics(src)         (names literal setattr and closed `__getattr__`s create, whether
                                the class makes up names no text tells)

A `__getattr__` is closed when its last top-level statement is a `raise` and every `return` in
it lies in the body (not the `else`) of an `if`/`elif` whose test restricts the parameter to
string literals: `p == "x"`, `"x" == p`, `p in ("a", "b")` (a tuple, list, set or
`frozenset(...)` literal of strings), an `or` of such (the union), an `and` with such operands
(their intersection). numpy's and `urllib.parse`'s module `__getattr__` are closed (lazy
submodules, deprecation shims); `return globals()[name]`, a `return` for any name, a generator,
a parameter rebound anywhere in it, a coroutine or a decorated one are open. The guarded
literals are members.

A class makes up names when a `__getattribute__` is defined, an open `__getattr__`, or
`setattr(self, <name the text cannot tell>, ...)`, `self.__dict__[...] = ...`,
`self.__dict__.update(...)` / `vars(self).update(...)` — except inside `__setstate__`, which
restores from a pickle the names `__getstate__` took from the same kind of instance, and except
a restore that mirrors a snapshot of the class's own: where a method other than `__init__`
returns something made from `self.__dict__` / `vars(self)` (a snapshot: pysyncobj's
`_serialize`), a method but `__init__` that writes `self.__dict__` from a named parameter in
bulk (`self.__dict__.update(param)`, or `self.__dict__[k] = v` inside a `for` over the
parameter: `_deserialize(self, data)`) restores what a snapshot took. `setattr` outside
`__setstate__`, `**kwargs`, and a single name given by a parameter (`def set(self, name, v)`)
stay dynamic. A literal
setattr name, or a loop variable over a literal tuple/list/set of strings, is a member instead.
A line that does not parse (a class being written: `x = self.`) is read with regular expressions
instead (any such call or definition there counts), the rest as code.

Not here: which `__getattr__` a receiver has, stub files, the standard library's exceptions
(jedi_classes.py). Test: tests/test_dynamic_attrs.py.
"""
from __future__ import annotations

import ast
import re
import textwrap

from ..lines import split_lines      # ast's lines: \r\n, \r, \n (lines.py)
from .. import pyparse

_DYNAMIC_TEXT = re.compile(r"\b(?:self\.__dict__|vars\(self\))\.update\("
                           r"|\bself\.__dict__\[[^\]\n]*\]\s*=(?!=)|\bdef __getattr(?:ibute)?__\b")
_UNKNOWN_SETATTR = re.compile(r"\bsetattr\(\s*self\s*,\s*[^'\"\s]")
_LITERAL_SETATTR = re.compile(r"\bsetattr\(\s*self\s*,\s*['\"](\w+)['\"]")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _strings(node) -> set | None:
    """The strings of a tuple/list/set (or `frozenset(...)`, `set(...)`, ...) literal of them."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1 \
            and not node.keywords and node.func.id in ("frozenset", "set", "tuple", "list"):
        node = node.args[0]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(_str(e) for e in node.elts):
        return {e.value for e in node.elts}
    return None


def _is_param(node, p: str) -> bool:
    return isinstance(node, ast.Name) and node.id == p


def _str(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def restricted(test, p: str) -> set | None:
    """The string literals `test` restricts the name `p` to (None: it does not restrict it)."""
    if isinstance(test, ast.BoolOp):
        parts = [restricted(v, p) for v in test.values]
        if isinstance(test.op, ast.Or):
            return set().union(*parts) if None not in parts else None
        got = [s for s in parts if s is not None]          # `and`: any restricting operand
        return set.intersection(*got) if got else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(op, ast.Eq):
            if _is_param(left, p) and _str(right):
                return {right.value}
            if _is_param(right, p) and _str(left):
                return {left.value}
        if isinstance(op, ast.In) and _is_param(left, p):
            return _strings(right)
    return None


def _rebinds(node, p: str) -> bool:
    """Does `node` itself bind the name `p` (then a later test of `p` is not of the argument)?"""
    if isinstance(node, ast.Name):
        return node.id == p and not isinstance(node.ctx, ast.Load)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == p
    if isinstance(node, ast.ExceptHandler):
        return node.name == p
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == p
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return p in node.names
    return getattr(node, "name", None) == p and type(node).__name__.startswith("Match")


def closed_getattr(fn) -> frozenset | None:
    """The names the `__getattr__` function node `fn` answers when it is closed, else None."""
    params = fn.args.posonlyargs + fn.args.args
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or not params \
            or not isinstance(fn.body[-1], ast.Raise):
        return None                      # a coroutine or a wrapper answers whatever it likes
    p = params[-1].arg                                  # `(name)` or `(self, name)`
    names: set = set()

    def ok(node, guard, nested) -> bool:
        """No unguarded return, yield or rebinding of `p` under `node` (`guard`: the literals of
        the innermost restricting `if` whose body holds it; `nested`: in an inner scope, whose
        returns are not `fn`'s)."""
        if _rebinds(node, p):
            return False
        if not nested and isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if not nested and isinstance(node, ast.Return):
            if guard is None:
                return False
            names.update(guard)
        if isinstance(node, ast.If):
            lits = restricted(node.test, p)
            inner = guard if lits is None else lits
            return ok(node.test, guard, nested) and all(ok(s, inner, nested) for s in node.body) \
                and all(ok(s, guard, nested) for s in node.orelse)
        inner_nested = nested or isinstance(node, _SCOPES)
        return all(ok(c, guard, inner_nested) for c in ast.iter_child_nodes(node))

    if not all(ok(s, None, False) for s in fn.body):
        return None
    return frozenset(n for n in names if n.isidentifier())


def getattr_names(text: str, line: int) -> frozenset | None:
    """`closed_getattr` of the `def __getattr__` at `line` (1-based) of `text`; None when there
    is none there or it does not parse. Only the function's lines are parsed (the text may be a
    file being written): they end at the first code line indented no deeper than the `def` (a
    cut inside a string, brackets or a continuation does not parse; code after a final top-level
    `raise` is unreachable)."""
    lines = split_lines(text, keepends=True)     # ast's and Jedi's lines (lines.py)
    if not 0 < line <= len(lines):
        return None
    first = lines[line - 1]
    indent = len(first) - len(first.lstrip())
    if not re.match(r"(async\s+)?def\s+__getattr__\b", first.lstrip()):
        return None
    cut = [first[indent:]]
    for ln in lines[line:]:
        s = ln.strip()
        if s and not s.startswith("#") and len(ln) - len(ln.lstrip()) <= indent:
            break
        # the `def`'s indentation off; a line indented less (a comment, a bracket's continuation,
        # a string's line) goes to column 0, where it means the same to the parser
        cut.append(ln[indent:] if len(ln) > indent and not ln[:indent].strip() else ln.lstrip(" \t") or "\n")
    try:
        tree = pyparse.parse("".join(cut))
    except (SyntaxError, ValueError):
        return None
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name != "__getattr__":
        return None
    return closed_getattr(fn)


def _self_dict(node) -> bool:
    """`self.__dict__` or `vars(self)`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__" and _is_param(node.value, "self")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
        and len(node.args) == 1 and _is_param(node.args[0], "self")


def _parse_lenient(src: str, tries: int = 4) -> tuple[ast.Module | None, str]:
    """The tree of `src` with each line a syntax error is on replaced by `pass` (a class in the
    file being written holds partial code: `x = self.`), and the lines so replaced; (None, src)
    when it still does not parse after `tries` lines."""
    lines = split_lines(textwrap.dedent(src), keepends=True)     # as ast counts (lineno)
    dropped: list = []
    for _ in range(tries + 1):
        try:
            return pyparse.parse("".join(lines)), "".join(dropped)
        except (SyntaxError, ValueError) as e:
            k = (getattr(e, "lineno", None) or 0) - 1
            if not 0 <= k < len(lines) or not lines[k].strip() or lines[k].lstrip().startswith("pass\n"):
                break
            dropped.append(lines[k])
            lines[k] = lines[k][: len(lines[k]) - len(lines[k].lstrip())] + "pass\n"
    return None, src


def class_dynamics(src: str) -> tuple[frozenset, bool]:
    """(names that literal `setattr(self, ...)` and closed `__getattr__`s in the class text
    `src` (dedented or not) create, whether the class makes up names its text cannot tell)."""
    tree, rest = _parse_lenient(src)
    # lines that do not parse (the partial code of a class being written) are read as text
    names: set = set(_LITERAL_SETATTR.findall(rest))
    dynamic = bool(_DYNAMIC_TEXT.search(rest) or _UNKNOWN_SETATTR.search(rest))
    if tree is None:
        return frozenset(names), dynamic

    params: frozenset = frozenset()         # the current method's parameters but self
    bulk = False                            # inside a `for` over one of them

    def visit(node, loops: dict, method: str | None):
        nonlocal dynamic, params, bulk
        restoring = method == "__setstate__" or (snapshots and bulk and method != "__init__")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            outer = params, bulk
            params = frozenset(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs) - {"self"}
            bulk = False
            for child in ast.iter_child_nodes(node):
                visit(child, loops, node.name)
            params, bulk = outer
            if node.name == "__getattribute__":
                dynamic = True
            elif node.name == "__getattr__":
                closed = closed_getattr(node)
                dynamic |= closed is None
                names.update(closed or ())
            return
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            inner = loops
            if isinstance(node.target, ast.Name):     # a loop over literal strings names its variable
                vals = _strings(node.iter) if not isinstance(node.iter, ast.Call) else None
                inner = dict(loops)
                if vals is not None:
                    inner[node.target.id] = sorted(vals)
                else:
                    inner.pop(node.target.id, None)
            outer = bulk
            bulk = bulk or _mentions(node.iter, params)
            for child in node.body + node.orelse:
                visit(child, inner, method)
            bulk = outer
            visit(node.iter, loops, method)
            return
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and _is_param(node.args[0], "self"):
            n = node.args[1]
            if _str(n):
                names.add(n.value)
            elif isinstance(n, ast.Name) and n.id in loops:
                names.update(loops[n.id])
            elif method != "__setstate__":       # a snapshot's restore writes __dict__ itself
                dynamic = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "update" and _self_dict(node.func.value) and not restoring \
                and not (snapshots and method != "__init__" and node.args and _mentions(node.args[0], params)):
            dynamic = True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not restoring:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute)
                   and _self_dict(t.value) for t in targets):
                dynamic = True                   # `self.__dict__[k] = v` (as the text rule had it)
        for child in ast.iter_child_nodes(node):
            visit(child, loops, method)

    snapshots = _snapshots(tree)
    visit(tree, {}, None)
    return frozenset(n for n in names if n.isidentifier()), dynamic


def _snapshots(tree) -> bool:
    """Whether a method other than `__init__` returns something made from `self.__dict__`."""
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != "__init__":
            for node in ast.walk(fn):
                if isinstance(node, ast.Return) and node.value is not None \
                        and any(_self_dict(n) for n in ast.walk(node.value)):
                    return True
    return False


def _mentions(node, params: frozenset) -> bool:
    return any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(node))
