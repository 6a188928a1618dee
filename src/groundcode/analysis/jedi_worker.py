"""Jedi's side of the analyzer: the functions that run in the worker (a process by default).

    init()                     once per worker: its own parso cache directory, the overlay hook
    complete_members(job)      names completion offers at the job's cursor, and a reason to fail
                               open (jedi_classes.py; for no members, what Jedi knew:
                               jedi_receiver.py) or None; plus names created by literal setattr
                               or answered by a closed `__getattr__` (dynamic_attrs.py)
                               and, inside an isinstance guard (guards.py), the guard classes'
                               members
    warm_file(job)             parse the file and infer its imports (cold start off the clock)
    call_signature(job)        the parameters of the call opened just before the cursor (one
                               signature, or overloads that agree by position: merged)

A `Job` carries the code, the cursor, the project root, the Python environment and, when it
changed since the worker last saw it, the workspace's overlay of open buffers. Other modules'
text comes from the overlay instead of the disk: Jedi has no public hook for file contents, so
the worker wraps `InferenceState.parse_and_get_code` (every module Jedi parses goes through it)
to hand Jedi the buffer's text, stamped with the time the overlay was installed so that parso's
in-memory cache does not serve the disk's parse; entries of changed buffers are dropped from
that cache. A file that exists only as a buffer (never saved) is not importable.

A Script over text that is not the file at its path (a splice with the model's partial code,
the file with the cursor's region cut, a scored sample) must not become that module for later
Scripts: parso keeps the Script's parse in its in-memory cache under the path, stamped with the
file's mtime, and would hand it to every later import of the module in this process, so an
answer would depend on which question the process answered before (and a fresh process, a Ray
worker, would answer otherwise). `unsaved(path)` around such work marks that entry as older
than any file (`forget_parse`): it is still the base of the next diff parse of the path, never
an import's module. A buffer's parse is never pickled (the overlay hook parses with
`cache=False`): a pickle outlives the worker, and the next process given the same slot would load
it as the file's.

One parso cache directory per worker (`jedi.settings.cache_directory`): a directory slot under
the groundcode cache held with an exclusive lock for the worker's life, so two processes never
read each other's half-written pickles. The jedi_* modules are the only ones that import jedi.
Test: tests/test_analysis.py, tests/test_workspace.py.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class Job:
    root: str | None
    code: str
    path: str
    line: int
    column: int
    python: str | None = None                  # interpreter / venv for the project's libraries
    overlay: tuple | None = None               # (stamp, ((path, text), ...)) to install; None: keep
    site: tuple = ()                           # untrusted venv site-packages, read as files


_PROJECTS: dict = {}
from .jedi_texts import _OVERLAY, forget_parse, source_text, unsaved  # noqa: F401 (the worker's API)
from .jedi_texts import buffer as _buffer
_LOCK_FD: list = []
_READY: list = []


def _jedi():
    import jedi
    return jedi


def project(root: str | None, python: str | None = None, site: tuple = ()):
    """The Jedi project of a repository (its root, then `site`, on the path), with `python`'s
    environment when given and usable, else this process's own interpreter — never Jedi's
    default, which follows $VIRTUAL_ENV into whatever environment the shell activated (see
    trust.py: only a trusted or named interpreter may start). `site` directories are read as
    files: Jedi loads no compiled extension outside its environment's own paths
    (load_unsafe_extensions stays off)."""
    if root is None:
        return None
    key = (root, python, tuple(site))
    p = _PROJECTS.get(key)
    if p is None:
        import sys
        jedi = _jedi()
        paths = [root, *site]
        p = None
        if python:
            try:
                p = jedi.Project(root, added_sys_path=paths, environment_path=python)
                p.get_environment()
            except Exception:
                p = None                       # not a usable interpreter: this one
        _PROJECTS[key] = p = p or jedi.Project(root, added_sys_path=paths, environment_path=sys.executable)
    return p


def parso_cache_dir() -> Path:
    """A cache directory no other live worker uses: the first free slot under the groundcode
    cache (locked while this worker lives), else a fresh temporary directory."""
    import tempfile
    try:
        import fcntl

        from ..cache import cache_dir
        base = cache_dir() / "parso"
        for k in range(64):
            d = base / f"w{k}"
            d.mkdir(parents=True, exist_ok=True)
            fd = os.open(d / ".lock", os.O_CREAT | os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            _LOCK_FD.append(fd)
            return d
    except Exception:
        pass
    return Path(tempfile.mkdtemp(prefix="groundcode-parso-"))


def init_process() -> None:
    """A worker process's initializer: a terminal's Ctrl-C reaches the whole foreground process
    group, and the parent, not the worker, decides what it means (no traceback here)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    init()


