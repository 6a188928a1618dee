"""Every request ends by its deadline (plus the server's grace second), whatever the session
does: `bounded(stream, end, t0, model)` yields the session stream's updates until `end`; a session
still silent then (a stalled step, another request's long prefill) is cancelled, and every
sample that has not ended ends here as the session would have ended it — "done", finish_reason
"deadline", with the text already sent (final text: grounded, never taken back) and the trigger
records sent — so a stream cut by its deadline never ends with an error event; a request that is
not streamed and decoded nothing is a 504 (service.Outcome.expired_empty).
Used by service.Service.updates. Test: tests/test_deadline_cut.py, tests/test_faults.py.
"""
from __future__ import annotations

import asyncio
import time


async def bounded(stream, end: float, t0: float, model: str):
    from ..contract import DONE, TEXT, TRIGGER, Update
    it = stream.aiter().__aiter__()
    n = max(1, int(getattr(stream.request, "n", 1) or 1))
    sent, triggers, done = [""] * n, [[] for _ in range(n)], [False] * n
    try:
        while True:
            left = end - time.perf_counter()
            try:
                u = await asyncio.wait_for(it.__anext__(), max(0.0, left))
            except StopAsyncIteration:
                return
            except asyncio.TimeoutError:
                stream.cancel()
                for j in range(n):
                    if not done[j]:
                        yield Update(DONE, sample=j, result=cut_by_deadline(sent[j], triggers[j], t0, model))
                return
            if 0 <= u.sample < n:
                if u.kind == TEXT:
                    sent[u.sample] += u.text
                elif u.kind == TRIGGER:
                    triggers[u.sample].append(u.trigger)
                elif u.kind == DONE:
                    done[u.sample] = True
            yield u
    finally:
        await it.aclose()


def cut_by_deadline(text: str, triggers: list, t0: float, model: str):
    """The Generation of a sample the session did not end by the deadline: what it sent."""
    from ..contract import Generation
    seconds = time.perf_counter() - t0
    return Generation(text, 0, round(seconds, 4), "deadline", list(triggers), model,
                      timings={"total_ms": round(seconds * 1e3, 3)})
