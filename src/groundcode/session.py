"""A session: the one way requests reach the model. A scheduler thread owns the model; callers
submit immutable requests from any thread and read a stream of updates.

    sess = Session(generator)                     # one per Generator (model + analyzers)
    stream = sess.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=64)))
    for ev in stream:                             # Update(kind, sample, text, trigger, result, error)
        ...                                       # "text": final text (never taken back)
                                                  # "trigger": a TriggerRecord (final)
                                                  # "done": result = Generation (one per sample)
                                                  # "error": error = one line (this request only)
    async for ev in stream.aiter(): ...           # the same from asyncio code
    stream.cancel()                               # its rows stop at once (prefill included)
    gens = stream.result(timeout=None)            # [Generation] per sample
    sess.warm(ctx_or_prompt_text)                 # prefill into the prefix cache only
    sess.close()

What it is not: the decoding step (decoding/engine.py), prompts (decoding/prompt.py), guides
(decoding/guides/registry.py builds them by name). Test: tests/test_session.py.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from .config import MonitorConfig, PromptConfig, SamplingConfig, ToolConfig
from .errors import GroundcodeError

TEXT, TRIGGER, DONE, ERROR = "text", "trigger", "done", "error"


@dataclass(frozen=True)
class Request:
    """What to generate. Immutable: the session never changes it, callers may reuse it."""
    context: object = None               # CodeContext (grounded), or None with prompt_text
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    n: int = 1                           # samples (n > 1 needs temperature > 0)
    guides: tuple | None = None          # guide names (decoding/guides/registry.py); None: defaults
    blocks: tuple = ()                   # PromptBlocks: model-only context
    prompt_text: str | None = None       # ungrounded text completion (no context)
    suffix_text: str | None = None       # with prompt_text: fill in the middle (model needs FIM)
    stop: tuple = ()                     # stop strings: text is cut before the first one
    deadline_s: float | None = None      # wall-clock budget from submit; the row ends "deadline"
    # Additions to the shared contract: per-request configuration (None: the generator's).
    monitor: MonitorConfig | None = None
    tools: ToolConfig | None = None
    prompt: PromptConfig | None = None
    # The model as is (what a remote back end sends to `groundcode serve`): a prompt of token ids
    # (no prompt building, no implied guides but the stop strings), and a bias per token id
    # added to its logit (+100 / -100 everywhere: allowed / banned ids exactly, as a mask).
    prompt_ids: tuple | None = None      # token ids, instead of context= or prompt_text=
    logit_bias: tuple = ()               # ((token id, bias), ...)

    def check(self) -> None:
        """GroundcodeError (one line) for a request that cannot be served."""
        if sum(x is not None for x in (self.context, self.prompt_text, self.prompt_ids)) != 1:
            raise GroundcodeError("a request needs exactly one of context=, prompt_text= and prompt_ids=")
        if self.prompt_ids is not None and (not self.prompt_ids or self.suffix_text is not None):
            raise GroundcodeError("prompt_ids= needs at least one token id and no suffix_text=")
        if self.suffix_text is not None and self.prompt_text is None:
            raise GroundcodeError("suffix_text= goes with prompt_text= (a context carries its own suffix)")
        if not isinstance(self.n, int) or self.n < 1:
            raise GroundcodeError(f"n must be an integer >= 1, got {self.n!r}")
        if self.n > 1 and self.sampling.temperature <= 0:
            raise GroundcodeError("n > 1 samples need temperature > 0 (greedy gives one answer)")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise GroundcodeError(f"deadline_s must be > 0 seconds, got {self.deadline_s}")
        if isinstance(self.stop, str):
            raise GroundcodeError("stop= is a tuple of strings, not one string")


@dataclass(frozen=True)
class Update:
    kind: str                            # "text" | "trigger" | "done" | "error"
    sample: int = 0                      # which of the request's n samples
    text: str = ""                       # "text": the new final text
    trigger: object = None               # "trigger": a TriggerRecord
    result: object = None                # "done": the sample's Generation
    error: str | None = None             # "error": one line


class Stream:
    """The updates of one request, in order. Iterate it (blocking) or `aiter()` it (asyncio);
    both read the same list, so a late reader sees everything from the start."""

    def __init__(self, request: Request, n: int):
        self.request = request
        self.submitted = time.perf_counter()
        self._n = n
        self._updates: list[Update] = []
        self._cond = threading.Condition()
        self._closed = False
        self._waiters: list = []             # (loop, asyncio.Event) of async readers
        self.cancelled = threading.Event()   # read by the scheduler between prefill chunks and steps
        self._results: list = [None] * n
        self._error: str | None = None

    # -- producer side (the scheduler thread) -------------------------------------------------
    def _push(self, u: Update) -> None:
        with self._cond:
            if self._closed:
                return
            self._updates.append(u)
            if u.kind == DONE:
                self._results[u.sample] = u.result
                if all(r is not None for r in self._results):
                    self._closed = True
            elif u.kind == ERROR:
                self._error = u.error
                self._closed = True
            self._cond.notify_all()
            waiters = list(self._waiters)
        for loop, ev in waiters:
            try:
                loop.call_soon_threadsafe(ev.set)
            except RuntimeError:         # that loop is gone
                pass

    @property
    def closed(self) -> bool:
        return self._closed

    # -- consumer side ------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop this request's rows at once; the stream ends with their partial results."""
        self.cancelled.set()

    def __iter__(self):
        i = 0
        while True:
            with self._cond:
                while i >= len(self._updates) and not self._closed:
                    self._cond.wait()
                if i >= len(self._updates):
                    return
                u = self._updates[i]
            i += 1
            yield u

    async def aiter(self):
        loop = asyncio.get_running_loop()
        ev = asyncio.Event()
        with self._cond:
            self._waiters.append((loop, ev))
        try:
            i = 0
            while True:
                with self._cond:
                    batch = self._updates[i:]
                    closed = self._closed
                    ev.clear()
                for u in batch:
                    yield u
                i += len(batch)
                if closed and i >= len(self._updates):
                    return
                if not batch:
                    await ev.wait()
        finally:
            with self._cond:
                self._waiters.remove((loop, ev))

    def result(self, timeout: float | None = None) -> list:
        """[Generation] per sample once the request ends; GroundcodeError if it failed or the
        timeout passed."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._closed:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    raise GroundcodeError(f"no result within {timeout} s")
                self._cond.wait(left)
        if self._error is not None:
            raise GroundcodeError(self._error)
        return list(self._results)


class Session:
    """Owns the model through one scheduler thread (decoding/scheduler.py): continuous batching
    of up to `max_rows` rows, a prefix cache of `prefix_cache_bytes` (LRU)."""

    def __init__(self, generator, max_rows: int | None = None, prefix_cache_bytes: int = 512 << 20,
                 prefill_chunk: int | None = None, drafts=True, lookahead: int = 0):
        """`drafts`: greedy rows verify draft tokens (the last suggestion where the user typed
        its start) in one forward (decoding/drafts.py); the same tokens. Prompt lookup drafts
        stay off here: a rejected draft costs a wider forward, and on CPU their net effect
        under load has not been measured (`drafts=Drafter()` turns them on; `drafts` may be a
        decoding.drafts.Drafter, True for the default one, or False for none).
        `prefill_chunk`: prompt tokens per prefill forward (default engine.PREFILL_CHUNK, 1,024);
        a cancel or the running rows' next step waits for the chunk under way.
        `lookahead`: after a greedy cursor suggestion, up to this many more rows run on idle time
        with other first characters at the cursor, as drafts for a keystroke that types one of
        them (decoding/scheduler.py); a request that arrives ends them at once. Needs drafts and
        the prefix cache. 0 (the default) for batch work; editor servers use 2."""
        drafter = None
        if getattr(getattr(generator, "engine", None), "remote", False):
            from .decoding.remote import RemoteScheduler as Scheduler   # the model is a server
        else:
            from .decoding.drafts import Drafter
            from .decoding.scheduler import Scheduler
            drafter = (drafts if isinstance(drafts, Drafter) else Drafter(lookup=False)) if drafts else None
        self.generator = generator
        self._sched = Scheduler(generator, max_rows=max_rows or getattr(generator, "batch_rows", 16),
                                prefix_cache_bytes=prefix_cache_bytes, prefill_chunk=prefill_chunk,
                                drafter=drafter, lookahead=lookahead)
        shared = getattr(generator, "_shared", None)
        if shared is not None:          # the generator's own run()/stream() use this session too
            with shared["lock"]:
                shared.setdefault("session", self)

    def submit(self, request: Request) -> Stream:
        """Queue a request; returns its stream at once. Thread-safe."""
        if not isinstance(request, Request):
            raise GroundcodeError("submit() takes a groundcode.session.Request")
        request.check()
        stream = Stream(request, request.n)
        self._sched.put(stream)
        return stream

    def warm(self, what, deadline_s: float | None = None) -> Stream:
        """Prefill a prompt into the prefix cache and generate nothing (an editor's warm-up when
        its context changes): the next request sharing that prefix starts from its KV cache.
        `what`: the Request the real one will be (its prompt is built exactly so: the same
        blocks, suffix and token budget), or a context, or prompt text. `deadline_s`: it ends
        (unfinished) by then."""
        from dataclasses import replace
        if isinstance(what, Request):
            req = replace(what, n=1, deadline_s=deadline_s if deadline_s is not None else what.deadline_s)
        elif isinstance(what, str):
            req = Request(prompt_text=what, deadline_s=deadline_s)
        else:
            req = Request(context=what, deadline_s=deadline_s)
        req.check()
        stream = Stream(req, 1)
        stream.warm_only = True
        self._sched.put(stream)
        return stream

    @property
    def stats(self) -> dict:
        """Rows running, requests waiting, prefix-cache entries and bytes (for servers' health)."""
        return self._sched.stats()

    @property
    def dead(self) -> str | None:
        """Why the session's loop stopped for good (submit then raises), or None."""
        return self._sched.dead

    def close(self) -> None:
        self._sched.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
