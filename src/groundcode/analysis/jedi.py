"""Jedi adapter — the only module that imports jedi.

`JediAnalyzer(repo)` answers member questions for the dereference monitor: the partial code is
placed into an in-memory copy of the target file (the user's files are never written), Jedi's
Project is the repository (so repo-level definitions resolve), results are cached by the caller's
key (file version, scope, receiver, ...), and every call has a deadline; a late or crashing call
fails open (empty names + the reason), counted by the caller.

Jedi runs in a worker *process* by default (`workers="process"`): it keeps its caches warm
there, runs truly beside the model (no GIL shared with the decoding loop), and a hung call can
be killed — the worker is restarted after `kill_after_s`. `workers="thread"` runs it in-process
on one thread (no start-up cost; used by tests that patch the call). The worker ignores SIGINT:
Ctrl-C reaches the whole foreground process group, and the parent, not the worker, decides what
an interrupt means (the CLI closes every live analyzer with `close_all()` and exits 130).

`repo_dependencies(...)` lists repository-level names used in a line range (for benchmarks).
Not here: deciding when to ask (decoding/guides/dereference.py).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import re
import signal
import sys
import sysconfig
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path

from .base import Analysis


def _jedi():
    import jedi
    return jedi


_PROJECTS: dict = {}


def _project(root: str | None):
    if root is None:
        return None
    p = _PROJECTS.get(root)
    if p is None:
        p = _PROJECTS[root] = _jedi().Project(root, added_sys_path=[root])
    return p


_DYNAMIC_TEXT = re.compile(r"\bsetattr\(\s*self\s*,\s*[^'\"\s]|\b(?:self\.__dict__|vars\(self\))\.update\("
                           r"|\bself\.__dict__\[[^\]\n]*\]\s*=(?!=)|\bdef __getattr(?:ibute)?__\b")


def _dynamic(full_name: str, name: str) -> bool:
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
_STDLIB = sysconfig.get_paths()["stdlib"]
_CLASS_NOTES: dict = {}     # (module path, line) -> fail-open reason or None, per worker


def _complete_retrying(root, code, path, line, column):
    """Jedi's Script and completions; once more if parso's shared disk cache was read while
    another process was writing it (parso writes its pickles in place: EOFError "Ran out of
    input" or an UnpicklingError; seen in 15 of 824 audit triggers with two runs at once)."""
    import pickle
    for attempt in (0, 1):
        try:
            script = _jedi().Script(code, path=path, project=_project(root))
            return script, script.complete(line, column)
        except (EOFError, pickle.UnpicklingError):
            if attempt:
                raise
            time.sleep(0.05)


def complete_members(root: str | None, code: str, path: str, line: int, column: int,
                     hide_private: bool, hide_dunder: bool = False) -> tuple[frozenset, dict, str | None]:
    """Members Jedi offers at (line, column) of `code` placed at `path` (runs in the worker), and
    a reason to fail open instead of trusting them (None when they can be trusted):

    "dynamic: ..."        the receiver's class answers unknown names (`__getattr__`, a custom
                          `__getattribute__`, `setattr(self, ...)`, `self.__dict__`): its members
                          cannot be listed;
    "unresolved base: X"  a base class of the receiver's class cannot be resolved, so its
                          inherited members are missing.

    Dunders are always returned (they exist and are legal to write: `self.__class__`);
    `hide_dunder` is kept for callers' suggestion lists and does not filter here."""
    script, completions = _complete_retrying(root, code, path, line, column)
    names: dict[str, str] = {}
    note = None
    for c in completions:
        n = c.name
        if c.type == "keyword":
            continue
        if n in ("__getattr__", "__getattribute__") and note is None:
            full = c.full_name or ""
            if _dynamic(full, n):
                note = f"dynamic: {full or n}"
        if hide_private and n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
            continue
        names[n] = c.type
    try:
        inferred = script.infer(line, column - 1) if column > 0 else []
    except Exception:
        inferred = []
    if note is None:
        note = _class_note(script, root, code, path, inferred)
    if names and all(n.startswith("__") and n.endswith("__") for n in names) and \
            not (inferred and all(d.type == "function" for d in inferred)):
        # Only object's dunders: None or an unknown type, not an answer (a function's
        # dunders are one: `self.method.append` is wrong)
        note = note or "empty"
    return frozenset(names), names, note


def _class_note(script, root, code: str, path: str, inferred: list) -> str | None:
    """Why the receiver (inferred as `inferred`) has members Jedi cannot list, or None."""
    for d in inferred:
        if d.type not in ("instance", "class") or d.module_path is None or d.line is None:
            continue
        note = _inspect_class_once(root, code, path, d)
        if note:
            return note
    return None


def _inspect_class_once(root, code: str, path: str, d) -> str | None:
    """`_inspect_class`, memoised per class (cycle-safe: the key is set before inspecting)."""
    key = (str(d.module_path), d.line, d.name)
    if key not in _CLASS_NOTES:
        _CLASS_NOTES[key] = None
        _CLASS_NOTES[key] = _inspect_class(root, code, path, d)
    return _CLASS_NOTES[key]


def _inspect_class(root, code: str, path: str, d) -> str | None:
    """Dynamic attributes or an unresolved base in the class that `d` (a Jedi name) is."""
    import ast
    mp = str(d.module_path)
    if mp.endswith(".pyi"):
        return None                       # typeshed stubs: declared, and dynamic ones show __getattr__
    try:
        text = code if Path(mp) == Path(path) else Path(mp).read_text(encoding="utf-8")
        (l0, _), (l1, _) = d.get_definition_start_position(), d.get_definition_end_position()
    except Exception:
        return None
    lines = text.splitlines(keepends=True)
    src = "".join(lines[l0 - 1: l1])
    if not mp.startswith(_STDLIB) and _DYNAMIC_TEXT.search(src):
        return f"dynamic: {d.name} sets attributes at run time"
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
        return None
    if not isinstance(node, ast.ClassDef):
        return None
    module = _jedi().Script(text, path=mp, project=_project(root))
    for b in node.bases:
        if not isinstance(b, (ast.Name, ast.Attribute)):
            continue
        try:
            found = module.infer(l0 + b.end_lineno - 1,
                                 b.end_col_offset - 1 + (indent if b.end_lineno == 1 else 0))
        except Exception:
            continue
        if not found:
            return f"unresolved base: {ast.unparse(b)}"
        for f in found:                  # and the bases' bases (cycle-safe: a key is set first)
            if f.type == "class" and f.module_path is not None and f.line is not None:
                note = _inspect_class_once(root, text, mp, f)
                if note:
                    return note
    return None


def warm_file(root: str | None, code: str, path: str) -> None:
    """Parse a file and infer its imports (runs in the worker)."""
    try:
        script = _jedi().Script(code, path=path, project=_project(root))
        script.get_names(all_scopes=False)
        lines = code.splitlines() or [""]
        script.complete(len(lines), len(lines[-1]))
    except Exception:
        pass


_LIVE: "weakref.WeakSet[JediAnalyzer]" = weakref.WeakSet()


def close_all() -> None:
    """Stop every live analyzer's worker (on Ctrl-C: the CLI exits without waiting for them)."""
    for analyzer in list(_LIVE):
        try:
            analyzer.close()
        except Exception:
            pass


def _ignore_sigint() -> None:
    """The worker's initializer: a terminal's Ctrl-C is the parent's to handle (no traceback here)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _main_not_imported():
    """Start spawn workers without re-running the caller's `__main__` (multiprocessing would,
    which breaks scripts that lack an `if __name__ == "__main__"` guard). The worker needs only
    this module."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {k: getattr(main, k) for k in ("__file__", "__spec__") if hasattr(main, k)}
    try:
        if "__file__" in saved:
            del main.__file__
        main.__spec__ = None
        yield
    finally:
        if "__file__" in saved:
            main.__file__ = saved["__file__"]
        if "__spec__" in saved:
            main.__spec__ = saved["__spec__"]


