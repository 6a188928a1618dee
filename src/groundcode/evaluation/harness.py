"""Generate samples for benchmark tasks with a named configuration; resumable JSONL keyed by task_id.

A configuration = model + monitor on/off + tool tokens on/off + a sampling schedule. Schedules: "greedy" (1 sample at
temperature 0), "mgd" (MGD's 6 samples: temperatures 0.2, 0.4, 0.6x2, 0.8x2, top-p 0.95), or
"T:N,T:N" (N samples at temperature T). Each finished task appends one record
{task_id, config, samples: [...]} to the samples file; a rerun skips task_ids already there, so an
interrupted run resumes where it stopped. By default the monitor's analysis is waited for
(`reproducible`: no speculation, no deadline cuts, answers keyed by their exact code), so a run's
samples are the same in any process, on any executor, in any task order and under any load;
`reproducible=False` (`--speculate`) measures the editor's path instead. `oracle=True` writes the
reference as the only sample (calibrates the metrics: the reference's own lint success rate, DepCov 1, ...).
Not here: scoring (scoring.py), the decoding loop (decoding/engine.py, reached via groundcode.api).
Test: tests/test_bench_e2e.py (tiny model, fixture repository).
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import GroundcodeError
from ..jsonl import append_jsonl, read_jsonl

MGD_SCHEDULE = ((0.2, 1), (0.4, 1), (0.6, 2), (0.8, 2))


@dataclass
class RunConfig:
    name: str                        # the configuration's name in results and reports
    model: str | None = None         # None = the registry default (smollm2-135m, pulled)
    dtype: str | None = None         # weights' dtype (None: the loader's default, float32 on CPU)
    monitor: bool = True             # dereference monitor on (grounded) or off (baseline)
    schedule: str = "greedy"         # greedy | mgd | T:N,T:N
    top_p: float = 0.95              # used when temperature > 0 (MGD's value)
    seed: int = 0
    max_new_tokens: int = 128
    batch: int = 8                   # contexts per generator call
    fim: str = "auto"                # fill-in-the-middle: auto (cursor tasks) | on | off
    heal: bool = True                # token healing of the prompt's trailing whitespace
    max_prompt_tokens: int = 0       # cap the prompt below the model's window (0: the window)
    tool_tokens: bool = False        # ToolGen's tool-token guide (<COMP> calls the analyzer)
    tool_threshold: float | None = None   # also call when p(<COMP>) >= this
    tool_entropy: float | None = None     # zero-shot: call at name starts with entropy >= this
    declarations: bool = False       # prepend the IDE's declarations at the cursor (PromptConfig)
    reproducible: bool = True        # analysis waited for (MonitorConfig.reproducible): samples do
                                     # not depend on timing, load, process or task order; False:
                                     # the editor's path (speculation, deadlines)
    analyzer: str = "jedi"           # jedi or an installed language server (an arm per analyzer)
    names: bool = False              # names read and modules imported must exist (MonitorConfig.names)
    keywords: bool = True            # calls fit their callee's signature (MonitorConfig.keywords)
    check_first: bool = False        # function tasks: written freely, checked by pylint, written
                                     # again from the first failing line with the monitors on
                                     # (check_first.py; greedy, one sample)
    vocabulary: bool = False         # untyped receivers held to the project's member vocabulary
                                     # (MonitorConfig.vocabulary, opt-in); False: they fail open


def parse_schedule(spec: str) -> tuple[tuple[float, int], ...]:
    """Temperature groups [(temperature, samples), ...] of a schedule name or "T:N,T:N" list."""
    if spec == "greedy":
        return ((0.0, 1),)
    if spec == "mgd":
        return MGD_SCHEDULE
    try:
        groups = tuple((float(t), int(n)) for t, n in (g.split(":") for g in spec.split(",")))
    except ValueError:
        raise GroundcodeError(f"bad schedule {spec!r}: use greedy, mgd, or T:N,T:N (e.g. 0.2:1,0.8:2)") from None
    for t, n in groups:
        if n < 1 or t < 0 or (t == 0 and n > 1):
            raise GroundcodeError(f"bad schedule group {t}:{n} (greedy gives one sample; n >= 1)")
    return groups


def select(tasks: list[dict], limit: int | None = None, kinds: tuple | None = None,
           repos: tuple | None = None) -> list[dict]:
    """Tasks filtered by kind/repo; with `limit`, the first `limit` per kind in a fixed pseudo-random
    order (sha256 of task_id), so a subset spreads over repositories and never changes."""
    out = [t for t in tasks if (not kinds or t["kind"] in kinds) and (not repos or t["repo"] in repos)]
    if limit is None:
        return out
    order = sorted(out, key=lambda t: hashlib.sha256(t["task_id"].encode()).hexdigest())
    picked, per_kind = [], {}
    for t in order:
        if per_kind.get(t["kind"], 0) < limit:
            picked.append(t)
            per_kind[t["kind"]] = per_kind.get(t["kind"], 0) + 1
    return sorted(picked, key=lambda t: t["task_id"])


def task_file_text(task: dict) -> str:
    path = Path(task["repo_dir"]) / task["path"]
    text = path.read_text(encoding="utf-8")
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != task["file_sha256"]:
        raise GroundcodeError(f"{path} changed since the tasks were built (sha256 mismatch); rebuild")
    return text


def split_at_task(task: dict, text: str) -> tuple[str, str]:
    """(before, after): the file up to the task's cursor, and the file after its function."""
    lines = text.splitlines(keepends=True)
    line, col = task["line"], task["col"]
    before = "".join(lines[:line - 1]) + lines[line - 1][:col] if line <= len(lines) else text
    after = "".join(lines[task["end_line"]:])
    return before, after


