"""The decoding engine: a running batch of rows with per-row guides; rows join and leave between
steps (continuous batching). Knows no analyzer, no prompt format and no threads.

    engine = Engine(model, tokenizer, vocab)
    batch = Batch(engine)
    row = engine.row(RowSpec(prompt_ids, context, guides, seed, id=...), sampling)
    logits, layers, cached = engine.prefill(prompt_ids, prefix_cache, cancelled)
    batch.add([row, ...], logits, layers)     # rows sharing one prompt (n samples) share its prefill
    events = batch.step()                     # phases 1-4 below, for every row
    batch.evict()                             # finished rows leave; their KV columns are freed
    batch.feed()                              # phase 5
    run = engine.stream(specs, sampling)      # the same, synchronous, for a fixed set of rows
                                              #   (drafter=drafts.Drafter(): greedy rows draft)
    for ev in run: ...; run.cancel(row_id)    #   Event(kind, row=<RowSpec.id>, ...)
    outs = engine.generate(specs, sampling)   # consumed: [RowOutput, ...]

Events: TOKEN (a token was accepted; `text` newly decoded, provisional), TRIGGER (a guide
recorded a trigger), FINAL (`text`: the next piece of text that will never be taken back, and
`triggers` that became final with it), ROLLBACK (cut back to `length`; `text` is what stays),
STOP (a guide ended the row), FINISHED (always last for a row; `output.finish_reason` is eos,
length, stop, cancelled, deadline or error).

The step, per row (one readable loop: `Batch.step` then `Batch.feed`; phases 1-4 are step.py's
RowStep, the one row step every host calls: this batch, drafts, a remote server, transformers):
  1. scores   guides that read scores (tool tokens) see this row's logits
  2. masks    the guides' masks, intersected (only constrained rows pay); all rows sampled at once
  3. choose   a token queued by a guide (`row.force`) is taken as is; else the sample, verified
              by the guides (`check`: a merged-dot token that does not fit is resampled under the
              returned mask); a replay policy (replay.py) substitutes the reference token here
  4. accept   the token joins the row (checkpoints.py), every guide advances; proposals to roll
              back are resolved (shortest cut wins, every guide restored, the winner told); end
              of text, a guide's stop or the length limit finish the row after `settle` (which
              may still propose a cut: the row goes on); newly final text goes out (FINAL)
  5. feed     one new column for every live row, one forward; a greedy row may add draft
              tokens after its own (drafts.py: the last suggestion, prompt lookup), and then
              in the next step, after its ordinary step, takes one more ordinary step per draft
              position on that position's logits while the accepted token is the draft token
              (drafts.verify); the unused draft columns are masked as a cut's are

A cut without copying the cache: the row's attention-mask columns of its discarded inputs are
set to 0 and token L-1 is fed again; position ids are the running count of unmasked columns, so
the re-fed token lands at the right position. Columns masked in every row (rollbacks, evicted
rows, the left padding of merged rows) are dropped on eviction (`Batch.compact`).
Not here: the row step itself (step.py), the scheduler and streams (scheduler.py, session.py), guides (guides/), checkpoints
(checkpoints.py), the KV tensors' API (kv.py), prefix reuse (prefix_cache.py), teacher forcing
(replay.py), where drafts come from (drafts.py). Test: tests/test_engine.py, tests/test_session.py,
tests/test_drafts.py.
"""
from __future__ import annotations

import threading
import time

import torch

from ..config import SamplingConfig
from . import attention, drafts, kv
from .batch_cache import BatchCache
from .detokenize import Detokenizer
from .sampling import greedy, sample_rows
from .step import RowStep
from .rows import FINAL, FINISHED, ROLLBACK, STOP, TOKEN, TRIGGER, Event, Row, RowOutput, RowSpec  # noqa: F401

# Tokens per prefill forward. Cancels and the running batch's steps come between chunks; 1,024
# (the prompt cap editors send) rather than 256: 16 requests at once ended 18% sooner on 2 CPU
# cores with the larger forwards (9.4-9.9 s against 11.5-12.5 s, smollm2-135m; fewer forwards,
# each a better matrix size), at the price of a coarser cancel inside one long prefill.
PREFILL_CHUNK = 1024


