"""Success-rate scoring speed: seconds per sample of the pylint check (evaluation/lint.py).

Takes the first N function tasks (fixed order) of a built task set, makes three samples each —
the reference, the reference with its first `self.X` renamed to a member that does not exist,
and the reference with an undefined name appended — splices them, lints all of them with the
given number of workers, and prints the wall time per sample plus how many mutations were caught
(a sanity check of the verdicts). Writes benchmarks/results/bench_lint_speed.json.

Run: .venv/bin/python benchmarks/bench_lint_speed.py ~/.cache/groundcode/bench/standing/tasks.jsonl --n 40
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import time
from pathlib import Path

from groundcode.evaluation import lint, scoring
from groundcode.evaluation.harness import task_file_text
from groundcode.jsonl import read_jsonl


def variants(ref: str) -> dict[str, str]:
    out = {"reference": ref}
    m = re.search(r"self\.([A-Za-z_]\w*)", ref)
    if m:
        out["no_member"] = ref[:m.start(1)] + "zz_not_a_member_" + ref[m.start(1):]
    indent = re.match(r"[ \t]*", ref).group()
    out["undefined"] = ref.rstrip("\n") + f"\n{indent}zz_undefined_name_()\n"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", type=Path)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--min-lines", type=int, default=0, help="only tasks in files longer than this")
    ap.add_argument("--compare-unpruned", action="store_true",
                    help="also lint without pruning and count verdict agreement")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_lint_speed.json")
    a = ap.parse_args()
    tasks = [t for t in read_jsonl(a.tasks) if t["kind"] == "function"
             and task_file_text(t).count("\n") > a.min_lines][: a.n]
    jobs, labels = [], []
    for t in tasks:
        text = task_file_text(t)
        for label, body in variants(t["reference"]).items():
            new, first, last = scoring.splice(t, text, scoring.trim_completion(t, body))
            jobs.append(lint.LintJob(Path(t["repo_dir"]), t["path"], new, first, last))
            labels.append(label)
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    res = lint.check(jobs, workers=a.workers)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)   # the pylint workers' CPU time
    counts: dict = {}
    for label, r in zip(labels, res):
        c = counts.setdefault(label, {"samples": 0, "success": 0, "crashed": 0})
        c["samples"] += 1
        c["success"] += int(r.success)
        c["crashed"] += int(r.crashed)
    agreement = None
    if a.compare_unpruned:
        t1 = time.perf_counter()
        full = lint.check(jobs, workers=a.workers, prune_over_lines=0)
        agreement = {"same_verdict": sum(x.success == y.success for x, y in zip(res, full)),
                     "samples": len(jobs), "unpruned_wall_s": round(time.perf_counter() - t1, 2),
                     "unpruned_success": sum(y.success for y in full), "pruned_success": sum(x.success for x in res)}
    row = {"tasks": len(tasks), "min_lines": a.min_lines, "prune_over_lines": lint.PRUNE_OVER_LINES,
           "samples": len(jobs), "workers": a.workers, "wall_s": round(wall, 2), "agreement_with_unpruned": agreement,
           "s_per_sample": round(wall / max(1, len(jobs)), 3), "worker_cpu_s": round(cpu, 2),
           "cpu_s_per_sample": round(cpu / max(1, len(jobs)), 3), "verdicts": counts,
           "cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "load_avg_1m_at_end": round(os.getloadavg()[0], 2)}
    print(f"{'samples':>8} {'workers':>7} {'wall s':>8} {'s/sample':>9} {'cpu s/sample':>12} {'load':>5}")
    print(f"{row['samples']:>8} {row['workers']:>7} {row['wall_s']:>8} {row['s_per_sample']:>9} "
          f"{row['cpu_s_per_sample']:>12} {row['load_avg_1m_at_end']:>5}")
    for label, c in counts.items():
        print(f"  {label:<10} success {c['success']}/{c['samples']} crashed {c['crashed']}")
    if agreement:
        print(f"  pruned vs unpruned verdicts: {agreement['same_verdict']}/{agreement['samples']} agree; "
              f"unpruned wall {agreement['unpruned_wall_s']} s")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