def init() -> None:
    """Once per worker (the pool's initializer)."""
    if _READY:
        return
    _jedi().settings.cache_directory = str(parso_cache_dir())
    _install_overlay_hook()
    _tolerate_torn_pickles()
    _READY.append(True)


def _tolerate_torn_pickles() -> None:
    """A pickle in the worker's parso slot that does not load is a cache miss (and is removed):
    a worker killed while parso wrote one (a hung call, Ctrl-C, a killed run) left it torn, and
    every later worker given the slot failed each call that imported that module ("EOFError:
    Ran out of input"), failing those triggers open."""
    import pickle

    import parso.cache as pc
    load = pc._load_from_file_system
    if getattr(load, "_gc_tolerant", False):
        return

    def tolerant(hashed_grammar, path, p_time, cache_path=None):
        try:
            return load(hashed_grammar, path, p_time, cache_path=cache_path)
        except (EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError,
                ValueError, MemoryError):
            with contextlib.suppress(OSError):
                os.remove(pc._get_hashed_path(hashed_grammar, path, cache_path=cache_path))
            return None

    tolerant._gc_tolerant = True
    pc._load_from_file_system = tolerant


def _install_overlay_hook() -> None:
    from jedi.file_io import KnownContentFileIO
    from jedi.inference import InferenceState
    if getattr(InferenceState.parse_and_get_code, "_gc_overlay", False):
        return
    original = InferenceState.parse_and_get_code

    class BufferIO(KnownContentFileIO):
        def __init__(self, path, content, t):
            super().__init__(path, content)
            self._t = t

        def get_last_modified(self):
            return self._t

    def parse_and_get_code(self, code=None, path=None, use_latest_grammar=False, file_io=None, **kw):
        files = _OVERLAY["files"]
        if code is None and files:
            p = file_io.path if file_io is not None else path
            text = _buffer(p)
            if text is not None:
                file_io = BufferIO(p, text, _OVERLAY["t"])
                if kw.get("cache"):
                    # parso pickles every `cache=True` parse: a buffer's must never reach the
                    # disk (a later worker with this slot would load it as the file's). The
                    # in-memory entry stays the base of the diff parse (same lines: reused).
                    kw["cache"], kw["diff_cache"] = False, True
        return original(self, code, path, use_latest_grammar, file_io, **kw)

    parse_and_get_code._gc_overlay = True
    InferenceState.parse_and_get_code = parse_and_get_code


def set_overlay(stamp: str, files) -> None:
    """Install the workspace's open buffers; forget parses and class facts of changed files."""
    if stamp == _OVERLAY["stamp"]:
        return
    new = {str(p): t for p, t in files}
    old = _OVERLAY["files"]
    changed = {p for p in set(old) | set(new) if old.get(p) != new.get(p)}
    if changed:
        import hashlib

        import parso.cache
        for per_grammar in parso.cache.parser_cache.values():
            for p in changed:
                per_grammar.pop(Path(p), None)
                per_grammar.pop(p, None)
        folder = Path(_jedi().settings.cache_directory)
        for p in changed:                     # and any pickle of it (written before the hook)
            h = hashlib.sha256(p.encode("utf-8")).hexdigest()
            for f in folder.glob(f"*/*-{h}.pkl"):
                f.unlink(missing_ok=True)
        from . import jedi_classes
        jedi_classes.reset()
    _OVERLAY.update(stamp=stamp, files=new, t=time.time())


