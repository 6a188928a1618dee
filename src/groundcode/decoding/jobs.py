"""The scheduler's jobs and what they report (a mixin of scheduler.Scheduler): a request in the
scheduler (`_Job`: its stream, prompt, rows, text streamed so far), a row's end of waits
(`_Ended`: its request cancelled or past its deadline), and events turned into stream updates
(`_route`), Generations (`_generation`), errors and the end of requests that never started.
Test: tests/test_session.py, tests/test_faults.py.
"""
from __future__ import annotations

import queue
import threading
import time

from ..errors import GroundcodeError
from .engine import FINAL, FINISHED, TOKEN, Prefill


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return msg[0] if isinstance(exc, GroundcodeError) and msg else \
        f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


def _drop(held) -> None:
    """Give back what a prefill or batch that failed holds (llama.cpp's sequences; nothing for
    torch's, whose tensors go with the object)."""
    drop = getattr(held, "drop", None)
    if drop is not None:
        drop()


class _Ahead:
    """A lookahead job's brief: the characters its row may not start with at the cursor, and how
    many more lookahead rows may follow it."""

    def __init__(self, chars: frozenset, left: int):
        self.chars, self.left, self.spawned = chars, left, False


class _Ended:
    """A row's `RowView.cancelled`: set when its request is cancelled (or preempted, or failed),
    and also once the request's deadline has passed — so a guide's analysis wait ends then, not
    only when the scheduler's next sweep could see it."""

    def __init__(self, event: threading.Event, deadline: float | None):
        self.event, self.deadline = event, deadline

    def set(self) -> None:
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set() or (self.deadline is not None and time.perf_counter() >= self.deadline)


_WAKE = object()            # a queue item that only wakes the scheduler (a preparation is done)


