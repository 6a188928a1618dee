"""The guide protocol and the per-row view guides see. Knows no analyzer and no tensors.

A guide is a small state machine (MGD eq. 1-4: trigger -> analysis -> mask -> update):

    reset(row)               once per row before decoding
    logits(row, scores)      optional, before the masks (only guides that define it are called):
                             read, and adjust in place, this row's next-token scores (a 1-D
                             tensor): a tool-token guide reads p(<COMP>) or the entropy there
    mask(row)                before sampling: allowed token ids (np.ndarray) or None = free.
                             Must be ~free when the guide is waiting.
    check(row, token)        after a *free* sample: None = accept, or allowed ids to resample
                             under (how merged-dot BPE tokens such as `.append` get verified)
    advance(row, token)      the token was accepted; may return a length to roll back to
    rewind(row, length)      the row was cut back to `length` tokens (by this or another guide)
    stop(row)                None; or a `Stop(reason, cut, payload)` (the engine emits a stop
                             event and ends the row); a bare int is Stop("stop", cut=int)
    settle(row)              the row is about to finish (eos, stop, length): settle what is
                             still open (an analysis answer owed) and maybe return a length to
                             roll back to (the row then goes on)

Seams for remedies: `row.force(ids)` queues tokens the engine feeds next without sampling
(a tool-token guide inserts a chosen suggestion; a lone remaining candidate is fast-forwarded);
a `Stop` carries a payload out to whoever consumes the engine's events (DAG++ stops at an
unknown API and re-prompts). A rollback clears the row's forced queue.

Guides compose per row: masks are intersected, the first non-None check wins, the first
guide that stops ends the row.
Not here: the loop (engine.py). Test: tests/test_engine.py (forced tokens, stop events).
"""
from __future__ import annotations

from collections import deque
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
class Stop:
    """Why a guide ended a row, and what it hands out (e.g. the unknown name DAG++ looks up)."""
    reason: str                         # "body_end", "unknown_api", ...
    cut: int | None = None              # cut the completion's text at this offset (None: keep all)
    payload: object = None


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
    forced: deque = field(default_factory=deque)    # token ids the engine feeds next, unsampled

    def force(self, ids) -> None:
        """Queue tokens to be accepted next without sampling (guides still advance on them)."""
        self.forced.extend(int(t) for t in ids)


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


class History:
    """A stateful guide's snapshots by generated length, for an exact rewind: `mark` after each
    accepted token (later entries of an undone text are dropped), `back(length)` returns
    (triggers the row had, snapshot) as they were when the text was `length` tokens long."""

    def __init__(self):
        self._h: list[tuple[int, int, tuple]] = []

    def mark(self, row: "RowView", snap: tuple) -> None:
        h, n = self._h, len(row.tokens)
        while h and h[-1][0] >= n:
            h.pop()
        h.append((n, len(row.triggers), snap))

    def back(self, length: int) -> tuple[int, tuple]:
        h = self._h
        while len(h) > 1 and h[-1][0] > length:
            h.pop()
        return h[-1][1], h[-1][2]


class Guide:
    """Base class with the no-op behaviour; subclasses override what they need."""

    def reset(self, row: RowView) -> None:
        pass

    def logits(self, row: RowView, scores) -> None:
        pass

    def mask(self, row: RowView) -> np.ndarray | None:
        return None

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        return None

    def advance(self, row: RowView, token: int) -> int | None:
        return None

    def rewind(self, row: RowView, length: int) -> None:
        pass

    def stop(self, row: RowView) -> "Stop | int | None":
        return None

    def settle(self, row: RowView) -> int | None:
        return None