class Engine:
    remote = False                        # the model runs here (remote.RemoteEngine: a server)

    def __init__(self, model, tokenizer, vocab):
        self.model = model
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.detok = Detokenizer(tokenizer)
        eos = {tokenizer.eos_token_id}
        cfg_eos = model.config.eos_token_id
        eos |= set(cfg_eos if isinstance(cfg_eos, (list, tuple)) else [cfg_eos])
        self.eos = {e for e in eos if e is not None}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)
        # A head wider than the tokenizer (padded embeddings): those ids have no text; never sample them.
        self.width = vocab.size
        # Draft tokens need a forward that scores every new column (any causal LM does); a test
        # double that scores only the last one says so (tests/scripted.py).
        self.multi_token = not getattr(model, "one_token_steps", False)
        # one-row decode steps on a CPU fold grouped query heads instead of sdpa's slow path (attention.py)
        self.attention = attention.NAME if attention.install(model) else None
        from . import preempt      # idle work (lookahead) is abandoned between layers
        self._preempt_local = None
        self.can_preempt = preempt.install(model, self)
        import inspect
        try:       # prefill computes the last position's logits only, where the model allows it
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            params = {}
        self._keep_arg = "logits_to_keep" in params
        # transformers >= 5.24 names the KV cache `cache` (`past_key_values` warns, and goes in
        # 5.40); older versions and test doubles take `past_key_values`
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def close(self) -> None:
        """Nothing held outside this process (a remote engine closes its client here)."""

    def preemptible(self, check) -> None:
        """On the calling thread, forwards are abandoned (preempt.Preempted) between layers while
        `check()` is true (None: never)."""
        if self._preempt_local is not None:
            self._preempt_local.check = check

    @property
    def device(self):
        return next(self.model.parameters()).device

    def row(self, spec: RowSpec, sampling: SamplingConfig, index: int = 0) -> Row:
        return Row(self, spec, sampling, index)

    def batch(self, drafter=None) -> "Batch":
        """A running batch on this engine (llama_engine.LlamaEngine: its own)."""
        return Batch(self, drafter)

    def new_prefill(self, prompt: list[int], prefix_cache=None, chunk: int = PREFILL_CHUNK,
                    reuse: bool = True) -> "Prefill":
        """`reuse=False`: every token computed, nothing taken from `prefix_cache` (a reproducible
        request: what an earlier request left in the cache must not change its numbers)."""
        return Prefill(self, prompt, prefix_cache if reuse else None, chunk)

    def stream(self, specs: list[RowSpec], sampling: SamplingConfig, drafter=None) -> "Decoding":
        return Decoding(self, specs, sampling, drafter)

    def generate(self, specs: list[RowSpec], sampling: SamplingConfig, on_event=None,
                 drafter=None) -> list[RowOutput]:
        run = self.stream(specs, sampling, drafter)
        for ev in run:
            if on_event is not None:
                on_event(ev)
        return run.outputs

    def forward(self, ids, attn, past, pos, last_only: bool = True):
        """Logits [B, V] of the last new column (last_only) or [B, W, V] of every one."""
        kw = {"logits_to_keep": 1 if last_only else 0} if self._keep_arg else {}
        kw[self._cache_arg] = past
        with attention.kernels(ids.device):       # a GPU: no per-length cuDNN graph builds
            out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True, **kw)
        logits = out.logits[:, -1] if last_only else out.logits
        cache = out.cache if self._cache_arg == "cache" else out.past_key_values
        return logits[..., : self.width].float(), cache

    def token_probabilities(self, prompt_ids: list[int], tokens: list[int]) -> list[float]:
        """The model's own probability of each token (probabilities.py; DAG++'s confidence)."""
        from .probabilities import token_probabilities
        return token_probabilities(self.model, prompt_ids, tokens)

    def prefill(self, prompt: list[int], prefix_cache=None, cancelled=None, chunk: int = PREFILL_CHUNK):
        """One prompt alone, to the end (see `Prefill`); None when `cancelled()` turned true."""
        p = self.new_prefill(prompt, prefix_cache, chunk)
        while not p.step():
            if cancelled is not None and cancelled():
                return None
        return p.logits, p.layers, p.cached


