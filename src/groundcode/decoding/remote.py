"""The remote model back end: the model is an OpenAI-compatible completions server (vLLM, SGLang,
llama.cpp, Ollama, another `groundcode serve`); prompts, guides, analyzers, checkpoints and
trigger records stay here, exactly as with a local model.

    lm = load_remote("http://127.0.0.1:8000/v1", remote_model=None, tokenizer="smollm2-135m")
    engine = RemoteEngine(lm, VocabIndex.for_tokenizer(lm.tokenizer))   # api.Generator does this
    Session(generator)                 # picks RemoteScheduler: the session's own loop (intake,
                                       # sweep, admit, step, evict) over a RemoteBatch

One row, one readable loop (`RemoteBatch._advance`), the local engine's step with the server
in place of the forward pass:
  1. masks    the guides' masks, intersected, as for a local row
  2. propose  the next token is the first of the server's proposal (`pending`); with no
              proposal the row asks the server: a FREE CHUNK (no mask: generate until the next
              dot, `stop: ["."]`, up to CHUNK_TOKENS) or a CONSTRAINED STEP (a mask:
              max_tokens 1 with `logit_bias` +100 on the allowed ids, or vLLM's
              `allowed_token_ids`; a mask of one id needs no request). Requests run on a thread
              pool, so rows (and requests) wait on the network together, never on each other.
  3. verify   a proposed token outside the mask, or one a guide's `check` refuses (a merged
              dot token), drops the rest of the proposal: that step is asked again, constrained
  4. accept   the one row step's accept/advance/rollback/stop/final code (step.py, as local rows):
              a rollback cuts the row and drops the proposal; the next request re-sends the
              prompt with the kept tokens (the server's prefix cache keeps that cheap)
A chunk that the server ended at the dot lacks the dot's token, which may hold more than the
dot (`.append`, `)._x`): one more 1-token request without stops (a PROBE) gives that token,
verified by the guides like a local sample, so the row's tokens are the model's own and greedy
text is the local engine's. OpenAI's answer says "stop" for a stop string and for the end of
text alike; servers that send `stop_reason` (vLLM, groundcode) tell the end of text (None), which
then needs no probe; for the others the probe's empty answer is the end of text. A non-code dot
(a string, a comment, `1.5`) is accepted and the row goes on.

Host facts the guides are built for: the server's tokens arrive a chunk at a time, so the
dereference monitor does not speculate (an answer would always be past its horizon): at a
trigger whose answer is still running the row is *held* (`Guide.holding`: it takes no token and
sends no request) until the answer lands or the analyzer's deadline passes, while the batch's
other rows go on; a merged-dot token (`.append`) waits for its answer before it is taken, as
before. It verifies first, as on the local engine: a name the
model writes right costs no request beyond its chunk; a token that does not fit costs one
constrained step (the same steered mask as a local resample). Guides that read logits (tool
tokens) cannot run here: the server keeps them.
Token ids: the server gets token prompts (`prompt: [ids]`) where it takes them, else text; its
text is tokenized here with the local tokenizer, which must be the served model's (--tokenizer).
`--remote-constraint auto` sends logit_bias; a server that answers 400/422 *naming* it gets
allowed_token_ids, then none (logged once per server). A busy answer (429, 5xx, a reset) is
retried with backoff inside the row's deadline (openai_client.py) and changes no mode. A server
that ignores the constraint fails the step open: its own token is kept and the trigger is
recorded `failed_open` ("remote: constraint not applied"), counted in `ignored`. Token prompts
or text is settled once, by an explicit probe.
Not here: HTTP (openai_client.py), the loop's turn (scheduler.py). Test: tests/test_remote.py.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from ..errors import GroundcodeError
from .rows import Row
from .step import RowStep
from .guides.base import Guide

from .openai_client import Busy, CompletionsClient, Refused
from .scheduler import Scheduler

log = logging.getLogger("groundcode.remote")
CONSTRAINTS = ("auto", "logit_bias", "allowed_token_ids", "none")
TRIGGER_STOP = "."           # the server stops at every dot; the lexer here says if it is code
PER_STEP = 64                # proposed tokens one row accepts per scheduler turn
CHUNK_TOKENS = 32            # a free chunk's length at most: the server cannot know where a guide
                             # (a block's end, a stop string) ends the row, so what it writes past
                             # that is wasted; a line of code is ~10-15 tokens


def is_remote(model) -> bool:
    return isinstance(model, str) and model.startswith(("http://", "https://"))


@dataclass
class RemoteModel:
    """What a Generator needs of a model that runs elsewhere (LoadedModel's shape, no weights)."""
    client: CompletionsClient
    tokenizer: object
    name: str                      # "served-name@url"
    template: object               # TemplateFacts of the tokenizer's model
    constraint: str = "auto"
    model: object = None
    device: str = "remote"
    dtype: str = ""

    @property
    def context_length(self) -> int:
        return int(self.template.context_length)


def load_remote(url: str, remote_model: str | None = None, tokenizer: str | None = None,
                constraint: str = "auto", api_key: str | None = None) -> RemoteModel:
    """Connect (GET /models), name the served model, load the local tokenizer that matches it:
    `tokenizer` (a registry name, tiny or a path), else the served name when it is one, else
    the registry default's."""
    from ..models.load import resolve_model
    from ..models.registry import detect_template
    if constraint not in CONSTRAINTS:
        raise GroundcodeError(f"--remote-constraint must be one of {', '.join(CONSTRAINTS)}, got {constraint!r}")
    client = CompletionsClient(url, api_key=api_key)
    served = client.served_models()
    if remote_model is None:
        if len(served) > 1:
            raise GroundcodeError(f"{url} serves several models ({', '.join(served[:5])}): "
                                  "name one with --remote-model NAME")
        remote_model = served[0] if served else None
    elif served and remote_model not in served:
        raise GroundcodeError(f"{url} does not serve {remote_model!r} (it serves {', '.join(served[:5])})")
    client.model = remote_model
    if tokenizer is None and remote_model:
        try:
            resolve_model(remote_model)
            tokenizer = remote_model
        except GroundcodeError:
            tokenizer = None          # not a name here: the registry default's tokenizer
    _, path, template = resolve_model(tokenizer)
    try:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(path))
    except OSError as exc:
        raise GroundcodeError(f"--tokenizer {tokenizer}: {str(exc).splitlines()[0]}") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if template is None:
        import json
        from pathlib import Path
        cfg = Path(str(path)) / "config.json"
        n = json.loads(cfg.read_text()).get("max_position_embeddings", 2048) if cfg.is_file() else 2048
        template = detect_template(tok, int(n or 2048))
    return RemoteModel(client, tok, f"{remote_model or 'model'}@{url}", template, constraint)


