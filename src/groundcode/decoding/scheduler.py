"""The session's scheduler thread (first cut: one request at a time over the engine)."""
from __future__ import annotations

import queue
import threading
import time

from ..errors import GroundcodeError


class Scheduler:
    def __init__(self, generator, max_rows: int = 16, prefix_cache_bytes: int = 512 << 20):
        self.gen = generator
        self.max_rows = max_rows
        self._q: queue.Queue = queue.Queue()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="groundcode-scheduler", daemon=True)
        self._thread.start()

    def put(self, stream) -> None:
        if self._stop:
            raise GroundcodeError("the session is closed")
        self._q.put(stream)

    def stats(self) -> dict:
        return {"waiting": self._q.qsize()}

    def close(self) -> None:
        self._stop = True
        self._q.put(None)
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        from ..session import DONE, ERROR, TEXT, Update
        while True:
            stream = self._q.get()
            if stream is None:
                return
            try:
                self._serve(stream, Update, TEXT, DONE)
            except GroundcodeError as exc:
                stream._push(Update(ERROR, error=str(exc)))
            except Exception as exc:       # a failing request ends its own stream only
                stream._push(Update(ERROR, error=f"{type(exc).__name__}: {exc}".splitlines()[0]))

    def _serve(self, stream, Update, TEXT, DONE) -> None:
        from ..api import Generation
        req = stream.request
        if getattr(stream, "warm_only", False):
            stream._push(Update(DONE, result=Generation("", 0, 0.0, "warm")))
            return
        gen = self.gen.view(req.monitor, req.tools, req.prompt)
        ctx = req.context
        t0 = time.perf_counter()
        specs, row_ctxs = gen.specs([ctx], req.sampling, req.n, [list(req.blocks)])
        run = gen.engine.stream(specs, req.sampling)
        for ev in run:
            if stream.cancelled.is_set():
                for s in specs:
                    run.cancel(s.id)
            if ev.kind == "finished":
                o = ev.output
                _, j = o.id
                text = ctx.insertion(row_ctxs[0], o.completion)
                g = Generation(text, len(o.tokens), round(time.perf_counter() - t0, 4), o.finish_reason,
                               list(o.triggers), gen.lm.name, gen.monitor.enabled, o.rollbacks,
                               prompt_tokens=len(specs[0].prompt_ids), stop=o.stop)
                if text:
                    stream._push(Update(TEXT, sample=j, text=text))
                stream._push(Update(DONE, sample=j, result=g))
