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
    advance(row, token)      the token was accepted; may return a `Rollback(length, reason)`
                             proposal (a bare int is Rollback(int, "guide"))
    stop(row)                None; or a `Stop(reason, cut, payload)` (the engine emits a stop
                             event and ends the row); a bare int is Stop("stop", cut=int)
    settle(row)              the row is about to finish (eos, stop, length): settle what is
                             still open (an analysis answer owed); may return a Rollback (the
                             row then goes on)

Checkpoints belong to the engine (decoding/checkpoints.py): after every accepted token it takes
`snapshot()` of every guide (cheap: a waiting guide returns the same immutable object), and on
any cut — whoever proposed it — it restores every guide with `restore(row, snap)` (`row` is
already cut back) and drops the triggers recorded after the cut. Proposals are resolved by the
engine: the shortest cut wins, and only then is its proposer told, `rolled_back(row, proposal)`,
where it sets its redo state (a guide never changes state merely by asking). A host that cannot
roll back (teacher-forced replay) calls `declined(row, proposal)` instead.
`final_upto(row)` says how far the row's text is final (no proposal of this guide will ever cut
below it): text after an unresolved speculation is held back from streams until it settles.
`end_at(row, reason)` says where the row's text may end when the row ends now without reaching
a boundary of its own (a deadline, a cancel, the length limit, another guide's stop): the
dereference monitor ends it before a name it has not finished checking, and its record says
what was cut (`TriggerRecord.cut`).

Seams for remedies: `row.force(ids)` queues tokens the engine feeds next without sampling
(a tool-token guide inserts a chosen suggestion; a lone remaining candidate is fast-forwarded);
a `Stop` carries a payload out to whoever consumes the engine's events (DAG++ stops at an
unknown API and re-prompts). A cut clears the row's forced queue.

Guides compose per row: masks are intersected, the first non-None check wins, the first
guide that stops ends the row.
Not here: the loop (engine.py), checkpoints (checkpoints.py), the registry by name (registry.py).
Test: tests/test_engine.py (forced tokens, stop events, proposals), tests/test_guides_rewind.py.
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
    asked: bool = True                 # the analyzer was asked (not: a type it could only guess)
    analyzer: str = ""                 # which analyzer was asked (jedi, ty, botocore+jedi, ...)
    vocabulary: str | None = None      # the type was unknown (this reason): the name was held
                                       # to the project's member vocabulary instead of failing open
    trusted: bool = False              # the analyzer's root is trusted: its own venv may run (trust.py)
    kind: str = "member"               # what was checked: "member" (after a dot), "name" (read
                                       # from scope), "import" (a module or a name it exports)
    cut: str | None = None             # the row ended (deadline, cancel, length) inside this
                                       # trigger's name: the part written, not shown (the text
                                       # ends before the receiver's dot)

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
    context: object                     # api.CodeContext (path, repo, before, after, scope, ...);
                                        # None becomes context.PLAIN (a plain prompt)
    vocab: object                       # decoding.vocab.VocabIndex
    tokens: list[int] = field(default_factory=list)
    text: str = ""                      # concatenated token texts of `tokens`
    ends: list[int] = field(default_factory=list)   # ends[k] = len(text) after token k
    triggers: list[TriggerRecord] = field(default_factory=list)
    forced: deque = field(default_factory=deque)    # token ids the engine feeds next, unsampled
    cancelled: object = None            # set()/is_set() (a threading.Event, or the scheduler's
                                        # one that also reads the request's deadline): analysis
                                        # waits end at once when it is set
    polled: bool = False                # True while `settle` runs after the host polled the
                                        # row's owed answers (Guide.owes): settle waits no more

    def __post_init__(self):
        if self.context is None:            # a plain prompt: the empty context, never None
            from ...context import PLAIN
            self.context = PLAIN

    def force(self, ids) -> None:
        """Queue tokens to be accepted next without sampling (guides still advance on them)."""
        self.forced.extend(int(t) for t in ids)


def on_vocab(vocab, attr: str, make):
    """What `make()` builds for this vocabulary, built once and kept on the vocab object as
    `attr` (a vocabulary that takes no attributes builds it on every call)."""
    got = getattr(vocab, attr, None)
    if got is None:
        got = make()
        try:
            setattr(vocab, attr, got)
        except AttributeError:
            pass
    return got


