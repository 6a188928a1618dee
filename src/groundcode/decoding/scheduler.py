"""The session's scheduler: one thread owns the model and runs one loop over a running batch.

Each turn of the loop:
  1. intake    new requests from the queue (blocks only when there is nothing to do); each
               one's preparation starts on the preparation thread (prepare.py: prompt, context
               blocks, prewarm, guides, rows), so a large request never stops the running rows
  2. sweep     cancelled requests and passed deadlines end at once (waiting, prefilling or
               decoding: their rows leave the batch in this turn)
  3. admit     the next waiting request, once prepared, is prefilled, one
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
from .engine import PREFILL_CHUNK, Prefill
from .preempt import Preempted
from .prefix_cache import PrefixCache
from .prepare import Preparer
from .jobs import _WAKE, Records, _Ahead, _drop, _Ended, _Job, _one_line  # noqa: F401
from .lookahead import BUSY_SHARE, Lookahead, _machine_busy  # noqa: F401


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
ROW_SLACK = 16              # cells a row may take past its max_new_tokens (a healed prompt's
                            # tokens written again, a cut's token fed again)
MAX_FAILED_TURNS = 5        # turns failing in a row before the session is declared dead


class SessionDead(GroundcodeError):
    """The session's loop stopped for good (servers answer 503)."""


_ALL: "weakref.WeakSet[Scheduler]" = weakref.WeakSet()
_ALL_LOCK = threading.Lock()


def _schedulers() -> list:
    with _ALL_LOCK:
        return list(_ALL)


class Scheduler(Lookahead, Records):
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
        self._preparer = Preparer(generator, self.engine)   # prompts and rows, off this thread
        from ..models.threads import Threads          # torch threads: the cores others leave free
        self.threads = Threads.for_engine(getattr(getattr(generator, "lm", None), "device", None),
                                          getattr(self.engine, "set_threads", None))
        self._thread = threading.Thread(target=self._run, name="groundcode-scheduler", daemon=True)
        self._thread.start()
        with _ALL_LOCK:
            _ALL.add(self)

    def _wake(self) -> None:
        """A preparation is done (any thread): the loop looks at its queue again."""
        self._q.put(_WAKE)

    # -- the back end (decoding/remote.py overrides these) ----------------------------------------
    def _new_batch(self):
        return self.engine.batch(self.drafter)

    def _new_prefill(self, ids: list[int], reuse: bool = True):
        return self.engine.new_prefill(ids, self.prefix_cache, self.prefill_chunk, reuse)

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
        self._preparer.close()       # after the loop: a turn under way may still start a job

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
        # nothing to do but wait: no rows, no prefill, no lookahead, and no request whose
        # preparation is done (its end puts _WAKE in the queue)
        idle = not self.batch.rows and self._prefilling is None and not self._ahead \
            and not (self._waiting and self._waiting[0].prep.done())
        arrived = False
        try:
            item = self._q.get(block=idle)
            while True:
                if item is None:
                    return False
                if item is not _WAKE:
                    job = _Job(item)
                    self._waiting.append(job)
                    self._preparer.start(job, self._wake)
                    arrived = True
                item = self._q.get_nowait()
        except queue.Empty:
            pass
        if (arrived or self._interrupted.is_set()) and (self._ahead or self._ahead_live):
            self._preempt()
        if self.threads is not None:
            self.threads.follow()             # models/threads.py: on this thread, every turn (it
                                              # measures every 2 s; a long batch follows the machine)
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

    def _admit(self) -> None:
        budget = 1 if self.batch.rows else None       # prefill chunks this turn (None: no limit)
        while True:
            job = self._prefilling
            if job is None:
                if not self._waiting:
                    # idle time (no request waiting or running): the next lookahead job
                    if not self._ahead or self._closing or any(r.job.ahead is None for r in self.batch.rows):
                        return
                    if any(sched is not self and sched._busy() for sched in _schedulers()) or _machine_busy():
                        self.ahead_counts["dropped"] += len(self._ahead)   # another session
                        self._ahead.clear()                                # has work, or other
                        return                                             # processes use the cores
                    nxt = self._ahead.popleft()
                    self._ahead_live = [j for j in self._ahead_live if not j.stream.closed] + [nxt]
                    self.ahead_counts["started"] += 1
                    self._waiting.append(nxt)
                    self._preparer.start(nxt, self._wake)
                nxt = self._waiting[0]
                if not nxt.prep.done():
                    return                            # still being prepared: decode on
                if self.batch.rows and len(self.batch.rows) + (0 if nxt.warm else nxt.request.n) > self.max_rows:
                    return                            # no room: wait for rows to leave
                if not self._cells_for(nxt):
                    return                            # llama.cpp's cache is full: the same
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
                    self.ahead_counts["abandoned_forwards"] += 1
                    self._end_unstarted(job, "cancelled")
                    break
                except Exception as exc:
                    self._prefilling = None
                    _drop(job.prefill)            # its sequence (llama.cpp) is free again
                    self._error(job, exc)
                    break
                if finished:
                    self._prefilling = None
                    self._joined(job)
                    break

    def _cells_for(self, job: _Job) -> bool:
        """Whether the job's cells fit an engine whose cache is a fixed number of cells shared
        by every sequence (llama.cpp's `cells`; a torch engine's grows): its prompt once and
        each row's new tokens, beside the rows running and the kept prompt. A job that does not
        fit waits for rows to leave; alone, the kept prompt gives way first. Without it a batch
        of 8 rows of 1,100 tokens overran 8,192 cells: every row failed ("no room left in its
        KV cache"; benchmarks/bench_four_kinds.sh, DTYPE=gguf)."""
        cap = getattr(self.engine, "cells", None)
        if cap is None or job.prompt is None:
            return True
        rows = job.rows or [None]
        job.cells = len(job.prompt.ids) + sum(ROW_SLACK + (r.sampling.max_new_tokens if r else 1) for r in rows)
        held = sum(j.cells for j in {id(r.job): r.job for r in self.batch.rows}.values())
        if held + job.cells + self.engine.kept_cells() <= cap:
            return True
        if self.batch.rows:
            return False
        self.engine.forget_prompt()                   # alone: a prompt too long for the cache
        return True                                   # fails in its prefill, with its size

    def _prepare(self, job: _Job) -> bool:
        """On the scheduler thread, once the preparation is done (prepare.py): the rows' drafts
        (the scheduler's last suggestions), their cancel, the prefill (the prefix cache); False
        (its stream ended with the error) when the preparation failed."""
        from dataclasses import replace
        job.t_admit = time.perf_counter()
        try:
            job.prep.result()                     # the preparation's own error, if any
            if job.prompt is None:                # cancelled before it was prepared
                self._end_unstarted(job, "cancelled")
                return False
            for r in job.rows:
                if self.drafter is not None:
                    r.spec = replace(r.spec, draft=self.suggestions.reference(job.row_ctx, job.prompt.owed))
                r.view.cancelled = _Ended(job.stream.cancelled, job.deadline)   # ends analysis waits
                r.job = job
            n = len(job.rows)
            job.final_text, job.emitted, job.left = [""] * n, [""] * n, n
            # a reproducible request computes its whole prompt: a cached prefix (another
            # request's) may change its numbers on llama.cpp (engine.new_prefill)
            job.prefill = self._new_prefill(job.prompt.ids, reuse=not job.gen.monitor.reproducible)
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


