"""`bench run` and `bench score` sharded by repository on an executor (groundcode/executor.py: Ray).

run_sharded: the tasks not yet in the samples file (per configuration, as harness.run) are grouped
by repository; each worker holds ONE Generator (model + analyzer), built on its first shard and
reused for every repository it gets, and runs `harness.run` on a shard into a scratch file whose
records it returns. The driver writes the records to the samples file in the local path's order
(the task list's order): a record is written once every record before it is, so a finished run's
file is the local run's, record for record. Records of shards that finished early wait in memory
and in `<out>.pending`; a rerun after an interruption first moves those into the samples file
(the order is then no longer the local one; the records are the same), then skips every task
already there, so no finished shard is generated twice.

score_sharded: samples grouped by their task's repository; each worker scores its shard with
scoring.score (pylint with one process: the actors are the parallelism); the driver writes the
results in the samples' order and the summary as scoring.score_files does. Rows of finished shards
are kept in `<results>.pending` (keyed by configuration, task and the completions scored) so a
rerun reuses them.

Greedy samples equal the local path's when the engine's batches give the same logits as the local
path's (a batch holds at most one repository here, across repositories there).
Not here: generation (harness.py), metrics (scoring.py), Ray (executor.py). Test: tests/test_executor.py.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from ..executor import shard_by
from ..jsonl import append_jsonl, read_jsonl, write_jsonl
from . import harness


def _pending(path: Path) -> Path:
    return Path(str(path) + ".pending")


class RunWorker:
    """harness.run on one repository's tasks at a time, with one Generator for all of them."""

    def __init__(self, cfg: harness.RunConfig, oracle: bool = False):
        self.cfg, self.oracle, self.gen = cfg, oracle, None

    def __call__(self, tasks: list[dict]) -> list[dict]:
        if self.gen is None and not self.oracle:
            from ..api import Generator
            self.gen = Generator(model=self.cfg.model, dtype=self.cfg.dtype)   # harness.run sets monitor, tools and prompts
        with tempfile.TemporaryDirectory(prefix="groundcode-shard-") as d:
            out = Path(d) / "samples.jsonl"
            harness.run(tasks, out, self.cfg, generator=self.gen, oracle=self.oracle)
            recs = list(read_jsonl(out)) if out.exists() else []
        if self.gen is not None:
            self.gen.close()     # this repository's analyzer: one warm analyzer per worker at a time
        return recs

    def close(self) -> None:
        if self.gen is not None:
            self.gen.close()


def recover_samples(out: Path) -> None:
    """Move the records a stopped sharded run left in `<out>.pending` into `out` (those not there)."""
    _recover(Path(out), lambda r: (r.get("config"), r["task_id"]))


def _recover(out: Path, key) -> None:
    pend = _pending(out)
    if not pend.exists():
        return
    have = {key(r) for r in read_jsonl(out)} if out.exists() else set()
    for r in read_jsonl(pend):
        if key(r) not in have:
            append_jsonl(out, r)
            have.add(key(r))
    pend.unlink()


def run_sharded(tasks: list[dict], out: Path, cfg: harness.RunConfig, executor, *, oracle: bool = False,
                progress=None) -> int:
    """harness.run's contract (resumable samples file, returns tasks run) with shards on `executor`."""
    out = Path(out)
    recover_samples(out)
    done = harness.done_task_ids(out, cfg.name)
    todo = [t for t in tasks if t["task_id"] not in done]
    if not todo:
        return 0
    harness.parse_schedule(cfg.schedule)          # a bad schedule fails here, not in every worker
    pos = {t["task_id"]: i for i, t in enumerate(todo)}
    shards = shard_by(todo, lambda t: t["repo"])
    held: dict[int, dict] = {}
    nxt = 0
    for i, recs in executor.map(RunWorker, {"cfg": cfg, "oracle": oracle}, shards):
        for r in recs:
            held[pos[r["task_id"]]] = r
        while nxt in held:                        # the local order: flush the finished prefix
            append_jsonl(out, held.pop(nxt))
            nxt += 1
        for r in recs:                            # finished but not yet in order: kept for a rerun
            if pos[r["task_id"]] in held:
                append_jsonl(_pending(out), r)
        if progress:
            progress(len(shards[i]))
    if held:   # a worker returned fewer records than tasks (cannot happen with harness.run)
        for k in sorted(held):
            append_jsonl(out, held[k])
    _pending(out).unlink(missing_ok=True)
    return len(todo)


