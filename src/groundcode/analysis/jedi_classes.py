"""Class inspection for the Jedi worker: can a receiver's member list be trusted, and which
members does its class create at run time that Jedi does not list?

    note, extra = class_facts(script, project, code, path, inferred)
    names = closed_getattr_names(completion, code, path)    # a closed `__getattr__`'s names

`note` is a reason to fail open (None when the list can be trusted):
    "dynamic: X.__getattr__"             the class (or a non-stdlib module) answers unknown names:
                                         its `__getattr__` is not closed (no source, a stub, or
                                         a return not guarded by a test of the name against
                                         string literals: dynamic_attrs.py)
    "dynamic: X sets attributes at run time"  `setattr(self, <name>, ...)` with a name that cannot be
                                         known from the text, `self.__dict__[...] = `,
                                         `vars(self).update(...)` (not inside `__setstate__`),
                                         or an open `__getattr__` / a `__getattribute__` in its text
    "unresolved base: B"                 a base class cannot be resolved: inherited members missing
`extra` are names that `setattr(self, "x", ...)` creates: a literal name, or a loop variable over
a literal tuple/list/set of strings (`for n in ("a", "b"): setattr(self, n, None)`), and the
names a closed `__getattr__` answers. They are members (a `self.a` after such a loop is no false
block), and such a class is not "dynamic".

Runs inside the worker (jedi_worker.py); the Jedi objects come from there. Memoised per class
per worker (a class's text is fixed while the worker's overlay is; a class in the file being
written is memoised per text of that file: its facts must not depend on which splice asked
first). Test: tests/test_analysis.py, tests/test_dynamic_attrs.py.
"""
from __future__ import annotations

import ast
import hashlib
import sys
import sysconfig
from pathlib import Path

from .dynamic_attrs import class_dynamics, getattr_names
from .. import pyparse

_STDLIB = sysconfig.get_paths()["stdlib"]
_NOTES: dict = {}     # (module path, line, name, text) -> (note, extra names); ("getattr", ...) -> names


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


def closed_getattr_names(c, code: str, path: str) -> frozenset | None:
    """The names the `__getattr__` Jedi names `c` answers when its source shows it closed
    (dynamic_attrs.py), else None (open, a stub's declaration, no source: `is_dynamic` decides).
    Memoised per definition (and per text of the file being written)."""
    mp, line = c.module_path, c.line
    if mp is None or line is None or str(mp).endswith(".pyi"):
        return None
    own = Path(mp) == Path(path)
    text = hashlib.blake2s(code.encode("utf-8", "surrogatepass"), digest_size=8).digest() if own else None
    key = ("getattr", str(mp), line, text)
    if key not in _NOTES:
        try:
            from .jedi_texts import source_text
            _NOTES[key] = getattr_names(code if own else source_text(str(mp)), line)
        except Exception:
            _NOTES[key] = None
    return _NOTES[key]


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


def _inspect(project, code: str, path: str, d) -> tuple[str | None, frozenset]:
    """Dynamic attributes, literal setattr names or an unresolved base in the class `d` is."""
    import jedi
    mp = str(d.module_path)
    try:
        from .jedi_texts import source_text       # the overlay's buffer, else the disk
        text = code if Path(mp) == Path(path) else source_text(mp)
        (l0, _), (l1, c1) = d.get_definition_start_position(), d.get_definition_end_position()
    except Exception:
        return None, frozenset()
    from ..lines import split_lines     # Jedi's lines (lines.py), never str.splitlines
    lines = split_lines(text, keepends=True)
    if mp.endswith(".pyi"):             # typeshed stubs: declared, and dynamic ones show __getattr__;
        return _stub_bases(project, text, mp, lines, l0, d), frozenset()   # but see _stub_bases
    src = "".join(lines[l0 - 1: l1 - (c1 == 0)])      # an end at column 0 is the next line's start
    extra: frozenset = frozenset()
    if not mp.startswith(_STDLIB):
        extra, unknown = class_dynamics(src)
        if unknown:
            return f"dynamic: {d.name} sets attributes at run time", frozenset()
    node, indent = _class_head(lines, l0)
    if node is None:
        return None, extra
    from .jedi_texts import unsaved
    with unsaved(mp):                    # `text` may be the query's partial code
        return _bases(jedi.Script(text, path=mp, project=project), project, text, mp, node, l0, indent,
                      extra)


def _class_head(lines: list, l0: int):
    """(the `class X(A, b.B):` statement at line l0 parsed with an empty body, its indent), or
    (None, indent) where it does not parse as a class."""
    first = lines[l0 - 1]
    indent = len(first) - len(first.lstrip())
    head, depth = "", 0
    for ch in "".join(lines[l0 - 1: l0 + 20])[indent:]:    # up to its colon
        if ch == ":" and depth == 0:
            break
        depth += ch in "([{"
        depth -= ch in ")]}"
        head += ch
    try:
        node = pyparse.parse(head + ":\n    pass\n").body[0]
    except (SyntaxError, IndexError):
        return None, indent
    return (node if isinstance(node, ast.ClassDef) else None), indent


def _stub_bases(project, text: str, mp: str, lines: list, l0: int, d) -> str | None:
    """A stub class whose base Jedi reads as the class itself lists none of that base's members:
    typeshed's `class socket(_socket.socket)` in socket.pyi, where Jedi maps the compiled
    `_socket.socket` back to `socket.socket`, so `sock.connect` and `sock.recv` were missing
    (a false block). Such a base is unresolved."""
    import jedi
    node, indent = _class_head(lines, l0)
    if node is None or not node.bases:
        return None
    module = None
    for b in node.bases:
        if not isinstance(b, (ast.Name, ast.Attribute)):
            continue
        module = module or jedi.Script(text, path=mp, project=project)
        found = _infer_base(module, b, l0, indent)
        if found and any(str(f.module_path) == mp and f.line == d.line for f in found):
            return f"unresolved base: {ast.unparse(b)} (read as {d.name} itself)"
    return None


def _infer_base(module, b, l0: int, indent: int) -> list | None:
    """What Jedi infers for base `b` of the class head parsed at line l0 (None: Jedi failed)."""
    try:
        return module.infer(l0 + b.end_lineno - 1,
                            b.end_col_offset - 1 + (indent if b.end_lineno == 1 else 0))
    except Exception:
        return None


def _bases(module, project, text: str, mp: str, node, l0: int, indent: int, extra: frozenset):
    """An unresolved base (transitively) or the bases' literal setattr names, added to `extra`."""
    for b in node.bases:
        if not isinstance(b, (ast.Name, ast.Attribute)):
            continue
        found = _infer_base(module, b, l0, indent)
        if found is None:
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