class _Job:
    """One request in the scheduler: its stream, prompt, rows and the text streamed so far."""

    def __init__(self, stream):
        self.stream = stream
        self.request = stream.request
        self.warm = stream.warm_only
        self.ahead: _Ahead | None = stream.ahead   # a lookahead job
        d = self.request.deadline_s
        self.deadline = None if d is None else stream.submitted + d
        self.rows: list = []
        self.prefill: Prefill | None = None
        self.prep = None                      # the preparation's future (prepare.py)
        self.gen = self.ctx = self.row_ctx = self.prompt = None
        self.final_text: list[str] = []       # per sample: the row's final text
        self.emitted: list[str] = []          # per sample: completion text streamed
        self.left = 0                         # samples still running
        self.failed = False
        self.t_admit = self.t_prefilled = self.t_first = None
        self.cells = 0                        # cells of a fixed-size cache it may take (scheduler)

    def expired(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline


class Records:
    def _generation(self, job: _Job, o, reason: str):
        from ..contract import Generation
        now = time.perf_counter()
        sub = job.stream.submitted
        ms = lambda a, b: round(1000 * (b - a), 3) if a is not None and b is not None else None  # noqa: E731
        triggers = list(o.triggers) if o is not None else []
        timings = {"queue_ms": ms(sub, job.t_admit), "prefill_ms": ms(job.t_admit, job.t_prefilled),
                   "first_token_ms": ms(sub, job.t_first), "decode_ms": ms(job.t_prefilled, now),
                   "analysis_ms": round(sum(float(t.analysis_ms or 0) for t in triggers), 3),
                   "total_ms": ms(sub, now)}
        text = job.ctx.insertion(job.row_ctx, o.completion) if o is not None and job.ctx is not None else ""
        return Generation(text, len(o.tokens) if o is not None else 0, round(now - sub, 4), reason,
                          triggers, self.gen.lm.name, bool(job.gen and job.gen.monitor.enabled and job.request.context is not None),
                          o.rollbacks if o is not None else 0,
                          prompt_tokens=len(job.prompt.ids) if job.prompt is not None else 0,
                          tokens_cached=job.prefill.cached if job.prefill is not None else 0,
                          truncated=job.prompt.truncated if job.prompt is not None else False,
                          timings=timings, stop=o.stop if o is not None else None,
                          drafted=o.drafted if o is not None else 0,
                          draft_accepted=o.draft_accepted if o is not None else 0)

    def _end_unstarted(self, job: _Job, reason: str) -> None:
        """A request that ends before its rows decoded (cancelled or expired while waiting or
        prefilling): every sample is done, empty."""
        from ..contract import DONE, Update
        n = 1 if job.warm else job.request.n
        for j in range(n):
            job.stream._push(Update(DONE, sample=j, result=self._generation(job, None, reason)))

    def _error(self, job: _Job, exc: BaseException) -> None:
        from ..contract import ERROR, Update
        job.failed = True
        job.stream._push(Update(ERROR, error=_one_line(exc)))

    def _fail_batch(self, exc: BaseException) -> None:
        jobs = {id(r.job): r.job for r in self.batch.rows}
        for job in jobs.values():
            if not job.failed:
                self._error(job, exc)
            for r in job.rows:                # their analysis waits end too
                if r.view.cancelled is not None:
                    r.view.cancelled.set()
        _drop(self.batch)                     # llama.cpp's sequences of the rows dropped
        self.batch = self._new_batch()

    def _fail_all(self, message: str) -> None:
        err = GroundcodeError(message)
        for r in self.batch.rows:
            if not r.job.stream.closed:
                self._error(r.job, err)
        if self._prefilling is not None:
            self._error(self._prefilling, err)
        for job in self._waiting:
            self._error(job, err)
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item is not None and item is not _WAKE:
                self._error(_Job(item), err)

    def _route(self, job: _Job, events: list) -> None:
        from ..contract import DONE, ERROR, TEXT, TRIGGER, Update
        s = job.stream
        for ev in events:
            j = ev.row[1]
            if ev.kind == TOKEN:
                if job.t_first is None:
                    job.t_first = time.perf_counter()
                if job.ahead is not None and not job.ahead.spawned:
                    self._look_ahead(job, job.rows[j].view.text)   # the next one, once this one's
                                                                   # start is known
            elif ev.kind == FINAL:
                job.final_text[j] += ev.text
                shown = job.ctx.insertion(job.row_ctx, job.final_text[j])
                delta = shown[len(job.emitted[j]):]
                if delta:
                    job.emitted[j] = shown
                    s._push(Update(TEXT, sample=j, text=delta))
                for t in ev.triggers:
                    s._push(Update(TRIGGER, sample=j, trigger=t))
            elif ev.kind == FINISHED:
                o = ev.output
                job.left -= 1
                if o.finish_reason != "error" and self.drafter is not None:
                    v = job.rows[j].view        # its raw tokens: the next keystroke's draft
                    cursor = len(job.row_ctx.before) + len(job.prompt.owed) if job.prompt is not None else 0
                    self.suggestions.add(job.row_ctx, v.tokens, v.text, v.ends,
                                         cursor + 1 if job.ahead is not None else 0)
                    if job.ahead is None and o.finish_reason not in ("cancelled", "deadline"):
                        self._look_ahead(job, v.text)
                if job.t_first is None and o.tokens:
                    job.t_first = time.perf_counter()
                if o.finish_reason == "error":
                    if not job.failed:
                        job.failed = True
                        s._push(Update(ERROR, sample=j, error=o.error))
                    continue
                if job.failed:
                    continue
                g = self._generation(job, o, o.finish_reason)
                if g.completion.startswith(job.emitted[j]):
                    delta = g.completion[len(job.emitted[j]):]
                    if delta:
                        s._push(Update(TEXT, sample=j, text=delta))
                    job.emitted[j] = g.completion
                final = {id(t) for t in job.rows[j].view.triggers[: job.rows[j].final_triggers]}
                for t in o.triggers:
                    if id(t) not in final:
                        s._push(Update(TRIGGER, sample=j, trigger=t))
                s._push(Update(DONE, sample=j, result=g))
