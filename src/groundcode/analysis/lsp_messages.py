"""What goes to a language server and what comes back, as plain functions (no process, no
loop; lsp_client.py sends and awaits them):

    edit(old, new)              -> the ranged didChange event that turns `old` into `new`
    language_id(path)           -> "python", "typescript", "typescriptreact", ...
    settings(section)           -> the answer to a server's workspace/configuration question
    members(result, after_dot, complete_members) -> (names, kinds, reason to fail open | None)
    signature(result)           -> a CallSignature, or None when it cannot be told for sure

Positions are UTF-16 columns (LSP's default encoding). Test: tests/test_lsp_messages.py.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from ..lines import end_position, line_start, next_break
from .base import CallSignature, ParamSpec

_MEMBER = re.compile(r"#?[A-Za-z_$][\w$]*")      # a member after a dot (TypeScript: `#items`)
_LANGUAGES = {".py": "python", ".pyi": "python", ".ts": "typescript", ".mts": "typescript",
              ".cts": "typescript", ".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript",
              ".cjs": "javascript", ".jsx": "javascriptreact"}


def utf16(line: str, index: int) -> int:
    """The UTF-16 column of Python index `index` in `line`."""
    return len(line[:index].encode("utf-16-le")) // 2


def language_id(path) -> str:
    return _LANGUAGES.get(Path(str(path)).suffix.lower(), "python")


def served(files, languages) -> list:
    """The (path, text) buffers in `languages` (a server's; None: all of them); a .tsx file is
    TypeScript's, a .jsx file JavaScript's."""
    return [f for f in files if not languages or language_id(f[0]).removesuffix("react") in languages]


def _position(text: str, index: int):
    """The LSP position of `index` (lines.py's LSP breaks: \r\n, \r, \n; UTF-16 columns)."""
    from lsprotocol import types as T
    line, col = end_position(text[:index])
    return T.Position(line=line - 1, character=utf16(text[index - col:index], col))


def edit(old: str, new: str):
    """The smallest whole-line range of `old` that differs from `new`, and its new text (whole
    lines, lines.py's: a cut never falls between a `\\r` and its `\\n`). A text with a lone `\\r` is
    sent whole all the same (kept conservative: a ranged change over one was not checked against
    every server; a whole text cannot be misplaced)."""
    from lsprotocol import types as T
    if "\r" in old.replace("\r\n", ""):
        return T.TextDocumentContentChangeWholeDocument(text=new)
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    start = line_start(old, p)                       # back to the line's start (same in both)
    end_old = len(old) - s
    nl = next_break(old, end_old)                     # on to the line's end (inside the common tail)
    grow = (nl[1] - end_old) if nl is not None else (len(old) - end_old)
    end_old += grow
    end_new = len(new) - s + grow
    return T.TextDocumentContentChangePartial(
        range=T.Range(start=_position(old, start), end=_position(old, end_old)),
        text=new[start:end_new])


def settings(section: str | None, paths=()):
    """A server's configuration question (pyright asks for `python` and `*.analysis`):
    groundcode's own interpreter, so the server never runs the repository's, and the extra
    search paths (a venv's site-packages, read as files); nothing else is set."""
    if section == "python":
        return {"pythonPath": sys.executable}
    if section in ("python.analysis", "basedpyright.analysis"):
        return {"extraPaths": list(paths)}
    return None


def _kinds():
    from lsprotocol import types as T
    K = T.CompletionItemKind
    return {K.Method: "function", K.Function: "function", K.Constructor: "function",
            K.Field: "instance", K.Variable: "instance", K.Property: "property",
            K.Class: "class", K.Interface: "class", K.Struct: "class", K.Enum: "class",
            K.Module: "module", K.Constant: "instance", K.EnumMember: "instance", K.Value: "instance",
            K.Unit: "instance", K.Event: "instance", K.TypeParameter: "class", K.Reference: "instance"}


def members(res, after_dot: bool, complete_members: bool, dunders: bool = True,
            object_members: bool = False) -> tuple[frozenset, dict, str | None]:
    """A completion answer as names with their kinds (Jedi's words); keywords, snippets and text
    items dropped. A list of `object`'s dunders only means the server does not know the type
    ("untyped"); an `isIncomplete` list is open unless the server lists every member after a dot;
    so is one whose default commit characters are none (a place for a new name: TypeScript's
    answer for a type with an index signature, where any name is legal). TypeScript's private
    names keep their `#` (`this.#items`: the name after the dot is `#items`, narrowing.name_run).
    `dunders`: Python's (a dunder after a dot is never forbidden); False for other languages.
    `object_members`: TypeScript's — `Object.prototype`'s members (OBJECT_MEMBERS), which the
    compiler accepts on any object type and its completions never list, are added likewise.
    At a name start, items offered with an import (TypeScript's auto-imports: 1,826 of 2,902 in
    one answer, `StatementSync` from node:sqlite among them) are not names in scope: dropped."""
    from lsprotocol import types as T
    if res is None:
        return frozenset(), {}, "empty"
    items = res.items if isinstance(res, T.CompletionList) else list(res)
    incomplete = bool(isinstance(res, T.CompletionList) and res.is_incomplete)
    kinds_of = _kinds()
    drop = {T.CompletionItemKind.Keyword, T.CompletionItemKind.Snippet, T.CompletionItemKind.Text}
    names, kinds = set(), {}
    for it in items:
        if it.kind in drop or not after_dot and _auto_import(it):
            continue
        label = it.label or ""      # `#items`: TypeScript filters it as `items`, writes it with its `#`
        m = _MEMBER.match(label if label.startswith("#") else it.filter_text or label)
        if m is None:
            continue
        n = m.group(0)
        names.add(n)
        kinds[n] = kinds_of.get(it.kind, "instance")
    if names and all(n.startswith("__") and n.endswith("__") for n in names):
        return frozenset(names), kinds, "untyped: only object's members"
    defaults = getattr(res, "item_defaults", None) if isinstance(res, T.CompletionList) else None
    if after_dot and defaults is not None and defaults.commit_characters is not None \
            and not len(defaults.commit_characters):
        # no commit character: a place for a new name (TypeScript: a type with an index
        # signature, `Record<string, T>`, takes any member name; its listed ones are not all)
        return frozenset(names), kinds, "open: the type takes any member name (index signature)"
    if incomplete and not (after_dot and complete_members):
        return frozenset(names), kinds, "incomplete: the server did not list every member"
    if not names:
        return frozenset(), kinds, "empty"
    if after_dot and dunders:   # servers list dunders unevenly (ty: no `__name__` after `self.__class__.`):
        names |= DUNDERS  # a dunder is never what a server's answer forbids
    if after_dot and object_members:     # `this.hasOwnProperty(k)`: legal, never listed
        names |= OBJECT_MEMBERS
    return frozenset(names), kinds, None


def _auto_import(it) -> bool:
    """An item offered with the import that would bring it (TypeScript's auto-imports: `data`
    names its module): not in scope where it is asked, so not a name that exists there."""
    data = it.data
    return isinstance(data, dict) and ("autoImport" in data or bool(data.get("source")))


# Object.prototype's members: TypeScript resolves them on every object type (the apparent type's
# base, `Object`), yet its member completions leave them out
OBJECT_MEMBERS = frozenset({"constructor", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable",
                            "toLocaleString", "toString", "valueOf"})


_MARK = re.compile(r"(?<![\w*])([*/])(?=\s*(?:[,)]|$))")
# what any object, class or module may have (a dunder after a dot is always let through)
DUNDERS = frozenset(n for n in dir(type) + dir(object) if n.startswith("__")) | {
    "__name__", "__qualname__", "__module__", "__dict__", "__doc__", "__file__", "__path__", "__all__",
    "__wrapped__", "__self__", "__func__", "__code__", "__defaults__", "__kwdefaults__", "__annotations__",
    "__slots__", "__version__", "__spec__", "__loader__", "__package__", "__builtins__", "__mro__",
    "__bases__", "__base__", "__subclasses__", "__weakref__", "__class__", "__len__", "__iter__",
    "__enter__", "__exit__", "__call__", "__getitem__", "__setitem__", "__contains__"}
_PARAM = re.compile(r"^(\*{0,2}|\.\.\.)([A-Za-z_$][\w$]*)\s*(\??)\s*(?::(?:[^=]|=>)*)?(=(?!>).*)?$", re.S)
# (`...rest`, `p?:` and `=>` in a type, never a default: TypeScript)


_VOID = re.compile(r"(?:^|\|)\s*void\s*(?:\||$)")   # TypeScript: a `void` parameter may be left out


def signature(res, typescript: bool = False) -> CallSignature | None:
    """signatureHelp's answer as what the call accepts: one signature, or several (overloads)
    that agree by position, merged (analysis/overloads.py); every parameter label must read as
    a Python parameter; `/` and a bare `*` mark positional-only and keyword-only parameters. None: not known for sure (also a
    signature without parameters: servers answer `() -> Any`, `(...) -> Unknown` or `Unknown`
    for a name they cannot resolve, which must not forbid every keyword; TypeScript's shows
    `isAllOf(): …` for a generic rest parameter inferred from no arguments). `typescript`: a
    first parameter named `self` or `cls` is a parameter, not Python's bound receiver, and one
    typed `void` (or a union with it: `resolve(value: void | PromiseLike<void>)`) may be left out."""
    if res is None or not res.signatures:
        return None
    read = [_one(sig, typescript) for sig in res.signatures]
    if len(read) == 1 or any(r is None for r in read):
        return read[0] if len(read) == 1 else None
    from .overloads import merge
    return merge(read)


def _one(sig, typescript: bool) -> CallSignature | None:
    """One signature of signatureHelp's answer read whole (None: it cannot be)."""
    label = sig.label
    if "(" not in label or not sig.parameters:
        return None          # no parameter list: servers show `() -> Any`, `(...) -> Unknown`
    head = re.findall(r"[A-Za-z_]\w*", label.split("(", 1)[0])
    name = head[-1] if head else "call"
    raw, cursor = [], label.find("(") + 1
    for p in sig.parameters or ():                # each label, and the text before it (a bare
        if isinstance(p.label, str):              # `*` or `/` a server did not list on its own)
            start = label.find(p.label, cursor)
            end = start + len(p.label) if start >= 0 else cursor
        else:
            start, end = p.label
        gap = label[cursor:start] if start >= cursor else ""
        raw.extend(m for m in _MARK.findall(gap))
        raw.append((p.label if isinstance(p.label, str) else label[start:end]).strip())
        cursor = max(cursor, end)
    close = label.find(")", cursor)
    raw.extend(_MARK.findall(label[cursor:close + 1 if close >= 0 else len(label)]))   # `(a, /)`
    params, var_pos, var_kw, kind = [], False, False, "either"
    for lab in raw:
        if lab == "/":
            params = [ParamSpec(q.name, "positional", q.required) for q in params]
            continue
        if lab == "*":
            kind = "keyword"
            continue
        m = _PARAM.match(lab)
        if m is None:
            return None
        stars, pname, optional, default = m.groups()
        if stars == "...":                    # TypeScript's rest parameter: any count more
            var_pos = True
        elif stars == "*":
            var_pos, kind = True, "keyword"
        elif stars == "**":
            var_kw = True
        else:
            void = typescript and _VOID.search(lab.split(":", 1)[1] if ":" in lab else "")
            params.append(ParamSpec(pname, kind, default is None and not optional and not void))
    if params and params[0].name in ("self", "cls") and not typescript:
        params = params[1:]
    return CallSignature(name, tuple(params), var_pos, var_kw)