class JediAnalyzer:
    """Member completion with a repository project, a result cache and a per-call deadline."""

    def __init__(self, repo: str | Path | None, deadline_s: float = 2.0, hide_private: bool = False,
                 hide_dunder: bool = True, cache_size: int = 4096, workers: str = "process",
                 kill_after_s: float = 30.0, worker_fn=None, cold_deadline_s: float = 20.0):
        self.repo = Path(repo).resolve() if repo else None
        self._root = str(self.repo) if self.repo else None
        self.deadline_s = deadline_s
        self.hide_private = hide_private
        self.hide_dunder = hide_dunder
        self.workers = workers
        self.kill_after_s = kill_after_s
        # The first answer pays the worker's start, Jedi's import and the file's first parse
        # (seconds): it gets a longer deadline than the warm calls that follow.
        self.cold_deadline_s = max(cold_deadline_s, deadline_s)
        self._warm = False
        self.worker_fn = worker_fn or complete_members   # a module-level function (picklable)
        self._cache: OrderedDict[tuple, Analysis] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._inflight: dict[tuple, cf.Future] = {}   # key -> running call (prefetch or late)
        self._busy_since: float | None = None
        self._pool = self._new_pool()
        _LIVE.add(self)
        self.calls = 0
        self.timeouts = 0
        self.errors = 0
        self.restarts = 0

    def _new_pool(self):
        # One worker: Jedi is not thread-safe, and one warm process keeps one warm cache.
        if self.workers == "process":
            return cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"),
                                          initializer=_ignore_sigint)
        return cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="jedi")

    def close(self) -> None:
        """Stop the worker now (a busy or hung Jedi must not delay the caller's exit). The
        worker is killed first, then the pool is joined, so that no pool thread is left to
        touch the closed pipes at interpreter exit ("Bad file descriptor")."""
        pool = self._pool
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for proc in procs:
            proc.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        for proc in procs:
            proc.join(timeout=5)
        with self._lock:
            self._inflight.clear()

    def __enter__(self) -> "JediAnalyzer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def deadline_now(self) -> float:
        """The deadline a call gets now: the cold one until a first answer has landed."""
        return self.deadline_s if self._warm else self.cold_deadline_s

    def _run(self, fn, *args) -> cf.Future:
        with _main_not_imported():     # the worker process may start on this submit
            return self._pool.submit(fn, *args)

    def _call(self, code: str, path: Path, line: int, column: int) -> cf.Future:
        return self._run(self.worker_fn, self._root, code, str(path), line, column,
                         self.hide_private, self.hide_dunder)

    def _restart_if_hung(self) -> None:
        """A call that outlives kill_after_s blocks every later one: kill the worker."""
        if self.workers != "process" or not self._inflight:
            return
        oldest = min(getattr(f, "_gc_t0", time.perf_counter()) for f in self._inflight.values())
        if time.perf_counter() - oldest < self.kill_after_s:
            return
        old = self._pool
        self._pool = self._new_pool()
        self._inflight.clear()
        self.restarts += 1
        for proc in list((getattr(old, "_processes", None) or {}).values()):
            proc.kill()
        old.shutdown(wait=False, cancel_futures=True)

    def prewarm(self, code: str, path: Path) -> None:
        """Parse `path` and infer its imports in the background, so that the first trigger
        does not pay Jedi's cold start (0.3-2 s) inside its deadline."""
        key = ("prewarm", str(path))
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = Analysis("", frozenset())
            self._run(warm_file, self._root, code, str(path))

    def _submit(self, code: str, path: Path, line: int, column: int, key: tuple,
                receiver: str) -> cf.Future:
        """Start (or join) the call for `key`; its answer is cached whenever it lands."""
        with self._lock:
            fut = self._inflight.get(key)
            if fut is not None:
                return fut
            self._restart_if_hung()
            self.calls += 1
            fut = self._call(code, Path(path), line, column)
            fut._gc_t0 = time.perf_counter()
            self._inflight[key] = fut
        fut.add_done_callback(lambda f, k=key, r=receiver: self._landed(f, k, r))
        return fut

    def prefetch(self, code: str, path: Path, line: int, column: int, *, receiver: str,
                 cache_key: tuple) -> None:
        """Ask in the background; a later `members` with the same key finds the answer cached
        (or joins the running call)."""
        with self._lock:
            if cache_key in self._cache:
                return
        self._submit(code, path, line, column, cache_key, receiver)

    def submit(self, code: str, path: Path, line: int, column: int, *, receiver: str,
               cache_key: tuple) -> "Ticket":
        """Ask without waiting: the ticket holds the cached answer, or the running call."""
        with self._lock:
            hit = self._cache.get(cache_key)
            if hit is not None:
                self._cache.move_to_end(cache_key)
                return Ticket(self, Analysis(receiver, hit.names, 0.0, True, hit.failed, hit.kinds))
        return Ticket(self, None, self._submit(code, path, line, column, cache_key, receiver), receiver)

    def members(self, code: str, path: Path, line: int, column: int, *, receiver: str,
                cache_key: tuple) -> Analysis:
        """Ask and wait up to the deadline (the cold one for the first call); a late answer
        fails open now ("timeout") and is cached for the next trigger with the same key."""
        t0 = time.perf_counter()
        ticket = self.submit(code, path, line, column, receiver=receiver, cache_key=cache_key)
        a = ticket.result(self.deadline_now)
        if a is None:
            self.timeouts += 1
            return Analysis(receiver, frozenset(), (time.perf_counter() - t0) * 1e3, False, "timeout")
        return a

    def _broken(self) -> None:
        """The worker died: replace it (its running calls are lost, their callers fail open)."""
        with self._lock:
            self._pool = self._new_pool()
            self._inflight.clear()
            self.restarts += 1

    def _store(self, key: tuple, result: Analysis) -> None:
        with self._lock:
            self._cache[key] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _landed(self, fut: cf.Future, key: tuple, receiver: str) -> None:
        fut._gc_t1 = time.perf_counter()
        with self._lock:
            self._inflight.pop(key, None)
        try:
            names, kinds, failed = _answer(fut.result())
        except Exception:
            return
        self._store(key, Analysis(receiver, names, 0.0, False, failed, kinds))


