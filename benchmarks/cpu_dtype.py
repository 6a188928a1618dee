"""float32 against bfloat16 for a model on CPU: speed and quality, in one run.

    .venv/bin/python benchmarks/cpu_dtype.py                     # smollm2-135m, 2 threads
    .venv/bin/python benchmarks/cpu_dtype.py --model tiny --quick

For each dtype (the same weights, loaded by models/load.py with `dtype=`):
1. decode step: one token forward with a KV cache of --context tokens, median of --steps, per
   round; the median over --reps rounds (the dtypes interleaved round by round);
2. prefill: one forward of 1,024 tokens from an empty cache, median over the rounds (the
   minimum is kept too: on shared cores it is the closest to an idle machine's figure);
3. bits per character, teacher forced (benchmarks/model_quality.py's `bits_per_char`, windows of
   --window tokens) on the .py files of the standing benchmark's repositories (up to --chars
   characters, files taken whole, sorted by path);
4. greedy completions: --prompts standing-benchmark function tasks, the prompt is the file up to
   the body's first line (its last 512 tokens), 32 new tokens, `generate` without sampling;
   how many completions are identical across the dtypes, and how many agree on their first line.
CPUs with AVX512-BF16 (or AMX) run bfloat16 matmuls natively in oneDNN; without them bfloat16 is
emulated and slower. /proc/cpuinfo's flags are recorded.
Writes benchmarks/results/cpu_dtype.json (or --out) with the machine and load average; prints a
table. Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
CACHE = Path(os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))
TASKS = CACHE / "bench" / "standing" / "tasks.jsonl"


def texts(tasks: list[dict], chars: int) -> list[str]:
    """Whole .py files of the tasks' repositories, round robin over repositories, up to `chars`."""
    per_repo = {}
    for t in tasks:
        root = Path(t["repo_dir"])
        if root not in per_repo:
            per_repo[root] = sorted(p for p in root.rglob("*.py") if "test" not in p.name)
    out, total = [], 0
    queues = [list(v) for _, v in sorted(per_repo.items())]
    while total < chars and any(queues):
        for q in queues:
            if not q or total >= chars:
                continue
            text = q.pop(0).read_text(encoding="utf-8", errors="replace")
            if 200 <= len(text) <= chars // 4:
                out.append(text)
                total += len(text)
    return out


def prompts(tasks: list[dict], k: int) -> list[str]:
    seen, out = set(), []
    for t in sorted(tasks, key=lambda t: t["task_id"]):
        if t["kind"] != "function" or t["task_id"] in seen:
            continue
        seen.add(t["task_id"])
        lines = (Path(t["repo_dir"]) / t["path"]).read_text(encoding="utf-8").split("\n")
        body = lines[t["line"] - 1]
        indent = body[:len(body) - len(body.lstrip())]
        out.append("\n".join(lines[:t["line"] - 1]) + "\n" + indent)
        if len(out) >= k * 3:
            break
    return out[::3][:k]          # every third: spread over the repositories


def decode_step_ms(model, context: int, steps: int, vocab: int) -> float:
    import torch
    ids = torch.randint(100, vocab - 1, (1, context))
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
        past = out.past_key_values
        nxt = ids[:, -1:]
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            times.append((time.perf_counter() - t) * 1e3)
            past = out.past_key_values
            nxt = out.logits[:, -1:].argmax(-1)
    return round(statistics.median(times), 1)


def prefill_ms(model, n: int, reps: int, vocab: int) -> float:
    import torch
    ids = torch.randint(100, vocab - 1, (1, n))
    times = []
    with torch.no_grad():
        for _ in range(reps):
            t = time.perf_counter()
            model(input_ids=ids, use_cache=True)
            times.append((time.perf_counter() - t) * 1e3)
    return round(statistics.median(times), 1)


