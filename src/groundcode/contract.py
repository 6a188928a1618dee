"""The contract between callers and the scheduler: what a request is, what its stream carries,
what a generation is. A leaf: session.py, api.py and decoding/scheduler.py import it; it imports
none of them (the configuration types only).

    Request(context=ctx | prompt_text=..., sampling=..., n=1, ...)   # immutable
    Stream: updates of kinds TEXT, TRIGGER, DONE, ERROR; cancel(); result(); aiter()
    Generation: one sample's completion, tokens, timings, triggers
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import asdict, dataclass, field

from .config import MonitorConfig, PromptConfig, SamplingConfig, ToolConfig
from .errors import GroundcodeError


@dataclass
class Generation:
    completion: str
    tokens: int
    seconds: float
    finish_reason: str
    triggers: list = field(default_factory=list)
    model: str = ""
    monitored: bool = True
    rollbacks: int = 0
    prompt_tokens: int = 0             # tokens in the model's prompt
    tokens_cached: int = 0             # prompt tokens reused from the prefix cache (not prefilled)
    timings: dict = field(default_factory=dict)   # queue_ms, prefill_ms, first_token_ms,
                                                  # decode_ms, analysis_ms, total_ms
    stop: object = None                # a guide's Stop(reason, cut, payload) when finish_reason is "stop"
    remote_requests: int | None = None # requests sent to a remote model's server (None: local model)
    truncated: bool = False            # the prompt was cut to fit the window (llama.cpp's `truncated`)
    drafted: int = 0                   # draft tokens verified (decoding/drafts.py) ...
    draft_accepted: int = 0            # ... and accepted: tokens that cost no forward of their own

    def to_json(self) -> dict:
        d = asdict(self)
        d["triggers"] = [t.to_json() if hasattr(t, "to_json") else t for t in self.triggers]
        st = self.stop
        d["stop"] = None if st is None else {"reason": st.reason, "cut": st.cut}
        return d


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
        self.warm_only = False               # a warm-up: prefill the prompt, decode nothing
        self.ahead = None                    # a lookahead job's facts (decoding/lookahead.py)

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
