"""A row of the engine and what goes in and out of it: RowSpec (what a row decodes), Row (its
running state: tokens, guides' checkpoints, KV columns, drafts), Event (what a step reports) and
RowOutput (how it ended), with the event kinds. Test: tests/test_engine.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import SamplingConfig
from .checkpoints import Checkpoints
from .guides.base import Guide, RowView, Stop, TriggerRecord
from .sampling import make_generators

TOKEN, TRIGGER, FINAL, ROLLBACK, STOP, FINISHED = "token", "trigger", "final", "rollback", "stop", "finished"


@dataclass
class RowSpec:
    prompt_ids: list[int]
    context: object = None              # what guides read (CodeContext); never the prompt
    guides: list[Guide] = field(default_factory=list)
    seed: int = 0
    id: object = None                   # the row's name in events (default: its index)
    stop_ids: frozenset = frozenset()   # extra end-of-text ids (e.g. FIM's pad / file separator)
    choose: object = None               # token policy (replay.Teacher); None: sample and verify
    draft: object = None                # drafts.Reference: what the row probably writes (the last
                                        #   suggestion here, when the user typed its start)


@dataclass
class RowOutput:
    completion: str
    tokens: list[int]
    finish_reason: str                  # eos | length | stop | cancelled | deadline | error
    triggers: list[TriggerRecord]
    rollbacks: int = 0
    constrained_steps: int = 0
    stop: Stop | None = None            # the guide's stop (reason, payload) when "stop"
    id: object = None
    error: str | None = None            # "error": what failed (a guide raised)
    drafted: int = 0                    # draft tokens fed (drafts.py) and accepted
    draft_accepted: int = 0


@dataclass
class Event:
    kind: str                           # TOKEN | TRIGGER | FINAL | ROLLBACK | STOP | FINISHED
    row: object                         # RowSpec.id
    token: int | None = None            # TOKEN
    text: str = ""                      # TOKEN / FINAL: new text; ROLLBACK: the text that stays
    length: int | None = None           # ROLLBACK: tokens kept
    trigger: TriggerRecord | None = None
    triggers: tuple = ()                # FINAL: triggers that became final
    stop: Stop | None = None
    output: RowOutput | None = None     # FINISHED


class Row:
    """Engine-side state of one row (the guides see `view`)."""

    def __init__(self, engine, spec: RowSpec, sampling: SamplingConfig, index: int = 0):
        self.spec = spec
        self.id = index if spec.id is None else spec.id
        self.sampling = sampling
        self.guides = list(spec.guides)
        self.view = RowView(index=index, context=spec.context, vocab=engine.vocab)
        for g in self.guides:            # before the prefill: guides may start analyses now
            g.reset(self.view)
        self.ck = Checkpoints(self.view, self.guides)
        self.scorers = [g for g in self.guides if type(g).logits is not Guide.logits]
        self.finals = [g for g in self.guides if type(g).final_upto is not Guide.final_upto]
        self.enders = [g for g in self.guides if type(g).end_at is not Guide.end_at]
        self.gen = None
        if sampling.temperature > 0:
            self.gen = make_generators([spec.seed], engine.device)[0]
        self.text_stream = engine.detok.stream()      # provisional text (TOKEN events)
        self.final_stream = engine.detok.stream()     # text that will not be taken back
        self.final_k = 0                 # tokens[:final_k] are final
        self.final_triggers = 0          # triggers[:final_triggers] went out as final
        self.seen_triggers = 0
        self.fed_cols: list[int] = []    # fed_cols[k] = cache column where tokens[k] was fed
        self.last_prompt_col = -1
        self.refeed: int | None = None   # token to feed again after a cut
        self.draft: list[int] = []       # draft tokens fed after the last token (drafts.py),
        self.draft_cols: list[int] = []  #   their cache columns
        self.draft_logits = None         #   and the logits after each of them
        self._prompt_arr = None
        self.drafted = self.draft_accepted = 0
        self.finish: str | None = None
        self.stop: Stop | None = None
        self.error: str | None = None
        self.rollbacks = 0
        self.constrained = 0
        self.allowed = None              # this step's combined mask (step.py), for the verdict
        self.raw_logits = None           # this step's logits before that mask (a refusal of more authority)
        self.steps = 0
        self.held = False                # this step: a guide holds the row (an answer it needs
                                         #   first is running): no token, its logits kept
        self.settling = None             # (reason, [(tickets, until)]): the row ends once the
                                         #   answers its guides owe land (step.py's poll)
        self.output: RowOutput | None = None

    @property
    def live(self) -> bool:
        return self.finish is None

    @property
    def waiting(self) -> bool:
        """Held this step, or settling: the row takes no token and feeds no input of its own."""
        return self.held or self.settling is not None

    def lookup_seq(self):
        """Prompt + tokens as an int64 array (prompt lookup drafts)."""
        import numpy as np
        if self._prompt_arr is None:
            self._prompt_arr = np.asarray(self.spec.prompt_ids, dtype=np.int64)
        return np.concatenate([self._prompt_arr, np.asarray(self.view.tokens, dtype=np.int64)])
