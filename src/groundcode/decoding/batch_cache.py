"""The running batch's cache: rows' KV tensors, the attention mask and the next-token logits, and
the column surgery that lets rows join and leave between steps without copying (a base of
engine.Batch). A cut or an evicted row only masks columns; columns masked in every row are
dropped (`compact`). Test: tests/test_engine.py, tests/test_kv.py.
"""
from __future__ import annotations


import torch

from . import kv
from .rows import Row


class BatchCache:
    def __init__(self, engine, drafter=None):
        self.engine = engine
        self.drafter = drafter               # drafts.Drafter: greedy rows verify drafts; None: off
        self.rows: list[Row] = []
        self._layers: list | None = None     # [(k, v)] [B, H, L, D]
        self._past = None                    # the cache object holding `layers` (kv.py), kept
                                             # from one forward to the next while they are unchanged
        self.attn: torch.Tensor | None = None
        self.logits: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def layers(self) -> list | None:
        return self._layers

    @layers.setter
    def layers(self, value) -> None:      # new tensors: the next forward wraps them afresh
        self._layers, self._past = value, None

    def _forward(self, ids, pos, last_only: bool = True):
        past = self._past if self._past is not None else kv.cache(self._layers)
        logits, past = self.engine.forward(ids, self.attn, past, pos, last_only)
        self._layers, self._past = kv.layers(past), past
        return logits

    @property
    def columns(self) -> int:
        return 0 if self.attn is None else self.attn.shape[1]

    def add(self, rows: list[Row], logits: torch.Tensor, layers: list) -> None:
        """Rows that share one prefilled prompt join the batch (left-padded to a common length)."""
        n, P = len(rows), layers[0][0].shape[2]
        L = max(self.columns, P)
        shift, off = L - self.columns, L - P
        new_attn = torch.zeros((n, L), dtype=torch.long, device=logits.device)
        new_attn[:, off:] = 1
        if self.layers is None:
            self.layers = [(k.expand(n, -1, -1, -1).contiguous(), v.expand(n, -1, -1, -1).contiguous())
                           for k, v in layers]
            self.attn, self.logits = new_attn, logits.expand(n, -1).clone()
        else:
            self.layers = [(torch.cat([kv.pad_left(kb, shift), kv.pad_left(kn, off).expand(n, -1, -1, -1)]),
                            torch.cat([kv.pad_left(vb, shift), kv.pad_left(vn, off).expand(n, -1, -1, -1)]))
                           for (kb, vb), (kn, vn) in zip(self.layers, layers)]
            pad = torch.zeros((self.attn.shape[0], shift), dtype=torch.long, device=self.attn.device)
            self.attn = torch.cat([torch.cat([pad, self.attn], 1), new_attn])
            self.logits = torch.cat([self.logits, logits.expand(n, -1)])
            for r in self.rows:
                r.fed_cols = [c + shift for c in r.fed_cols]
                r.draft_cols = [c + shift for c in r.draft_cols]
                r.last_prompt_col += shift
        for r in rows:
            r.last_prompt_col = L - 1
            r.view.index = len(self.rows)
            self.rows.append(r)

    def evict(self) -> list[Row]:
        """Finished rows leave at once: their cache rows are dropped, then the columns no row
        needs any more."""
        gone = [r for r in self.rows if not r.live]
        if not gone:
            return gone
        keep = [i for i, r in enumerate(self.rows) if r.live]
        self.rows = [self.rows[i] for i in keep]
        if not keep:
            self.layers = self.attn = self.logits = None
            return gone
        sel = torch.tensor(keep, device=self.attn.device)
        self.layers = [(k.index_select(0, sel), v.index_select(0, sel)) for k, v in self.layers]
        self.attn, self.logits = self.attn.index_select(0, sel), self.logits.index_select(0, sel)
        for i, r in enumerate(self.rows):
            r.view.index = i
        self.compact()
        return gone

    def compact(self) -> None:
        """Drop the cache columns masked in every row (positions are explicit, so this is free)."""
        used = self.attn.bool().any(0)
        if bool(used.all()):
            return
        idx = used.nonzero().squeeze(1)
        new_of = (used.long().cumsum(0) - 1).tolist()
        self.layers = [(k.index_select(2, idx), v.index_select(2, idx)) for k, v in self.layers]
        self.attn = self.attn.index_select(1, idx)
        for r in self.rows:
            r.fed_cols = [new_of[c] for c in r.fed_cols]
            r.draft_cols = [new_of[c] for c in r.draft_cols]
            r.last_prompt_col = new_of[r.last_prompt_col]

    def mask_columns(self, i: int, cols: list[int]) -> None:
        """Row i no longer attends to these cache columns (a cut, unused draft tokens)."""
        if cols:
            self.attn[i, torch.tensor(cols, device=self.attn.device)] = 0

    def _trim(self) -> None:
        """Drop trailing columns no row attends to (unused drafts): a slice, nothing copied."""
        used = self.attn.bool().any(0)
        if bool(used[-1]):
            return
        n = int(used.nonzero().max()) + 1 if bool(used.any()) else 0
        n = max(n, max((r.last_prompt_col + 1 for r in self.rows), default=0))
        if n < self.attn.shape[1]:
            self.layers = [(k[:, :, :n], v[:, :, :n]) for k, v in self.layers]
            self.attn = self.attn[:, :n]

    @property
    def nbytes(self) -> int:
        return 0 if self.layers is None else kv.nbytes(self.layers)
