"""A request's `logit_bias` (OpenAI's completions option): a bias per token id added to the row's
logits before anything is sampled, through the guide's `logits` hook.

    LogitBias(((id, bias), ...))

OpenAI documents +100 / -100 as exclusive selection / a ban, so when every bias is +100 the
allowed ids are kept exactly (every other logit -inf), when every bias is -100 those ids are
banned exactly; any other mix is added as is. This is what the remote back end
(decoding/remote.py) sends on a constrained step, so `groundcode serve` can be its server.
Test: tests/test_remote.py.
"""
from __future__ import annotations

import numpy as np

from ..masking import NEG_INF, keep_only, to_index
from .base import Guide, RowView


class LogitBias(Guide):
    stateless = True                  # the request's bias, the same on every step

    def __init__(self, bias):
        pairs = sorted((int(t), float(b)) for t, b in bias)
        self.ids = np.array([t for t, _ in pairs], dtype=np.int64)
        self.values = [b for _, b in pairs]
        self.mode = "keep" if all(b >= 100 for b in self.values) else \
            "ban" if all(b <= -100 for b in self.values) else "add"

    def logits(self, row: RowView, scores) -> None:
        if not len(self.ids):
            return
        if self.mode == "keep":
            keep_only(scores, self.ids)
        elif self.mode == "ban":
            scores.index_fill_(0, to_index(self.ids, scores.device), NEG_INF)
        else:
            import torch
            scores.index_add_(0, to_index(self.ids, scores.device),
                              torch.tensor(self.values, dtype=scores.dtype, device=scores.device))