def context_for(task: dict):
    """The generation context of a task: from the task's cursor until its function ends."""
    from ..context import region_context
    return region_context(Path(task["repo_dir"]) / task["path"], Path(task["repo_dir"]),
                          task_file_text(task), task["line"], task["col"], task["end_line"],
                          task["indent"], task["scope"], task["def_line"], task["reference"])


def done_task_ids(out: Path, config: str) -> set[str]:
    if not Path(out).exists():
        return set()
    return {r["task_id"] for r in read_jsonl(out) if r.get("config") == config}


def _trigger_summary(triggers: list) -> dict:
    recs = [t.to_json() if hasattr(t, "to_json") else dict(t) for t in triggers]
    return {"triggers": len(recs),
            "failed_open": sum(bool(r.get("failed_open")) for r in recs),
            "failed_open_why": dict(Counter(f"{r.get('kind') or 'member'}: {r.get('reason') or 'unsaid'}"
                                            for r in recs if r.get("failed_open"))),
            "cache_hits": sum(bool(r.get("cache_hit")) for r in recs),
            "analysis_ms": round(sum(float(r.get("analysis_ms") or 0) for r in recs), 1),
            "tool_calls": sum(r.get("receiver") in ("<COMP>", "<entropy>") for r in recs),
            "tool_failed": sum(r.get("receiver") in ("<COMP>", "<entropy>") and bool(r.get("failed_open"))
                               for r in recs)}


def run(tasks: list[dict], out: Path, cfg: RunConfig, *, generator=None, oracle: bool = False,
        progress=None) -> int:
    """Generate for every task not yet in `out` under cfg.name; returns how many tasks it ran."""
    done = done_task_ids(out, cfg.name)
    todo = [t for t in tasks if t["task_id"] not in done]
    groups = parse_schedule(cfg.schedule)
    meta = {"config": cfg.name, "run": asdict(cfg) | {"oracle": oracle}}
    if oracle:
        for t in todo:
            append_jsonl(out, {"task_id": t["task_id"], **meta, "samples": [
                {"completion": t["reference"], "temperature": 0.0, "seed": 0, "tokens": 0, "seconds": 0.0,
                 "finish_reason": "reference"}]})
            if progress:
                progress(1)
        return len(todo)
    if not todo:
        return 0
    import contextlib

    from ..api import Generator
    from ..config import MonitorConfig, ToolConfig
    tools = ToolConfig(enabled=cfg.tool_tokens, threshold=cfg.tool_threshold, entropy=cfg.tool_entropy)
    # A generator made here is closed here (its analyzer worker processes with it); one passed in
    # belongs to the caller.
    with contextlib.nullcontext(generator) if generator is not None else \
            Generator(model=cfg.model, monitor=MonitorConfig(enabled=cfg.monitor), tools=tools,
                      dtype=cfg.dtype) as gen:
        return _run_all(gen, todo, out, cfg, groups, meta, progress)


