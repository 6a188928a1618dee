"""What the Jedi worker knows about a receiver besides its members: why an answer is empty, and
the code that asks about it as narrowed by an isinstance guard.

    why_empty(script, project, job, receiver, inferred) -> reason
        "empty"                        the receiver has a type (Jedi infers it) with no members
                                       to offer: a true miss of the analyzer (or Jedi infers only
                                       None: `self.x = None` first, the other assignments lost)
        "unresolved import: M"         its value comes (through assignments, `except ... as`,
                                       `with ... as`, up to 3 steps) from an import of module M
                                       that Jedi cannot resolve in the analyzer's environment
                                       (the package is not installed there); also for a receiver
                                       inferred only as None whose other assignments come so
        "untyped"                      Jedi infers nothing for it (no annotation, no assignment
                                       it can follow): the same situation as an unannotated
                                       parameter
    placeholder(inferred) -> reason | None
        "untyped: typing.Self"         Jedi infers a typing placeholder, not a type: `self.__class__`
                                       is `typing.Self` (typeshed's `type[Self]`), an instance of
                                       `_SpecialForm`, whose members are no answer
    narrowed_code(code, line, column, receiver, subject, cls) -> (code, column) | None
        the code with the receiver's `subject` replaced by `cls()`: Jedi completes there what a
        `cls` instance offers (a guard `isinstance(subject, cls)` holds: guards.py)

Runs inside the worker (jedi_worker.py), which hands in its Jedi objects. Only empty answers pay
for `why_empty` (a few `goto` calls). Test: tests/test_analysis.py.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..lines import split_lines            # Jedi's lines: \r\n, \r, \n (lines.py)

_IMPORT = re.compile(r"\s*(?:from\s+([\w.]+)\s+import\b|import\s+([\w.]+))")
_ASSIGN = re.compile(r"[\w.\s,()\[\]*]*?(?<![=!<>])=(?!=)\s*")     # after the name: ` = `
_AS = re.compile(r"\s*(?:except|(?:async\s+)?with)\s+\(?\s*")
_FOR = re.compile(r"\s*(?:async\s+)?for\s+[\w\s,()]+?\s+in\s+")


def receiver_at(code: str, line: int, column: int) -> str:
    """The receiver before the dot that ends at the cursor ("" if none)."""
    from ..pycode import receiver_before
    lines = split_lines(code)
    if not 0 < line <= len(lines) or column < 1:
        return ""
    text = lines[line - 1][:column]
    if not text.endswith("."):
        return ""
    return receiver_before(text, len(text) - 1)


_PLACEHOLDERS = {"typing.Self", "typing_extensions.Self", "typing._SpecialForm", "typing_extensions._SpecialForm"}


def placeholder(inferred: list) -> str | None:
    """"untyped: X" when a value Jedi infers for the receiver is a typing placeholder X."""
    for d in inferred:
        if (d.full_name or "") in _PLACEHOLDERS:
            return f"untyped: {d.full_name}"
    return None


def narrowed_code(code: str, line: int, column: int, receiver: str, subject: str,
                  cls: str) -> tuple[str, int] | None:
    lines = split_lines(code, keepends=True)      # the line keeps its own break
    if not 0 < line <= len(lines):
        return None
    text = lines[line - 1]
    start = column - 1 - len(receiver)
    if start < 0 or text[start: column - 1] != receiver or not receiver.startswith(subject):
        return None
    lines[line - 1] = text[:start] + f"{cls}()" + text[start + len(subject):]
    return "".join(lines), column + len(cls) + 2 - len(subject)


def why_empty(script, project, job, receiver: str, inferred: list) -> str:
    # Only None inferred (`self.x = None` first, its other assignments untypable for Jedi):
    # where those assignments come from an unresolved import, say so
    only_none = bool(inferred) and all(d.name == "None" or (d.full_name or "").endswith("NoneType")
                                       for d in inferred)
    if inferred and not only_none:
        return "empty"
    plain = bool(receiver) and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", receiver) is not None
    if not plain:
        return "empty" if inferred else "untyped"
    last = receiver.rsplit(".", 1)[-1]
    scripts = {str(job.path): (script, job.code)}
    left = [12]                                             # goto calls this question may make
    for col in (job.column - 1 - len(last), job.column - 1 - len(receiver)):   # last name, root
        module = _unresolved(scripts, project, str(job.path), job.line, col, 3, left)
        if module:
            return f"unresolved import: {module}"
    return "empty" if inferred else "untyped"


def _script(scripts: dict, project, mp: str):
    """(Script, text) of module `mp`, parsed once per question (at most 5 modules)."""
    if mp not in scripts:
        if mp.endswith(".pyi") or len(scripts) > 4:
            return None, None
        try:
            import jedi

            from .jedi_texts import source_text, unsaved
            text = source_text(mp)
            with unsaved(mp):
                scripts[mp] = (jedi.Script(text, path=Path(mp), project=project), text)
        except Exception:
            scripts[mp] = (None, None)
    return scripts[mp]


def _value_at(src: str, column: int, name: str) -> int | None:
    """Where the expression that gives the name defined at `column` of line `src` its value
    starts: `name = <expr>`, `except <expr> as name`, `with <expr> as name`, `for name in
    <expr>`; None for other definitions (parameters, defs, classes)."""
    m = _ASSIGN.match(src, column + len(name))
    if m:
        return m.end()
    if re.search(r"\bas\s*$", src[:column]):
        m = _AS.match(src)
        return m.end() if m else None
    m = _FOR.match(src)
    if m and m.end() > column:
        return m.end()
    return None


def _unresolved(scripts: dict, project, path: str, line: int, col: int, depth: int,
                left: list) -> str | None:
    """The module of an unresolved import that the name at (line, col) of `path` comes from."""
    script, _ = scripts[path]
    if depth <= 0 or script is None or left[0] <= 0:
        return None
    left[0] -= 1
    try:
        # an import Jedi cannot follow: nothing when followed, the import itself when not
        defs = script.goto(line, col, follow_imports=True) or script.goto(line, col)
    except Exception:
        return None
    for d in defs[:6]:
        if d.module_path is None or d.line is None:
            continue
        mp = str(d.module_path)
        _, text = _script(scripts, project, mp)
        lines = split_lines(text) if text is not None else []
        if not 0 < d.line <= len(lines):
            continue
        src = lines[d.line - 1]
        m = _IMPORT.match(src)
        if m:                           # goto stopped at the import: Jedi cannot resolve it
            return m.group(1) or m.group(2)
        rhs = _value_at(src, d.column, d.name)
        head = re.match(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*", src[rhs:]) if rhs is not None else None
        if head is None:
            continue
        # the value's leading dotted name (`self.config.validate(...)`): its last two names,
        # then its root (`tf` of `tf.compat.v1.summary.FileWriter(...)`)
        names = list(re.finditer(r"[A-Za-z_]\w*", head.group(0)))
        for name in dict.fromkeys(names[-1:-3:-1] + names[:1]):
            found = _unresolved(scripts, project, mp, d.line, rhs + name.start(), depth - 1, left)
            if found:
                return found
    return None
