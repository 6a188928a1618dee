"""ToolGen's Tables II-III on the standing benchmark's function tasks, sized for a CPU: BASE,
TOOLGEN, BASE+monitor, TOOLGEN+monitor (LoRA adapters of smollm2-135m, recipes/toolgen_adapters.sh)
and the zero-shot variant (the plain model with entropy-triggered tool calls) beside the plain
model. Two commands:

    python benchmarks/toolgen_table.py run --config NAME --model M [--monitor] [--tool-tokens]
                                           [--tool-entropy H] [--limit 6] [--context 1024]
    python benchmarks/toolgen_table.py table        # after `groundcode bench score`

`run` generates for the first `--limit` function tasks of the standing benchmark (the harness's
fixed sha256 order), greedy, `--max-new-tokens` 96, with prompts capped to `--context` tokens
(the file's tail before the function; the same cap for every configuration), into
~/.cache/groundcode/toolgen/run/samples.jsonl (resumable). `table` joins the scored summary with
the samples' tool calls and seconds per function and writes benchmarks/results/toolgen/table.md
and toolgen_table.json. Machine load is recorded per run (the machine is shared).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

OUT = Path("benchmarks/results/toolgen")              # summary, table, runs (committed)
WORK = Path.home() / ".cache/groundcode/toolgen/run"   # samples and per-sample results (not committed:
                                                      # scoring's results quote the references)
TASKS = Path.home() / ".cache/groundcode/bench/standing/tasks.jsonl"
METRICS = [("bleu4", "BLEU-4"), ("codebleu", "CodeBLEU"), ("edit_sim", "EditSim"),
           ("dep_coverage", "DepCov"), ("success", "SuccRate")]


def run(a) -> None:
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, ToolConfig
    from groundcode.evaluation import harness
    from groundcode.jsonl import read_jsonl
    from groundcode.models.load import load_model
    tasks = harness.select(list(read_jsonl(a.tasks)), limit=a.limit or None, kinds=("function",))   # 0: all
    lm = load_model(a.model)
    if lm.template is not None:
        lm.template = dataclasses.replace(lm.template, context_length=a.context)
    tools = ToolConfig(enabled=a.tool_tokens or a.tool_entropy is not None, entropy=a.tool_entropy)
    gen = Generator(lm, MonitorConfig(enabled=a.monitor), tools=tools)
    cfg = harness.RunConfig(name=a.config, model=a.model, monitor=a.monitor, max_new_tokens=a.max_new_tokens,
                            batch=a.batch, tool_tokens=tools.enabled, tool_entropy=a.tool_entropy)
    OUT.mkdir(parents=True, exist_ok=True)
    load0, t0 = os.getloadavg(), time.perf_counter()
    WORK.mkdir(parents=True, exist_ok=True)
    n = harness.run(tasks, WORK / "samples.jsonl", cfg, generator=gen)
    gen.close()
    rec = {"config": a.config, "model": a.model, "tasks": n, "wall_s": round(time.perf_counter() - t0, 1),
           "loadavg_before": [round(x, 2) for x in load0], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
           "context": a.context, "limit": a.limit}
    with open(OUT / "runs.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(rec)


def table(a) -> None:
    from groundcode.jsonl import read_jsonl
    summary = json.loads((OUT / "summary.json").read_text())
    per = {}
    for r in read_jsonl(WORK / "samples.jsonl"):
        s = r["samples"][0]
        d = per.setdefault(r["config"], {"n": 0, "tool_calls": 0, "tool_failed": 0, "seconds": 0.0})
        d["n"] += 1
        d["tool_calls"] += s.get("tool_calls", 0)
        d["tool_failed"] += s.get("tool_failed", 0)
        d["seconds"] += s["seconds"] / max(1, a.batch_of.get(r["config"], 1))
    runs = {}
    for r in read_jsonl(OUT / "runs.jsonl"):
        runs[r["config"]] = r
    order = [c for c in a.order.split(",") if c in summary]
    rows, out = [], {}
    base = summary.get(a.baseline, {}).get("kinds", {}).get("function", {}).get("metrics", {})
    head = "| approach | " + " | ".join(h for _, h in METRICS) + " | tool calls / function | s / function (wall) |"
    rows += [head, "|" + " --- |" * (len(METRICS) + 3)]
    for c in order:
        m = summary[c]["kinds"]["function"]["metrics"]
        cells = []
        for k, _ in METRICS:
            v = m[k][0]
            cell = f"{v:.3f}"
            if base and c != a.baseline and k in base and base[k][0]:
                cell += f" ({(v - base[k][0]) / base[k][0] * 100:+.0f}%)"
            cells.append(cell)
        d = per.get(c, {"n": 1, "tool_calls": 0, "seconds": 0})
        wall = runs.get(c, {}).get("wall_s")
        spf = wall / d["n"] if wall else None
        rows.append(f"| {c} | " + " | ".join(cells) + f" | {d['tool_calls'] / d['n']:.1f} | "
                    + (f"{spf:.0f}" if spf else "-") + " |")
        out[c] = {k: m[k][0] for k, _ in METRICS} | {"tasks": summary[c]["kinds"]["function"]["tasks"],
                                                     "tool_calls_per_function": d["tool_calls"] / d["n"],
                                                     "tool_calls_failed_open": d["tool_failed"],
                                                     "seconds_per_function": spf, "run": runs.get(c)}
    text = "\n".join(rows) + "\n"
    (OUT / "table.md").write_text(text)
    Path("benchmarks/results/toolgen_table.json").write_text(json.dumps(out, indent=1) + "\n")
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--config", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--monitor", action="store_true")
    r.add_argument("--tool-tokens", action="store_true")
    r.add_argument("--tool-entropy", type=float, default=None)
    r.add_argument("--limit", type=int, default=6)
    r.add_argument("--context", type=int, default=1024)
    r.add_argument("--max-new-tokens", type=int, default=96)
    r.add_argument("--batch", type=int, default=6)
    r.add_argument("--tasks", type=Path, default=TASKS)
    t = sub.add_parser("table")
    t.add_argument("--baseline", default="BASE")
    t.add_argument("--order", default="BASE,TOOLGEN,BASE+monitor,TOOLGEN+monitor,plain,zero-shot")
    a = ap.parse_args()
    a.batch_of = {}
    run(a) if a.cmd == "run" else table(a)


if __name__ == "__main__":
    main()
