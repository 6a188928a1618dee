"""Paired differences between two configurations of one benchmark run, with bootstrap intervals.

Reads the per-sample results JSONL that `groundcode bench score --results` writes, keeps the
tasks both configurations have, and for each metric prints the mean of each, the mean paired
difference (B - A), a 95% percentile bootstrap interval of that difference (tasks resampled
with replacement, seeded), and how many tasks got better / worse / stayed equal. An interval
that contains 0 means the run does not show a difference.

    .venv/bin/python benchmarks/paired_diff.py RESULTS.jsonl --a baseline --b monitored \\
        [--kind function] [--out benchmarks/results/<dir>/paired.json]

Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

LOWER = ("undefined_name", "import_error", "no_member", "call_error")   # hallucinations: lower is better
METRICS = ("success", "success_whole", "dep_coverage", "codebleu", "edit_sim", "bleu4", "nim", "ident_precision", *LOWER)


def per_task(path: Path, config: str, kind: str) -> dict[str, dict[str, float]]:
    from groundcode.jsonl import read_jsonl
    out = {}
    for r in read_jsonl(path):
        if r["config"] != config or r.get("kind") != kind:
            continue
        m = r["metrics"]
        out[r["task_id"]] = {k: sum(v) / len(v) for k, v in m.items() if v}
    return out


def bootstrap(diffs: list[float], n: int = 10_000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    k = len(diffs)
    means = sorted(sum(diffs[rng.randrange(k)] for _ in range(k)) / k for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--a", default="baseline")
    ap.add_argument("--b", default="monitored")
    ap.add_argument("--kind", default="function")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    a, b = per_task(args.results, args.a, args.kind), per_task(args.results, args.b, args.kind)
    both = sorted(set(a) & set(b))
    if not both:
        sys.exit(f"no {args.kind} task has both {args.a!r} and {args.b!r} in {args.results}")
    rows = []
    for m in METRICS:
        ids = [t for t in both if m in a[t] and m in b[t]]
        if not ids:
            continue
        d = [b[t][m] - a[t][m] for t in ids]
        lo, hi = bootstrap(d, args.resamples)
        rows.append({"metric": m, "tasks": len(ids), args.a: sum(a[t][m] for t in ids) / len(ids),
                     args.b: sum(b[t][m] for t in ids) / len(ids), "diff": sum(d) / len(d),
                     "ci95": [lo, hi], "better": sum((x < -1e-12) if m in LOWER else (x > 1e-12) for x in d),
                     "worse": sum((x > 1e-12) if m in LOWER else (x < -1e-12) for x in d),
                     "equal": sum(abs(x) <= 1e-12 for x in d)})
    head = f"| metric | tasks | {args.a} | {args.b} | diff | 95% CI | better / worse / equal |"
    lines = [head, "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['metric']} | {r['tasks']} | {r[args.a]:.3f} | {r[args.b]:.3f} | {r['diff']:+.3f} "
                     f"| [{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] | {r['better']} / {r['worse']} / {r['equal']} |")
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"results": str(args.results.name), "a": args.a, "b": args.b,
                                        "kind": args.kind, "resamples": args.resamples, "rows": rows,
                                        "table": lines}, indent=1) + "\n")


if __name__ == "__main__":
    main()
