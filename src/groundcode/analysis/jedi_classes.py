"""Class inspection for the Jedi worker: can a receiver's member list be trusted, and which
members does its class create at run time that Jedi does not list?

    note, extra = class_facts(script, project, code, path, inferred)

`note` is a reason to fail open (None when the list can be trusted):
    "dynamic: X.__getattr__"             the class (or a non-stdlib module) answers unknown names
    "dynamic: X sets attributes at run time"  `setattr(self, <name>, ...)` with a name that cannot be
                                         known from the text, `self.__dict__[...] = `,
                                         `vars(self).update(...)`
    "unresolved base: B"                 a base class cannot be resolved: inherited members missing
`extra` are names that `setattr(self, "x", ...)` creates: a literal name, or a loop variable over
a literal tuple/list/set of strings (`for n in ("a", "b"): setattr(self, n, None)`). They are
members (a `self.a` after such a loop is no false block), and such a class is not "dynamic".

Runs inside the worker (jedi_worker.py); the Jedi objects come from there. Memoised per class
per worker (a class's text is fixed while the worker's overlay is; a class in the file being
written is memoised per text of that file: its facts must not depend on which splice asked
first). Test: tests/test_analysis.py.
"""
from __future__ import annotations

import ast
import hashlib
import re
import sys
import sysconfig
from pathlib import Path

_STDLIB = sysconfig.get_paths()["stdlib"]
_DYNAMIC_TEXT = re.compile(r"\b(?:self\.__dict__|vars\(self\))\.update\("
                           r"|\bself\.__dict__\[[^\]\n]*\]\s*=(?!=)|\bdef __getattr(?:ibute)?__\b")
_NOTES: dict = {}     # (module path, line, name) -> (note, extra names)


def reset() -> None:
    """Forget what was learnt (the overlay changed: a class's text may have)."""
    _NOTES.clear()


def is_dynamic(full_name: str, name: str) -> bool:
    """Does this `__getattr__`/`__getattribute__` make unknown names legal? Yes for classes
    (`argparse.Namespace`, `optparse.Values`, a repository's proxies) and for modules outside
    the standard library (lazy loaders); not for the standard library's `__getattribute__`
    (`object`'s, typeshed's `NoneType`) nor its modules' deprecation shims (`io.__getattr__`)."""
    parts = full_name.split(".")
    stdlib = parts[0] in sys.stdlib_module_names or parts[0] == "builtins"
    if not stdlib:
        return True
    if name == "__getattribute__":
        return "SimpleNamespace" in full_name
    return len(parts) > 2                     # Module.Class.__getattr__, not module.__getattr__


def class_facts(script, project, code: str, path: str, inferred: list) -> tuple[str | None, frozenset]:
    """(reason to fail open or None, names created by literal setattr) for the receiver whose
    inferred values are `inferred` (Jedi names)."""
    extra: set = set()
    for d in inferred:
        if d.type not in ("instance", "class") or d.module_path is None or d.line is None:
            continue
        note, more = _inspect_once(project, code, path, d)
        extra |= more
        if note:
            return note, frozenset(extra)
    return None, frozenset(extra)


def _inspect_once(project, code: str, path: str, d) -> tuple[str | None, frozenset]:
    """`_inspect`, memoised per class (cycle-safe: the key is set before inspecting)."""
    mp = str(d.module_path)
    own = Path(mp) == Path(path)      # the query's own (partial) text, not a fixed file
    text = hashlib.blake2s(code.encode("utf-8", "surrogatepass"), digest_size=8).digest() if own else None
    key = (mp, d.line, d.name, text)
    if key not in _NOTES:
        _NOTES[key] = (None, frozenset())
        _NOTES[key] = _inspect(project, code, path, d)
    return _NOTES[key]


