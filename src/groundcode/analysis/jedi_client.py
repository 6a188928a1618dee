"""The Jedi analyzer's client: a worker pool, tickets and an answer cache (see base.py).

    a = JediAnalyzer(repo, deadline_s=2.0, python=None, trust=False)   # see trust.py
    ticket = a.ask(MembersQuery(ctx.splice(text), "self", key))
    a.prewarm(ctx.splice("")); a.deadline(); a.close()

The partial code is analysed in memory (the user's files are never written); Jedi's Project is
the repository. Its environment (trust.py): `python` when the user named one, the repository's
virtual environment (`.venv`, `venv`, `env`) when the workspace is trusted; otherwise
groundcode's own interpreter with the repository venv's site-packages on the search path, read
as files, so installed libraries resolve without the repository's interpreter ever starting. Answers are cached under (kind, overlay stamp, the
caller's key): an open buffer that changes changes the stamp, so nothing stale is served. A late
answer is cached when it lands, for the next trigger with the same key; a failed prefetch is
not cached (it was a guess).

Jedi runs in one worker *process* by default (`workers="process"`): its caches stay warm there,
it runs beside the model (no GIL shared with decoding), and a hung call can be killed (the
worker is replaced after `kill_after_s`). `workers="thread"` runs it in-process on one thread.
A worker that dies is replaced once (the pool that broke, not whichever is current).
The worker runs one call at a time; the calls waiting for it are held here in two lines, a
trigger's own questions before the guesses (prefetches, prewarms): a real question never waits
behind the prefetches asked before it (a prefetch it joins is promoted); a guess asked `soon`
(a local just bound: its trigger is likely a line away) goes before the other guesses.
A SignatureQuery is answered from Jedi's signatures at the `(` (one signature read whole; none or
several, overloads: unknown), cached by the code and the cursor.
Not here: the worker's functions (jedi_worker.py), when to ask (decoding/guides/).
Test: tests/test_analysis.py.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import sys
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from . import working
from .base import (Analysis, Answered, CallSignature, MembersQuery, Overlay, ParamSpec, SignatureAnswer,
                   SignatureQuery, query_key)
from .isolated_spawn import isolated
from .jedi_worker import Job, call_signature, complete_members, init, init_process, warm_file

_NO_OVERLAY = Overlay()


_LIVE: "weakref.WeakSet[JediAnalyzer]" = weakref.WeakSet()


def close_all() -> None:
    """Stop every live analyzer's worker (on Ctrl-C: the CLI exits without waiting for them)."""
    for analyzer in list(_LIVE):
        try:
            analyzer.close()
        except Exception:
            pass