def _prepare(job: Job):
    init()
    if job.overlay is not None:
        set_overlay(*job.overlay)
    return project(job.root, job.python, job.site)


def complete_members(job: Job) -> tuple[frozenset, dict, str | None]:
    """Names Jedi offers at the job's cursor, their kinds, and a reason to fail open instead of
    trusting them (None when they can be trusted; see jedi_classes.py). Dunders are always
    returned (they exist and are legal to write: `self.__class__`); so are private names (the
    client marks them hidden with --hide-private: legal, never suggested)."""
    proj = _prepare(job)
    with unsaved(job.path):
        return _complete_members(job, proj)


def _complete_members(job: Job, proj) -> tuple[frozenset, dict, str | None]:
    from .guards import isinstance_guards
    from .jedi_receiver import narrowed_code, receiver_at, why_empty
    names, note, script, inferred = _members_at(job, proj)
    receiver = receiver_at(job.code, job.line, job.column)
    # an isinstance guard over the cursor: the guard's classes' members are members here too
    # (Jedi keeps the declared type of a typed receiver inside the branch)
    for subject, classes in isinstance_guards(job.code, job.line, job.column, receiver)[:2]:
        for cls in classes[:4]:
            alt = narrowed_code(job.code, job.line, job.column, receiver, subject, cls)
            if alt is None:
                continue
            more, why, _, typed = _members_at(replace(job, code=alt[0], column=alt[1]), proj)
            if why is not None and why.startswith("dynamic"):
                note = note or why          # it may be an instance that makes up names
            elif why is None and not _empty(more, typed):
                if note is not None and not note.startswith("dynamic"):
                    note = None             # typed by the guard: the declared type's gap is filled
                names = {**more, **names}
    if note is None and _empty(names, inferred):
        # Only object's dunders (or nothing): None or an unknown type, not an answer (a
        # function's dunders are one: `self.method.append` is wrong). Say what Jedi knew.
        note = why_empty(script, proj, job, receiver, inferred)
    return frozenset(names), names, note


def _empty(names: dict, inferred: list) -> bool:
    return all(n.startswith("__") and n.endswith("__") for n in names) and \
        not (names and inferred and all(d.type == "function" for d in inferred))


def _members_at(job: Job, proj) -> tuple[dict, str | None, object, list]:
    """(names and kinds, reason to fail open from class facts, the Script, the receiver's
    inferred values) at the job's cursor."""
    from .jedi_classes import class_facts, closed_getattr_names, is_dynamic
    from .jedi_receiver import placeholder
    script = _jedi().Script(job.code, path=job.path, project=proj)
    completions = script.complete(job.line, job.column)
    names: dict[str, str] = {}
    note = None
    lazy: frozenset = frozenset()      # names a closed `__getattr__` answers (numpy's submodules)
    for c in completions:
        n = c.name
        if c.type == "keyword":
            continue
        if n in ("__getattr__", "__getattribute__") and note is None:
            full = c.full_name or ""
            closed = closed_getattr_names(c, job.code, job.path) if n == "__getattr__" else None
            if closed is not None:
                lazy |= closed
            elif is_dynamic(full, n):
                note = f"dynamic: {full or n}"
        names[n] = c.type
    for n in lazy:
        names.setdefault(n, "statement")
    try:
        inferred = script.infer(job.line, job.column - 1) if job.column > 0 else []
    except Exception:
        inferred = []
    # `self.__class__` is typing.Self to Jedi: that placeholder's members (typing_extensions'
    # _SpecialForm, whose closed __getattr__ no longer fails open) are not the class's
    note = placeholder(inferred) or note
    if note is None:
        note, extra = class_facts(script, proj, job.code, job.path, inferred)
        for n in extra:
            names.setdefault(n, "statement")
    return names, note, script, inferred