class Prefill:
    """One prompt's prefill, a chunk per `step()` (a scheduler decodes the running batch, or
    sees a cancel, between chunks). Reuses the longest prefix stored in `prefix_cache` and
    stores the whole prompt there when done. Then: `logits` [1, V] of the last position,
    `layers` [(k, v)] over the prompt, `cached` = prompt tokens reused."""

    def __init__(self, engine: Engine, prompt: list[int], prefix_cache=None, chunk: int = PREFILL_CHUNK):
        self.engine, self.prompt, self.prefix_cache, self.chunk = engine, list(prompt), prefix_cache, chunk
        self.done, layers = (0, None) if prefix_cache is None else prefix_cache.lookup(self.prompt)
        self.cached = self.done
        self._past = kv.cache(layers) if layers else None
        self.logits = None
        self.layers = None

    @torch.inference_mode()
    def step(self) -> bool:
        """Prefill the next chunk; True once the whole prompt is in."""
        eng, dev, done = self.engine, self.engine.device, self.done
        if done < len(self.prompt):
            part = self.prompt[done: done + self.chunk]
            ids = torch.tensor([part], dtype=torch.long, device=dev)
            attn = torch.ones((1, done + len(part)), dtype=torch.long, device=dev)
            pos = torch.arange(done, done + len(part), device=dev).unsqueeze(0)
            self.logits, self._past = eng.forward(ids, attn, self._past, pos)
            self.done = done + len(part)
        if self.done < len(self.prompt):
            return False
        if self.layers is None:
            self.layers = kv.tight(kv.layers(self._past))
            self._past = None
            if self.prefix_cache is not None:
                self.prefix_cache.store(self.prompt, self.layers)
        return True


class Batch(BatchCache):
    """The running rows, their KV cache (as tensors), attention mask and next-token logits: the
    step (phases 1-4: step.py's RowStep on each row's logits) and the feed (phase 5); the
    cache's columns are batch_cache.py's."""

    def __init__(self, engine, drafter=None):
        super().__init__(engine, drafter)
        self.rowstep = RowStep(engine, self._cut_columns, polls=True)

    def step(self) -> list[Event]:
        """Phases 1-4 for every live row; returns the events in order."""
        rows, rs = self.rows, self.rowstep
        constrained = [rs.shape(r, self.logits[i]) for i, r in enumerate(rows)]
        toks = self._sample(self.logits, rows)  # the one host sync per step (greedy rows)
        events: list[Event] = []
        for i, r in enumerate(rows):
            if not r.live:
                if r.output is None:
                    events.append(rs.finished(r))
                continue
            try:
                if r.settling is not None:      # waiting for owed answers: polled, no token
                    rs.poll(r, events)
                    continue
                if r.held:                      # a guide's answer runs: no token this step
                    if r.draft_cols:            # (drafts fed after its token: unused)
                        self.mask_columns(i, r.draft_cols)
                        r.draft, r.draft_cols, r.draft_logits = [], [], None
                    continue
                rs.take(r, toks[i], bool(constrained[i]), events, self.logits[i])
            except Exception as exc:
                rs.fail(r, exc)
                events.append(rs.finished(r))
            if r.draft_cols:                    # draft tokens were fed after the last token
                drafts.verify(self, r, i, events)
        return events

    def cancel(self, r: Row, reason: str = "cancelled") -> Event:
        """End a row now (cancel, deadline): no settle, its text is what was final."""
        return self.rowstep.cancel(r, reason)

    def _cut_columns(self, r: Row, length: int) -> None:
        """A cut's KV side: the cache columns of the discarded inputs masked, token length-1 fed
        again (see the module docstring)."""
        cols = r.fed_cols[max(length - 1, 0):]
        if length == 0:
            cols = cols + [r.last_prompt_col]
            r.refeed = r.spec.prompt_ids[-1]
        else:
            r.refeed = r.view.tokens[length - 1]
        self.mask_columns(r.view.index, cols)
        del r.fed_cols[max(length - 1, 0):]

    def _sample(self, logits: torch.Tensor, rows: list[Row]) -> list[int]:
        out = greedy(logits)                    # ties: the lowest id (sampling.greedy)
        for i, r in enumerate(rows):
            s = r.sampling
            if r.live and not r.waiting and s.temperature > 0:
                out[i] = sample_rows(logits[i:i + 1], s.temperature, s.top_p, [r.gen])[0]
        return out.tolist()

    # -- 5. feed ------------------------------------------------------------------------------
    @torch.inference_mode()
    def feed(self) -> None:
        """One new column per live row (the accepted token, or the one re-fed after a cut), and
        after it the row's draft tokens if the drafter proposes some (drafts.py): one forward."""
        if all(r.waiting for r in self.rows):
            time.sleep(0.002)                   # every row waits on analysis: nothing to decode
            return
        k = self.drafter.width(len(self.rows)) if self.drafter is not None and self.engine.multi_token else 0
        if k:
            self._trim()
        col = self.columns
        fed, cols = [], []                      # cols: how many of a row's inputs it attends to
        for r in self.rows:
            v = r.view
            if r.waiting:                       # a column no one attends to (as a cut's)
                fed.append([self.engine.pad_id])
                cols.append(0)
                continue
            if r.refeed is not None:
                fed.append([r.refeed])
                r.refeed = None
                if v.tokens:
                    r.fed_cols.append(col)
                else:
                    r.last_prompt_col = col
            else:
                r.draft = self.drafter.propose(r, k) if k else []
                fed.append([v.tokens[-1]] + r.draft)
                r.fed_cols.append(col)
            cols.append(len(fed[-1]))
        W = max(len(f) for f in fed)
        dev = self.attn.device
        if W == 1:
            new = torch.ones((len(self.rows), 1), dtype=torch.long, device=dev) if all(cols) else \
                torch.tensor([[c] for c in cols], dtype=torch.long, device=dev)
            self.attn = torch.cat([self.attn, new], 1)
            pos = self.attn.sum(-1, keepdim=True) - 1
            ids = torch.tensor(fed, dtype=torch.long, device=dev)
            self._keep_held(self._forward(ids, pos))
            return
        # drafts: W columns for every row; a row's unused ones are masked (attended by no one)
        pad = self.engine.pad_id
        ids = torch.tensor([f + [pad] * (W - len(f)) for f in fed], dtype=torch.long, device=dev)
        new = torch.tensor([[1] * c + [0] * (W - c) for c in cols], dtype=torch.long, device=dev)
        self.attn = torch.cat([self.attn, new], 1)
        pos = (self.attn.cumsum(-1)[:, -W:] - 1).clamp(min=0)
        logits = self._forward(ids, pos, last_only=False)
        self._keep_held(logits[:, 0])
        for i, (r, f) in enumerate(zip(self.rows, fed)):
            if len(f) > 1:
                r.draft_cols = list(range(col + 1, col + len(f)))
                r.draft_logits = logits[i, 1: len(f)]


    def _keep_held(self, logits) -> None:
        """The new logits, except a held row's: it takes its token from the ones it had."""
        held = [i for i, r in enumerate(self.rows) if r.held]
        if held:
            idx = torch.tensor(held, device=logits.device)
            logits = logits.clone()
            logits[idx] = self.logits[idx]
        self.logits = logits


