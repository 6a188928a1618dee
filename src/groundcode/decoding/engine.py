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

The step, per row (one readable loop: `Batch.step` then `Batch.feed`):
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
Not here: the scheduler and streams (scheduler.py, session.py), guides (guides/), checkpoints
(checkpoints.py), the KV tensors' API (kv.py), prefix reuse (prefix_cache.py), teacher forcing
(replay.py), where drafts come from (drafts.py). Test: tests/test_engine.py, tests/test_session.py,
tests/test_drafts.py.
"""
from __future__ import annotations

import bisect
from dataclasses import replace

import numpy as np
import torch

from ..config import SamplingConfig
from . import attention, drafts, kv
from .checkpoints import Checkpoints, proposals_of
from .detokenize import Detokenizer
from .guides.base import Stop
from .masking import combine, keep_only, to_index
from .sampling import sample_rows
from .batch_cache import BatchCache
from .rows import FINAL, FINISHED, ROLLBACK, STOP, TOKEN, TRIGGER, Event, Row, RowOutput, RowSpec  # noqa: F401

# Tokens per prefill forward. Cancels and the running batch's steps come between chunks; 1,024
# (the prompt cap editors send) rather than 256: 16 requests at once ended 18% sooner on 2 CPU
# cores with the larger forwards (9.4-9.9 s against 11.5-12.5 s, smollm2-135m; fewer forwards,
# each a better matrix size), at the price of a coarser cancel inside one long prefill.
PREFILL_CHUNK = 1024


class Engine:
    def __init__(self, model, tokenizer, vocab):
        self.model = model
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.detok = Detokenizer(tokenizer)
        eos = {tokenizer.eos_token_id}
        cfg_eos = getattr(model.config, "eos_token_id", None)
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
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True, **kw)
        logits = out.logits[:, -1] if last_only else out.logits
        cache = out.cache if self._cache_arg == "cache" else out.past_key_values
        return logits[..., : self.width].float(), cache

    def prefill(self, prompt: list[int], prefix_cache=None, cancelled=None, chunk: int = PREFILL_CHUNK):
        """One prompt alone, to the end (see `Prefill`); None when `cancelled()` turned true."""
        p = Prefill(self, prompt, prefix_cache, chunk)
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
    step (phases 1-4) and the feed (phase 5); the cache's columns are batch_cache.py's."""


    def step(self) -> list[Event]:
        """Phases 1-4 for every live row; returns the events in order."""
        rows = self.rows
        constrained = [bool(self._shape(r, i)) for i, r in enumerate(rows)]
        toks = self._sample(self.logits, rows)  # the one host sync per step (greedy rows)
        events: list[Event] = []
        for i, r in enumerate(rows):
            if not r.live:
                if r.output is None:
                    events.append(self._finished(r))
                continue
            try:
                self._row_step(r, i, toks[i], constrained[i], events)
            except Exception as exc:
                self._fail(r, exc)
                events.append(self._finished(r))
            if r.draft_cols:                    # draft tokens were fed after the last token
                drafts.verify(self, r, i, events)
        return events

    def _shape(self, r: Row, i: int) -> bool | None:
        """Phases 1-2 for row i on `self.logits[i]`: True if a mask was applied; None if a guide
        failed (the row ended)."""
        v, logits = r.view, self.logits
        if not r.live or v.forced:
            return False
        try:
            # -- 1. scores ----------------------------------------------------------------------
            for g in r.scorers:
                g.logits(v, logits[i])
            # -- 2. masks -----------------------------------------------------------------------
            allowed = combine(g.mask(v) for g in r.guides) if r.guides else None
        except Exception as exc:                # a failing guide ends its own row only
            self._fail(r, exc)
            return None
        if allowed is None:
            return False
        keep_only(logits[i], allowed)
        r.constrained += 1
        return True

    def _row_step(self, r: Row, i: int, tok: int, constrained: bool, events: list) -> None:
        v, eng = r.view, self.engine
        r.steps += 1
        # -- 3. choose --------------------------------------------------------------------------
        if v.forced:                              # queued by a guide: no sampling, no check
            tok = v.forced.popleft()
        elif r.spec.choose is not None:           # teacher forcing (replay.py)
            tok = r.spec.choose(r, tok, constrained)
            if tok is None:    # the reference is written: the row ends as generation's would,
                return self._finish(r, "stop", events)   # settling the answers still owed
        else:               # every guide's verdict applies on every step: a token one guide's
            tok = self._verify(r, i, tok, constrained)   # mask let in is still checked by the others
        # -- 4. accept, advance, resolve ---------------------------------------------------------
        r.ck.accept(tok)
        if tok in eng.eos or tok in r.spec.stop_ids:
            return self._finish(r, "eos", events)
        events.append(Event(TOKEN, r.id, token=tok, text=r.text_stream.push(tok)))
        proposals = proposals_of(r.guides, lambda g: g.advance(v, tok))
        r.ck.mark()
        self._new_triggers(r, events)
        if proposals and self._resolve(r, proposals, events):
            return self._final(r, events)
        for g in r.guides:
            s = g.stop(v)
            if s is not None:
                r.stop = s if isinstance(s, Stop) else Stop("stop", cut=int(s))
                if r.stop.reason == "repetition" and r.stop.cut is not None and r.final_k \
                        and r.stop.cut < v.ends[r.final_k - 1]:
                    # text already streamed as final is never taken back: a repetition found
                    # late ends the row at the final boundary instead of cutting below it
                    r.stop = replace(r.stop, cut=v.ends[r.final_k - 1])
                return self._finish(r, "stop", events)
        sampling = r.sampling
        if len(v.tokens) >= sampling.max_new_tokens or r.steps >= 2 * sampling.max_new_tokens + 16:
            return self._finish(r, "length", events)   # rollbacks re-do steps: bounded
        self._final(r, events)

    def _verify(self, r: Row, i: int, tok: int, masked: bool = False) -> int:
        """The sample, verified: the first guide that refuses it gives the mask to resample
        under. On a step another guide masked (`masked`: token healing's mask at a cursor inside
        a name), the refusal's mask is intersected with it; when nothing is left in both, the
        token stands (that check fails open)."""
        for g in r.guides:
            m = g.check(r.view, tok)
            if m is not None and len(m):
                if masked:
                    m = np.asarray(m)
                    keep = torch.isfinite(self.logits[i].index_select(0, to_index(m, self.logits.device)))
                    m = m[keep.cpu().numpy()]
                    if not len(m):
                        continue
                keep_only(self.logits[i], m)
                r.constrained += 1
                s = r.sampling
                sub = [r.gen] if r.gen is not None else None
                return int(sample_rows(self.logits[i:i + 1], s.temperature, s.top_p, sub)[0])
        return tok

    def _resolve(self, r: Row, proposals: list, events: list) -> bool:
        """Proposals to roll back: the shortest cut wins (True: the row was cut). A host that
        does not roll back (replay) declines them."""
        if r.spec.choose is not None and not getattr(r.spec.choose, "rollbacks", False):
            for g, p in proposals:
                g.declined(r.view, p)
            r.ck.mark()                           # the guides' state after declining
            return False
        length, winners = Checkpoints.resolve(proposals)
        if length < r.final_k:
            raise RuntimeError(f"a guide cut below text it had declared final ({length} < {r.final_k} tokens)")
        self._cut(r, length, winners)
        events.append(Event(ROLLBACK, r.id, length=length, text=r.text_stream.reset(r.view.tokens)))
        self._new_triggers(r, events)
        return True

    def _cut(self, r: Row, length: int, winners: list) -> None:
        """Cut row r back to `length` tokens: guides restored (checkpoints.py), the cache columns
        of the discarded inputs masked, token length-1 fed again (see the module docstring)."""
        v = r.view
        length = min(length, len(v.tokens))
        r.ck.cut(length, winners)
        r.seen_triggers = min(r.seen_triggers, len(v.triggers))
        r.final_triggers = min(r.final_triggers, len(v.triggers))
        cols = r.fed_cols[max(length - 1, 0):]
        if length == 0:
            cols = cols + [r.last_prompt_col]
            r.refeed = r.spec.prompt_ids[-1]
        else:
            r.refeed = v.tokens[length - 1]
        self.mask_columns(v.index, cols)
        del r.fed_cols[max(length - 1, 0):]
        r.rollbacks += 1

    def _finish(self, r: Row, reason: str, events: list, settle: bool = True) -> None:
        """The row ends — unless a guide still owed an answer settles it now and proposes a cut."""
        if settle:
            proposals = proposals_of(r.guides, lambda g: g.settle(r.view))
            if proposals and self._resolve(r, proposals, events):
                if r.view.tokens and (r.view.tokens[-1] in self.engine.eos
                                      or r.view.tokens[-1] in r.spec.stop_ids):
                    self._cut(r, len(r.view.tokens) - 1, [])   # never continue after end-of-text
                r.stop = None
                return self._final(r, events)
            self._new_triggers(r, events)
        if r.stop is not None:
            events.append(Event(STOP, r.id, stop=r.stop))
        r.finish = reason
        events.append(self._finished(r))

    def _fail(self, r: Row, exc: Exception) -> None:
        r.finish = "error"
        r.error = f"{type(exc).__name__}: {exc}".splitlines()[0]

    def cancel(self, r: Row, reason: str = "cancelled") -> Event:
        """End a row now (cancel, deadline): no settle, its text is what was final."""
        r.finish = reason
        return self._finished(r)

    # -- text out -----------------------------------------------------------------------------
    def _new_triggers(self, r: Row, events: list) -> None:
        trig = r.view.triggers
        while r.seen_triggers < len(trig):
            events.append(Event(TRIGGER, r.id, trigger=trig[r.seen_triggers]))
            r.seen_triggers += 1

    def _final(self, r: Row, events: list) -> None:
        """Text no guide will take back: every token whose text ends at or before the smallest
        `final_upto`, and the triggers recorded up to it."""
        v = r.view
        f = min((g.final_upto(v) for g in r.finals), default=len(v.text))
        k = len(v.tokens) if f >= len(v.text) else bisect.bisect_right(v.ends, f)
        if k <= r.final_k:
            return
        text = "".join(r.final_stream.push(t) for t in v.tokens[r.final_k:k])
        r.final_k = k
        at = r.ck.trigger_at
        n = r.final_triggers
        while n < len(at) and at[n] <= k:
            n += 1
        new = tuple(v.triggers[r.final_triggers:n])
        r.final_triggers = n
        if text or new:
            events.append(Event(FINAL, r.id, text=text, triggers=new))

    def _finished(self, r: Row) -> Event:
        v = r.view
        cut = r.stop.cut if r.stop is not None else None

        if r.finish in ("cancelled", "deadline", "error"):
            text = self.engine.detok.decode(v.tokens[: r.final_k])   # what was verified
        elif cut is None:
            text = self.engine.detok.decode(v.tokens)
        else:   # whole tokens before the cut, then the (ASCII: a line start) piece up to it
            k = bisect.bisect_right(v.ends, cut)
            text = self.engine.detok.decode(v.tokens[:k]) + v.text[(v.ends[k - 1] if k else 0): cut]
        r.output = RowOutput(text, list(v.tokens), r.finish or "length", v.triggers, r.rollbacks,
                             r.constrained, r.stop, r.id, r.error, r.drafted, r.draft_accepted)
        return Event(FINISHED, r.id, output=r.output)

    def _sample(self, logits: torch.Tensor, rows: list[Row]) -> list[int]:
        out = logits.argmax(dim=-1)
        for i, r in enumerate(rows):
            s = r.sampling
            if r.live and s.temperature > 0:
                out[i] = sample_rows(logits[i:i + 1], s.temperature, s.top_p, [r.gen])[0]
        return out.tolist()

    # -- 5. feed ------------------------------------------------------------------------------
    @torch.inference_mode()
    def feed(self) -> None:
        """One new column per live row (the accepted token, or the one re-fed after a cut), and
        after it the row's draft tokens if the drafter proposes some (drafts.py): one forward."""
        k = self.drafter.width(len(self.rows)) if self.drafter is not None and self.engine.multi_token else 0
        if k:
            self._trim()
        col = self.columns
        fed = []
        for r in self.rows:
            v = r.view
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
        W = max(len(f) for f in fed)
        dev = self.attn.device
        if W == 1:
            self.attn = torch.cat([self.attn, torch.ones((len(self.rows), 1), dtype=torch.long, device=dev)], 1)
            pos = self.attn.sum(-1, keepdim=True) - 1
            ids = torch.tensor(fed, dtype=torch.long, device=dev)
            self.logits = self._forward(ids, pos)
            return
        # drafts: W columns for every row; a row's unused ones are masked (attended by no one)
        pad = self.engine.pad_id
        ids = torch.tensor([f + [pad] * (W - len(f)) for f in fed], dtype=torch.long, device=dev)
        new = torch.tensor([[1] * len(f) + [0] * (W - len(f)) for f in fed], dtype=torch.long, device=dev)
        self.attn = torch.cat([self.attn, new], 1)
        pos = (self.attn.cumsum(-1)[:, -W:] - 1).clamp(min=0)
        logits = self._forward(ids, pos, last_only=False)
        self.logits = logits[:, 0]
        for i, (r, f) in enumerate(zip(self.rows, fed)):
            if len(f) > 1:
                r.draft_cols = list(range(col + 1, col + len(f)))
                r.draft_logits = logits[i, 1: len(f)]


