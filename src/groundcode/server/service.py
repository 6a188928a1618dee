"""The serving state and what each endpoint asks of it, free of HTTP: one Generator (model,
vocab index, warm analyzers), one Session (the scheduler that decodes every request), one
Workspace (the served roots and their buffers), the admission limits and counters.

    svc = Service(ServeOptions(workspaces=[...], model="tiny"))   # or Service(opts, generator)
    prep = svc.completion(CompletionRequest(...))   # / svc.infill(...) / svc.code(...): checked,
                                                    # a session Request (ClientError: 4xx)
    ticket = await svc.admission.enter(svc.remaining(t0))          # Busy: 429
    stream = svc.submit(prep, t0)                   # the session's stream; cancel() on disconnect
    out = await svc.collect(stream, prep, is_disconnected)        # Outcome: generations, triggers
    svc.prewarm(); svc.close()

The request's deadline counts from its arrival: what the queue took is gone from decoding.
Only this module touches the Session and the Workspace. Not here: wire shapes (wire.py), HTTP
(app.py), token-id prompts (token_prompt.py). Tested by tests/test_server_http.py.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..config import MonitorConfig, SamplingConfig
from ..errors import GroundcodeError
from ..analysis.pool import summary
from .admission import Admission
from .locate import some_python_files
from .guard import ClientError, check_position, check_text, cursor_of, inside, readable_source
from .options import ServeOptions
from .token_prompt import MAX_STOP, logit_bias, token_prompt
from .schemas import CodeRequest, CompletionRequest, InfillRequest

GRACE_S = 1.0                     # a request ends by its deadline plus this, whatever happens
DEFAULT_INFILL_TOKENS = 128       # llama.vim's n_predict; used for n_predict: -1


@dataclass
class Prepared:
    """A checked request: what the session gets, and what the answer must say about it."""
    request: object | None            # session.Request (None: warm only)
    grounded: bool
    path: str | None = None           # the file, relative to its workspace when it is in one
    note: str = ""                    # why it is not grounded / what was not used
    warm: object = None               # n_predict 0: the Request the real one will be (prefilled only)
    n: int = 1
    fim: bool = False                 # the model sees the suffix (fill-in-the-middle)
    response_fields: list | None = None
    locate: dict | None = None        # a text-only request: where it was placed, or why not (locate.py)


@dataclass
class Outcome:
    generations: list                 # api.Generation per sample (None if it never finished)
    triggers: list                    # TriggerRecords per sample, in order
    error: str | None = None
    cancelled: bool = False
    timed_out: bool = False           # the request's deadline passed before anything was written
                                      # (see expired_empty; `updates` ends a silent session's
                                      # samples as "deadline"): 504

    def expired_empty(self) -> bool:
        """Every sample ended by the deadline before it decoded anything (it passed in the
        queue, or the session stalled). A row that decoded and was cut at a grounded boundary
        with nothing left to show is a 200 (finish_reason "deadline", its triggers say what was
        cut), not a 504."""
        gens = [g for g in self.generations if g is not None]
        return bool(gens) and len(gens) == len(self.generations) and \
            all(g.finish_reason == "deadline" and not g.completion and not g.tokens for g in gens)


@dataclass
class Stats:
    served: int = 0
    cancelled: int = 0
    errors: int = 0
    refused: dict = field(default_factory=dict)     # HTTP status -> count


class Service:
    def __init__(self, opts: ServeOptions, generator=None):
        self.opts = opts
        self.roots = []
        for w in opts.workspaces:
            p = Path(w).expanduser().resolve()
            if not p.is_dir():
                raise GroundcodeError(f"--workspace {w}: not a directory")
            self.roots.append(p)
        if opts.max_concurrency < 1 or opts.queue < 0 or opts.deadline_s <= 0:
            raise GroundcodeError("--max-concurrency must be >= 1, --queue >= 0, --deadline > 0")
        if generator is None:
            from ..api import Generator
            from ..decoding.remote import is_remote
            remote = {"remote_model": opts.remote_model, "tokenizer": opts.tokenizer,
                      "remote_constraint": opts.remote_constraint,
                      "api_key": os.environ.get("GROUNDCODE_REMOTE_API_KEY")} if is_remote(opts.model) else {}
            from ..models.load import serving_dtype
            dtype = opts.dtype if remote else serving_dtype(opts.dtype, opts.device, opts.model)
            from ..config import PromptConfig
            generator = Generator(opts.model, MonitorConfig(deadline_s=opts.analysis_deadline_s,
                                                            python=opts.python,
                                                            analyzer=opts.analyzer),
                                  device=opts.device, dtype=dtype,
                                  prompt=PromptConfig(max_prompt_tokens=max(0, opts.max_prompt_tokens)),
                                  **remote)
        self.gen = generator
        if opts.lookahead < 0:
            raise GroundcodeError(f"--lookahead must be >= 0, got {opts.lookahead}")
        if not self.gen.has_session:                            # an editor server's session
            from ..session import Session
            Session(self.gen, lookahead=opts.lookahead)         # (becomes the generator's)
        self.session = self.gen.session        # shared with anything else using this generator
        self.workspace = None
        self._locator = None                  # text-only requests: which file (locate.py)
        self._locator_lock = threading.Lock()
        if self.roots:
            from ..workspace import Workspace
            self.workspace = Workspace(self.roots, opts.python, opts.trust)   # --trust: these roots
        self.admission = Admission(opts.max_concurrency, opts.queue)
        self.stats = Stats()
        self.started = time.time()
        self.prewarmed = threading.Event()
        self.prewarm_errors: list[str] = []
        self._closed = False

    # -- facts ---------------------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        return self.gen.lm.name

    @property
    def has_fim(self) -> bool:
        """The model fills in the middle: its tokenizer has FIM tokens and the registry does not
        say it was never trained for them (the prompt builder's `auto` rule)."""
        p = self.gen.prompts
        return p.fim_tokens is not None and p.fim_trained is not False

    @property
    def context_length(self) -> int:
        return int(self.gen.prompts.context_length)

    def remaining(self, t0: float) -> float:
        return self.opts.deadline_s - (time.perf_counter() - t0)

    def relative(self, path: Path) -> str:
        for r in self.roots:
            if r in path.parents:
                return str(path.relative_to(r))
        return str(path)

    # -- lifecycle -------------------------------------------------------------------------------
    def prewarm(self) -> None:
        """Start each workspace's analyzer (Jedi's cold start, its worker process) on a few of its
        files, its member vocabulary's scan, and load the mask kernel, so the first request does
        not pay for them. Best
        effort: a file that cannot be prewarmed is skipped, never a reason not to serve."""
        try:
            if self.roots:
                self._locator_started()               # the text-only clients' index (locate.py)
            if self.gen.monitor.enabled and self.roots:
                from ..decoding.vocab.kernel import warm_in_background
                warm_in_background()
                if self.gen.monitor.vocabulary:       # each root's member vocabulary: scanned now
                    from ..analysis.vocabulary import project_vocabulary
                    for root in self.roots:
                        project_vocabulary(root)
                for root in self.roots:
                    for f in some_python_files(root, 3):
                        try:       # the context a request on this file would get: same analyzer
                            ctx = self.workspace.cursor(f, 1, 0)
                            self.gen.analyzer_for(ctx).prewarm(
                                ctx.splice(""))
                        except Exception as exc:      # noqa: BLE001 (reported, not fatal)
                            self.prewarm_errors.append(f"{f}: {type(exc).__name__}: {exc}"[:200])
        finally:
            self.prewarmed.set()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._locator is not None:
            self._locator.close()
        self.session.close()
        self.gen.close()

    # -- requests -> session Requests ----------------------------------------------------------
    def _sampling(self, max_tokens: int, temperature: float, top_p: float, seed, until="block",
                  n: int = 1) -> SamplingConfig:
        cap = min(self.opts.max_tokens_cap, self.context_length - 16)
        if max_tokens > cap:
            raise ClientError(f"max_tokens {max_tokens} is above this server's limit ({cap})")
        if n > self.opts.max_n:
            raise ClientError(f"n {n} is above this server's limit ({self.opts.max_n})")
        if n > 1 and temperature <= 0:
            raise ClientError("n > 1 needs temperature > 0 (greedy decoding gives one answer)")
        try:
            return SamplingConfig(temperature=temperature, top_p=top_p, seed=seed if seed is not None and seed >= 0 else 0,
                                  max_new_tokens=max_tokens, stop=until)
        except GroundcodeError as exc:
            raise ClientError(str(exc)) from None

    def _context(self, path: str, text: str, line: int, column: int, must_exist: bool = True):
        """A CodeContext at (line, column) of `text`, the buffer of `path` in a workspace."""
        real = inside(self.roots, path, must_exist=must_exist)
        check_position(text, line, column)
        try:
            return real, self.workspace.cursor(real, line, column, text=text)
        except ClientError:
            raise
        except GroundcodeError as exc:
            raise ClientError(str(exc)) from None

    def _request(self, **kw):
        from ..session import Request
        return Request(**kw)

    def completion(self, b: CompletionRequest) -> Prepared:
        prompt = b.prompt
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
            if len(prompt) != 1:
                raise ClientError("prompt: send one prompt (a batch of prompts is not served)")
            prompt = prompt[0]
        for name, bad in (("logprobs", b.logprobs not in (None, 0)), ("echo", b.echo),
                          ("best_of", b.best_of not in (None, 1, b.n)),
                          ("presence_penalty", b.presence_penalty != 0),
                          ("frequency_penalty", b.frequency_penalty != 0)):
            if bad:
                raise ClientError(f"{name} is not supported by groundcode (leave it at its default)")
        bias = logit_bias(int(self.gen.vocab.size), b.logit_bias)
        if isinstance(prompt, list):              # token ids: the model as is (a remote back end)
            return Prepared(token_prompt(self, b, prompt, bias), False, None, "a prompt of token ids: plain decoding", n=b.n)
        if bias and b.groundcode is not None:
            raise ClientError("logit_bias goes with plain decoding, not with groundcode.path "
                              "(the grounding guides constrain the tokens themselves)")
        stop = [b.stop] if isinstance(b.stop, str) else list(b.stop or [])
        if len(stop) > MAX_STOP or any(not s for s in stop):
            raise ClientError(f"stop: at most {MAX_STOP} non-empty strings")
        check_text("prompt", prompt)
        check_text("suffix", b.suffix)
        for s in stop:
            check_text("stop", s)
        suffix = b.suffix or None
        fim = suffix is not None and self.has_fim
        no_fim = "" if suffix is None or self.has_fim else (
            f"model {self.model_name} has no fill-in-the-middle template: the suffix informs the "
            "analyzer only, the model continued the prompt without seeing it")
        sampling = self._sampling(b.max_tokens, b.temperature, b.top_p, b.seed, n=b.n)
        if b.groundcode is not None:
            text = prompt + (suffix or "")
            line, col = cursor_of(prompt)
            real, ctx = self._context(b.groundcode.path, text, line, col, must_exist=False)
            req = self._request(context=ctx, sampling=sampling, n=b.n, stop=tuple(stop))
            return Prepared(req, True, self.relative(real), no_fim, n=b.n, fim=fim)
        found, where = self._locate(prompt, suffix or "") if not bias else ("logit_bias: plain decoding", None)
        if not isinstance(found, str):
            real, ctx = found
            req = self._request(context=ctx, sampling=sampling, n=b.n, stop=tuple(stop))
            note = "; ".join(x for x in (f"found the file by its text: {self.relative(real)}", no_fim) if x)
            return Prepared(req, True, self.relative(real), note, n=b.n, fim=fim, locate=where)
        req = self._request(prompt_text=prompt, suffix_text=suffix if fim else None, sampling=sampling,
                            n=b.n, stop=tuple(stop), logit_bias=bias)
        note = "; ".join(x for x in (f"{found}: plain decoding", no_fim.replace("informs the analyzer only",
                                                                             "was not used")) if x)
        return Prepared(req, False, None, note, n=b.n, fim=fim, locate=where)

    def _locator_started(self):
        """The locate index (locate.py), built and refreshed on its own thread from the first call
        (prewarm at the server's start; the first text-only request when prewarm is off)."""
        with self._locator_lock:
            if self._locator is None:
                from .locate import Locator
                self._locator = Locator(self.roots).start()
            return self._locator

    def locate_facts(self) -> dict | None:
        """The locate index's state for /health (None: no text-only request and no prewarm yet)."""
        return self._locator.facts() if self._locator is not None else None

    def _locate(self, prefix: str, suffix: str):
        """((file, context) of the workspace file a text-only request is about (locate.py), or
        why none: the request then decodes plain; the `locate` record the answer carries)."""
        if self.workspace is None:
            return "no workspace is served (groundcode serve --workspace DIR)", None
        loc = self._locator_started()
        # before the index's first build ends (a request right after the start) it waits for it,
        # at most half the request's deadline; then it says the index is not ready
        found = loc.locate(prefix, suffix, wait_s=self.opts.deadline_s / 2)
        where = {"placed": False, "index": loc.facts()}
        if not hasattr(found, "path"):
            where.update(reason=str(found), capped=bool(getattr(found, "capped", False)))
            return str(found), where
        try:
            ctx = self.workspace.cursor(found.path, found.line, found.column, text=found.text)
        except GroundcodeError as exc:
            where.update(reason=str(exc), capped=False)
            return str(exc), where
        where.update(placed=True, path=self.relative(found.path), line=found.line, column=found.column,
                     hits=found.hits)
        return (found.path, ctx), where

    def infill(self, b: InfillRequest) -> Prepared:
        from ..decoding.prompt import PromptBlock
        from ..languages import language_of       # a chunk's heading is a comment in its language
        for name, t in (("input_prefix", b.input_prefix), ("input_suffix", b.input_suffix),
                        ("prompt", b.prompt)):
            check_text(name, t)
        blocks = []
        for k, c in enumerate(b.input_extra):
            check_text(f"input_extra[{k}].text", c.text)
            if c.text.strip():
                head = f"{language_of(c.filename).comment} {c.filename}\n" if c.filename else ""
                blocks.append(PromptBlock(head + c.text, f"input_extra:{c.filename}"))
        if len(b.stop) > MAX_STOP or any(not s for s in b.stop):
            raise ClientError(f"stop: at most {MAX_STOP} non-empty strings")
        for s in b.stop:
            check_text("stop", s)
        prefix, suffix = b.input_prefix + b.prompt, b.input_suffix
        n_predict = DEFAULT_INFILL_TOKENS if b.n_predict == -1 else b.n_predict
        fim = self.has_fim
        note = "" if fim else (f"model {self.model_name} has no fill-in-the-middle template: it "
                               "continued the prefix without seeing the suffix")
        ctx, real, where = None, None, None
        if b.groundcode is not None:
            line, col = cursor_of(prefix)
            real, ctx = self._context(b.groundcode.path, prefix + suffix, line, col,
                                      must_exist=False)
        else:                   # llama.vim / llama.vscode: find the file by the text
            found, where = self._locate(prefix, suffix)
            if isinstance(found, str):
                located_note = f"{found}: plain decoding"
            else:
                real, ctx = found
                located_note = f"found the file by its text: {self.relative(real)}"
            note = "; ".join(x for x in (located_note, note) if x)
        # n_predict 0 (llama.vim / llama.vscode's warm-up): prefill exactly the prompt the real
        # request will build (same blocks, suffix, token budget), answer nothing
        sampling = self._sampling(n_predict or DEFAULT_INFILL_TOKENS, b.temperature, b.top_p, b.seed)
        if ctx is not None:
            req = self._request(context=ctx, sampling=sampling, blocks=tuple(blocks),
                                stop=tuple(b.stop))
            if n_predict == 0:
                return Prepared(None, True, self.relative(real), note, warm=req, fim=fim,
                                response_fields=b.response_fields, locate=where)
            return Prepared(req, True, self.relative(real), note, fim=fim,
                            response_fields=b.response_fields, locate=where)
        req = self._request(prompt_text=prefix, suffix_text=suffix if fim else None,
                            sampling=sampling, blocks=tuple(blocks), stop=tuple(b.stop))
        if n_predict == 0:
            return Prepared(None, False, None, note, warm=req, fim=fim, response_fields=b.response_fields, locate=where)
        return Prepared(req, False, None, note, fim=fim, response_fields=b.response_fields, locate=where)

    def _honoured(self, b: CodeRequest) -> dict:
        """The per-request configuration a CLI sent (the prompt cap, the analysis deadline); a
        model or analyzer other than this server's is refused, never silently replaced."""
        if b.model is not None and self.model_name not in (b.model, Path(b.model).name):
            raise ClientError(f"this server serves {self.model_name}, not {b.model}")
        if b.analyzer is not None and b.analyzer != self.opts.analyzer:
            raise ClientError(f"this server's analyzer is {self.opts.analyzer}, not {b.analyzer}")
        kw = {}
        if b.max_prompt_tokens is not None:
            kw["prompt"] = replace(self.gen.prompts.config, max_prompt_tokens=b.max_prompt_tokens)
        if b.analysis_deadline is not None:
            kw["monitor"] = replace(self.gen.monitor, deadline_s=b.analysis_deadline)
        return kw

    def code(self, b: CodeRequest) -> Prepared:
        check_text("text", b.text)
        kw = self._honoured(b)
        text = b.text
        if text is None:
            real = inside(self.roots, b.path)
            readable_source(self.roots, real, self.opts.max_file_bytes)
            try:
                text = self.workspace.text(real)
            except GroundcodeError as exc:
                raise ClientError(str(exc)) from None
            check_text(b.path, text)
        sampling = self._sampling(b.max_tokens, b.temperature, b.top_p, b.seed, until=b.until)
        if b.function is not None:
            if b.line is not None or b.column is not None:
                raise ClientError("send line and column, or function, not both")
            real = inside(self.roots, b.path, must_exist=b.text is None)
            try:
                ctx = self.workspace.function(real, b.function, text=text)
            except GroundcodeError as exc:
                raise ClientError(str(exc)) from None
            return Prepared(self._request(context=ctx, sampling=sampling, **kw), True, self.relative(real))
        if b.line is None or b.column is None:
            raise ClientError("line and column are required (or function: a body to write)")
        real, ctx = self._context(b.path, text, b.line, b.column, must_exist=b.text is None)
        req = self._request(context=ctx, sampling=sampling, **kw)
        return Prepared(req, True, self.relative(real))

    # -- running -----------------------------------------------------------------------------
    def submit(self, prep: Prepared, t0: float):
        """Hand the request to the session with what is left of its deadline."""
        prep.request = replace(prep.request, deadline_s=max(0.05, self.remaining(t0)))
        from ..decoding.scheduler import SessionDead
        try:
            return self.session.submit(prep.request)
        except SessionDead as exc:
            raise ClientError(str(exc), 503) from None
        except GroundcodeError as exc:
            raise ClientError(str(exc)) from None

    def dead(self) -> str | None:
        """Why the session stopped serving for good, or None."""
        return self.session.dead

    async def updates(self, stream, t0: float):
        """The stream's updates, ending by the request's deadline plus a grace second whatever
        the session does (deadline.py: a silent session's samples end "deadline" with the text
        already sent, never an error)."""
        from .deadline import bounded
        async for u in bounded(stream, t0 + self.opts.deadline_s + GRACE_S, t0, self.model_name):
            yield u

    def warm(self, prep: Prepared, t0: float) -> float:
        """n_predict 0: prefill only (waits for it, within the deadline); returns the
        milliseconds it took."""
        from ..decoding.scheduler import SessionDead
        t = time.perf_counter()
        left = max(0.05, self.remaining(t0))
        try:
            stream = self.session.warm(prep.warm, deadline_s=left)
        except SessionDead as exc:
            raise ClientError(str(exc), 503) from None
        except GroundcodeError as exc:
            raise ClientError(str(exc)) from None
        try:
            stream.result(timeout=left + GRACE_S)
        except GroundcodeError as exc:
            stream.cancel()
            if time.perf_counter() - t >= left:
                raise ClientError(f"the warm-up did not finish within the deadline ({left:.1f} s)", 504) from None
            raise ClientError(str(exc), 503 if self.dead() else 500) from None
        return (time.perf_counter() - t) * 1e3

    async def collect(self, stream, prep: Prepared, is_disconnected=None, t0: float | None = None) -> Outcome:
        """Wait for every sample of `stream`, until the request's deadline (plus a grace
        second) at most; a client that goes away cancels it in the session (polled every
        50 ms: a plain request has no other sign of a closed connection)."""
        out = Outcome([None] * prep.n, [[] for _ in range(prep.n)])
        watcher = None
        if is_disconnected is not None:
            async def watch():
                while True:
                    await asyncio.sleep(0.05)
                    if await is_disconnected():
                        out.cancelled = True
                        stream.cancel()
                        return
            watcher = asyncio.create_task(watch())
        try:
            async for ev in self.updates(stream, time.perf_counter() if t0 is None else t0):
                if ev.kind == "trigger":
                    out.triggers[ev.sample].append(ev.trigger)
                elif ev.kind == "done":
                    out.generations[ev.sample] = ev.result
                elif ev.kind == "error":
                    out.error = ev.error
        finally:
            if watcher is not None:
                watcher.cancel()
            if out.cancelled or any(g is None for g in out.generations):
                stream.cancel()       # also when this coroutine itself was cancelled
        self.count(out)
        return out

    def count(self, out: Outcome) -> None:
        if out.timed_out or out.expired_empty():
            self.stats.refused[504] = self.stats.refused.get(504, 0) + 1
        elif out.cancelled:
            self.stats.cancelled += 1
        elif out.error:
            self.stats.errors += 1
        else:
            self.stats.served += 1

    def trusted_roots(self) -> list[str]:
        """The workspace roots whose own venv may run (`serve --trust`: the roots given at
        start; else the user's list): trust is per root, never extended by a request."""
        return [str(r) for r in self.workspace.trusted_roots()] if self.workspace is not None else []

    def analyzers(self) -> list[dict]:
        """The analyzers: name, root, a server's pid, health (ok | degraded, reason: health.py)."""
        return self.gen.analyzer_report()

    analysis_status = staticmethod(summary)        # /health's `analysis` (analysis/pool.py)

    def analyzer_pids(self) -> list[int]:
        """Worker processes of this server (the analyzers'), for /health and leak checks."""
        try:
            import psutil
            return [c.pid for c in psutil.Process(os.getpid()).children(recursive=True)]
        except Exception:   # psutil missing: the count is unknown, not zero
            return []
