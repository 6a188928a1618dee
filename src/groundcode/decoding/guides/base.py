"""The guide protocol and the per-row view guides see. Knows no analyzer and no tensors.

A guide is a small state machine (MGD eq. 1-4: trigger -> analysis -> mask -> update):

    reset(row)               once per row before decoding
    mask(row)                before sampling: allowed token ids (np.ndarray) or None = free.
                             Must be ~free when the guide is waiting.
    check(row, token)        after a *free* sample: None = accept, or allowed ids to resample
                             under (how merged-dot BPE tokens such as `.append` get verified)
    advance(row, token)      the token was accepted; may return a length to roll back to
    rewind(row, length)      the row was cut back to `length` tokens (by this or another guide)
    stop(row)                None, or the text length to cut the completion at (then stop)

Guides compose per row: masks are intersected, the first non-None check wins.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class TriggerRecord:
    """One trigger of a monitor, for the CLI summary and the benchmark."""
    receiver: str
    candidates: int
    chosen: str | None = None
    analysis_ms: float = 0.0
    cache_hit: bool = False
    failed_open: bool = False
    reason: str | None = None          # why it failed open ("timeout", "empty", ...)
    binding: bool = False              # left free as an assignment target (`self.x = ...`)
    rolled_back: bool = False          # speculation was undone and redone under the mask
    constrained: bool = False          # a mask was applied at least once

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class RowView:
    """What guides may read about one row. The engine owns and updates it."""
    index: int
    context: object                     # api.CodeContext (path, repo, before, after, scope, ...)
    vocab: object                       # decoding.vocab.VocabIndex
    tokens: list[int] = field(default_factory=list)
    text: str = ""                      # concatenated token texts of `tokens`
    ends: list[int] = field(default_factory=list)   # ends[k] = len(text) after token k
    triggers: list[TriggerRecord] = field(default_factory=list)


def token_flags(vocab) -> tuple[list, list]:
    """(has_dot, has_newline) of every token as Python lists: a list index costs a fraction of
    a numpy scalar index, and guides ask on every step. Cached on the vocab object."""
    flags = getattr(vocab, "_guide_flags", None)
    if flags is None:
        flags = (vocab.has_dot.tolist(), vocab.has_newline.tolist())
        try:
            vocab._guide_flags = flags
        except AttributeError:
            pass
    return flags


class Guide:
    """Base class with the no-op behaviour; subclasses override what they need."""

    def reset(self, row: RowView) -> None:
        pass

    def mask(self, row: RowView) -> np.ndarray | None:
        return None

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        return None

    def advance(self, row: RowView, token: int) -> int | None:
        return None

    def rewind(self, row: RowView, length: int) -> None:
        pass

    def stop(self, row: RowView) -> int | None:
        return None
