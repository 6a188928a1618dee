"""The session's scheduler: one thread owns the model and runs one loop over a running batch.

Each turn of the loop:
  1. intake    new requests from the queue (blocks only when there is nothing to do)
  2. sweep     cancelled requests and passed deadlines end at once (waiting, prefilling or
               decoding: their rows leave the batch in this turn)
  3. admit     the next waiting request is prepared (prompt, guides by name) and prefilled, one
               chunk per turn while other rows decode (all at once when the batch is empty);
               its rows then join the running batch (engine.Batch.add: left-padded merge of
               the KV cache); prompts reuse the prefix cache
  4. step      one decoding step of every row (engine.Batch.step), events routed to streams
  5. evict     finished rows leave and their KV columns are freed (engine.Batch.evict)
  6. feed      one forward for the rows that go on

Lookahead (`lookahead=k`, editor servers): when a cursor suggestion is done and no request is
waiting or running, up to k more rows of the same request run on idle time, each banned from
starting (at the cursor) with a character a suggestion there already starts with
(guides/another_start.py), so the model's next choices are at hand: a keystroke that types the
start of one finds it as its draft (decoding/drafts.py) and verifies it in one forward. Any
request that arrives ends every lookahead row at once (what they wrote so far is kept as a
suggestion); a lookahead row never delays a request by more than the forward under way.
Idle means the whole process: sessions in one process share its cores, so a request that
arrives at any of them ends every session's lookahead, and none is admitted while another
session has work.

Isolation: a guide that raises ends its row ("error"): the request's stream gets one "error"
update and its other samples are cancelled; other requests go on. A failing forward pass fails
the requests in the batch, not the session.
Not here: the step (engine.py), streams and requests (session.py). Test: tests/test_session.py.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from collections import deque

from ..errors import GroundcodeError
from .drafts import Drafter, Suggestions
from .engine import FINAL, FINISHED, PREFILL_CHUNK, TOKEN, Batch, Prefill, RowSpec
from .preempt import Preempted
from .prefix_cache import PrefixCache


def release_memory() -> None:
    """Return freed heap pages to the system (glibc's malloc_trim). A batch's KV cache is many
    large tensors; once freed, glibc keeps their pages in its arenas, so a server's resident
    memory would stay at its busiest level. Called when the batch goes idle; a no-op elsewhere."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes
            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None

# every live scheduler of the process (lookahead runs only while all of them are idle)
log = logging.getLogger("groundcode.session")
MAX_FAILED_TURNS = 5        # turns failing in a row before the session is declared dead


BUSY_SHARE = 0.5            # other processes using more than this share of the cores: no idle work
_BUSY = {"t": 0.0, "busy": False}


def _machine_busy() -> bool:
    """Other processes keep more than BUSY_SHARE of the machine's cores busy (sampled at most
    once a second: the system's CPU time since the last sample minus this process's)."""
    now = time.monotonic()
    if now - _BUSY["t"] < 1.0:
        return _BUSY["busy"]
    try:
        import os

        import psutil
        total = psutil.cpu_percent(None) / 100.0                   # share of all cores, since the last call
        ours = psutil.Process().cpu_percent(None) / 100.0 / (os.cpu_count() or 1)
        _BUSY["busy"] = _BUSY["t"] > 0 and total - ours > BUSY_SHARE
    except Exception:       # psutil missing: never "busy"
        _BUSY["busy"] = False
    _BUSY["t"] = now
    return _BUSY["busy"]


class SessionDead(GroundcodeError):
    """The session's loop stopped for good (servers answer 503)."""


_ALL: "weakref.WeakSet[Scheduler]" = weakref.WeakSet()
_ALL_LOCK = threading.Lock()


def _schedulers() -> list:
    with _ALL_LOCK:
        return list(_ALL)


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return msg[0] if isinstance(exc, GroundcodeError) and msg else \
        f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


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


class _Job:
    """One request in the scheduler: its stream, prompt, rows and the text streamed so far."""

    def __init__(self, stream):
        self.stream = stream
        self.request = stream.request
        self.warm = getattr(stream, "warm_only", False)
        self.ahead: _Ahead | None = getattr(stream, "ahead", None)   # a lookahead job
        d = self.request.deadline_s
        self.deadline = None if d is None else stream.submitted + d
        self.rows: list = []
        self.prefill: Prefill | None = None
        self.gen = self.ctx = self.row_ctx = self.prompt = None
        self.final_text: list[str] = []       # per sample: the row's final text
        self.emitted: list[str] = []          # per sample: completion text streamed
        self.left = 0                         # samples still running
        self.failed = False
        self.t_admit = self.t_prefilled = self.t_first = None

    def expired(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline


class Scheduler:
    def __init__(self, generator, max_rows: int = 16, prefix_cache_bytes: int = 512 << 20,
                 prefill_chunk: int | None = None, drafter: Drafter | None = None, lookahead: int = 0):
        self.gen = generator
        self.engine = generator.engine
        self.max_rows = max(1, int(max_rows))
        self.prefill_chunk = max(1, int(prefill_chunk or PREFILL_CHUNK))
        self.prefix_cache = PrefixCache(prefix_cache_bytes)
        self.drafter = drafter                # None: greedy rows decode one token per forward
        self.suggestions = Suggestions()      # the last suggestions: drafts for the next keystroke
        self.lookahead = max(0, int(lookahead)) if drafter is not None and prefix_cache_bytes > 0 else 0
        self._ahead: deque = deque(maxlen=4)  # lookahead jobs not yet admitted (newest kept)
        self._ahead_live: list = []           # lookahead jobs admitted and not yet ended
        self.ahead_counts = {"started": 0, "preempted": 0, "dropped": 0, "abandoned_forwards": 0}
        self._interrupted = threading.Event()  # a request arrived here or at another session
        self.batch = self._new_batch()
        self._q: queue.Queue = queue.Queue()
        self._waiting: deque = deque()
        self._prefilling: _Job | None = None
        self._closing = False
        self.dead: str | None = None          # why the loop stopped for good (None: serving)
        self.recovered = 0                    # turns that failed and were recovered from
        self._builders: dict = {}
        self._thread = threading.Thread(target=self._run, name="groundcode-scheduler", daemon=True)
        self._thread.start()
        with _ALL_LOCK:
            _ALL.add(self)

    # -- the back end (decoding/remote.py overrides these) ----------------------------------------
    def _new_batch(self):
        return Batch(self.engine, self.drafter)

    def _new_prefill(self, ids: list[int]):
        return Prefill(self.engine, ids, self.prefix_cache, self.prefill_chunk)

    # -- outside the thread -------------------------------------------------------------------
    def put(self, stream) -> None:
        if self.dead is not None:
            raise SessionDead(f"the session stopped: {self.dead}")
        if self._closing:
            raise GroundcodeError("the session is closed")
        self._q.put(stream)
        if self.dead is not None or not self._thread.is_alive():
            # it died (or was closed) between the check and the put: this stream is answered
            # here, since nobody else will (its item may or may not have been failed already)
            self._fail_all(f"the session stopped: {self.dead or 'closed'}")
        for sched in _schedulers():          # every session's lookahead gives way
            sched._interrupt()

    def _interrupt(self) -> None:
        """(Any thread.) End the lookahead rows now — a wait on analysis included; the scheduler
        thread counts them at its next turn."""
        live = list(self._ahead_live)
        for job in live:
            job.stream.cancelled.set()
        if live or self._ahead:
            self._interrupted.set()

    def _busy(self) -> bool:
        """(Any thread; approximate.) Requests here, waiting or running (lookahead aside)."""
        p = self._prefilling
        return bool(self._waiting) or not self._q.empty() or (p is not None and p.ahead is None) \
            or any(r.job.ahead is None for r in list(self.batch.rows))

    def stats(self) -> dict:
        return {"rows": len(self.batch.rows), "waiting": self._q.qsize() + len(self._waiting),
                "columns": self.batch.columns, "kv_bytes": self.batch.nbytes,
                "prefix_cache": self.prefix_cache.stats(),
                "lookahead": dict(self.ahead_counts, queued=len(self._ahead),
                                  running=sum(not j.stream.closed for j in self._ahead_live))}

    def close(self) -> None:
        with _ALL_LOCK:
            _ALL.discard(self)
        self._closing = True
        self._q.put(None)
        self._thread.join(timeout=60)

    # -- the loop -----------------------------------------------------------------------------
    def _run(self) -> None:
        """The loop: every turn is guarded. An unexpected error fails the rows and the request
        being prepared or prefilled (their streams get an error, their KV memory is dropped) and
        the loop goes on; MAX_FAILED_TURNS failures in a row mean it cannot, and the session is
        dead (`dead` says why: submit raises, servers answer 503)."""
        import torch
        failed = 0
        self.engine.preemptible(self._idle_work_gives_way)
        try:
            with torch.inference_mode():
                while True:
                    try:
                        if not self._turn():
                            break
                        failed = 0
                    except Preempted:         # a lookahead forward gave way to a request
                        self._drop_idle_work()
                    except Exception as exc:  # noqa: BLE001 (every error: the loop must not die)
                        failed += 1
                        self.recovered += 1
                        log.error("scheduler turn failed (%d in a row): %s", failed, _one_line(exc))
                        try:
                            self._recover(exc)
                        except Exception as again:    # noqa: BLE001
                            failed = MAX_FAILED_TURNS
                            exc = again
                        if failed >= MAX_FAILED_TURNS:
                            self.dead = _one_line(exc)
                            break
        except BaseException as exc:          # noqa: BLE001 (the thread itself is going down)
            self.dead = self.dead or _one_line(exc)
            raise
        finally:
            if self.dead is None and not self._closing:
                self.dead = "the scheduler stopped"
            self._fail_all(f"the session stopped: {self.dead}" if self.dead else "the session was closed")

    def _idle_work_gives_way(self) -> bool:
        """(Between two layers of a forward, on this thread.) True when a request arrived and
        the forward under way is idle work only: it is abandoned (preempt.py)."""
        if not self._interrupted.is_set():
            return False
        p = self._prefilling
        return (p is None or p.ahead is not None) and all(r.job.ahead is not None for r in self.batch.rows) \
            and (p is not None or bool(self.batch.rows))

    def _drop_idle_work(self) -> None:
        """A lookahead forward was abandoned: its rows and its prefill end (their KV is partial)."""
        jobs = {id(r.job): r.job for r in self.batch.rows}
        if self._prefilling is not None:
            jobs[id(self._prefilling)] = self._prefilling
            self._prefilling = None
        for job in jobs.values():
            if not job.stream.closed:
                self.ahead_counts["preempted"] += 1
                job.stream.cancel()
                self._end_unstarted(job, "cancelled")
        self.ahead_counts["abandoned_forwards"] = self.ahead_counts.get("abandoned_forwards", 0) + 1
        self.batch = self._new_batch()
        self._ahead_live = []

    def _recover(self, exc: BaseException) -> None:
        """After a failed turn: the running rows and the job in preparation or prefill fail
        (their requests get the error), the batch and its cache are dropped; waiting requests
        stay queued."""
        job, self._prefilling = self._prefilling, None
        if job is not None and not job.failed:
            self._error(job, exc)
        self._fail_batch(exc)
        self._ahead_live = [j for j in self._ahead_live if not j.stream.closed]

    def _turn(self) -> bool:
        # -- 1. intake ----------------------------------------------------------------------------
        idle = not self.batch.rows and not self._waiting and self._prefilling is None and not self._ahead
        arrived = False
        try:
            item = self._q.get(block=idle)
            while True:
                if item is None:
                    return False
                self._waiting.append(_Job(item))
                arrived = True
                item = self._q.get_nowait()
        except queue.Empty:
            pass
        if (arrived or self._interrupted.is_set()) and (self._ahead or self._ahead_live):
            self._preempt()
        self._interrupted.clear()
        # -- 2. sweep -----------------------------------------------------------------------------
        now = time.perf_counter()
        for job in [j for j in self._waiting if j.stream.cancelled.is_set() or j.expired(now)]:
            self._waiting.remove(job)
            self._end_unstarted(job, "deadline" if job.expired(now) else "cancelled")
        swept = False
        for r in list(self.batch.rows):
            job = r.job
            if r.live and (job.stream.cancelled.is_set() or job.failed or job.expired(now)):
                r.view.cancelled.set()
                self._route(job, [self.batch.cancel(r, "deadline" if job.expired(now) else "cancelled")])
                swept = True
        if swept:
            self.batch.evict()                # their cache leaves before a new prompt merges in
        # -- 3. admit -----------------------------------------------------------------------------
        self._admit()
        # -- 4. step, 5. evict, 6. feed -------------------------------------------------------------
        if self.batch.rows:
            for job in {id(r.job): r.job for r in self.batch.rows}.values():
                if job.gen is not None:
                    job.gen.waits.new_step()  # a wait window lasts one step (analysis/wait.py)
            try:
                events = self.batch.step()
            except Exception as exc:          # the model or the batch itself failed
                self._fail_batch(exc)
                return True
            self._dispatch(events)
            self.batch.evict()
            if not self.batch.rows and not self._waiting and self._prefilling is None:
                release_memory()              # idle: give freed KV pages back to the system
            if self.batch.rows:
                try:
                    self.batch.feed()
                except Preempted:
                    raise                     # idle work only: _run drops it
                except Exception as exc:
                    self._fail_batch(exc)
        return True

    def _dispatch(self, events: list) -> None:
        by_job: dict = {}
        for ev in events:
            job = ev.row[0]
            by_job.setdefault(id(job), (job, []))[1].append(ev)
        for job, evs in by_job.values():
            self._route(job, evs)

    # -- admission ----------------------------------------------------------------------------
    def _preempt(self) -> None:
        """A request arrived: every lookahead job ends (in this turn's sweep) or is dropped."""
        self.ahead_counts["dropped"] += len(self._ahead)
        self._ahead.clear()
        for job in self._ahead_live:
            if not job.stream.closed:
                self.ahead_counts["preempted"] += 1
                job.stream.cancel()
        self._ahead_live = []

    def _admit(self) -> None:
        budget = 1 if self.batch.rows else None       # prefill chunks this turn (None: no limit)
        while True:
            job = self._prefilling
            if job is None:
                if not self._waiting:
                    # idle time (no request waiting or running): the next lookahead job
                    if not self._ahead or any(r.job.ahead is None for r in self.batch.rows):
                        return
                    if any(sched is not self and sched._busy() for sched in _schedulers()) or _machine_busy():
                        self.ahead_counts["dropped"] += len(self._ahead)   # another session
                        self._ahead.clear()                                # has work, or other
                        return                                             # processes use the cores
                    nxt = self._ahead.popleft()
                    self._ahead_live = [j for j in self._ahead_live if not j.stream.closed] + [nxt]
                    self.ahead_counts["started"] += 1
                    self._waiting.append(nxt)
                nxt = self._waiting[0]
                if self.batch.rows and len(self.batch.rows) + (0 if nxt.warm else nxt.request.n) > self.max_rows:
                    return                            # no room: wait for rows to leave
                job = self._waiting.popleft()
                if not self._prepare(job):
                    continue
                self._prefilling = job
            while True:
                if job.stream.cancelled.is_set() or job.expired(time.perf_counter()):
                    self._prefilling = None
                    self._end_unstarted(job, "deadline" if job.expired(time.perf_counter()) else "cancelled")
                    break
                if budget is not None:
                    if budget <= 0:
                        return
                    budget -= 1
                try:
                    finished = job.prefill.step()
                except Preempted:             # a lookahead prompt gave way to a request
                    self._prefilling = None
                    self.ahead_counts["preempted"] += 1
                    self.ahead_counts["abandoned_forwards"] = self.ahead_counts.get("abandoned_forwards", 0) + 1
                    self._end_unstarted(job, "cancelled")
                    break
                except Exception as exc:
                    self._prefilling = None
                    self._error(job, exc)
                    break
                if finished:
                    self._prefilling = None
                    self._joined(job)
                    break

    def _builder(self, config):
        key = repr(config)
        b = self._builders.get(key)
        if b is None:
            b = self._builders[key] = self.gen.prompt_builder(config)
        return b

    def _prepare(self, job: _Job) -> bool:
        """Prompt and rows of a request; False (its stream ended with an error) when that fails."""
        from dataclasses import replace

        from ..context import CodeContext
        from .guides.another_start import AnotherStart
        from .guides.logit_bias import LogitBias
        from .guides.registry import GuideSpec, build, default_names
        from .guides.stop_strings import StopStrings
        req = job.request
        job.t_admit = time.perf_counter()
        try:
            gen = job.gen = self.gen.view(req.monitor, req.tools)
            from ..analysis.wait import WaitPolicy
            gen.waits = WaitPolicy()          # this request's own window: another request's
                                              # stalled repository never cuts its waits short
            pconf = req.prompt or gen.prompts.config
            grounded = req.context is not None
            raw = req.prompt_ids is not None      # token ids: the model as is (a remote back end)
            if grounded:
                ctx = req.context
            else:
                ctx = CodeContext(path="<prompt>", repo=".", before=req.prompt_text or "",
                                  after=req.suffix_text or "", scope="<prompt>", kind="cursor")
                pconf = replace(pconf, fim="on" if req.suffix_text is not None else "off")
            if raw:
                from .prompt import Prompt
                prompt = Prompt(ids=list(req.prompt_ids))
            else:
                builder = self._builder(pconf)
                # declarations need a file (a grounded context); retrieval works on any text
                every = gen.context_blocks(ctx, pconf if grounded else replace(pconf, declarations=False),
                                           req.blocks)
                prompt = builder.build(ctx, req.sampling.max_new_tokens, every)
            row_ctx = ctx.continued(prompt.owed)
            names = req.guides if req.guides is not None else (
                default_names(gen.monitor, gen.tools) if grounded else ())
            if grounded and set(names) & {"dereference", "keywords", "toolcall"}:
                gen.prewarm(row_ctx)          # what the rows' guides will see
            job.ctx, job.row_ctx, job.prompt = ctx, row_ctx, prompt
            n = 1 if job.warm else req.n
            for j in range(n):
                if job.warm:
                    guides = []
                elif raw:       # no healing, block ends or repetition stops: the stop strings only
                    guides = [StopStrings(req.stop)] if any(req.stop) else []
                else:
                    guides = build(names, GuideSpec(gen, row_ctx, prompt, req.sampling,
                                                    tuple(req.stop), grounded))
                if req.logit_bias and not job.warm:
                    guides.insert(0, LogitBias(req.logit_bias))
                if job.ahead is not None:
                    guides.insert(0, AnotherStart(len(prompt.owed), job.ahead.chars))
                draft = self.suggestions.reference(row_ctx, prompt.owed) if self.drafter is not None else None
                spec = RowSpec(prompt.ids, row_ctx, guides, req.sampling.seed + j, id=(job, j),
                               stop_ids=prompt.stop_ids, draft=draft)
                r = self.engine.row(spec, req.sampling, len(self.batch.rows) + j)
                r.view.cancelled = _Ended(job.stream.cancelled, job.deadline)   # ends analysis waits
                r.job = job
                job.rows.append(r)
            job.final_text, job.emitted, job.left = [""] * n, [""] * n, n
            job.prefill = self._new_prefill(prompt.ids)
            return True
        except Exception as exc:
            self._error(job, exc)
            return False

    def _joined(self, job: _Job) -> None:
        """The prompt is in: the rows join the running batch (a warm-up just ends)."""
        job.t_prefilled = time.perf_counter()
        p = job.prefill
        if job.warm:
            from ..contract import DONE, Update
            job.stream._push(Update(DONE, result=self._generation(job, None, "warm")))
            return
        self.batch.add(job.rows, p.logits, p.layers)
        job.prefill = Prefill.__new__(Prefill)        # keep `cached` only; drop the tensors
        job.prefill.cached = p.cached

    # -- events to streams --------------------------------------------------------------------
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

    def _look_ahead(self, job: _Job, text: str) -> None:
        """Queue the next lookahead job after a suggestion (or a lookahead row) whose text at the
        cursor is known: same request, one more character it may not start with."""
        req, a = job.request, job.ahead
        at = len(job.prompt.owed) if job.prompt is not None else 0
        if len(text) <= at:
            return                          # not past the cursor yet (or an empty suggestion)
        if a is not None:
            a.spawned = True
        left = self.lookahead if a is None else a.left - 1
        if left <= 0 or job.warm or req.n != 1 or req.sampling.temperature > 0 or req.prompt_ids is not None \
                or req.logit_bias or job.ctx is None or getattr(job.ctx, "kind", "") != "cursor":
            return
        from ..contract import Stream
        stream = Stream(req, 1)
        stream.ahead = _Ahead((a.chars if a is not None else frozenset()) | {text[at]}, left)
        self._ahead.append(_Job(stream))

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
                          tokens_cached=getattr(job.prefill, "cached", 0) if job.prefill is not None else 0,
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
            if item is not None:
                self._error(_Job(item), err)