def greedy(model, tok, ps: list[str], max_new: int) -> list[str]:
    import torch
    out = []
    for p in ps:
        ids = tok(p, add_special_tokens=False)["input_ids"][-512:]
        x = torch.tensor([ids])
        with torch.no_grad():
            y = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=max_new,
                               do_sample=False, pad_token_id=tok.pad_token_id)
        out.append(tok.decode(y[0, len(ids):], skip_special_tokens=True))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--reps", type=int, default=6, help="speed rounds")
    ap.add_argument("--chars", type=int, default=40000)
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cpu_dtype.json")
    args = ap.parse_args()
    if args.quick:
        args.steps, args.reps, args.chars, args.prompts = 6, 1, 6000, 4
    import torch
    torch.set_num_threads(args.threads)
    from editor_latency import machine
    from model_quality import bits_per_char
    from groundcode.jsonl import read_jsonl
    from groundcode.models.load import load_model
    tasks = list(read_jsonl(args.tasks))
    corpus, ps = texts(tasks, args.chars), prompts(tasks, args.prompts)
    load0 = [round(x, 2) for x in os.getloadavg()]
    res = {"model": None, "machine": machine(), "load_before": load0, "threads": args.threads,
           "context": args.context, "window": args.window, "chars": sum(map(len, corpus)),
           "files": len(corpus), "prompts": len(ps), "dtypes": {}}
    completions = {}
    lms = {dt: load_model(args.model, "cpu", dt) for dt in args.dtypes.split(",")}
    res["model"] = next(iter(lms.values())).name
    # speed: the dtypes interleaved round by round, so a load change on the shared cores hits both
    steps: dict = {dt: [] for dt in lms}
    pre: dict = {dt: [] for dt in lms}
    for dt, lm in lms.items():           # warm-up: oneDNN builds its kernels on first use
        decode_step_ms(lm.model, 64, 4, int(lm.model.config.vocab_size))
        prefill_ms(lm.model, 256, 1, int(lm.model.config.vocab_size))
    for _ in range(args.reps):
        for dt, lm in lms.items():
            vocab = int(lm.model.config.vocab_size)
            n = min(1024, lm.context_length)
            steps[dt].append(decode_step_ms(lm.model, min(args.context, n - args.steps - 1), args.steps, vocab))
            pre[dt].append(prefill_ms(lm.model, n, 1, vocab))
    for dt, lm in lms.items():
        n = min(1024, lm.context_length)
        r = {"decode_step_ms": round(statistics.median(steps[dt]), 1), "decode_step_ms_min": min(steps[dt]),
             "decode_step_ms_rounds": steps[dt], "prefill_tokens": n,
             "prefill_ms": round(statistics.median(pre[dt]), 1), "prefill_ms_min": min(pre[dt]),
             "prefill_ms_rounds": pre[dt]}
        t = time.perf_counter()
        bpc, ntok, nchar = bits_per_char(lm.model, lm.tokenizer, corpus, min(args.window, n - 1))
        r.update({"bits_per_char": round(bpc, 4), "tokens_scored": ntok,
                  "scoring_s": round(time.perf_counter() - t, 1)})
        t = time.perf_counter()
        completions[dt] = greedy(lm.model, lm.tokenizer, ps, 32)
        r["greedy_s"] = round(time.perf_counter() - t, 1)
        res["dtypes"][dt] = r
        print(f"{dt}: {r}", file=sys.stderr, flush=True)
    names = list(completions)
    if len(names) == 2:
        a, b = completions[names[0]], completions[names[1]]
        res["greedy_identical"] = sum(x == y for x, y in zip(a, b))
        res["greedy_first_line_identical"] = sum(x.split("\n")[0] == y.split("\n")[0] for x, y in zip(a, b))
        res["greedy_differing"] = [{"prompt": k, names[0]: x, names[1]: y}
                                   for k, (x, y) in enumerate(zip(a, b)) if x != y][:20]
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    lines = [f"model {res['model']}, {res['machine']['cores']} cores ({res['machine']['cpu']}, "
             f"avx512_bf16 {res['machine']['avx512_bf16']}), {args.threads} threads, load "
             f"{load0} -> {res['load_after']}",
             f"{'dtype':>10} {'decode step ms (median/min)':>28} {'prefill ' + str(res['dtypes'][names[0]]['prefill_tokens']) + ' ms (median/min)':>30} {'bits/char':>10}"]
    for dt, r in res["dtypes"].items():
        lines.append(f"{dt:>10} {str(r['decode_step_ms']) + ' / ' + str(r['decode_step_ms_min']):>28} "
                     f"{str(r['prefill_ms']) + ' / ' + str(r['prefill_ms_min']):>30} {r['bits_per_char']:>10}")
    if "greedy_identical" in res:
        lines.append(f"greedy completions identical {res['greedy_identical']}/{len(ps)}, first line "
                     f"identical {res['greedy_first_line_identical']}/{len(ps)} "
                     f"({res['chars']} chars in {res['files']} files scored)")
    res["table"] = lines
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
