"""Where sharded batch work runs: in this process (LocalExecutor) or on Ray actors (RayExecutor).

    ex = make_executor("ray", address=None, workers=2)   # one-line GroundcodeError without ray
    for i, result in ex.map(Worker, {"cfg": cfg}, shards):  # (shard index, result) as shards finish
        ...
    ex.close()

A *worker* is a class built once per actor (LocalExecutor: once) with the keyword arguments given;
it holds the warm state (a Generator: model + analyzer) and is called once per shard,
`worker(shard) -> result`; its optional `close()` runs when the map ends. Shards are lists made by
`shard_by` (one per repository, in first-appearance order). Results come back as shards finish,
in any order: the callers (evaluation/sharded.py, training/augment.py, training/corpus.py,
retrieval/cli.py) put them back into the local path's order. Every shard, its worker's arguments
and its result travel through Ray's object store, so they must pickle; file paths in them must be
readable on every node (a shared filesystem, or the same cache layout).

This module is the only one that imports ray (an optional extra: `pip install 'groundcode[ray]'`).
Not here: what a shard does, merging, resuming. Test: tests/test_executor.py.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Callable, Iterable, Iterator

from .errors import GroundcodeError

KINDS = ("local", "ray")


def shard_by(items: Iterable, key: Callable) -> list[list]:
    """Items grouped by key(item): one shard per key, shards in first-appearance order, items in order."""
    shards: dict = {}
    for it in items:
        shards.setdefault(key(it), []).append(it)
    return list(shards.values())


def in_order(results: Iterable[tuple[int, object]]) -> Iterator[object]:
    """Results of executor.map in shard order, each as soon as every shard before it is in."""
    held, nxt = {}, 0
    for i, r in results:
        held[i] = r
        while nxt in held:
            yield held.pop(nxt)
            nxt += 1


class LocalExecutor:
    """Shards one after another in this process, with one worker (the sharded path without Ray)."""

    workers = 1

    def map(self, factory, kwargs: dict, shards: list) -> Iterator[tuple[int, object]]:
        if not shards:
            return
        w = factory(**kwargs)
        try:
            for i, s in enumerate(shards):
                yield i, w(s)
        finally:
            getattr(w, "close", lambda: None)()

    def close(self) -> None:
        pass


class _Host:
    """The Ray actor: one worker object, kept between shards (so its model and caches stay warm)."""

    def __init__(self, factory, kwargs):
        self.worker = factory(**kwargs)

    def run(self, shard):
        return self.worker(shard)

    def close(self):
        getattr(self.worker, "close", lambda: None)()


def _reachable(address: str | None, timeout_s: float = 5.0) -> None:
    """Fail in seconds on a HOST:PORT (or ray://HOST:PORT) nobody listens on: Ray itself retries for
    minutes. "auto" and None are left to Ray."""
    import socket
    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise GroundcodeError(f"--ray-address {address!r}: use HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise GroundcodeError(f"cannot reach Ray at {address}: {e.strerror or e}") from None


def _ray():
    try:
        import ray
    except ImportError:
        raise GroundcodeError("--executor ray needs Ray: pip install 'groundcode[ray]'") from None
    return ray


class RayExecutor:
    """`workers` actors (1 CPU each) on a Ray cluster; shards are handed to whichever actor is idle.

    address None starts a local Ray (all this machine's cores) unless ray.init was already called
    (a test's ray.init(num_cpus=2), a driver on the cluster); a Ray this executor started is shut
    down by close()."""

    def __init__(self, address: str | None = None, workers: int = 2):
        if workers < 1:
            raise GroundcodeError(f"--workers must be >= 1 (got {workers})")
        _reachable(address)
        ray = self.ray = _ray()
        self.workers = workers
        self._owned = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING,
                         log_to_driver=False)   # workers' own progress bars and logs stay in Ray's logs
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise GroundcodeError(f"cannot start or reach Ray at {address or 'a new local instance'}: "
                                      f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
            self._owned = True

    def map(self, factory, kwargs: dict, shards: list) -> Iterator[tuple[int, object]]:
        if not shards:
            return
        ray = self.ray
        host = ray.remote(num_cpus=1)(_Host)
        actors = [host.remote(factory, kwargs) for _ in range(min(self.workers, len(shards)))]
        idle, queue, running = list(actors), deque(enumerate(shards)), {}
        try:
            while queue or running:
                while idle and queue:
                    a = idle.pop()
                    i, shard = queue.popleft()
                    running[a.run.remote(shard)] = (i, a)
                (ref,), _ = ray.wait(list(running), num_returns=1)
                i, a = running.pop(ref)
                idle.append(a)
                yield i, self._get(ref)
            ray.get([a.close.remote() for a in actors])
        finally:
            for a in actors:
                ray.kill(a)

    def _get(self, ref):
        """The shard's result; a worker's GroundcodeError comes back as one line (any other error as
        Ray raises it, with the worker's traceback: a bug, not a user error)."""
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as e:
            if isinstance(getattr(e, "cause", None), GroundcodeError):
                raise GroundcodeError(str(e.cause)) from None
            raise
        except self.ray.exceptions.RayActorError as e:
            raise GroundcodeError(f"a Ray worker died (out of memory?): {str(e).strip().splitlines()[0]}") from e

    def close(self) -> None:
        if self._owned:
            self.ray.shutdown()
            self._owned = False


def make_executor(kind: str = "local", address: str | None = None, workers: int = 2):
    """The executor a command's --executor/--ray-address/--workers name; None for "local" (the command's
    own local path, unchanged)."""
    if kind not in KINDS:
        raise GroundcodeError(f"--executor must be local or ray (got {kind!r})")
    if kind == "local":
        if address:
            raise GroundcodeError("--ray-address needs --executor ray")
        return None
    return RayExecutor(address, workers)
