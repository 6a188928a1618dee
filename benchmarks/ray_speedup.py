"""Speed-up of `bench run --executor ray` with more workers: the same tasks with 1, then 2 (or
`--workers 1,2,4`) Ray actors, each run in a fresh process into a fresh samples file.

    python benchmarks/ray_speedup.py                         # standing:cpu, registry default model
    python benchmarks/ray_speedup.py --tasks T --subset "" --limit 3 --model tiny   # a smoke run

Each run is `groundcode bench run TASKS --executor ray --workers N` (it starts its own local Ray;
the wall time counts Ray's start and every actor's model load, as a user sees it). Reported per run:
wall seconds, tasks per hour, tasks per hour per worker, the load average before and after (the
machine may be shared: read wall time against the load); across runs: the speed-up over the first
and whether every run's completions equal the first's (greedy: they must). `--local` adds the
local executor (one process, torch's own threads) as a reference row. Writes
benchmarks/results/ray_speedup.json (or --out) and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def completions(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out[r["task_id"]] = [s["completion"] for s in r["samples"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=Path, default=Path("~/.cache/groundcode/bench/standing/tasks.jsonl").expanduser())
    ap.add_argument("--subset", default="standing:cpu", help="RECIPE:NAME ('' for none)")
    ap.add_argument("--limit", type=int, default=None, help="at most N tasks per kind")
    ap.add_argument("--model", default=None, help="default: the registry default")
    ap.add_argument("--monitor", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts, run in this order")
    ap.add_argument("--local", action="store_true", help="also run the local executor (reference row)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/ray_speedup.json"))
    a = ap.parse_args()
    if not a.tasks.exists():
        sys.exit(f"no tasks at {a.tasks}: groundcode bench build --recipe standing --out {a.tasks.parent}")
    base = [sys.executable, "-m", "groundcode", "bench", "run", str(a.tasks), "--config", "speedup",
            "--max-new-tokens", str(a.max_new_tokens), "--monitor" if a.monitor else "--no-monitor"]
    base += ["--subset", a.subset] if a.subset else []
    base += ["--limit", str(a.limit)] if a.limit else []
    base += ["--model", a.model] if a.model else []
    plans = ([("local", None)] if a.local else []) + [("ray", int(w)) for w in a.workers.split(",")]
    rows, first = [], None
    with tempfile.TemporaryDirectory(prefix="ray-speedup-") as tmp:
        for kind, workers in plans:
            out = Path(tmp) / f"{kind}{workers or ''}.jsonl"
            cmd = base + ["--out", str(out), "--executor", kind] + (["--workers", str(workers)] if workers else [])
            load0 = os.getloadavg()
            t0 = time.perf_counter()
            res = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if res.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{res.stderr[-2000:]}")
            got = completions(out)
            first = first or got
            n = len(got)
            rows.append({"executor": kind, "workers": workers, "tasks": n, "wall_s": round(wall, 1),
                         "tasks_per_hour": round(n * 3600 / wall, 1),
                         "tasks_per_hour_per_worker": round(n * 3600 / wall / (workers or 1), 1),
                         "load_before": [round(x, 2) for x in load0],
                         "load_after": [round(x, 2) for x in os.getloadavg()],
                         "same_completions_as_first": got == first})
            print(f"{kind} x{workers or 1}: {n} tasks in {wall:.1f} s", file=sys.stderr)
    ray_rows = [r for r in rows if r["executor"] == "ray"]
    for r in ray_rows:
        r["speedup_vs_first_ray"] = round(ray_rows[0]["wall_s"] / r["wall_s"], 2)
    result = {"command": " ".join(base[2:]), "cpus": os.cpu_count(), "model": a.model or "registry default",
              "runs": rows, "identical": all(r["same_completions_as_first"] for r in rows),
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print("| executor | workers | tasks | wall s | tasks/h | tasks/h/worker | speed-up | load before → after |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['executor']} | {r['workers'] or '-'} | {r['tasks']} | {r['wall_s']} | {r['tasks_per_hour']} | "
              f"{r['tasks_per_hour_per_worker']} | {r.get('speedup_vs_first_ray', '-')} | "
              f"{r['load_before'][0]} → {r['load_after'][0]} |")
    print(f"identical completions across runs: {result['identical']} -> {a.out}")


if __name__ == "__main__":
    main()
