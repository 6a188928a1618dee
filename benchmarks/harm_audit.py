"""Harm audit (issue 30): is grounding ever worse than none? Counts the tasks where `monitored` is
worse than `baseline` — lint passes → fails (`success`: no syntax error, no-member or undefined
variable; `--metric success_whole`: the same on a body the budget cut short, up to its last whole
statement), or a repetition (3 or more copies of a line, or of a run inside a line) that the
baseline did not write — and lists each one.

    .venv/bin/python benchmarks/harm_audit.py --results RESULTS.jsonl [--results MORE.jsonl ...]
        [--a baseline] [--b monitored] [--out benchmarks/results/harm_audit.json]
    .venv/bin/python benchmarks/harm_audit.py --from-paired PAIRED.json [...]   # counts only

    .venv/bin/python benchmarks/harm_audit.py --results RESULTS.jsonl --tasks TASKS.jsonl --confirm ty ...

RESULTS.jsonl are `groundcode bench score` rows (task_id, config, completions, metrics.success).
`--confirm ty` asks a second judge whether each harmed task was correct at baseline at all:
ty (`groundcode analyzers install ty`; checkers.ty_checker, with the repository's `.venv` where
`groundcode bench env` made one) checks the baseline's completion in its file; a name, member,
import or call error ty finds there that the file without it does not have means pylint missed
an error the baseline wrote (e.g. `.json()` on a dict), and the task is listed apart as
"baseline wrong by ty", not as harm. The other way, the tasks where `b` does better are counted
with ty's verdict on `b`'s completion. ty is not the analyzer the monitor asks in the benchmark
(Jedi); the pylint verdicts stand, ty only sets apart what it finds wrong.
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


def by_task(paths: list[Path]) -> dict:
    """{task_id: {config: scored row}} over the results files."""
    from groundcode.jsonl import read_jsonl
    by: dict = defaultdict(dict)
    for p in paths:
        for r in read_jsonl(p):
            by[r["task_id"]][r["config"]] = r
    return by


def from_results(by: dict, a: str, b: str, metric: str = "success") -> dict:
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


class _Ty:
    """ty's problems in one completion of a task (one checker per repository)."""

    def __init__(self, tasks_path: Path):
        from groundcode.jsonl import read_jsonl
        self.tasks = {t["task_id"]: t for t in read_jsonl(tasks_path)}
        self.checkers: dict = {}

    def __call__(self, task_id: str, row: dict, metric: str) -> list[str] | None:
        from groundcode.checkers import ty_checker
        from groundcode.evaluation.harness import context_for
        task = self.tasks.get(task_id)
        if task is None:
            return None
        repo = Path(task["repo_dir"])
        if repo not in self.checkers:
            venv = repo / ".venv"
            self.checkers[repo] = ty_checker(repo, str(venv) if venv.is_dir() else None)
        body = (row.get("whole") if metric == "success_whole" else None) or row["completions"]
        return [f"{q.code}: {q.message}" for q in self.checkers[repo](context_for(task), body[0])]


def confirm(result: dict, by: dict, tasks_path: Path, a: str, b: str, metric: str) -> dict:
    """Split `result`'s harms by ty's verdict on the baseline's completion (the body pylint
    passed; see the docstring), and, the other way, count the tasks `b` does better on whose
    `b` completion ty finds wrong (so both directions meet the same second judge)."""
    ty = _Ty(tasks_path)
    kept, wrong = [], []
    for h in result["harms"]:
        row = by.get(h["task_id"], {}).get(a)
        found = ty(h["task_id"], row, metric) if row and any(w.startswith("lint passes") for w in h["why"]) else None
        if found:
            wrong.append({**h, "baseline_by_ty": found})
        else:
            kept.append(h)
    better = [tid for tid, c in sorted(by.items()) if a in c and b in c
              and c[b]["metrics"][metric][0] > c[a]["metrics"][metric][0]]
    better_wrong = []
    for tid in better:
        found = ty(tid, by[tid][b], metric)
        if found:
            better_wrong.append({"task_id": tid, "b_by_ty": found})
    return {**result, "worse": len(kept), "share": round(len(kept) / result["tasks"], 4) if result["tasks"] else None,
            "harms": kept, "worse_by_pylint": result["worse"], "baseline_wrong_by_ty": wrong,
            "better_by_pylint": len(better), "better_but_b_wrong_by_ty": better_wrong}


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
    ap.add_argument("--tasks", type=Path, help="the tasks the results score (for --confirm)")
    ap.add_argument("--confirm", choices=["ty"],
                    help="a second judge: the baseline side of each harm, the b side of each task b does better on")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "harm_audit.json")
    args = ap.parse_args()
    res: dict = {"a": args.a, "b": args.b, "metric": args.metric}
    if args.results:
        by = by_task(args.results)
        res["from_results"] = from_results(by, args.a, args.b, args.metric)
        if args.confirm:
            if args.tasks is None:
                ap.error("--confirm needs --tasks")
            res["from_results"] = confirm(res["from_results"], by, args.tasks, args.a, args.b, args.metric)
        r = res["from_results"]
        print(f"{r['worse']} of {r['tasks']} tasks worse ({r['share']})")
        for h in r["harms"]:
            print(f"  {h['task_id']}: {'; '.join(h['why'])}")
        for h in r.get("baseline_wrong_by_ty", []):
            print(f"  not harm, the baseline was wrong (ty): {h['task_id']}: {'; '.join(h['baseline_by_ty'])[:200]}")
        if args.confirm:
            print(f"better by pylint: {r['better_by_pylint']}, of which ty finds the {args.b} completion wrong: "
                  f"{len(r['better_but_b_wrong_by_ty'])}")
            for h in r["better_but_b_wrong_by_ty"]:
                print(f"  {h['task_id']}: {'; '.join(h['b_by_ty'])[:200]}")
    if args.from_paired:
        res["from_paired"] = from_paired(args.from_paired)
        print(f"{'source':<90}{'tasks':>6}{'worse':>6}{'share':>8}")
        for r in res["from_paired"]:
            print(f"{r['source']:<90}{r['tasks']:>6}{r['worse']:>6}{r['share_worse']:>8}")
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
