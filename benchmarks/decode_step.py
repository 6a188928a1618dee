"""The engine's decode step on CPU, before and after its two speed-ups, in one run.

    .venv/bin/python benchmarks/decode_step.py                  # smollm2-135m, dtype as served
    .venv/bin/python benchmarks/decode_step.py --model tiny --quick

Four configurations of the same model and engine, interleaved round by round:
  sdpa + DynamicCache          what the engine did before: transformers' sdpa attention, a
                               DynamicCache built from the batch's tensors before every forward
                               (a copy of the whole cache) and grown by concatenation (another)
  groundcode + DynamicCache    decoding/attention.py alone: narrow forwards take the math path
  sdpa + growing cache         decoding/kv.py's growing layers alone (no copy per step)
  groundcode + growing cache   both (the engine's default on CPU)
For each: `Engine.generate` of --new-tokens greedy tokens, no guides, from prompts of
--prompt-tokens tokens cut from the standing benchmark's files (or this repository's own
sources when the benchmark is not built), one row alone and --batch rows at once; the decode
time per step is (generate − prefill of the same prompts) / steps, the median over --reps
rounds. Completions are compared with the baseline's (floating-point order differs between
attention paths, so a near-tie may break the other way).
Writes benchmarks/results/decode_step.json (or --out) and prints a table. Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))
TASKS = CACHE / "bench" / "standing" / "tasks.jsonl"
CONFIGS = (("sdpa", False), ("groundcode", False), ("sdpa", True), ("groundcode", True))


def sources(k: int) -> list[str]:
    """k texts: standing-benchmark files (distinct, sorted) or this repository's modules."""
    files = []
    if TASKS.exists():
        from groundcode.jsonl import read_jsonl
        seen = set()
        for t in sorted(read_jsonl(TASKS), key=lambda t: t["task_id"]):
            p = Path(t["repo_dir"]) / t["path"]
            if p not in seen and p.exists():
                seen.add(p)
                files.append(p)
    if len(files) < k:
        files += sorted((ROOT / "src" / "groundcode").rglob("*.py"), key=lambda p: -p.stat().st_size)
    return [p.read_text(encoding="utf-8", errors="replace") for p in files[::max(1, len(files) // (4 * k))][:k]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="registry name, tiny, or a path (default: smollm2-135m)")
    ap.add_argument("--dtype", default="auto", help="auto: what `groundcode serve` loads here")
    ap.add_argument("--prompt-tokens", type=int, default=950)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds, 8 new tokens, 200-token prompts")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "decode_step.json"))
    args = ap.parse_args()
    if args.quick:
        args.reps, args.new_tokens, args.prompt_tokens = 2, 8, 200
    import torch
    from rich.console import Console
    from rich.table import Table

    from groundcode.config import SamplingConfig
    from groundcode.decoding import attention, kv
    from groundcode.decoding.engine import Engine, RowSpec
    from groundcode.decoding.vocab.index import VocabIndex
    from groundcode.models.load import load_model, serving_dtype
    dtype = serving_dtype(args.dtype, "cpu", args.model)
    lm = load_model(args.model, device="cpu", dtype=dtype)
    eng = Engine(lm.model, lm.tokenizer, VocabIndex.for_tokenizer(lm.tokenizer))
    if eng.attention is None:
        raise SystemExit("this model does not use sdpa attention on CPU: nothing to compare")
    prompts = []
    for text in sources(args.batch):
        ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
        prompts.append(ids[:args.prompt_tokens])
    sampling = SamplingConfig(max_new_tokens=args.new_tokens)      # no guides: only EOS stops early

    def run(rows: list[list[int]]):
        t0 = time.perf_counter()
        for p in rows:
            eng.prefill(p)
        t1 = time.perf_counter()
        outs = eng.generate([RowSpec(p, id=i) for i, p in enumerate(rows)], sampling)
        t2 = time.perf_counter()
        steps = max(len(o.tokens) for o in outs)
        return 1000 * ((t2 - t1) - (t1 - t0)) / max(steps, 1), steps, [o.completion for o in outs]

    res = {c: {"1": [], "batch": []} for c in CONFIGS}
    texts = {}
    for rep in range(args.reps):
        for att, growing in CONFIGS:
            lm.model.set_attn_implementation(attention.NAME if att == "groundcode" else "sdpa")
            kv.GROWING = growing
            with torch.inference_mode():
                ms1, s1, c1 = run(prompts[:1])
                msb, sb, cb = run(prompts[:args.batch])
            res[(att, growing)]["1"].append(ms1)
            res[(att, growing)]["batch"].append(msb)
            texts[(att, growing)] = c1 + cb
    lm.model.set_attn_implementation(attention.NAME)
    kv.GROWING = True
    base = texts[CONFIGS[0]]
    out = {"model": lm.name, "dtype": dtype or "float32", "cpu_threads": torch.get_num_threads(),
           "prompt_tokens": [len(p) for p in prompts], "new_tokens": args.new_tokens, "batch": args.batch,
           "reps": args.reps, "load_avg": round(os.getloadavg()[0], 2), "configs": []}
    for c in CONFIGS:
        m1, mb = statistics.median(res[c]["1"]), statistics.median(res[c]["batch"])
        out["configs"].append({"attention": c[0], "cache": "growing" if c[1] else "DynamicCache",
                               "step_ms_1_row": round(m1, 2), f"step_ms_{args.batch}_rows": round(mb, 2),
                               "runs_1_row": [round(x, 2) for x in res[c]["1"]],
                               f"runs_{args.batch}_rows": [round(x, 2) for x in res[c]["batch"]],
                               "same_completions_as_baseline": sum(a == b for a, b in zip(texts[c], base)),
                               "completions": len(base)})
    b1, bb = out["configs"][0]["step_ms_1_row"], out["configs"][0][f"step_ms_{args.batch}_rows"]
    for c in out["configs"]:
        c["speedup_1_row"] = round(b1 / c["step_ms_1_row"], 2)
        c[f"speedup_{args.batch}_rows"] = round(bb / c[f"step_ms_{args.batch}_rows"], 2)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    t = Table(title=f"decode step · {out['model']} · {out['dtype']} · CPU × {out['cpu_threads']} · "
                    f"~{args.prompt_tokens}-token prompts", title_justify="left")
    for col in ("attention", "KV cache", "ms/step 1 row", f"ms/step {args.batch} rows", "speed-up 1 / batch",
                "same text"):
        t.add_column(col)
    for c in out["configs"]:
        t.add_row(c["attention"], c["cache"], str(c["step_ms_1_row"]), str(c[f"step_ms_{args.batch}_rows"]),
                  f"{c['speedup_1_row']}× / {c[f'speedup_{args.batch}_rows']}×",
                  f"{c['same_completions_as_baseline']}/{c['completions']}")
    Console().print(t)
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
