"""The decoding engine: one loop, a batch of rows, per-row guides. Knows no analyzer.

    engine = Engine(model, tokenizer, vocab)
    outs = engine.generate([RowSpec(prompt_ids, context, guides, seed), ...], SamplingConfig())

Phases of `generate`:
  1. prefill   left-padded prompts, KV cache filled, logits of the last position
  2. step      per row: guides' masks (only constrained rows pay), sample all rows at once,
               verify free samples that contain a dot (guide.check; resample that row under the
               returned mask), accept, advance guides, roll back or stop
  3. feed      one new column per step for every row (finished rows feed a masked pad)

Rollback without copying the cache: a row cut back to L tokens gets the attention-mask columns
of its discarded inputs set to 0 and re-feeds token L-1; position ids are the running count of
unmasked columns, so the re-fed token lands at the right position. Other rows are untouched.
Not here: guides (guides/), masks from strings (vocab.py), tensors for masks (masking.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from ..config import SamplingConfig
from .guides.base import Guide, RowView, TriggerRecord
from .masking import intersect, keep_only
from .sampling import make_generators, sample_rows


@dataclass
class RowSpec:
    prompt_ids: list[int]
    context: object = None
    guides: list[Guide] = field(default_factory=list)
    seed: int = 0
    forced: list[int] | None = None     # replay: teacher-force these tokens (guides still run,
                                        # masks are still built and applied; rollbacks ignored)


@dataclass
class RowOutput:
    completion: str
    tokens: list[int]
    finish_reason: str                  # "eos" | "length" | "stop" (body end)
    triggers: list[TriggerRecord]
    rollbacks: int = 0
    constrained_steps: int = 0


class _Row:
    """Engine-side state of one row (the guides see `view`)."""

    def __init__(self, i: int, spec: RowSpec, vocab, last_prompt_col: int):
        self.spec = spec
        self.view = RowView(index=i, context=spec.context, vocab=vocab)
        self.fed_cols: list[int] = []   # fed_cols[k] = cache column where tokens[k] was fed
        self.last_prompt_col = last_prompt_col
        self.refeed: int | None = None  # token to feed again after a rollback
        self.finish: str | None = None
        self.cut: int | None = None
        self.rollbacks = 0
        self.constrained = 0


class Engine:
    def __init__(self, model, tokenizer, vocab):
        self.model = model
        self.tokenizer = tokenizer
        self.vocab = vocab
        eos = {tokenizer.eos_token_id}
        cfg_eos = getattr(model.config, "eos_token_id", None)
        eos |= set(cfg_eos if isinstance(cfg_eos, (list, tuple)) else [cfg_eos])
        self.eos = {e for e in eos if e is not None}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)

    @property
    def device(self):
        return next(self.model.parameters()).device

    def _forward(self, ids, attn, past):
        pos = (attn.sum(-1, keepdim=True) - 1).clamp(min=0) if past is not None else \
            (attn.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos,
                         past_key_values=past, use_cache=True)
        return out.logits[:, -1, :].float(), out.past_key_values

    @torch.inference_mode()
    def generate(self, specs: list[RowSpec], sampling: SamplingConfig,
                 on_text: Callable[[int, str], None] | None = None) -> list[RowOutput]:
        dev = self.device
        B = len(specs)
        # -- 1. prefill ---------------------------------------------------------------------
        P = max(len(s.prompt_ids) for s in specs)
        ids = torch.full((B, P), self.pad_id, dtype=torch.long)
        attn = torch.zeros((B, P), dtype=torch.long)
        for i, s in enumerate(specs):
            n = len(s.prompt_ids)
            ids[i, P - n:] = torch.tensor(s.prompt_ids, dtype=torch.long)
            attn[i, P - n:] = 1
        ids, attn = ids.to(dev), attn.to(dev)
        rows = [_Row(i, s, self.vocab, P - 1) for i, s in enumerate(specs)]
        for r in rows:                  # before the prefill: guides may start analyses now
            for g in r.spec.guides:
                g.reset(r.view)
        logits, past = self._forward(ids, attn, None)
        gens = make_generators([s.seed for s in specs], dev) if sampling.temperature > 0 else None
        T, top_p = sampling.temperature, sampling.top_p
        max_steps = 2 * sampling.max_new_tokens + 16   # rollbacks re-do steps; bound them
        for _ in range(max_steps):
            # -- 2. step ----------------------------------------------------------------------
            constrained = [False] * B
            for r in rows:
                if r.finish is None and r.spec.guides:
                    allowed = None
                    for g in r.spec.guides:
                        allowed = intersect(allowed, g.mask(r.view))
                    if allowed is not None:
                        keep_only(logits[r.view.index], allowed)
                        constrained[r.view.index] = True
                        r.constrained += 1
            toks = sample_rows(logits, T, top_p, gens).tolist()   # the one host sync per step
            for r in rows:
                if r.finish is not None:
                    continue
                i, v = r.view.index, r.view
                tok = toks[i]
                forced = r.spec.forced
                if forced is not None:
                    if len(v.tokens) >= len(forced):
                        r.finish = "stop"
                        continue
                    tok = forced[len(v.tokens)]
                if not constrained[i]:
                    for g in r.spec.guides:
                        m = g.check(v, tok)
                        if m is not None and len(m) and forced is None:
                            keep_only(logits[i], m)
                            r.constrained += 1
                            sub = [gens[i]] if gens else None
                            tok = int(sample_rows(logits[i:i + 1], T, top_p, sub)[0])
                            break
                # accept
                v.tokens.append(tok)
                v.text += self.vocab.texts[tok]
                v.ends.append(len(v.text))
                if tok in self.eos:
                    r.finish = "eos"
                    continue
                back = None
                for g in r.spec.guides:
                    b = g.advance(v, tok)
                    if b is not None and back is None:
                        back = b
                if back is not None and forced is None:
                    self._rollback(r, back, attn)
                else:
                    for g in r.spec.guides:
                        cut = g.stop(v)
                        if cut is not None:
                            r.finish, r.cut = "stop", cut
                            break
                if r.finish is None and len(v.tokens) >= sampling.max_new_tokens:
                    r.finish = "length"
                if on_text is not None:
                    on_text(i, v.text if r.cut is None else v.text[: r.cut])
            if all(r.finish is not None for r in rows):
                break
            # -- 3. feed ----------------------------------------------------------------------
            col = attn.shape[1]
            nxt = torch.full((B, 1), self.pad_id, dtype=torch.long)
            new = torch.zeros((B, 1), dtype=torch.long)
            for r in rows:
                if r.finish is not None:
                    continue
                i, v = r.view.index, r.view
                if r.refeed is not None:          # after a rollback to L: token L-1 again
                    nxt[i, 0] = r.refeed
                    r.refeed = None
                    if v.tokens:
                        r.fed_cols.append(col)
                    else:
                        r.last_prompt_col = col
                else:
                    nxt[i, 0] = v.tokens[-1]
                    r.fed_cols.append(col)
                new[i, 0] = 1
            attn = torch.cat([attn, new.to(dev)], dim=1)
            logits, past = self._forward(nxt.to(dev), attn, past)
        else:
            for r in rows:
                if r.finish is None:
                    r.finish = "length"
        outs = []
        for r in rows:
            v = r.view
            text = v.text if r.cut is None else v.text[: r.cut]
            outs.append(RowOutput(text, list(v.tokens), r.finish or "length", v.triggers,
                                  r.rollbacks, r.constrained))
        return outs

    def _rollback(self, r: _Row, length: int, attn: torch.Tensor) -> None:
        """Cut row r back to `length` tokens (see the module docstring)."""
        v = r.view
        i = v.index
        drop_from = max(length - 1, 0)
        cols = r.fed_cols[drop_from:]
        if length == 0:
            cols = cols + [r.last_prompt_col]
            r.refeed = r.spec.prompt_ids[-1]
        else:
            r.refeed = v.tokens[length - 1]
        if cols:
            attn[i, torch.tensor(cols, device=attn.device)] = 0
        del v.tokens[length:]
        del v.ends[length:]
        del r.fed_cols[max(length - 1, 0):]
        v.text = v.text[: v.ends[-1]] if v.ends else ""
        r.rollbacks += 1
        for g in r.spec.guides:
            g.rewind(v, length)
