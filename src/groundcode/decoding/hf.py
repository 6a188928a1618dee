"""The same guides for users of `model.generate`: a transformers LogitsProcessor (mask-only).

    row_ctx = ctx.continued("")          # the prompt is row_ctx.before (no token healing here)
    proc = GuidesLogitsProcessor(vocab, [[DereferenceMonitor(analyzer, rollback=False)]], [row_ctx],
                                 eos_token_id=tokenizer.eos_token_id)
    model.generate(ids, logits_processor=LogitsProcessorList([proc]), ...)

Differences from the engine, which owns its loop: no rollback (binding positions such as
`self.x = ...` are left unconstrained instead of speculated; a proposal to roll back is
declined, `Guide.declined`), and a token is verified (every guide's check, step.py's
`refusal_of`, inside the step's mask) only when it is the top-1 choice (the engine verifies
whatever was sampled). A guide's stop ends the row with end of text
(its cut is not applied: the text up to the stop is generated); `settle` is called when a row
is about to end (its proposals are declined too).
Each `generate` call starts afresh (the processor notices a new prompt and resets its guides);
`num_return_sequences` > 1 gives every sequence its own copy of its prompt's guides. Beam search
reorders sequences between steps, which per-row guide state cannot follow: refused with a
GroundcodeError.
Not here: the engine (engine.py). Test: tests/test_hf_adapter.py.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from transformers import LogitsProcessor

from ..errors import GroundcodeError
from .guides.base import Guide, RowView
from .masking import keep_only
from .sampling import greedy
from .step import advance_declining, mask_of, refusal_of, settle_declining


class GuidesLogitsProcessor(LogitsProcessor):
    def __init__(self, vocab, guides: list[list[Guide]], contexts: list[object], eos_token_id=None):
        self.vocab = vocab
        self.contexts = list(contexts)
        self.prompt_guides = [list(gs) for gs in guides]
        eos = eos_token_id if isinstance(eos_token_id, (list, tuple, set)) else [eos_token_id]
        self.eos = [int(e) for e in eos if e is not None]
        self._begin(len(self.contexts), fresh=False)

    def _begin(self, batch: int, fresh: bool = True) -> None:
        """Rows for a new generation of `batch` sequences (a multiple of the prompts)."""
        P = len(self.contexts)
        if batch % P:
            raise GroundcodeError(f"GuidesLogitsProcessor: {batch} sequences for {P} prompts "
                                  "(expected a multiple: num_return_sequences)")
        k = batch // P
        self.rows, self.guides = [], []
        for b in range(batch):
            i = b // k                            # generate() expands prompts with repeat_interleave
            gs = self.prompt_guides[i]
            if fresh or b % k:
                gs = [copy.copy(g) for g in gs]
            self.rows.append(RowView(b, self.contexts[i], self.vocab))
            self.guides.append(gs)
            for g in gs:
                g.reset(self.rows[-1])
        self.stopped = [False] * batch
        self.prompt_len: int | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        B, T = input_ids.shape
        if self.prompt_len is not None and (
                B != len(self.rows) or T <= self.prompt_len + len(self.rows[0].tokens)
                or not torch.equal(input_ids[:, : self.prompt_len].cpu(), self._prompt)):
            self._begin(B)                        # another generate() call: start afresh
        elif self.prompt_len is None and B != len(self.rows):
            self._begin(B)
        if self.prompt_len is None:
            self.prompt_len = T
            self._prompt = input_ids.detach().cpu().clone()
        for row, gs in zip(self.rows, self.guides):
            i = row.index
            seen = input_ids[i, self.prompt_len: self.prompt_len + len(row.tokens)].tolist()
            if seen != row.tokens:
                raise GroundcodeError("GuidesLogitsProcessor cannot follow beam search (num_beams > 1): "
                                      "sequences are reordered between steps; use greedy or sampling")
            for tok in input_ids[i, self.prompt_len + len(row.tokens):].tolist():
                row.tokens.append(tok)            # what generate() chose since the last call
                row.text += self.vocab.texts[tok] if tok < len(self.vocab.texts) else ""
                row.ends.append(len(row.text))
                if self.stopped[i]:
                    continue
                advance_declining(row, gs, tok)   # no rollback here: proposals declined
                if any(g.stop(row) is not None for g in gs):
                    settle_declining(row, gs)
                    self.stopped[i] = True
            if self.stopped[i]:
                if not self.eos:
                    raise GroundcodeError("a guide stopped a row: pass eos_token_id= to GuidesLogitsProcessor")
                scores[i].fill_(float("-inf"))
                scores[i, self.eos] = 0.0         # end the row
                continue
            allowed = mask_of(row, gs)            # the step's phases 2-3 (step.py) on this row
            raw = None
            if allowed is not None and len(allowed):
                raw = scores[i].clone()
                keep_only(scores[i], allowed)
            top = int(greedy(scores[i]))          # verified when it is the top-1 choice
            refused = refusal_of(row, gs, top, allowed) if gs and top < len(self.vocab.texts) else None
            if refused is not None:
                if raw is not None and not len(np.intersect1d(refused, allowed)):
                    scores[i].copy_(raw)          # a mask of less authority yielded (step.py)
                keep_only(scores[i], refused)
            elif (allowed is None or not len(allowed)) and top in self.eos:
                settle_declining(row, gs)         # about to end: what is owed is recorded
        return scores