class Decoding:
    """One `Engine.stream` call: a fixed set of rows decoded to the end, synchronously; an
    iterator of events; `cancel(row_id)` any time; `outputs` (RowOutput per spec, in order) once
    it is exhausted. Rows with the same prompt share one prefill."""

    def __init__(self, engine: Engine, specs: list[RowSpec], sampling: SamplingConfig, drafter=None):
        self.engine, self.specs, self.sampling, self.drafter = engine, specs, sampling, drafter
        self.outputs: list[RowOutput] = []
        self.prefilled_rows = 0          # distinct prompts prefilled
        self._cancelled: set = set()
        self._events = self._loop()

    def __iter__(self):
        return self._events

    def __next__(self) -> Event:
        return next(self._events)

    def cancel(self, row_id) -> None:
        self._cancelled.add(row_id)

    @torch.inference_mode()
    def _loop(self):
        eng = self.engine
        rows = [eng.row(s, self.sampling, i) for i, s in enumerate(self.specs)]
        batch = Batch(eng, self.drafter)
        groups: dict[tuple, list[Row]] = {}
        for r in rows:
            groups.setdefault(tuple(r.spec.prompt_ids), []).append(r)
        for prompt, group in groups.items():
            logits, layers, _ = eng.prefill(list(prompt))
            batch.add(group, logits, layers)
        self.prefilled_rows = len(groups)
        while batch.rows:
            for r in batch.rows:
                if r.live and r.id in self._cancelled:
                    yield batch.cancel(r)
            yield from batch.step()
            batch.evict()
            if batch.rows:
                batch.feed()
        self.outputs = [r.output for r in rows]