class Ticket:
    """One analysis request: `result(timeout)` is its Analysis, or None while it runs
    (`timeout=0` polls without waiting; None waits for good). A crash fails open ("error")."""

    __slots__ = ("_owner", "_answer", "_fut", "_receiver")

    def __init__(self, owner: JediAnalyzer, answer: Analysis | None, fut: cf.Future | None = None,
                 receiver: str = ""):
        self._owner, self._answer, self._fut, self._receiver = owner, answer, fut, receiver

    def result(self, timeout: float | None = 0) -> Analysis | None:
        if self._answer is not None:
            return self._answer
        fut = self._fut
        try:
            if timeout == 0 and not fut.done():
                return None
            names, kinds, failed = _answer(fut.result(timeout=timeout))
            self._owner._warm = True
        except cf.TimeoutError:
            return None
        except Exception as exc:  # a Jedi crash must never kill generation: fail open
            self._owner.errors += 1
            if isinstance(exc, cf.process.BrokenProcessPool):
                self._owner._broken()
            names, kinds, failed = frozenset(), {}, f"error: {type(exc).__name__}: {exc}"[:200]
        t1 = getattr(fut, "_gc_t1", None) or time.perf_counter()
        self._answer = Analysis(self._receiver, names, (t1 - fut._gc_t0) * 1e3, False, failed, kinds)
        return self._answer


