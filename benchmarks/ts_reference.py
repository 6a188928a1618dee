"""The TypeScript benchmark's judge on its own references: every task's reference put back in
place must compile (no error the package does not already have), and a body that reads a member
that does not exist must not (TS2339/TS2551) — the judge and the task offsets checked on all
tasks of the recipe, before any model is scored with them.

    .venv/bin/python benchmarks/ts_reference.py [--tasks DIR/tasks.jsonl] [--kinds function]

Needs: groundcode analyzers install typescript; groundcode bench build --recipe typescript --out DIR.
Writes benchmarks/results/ts_reference.json; prints a table per package.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from groundcode.cache import cache_dir
from groundcode.evaluation.ts_scoring import score_task

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, default=cache_dir() / "bench" / "typescript" / "tasks.jsonl")
    ap.add_argument("--kinds", default="function")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ts_reference.json")
    args = ap.parse_args()
    kinds = set(args.kinds.split(","))
    tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    tasks = [t for t in tasks if t["kind"] in kinds]
    base: dict = {}
    per = defaultdict(lambda: {"tasks": 0, "reference_compiles": 0, "wrong_member_fails": 0, "member_codes": 0})
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    for t in tasks:
        p = per[t["repo"]]
        p["tasks"] += 1
        p["reference_compiles"] += score_task(t, t["reference"], base)["compiles"]
        wrong = "\n    return (this as any).x + undefinedName.noSuchMember;\n  " if t["kind"] == "function" \
            else "noSuchMemberAnywhere" + t["reference"][len(t["reference"].split("(")[0].split(" ")[0]):]
        bad = score_task(t, wrong, base)
        p["wrong_member_fails"] += not bad["compiles"]
        p["member_codes"] += any(c in bad["codes"] for c in ("2339", "2551", "2304"))
    rows = dict(sorted(per.items()))
    total = {k: sum(r[k] for r in rows.values()) for k in ("tasks", "reference_compiles", "wrong_member_fails", "member_codes")}
    res = {"tasks_file": str(args.tasks), "kinds": sorted(kinds), "packages": rows, "total": total,
           "seconds": round(time.perf_counter() - t0, 1), "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
           "cpus": os.cpu_count()}
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{'package':34} {'tasks':>5} {'reference compiles':>19} {'wrong member fails':>19}")
    for name, r in rows.items():
        print(f"{name:34} {r['tasks']:>5} {r['reference_compiles']:>19} {r['wrong_member_fails']:>19}")
    print(f"{'total':34} {total['tasks']:>5} {total['reference_compiles']:>19} {total['wrong_member_fails']:>19}"
          f"   ({res['seconds']} s, load {res['load_avg_1m']})")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