class ScoreWorker:
    """scoring.score on one repository's samples at a time."""

    def __init__(self, codebleu: bool = True, depcov: bool = True, whole: bool = False):
        self.codebleu, self.depcov, self.whole = codebleu, depcov, whole

    def __call__(self, shard: list[tuple[int, dict, dict]]) -> tuple[list[tuple[int, dict]], dict]:
        from .scoring import score
        tasks = {t["task_id"]: t for _, t, _ in shard}
        with tempfile.TemporaryDirectory(prefix="groundcode-shard-") as d:
            out = Path(d) / "results.jsonl"
            timing = score(tasks, [r for _, _, r in shard], out, workers=1, codebleu=self.codebleu,
                           depcov=self.depcov, whole=self.whole)
            rows = list(read_jsonl(out))
        return [(p, row) for (p, _, _), row in zip(shard, rows)], timing


def _row_key(rec: dict) -> str:
    """What a result row depends on: configuration, task, completions."""
    return hashlib.sha256(json.dumps([rec["config"], rec["task_id"], [s["completion"] for s in rec["samples"]]])
                          .encode()).hexdigest()


def score_sharded(tasks_path: Path, samples_path: Path, results_path: Path, summary_path: Path, executor, *,
                  codebleu: bool = True, depcov: bool = True, whole: bool = False, progress=None) -> dict:
    """scoring.score_files' contract (results JSONL, summary JSON; returns the summary) on `executor`."""
    from .scoring import write_summary
    tasks = {t["task_id"]: t for t in read_jsonl(tasks_path)}
    recs = list(read_jsonl(samples_path))
    work = [(p, tasks[r["task_id"]], r) for p, r in enumerate(recs) if r["task_id"] in tasks]
    pend = _pending(results_path)
    reuse = {row.pop("_key"): row for row in read_jsonl(pend)} if pend.exists() else {}
    rows: dict[int, dict] = {}
    todo = []
    for p, t, r in work:
        k = _row_key(r)
        if k in reuse:
            rows[p] = reuse[k]
        else:
            todo.append((p, t, r))
    if progress and rows:
        progress(len(rows))
    timing = {"lint_seconds": 0.0, "lint_jobs": 0, "lint_crashed": 0, "lint_cpu_seconds": 0.0}
    shards = shard_by(todo, lambda w: w[1]["repo"])
    for i, (got, t) in executor.map(ScoreWorker, {"codebleu": codebleu, "depcov": depcov, "whole": whole},
                                         shards):
        for p, row in got:
            rows[p] = row
            append_jsonl(pend, row | {"_key": _row_key(recs[p])})
        for k in ("lint_seconds", "lint_jobs", "lint_crashed"):
            timing[k] += t[k]
        timing["lint_cpu_seconds"] += t["lint_cpu_s_per_sample"] * t["lint_jobs"]
        if progress:
            progress(len(shards[i]))
    write_jsonl(results_path, [rows[p] for p in sorted(rows)])
    pend.unlink(missing_ok=True)
    jobs = max(1, timing["lint_jobs"])
    # lint_seconds: summed over the workers (each lints its shards with one process), so per sample it
    # compares with the local path's CPU figure rather than its wall time
    timing = {"lint_seconds": round(timing["lint_seconds"], 2), "lint_jobs": timing["lint_jobs"],
              "lint_crashed": timing["lint_crashed"], "lint_s_per_sample": round(timing["lint_seconds"] / jobs, 3),
              "lint_cpu_s_per_sample": round(timing["lint_cpu_seconds"] / jobs, 3),
              "executor": f"ray x{executor.workers}"}
    return write_summary(recs, results_path, summary_path, timing)
