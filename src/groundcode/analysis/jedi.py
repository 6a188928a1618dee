"""Jedi adapter — the only module that imports jedi.

`JediAnalyzer(repo)` answers member questions for the dereference monitor: the partial code is
placed into an in-memory copy of the target file (the user's files are never written), Jedi's
Project is the repository (so repo-level definitions resolve), results are cached by the caller's
key (file version, scope, receiver, ...), and every call has a deadline: Jedi runs on a worker
thread and a late or crashing call fails open (empty names + the reason), counted by the caller.

`repo_dependencies(...)` lists repository-level names used in a line range (for benchmarks).
Not here: deciding when to ask (decoding/guides/dereference.py).
"""
from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections import OrderedDict
from pathlib import Path

from .base import Analysis


def _jedi():
    import jedi
    return jedi


class JediAnalyzer:
    """Member completion with a repository project, a result cache and a per-call deadline."""

    def __init__(self, repo: str | Path | None, deadline_s: float = 2.0, hide_private: bool = False,
                 hide_dunder: bool = True, cache_size: int = 4096):
        jedi = _jedi()
        self.repo = Path(repo).resolve() if repo else None
        self.project = jedi.Project(str(self.repo), added_sys_path=[str(self.repo)]) if self.repo else None
        self.deadline_s = deadline_s
        self.hide_private = hide_private
        self.hide_dunder = hide_dunder
        self._cache: OrderedDict[tuple, Analysis] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        # One worker: Jedi is not thread-safe. A hung call blocks later calls, which then time
        # out and fail open too; a fresh pool replaces a hung one.
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="jedi")
        self._inflight: dict[tuple, cf.Future] = {}   # key -> running call (prefetch or late)
        self.calls = 0
        self.timeouts = 0
        self.errors = 0

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _complete(self, code: str, path: Path, line: int, column: int) -> tuple[frozenset, dict]:
        jedi = _jedi()
        script = jedi.Script(code, path=str(path), project=self.project)
        names: dict[str, str] = {}
        for c in script.complete(line, column):
            n = c.name
            if self.hide_dunder and n.startswith("__") and n.endswith("__"):
                continue
            if self.hide_private and n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
                continue
            if c.type == "keyword":
                continue
            names[n] = c.type
        return frozenset(names), names

    def prewarm(self, code: str, path: Path) -> None:
        """Parse `path` and infer its imports in the background, so that the first trigger
        does not pay Jedi's cold start (0.3-2 s) inside its deadline."""
        def warm():
            jedi = _jedi()
            try:
                script = jedi.Script(code, path=str(path), project=self.project)
                script.get_names(all_scopes=False)
                lines = code.splitlines() or [""]
                script.complete(len(lines), len(lines[-1]))
            except Exception:
                pass
        key = ("prewarm", str(path))
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = Analysis("", frozenset())
        self._pool.submit(warm)

    def _submit(self, code: str, path: Path, line: int, column: int, key: tuple,
                receiver: str) -> cf.Future:
        """Start (or join) the call for `key`; its answer is cached whenever it lands."""
        with self._lock:
            fut = self._inflight.get(key)
            if fut is not None:
                return fut
            self.calls += 1
            fut = self._pool.submit(self._complete, code, Path(path), line, column)
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
            names, kinds = fut.result(timeout=self.deadline_s)
            failed = None if names else "empty"
        except cf.TimeoutError:
            # Fail open now; the call goes on and its answer is cached for the next trigger
            # with the same key. A hung Jedi makes later calls time out too (counted).
            self.timeouts += 1
            return Analysis(receiver, frozenset(), (time.perf_counter() - t0) * 1e3, False, "timeout")
        except Exception as exc:  # a Jedi crash must never kill generation: fail open
            self.errors += 1
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
