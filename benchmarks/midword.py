"""A cursor inside a name: what an editor asks at most keystrokes. Next-identifier match of
cursor completions with the first characters of the member name already typed, token healing
(the shipped prompt: a word's last token is given back and re-written under the heal mask)
against the prompt as is (`PromptConfig(heal=False)`), same model, same tasks, one run.

    python benchmarks/midword.py                    # the registry default, 200 tasks, 1 and 2 typed
    python benchmarks/midword.py --limit 40 --typed 1

Tasks: the standing benchmark's dereference tasks (`--tasks`, the `select` order, `--limit`);
each gives `--typed` contexts: the editor's cursor context (`cursor_context`, the file on disk)
at the task's cursor plus k characters of the expected member name (names shorter than k + 1
characters are skipped: nothing would be left to complete). Greedy, `--max-new-tokens` new
tokens, grounding on (the shipped monitor), prompts capped at 1,024 tokens (what Continue sends).
Figures per k and arm: exact match of the completed name (typed + the completion's leading word
characters) with the expected one, how often the completion ends the name at once (the typed
part taken as a whole name), and the paired counts (tasks only one arm gets right).
Writes benchmarks/results/midword.json and prints a table. Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="registry name, tiny, or a path (default: smollm2-135m)")
    ap.add_argument("--tasks", default=str(CACHE / "bench" / "standing" / "tasks.jsonl"))
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--typed", default="1,2", help="characters of the name typed (comma-separated)")
    ap.add_argument("--max-new-tokens", type=int, default=12)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "midword.json"))
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from rich.console import Console
    from rich.progress import track
    from rich.table import Table

    from groundcode.api import Generator, cursor_context
    from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
    from groundcode.evaluation.harness import select
    from groundcode.jsonl import read_jsonl
    from groundcode.models.load import serving_dtype
    from groundcode.session import Request, Session

    tasks = select(list(read_jsonl(Path(args.tasks))), limit=args.limit, kinds=("dereference",))
    ks = [int(x) for x in args.typed.split(",")]
    arms = {"healed": PromptConfig(max_prompt_tokens=1024),
            "as_is": PromptConfig(max_prompt_tokens=1024, heal=False)}
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens)
    rows = []
    t0 = time.perf_counter()
    with Generator(args.model, MonitorConfig(enabled=True), dtype=serving_dtype(args.dtype, None, args.model),
                   prompt=arms["healed"]) as gen, Session(gen) as sess:
        todo = [(t, k) for t in tasks for k in ks]
        for t, k in track(todo, description="mid-word completions"):
            m = re.match(r"[A-Za-z_]\w*", t["reference"])
            name = m.group(0) if m else ""
            if len(name) <= k:
                continue
            ctx = cursor_context(Path(t["repo_dir"]) / t["path"], t["line"], t["col"] + k, Path(t["repo_dir"]))
            if not ctx.before.endswith(name[:k]):
                continue                      # the file on disk differs from the task's text
            row = {"task_id": t["task_id"], "typed": k, "name": name}
            for arm, pconf in arms.items():
                g = sess.submit(Request(context=ctx, sampling=sampling, prompt=pconf)).result(600)[0]
                word = re.match(r"\w*", g.completion).group(0)
                row[arm] = {"completion": g.completion, "match": name[:k] + word == name,
                            "ended_at_once": word == ""}
            rows.append(row)
        model = gen.lm.name
    summary = {}
    for k in ks:
        sel = [r for r in rows if r["typed"] == k]
        if not sel:
            continue
        s = {"contexts": len(sel)}
        for arm in arms:
            s[arm] = {"match": round(sum(r[arm]["match"] for r in sel) / len(sel), 4),
                      "ended_at_once": round(sum(r[arm]["ended_at_once"] for r in sel) / len(sel), 4)}
        s["only_healed_right"] = sum(r["healed"]["match"] and not r["as_is"]["match"] for r in sel)
        s["only_as_is_right"] = sum(r["as_is"]["match"] and not r["healed"]["match"] for r in sel)
        summary[str(k)] = s
    result = {"model": model, "tasks": len(tasks), "max_new_tokens": args.max_new_tokens,
              "grounding": True, "wall_s": round(time.perf_counter() - t0, 1),
              "summary": summary, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    tab = Table(title=f"cursor inside a name · {model} · grounding on", title_justify="left")
    for c in ("typed", "contexts", "match healed", "match as is", "ended at once healed/as is",
              "only healed right", "only as-is right"):
        tab.add_column(c)
    for k, s in summary.items():
        tab.add_row(k, str(s["contexts"]), f"{s['healed']['match']:.3f}", f"{s['as_is']['match']:.3f}",
                    f"{s['healed']['ended_at_once']:.3f}/{s['as_is']['ended_at_once']:.3f}",
                    str(s["only_healed_right"]), str(s["only_as_is_right"]))
    Console().print(tab)
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