def _run_all(gen, todo: list[dict], out: Path, cfg: RunConfig, groups, meta: dict, progress) -> int:
    from dataclasses import replace

    from ..config import PromptConfig, SamplingConfig, ToolConfig
    # A view with this run's configuration: the caller's generator is never changed in place.
    gen = gen.view(monitor=replace(gen.monitor, enabled=cfg.monitor, reproducible=cfg.reproducible,
                                   vocabulary=cfg.vocabulary, analyzer=cfg.analyzer,
                                   names=cfg.names, keywords=cfg.keywords),
                   tools=ToolConfig(enabled=cfg.tool_tokens, threshold=cfg.tool_threshold,
                                    entropy=cfg.tool_entropy),
                   prompt=PromptConfig(fim=cfg.fim, heal=cfg.heal, max_prompt_tokens=cfg.max_prompt_tokens,
                                    declarations=cfg.declarations))
    for k in range(0, len(todo), cfg.batch):
        chunk = todo[k:k + cfg.batch]
        ctxs = [context_for(t) for t in chunk]
        samples: list[list[dict]] = [[] for _ in chunk]
        for temp, n in groups:
            sc = SamplingConfig(temperature=temp, top_p=cfg.top_p if temp > 0 else 1.0, seed=cfg.seed,
                                max_new_tokens=cfg.max_new_tokens)
            rows = _checked(gen, chunk, ctxs, sc) if cfg.check_first else _generations(gen, ctxs, sc, n)
            for i, row in enumerate(rows):
                for j, g in enumerate(row):
                    if isinstance(g, str):       # this task's generation failed: recorded, the run goes on
                        samples[i].append({"completion": "", "temperature": temp, "seed": cfg.seed + j,
                                           "tokens": 0, "seconds": 0.0, "finish_reason": "error", "error": g})
                        continue
                    extra = {}
                    if isinstance(g, tuple):             # check-first: (Generation, Checked)
                        g, c = g
                        extra = {"strategy": c.strategy, "writes": c.writes, "check_s": round(c.check_s, 3),
                                 "checker": c.checker, "free_s": round(c.free_s, 3),
                                 "total_s": round(c.total_s, 3), "problems": [len(p) for p in c.problems]}
                    samples[i].append({"completion": g.completion, "temperature": temp, "seed": cfg.seed + j,
                                       "tokens": g.tokens, "seconds": g.seconds, "finish_reason": g.finish_reason,
                                       "rollbacks": g.rollbacks, **_trigger_summary(g.triggers), **extra,
                                       **_stopped_by(g)})
        for t, s in zip(chunk, samples):
            append_jsonl(out, {"task_id": t["task_id"], **meta, "samples": s})
        if progress:
            progress(len(chunk))
    return len(todo)


def _stopped_by(g) -> dict:
    """Which guide ended a row that finished with "stop" (repetition, body_end, stop_at, ...):
    scoring and audits tell a guard's cut from the model's own end by it."""
    return {"stopped_by": g.stop.reason} if g.stop is not None else {}


def _checked(gen, tasks, ctxs, sc) -> list[list]:
    """check-first, one task at a time: [(Generation, Checked)] per function task (the checker:
    ty where it is installed, not the pylint that scores; else pylint; the repository read,
    never run); other kinds are written as `gen` writes them."""
    from ..check_first import check_first
    from ..checkers import checker_for
    from ..errors import GroundcodeError
    out = []
    for t, c in zip(tasks, ctxs):
        if t["kind"] != "function":
            out += _generations(gen, [c], sc, 1)
            continue
        try:
            done = check_first(gen, c, sc, checker_for(c), rounds=3, budget_s=120.0)
            out.append([(done.generation, done)])
        except GroundcodeError as exc:
            out.append([str(exc).splitlines()[0] or type(exc).__name__])
    return out


def _generations(gen, ctxs, sc, n) -> list[list]:
    """n Generations per context; where a context's request fails (a guide raised), its samples
    are the error's one line instead, and the other contexts' are kept: one failing task never
    loses a chunk of a long run (the chunk is rerun one task at a time to find it)."""
    from ..errors import GroundcodeError
    def line(exc) -> str:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    try:
        return gen.run(ctxs, sc, n=n)
    except GroundcodeError as exc:
        if len(ctxs) == 1:
            return [[line(exc)] * n]
    out = []
    for c in ctxs:
        try:
            out.append(gen.run([c], sc, n=n)[0])
        except GroundcodeError as exc:
            out.append([line(exc)] * n)
    return out