class RemoteEngine:
    """The local half of a remote model: tokenizer, vocab index, detokenizer, and the three
    requests (chunk, step, probe). Shared by every row; its modes are settled on first use."""
    remote = True
    device = "cpu"

    def __init__(self, lm: RemoteModel, vocab):
        from .detokenize import Detokenizer
        self.lm, self.client, self.tokenizer, self.vocab = lm, lm.client, lm.tokenizer, vocab
        self.detok = Detokenizer(self.tokenizer)
        eos = {self.tokenizer.eos_token_id}
        vocab_ids = self.tokenizer.get_vocab()
        eos |= {vocab_ids.get(t) for t in lm.template.stop_tokens}
        self.eos = {e for e in eos if e is not None}
        self.width = vocab.size
        self.auto = lm.constraint == "auto"   # fall back on a refusal: logit_bias ->
        self.constraint = "logit_bias" if self.auto else lm.constraint   # allowed_token_ids -> none
        self.prompt_mode = None               # "ids" | "text", settled by an explicit probe
        self.ignored = 0                      # constrained steps whose answer broke the mask
        self._probe_lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="groundcode-remote")

    def preemptible(self, check) -> None:
        """The server runs the forwards: nothing to abandon here."""

    def row(self, spec, sampling, index: int = 0) -> Row:
        for g in spec.guides:
            if type(g).logits is not Guide.logits:
                raise GroundcodeError(f"{type(g).__name__} reads the model's logits, which a remote "
                                      "server keeps: tool tokens need a local model")
            g.tokens_in_chunks()          # tokens come a chunk at a time (the monitor: wait, don't speculate)
        return Row(self, spec, sampling, index)

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    # -- requests ------------------------------------------------------------------------------
    def _prompt(self, ids: list[int], mode: str):
        if mode == "ids":
            return ids
        bos = self.tokenizer.bos_token_id      # a text server adds its own
        if ids and bos is not None and ids[0] == bos:
            ids = ids[1:]
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _send(self, ids: list[int], max_tokens: int, sampling, seed: int, until=None, **kw):
        mode = self.prompt_mode or self._probe_prompt_mode(until)
        return self.client.complete(self._prompt(ids, mode), max_tokens, sampling.temperature,
                                    sampling.top_p, seed, until=until, **kw)

    def _probe_prompt_mode(self, until=None) -> str:
        """Token prompts or text, settled once by an explicit probe (never by a request's
        error): a one-token request with a token prompt; if the server refuses it (a 4xx, or
        llama-cpp-python's 500 of validation errors) and takes the same prompt as text, text.
        A busy or unreachable server settles nothing (its error is the row's)."""
        with self._probe_lock:
            if self.prompt_mode is not None:
                return self.prompt_mode
            ids = self.tokenize("x") or [0]
            try:
                self.client.complete(self._prompt(ids, "ids"), 1, until=until)
                self.prompt_mode = "ids"
            except (Refused, Busy) as exc:
                if isinstance(exc, Busy) and exc.status not in (500,):
                    raise
                self.client.complete(self._prompt(ids, "text"), 1, until=until)
                self.prompt_mode = "text"
            return self.prompt_mode

    def chunk(self, ids: list[int], max_tokens: int, sampling, seed: int, until=None):
        """Free text until the next dot: (token ids, what follows them: "eos" | "probe" (the
        dot's token, or the end of text) | None at the length limit)."""
        out = self._send(ids, max(1, max_tokens), sampling, seed, until, stop=[TRIGGER_STOP])
        toks = self.tokenize(out.text)
        if out.finish_reason == "length":
            return toks, None
        if out.stop_reason is None:            # vLLM / groundcode: the end of text
            return toks, "eos"
        return toks, "probe"                   # the dot's whole token (`.append`) comes next

    def probe(self, ids: list[int], sampling, seed: int, until=None):
        """One token, no stops: what a chunk's ambiguous stop was."""
        out = self._send(ids, 1, sampling, seed, until)
        return (self.tokenize(out.text), None) if out.text else ([], "eos")

    def pick(self, ids: list[int], allowed: np.ndarray, sampling, seed: int, until=None):
        """One token among `allowed`, chosen by the server's model: (token, True) — or, when
        the server's answer breaks the mask (it ignored the constraint), (its own token, False):
        the step fails open with the model's token, never an arbitrary allowed one."""
        while True:
            mode = self.constraint
            kw = {}
            if mode == "logit_bias":
                kw["logit_bias"] = self._bias(allowed)
            elif mode == "allowed_token_ids":
                kw["allowed_token_ids"] = allowed.tolist()
            try:
                out = self._send(ids, 1, sampling, seed, until, **kw)
            except Refused as exc:
                # auto: drop a constraint only when the server says it does not know it
                if not self.auto or mode == "none" or not exc.names(mode):
                    raise
                with self._probe_lock:
                    if self.constraint == mode:
                        self.constraint = "allowed_token_ids" if mode == "logit_bias" else "none"
                        log.warning("%s does not take %s (%s): constrained steps use %s",
                                    self.client.base, mode, exc.detail, self.constraint)
                continue
            tok = self._match(out.text, allowed)
            if tok is not None:
                return tok, True
            self.ignored += 1                  # the server ignored the constraint: fail open
            own = self.tokenize(out.text)
            if own:
                return own[0], False
            return (min(self.eos) if self.eos else int(allowed[0])), False

    def _bias(self, allowed: np.ndarray) -> dict:
        """+100 on the allowed ids (OpenAI: "exclusive selection"), or -100 on the others when
        those are fewer."""
        if len(allowed) <= self.width // 2:
            return {int(t): 100.0 for t in allowed}
        banned = np.setdiff1d(np.arange(self.width), allowed, assume_unique=True)
        return {int(t): -100.0 for t in banned}

    def _match(self, text: str, allowed: np.ndarray) -> int | None:
        if not text:
            return next((int(t) for t in allowed if int(t) in self.eos), None)
        texts = self.vocab.texts
        same = [int(t) for t in allowed if texts[int(t)] == text]
        if same:
            return same[0]
        ids = self.tokenize(text)
        return ids[0] if ids and np.isin(ids[0], allowed) else None

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