def warm_file(job: Job) -> None:
    """Parse a file and infer its imports."""
    try:
        proj = _prepare(job)
        with unsaved(job.path):
            script = _jedi().Script(job.code, path=job.path, project=proj)
            script.get_names(all_scopes=False)
            from ..lines import end_position   # parso's breaks (\r\n, \r, \n), never splitlines
            script.complete(*end_position(job.code))
    except Exception:
        pass


_KINDS = {"POSITIONAL_ONLY": "positional", "POSITIONAL_OR_KEYWORD": "either", "KEYWORD_ONLY": "keyword"}


def call_signature(job: Job) -> tuple:
    """What the call whose `(` ends just before the job's cursor accepts, as Jedi reads it:
    (name, ((param, kind, required), ...), *args?, **kwargs?), else (None, why). Several
    signatures (overloads, a union of callables) are read as one where their parameters agree
    by position (analysis/overloads.py), else unknown, as one that cannot be read whole."""
    proj = _prepare(job)
    with unsaved(job.path):
        script = _jedi().Script(job.code, path=job.path, project=proj)
        sigs = script.get_signatures(job.line, job.column)
        if not sigs:
            return None, "no signature"
        read = [_signature(sig) for sig in sigs]
        failed = next((r for r in read if r[0] is None), None)
        if len(read) == 1 or failed is not None:
            return read[0] if len(read) == 1 else (None, f"overloads: {failed[1]}")
        from .base import CallSignature, ParamSpec
        from .overloads import merge
        m = merge([CallSignature(r[0], tuple(ParamSpec(*p) for p in r[1]), r[2], r[3]) for r in read])
        if m is None:
            return None, "overloads"
        return m.name, tuple((p.name, p.kind, p.required) for p in m.params), m.var_positional, m.var_keyword


def _signature(sig) -> tuple:
    """One of Jedi's signatures read whole: (name, params, *args?, **kwargs?), or (None, why)."""
    if _typing_base(sig):
        return None, "typing's constructor for its subclass"
    params, var_pos, var_kw = [], False, False
    for p in sig.params:
        kind = str(p.kind).rsplit(".", 1)[-1]
        name = p.name or ""
        if name.startswith("**"):          # a compiled callable's text signature: the
            kind = "VAR_KEYWORD"           # stars in the name, the kind left positional
        elif name.startswith("*"):
            kind = "VAR_POSITIONAL"
        if kind == "VAR_POSITIONAL":
            var_pos = True
        elif kind == "VAR_KEYWORD":
            var_kw = True
        elif not name.isidentifier():
            return None, f"parameter name {name!r}"
        elif kind in _KINDS:
            params.append((p.name, _KINDS[kind], not _has_default(p.to_string())))
        else:
            return None, f"parameter kind {kind}"
    if params and params[0][0] in ("self", "cls"):
        # Jedi left the receiver unbound (a classmethod through its class inside the class
        # body: pyopenssl's `_EllipticCurve._get_elliptic_curves(lib)` read as (cls, lib));
        # a classmethod's `cls` is never passed, an unbound `self` cannot be told apart
        if _decorated(sig, "classmethod") and params[0][0] == "cls":
            params = params[1:]
        else:
            return None, f"unbound {params[0][0]}"
    if len({p[0] for p in params}) != len(params):
        return None, "a parameter named twice"     # Jedi merged two signatures
    if not params and not var_pos and not var_kw and not _declares_none(sig):
        return None, "no parameters"     # often a guess: `NoneType()` for an attribute
                                         # whose default is None
    stars, own = _declared(sig)
    if {1, 2} <= stars and own is not None:
        # a `*args, **kwargs` wrapper (a decorator's `new_func`): what it requires is the wrapped
        # callable's as Jedi infers it, a guess (pypet's `my_param.f_get()` read as a
        # Trajectory's `f_get(name)`: 22 false blocks of the standing call audit)
        params = [(n, k, r and n in own) for n, k, r in params]
    return sig.name, tuple(params), var_pos or 1 in stars, var_kw or 2 in stars


