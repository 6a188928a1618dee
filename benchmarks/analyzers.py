"""Analysis latency and memory per analyzer (issue 31): Jedi beside each installed language server,
on the standing benchmark's dereference points (real packages), in one run.

    .venv/bin/python benchmarks/analyzers.py [--analyzers jedi,ty] [--per-repo 20]
        [--tasks ~/.cache/groundcode/bench/standing/tasks.jsonl] [--out benchmarks/results/analyzers.json]

For every dereference task (the code before `obj.` as an editor has it, the rest of the file after
it), each analyzer is asked for the members after the dot, through the analyzer interface the
monitor uses, waiting for the answer (up to 30 s). Per analyzer: the first answer in each file (the
analyzer's cold start included for the first file of a repository: one analyzer per repository, as
the server keeps them), the later answers in the same file (warm), every answer that was not a
cache hit (misses) — p50/p95 — the share answered (not failed open) and the agreement with the
reference name (the member the package's code writes there is among the answer), and the resident
memory of the analyzer's processes at the end. Machine load is recorded. Prints a table, writes
JSON. Bounded: --per-repo tasks per package.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

CACHE = Path(os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))


def pct(xs, q):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))], 1) if xs else None


def _rss(pids) -> int:
    import psutil
    total = 0
    for pid in pids:
        try:
            p = psutil.Process(pid)
            total += p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
        except psutil.Error:
            pass
    return total


def _pids(a) -> list[int]:
    if getattr(a, "pid", None):
        return [a.pid]
    pool = getattr(a, "_pool", None)
    return [p.pid for p in (getattr(pool, "_processes", None) or {}).values()]


def run(name: str, tasks: list[dict]) -> dict:
    from groundcode.analysis.base import MembersQuery
    from groundcode.evaluation.harness import context_for
    from groundcode.pycode import ident_run, receiver_before
    analyzers: dict = {}
    first, warm, miss = [], [], []
    answered = agree = 0
    seen_files: set = set()
    for t in tasks:
        ctx = context_for(t)
        repo = Path(ctx.repo)
        a = analyzers.get(repo)
        if a is None:
            if name == "jedi":
                from groundcode.analysis.jedi_client import JediAnalyzer
                a = JediAnalyzer(repo, deadline_s=30.0)
            else:
                from groundcode.analysis.lsp_client import LspAnalyzer
                a = LspAnalyzer(repo, name, deadline_s=30.0)
            analyzers[repo] = a
        before = ctx.before
        if not before.endswith("."):
            continue
        at = ctx.splice("")
        receiver = receiver_before(before, len(before) - 1)
        t0 = time.perf_counter()
        r = a.ask(MembersQuery(at, receiver, (t["task_id"],))).result(30)
        ms = (time.perf_counter() - t0) * 1e3
        if r is None:
            continue
        key = str(ctx.path)
        (warm if key in seen_files else first).append(ms)
        seen_files.add(key)
        if not r.cache_hit:
            miss.append(ms)
        if r.failed is None:
            answered += 1
            if ident_run(t.get("reference") or t.get("target") or "") in r.names:
                agree += 1
    rss = _rss([p for a in analyzers.values() for p in _pids(a)])
    for a in analyzers.values():
        a.close()
    n = len(first) + len(warm)
    return {"analyzer": name, "questions": n, "files": len(first),
            "first_in_file_ms": {"p50": pct(first, 0.5), "p95": pct(first, 0.95)},
            "warm_ms": {"p50": pct(warm, 0.5), "p95": pct(warm, 0.95)},
            "misses_ms": {"n": len(miss), "p50": pct(miss, 0.5), "p95": pct(miss, 0.95)},
            "answered_share": round(answered / n, 4) if n else None,
            "reference_in_answer_share_of_answered": round(agree / answered, 4) if answered else None,
            "rss_mb_at_end": rss >> 20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--analyzers", default="jedi,ty")
    ap.add_argument("--per-repo", type=int, default=20)
    ap.add_argument("--tasks", type=Path, default=CACHE / "bench" / "standing" / "tasks.jsonl")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "analyzers.json")
    args = ap.parse_args()
    from groundcode.jsonl import read_jsonl
    per = defaultdict(list)
    for t in read_jsonl(args.tasks):
        if t.get("kind") == "dereference" and len(per[t["repo"]]) < args.per_repo:
            per[t["repo"]].append(t)
    tasks = [t for repo in sorted(per) for t in per[repo]]
    load0 = os.getloadavg()[0]
    rows = [run(name, tasks) for name in args.analyzers.split(",")]
    res = {"tasks": len(tasks), "per_repo": args.per_repo, "load_start": round(load0, 2),
           "load_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(), "rows": rows}
    print(f"{'analyzer':<10}{'questions':>10}{'first p50/p95 ms':>20}{'warm p50/p95':>16}{'misses p50/p95':>18}"
          f"{'answered':>10}{'ref in answer':>15}{'RSS MB':>8}")
    for r in rows:
        print(f"{r['analyzer']:<10}{r['questions']:>10}{str(r['first_in_file_ms']['p50']) + ' / ' + str(r['first_in_file_ms']['p95']):>20}"
              f"{str(r['warm_ms']['p50']) + ' / ' + str(r['warm_ms']['p95']):>16}"
              f"{str(r['misses_ms']['p50']) + ' / ' + str(r['misses_ms']['p95']):>18}"
              f"{r['answered_share']!s:>10}{r['reference_in_answer_share_of_answered']!s:>15}{r['rss_mb_at_end']:>8}")
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
