"""Check first, constrain what fails (issue 41): a whole body is written freely, judged by a
checker (the compiler's diagnostics for TypeScript, ty's or pylint's for Python: checkers.py), and where a
problem falls in the generated text it is written again from the start of the first failing line
with the monitors on; at most `rounds` writes within `budget_s`. Never worse by the checker's own
count: a rewrite with more problems than the text it would replace is dropped.

    out = check_first(gen, ctx, SamplingConfig(stop="block"), checker, rounds=3, budget_s=60)
    out.generation.completion, out.strategy      # "free" | "rewritten" | "kept free" | ...
    out.problems                                 # per write: [Problem(offset, code, message)]

The strategies side by side (docs/BENCHMARK.md): "free" (monitors off), "always constrained"
(monitors on from the first token: `gen.run`), "check first" (this). With greedy decoding the
first rewrite from a cut is the monitored model's own text, which the monitors may leave as it
was (a type error is no member, name or call they know); a cut already written that way is
written again sampled (seeded), and the checker keeps the best text.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

from .config import SamplingConfig
from .context import CodeContext


@dataclass(frozen=True)
class Problem:
    offset: int          # in the completion (characters from the region's start)
    code: str            # the checker's name for it: "TS2339", "no-member", ...
    message: str = ""


Checker = Callable[[CodeContext, str], list]     # (context, completion) -> [Problem]


@dataclass
class Checked:
    generation: object                       # contract.Generation: the text kept
    strategy: str                            # "free": no problem; "rewritten"; "unchanged" (every
                                             # rewrite wrote the free text again); "kept free" (no
                                             # rewrite was better); "budget" (no time to rewrite)
    writes: int = 1                          # generations run (1: the free one only)
    problems: list = field(default_factory=list)   # per text judged (a repeated text is not), its problems
    check_s: float = 0.0                     # seconds in the checker
    total_s: float = 0.0
    checker: str = ""                        # its name ("ty", "pylint", "tsc"), where it has one
    free_s: float = 0.0                      # seconds of the free write (what check-first adds:
                                             # total_s - free_s)

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "writes": self.writes, "check_s": round(self.check_s, 3),
                "checker": self.checker, "free_s": round(self.free_s, 3),
                "total_s": round(self.total_s, 3),
                "problems": [[{"offset": p.offset, "code": p.code, "message": p.message} for p in found]
                             for found in self.problems]}


def cut_at(completion: str, problem: Problem) -> str:
    """The text kept before a rewrite: the whole lines before the problem's line."""
    at = max(0, min(problem.offset, len(completion)))
    return completion[: completion.rfind("\n", 0, at) + 1]


def continued(ctx: CodeContext, kept: str) -> CodeContext:
    """The context of a rewrite: `kept` (whole lines, the lead included) is now the file's."""
    if not kept:
        return ctx
    return replace(ctx, before=ctx.before + kept, lex_prefix=ctx.lex_prefix + kept, lead="",
                   starts_at_line=True, version="", reference=None)


def check_first(gen, ctx: CodeContext, sampling: SamplingConfig, checker: Checker, *, rounds: int = 3,
                budget_s: float = 60.0, explore: float = 0.7) -> Checked:
    """`gen` (api.Generator) writes freely with its monitors off; where the checker finds a
    problem, the text is written again with the monitors on (its own MonitorConfig, enabled)
    from the start of the first failing line of the best text so far — first as `sampling` says
    (greedy: the monitored model's own text from the cut), then, where a cut was already tried
    that way, sampled at temperature `explore` (seeded by the write's number: reproducible).
    The text kept has the fewest problems (on a tie, the one whose first problem comes later;
    else the earlier text). `rounds` writes at most, the free one included, within `budget_s`."""
    t0 = time.perf_counter()
    free = gen.view(monitor=replace(gen.monitor, enabled=False))
    on = gen.view(monitor=replace(gen.monitor, enabled=True))
    g = free.run([ctx], sampling)[0][0]
    out = Checked(generation=g, strategy="free", checker=getattr(checker, "name", ""),
                  free_s=time.perf_counter() - t0)
    found = _check(out, checker, ctx, g.completion)
    seen, tried, changed = {g.completion}, set(), False
    while found and out.writes < max(1, rounds):
        if time.perf_counter() - t0 > budget_s:
            out.strategy = "budget" if out.strategy == "free" else out.strategy
            break
        best = out.generation
        kept = cut_at(best.completion, found[0])
        used = round(best.tokens * len(kept) / max(1, len(best.completion)))
        s = replace(sampling, max_new_tokens=max(1, sampling.max_new_tokens - used))
        if len(kept) in tried:                # this cut was written as `sampling` says: explore
            s = replace(s, temperature=explore, top_p=0.95, seed=sampling.seed + out.writes)
        tried.add(len(kept))
        g2 = on.run([continued(ctx, kept)], s)[0][0]
        out.writes += 1
        text = kept + g2.completion
        if text in seen:                      # nothing new to judge
            continue
        seen.add(text)
        changed = True
        again = _check(out, checker, ctx, text)
        if len(again) < len(found) or len(again) == len(found) and again[0].offset > found[0].offset:
            out.generation = replace(g2, completion=text, tokens=used + g2.tokens,
                                     triggers=list(best.triggers) + list(g2.triggers),
                                     rollbacks=best.rollbacks + g2.rollbacks,
                                     seconds=best.seconds + g2.seconds, monitored=True)
            out.strategy, found = "rewritten", again
    if out.strategy == "free" and out.writes > 1:
        out.strategy = "kept free" if changed else "unchanged"
    out.total_s = time.perf_counter() - t0
    return out


def _check(out: Checked, checker: Checker, ctx: CodeContext, text: str) -> list:
    c0 = time.perf_counter()
    found = sorted(checker(ctx, text), key=lambda p: p.offset)
    out.check_s += time.perf_counter() - c0
    out.problems.append(found)
    return found