class RemoteBatch:
    """The rows of a remote model: no KV cache, no forward; each row's next tokens come from
    its requests. The scheduler drives it as it drives a local Batch (add, step, evict, feed,
    cancel); phases 1-4 are step.py's RowStep, as for a local row."""

    columns = nbytes = 0                   # no cache here: the server holds it
    drafter = None

    def __init__(self, engine, drafter=None):
        self.engine = engine
        self.rows: list[Row] = []
        self._held = False                 # a row was held this step (guides' `holding`)
        self.rowstep = RowStep(engine, self._drop_proposal, polls=True)

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, rows: list, logits=None, layers=None) -> None:
        for r in rows:
            r.pending = deque()            # the server's proposal, not yet accepted
            r.after = None                 # what follows it: "probe" (ask what the stop was)
            r.future = None                # the request in flight
            r.requests = 0
            r.view.index = len(self.rows)
            self.rows.append(r)

    def evict(self) -> list:
        gone = [r for r in self.rows if not r.live]
        self.rows = [r for r in self.rows if r.live]
        for i, r in enumerate(self.rows):
            r.view.index = i
        return gone

    def feed(self) -> None:
        """Nothing to feed: the next request carries the row's tokens."""

    def cancel(self, r: Row, reason: str = "cancelled"):
        return self.rowstep.cancel(r, reason)

    def step(self) -> list:
        events: list = []
        moved = False
        self._held = False
        rs = self.rowstep
        for r in self.rows:
            if not r.live:
                if r.output is None:
                    events.append(rs.finished(r))
                continue
            try:
                moved |= self._advance(r, events)
            except Exception as exc:           # a guide, or the server, failed: this row only
                rs.fail(r, exc)
                events.append(rs.finished(r))
                moved = True
        if not moved:                          # every row waits on the network or on analysis
            busy = [r.future for r in self.rows if r.live and r.future is not None]
            if busy:
                wait(busy, timeout=0.005 if self._held else 0.05, return_when=FIRST_COMPLETED)
            elif self._held:
                time.sleep(0.002)              # held rows only: their answers are polled
        return events

    def _advance(self, r: Row, events: list) -> bool:
        """One row: take a finished request's answer, accept proposed tokens while the guides
        agree, then ask for the next ones. True if anything happened."""
        v, eng, rs = r.view, self.engine, self.rowstep
        if r.settling is not None:             # its guides' owed answers: polled, never waited on
            if rs.poll(r, events):
                return True
            self._held = True
            return False
        if r.future is not None:
            if not r.future.done():
                return False
            fut, r.future = r.future, None
            kind, answer = fut.result()
            if kind == "pick":
                tok, kept = answer
                r.constrained += 1
                if not kept:                   # the server ignored the mask: fail open
                    open_ = [t for t in v.triggers if t.chosen is None and not t.failed_open]
                    if open_:
                        open_[-1].failed_open, open_[-1].reason = True, "remote: constraint not applied"
                rs.take(r, tok, True, events)
                return True
            toks, after = answer
            r.pending.extend(toks)
            if after == "eos":
                r.pending.append(min(eng.eos) if eng.eos else 0)
            r.after = "probe" if after == "probe" else None
            if not toks and after is None:     # nothing came back at the length limit
                rs.finish(r, "length", events)
                return True
        # -- 1. masks, 2. the proposal, 3. verify, 4. accept ------------------------------------------
        allowed, n = None, 0
        while r.live and r.settling is None and n < PER_STEP:
            if any(g.holding(v) for g in r.guides):   # an answer the row needs first is running:
                self._held = True                      # this row waits, the others go on
                return n > 0
            if v.forced:                       # a guide's tokens replace the proposal
                self._drop_proposal(r)
                rs.take(r, None, True, events)
                n += 1
                continue
            allowed = rs.mask(r)
            if not r.pending:
                break
            tok = r.pending[0]
            if allowed is not None and not np.isin(tok, allowed):
                self._drop_proposal(r)         # the proposal leaves the mask: ask constrained
                break
            # inside the step's mask (or with none), still checked by every guide (a healed
            # cursor inside a name: the heal mask lets `ister` in, the monitor refuses it)
            refused = rs.refusal(r, tok, allowed)
            if refused is not None:            # that step is asked again, under the refusal
                self._drop_proposal(r)
                allowed = refused
                break
            if allowed is not None:
                r.constrained += 1
            r.pending.popleft()
            rs.take(r, tok, True, events)
            n += 1
        if not r.live or r.pending or r.settling is not None:
            return True
        # -- the next request ----------------------------------------------------------------------
        s = r.sampling
        ids = list(r.spec.prompt_ids) + list(v.tokens)
        seed = r.spec.seed + 7919 * r.requests
        until = v.cancelled.is_set if v.cancelled is not None else None
        if allowed is not None and len(allowed) == 1:  # nothing to ask: the mask decides
            r.constrained += 1
            rs.take(r, int(allowed[0]), True, events)
            return True
        r.requests += 1
        if allowed is not None:
            allowed = np.asarray(allowed)
            r.future = eng.pool.submit(lambda: ("pick", eng.pick(ids, allowed, s, seed, until)))
        elif r.after == "probe":
            r.after = None
            r.future = eng.pool.submit(lambda: ("chunk", eng.probe(ids, s, seed, until)))
        else:
            left = min(CHUNK_TOKENS, s.max_new_tokens - len(v.tokens))
            r.future = eng.pool.submit(lambda: ("chunk", eng.chunk(ids, left, s, seed, until)))
        return n > 0

    @staticmethod
    def _drop_proposal(r: Row, length: int | None = None) -> None:
        """The proposal is dropped (a cut, a token it cannot have, a guide's own tokens): the
        next request re-sends the prompt with the kept tokens."""
        r.pending.clear()
        r.after = None


class _NoPrefill:
    """The server prefills: a request's prompt is "in" at once."""
    logits = layers = None
    cached = 0

    def step(self) -> bool:
        return True


class RemoteScheduler(Scheduler):
    """The session's scheduler over a RemoteBatch (same turn: intake, sweep, admit, step, evict)."""

    def _new_batch(self):
        return RemoteBatch(self.engine)

    def _new_prefill(self, ids, reuse: bool = True):
        return _NoPrefill()

    def _generation(self, job, o, reason: str):
        g = super()._generation(job, o, reason)
        if o is not None:
            g.remote_requests = job.rows[o.id[1]].requests
        else:
            g.remote_requests = 0
        return g