def _answer(result: tuple) -> tuple[frozenset, dict, str | None]:
    """(names, kinds, reason to fail open) from a worker's (names, kinds[, note])."""
    names, kinds = result[0], result[1]
    note = result[2] if len(result) > 2 else None
    return names, kinds, note or (None if names else "empty")


def _inside(path: str | None, root: Path) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(root)
        return True
    except ValueError:
        return False


def repo_dependencies(repo: str | Path, path: str | Path, code: str, first_line: int,
                      last_line: int) -> set[str]:
    """Full names of names/attributes used in lines [first_line, last_line] (1-based, inclusive)
    of `code` (the file's text as if saved at `path`) whose definitions lie inside `repo`.

    Definitions made inside the range itself (locals, parameters) do not count."""
    jedi = _jedi()
    root = Path(repo).resolve()
    project = jedi.Project(str(root), added_sys_path=[str(root)])
    script = jedi.Script(code, path=str(Path(path)), project=project)
    target = Path(path).resolve()
    deps: set[str] = set()
    for name in script.get_names(all_scopes=True, definitions=True, references=True):
        line = name.line
        if line is None or not (first_line <= line <= last_line) or name.is_definition():
            continue
        try:
            defs = script.goto(line, name.column, follow_imports=True)
        except Exception:
            continue
        for d in defs:
            mp = d.module_path
            if not _inside(str(mp) if mp else None, root):
                continue
            if mp and Path(mp).resolve() == target and d.line and first_line <= d.line <= last_line:
                continue  # defined inside the range: a local, not a repository dependency
            if d.type == "param":
                continue
            deps.add(d.full_name or f"{Path(mp).stem}.{d.name}")
    return deps


# -- augmentation (training/augment.py): "would completion at the start of this name offer it?"

def set_dynamic_inference(on: bool) -> bool:
    """Jedi's dynamic inference: searching call sites for the types of unannotated parameters
    and for list/set additions. On by default; off makes augmentation ~1.6x faster and changed
    0.6% of its marks on marshmallow (626 -> 622). Process-wide; returns the previous value."""
    s = _jedi().settings
    before = bool(s.dynamic_params)
    s.dynamic_params = s.dynamic_array_additions = s.dynamic_params_for_other_modules = on
    return before


