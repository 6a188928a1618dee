"""Check first, constrain what fails (issue 41): a whole body is written freely, judged by a
checker (the compiler's diagnostics for TypeScript, pylint's for Python: checkers.py), and where a
problem falls in the generated text it is written again from the start of the first failing line
with the monitors on; at most `rounds` writes within `budget_s`. Never worse by the checker's own
count: a rewrite with more problems than the text it replaces is dropped.

    out = check_first(gen, ctx, SamplingConfig(stop="block"), checker, rounds=2, budget_s=60)
    out.generation.completion, out.strategy      # "free" | "rewritten" | "kept free" | ...
    out.problems                                 # per write: [Problem(offset, code, message)]

The strategies side by side (docs/BENCHMARK.md): "free" (monitors off), "always constrained"
(monitors on from the first token: `gen.run`), "check first" (this). With greedy decoding the
rewrite is the monitored model's from the cut on, so a further round only happens where the
rewrite still fails beyond the cut and the rewritten text changed (a round that writes the same
text again ends the loop).
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
    strategy: str                            # "free": no problem; "rewritten"; "unchanged" (the
                                             # monitors wrote the same text); "kept free" (the
                                             # rewrite was worse); "budget" (no time to rewrite)
    writes: int = 1                          # generations run (1: the free one only)
    problems: list = field(default_factory=list)   # per write, the checker's problems in it
    check_s: float = 0.0                     # seconds in the checker
    total_s: float = 0.0

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "writes": self.writes, "check_s": round(self.check_s, 3),
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


def check_first(gen, ctx: CodeContext, sampling: SamplingConfig, checker: Checker, *, rounds: int = 2,
                budget_s: float = 60.0) -> Checked:
    """`gen` (api.Generator) writes freely with its monitors off, then rewrites with them on
    (its own MonitorConfig, enabled) from the first failing line; `rounds` writes at most."""
    t0 = time.perf_counter()
    free = gen.view(monitor=replace(gen.monitor, enabled=False))
    on = gen.view(monitor=replace(gen.monitor, enabled=True))
    g = free.run([ctx], sampling)[0][0]
    out = Checked(generation=g, strategy="free")
    c0 = time.perf_counter()
    found = _sorted(checker(ctx, g.completion))
    out.check_s += time.perf_counter() - c0
    out.problems.append(found)
    floor = 0                                 # a rewrite starts at or after the last cut
    while found and out.writes < max(1, rounds):
        first = next((p for p in found if p.offset >= floor), None)
        if first is None:
            break
        if time.perf_counter() - t0 > budget_s:
            out.strategy = "budget" if out.strategy == "free" else out.strategy
            break
        kept = cut_at(out.generation.completion, first)
        used = round(out.generation.tokens * len(kept) / max(1, len(out.generation.completion)))
        s = replace(sampling, max_new_tokens=max(1, sampling.max_new_tokens - used))
        g2 = on.run([continued(ctx, kept)], s)[0][0]
        out.writes += 1
        text = kept + g2.completion
        if text == out.generation.completion:    # the monitors wrote the same text: no progress
            out.strategy = "unchanged" if out.strategy == "free" else out.strategy
            break
        c0 = time.perf_counter()
        again = _sorted(checker(ctx, text))
        out.check_s += time.perf_counter() - c0
        out.problems.append(again)
        if len(again) > len(found):               # worse by the checker's own count: keep what was
            out.strategy = "kept free" if out.strategy == "free" else out.strategy
            break
        out.generation = replace(g2, completion=text, tokens=used + g2.tokens,
                                 triggers=list(out.generation.triggers) + list(g2.triggers),
                                 rollbacks=out.generation.rollbacks + g2.rollbacks,
                                 seconds=out.generation.seconds + g2.seconds, monitored=True)
        out.strategy = "rewritten"
        found, floor = again, len(kept)
    out.total_s = time.perf_counter() - t0
    return out


def _sorted(problems) -> list:
    return sorted(problems, key=lambda p: p.offset)
