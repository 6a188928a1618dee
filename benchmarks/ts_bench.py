"""The TypeScript benchmark (issue 32): baseline vs monitored on the typescript recipe's tasks,
greedy, one model, judged by TypeScript's compiler.

    .venv/bin/python benchmarks/ts_bench.py [--model smollm2-135m] [--functions 240] [--dereference 300]

Two runs side by side on a 2-core machine: give each one torch thread (`OMP_NUM_THREADS=1`);
two processes of two threads each ran ten times slower per token here.

Needs: groundcode analyzers install typescript; groundcode bench build --recipe typescript --out DIR
(default DIR: ~/.cache/groundcode/bench/typescript).

Function tasks: the body is written from the signature and the doc comment (the file before the
body's `{…` and after its `}` in view), stopped at the brace that closes it (guides/brace_end.py);
the package is compiled with the body in place (`tsc --noEmit` on its recipe tsconfig, in the
sandbox: evaluation/tsc_judge.py) and only errors the reference body does not have count
(evaluation/ts_scoring.py). Metrics: compile rate, member errors (TS2339 + TS2551), errors by
code, EditSim. Dereference tasks: the rest of a line after `obj.` in a method; next-identifier
match (the first name written is the reference's), exact line, EditSim. Name and import tasks
(`--names N --imports N`; built with `bench build --recipe R --kinds function,dereference,name,import`):
the rest of a line from a name a method reads / after `import `, scored as dereference tasks
and by the compiler with the first line in place: hallucinated names (TS2304, TS2552) and imports
(TS2307, TS2305, TS2724, TS2614) the reference does not have, compile rate, harm; and
`has_written_*_error`, the hallucination rate proper: only errors about a name (module) the
completion's line writes (an error about a binding the line dropped is not an invented name).
`--audit N`: the grounding audit on N dereference tasks (all by default) before generation: the
monitor's question at each task's `obj.` asked as the monitor asks it, and the reference's
member judged against the answer — a false block where the server answered and the member the
package's own code writes is not among its names; fail-open where it could not tell.
The monitored arm is the product's default monitor, reproducible (as `bench run`'s: every trigger
waits for its own answer, no speculation; `--speculate` for the editor's path, where an answer's
timing decides whether a name is written free and rolled back — a cut changes the cache's shape
and so the next logits in their last bits: two runs then broke an exact bfloat16 tie either way);
greedy ties go to the lowest token id (decoding/sampling.greedy). A .ts file is analyzed by
TypeScript's own server (`tsc --lsp`). Tasks are taken in the recipe's order (every package), the first N of each
kind per `--functions/--dereference`; samples go to $W (resumable), the table to stdout and the
figures with paired bootstrap intervals (monitored − baseline, tasks resampled, seeded; scoring
runs `--jobs` compilers at once, each in its own sandbox; each task's error codes per arm go to
$W/scores.jsonl) to
benchmarks/results/ts_bench_<model>.json. Not a test.
The arm `check-first` (issue 41; function tasks only): each body written freely, judged whole
by the same compiler (checkers.typescript_checker), and rewritten from its first failing line
with the monitors and the names monitor on (check_first.py, 3 writes at most, 120 s); the JSON's
`check_first` gives what it did per body and the seconds it added (p50, p95) over arm A's.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ROOT = Path(__file__).resolve().parents[1]
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")


def first_identifier(text: str) -> str:
    m = _IDENT.search(text)
    return m.group(0) if m else ""


def context_for(task: dict, text: str):
    from groundcode.context import CodeContext
    repo = Path(task["repo_dir"])
    if task["kind"] == "function":
        return CodeContext(path=repo / task["path"], repo=repo, before=text[: task["body_start"]],
                           after=text[task["body_end"]:], scope=task["scope"], starts_at_line=False,
                           reference=task["reference"], kind="body")
    eol = text.find("\n", task["offset"])
    eol = len(text) if eol < 0 else eol
    return CodeContext(path=repo / task["path"], repo=repo, before=text[: task["offset"]],
                       after=text[eol:], scope=task["scope"], starts_at_line=False,
                       reference=task["reference"], kind="cursor")


def pick(tasks: list[dict], kind: str, n: int) -> list[dict]:
    """The first n tasks of a kind, spread over the packages (round robin in recipe order).
    Samples and scores are keyed by task id, which the build makes unique (ts_builder.py)."""
    by_pkg: dict[str, list[dict]] = {}
    for t in tasks:
        if t["kind"] == kind:
            by_pkg.setdefault(t["repo"], []).append(t)
    out, k = [], 0
    while len(out) < n and any(k < len(v) for v in by_pkg.values()):
        out += [v[k] for v in by_pkg.values() if k < len(v)]
        k += 1
    return out[:n]


def generate(gen, tasks: list[dict], arm: str, samples: Path, max_new: dict, progress) -> dict:
    from groundcode.config import SamplingConfig
    from groundcode.jsonl import append_jsonl, read_jsonl
    done = {(r["arm"], r["task_id"]): r for r in read_jsonl(samples)} if samples.exists() else {}
    checked = arm.startswith("check-first")        # free, judged by the compiler, the failing
    view = gen.view(monitor=replace(gen.monitor, enabled=arm.startswith("monitored") or checked,   # line on
                                    names="+names" in arm or checked))   # rewritten (monitors + names)
    checkers: dict = {}
    out = {}
    for t in tasks:
        key = (arm, t["task_id"])
        if key not in done:
            text = (Path(t["repo_dir"]) / t["path"]).read_text(encoding="utf-8")
            ctx = context_for(t, text)
            s = SamplingConfig(max_new_tokens=max_new[t["kind"]], stop="block" if t["kind"] == "function" else "line")
            t0 = time.perf_counter()
            try:
                extra = {}
                if checked and t["kind"] == "function":
                    from groundcode.check_first import check_first
                    from groundcode.checkers import typescript_checker
                    if t["repo_dir"] not in checkers:
                        checkers[t["repo_dir"]] = typescript_checker(Path(t["repo_dir"]), "tsconfig.recipe.json")
                    c = check_first(view, ctx, s, checkers[t["repo_dir"]], rounds=3, budget_s=120.0)
                    g = c.generation
                    extra = {"strategy": c.strategy, "writes": c.writes, "check_s": round(c.check_s, 3), "free_s": round(c.free_s, 3),
                             "problems": [len(p) for p in c.problems]}
                elif checked:
                    raise ValueError("check-first writes whole bodies: function tasks only")
                else:
                    g = view.run([ctx], s)[0][0]
                rec = {"arm": arm, "task_id": t["task_id"], "kind": t["kind"], "completion": g.completion,
                       "tokens": g.tokens, "seconds": round(time.perf_counter() - t0, 3),
                       "finish_reason": g.finish_reason, "rollbacks": g.rollbacks,
                       "triggers": len(g.triggers), "failed_open": sum(x.failed_open for x in g.triggers),
                       **extra}
            except Exception as exc:              # a task's failure is recorded, the run goes on
                rec = {"arm": arm, "task_id": t["task_id"], "kind": t["kind"], "completion": "",
                       "error": f"{type(exc).__name__}: {exc}".splitlines()[0], "seconds": 0.0}
            append_jsonl(samples, rec)
            done[key] = rec
        out[t["task_id"]] = done[key]
        progress()
    return out


def audit(gen, tasks: list[dict], progress) -> dict:
    """The reference's member at every dereference task against the analyzer's answer there."""
    from groundcode.analysis.base import MembersQuery
    out = {"triggers": 0, "false_blocks": 0, "fail_open": 0, "reasons": {}, "examples": [], "ms": []}
    for t in tasks:
        text = (Path(t["repo_dir"]) / t["path"]).read_text(encoding="utf-8")
        ctx = context_for(t, text)
        lang = ctx.language
        dot = len(ctx.before) - 1
        receiver = lang.receiver_before(ctx.before, dot)
        name = first_identifier(t["reference"])
        a = gen.analyzer_for(ctx).ask(MembersQuery(ctx.splice(""), receiver, ("audit", t["task_id"]))).result(30)
        out["triggers"] += 1
        if a is None or a.failed is not None:
            out["fail_open"] += 1
            why = "timeout" if a is None else a.failed.split(":")[0]
            out["reasons"][why] = out["reasons"].get(why, 0) + 1
        else:
            out["ms"].append(a.ms)
            if name not in a.names:
                out["false_blocks"] += 1
                if len(out["examples"]) < 20:
                    out["examples"].append({"task_id": t["task_id"], "receiver": receiver, "member": name,
                                            "answered": sorted(a.names)[:12]})
        progress()
    ms = sorted(out.pop("ms"))
    n = out["triggers"]
    out.update(false_blocks_per_1000=round(1000 * out["false_blocks"] / n, 2) if n else None,
               fail_open_pct=round(100 * out["fail_open"] / n, 2) if n else None,
               answer_ms_p50=round(ms[len(ms) // 2], 1) if ms else None,
               answer_ms_p90=round(ms[int(0.9 * (len(ms) - 1))], 1) if ms else None)
    return out


def score(task: dict, rec: dict, baselines: dict) -> dict:
    from groundcode.evaluation.metrics import edit_sim
    comp, ref = rec["completion"], task["reference"]
    row = {"edit_sim": edit_sim(ref, comp)}
    if task["kind"] != "function":
        line = comp.split("\n", 1)[0]
        row["nim"] = float(first_identifier(line) == first_identifier(ref) != "")
        row["exact_line"] = float(line.strip() == ref.strip())
        if task["kind"] == "dereference":
            return row
    from groundcode.evaluation.ts_scoring import score_task
    j = score_task(task, comp if task["kind"] == "function" else comp.split("\n", 1)[0], baselines)
    if task["kind"] in CURSOR_CODES:       # the four-kind benchmark's cursors: judged by tsc
        n = sum(j["codes"].get(c, 0) for c in CURSOR_CODES[task["kind"]])
        w = sum(code in CURSOR_CODES[task["kind"]] and written(q, line, task["kind"]) for code, q in j["quoted"])
        row.update({f"{task['kind']}_errors": float(n), f"has_{task['kind']}_error": float(n > 0),
                    f"has_written_{task['kind']}_error": float(w > 0),
                    "compiles": float(j["compiles"]), "codes": j["codes"], "quoted": j["quoted"]})
        return row
    member = j["codes"].get("2339", 0) + j["codes"].get("2551", 0)
    row.update(compiles=float(j["compiles"]), member_errors=float(member), has_member_error=float(member > 0),
               new_errors=float(j["new_errors"]), codes=j["codes"])
    return row


def written(quoted: str, line: str, kind: str) -> bool:
    """Does the completion's line write what the error is about: the name (as a whole word) or
    the module (its specifier)? An error about a name the line does not write (a binding the
    line dropped, read further down the file) is a consequence, not a hallucination."""
    if not quoted:
        return False
    if kind == "import":
        return quoted in line
    return re.search(r"(?<![\w$])" + re.escape(quoted) + r"(?![\w$])", line) is not None


# what the compiler calls a hallucinated name (2304 cannot find name, 2552 ... did you mean) and
# a hallucinated import (2307 cannot find module, 2305/2724/2614 module has no exported member)
CURSOR_CODES = {"name": ("2304", "2552"), "import": ("2307", "2305", "2724", "2614")}


def paired(a: list[float], b: list[float], reps: int = 2000, seed: int = 0) -> dict:
    rng = random.Random(seed)
    d = [y - x for x, y in zip(a, b)]
    n = len(d)
    means = sorted(statistics.fmean(rng.choices(d, k=n)) for _ in range(reps))
    return {"baseline": round(statistics.fmean(a), 4), "monitored": round(statistics.fmean(b), 4),
            "diff": round(statistics.fmean(d), 4), "ci95": [round(means[int(0.025 * reps)], 4),
                                                           round(means[int(0.975 * reps) - 1], 4)],
            "better": sum(x > 0 for x in d), "worse": sum(x < 0 for x in d), "n": n}


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from groundcode.api import Generator
    from groundcode.cache import cache_dir
    from groundcode.config import MonitorConfig, PromptConfig
    from groundcode.jsonl import read_jsonl
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, default=cache_dir() / "bench" / "typescript" / "tasks.jsonl")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--functions", type=int, default=240)
    ap.add_argument("--dereference", type=int, default=300)
    ap.add_argument("--names", type=int, default=0, help="name cursor tasks (bench build --kinds ...,name)")
    ap.add_argument("--imports", type=int, default=0, help="import cursor tasks (bench build --kinds ...,import)")
    ap.add_argument("--max-new-tokens", type=int, default=160, help="function bodies (dereference: 32)")
    ap.add_argument("--max-prompt-tokens", type=int, default=1024)
    ap.add_argument("--audit", type=int, default=-1, help="dereference tasks to audit (-1: all, 0: none)")
    ap.add_argument("--speculate", action="store_true",
                    help="the editor's path (answers speculated on; runs may differ): default reproducible")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compilers at once when scoring")
    ap.add_argument("--work", type=Path, default=None, help="samples (default: the cache)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--arms", default="baseline,monitored",
                    help="the two arms compared, A,B (baseline, monitored, monitored+names: the names "
                         "monitor too; check-first: function bodies written freely, judged by the compiler, "
                         "rewritten from the first failing line with the monitors and the names monitor on); "
                         "figures are B - A, labelled baseline/monitored in the JSON")
    args = ap.parse_args()
    A, B = args.arms.split(",")
    console = Console()
    if not args.tasks.exists():
        raise SystemExit(f"{args.tasks}: build it first (groundcode bench build --recipe typescript)")
    tag = Path(args.model).name
    work = args.work or cache_dir() / "bench" / f"typescript-run-{tag}"
    work.mkdir(parents=True, exist_ok=True)
    out = args.out or ROOT / "benchmarks" / "results" / f"ts_bench_{tag}.json"
    tasks = list(read_jsonl(args.tasks))
    chosen = pick(tasks, "function", args.functions) + pick(tasks, "dereference", args.dereference) \
        + pick(tasks, "name", args.names) + pick(tasks, "import", args.imports)
    from groundcode.models.load import load_model, serving_dtype
    lm = load_model(args.model, dtype=serving_dtype(args.dtype, None, args.model))
    t0 = time.perf_counter()
    runs = {}
    max_new = {"function": args.max_new_tokens, "dereference": 32, "name": 32, "import": 32}
    audited = None
    with Generator(lm, MonitorConfig(enabled=True, reproducible=not args.speculate), prompt=PromptConfig(max_prompt_tokens=args.max_prompt_tokens)) as gen, \
            Progress(console=console) as prog:
        if args.audit:
            derefs = [t for t in tasks if t["kind"] == "dereference"]
            derefs = derefs if args.audit < 0 else pick(tasks, "dereference", args.audit)
            bar = prog.add_task("grounding audit (the reference's member)", total=len(derefs))
            audited = audit(gen, derefs, lambda: prog.advance(bar))
            t0 = time.perf_counter()
        for arm in (A, B):
            bar = prog.add_task(f"{arm}: generating", total=len(chosen))
            runs[arm] = generate(gen, chosen, arm, work / "samples.jsonl", max_new, lambda: prog.advance(bar))
        gen_s = time.perf_counter() - t0
        baselines: dict = {}
        scores: dict = {A: {}, B: {}}
        bar = prog.add_task("scoring (tsc in the sandbox)", total=2 * len(chosen))
        from concurrent.futures import ThreadPoolExecutor
        from groundcode.evaluation.ts_scoring import baseline as package_baseline
        for pkg in dict.fromkeys(t["repo_dir"] for t in chosen if t["kind"] != "dereference"):
            baselines[pkg] = package_baseline(Path(pkg))      # each package's own errors, once
        jobs = [(arm, t) for arm in (A, B) for t in chosen]

        def one(job):
            arm, t = job
            return arm, t["task_id"], score(t, runs[arm][t["task_id"]], baselines)
        with ThreadPoolExecutor(max(1, min(args.jobs, len(jobs)))) as pool:   # each a tsc process
            for arm, tid, row in pool.map(one, jobs):
                scores[arm][tid] = row
                prog.advance(bar)
    with open(work / "scores.jsonl", "w", encoding="utf-8") as f:     # per task, for reading errors
        for arm in (A, B):
            for t in chosen:
                row = scores[arm][t["task_id"]]
                f.write(json.dumps({"arm": arm, "task_id": t["task_id"], "kind": t["kind"],
                                    "codes": row.get("codes", {}), "quoted": row.get("quoted", [])}) + "\n")
    result = {"model": lm.name, "dtype": lm.dtype, "tasks_file": str(args.tasks), "cpus": os.cpu_count(),
              "reproducible": not args.speculate, "arms": {"baseline": A, "monitored": B},
              "load_avg_1m_end": round(os.getloadavg()[0], 2), "generate_s": round(gen_s, 1),
              "total_s": round(time.perf_counter() - t0, 1), "audit": audited, "kinds": {}}
    for kind, metrics in (("function", ("compiles", "has_member_error", "member_errors", "new_errors", "edit_sim")),
                          ("dereference", ("nim", "exact_line", "edit_sim")),
                          ("name", ("has_name_error", "has_written_name_error", "name_errors", "compiles", "nim", "exact_line", "edit_sim")),
                          ("import", ("has_import_error", "has_written_import_error", "import_errors", "compiles", "nim", "exact_line", "edit_sim"))):
        ids = [t["task_id"] for t in chosen if t["kind"] == kind]
        if not ids:
            continue
        k = {"tasks": len(ids)}
        for m in metrics:
            k[m] = paired([scores[A][i][m] for i in ids], [scores[B][i][m] for i in ids])
        recs = [runs[B][i] for i in ids]
        k["triggers"] = sum(r.get("triggers", 0) for r in recs)
        k["failed_open"] = sum(r.get("failed_open", 0) for r in recs)
        k["rollbacks"] = sum(r.get("rollbacks", 0) for r in recs)
        k["errors"] = {arm: sum("error" in runs[arm][i] for i in ids) for arm in runs}
        k["seconds"] = {arm: round(sum(runs[arm][i].get("seconds", 0) for i in ids), 1) for arm in runs}
        for arm in runs:                  # check-first: what it did, and the time it added per body
            st = [runs[arm][i] for i in ids if "strategy" in runs[arm][i]]
            if st:
                sec = sorted(r["seconds"] - runs[A][i].get("seconds", 0) for r, i in
                             ((runs[arm][i], i) for i in ids if "strategy" in runs[arm][i]))
                k["check_first"] = {"arm": arm, "strategies": dict(Counter(r["strategy"] for r in st)),
                                    "check_s_p50": round(statistics.median(r["check_s"] for r in st), 2),
                                    "added_s_p50": round(sec[len(sec) // 2], 2),
                                    "added_s_p95": round(sec[min(len(sec) - 1, int(0.95 * len(sec)))], 2)}
        if kind != "dereference":
            codes = {}
            for arm in runs:
                c: dict = {}
                for i in ids:
                    for code, n in scores[arm][i]["codes"].items():
                        c[code] = c.get(code, 0) + n
                codes[arm] = dict(sorted(c.items(), key=lambda kv: -kv[1]))
            k["codes"] = codes
            compiled = [i for i in ids if scores[A][i]["compiles"]]
            k["harm"] = {"compiled_at_baseline": len(compiled),
                         "fail_when_monitored": sum(not scores[B][i]["compiles"] for i in compiled)}
        result["kinds"][kind] = k
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    t = Table(title=f"TypeScript benchmark · {lm.name} · greedy · {A} vs {B} (paired 95% interval)")
    for col in ("kind", "metric", A, B, "Δ [95% CI]", "better/worse"):
        t.add_column(col)
    for kind, k in result["kinds"].items():
        for m, v in k.items():
            if isinstance(v, dict) and "diff" in v:
                t.add_row(f"{kind} ({k['tasks']})", m, f"{v['baseline']:.3f}", f"{v['monitored']:.3f}",
                          f"{v['diff']:+.3f} [{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}]", f"{v['better']}/{v['worse']}")
    console.print(t)
    if audited:
        console.print(f"audit: {audited['triggers']} triggers, false blocks {audited['false_blocks']} "
                      f"({audited['false_blocks_per_1000']} per 1,000), fail-open {audited['fail_open_pct']}% "
                      f"{audited['reasons']}, answers p50/p90 {audited['answer_ms_p50']}/{audited['answer_ms_p90']} ms")
    console.print(f"→ {out}")


if __name__ == "__main__":
    main()