def completion_names(root: str | None, code: str, path: str, line: int, column: int) -> frozenset:
    """Every name Jedi's completion offers at (line, column) of `code` (keywords excluded).

    The faithful, slow form of the augmentation question: one Script per call (~50-300 ms)."""
    script = _jedi().Script(code, path=path, project=_project(root))
    return frozenset(c.name for c in script.complete(line, column) if c.type != "keyword")


def offered_in_file(root: str | None, code: str, path: str,
                    queries: list[tuple[int, int, str, int]]) -> list[bool]:
    """For each query (line, column, name, region_end_line): would Jedi's completion at the
    start of `name` (at line, column of `code`) offer `name` if the code from that point to the
    end of its function (region_end_line) were not there yet?

    Fast form of `completion_names(...)` with only the code before the point: one Script for
    the whole file (one parse, one warm inference state for all queries), and for each query
    the lookup that Jedi's completion performs — the same filters, in the same user context —
    asking each filter for this one name (`filter.get`) instead of listing all names
    (`filter.values()`, which flow-checks every name in scope; that is where completion spends
    its time). Definitions that lie between the point and the end of the function are ignored:
    that code does not exist yet when the model writes the name. So:
      * after `expr.`  -> the members of the receiver's inferred values (as `complete_trailer`)
      * a keyword argument `f(key=`  -> resolved through the call's signature (`goto`)
      * after `def`, `class`, `as`, or inside an import statement -> not offered (no completion
        or a module name, never a dependency)
      * any other name -> the scopes visible at the point (as `_complete_global_scope`)
    Deviations from the slow form are measured in benchmarks/augment_speed.py."""
    from jedi.api.completion import get_flow_scope_node, get_user_context
    from jedi.inference.context import get_global_filters
    from jedi.inference.gradual.conversion import convert_values
    from jedi.inference.helpers import infer_call_of_leaf

    script = _jedi().Script(code, path=path, project=_project(root))
    module_node = script._module_node
    module_context = script._get_module_context()
    target = Path(path).resolve() if path else None
    out: list[bool] = []

    def later(name, pos: tuple[int, int], end_line: int) -> bool:
        tn = getattr(name, "tree_name", None)
        if tn is None:
            return False
        try:
            mp = name.get_root_context().py__file__()
        except Exception:
            mp = None
        if mp is None or target is None or Path(mp).resolve() != target:
            return False
        return pos <= tn.start_pos and tn.start_pos[0] <= end_line

    def any_kept(names, pos, end_line) -> bool:
        return any(not later(n, pos, end_line) for n in names)

    for line, column, name, end_line in queries:
        pos = (line, column)
        try:
            leaf = module_node.get_leaf_for_position(pos, include_prefixes=True)
            if leaf is not None and leaf.start_pos != pos:      # (a, b) ends where b starts
                nxt_leaf = leaf.get_next_leaf()
                if nxt_leaf is not None and nxt_leaf.start_pos == pos:
                    leaf = nxt_leaf
            if leaf is None or leaf.type != "name" or leaf.value != name or leaf.start_pos != pos:
                out.append(False)
                continue
            prev = leaf.get_previous_leaf()
            parent = leaf.parent
            if prev is not None and prev.value in ("def", "class", "as"):
                out.append(False)
                continue
            if parent is not None and (parent.search_ancestor("import_name", "import_from") is not None
                                       or parent.type in ("import_name", "import_from")):
                out.append(False)
                continue
            user_context = get_user_context(module_context, pos)
            if prev is not None and prev.value == "." and prev.type == "operator":
                receiver = prev.get_previous_leaf()
                context = module_context.create_context(receiver)
                values = infer_call_of_leaf(context, receiver)
                hit = False
                for v in list(values) + [c for c in convert_values(values) if c not in values]:
                    for f in v.get_filters(origin_scope=user_context.tree_node):
                        if any_kept(f.get(name), pos, end_line):
                            hit = True
                            break
                    if hit:
                        break
                out.append(hit)
                continue
            nxt = leaf.get_next_leaf()
            if parent is not None and parent.type == "argument" and parent.children[0] is leaf \
                    and nxt is not None and nxt.value == "=":
                names = script.goto(line, column)
                out.append(any(d.type == "param" for d in names))
                continue
            flow_scope_node = get_flow_scope_node(module_node, pos)
            hit = False
            for f in get_global_filters(user_context, pos, flow_scope_node):
                if any_kept(f.get(name), pos, end_line):
                    hit = True
                    break
            out.append(hit)
        except Exception:
            out.append(False)     # Jedi failed on this point: no mark (as a failed completion)
    return out
