"""Harm audit (issue 30): is grounding ever worse than none? Counts the tasks where `monitored` is
worse than `baseline` — lint passes → fails (`success`: no syntax error, no-member or undefined
variable; `--metric success_whole`: the same on a body the budget cut short, up to its last whole
statement), or a repetition (3 or more copies of a line, or of a run inside a line) that the
baseline did not write — and lists each one.

    .venv/bin/python benchmarks/harm_audit.py --results RESULTS.jsonl [--results MORE.jsonl ...]
        [--a baseline] [--b monitored] [--out benchmarks/results/harm_audit.json]
    .venv/bin/python benchmarks/harm_audit.py --from-paired PAIRED.json [...]   # counts only

RESULTS.jsonl are `groundcode bench score` rows (task_id, config, completions, metrics.success).
`--from-paired` reads committed paired comparisons (`benchmarks/paired_diff.py` output), which
hold only the counts of tasks where `b`'s success is below `a`'s: no listing, no repetition
criterion. Prints a table, writes JSON.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def repeats(text: str) -> bool:
    """3+ identical consecutive non-blank lines (runs of up to 8 lines), or a loop inside a line
    (decoding/guides/repetition.py's rules)."""
    from groundcode.decoding.guides.repetition import repeated_run, repeated_tail
    if repeated_tail(text if text.endswith("\n") else text + "\n") is not None:
        return True
    return any(repeated_run(line) is not None for line in text.splitlines())


def from_results(paths: list[Path], a: str, b: str, metric: str = "success") -> dict:
    from groundcode.jsonl import read_jsonl
    by = defaultdict(dict)
    for p in paths:
        for r in read_jsonl(p):
            by[r["task_id"]][r["config"]] = r
    harms, tasks = [], 0
    for tid, cfgs in sorted(by.items()):
        if a not in cfgs or b not in cfgs:
            continue
        tasks += 1
        ra, rb = cfgs[a], cfgs[b]
        sa, sb = ra["metrics"][metric][0], rb["metrics"][metric][0]
        ca, cb = ra["completions"][0], rb["completions"][0]
        why = []
        if sa > sb:
            lint = rb.get("lint", [[]])[0]
            cut = ""
            if metric == "success_whole" and rb.get("whole", [cb])[0] != cb:
                cut, lint = " (its last whole statement)", (rb.get("lint_whole") or [[]])[0] or []
            why.append(f"lint passes at baseline, fails monitored{cut}: " + "; ".join(lint)[:200])
        if repeats(cb) and not repeats(ca):
            why.append("a repetition the baseline did not write")
        if why:
            harms.append({"task_id": tid, "why": why})
    return {"tasks": tasks, "worse": len(harms), "share": round(len(harms) / tasks, 4) if tasks else None,
            "harms": harms}


def from_paired(paths: list[Path]) -> list[dict]:
    out = []
    for p in paths:
        d = json.loads(p.read_text())
        row = next(r for r in d["rows"] if r["metric"] == "success")
        out.append({"source": str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p),
                    "a": d["a"], "b": d["b"], "kind": d["kind"], "tasks": row["tasks"],
                    "worse": row["worse"], "better": row["better"],
                    "share_worse": round(row["worse"] / row["tasks"], 4)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, action="append", default=[])
    ap.add_argument("--from-paired", type=Path, action="append", default=[])
    ap.add_argument("--a", default="baseline")
    ap.add_argument("--b", default="monitored")
    ap.add_argument("--metric", default="success",
                    help="success, or success_whole (bench score --whole-statements: a body the budget cut "
                         "short, up to its last whole statement)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "harm_audit.json")
    args = ap.parse_args()
    res: dict = {"a": args.a, "b": args.b, "metric": args.metric}
    if args.results:
        res["from_results"] = from_results(args.results, args.a, args.b, args.metric)
        r = res["from_results"]
        print(f"{r['worse']} of {r['tasks']} tasks worse ({r['share']})")
        for h in r["harms"]:
            print(f"  {h['task_id']}: {'; '.join(h['why'])}")
    if args.from_paired:
        res["from_paired"] = from_paired(args.from_paired)
        print(f"{'source':<90}{'tasks':>6}{'worse':>6}{'share':>8}")
        for r in res["from_paired"]:
            print(f"{r['source']:<90}{r['tasks']:>6}{r['worse']:>6}{r['share_worse']:>8}")
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