@contextlib.contextmanager
def _main_not_imported():
    """Start spawn workers without re-running the caller's `__main__` (multiprocessing would,
    which breaks scripts that lack an `if __name__ == "__main__"` guard). The worker needs only
    the jedi_worker module."""
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
    """Members and names from Jedi, with a repository project, a cache and a worker pool."""
    name = "jedi"
    pid = None                              # workers of groundcode's pool, not a server

    def __init__(self, repo: str | Path | None, deadline_s: float = 2.0, hide_private: bool = False,
                 hide_dunder: bool = True, cache_size: int = 4096, workers: str = "process",
                 kill_after_s: float = 30.0, worker_fn=None, cold_deadline_s: float = 20.0,
                 python: str | Path | None = None, trust: bool = False):
        from ..trust import environment
        self.repo = Path(repo).resolve() if repo else None
        self._root = str(self.repo) if self.repo else None
        env = environment(self.repo, python, trust)
        self.python, self.site_paths, self.trusted = env.python, env.site_paths, env.trusted
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
        self._signatures: OrderedDict[tuple, SignatureAnswer] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.RLock()     # re-entered when a call fails at once (_start)
        self._inflight: dict[tuple, cf.Future] = {}   # key -> running call (prefetch or late)
        self._urgent: list = []                       # waiting calls (fn, job, future): triggers'
        self._later: list = []                        # ... and guesses (prefetch, prewarm)
        self._busy = False                            # a call is in the worker
        self._running_since = 0.0
        self._warmed: set = set()
        self._sent: str | None = None                 # overlay stamp the current pool has
        self._closed = False
        self._pool = self._new_pool()
        _LIVE.add(self)
        self.calls = 0
        self.dropped = 0                              # queued questions of cancelled rows
        self.timeouts = 0
        self.errors = 0
        self.restarts = 0
        from .health import Health            # hung or dead workers, for /health
        self.health_state = Health("jedi", self.repo)

    def _new_pool(self):
        # One worker: Jedi is not thread-safe, and one warm process keeps one warm cache.
        self._sent = None
        if self.workers == "process":
            with isolated():           # its queues may start multiprocessing's resource tracker
                return cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"),
                                              initializer=init_process)
        return cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="jedi", initializer=init)

    # -- the interface --------------------------------------------------------------------------
    def deadline(self) -> float:
        """The deadline a call gets now: the cold one until a first answer has landed."""
        return self.deadline_s if self._warm else self.cold_deadline_s

    def ask(self, query):
        if isinstance(query, SignatureQuery):
            return self._ask_signature(query)
        kind, key = query_key(query, "JediAnalyzer")
        overlay = query.at.overlay or _NO_OVERLAY
        full = (kind, overlay.stamp, self.python, *key)
        with self._lock:
            hit = self._cache.get(full)
            if hit is not None:
                self._cache.move_to_end(full)
                return Answered(Analysis(query.receiver, hit.names, 0.0, True, hit.failed, hit.kinds,
                                         hit.hidden))
        guess = query.__class__ is MembersQuery and query.prefetch
        fut = self._submit(query.at, full, query.receiver, guess, guess and query.soon,
                           getattr(query, "ended", None))
        return JediTicket(self, fut, query.receiver)

    def _ask_signature(self, query):
        """The call's signature (jedi_worker.call_signature), cached by the code and the
        cursor; it waits behind the members questions (first of the guesses)."""
        import hashlib
        at = query.at
        overlay = at.overlay or _NO_OVERLAY
        digest = hashlib.blake2s(at.code.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        full = ("signature", overlay.stamp, self.python, digest, at.line, at.column)
        with self._lock:
            if full in self._signatures:
                return Answered(self._signatures[full])
            fut = self._inflight.get(full)           # the same question running: join it
            if fut is None:
                self._restart_if_hung()
                self.calls += 1
                # behind the members questions (a member trigger's answer gates its mask; a
                # signature only ever narrows a call's arguments): in the guesses' line
                fut = self._run(call_signature, self._job(at, overlay), urgent=False, soon=True)
                fut._gc_t0 = time.perf_counter()
                self._inflight[full] = fut
                fut.add_done_callback(lambda f: self._forget(full, f))
        return JediSignatureTicket(self, fut, full)

    def _forget(self, key: tuple, fut: cf.Future) -> None:
        with self._lock:
            if self._inflight.get(key) is fut:
                del self._inflight[key]

    def prewarm(self, at) -> None:
        """Parse `at.path` and infer its imports in the background, so that the first trigger
        does not pay Jedi's cold start (0.3-2 s) inside its deadline."""
        overlay = at.overlay or _NO_OVERLAY
        key = (str(at.path), overlay.stamp)
        with self._lock:
            if key in self._warmed:
                return
            self._warmed.add(key)
            fut = self._run(warm_file, self._job(at, overlay), urgent=False)
        fut.add_done_callback(self._prewarmed)

    def _prewarmed(self, fut: cf.Future) -> None:
        """A prewarm that ran to the end started the worker, imported Jedi and parsed the file:
        the cold deadline is spent, the next trigger gets the warm one."""
        if not fut.cancelled() and fut.exception() is None:
            self._warm = True

    def health(self) -> dict:
        """`{"status": "ok" | "degraded", "reason", ...}` (health.py): degraded after a worker
        was killed (hung) or died until a call is answered again, or while a call runs past
        the deadline."""
        h = self.health_state
        if self._busy and time.perf_counter() - self._running_since > self.deadline():
            h.busy("a call", time.monotonic() - (time.perf_counter() - self._running_since))
        else:
            h.idle()
        return h.report(self.deadline())

    def close(self) -> None:
        """Stop the worker now (a busy or hung Jedi must not delay the caller's exit). The
        worker is killed first, then the pool is joined, so that no pool thread is left to
        touch the closed pipes at interpreter exit ("Bad file descriptor")."""
        with self._lock:
            waiting, self._urgent, self._later = self._urgent + self._later, [], []
            self._closed = True       # the worker's death from here on is ours: not replaced
        for _, _, fut in waiting:
            fut.cancel()
        self._kill(self._pool, wait=True)
        with self._lock:
            self._inflight.clear()

    def __enter__(self) -> "JediAnalyzer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the pool ---------------------------------------------------------------------------
    @staticmethod
    def _kill(pool, wait: bool) -> None:
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for proc in procs:
            proc.kill()
        pool.shutdown(wait=wait, cancel_futures=True)
        if wait:
            for proc in procs:
                proc.join(timeout=5)

    def _job(self, at, overlay: Overlay) -> Job:
        """The worker's job; the overlay travels only when the pool has not seen its stamp
        (one worker, calls in order: a job's overlay is installed before the later ones run)."""
        send = None
        if overlay.stamp != self._sent:
            send, self._sent = (overlay.stamp, overlay.files), overlay.stamp
        return Job(self._root, at.code, str(at.path), at.line, at.column, self.python, send,
                   self.site_paths)

    def _run(self, fn, job: Job, urgent: bool = True, soon: bool = False) -> cf.Future:
        """Run `fn(job)` in the worker: now if it is idle, else in line (`urgent`: a trigger's
        question, ahead of every guess; `soon`: a guess ahead of the other guesses). Call with
        self._lock held."""
        fut = cf.Future()
        fut._gc_pool = self._pool
        if self._busy:
            # a job that installs an overlay keeps its place before every later job (they were
            # made without it): it waits in the urgent line
            if urgent or job.overlay is not None:
                self._urgent.append((fn, job, fut))
            elif soon:
                self._later.insert(0, (fn, job, fut))
            else:
                self._later.append((fn, job, fut))
        else:
            self._busy = True
            self._start(fn, job, fut)
        return fut

    def _start(self, fn, job: Job, fut: cf.Future) -> None:
        """Hand one call to the pool; when it is done, its answer goes to `fut` and the next
        waiting call starts (self._lock held, or taken by the done callback)."""
        pool = fut._gc_pool = self._pool
        self._running_since = time.perf_counter()
        working.started()                  # ended by _finished, which every call reaches
        try:
            with _main_not_imported(), isolated():   # the worker process may start on this submit
                # (isolated: `python -I`, nothing imported from the current directory)
                inner = pool.submit(fn, job)
        except Exception as exc:           # a broken or closed pool: this call fails open
            inner = cf.Future()
            inner.set_exception(exc)
        inner.add_done_callback(lambda f: self._finished(f, fut))

    def _next(self):
        """The next waiting call whose askers still want it (self._lock held): a question of
        rows that were all cancelled or preempted since is dropped, never run."""
        while self._urgent or self._later:
            line = self._urgent or self._later
            item = line.pop(0)
            ends = getattr(item[2], "_gc_ends", None)
            if ends and all(e is not None and e.is_set() for e in ends):
                item[2].cancel()
                self.dropped += 1
                for k, f in list(self._inflight.items()):
                    if f is item[2]:
                        del self._inflight[k]
                continue
            return item
        return None

    def _finished(self, inner: cf.Future, fut: cf.Future) -> None:
        working.ended()
        with self._lock:
            nxt = self._next()
            if nxt is None:
                self._busy = False
        try:
            try:
                fut.set_result(inner.result())
            except Exception as exc:
                fut.set_exception(exc)
        except cf.InvalidStateError:       # cancelled by close()
            pass
        if nxt is not None:
            with self._lock:
                self._start(*nxt)

    def _promote(self, fut: cf.Future) -> None:
        """A trigger asks what a waiting guess asks: it goes in the urgent line."""
        for k, item in enumerate(self._later):
            if item[2] is fut:
                self._urgent.append(self._later.pop(k))
                return

    def _restart_if_hung(self) -> None:
        """A call that outlives kill_after_s blocks every later one: kill the worker."""
        if self.workers != "process" or not self._busy:
            return
        if time.perf_counter() - self._running_since < self.kill_after_s:
            return
        old = self._pool
        self._pool = self._new_pool()
        self._inflight.clear()
        self.restarts += 1
        self.health_state.failed(f"a call ran past {self.kill_after_s:g} s: the worker was killed")
        self._kill(old, wait=False)

    def _submit(self, at, key: tuple, receiver: str, prefetch: bool, soon: bool = False,
                ended=None) -> cf.Future:
        """Start (or join) the call for `key`; its answer is cached whenever it lands. `ended`:
        the asking row's end (an Event): once every asker's is set, a call still waiting is
        dropped (`_next`)."""
        with self._lock:
            fut = self._inflight.get(key)
            if fut is not None:
                if not prefetch:
                    self._promote(fut)
                ends = getattr(fut, "_gc_ends", None)
                if ends is not None:
                    ends.append(ended)
                return fut
            self._restart_if_hung()
            self.calls += 1
            fut = self._run(self.worker_fn, self._job(at, at.overlay or _NO_OVERLAY), urgent=not prefetch,
                            soon=soon)
            fut._gc_t0 = time.perf_counter()
            fut._gc_ends = [ended]
            self._inflight[key] = fut
        fut.add_done_callback(lambda f: self._landed(f, key, receiver, prefetch))
        return fut

    def _broken(self, pool) -> None:
        """The worker of `pool` died: replace it if it is still the current one (its running
        calls are lost, their callers fail open); a later report of the same death is a no-op."""
        with self._lock:
            if pool is not self._pool or self._closed:
                return
            self._pool = self._new_pool()
            self._inflight.clear()
            self.restarts += 1
            self.health_state.failed("the worker process died: replaced")

    def _hidden(self, names) -> frozenset:
        if not self.hide_private:
            return frozenset()
        return frozenset(n for n in names if n.startswith("_") and not (n.startswith("__") and n.endswith("__")))

    def _landed(self, fut: cf.Future, key: tuple, receiver: str, prefetch: bool) -> None:
        fut._gc_t1 = time.perf_counter()
        with self._lock:
            if self._inflight.get(key) is fut:
                del self._inflight[key]
        try:
            names, kinds, failed = _answer(fut.result())
        except Exception:
            return
        if prefetch and failed is not None:
            return                      # a guess that failed: the real question asks again
        with self._lock:
            self._cache[key] = Analysis(receiver, names, 0.0, False, failed, kinds, self._hidden(names))
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


_RUNNING, _DONE, _FAILED = "running", "done", "failed"


def _settle(owner: JediAnalyzer, fut: cf.Future, timeout: float | None) -> tuple[str, object]:
    """A worker call's state for a ticket: (_RUNNING, None) while it runs (a timeout counted),
    (_DONE, its value), or (_FAILED, "error: …") where it raised — a Jedi crash must never kill
    generation: it fails open (counted; a broken pool is replaced)."""
    try:
        if timeout == 0 and not fut.done():
            return _RUNNING, None
        got = fut.result(timeout=timeout)
    except cf.TimeoutError:
        owner.timeouts += 1
        return _RUNNING, None
    except Exception as exc:                      # noqa: BLE001
        owner.errors += 1
        if isinstance(exc, BrokenProcessPool):
            owner._broken(getattr(fut, "_gc_pool", None))
        return _FAILED, f"error: {type(exc).__name__}: {exc}"[:200]
    owner._warm = True
    if owner.health_state.failures:
        owner.health_state.answered()
    return _DONE, got


class JediTicket:
    """A running Jedi call: `result(timeout)` is its Analysis, or None while it runs. A crash
    fails open ("error: ...")."""

    __slots__ = ("_owner", "_answer", "_fut", "_receiver")

    def __init__(self, owner: JediAnalyzer, fut: cf.Future, receiver: str = ""):
        self._owner, self._answer, self._fut, self._receiver = owner, None, fut, receiver

    def result(self, timeout: float | None = 0) -> Analysis | None:
        if self._answer is not None:
            return self._answer
        fut, owner = self._fut, self._owner
        state, got = _settle(owner, fut, timeout)
        if state == _RUNNING:
            return None
        if state == _DONE:
            names, kinds, failed = _answer(got)
        else:
            names, kinds, failed = frozenset(), {}, got
        t1 = getattr(fut, "_gc_t1", None) or time.perf_counter()
        self._answer = Analysis(self._receiver, names, (t1 - fut._gc_t0) * 1e3, False, failed, kinds,
                                owner._hidden(names))
        return self._answer


class JediSignatureTicket:
    """A running signature call: `result(timeout)` is a SignatureAnswer (signature None:
    unknown, with why), or None while it runs; a crash fails open."""

    __slots__ = ("_owner", "_fut", "_key", "_answer")

    def __init__(self, owner: JediAnalyzer, fut: cf.Future, key: tuple):
        self._owner, self._fut, self._key, self._answer = owner, fut, key, None

    def result(self, timeout: float | None = 0) -> SignatureAnswer | None:
        if self._answer is not None:
            return self._answer
        fut, owner = self._fut, self._owner
        state, got = _settle(owner, fut, timeout)
        if state == _RUNNING:
            return None
        if state == _FAILED:
            self._answer = SignatureAnswer(None, 0.0, got)
            return self._answer
        ms = (time.perf_counter() - fut._gc_t0) * 1e3
        if got[0] is None:
            self._answer = SignatureAnswer(None, ms, got[1])
        else:
            name, params, var_pos, var_kw = got
            sig = CallSignature(name, tuple(ParamSpec(n, k, r) for n, k, r in params), var_pos, var_kw)
            self._answer = SignatureAnswer(sig, ms, None)
        with owner._lock:
            owner._signatures[self._key] = SignatureAnswer(self._answer.signature, 0.0, self._answer.failed)
            if len(owner._signatures) > owner._cache_size:
                owner._signatures.popitem(last=False)
        return self._answer


def _answer(result: tuple) -> tuple[frozenset, dict, str | None]:
    """(names, kinds, reason to fail open) from a worker's (names, kinds[, note])."""
    names, kinds = result[0], result[1]
    note = result[2] if len(result) > 2 else None
    return names, kinds, note or (None if names else "empty")
