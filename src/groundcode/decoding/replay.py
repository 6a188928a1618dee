"""Teacher-forced replay: the guides run exactly as in generation (scores read, masks built,
free tokens checked, proposals made), but the row takes the reference's tokens. Its own driver
over the engine's one step (engine.Batch.step), kept out of the production path: the step only
asks the row's token policy (`RowSpec.choose`), and this module is that policy.

    out = replay(engine, spec, reference_ids, sampling)      # RowOutput; out.tokens == reference
    spec.choose = Teacher(reference_ids)                     # or: any RowSpec, any driver

What a grounding audit reads: the guides' masks and checks at every reference token (would
generation have been blocked?), their trigger records, and the rollbacks they proposed — which
a replay declines (`Guide.declined`: the guide carries on as after a binding), never applies.
When the reference is exhausted the row ends as a generated one does: the guides `settle` (the
answers still owed are waited for, within the batch's WaitPolicy, and judged).
Test: tests/test_engine.py (replay keeps its tokens, guides see every check).
"""
from __future__ import annotations

from ..config import SamplingConfig
from .engine import Engine, RowOutput, RowSpec


class Teacher:
    """Token policy: the reference's next token; None (the row stops) once it is exhausted."""
    rollbacks = False                  # proposals are declined, never applied

    def __init__(self, reference: list[int]):
        self.reference = list(reference)

    def __call__(self, row, sampled: int, constrained: bool) -> int | None:
        v = row.view
        if len(v.tokens) >= len(self.reference):
            return None
        tok = self.reference[len(v.tokens)]
        if not constrained:            # guides see the checks of generation (an audit counts
            for g in row.guides:       # them); the reference token stays
                if g.check(v, tok) is not None:
                    break
        return tok


def replay(engine: Engine, spec: RowSpec, reference: list[int],
           sampling: SamplingConfig | None = None) -> RowOutput:
    """One row teacher-forced through `reference` (max_new_tokens is raised to cover it)."""
    from dataclasses import replace
    s = sampling or SamplingConfig()
    s = replace(s, max_new_tokens=max(s.max_new_tokens, len(reference) + 1))
    spec = replace(spec, choose=Teacher(reference))
    return engine.generate([spec], s)[0]