def _typing_base(sig) -> bool:
    """Is this typing's own `NamedTuple`/`TypedDict` constructor, read for a class that
    subclasses it? Jedi reads gin's `class Location(typing.NamedTuple)` as `(typename, fields,
    /)`: the fields it takes are not there (60 false blocks of the standing call audit once
    its overloads were merged, session 40)."""
    try:
        node = sig._signature._function_value.tree_node
    except Exception:                       # another kind of signature, or another Jedi
        return False
    owner = node.search_ancestor("classdef") if node is not None else None
    return owner is not None and owner.name.value in ("NamedTuple", "TypedDict") and sig.name != owner.name.value


def _decorated(sig, name: str) -> bool:
    """Is the callee's own `def` decorated `@name`? (False where it cannot be read.)"""
    try:
        node = sig._signature.value.tree_node
    except Exception:                       # a compiled callable, or another Jedi
        return False
    return node is not None and node.type == "funcdef" and name in _decorators(node)


def _declares_none(sig) -> bool:
    """Is the callee an undecorated `def` of the source that declares no parameters (a method:
    none past its `self`/`cls`, and more than a stub)? Then no parameters is read, not guessed
    (sitetree's `get_tree_item_model()`, called with two arguments)."""
    try:
        node = sig._signature.value.tree_node
    except Exception:                       # a compiled callable, or another Jedi
        return False
    if node is None or node.type != "funcdef" or _decorators(node):
        return False
    names = [p.name.value for p in node.get_params()]
    owner = node.search_ancestor("classdef", "funcdef")
    if names and names[0] in ("self", "cls") and owner is not None and owner.type == "classdef":
        names = names[1:]
        if _stub(node):      # a hook its subclasses override with parameters (pyrser's
            return False     # `DirectiveWrapper.begin(self): pass`, called `begin(parser, *args)`)
    return not names and not any(p.star_count for p in node.get_params())


def _stub(node) -> bool:
    """Is the body of this `def` only a docstring, `pass`, `...` or `raise NotImplementedError`?"""
    import ast
    import textwrap

    from .. import pyparse
    try:
        body = pyparse.parse(textwrap.dedent(node.get_code().lstrip("\r\n"))).body[0].body
    except Exception:                       # partial code around it: not known to be one
        return False
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return all(isinstance(b, ast.Pass) or isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
               and b.value.value is Ellipsis or isinstance(b, ast.Raise) and "NotImplementedError" in ast.unparse(b)
               for b in body)


def _decorators(node) -> list[str]:
    """The decorators above a `def` (read from the lines above it: partial code in the file can
    break parso's `decorated` node)."""
    lines = node.get_root_node().get_code().splitlines()
    out, k = [], node.start_pos[0] - 2
    while 0 <= k < len(lines) and lines[k].strip().startswith("@"):
        out.append(lines[k].strip().lstrip("@").split("(")[0].strip())
        k -= 1
    return out


def _declared(sig) -> tuple[set, set | None]:
    """(star counts, names) of the parameters the callee's definition declares (its own `def`,
    or a class's own `__init__`/`__new__`; names None where it cannot be read): Jedi replaces
    `*args, **kwargs` by the parameters of the callable they are passed to, and drops them when
    that callable is unknown (swiftly's `spawn(self, ident, func, *args, **kwargs)` read as
    `spawn(ident, func)`)."""
    try:
        node = sig._signature.value.tree_node
    except Exception:                       # a compiled callable, or another Jedi
        return set(), None
    if node is None:
        return set(), None
    if node.type == "classdef":
        defs = [c for c in node.iter_funcdefs() if c.name.value in ("__init__", "__new__")]
        node = defs[0] if defs else None
    if node is None or node.type not in ("funcdef", "lambdef"):
        return set(), None
    params = node.get_params()
    return {p.star_count for p in params if p.star_count}, {p.name.value for p in params}


def _has_default(text: str) -> bool:
    """Does Jedi's `name: annotation=default` text have a default (a `=` outside brackets and
    strings: the annotation comes first and has none of its own)?"""
    depth, quote = 0, ""
    for c in text:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            return True
    return False
