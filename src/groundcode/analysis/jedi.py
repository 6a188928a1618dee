"""Jedi adapter — the only module that imports jedi.

`JediAnalyzer(repo)` answers member questions for the dereference monitor: the partial code is
placed into an in-memory copy of the target file (the user's files are never written), Jedi's
Project is the repository (so repo-level definitions resolve), results are cached by the caller's
key (file version, scope, receiver, ...), and every call has a deadline; a late or crashing call
fails open (empty names + the reason), counted by the caller.

Jedi runs in a worker *process* by default (`workers="process"`): it keeps its caches warm
there, runs truly beside the model (no GIL shared with the decoding loop), and a hung call can
be killed — the worker is restarted after `kill_after_s`. `workers="thread"` runs it in-process
on one thread (no start-up cost; used by tests that patch the call).

`repo_dependencies(...)` lists repository-level names used in a line range (for benchmarks).
Not here: deciding when to ask (decoding/guides/dereference.py).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import sys
import threading
import time
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


def complete_members(root: str | None, code: str, path: str, line: int, column: int,
                     hide_private: bool, hide_dunder: bool) -> tuple[frozenset, dict]:
    """Members Jedi offers at (line, column) of `code` placed at `path` (runs in the worker)."""
    script = _jedi().Script(code, path=path, project=_project(root))
    names: dict[str, str] = {}
    for c in script.complete(line, column):
        n = c.name
        if hide_dunder and n.startswith("__") and n.endswith("__"):
            continue
        if hide_private and n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
            continue
        if c.type == "keyword":
            continue
        names[n] = c.type
    return frozenset(names), names


def warm_file(root: str | None, code: str, path: str) -> None:
    """Parse a file and infer its imports (runs in the worker)."""
    try:
        script = _jedi().Script(code, path=path, project=_project(root))
        script.get_names(all_scopes=False)
        lines = code.splitlines() or [""]
        script.complete(len(lines), len(lines[-1]))
    except Exception:
        pass


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
        self.calls = 0
        self.timeouts = 0
        self.errors = 0
        self.restarts = 0

    def _new_pool(self):
        # One worker: Jedi is not thread-safe, and one warm process keeps one warm cache.
        if self.workers == "process":
            return cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
        return cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="jedi")

    def close(self) -> None:
        """Stop the worker now (a busy or hung Jedi must not delay the caller's exit)."""
        pool = self._pool
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)

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

    def members(self, code: str, path: Path, line: int, column: int, *, receiver: str,
                cache_key: tuple) -> Analysis:
        with self._lock:
            hit = self._cache.get(cache_key)
            if hit is not None:
                self._cache.move_to_end(cache_key)
                return Analysis(receiver, hit.names, 0.0, True, hit.failed, hit.kinds)
        t0 = time.perf_counter()
        fut = self._submit(code, path, line, column, cache_key, receiver)
        try:
            names, kinds = fut.result(timeout=self.deadline_s if self._warm else self.cold_deadline_s)
            failed = None if names else "empty"
            self._warm = True
        except cf.TimeoutError:
            # Fail open now; the call goes on and its answer is cached for the next trigger
            # with the same key. A hung Jedi makes later calls time out too (counted).
            self.timeouts += 1
            return Analysis(receiver, frozenset(), (time.perf_counter() - t0) * 1e3, False, "timeout")
        except Exception as exc:  # a Jedi crash must never kill generation: fail open
            self.errors += 1
            if isinstance(exc, cf.process.BrokenProcessPool):   # the worker died: replace it
                with self._lock:
                    self._pool = self._new_pool()
                    self._inflight.clear()
                    self.restarts += 1
            names, kinds, failed = frozenset(), {}, f"error: {type(exc).__name__}: {exc}"[:200]
        return Analysis(receiver, names, (time.perf_counter() - t0) * 1e3, False, failed, kinds)

    def _store(self, key: tuple, result: Analysis) -> None:
        with self._lock:
            self._cache[key] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _landed(self, fut: cf.Future, key: tuple, receiver: str) -> None:
        with self._lock:
            self._inflight.pop(key, None)
        try:
            names, kinds = fut.result()
        except Exception:
            return
        self._store(key, Analysis(receiver, names, 0.0, False, None if names else "empty", kinds))


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
