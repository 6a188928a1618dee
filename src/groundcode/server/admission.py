"""Admission: at most `limit` requests decode at once, at most `queue` more wait for a slot,
and any request beyond those is refused at once (HTTP 429). A waiting request gives up when
its deadline passes (also a 429: the server is busy, try again).

    adm = Admission(limit=2, queue=8)
    ticket = await adm.enter(timeout_s)     # raises Busy; ticket.release() exactly once
    adm.active, adm.waiting                 # for /health and the load benchmark

asyncio only (one event loop: no locks needed); knows nothing of HTTP.
Tested by tests/test_server_http.py (429 beyond the queue, no slot leaks after cancels).
"""
from __future__ import annotations

import asyncio
import time


class Busy(Exception):
    """No slot: the queue is full (`full=True`) or the wait outlived the deadline."""

    def __init__(self, message: str, full: bool):
        super().__init__(message)
        self.full = full


class Ticket:
    def __init__(self, adm: "Admission", waited_s: float):
        self._adm = adm
        self.waited_s = waited_s
        self._held = True

    def release(self) -> None:
        if self._held:              # idempotent: stream end, disconnect and errors may all call
            self._held = False
            self._adm._release()


class Admission:
    def __init__(self, limit: int, queue: int):
        if limit < 1 or queue < 0:
            raise ValueError("concurrency limit must be >= 1 and the queue >= 0")
        self.limit, self.queue = limit, queue
        self.active = 0
        self.waiting = 0
        self.rejected = 0
        self._slots: asyncio.Semaphore | None = None   # made in the serving loop

    async def enter(self, timeout_s: float | None) -> Ticket:
        t0 = time.perf_counter()
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        if self._slots.locked() and self.waiting >= self.queue:
            self.rejected += 1
            raise Busy(f"server busy: {self.active} requests running and {self.waiting} queued "
                       f"(--max-concurrency {self.limit}, --queue {self.queue}); retry later", True)
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), timeout_s)
        except asyncio.TimeoutError:
            self.rejected += 1
            raise Busy(f"server busy: no slot within the deadline ({timeout_s:.1f} s); retry "
                       "later", False) from None
        finally:
            self.waiting -= 1
        self.active += 1
        return Ticket(self, time.perf_counter() - t0)

    def _release(self) -> None:
        self.active -= 1
        self._slots.release()
