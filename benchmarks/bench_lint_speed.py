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
import time
from pathlib import Path

from groundcode.evaluation import lint, scoring
from groundcode.evaluation.harness import task_file_text
from groundcode.evaluation.jsonl import read_jsonl


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
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_lint_speed.json")
    a = ap.parse_args()
    tasks = [t for t in read_jsonl(a.tasks) if t["kind"] == "function"][: a.n]
    jobs, labels = [], []
    for t in tasks:
        text = task_file_text(t)
        for label, body in variants(t["reference"]).items():
            new, first, last = scoring.splice(t, text, scoring.trim_completion(t, body))
            jobs.append(lint.LintJob(Path(t["repo_dir"]), t["path"], new, first, last))
            labels.append(label)
    t0 = time.perf_counter()
    res = lint.check(jobs, workers=a.workers)
    wall = time.perf_counter() - t0
    counts: dict = {}
    for label, r in zip(labels, res):
        c = counts.setdefault(label, {"samples": 0, "success": 0, "crashed": 0})
        c["samples"] += 1
        c["success"] += int(r.success)
        c["crashed"] += int(r.crashed)
    row = {"tasks": len(tasks), "samples": len(jobs), "workers": a.workers, "wall_s": round(wall, 2),
           "s_per_sample": round(wall / max(1, len(jobs)), 3), "verdicts": counts,
           "cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "load_avg_1m_at_end": round(os.getloadavg()[0], 2)}
    print(f"{'samples':>8} {'workers':>7} {'wall s':>8} {'s/sample':>9} {'load':>5}")
    print(f"{row['samples']:>8} {row['workers']:>7} {row['wall_s']:>8} {row['s_per_sample']:>9} "
          f"{row['load_avg_1m_at_end']:>5}")
    for label, c in counts.items():
        print(f"  {label:<10} success {c['success']}/{c['samples']} crashed {c['crashed']}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