def token_flags(vocab) -> tuple[list, list]:
    """(has_dot, has_newline) of every token as Python lists: a list index costs a fraction of
    a numpy scalar index, and guides ask on every step. Cached on the vocab object."""
    return on_vocab(vocab, "_guide_flags", lambda: (vocab.has_dot.tolist(), vocab.has_newline.tolist()))


@dataclass(frozen=True)
class Rollback:
    """A guide's proposal to cut the row back to `length` tokens; `payload` is the guide's own
    (what it will set in `rolled_back` if its proposal wins)."""
    length: int
    reason: str = "guide"
    payload: object = None


def as_rollback(value) -> "Rollback | None":
    """What advance/settle returned, as a proposal (None, an int or a Rollback)."""
    if value is None or isinstance(value, Rollback):
        return value
    return Rollback(int(value))


class Guide:
    """Base class with the no-op behaviour; subclasses override what they need. A guide either
    declares its state (`snapshot`/`restore`: the engine keeps one snapshot per accepted token
    and restores them on any cut) or says it has none (`stateless = True`): a class doing
    neither is refused when it is defined, so no guide can forget a snapshot
    (tests/test_guides_property.py checks every guide's restores against fresh replays)."""

    stateless = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.stateless:
            return
        snap, rest = cls.snapshot is not Guide.snapshot, cls.restore is not Guide.restore
        if not (snap and rest):
            raise TypeError(f"guide {cls.__name__}: define snapshot() and restore() (its state, restored "
                            "on every cut), or declare `stateless = True`")

    def reset(self, row: RowView) -> None:
        pass

    def logits(self, row: RowView, scores) -> None:
        pass

    def mask(self, row: RowView) -> np.ndarray | None:
        return None

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        return None

    def advance(self, row: RowView, token: int) -> "Rollback | int | None":
        return None

    def stop(self, row: RowView) -> "Stop | int | None":
        return None

    def settle(self, row: RowView) -> "Rollback | int | None":
        return None

    def owes(self, row: RowView) -> "tuple[list, float] | None":
        """The row is about to finish: the tickets `settle` would wait for, still running, and
        the perf_counter instant the wait may last until (WaitPolicy.until); None: nothing owed.
        A host that polls (engine.Batch, remote.RemoteBatch) keeps the row out of its steps until
        they land or the instant passes — the batch's other rows go on — then calls `settle` with
        `row.polled` set, and settle reads what landed without waiting."""
        return None

    # -- checkpoints (the engine owns them) ----------------------------------------------------
    def snapshot(self) -> object:
        """This guide's state after the last accepted token; immutable (or never mutated)."""
        return None

    def restore(self, row: RowView, snap: object) -> None:
        """Back to a snapshot; `row` is already cut back to the snapshot's length."""

    def holding(self, row: RowView) -> bool:
        """Asked by a host that holds rows (engine.Batch after the scores, remote.RemoteBatch)
        before it takes a token for this row: True while an answer the guide needs first is
        still running (the row takes no token and keeps its logits; the batch's other rows go
        on). A guide that holds ends the hold itself (the answer landed, or its deadline passed:
        it fails open)."""
        return False

    def tokens_in_chunks(self) -> None:
        """The host's tokens arrive a chunk at a time (a remote server): a guide that would
        speculate ahead of its answers waits for them instead."""

    def rolled_back(self, row: RowView, proposal: Rollback) -> None:
        """This guide's proposal won: the row was cut and every guide restored; set the state to
        redo from here (e.g. the trigger again, now under the mask)."""

    def declined(self, row: RowView, proposal: Rollback) -> None:
        """The host does not roll back (teacher-forced replay): carry on as if accepted."""

    def final_upto(self, row: RowView) -> int:
        """Text offset up to which the row's text is final for this guide (default: all)."""
        return len(row.text)

    def end_at(self, row: RowView, reason: str) -> int:
        """The row ends now for `reason` ("deadline", "cancelled", "length", "stop", "eos") with
        nothing more to settle: the text offset its shown text may reach (default: all of it).
        Called once, when the row's output is made; a guide that drops text says so in its
        records."""
        return len(row.text)
