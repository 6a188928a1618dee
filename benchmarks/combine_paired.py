"""One paired table from paired tables of disjoint task sets (e.g. a benchmark's first 100 tasks
in one session, the rest in another), for the metrics that are 0 or 1 per task (one greedy
sample each: success, success_whole, nim, the hallucination rates).

A 0/1 metric's paired differences are +1, -1 or 0, so a task set's better / worse / equal counts
hold every difference: the combined interval is the same percentile bootstrap as
paired_diff.py's over the union of those differences (seeded). Metrics that are not 0/1 per task
(edit_sim, bleu4, ...) are left out: their counts do not hold their differences. Reads the JSON
of paired_diff.py (`rows`) or of hallucinations.py (`kinds`), all of one kind.

    .venv/bin/python benchmarks/combine_paired.py first.json rest.json [--out combined.json]

Not a test: nothing asserts. Test of the arithmetic: tests/test_combine_paired.py.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paired_diff import LOWER, bootstrap  # noqa: E402

BINARY = ("success", "success_whole", "nim", *LOWER)


def _parts(doc: dict) -> tuple[str, str, dict[str, dict]]:
    """(a, b, {metric: {tasks, a, b (counts), better, worse}}) of one paired file."""
    a, b = doc["a"], doc["b"]
    out = {}
    if "rows" in doc:                                   # paired_diff.py: means per task set
        for r in doc["rows"]:
            if r["metric"] in BINARY:
                n = r["tasks"]
                out[r["metric"]] = {"tasks": n, "a": r[a] * n, "b": r[b] * n, "better": r["better"],
                                    "worse": r["worse"], "lower": r["metric"] in LOWER}
    else:                                               # hallucinations.py: counts per kind
        for kind in doc["kinds"].values():
            for name, r in kind.items():
                out[name] = {"tasks": r["tasks"], "a": r[a], "b": r[b], "better": r["better"],
                             "worse": r["worse"], "lower": True}
    for m, r in out.items():
        for side in ("a", "b"):
            if abs(r[side] - round(r[side])) > 1e-6:
                sys.exit(f"{m}: {side} is not a count of 0/1 tasks ({r[side]} of {r['tasks']})")
            r[side] = round(r[side])
    return a, b, out


def combine(docs: list[dict], resamples: int = 10_000) -> dict:
    """The combined table of `docs` (paired files of one a/b pair over disjoint task sets)."""
    parts = [_parts(d) for d in docs]
    a, b = parts[0][0], parts[0][1]
    if any((pa, pb) != (a, b) for pa, pb, _ in parts):
        sys.exit("the files compare different configurations")
    rows = []
    for m in parts[0][2]:
        got = [p[2][m] for p in parts if m in p[2]]
        if len(got) < len(parts):
            continue
        n = sum(r["tasks"] for r in got)
        better, worse = sum(r["better"] for r in got), sum(r["worse"] for r in got)
        up, down = (worse, better) if got[0]["lower"] else (better, worse)   # b - a = +1 / -1
        diffs = [1.0] * up + [-1.0] * down + [0.0] * (n - up - down)
        lo, hi = bootstrap(diffs, resamples)
        na, nb = sum(r["a"] for r in got), sum(r["b"] for r in got)
        rows.append({"metric": m, "tasks": n, a: na, b: nb, "diff": (nb - na) / n, "ci95": [lo, hi],
                     "better": better, "worse": worse, "equal": n - better - worse,
                     "parts": [r["tasks"] for r in got]})
    return {"a": a, "b": b, "resamples": resamples, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paired", type=Path, nargs="+")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    doc = combine([json.loads(p.read_text()) for p in args.paired], args.resamples)
    doc["from"] = [str(p) for p in args.paired]
    a, b = doc["a"], doc["b"]
    print(f"| metric | tasks | {a} | {b} | diff | 95% CI | better / worse / equal |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for r in doc["rows"]:
        print(f"| {r['metric']} | {r['tasks']} | {r[a]} | {r[b]} | {r['diff']:+.3f} | "
              f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}] | {r['better']} / {r['worse']} / {r['equal']} |")
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
