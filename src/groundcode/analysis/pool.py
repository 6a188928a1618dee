"""The analyzers a Generator keeps warm, bounded: at most `limit` open at once (the least recently
used is closed first) and none left open once unused for `idle_s`.

    pool = AnalyzerPool(limit=6, idle_s=900)
    a = pool.get(key)                      # touched: now the most recently used
    pool[key] = analyzer                   # may close the least recently used ones (limit)
    pool.pin(key, analyzer)                # set_analyzer's: never closed by the pool
    pool.report()                          # [{name, root, pid, status, reason}, ...] (/health)
    summary(pool.report())                 # {"status": "ok" | "degraded", "degraded": [...]}
    pool.close()                           # every analyzer, now

Each analyzer is one process (a Jedi worker, a language server), so the bound on analyzers is
the bound on analyzer processes: an editor that opens twenty repositories in turn keeps at most
`limit` (before, one per root was kept for the life of the server). Closing runs on a
background thread (a language server's shutdown may take seconds; the scheduler never waits for
it); a row still holding a closed analyzer has its questions fail open at once. The idle check
runs on a daemon thread that wakes every `idle_s / 4` (at most a minute). Thread-safe.
Test: tests/test_analyzer_pool.py.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

DEFAULT_LIMIT = 6
DEFAULT_IDLE_S = 900.0


def _close_quietly(analyzers) -> None:
    for a in analyzers:
        try:
            a.close()
        except Exception:          # noqa: BLE001 (closing is best effort; each one is tried)
            pass


class AnalyzerPool:
    def __init__(self, limit: int = DEFAULT_LIMIT, idle_s: float = DEFAULT_IDLE_S):
        if limit < 1:
            raise ValueError(f"an analyzer pool needs limit >= 1, got {limit}")
        self.limit, self.idle_s = limit, idle_s
        self._lru: OrderedDict = OrderedDict()     # key -> (analyzer, last use, monotonic)
        self._pinned: dict = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self.closed = 0                            # analyzers the pool closed (limit or idle)

    # -- a dict's face (api.Generator's uses) ---------------------------------------------------
    def get(self, key, default=None):
        with self._lock:
            if key in self._pinned:
                return self._pinned[key]
            hit = self._lru.get(key)
            if hit is None:
                return default
            self._lru[key] = (hit[0], time.monotonic())
            self._lru.move_to_end(key)
            return hit[0]

    def __setitem__(self, key, analyzer) -> None:
        with self._lock:
            self._lru[key] = (analyzer, time.monotonic())
            self._lru.move_to_end(key)
            out = []
            while len(self._lru) > self.limit:
                _, (old, _) = self._lru.popitem(last=False)
                out.append(old)
            self._start_reaper()
        self._retire(out)

    def pin(self, key, analyzer) -> None:
        with self._lock:
            self._pinned[key] = analyzer

    def items(self) -> list:
        with self._lock:
            return list(self._pinned.items()) + [(k, v[0]) for k, v in self._lru.items()]

    def values(self) -> list:
        return [a for _, a in self.items()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru) + len(self._pinned)

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()
            self._pinned.clear()
            self._stop.set()

    def close(self) -> None:
        every = self.values()
        self.clear()
        _close_quietly(every)

    # -- what the pool closes ---------------------------------------------------------------------
    def _retire(self, analyzers) -> None:
        if analyzers:
            self.closed += len(analyzers)
            threading.Thread(target=_close_quietly, args=(analyzers,), name="groundcode-analyzer-close",
                             daemon=True).start()

    def sweep(self, now: float | None = None) -> int:
        """Close the analyzers unused for idle_s; how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            old = [k for k, (_, used) in self._lru.items() if now - used >= self.idle_s]
            out = [self._lru.pop(k)[0] for k in old]
        self._retire(out)
        return len(out)

    def _start_reaper(self) -> None:
        if self._reaper is not None or self.idle_s is None:
            return
        period = min(max(self.idle_s / 4, 0.05), 60.0)

        def run():
            while not self._stop.wait(period):
                self.sweep()
        self._reaper = threading.Thread(target=run, name="groundcode-analyzer-idle", daemon=True)
        self._reaper.start()

    # -- what /health says ------------------------------------------------------------------------
    def report(self) -> list[dict]:
        """Every analyzer, a chain's links apart: name, root, pid, and its health (ok when it
        cannot say)."""
        from .base import links
        out = []
        for key, a in self.items():
            for p in links(a):
                h = p.health() if hasattr(p, "health") else {"status": "ok", "reason": None}
                out.append({"name": getattr(p, "name", type(p).__name__), "root": str(key[0]),
                            "pid": getattr(p, "pid", None), "status": h["status"], "reason": h["reason"]})
        return out


def summary(report: list[dict]) -> dict:
    """/health's `analysis`: degraded while an analyzer's questions fail open (hung, flooding,
    crashing, restarting), each with its reason; the server itself stays up."""
    bad = [{"name": a["name"], "root": a["root"], "reason": a["reason"]} for a in report if a["status"] != "ok"]
    return {"status": "degraded" if bad else "ok", "degraded": bad}
