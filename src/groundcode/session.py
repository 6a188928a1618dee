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

from .contract import DONE, ERROR, TEXT, TRIGGER, Request, Stream, Update  # noqa: F401 (public here)
from .errors import GroundcodeError


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
        if generator.engine.remote:
            from .decoding.remote import RemoteScheduler as Scheduler   # the model is a server
        else:
            from .decoding.drafts import Drafter
            from .decoding.scheduler import Scheduler
            # llama.cpp's engine feeds one token per row: no drafts, so no lookahead (its rows
            # only make drafts)
            if drafts and getattr(generator.engine, "drafts", True):
                drafter = drafts if isinstance(drafts, Drafter) else Drafter(lookup=False)
        self.generator = generator
        self._sched = Scheduler(generator, max_rows=max_rows or generator.batch_rows,
                                prefix_cache_bytes=prefix_cache_bytes, prefill_chunk=prefill_chunk,
                                drafter=drafter, lookahead=lookahead)
        generator.adopt_session(self)   # the generator's own run()/stream() use it too

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