class Decoding:
    """One `Engine.stream` call: a fixed set of rows decoded to the end, synchronously; an
    iterator of events; `cancel(row_id)` any time; `outputs` (RowOutput per spec, in order) once
    it is exhausted. Rows with the same prompt share one prefill."""

    def __init__(self, engine: Engine, specs: list[RowSpec], sampling: SamplingConfig, drafter=None):
        self.engine, self.specs, self.sampling, self.drafter = engine, specs, sampling, drafter
        self.outputs: list[RowOutput] = []
        self.prefilled_rows = 0          # distinct prompts prefilled
        self.rows = [engine.row(s, sampling, i) for i, s in enumerate(specs)]
        for r in self.rows:              # cancel is the row's event, as for a session's rows
            if r.view.cancelled is None:
                r.view.cancelled = threading.Event()
        self._events = self._loop()

    def __iter__(self):
        return self._events

    def __next__(self) -> Event:
        return next(self._events)

    def cancel(self, row_id) -> None:
        """End that row at the next step (its analysis waits end at once)."""
        for r in self.rows:
            if r.id == row_id:
                r.view.cancelled.set()

    @torch.inference_mode()
    def _loop(self):
        eng, rows = self.engine, self.rows
        batch = eng.batch(self.drafter)
        groups: dict[tuple, list[Row]] = {}
        for r in rows:
            groups.setdefault(tuple(r.spec.prompt_ids), []).append(r)
        for prompt, group in groups.items():
            logits, layers, _ = eng.prefill(list(prompt))
            batch.add(group, logits, layers)
        self.prefilled_rows = len(groups)
        while batch.rows:
            for r in batch.rows:
                if r.live and r.view.cancelled.is_set():
                    yield batch.cancel(r)
            yield from batch.step()
            batch.evict()
            if batch.rows:
                batch.feed()
        self.outputs = [r.output for r in rows]