def setattr_names(src: str) -> tuple[frozenset, bool]:
    """(literal names that `setattr(self, ...)` in `src` creates, whether some call's name
    cannot be known). `src` is a class's text (dedented or not)."""
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        unknown = bool(re.search(r"\bsetattr\(\s*self\s*,\s*[^'\"\s]", src))
        return frozenset(re.findall(r"\bsetattr\(\s*self\s*,\s*['\"](\w+)['\"]", src)), unknown
    names: set = set()
    unknown = False
    loops: dict[str, list] = {}

    def literal_strings(node) -> list | None:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return [e.value for e in node.elts]
        return None

    def visit(node, loops):
        nonlocal unknown
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            vals = literal_strings(node.iter)
            inner = dict(loops)
            if vals is not None:
                inner[node.target.id] = vals
            else:
                inner.pop(node.target.id, None)
            for child in node.body + node.orelse:
                visit(child, inner)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
            n = node.args[1]
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                names.add(n.value)
            elif isinstance(n, ast.Name) and n.id in loops:
                names.update(loops[n.id])
            else:
                unknown = True
        for child in ast.iter_child_nodes(node):
            visit(child, loops)

    visit(tree, loops)
    return frozenset(n for n in names if n.isidentifier()), unknown


def _inspect(project, code: str, path: str, d) -> tuple[str | None, frozenset]:
    """Dynamic attributes, literal setattr names or an unresolved base in the class `d` is."""
    import jedi
    mp = str(d.module_path)
    if mp.endswith(".pyi"):
        return None, frozenset()          # typeshed stubs: declared, and dynamic ones show __getattr__
    try:
        from .jedi_worker import source_text       # the overlay's buffer, else the disk
        text = code if Path(mp) == Path(path) else source_text(mp)
        (l0, _), (l1, c1) = d.get_definition_start_position(), d.get_definition_end_position()
    except Exception:
        return None, frozenset()
    lines = text.splitlines(keepends=True)
    src = "".join(lines[l0 - 1: l1 - (c1 == 0)])      # an end at column 0 is the next line's start
    extra: frozenset = frozenset()
    if not mp.startswith(_STDLIB):
        if _DYNAMIC_TEXT.search(src):
            return f"dynamic: {d.name} sets attributes at run time", frozenset()
        extra, unknown = setattr_names(src)
        if unknown:
            return f"dynamic: {d.name} sets attributes at run time", frozenset()
    first = lines[l0 - 1]
    indent = len(first) - len(first.lstrip())
    head, depth = "", 0
    for ch in "".join(lines[l0 - 1: l0 + 20])[indent:]:    # `class X(A, b.B):` up to its colon
        if ch == ":" and depth == 0:
            break
        depth += ch in "([{"
        depth -= ch in ")]}"
        head += ch
    try:
        node = ast.parse(head + ":\n    pass\n").body[0]
    except (SyntaxError, IndexError):
        return None, extra
    if not isinstance(node, ast.ClassDef):
        return None, extra
    from .jedi_worker import unsaved
    with unsaved(mp):                    # `text` may be the query's partial code
        return _bases(jedi.Script(text, path=mp, project=project), project, text, mp, node, l0, indent,
                      extra)


def _bases(module, project, text: str, mp: str, node, l0: int, indent: int, extra: frozenset):
    """An unresolved base (transitively) or the bases' literal setattr names, added to `extra`."""
    for b in node.bases:
        if not isinstance(b, (ast.Name, ast.Attribute)):
            continue
        try:
            found = module.infer(l0 + b.end_lineno - 1,
                                 b.end_col_offset - 1 + (indent if b.end_lineno == 1 else 0))
        except Exception:
            continue
        if not found:
            return f"unresolved base: {ast.unparse(b)}", extra
        for f in found:                  # and the bases' bases (cycle-safe: a key is set first)
            if f.type == "class" and f.module_path is not None and f.line is not None:
                note, more = _inspect_once(project, text, mp, f)
                extra = extra | more
                if note:
                    return note, extra
    return None, extra
