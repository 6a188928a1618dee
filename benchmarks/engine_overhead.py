"""Engine overhead of monitor-guided decoding (issue: grounded decoding engine, items 8b, 8c).

(b) free-step overhead: the guides' cost on steps where nothing is constrained — a real
    file's token stream is fed through DereferenceMonitor + BodyEnd exactly as the engine
    calls them (mask, check, accept, advance, stop), no model; steps that trigger or narrow are
    excluded and reported separately.
(c) replay slowdown: reference function bodies of a real package (a PyPI source distribution,
    downloaded with `pip download --no-deps`, never installed) are teacher-forced through the
    engine twice — plain and monitored — so triggers happen at real positions and both runs do
    identical model work; the difference is the monitor (Jedi analysis, masks, bookkeeping).
    Each is replayed against the healed prompt: the reference is what the row writes after
    `ctx.continued(owed)`, the body's line break and indentation included.

(a) decode speed (`--decode-tokens N`, on by default where CUDA is): the engine's plain decoding
    (no guides, greedy, batch 1) against `transformers.generate` on the same model, prompt and
    device, N tokens each (end of text suppressed in both), warm, interleaved; and the engine's
    step times (p50, p99, the slowest) over an N-token teacher-forced replay of a real file.

    .venv/bin/python benchmarks/engine_overhead.py [--model ID|PATH] [--package click==8.1.7]
                                                    [--functions 40] [--max-prompt-tokens 1024]
    python benchmarks/engine_overhead.py --random 1.7b --tokenizer DIR     # a GPU, no weights needed
    ... --names          # (c) also with the names monitor on: its cost over the member monitor
    ... --decode-only    # (a) alone, without generate's cold and cuDNN runs; per-run step times
    .venv/bin/python benchmarks/engine_overhead.py --ts-tasks ~/.cache/groundcode/bench/typescript/tasks.jsonl \
        --out benchmarks/results/free_step_by_language.json      # (b) only, Python and TypeScript

`--random SHAPE` builds a random-weight Llama of that shape (1.7b: SmolLM2-1.7B's, 6b: a
6B-parameter one, tiny) on the device with the tokenizer of `--tokenizer` (a registry model's
directory, default the pulled smollm2-135m's): weights do not change step time, so a GPU needs
no model files. Monitored slowdown is also given after the first (cold) function.

Prompts are capped at `--max-prompt-tokens` (1,024 by default, what Continue sends: whole-window
prompts of click's 3,000-line modules made a CPU run spend most of its time in prefills that
both modes share); weights in `--dtype` (auto: what `groundcode serve` loads here).

Prints a table and writes benchmarks/results/engine_overhead.json.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from groundcode.cache import cache_dir  # noqa: E402

CACHE = cache_dir()
console = Console()


def fetch_package(spec: str) -> Path:
    """Download and unpack a source distribution (or pure wheel) into the cache."""
    name = spec.replace("==", "-")
    root = CACHE / "bench-src" / name
    if root.exists():
        return root
    dl = CACHE / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    "--no-build-isolation", "-q", "-d", str(dl), spec], check=False,
                   capture_output=True)
    base = spec.split("==")[0].replace("-", "_").lower()
    files = [p for p in dl.iterdir() if p.name.lower().replace("-", "_").startswith(base)]
    if not files:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dl), spec],
                       check=True)
        files = [p for p in dl.iterdir() if p.name.lower().replace("-", "_").startswith(base)]
    f = sorted(files)[-1]
    root.mkdir(parents=True)
    if f.suffix == ".whl" or f.suffix == ".zip":
        zipfile.ZipFile(f).extractall(root)
    else:
        with tarfile.open(f) as tf:
            tf.extractall(root, filter="data")
    return root


def pick_functions(root: Path, limit: int) -> list[tuple[Path, str]]:
    """Methods/functions with a docstring and a body of 3-40 lines, in file order."""
    out = []
    for f in sorted(root.rglob("*.py")):
        if any(part in ("tests", "test", "docs", "examples") for part in f.parts):
            continue
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        stack = [(n, "") for n in tree.body]
        while stack:
            node, prefix = stack.pop(0)
            if isinstance(node, ast.ClassDef):
                stack.extend((c, prefix + node.name + ".") for c in node.body)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
                n_body = node.end_lineno - node.body[0].end_lineno
                if 3 <= n_body <= 40:
                    out.append((f, prefix + node.name))
    # spread over files deterministically
    step = max(1, len(out) // limit)
    return out[::step][:limit]


def ts_contexts(tasks_file: str, limit: int) -> list:
    """TypeScript function bodies (the typescript recipe's function tasks, spread over its
    packages) as body contexts, the reference body what the row writes."""
    sys.path.insert(0, str(Path(__file__).parent))
    from ts_bench import context_for, pick
    from groundcode.jsonl import read_jsonl
    out = []
    for t in pick(list(read_jsonl(Path(tasks_file))), "function", limit):
        out.append(context_for(t, (Path(t["repo_dir"]) / t["path"]).read_text(encoding="utf-8")))
    return out


def free_step_overhead(gen, contexts) -> dict:
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.body_end import BodyEnd
    from groundcode.decoding.guides.brace_end import BraceEnd
    from groundcode.decoding.guides.dereference import WAIT, DereferenceMonitor
    tok = gen.lm.tokenizer
    vocab = gen.vocab
    free, busy = [], []
    perf = time.perf_counter_ns
    for ctx in contexts:
        ids = tok(ctx.reference[len(ctx.lead):], add_special_tokens=False)["input_ids"]
        ctx = ctx.continued("")            # the rows start after the body's indentation
        end = BodyEnd(ctx.stop_indent) if ctx.language.Braces is None else BraceEnd()
        guides = [end, DereferenceMonitor(gen.analyzer_for(ctx))]
        row = RowView(0, ctx, vocab)
        for g in guides:
            g.reset(row)
        mon = guides[1]
        for t in ids:
            was_wait = mon.state == WAIT
            t0 = perf()
            allowed = None
            for g in guides:
                m = g.mask(row)
                allowed = m if m is not None else allowed
            if allowed is None:
                for g in guides:
                    g.check(row, t)
            row.tokens.append(t)
            row.text += vocab.texts[t]
            row.ends.append(len(row.text))
            for g in guides:
                g.advance(row, t)
            for g in guides:
                g.stop(row)
            dt = (perf() - t0) / 1e3
            (free if (was_wait and mon.state == WAIT and not vocab.has_dot[t]) else busy).append(dt)
    free.sort()
    return {"free_steps": len(free), "free_us_p50": round(statistics.median(free), 2),
            "free_us_mean": round(statistics.fmean(free), 2),
            "free_us_p99": round(free[int(0.99 * (len(free) - 1))], 2),
            "other_steps": len(busy), "other_us_mean": round(statistics.fmean(busy), 1) if busy else 0}


def replay(gen_plain, gen_mon, contexts, gen_names=None) -> dict:
    """Each function teacher-forced plain, monitored and (with `gen_names`) monitored with the
    names monitor on, in rotating order; the same model work in every arm."""
    from groundcode.config import SamplingConfig
    from groundcode.decoding.replay import replay as replay_row
    tok = gen_plain.lm.tokenizer
    rows = []
    # warm the model once (both generators share it)
    gen_plain.run([contexts[0]], SamplingConfig(max_new_tokens=8))
    t_plain = t_mon = 0.0
    n_tokens = 0
    triggers = failed = hits = 0
    analysis_ms = 0.0
    t_names = 0.0
    names_triggers = names_failed = 0
    for k, ctx in enumerate(contexts):
        s = SamplingConfig(max_new_tokens=256)
        times = {}
        order = [("plain", gen_plain), ("monitored", gen_mon)] + ([("names", gen_names)] if gen_names else [])
        order = order[k % len(order):] + order[:k % len(order)]
        for name, g in order:
            spec = g.specs([ctx], s)[0][0]
            # token healing: the row starts where the healed prompt ends (ctx.continued(owed)),
            # so it re-writes what the prompt gave back (the line break and the indentation)
            body = (ctx.before + ctx.reference)[len(spec.context.before):]
            ref = tok(body, add_special_tokens=False)["input_ids"]
            t0 = time.perf_counter()
            out = replay_row(g.engine, spec, ref, s)
            times[name] = time.perf_counter() - t0
            if name == "names":
                names_triggers += len(out.triggers)
                names_failed += sum(t.failed_open for t in out.triggers)
            if name == "monitored":
                triggers += len(out.triggers)
                failed += sum(t.failed_open for t in out.triggers)
                hits += sum(t.cache_hit for t in out.triggers)
                analysis_ms += sum(t.analysis_ms for t in out.triggers)
        t_plain += times["plain"]
        t_mon += times["monitored"]
        t_names += times.get("names", 0.0)
        n_tokens += len(ref)
        rows.append({"function": ctx.scope, "tokens": len(ref), "plain_s": round(times["plain"], 4),
                     "monitored_s": round(times["monitored"], 4)}
                    | ({"names_s": round(times["names"], 4)} if "names" in times else {}))
    rest = rows[1:] or rows
    after_first = 100 * (sum(r["monitored_s"] for r in rest) / sum(r["plain_s"] for r in rest) - 1)
    names = None
    if gen_names:
        names = {"monitored_s": round(t_names, 3), "slowdown_pct": round(100 * (t_names / t_plain - 1), 2),
                 "slowdown_after_first_pct": round(
                     100 * (sum(r["names_s"] for r in rest) / sum(r["plain_s"] for r in rest) - 1), 2),
                 "over_members_pct": round(100 * (t_names / t_mon - 1), 2),
                 "triggers": names_triggers, "failed_open": names_failed}
    return {"functions": len(contexts), "tokens": n_tokens, "plain_s": round(t_plain, 3), "names": names,
            "slowdown_after_first_pct": round(after_first, 2),
            "monitored_s": round(t_mon, 3), "slowdown_pct": round(100 * (t_mon / t_plain - 1), 2),
            "plain_tok_per_s": round(n_tokens / t_plain, 1), "triggers": triggers,
            "failed_open": failed, "cache_hits": hits, "analysis_ms_total": round(analysis_ms, 1),
            "per_function": rows}


SHAPES = {   # hidden, intermediate, layers, heads, kv heads (Llama layouts)
    "tiny": (64, 128, 4, 4, 2),
    "1.7b": (2048, 8192, 24, 32, 32),       # SmolLM2-1.7B
    "6b": (4096, 11008, 30, 32, 32),        # a 6B-parameter Llama
}


def random_model(shape: str, tokenizer_dir: str | None, device: str | None, dtype: str | None):
    """A LoadedModel of random weights in a registry tokenizer (nothing read but the tokenizer)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from groundcode.models.load import LoadedModel, pick_device, pick_dtype
    from groundcode.models.registry import detect_template
    if tokenizer_dir is None:
        from groundcode.models.load import resolve_model
        tokenizer_dir = str(resolve_model(None)[1])
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    h, inter, n, heads, kvh = SHAPES[shape]
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=h, intermediate_size=inter, num_hidden_layers=n,
                      num_attention_heads=heads, num_key_value_heads=kvh, max_position_embeddings=8192,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dt)
    try:
        with torch.device(dev):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    model.eval()
    return LoadedModel(model=model, tokenizer=tok, name=f"random-{shape} ({Path(tokenizer_dir).name} tokenizer)",
                       device=dev, dtype=str(dt).replace("torch.", ""), template=detect_template(tok, 8192))


def _sync() -> None:
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def decode_speed(lm, root: Path, n: int, prompt_tokens: int, reps: int, replay_tokens: int = 1000,
                 lite: bool = False) -> dict:
    """(a): the engine's plain decoding against transformers.generate, and its step times over a
    teacher-forced replay of a real file (after a prompt from it).

    Every run starts from a prompt length no run before it had ("cold": the cache lengths are new
    to the process, as a user's are), except the "warm" runs, which repeat a length: on a GPU,
    PyTorch's cuDNN attention builds a graph per new length (attention.py), so both are given,
    and each side once more with the other's kernel choice (the engine with cuDNN allowed,
    transformers.generate without it)."""
    import torch

    from groundcode.config import SamplingConfig
    from groundcode.decoding import attention
    from groundcode.decoding.engine import Engine, RowSpec
    from groundcode.decoding.replay import Teacher
    from groundcode.decoding.vocab.index import VocabIndex
    tok, model = lm.tokenizer, lm.model
    text = max((f.read_text(encoding="utf-8") for f in sorted(root.rglob("*.py"))), key=len)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    eng = Engine(model, tok, VocabIndex.for_tokenizer(tok))
    eng.eos = set()                     # n tokens in both: generate's min_new_tokens does the same
    dev = eng.device
    fresh = iter(range(prompt_tokens, 0, -1))      # a new prompt length for every cold run

    def hf(p: list[int], k: int, no_cudnn: bool = False) -> float:
        x = torch.tensor([p], device=dev)
        _sync()
        t0 = time.perf_counter()
        with torch.inference_mode(), (attention.kernels(dev) if no_cudnn else _null()):
            out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=k, min_new_tokens=k,
                                 do_sample=False, pad_token_id=tok.pad_token_id)
        _sync()
        assert out.shape[1] == len(p) + k
        return time.perf_counter() - t0

    def ours(p: list[int], k: int, choose=None) -> tuple[float, list[float]]:
        stamps = []

        def on(ev):
            if ev.kind == "token":
                stamps.append(time.perf_counter())
        _sync()
        t0 = time.perf_counter()
        out = eng.generate([RowSpec(p, id=0, choose=choose)], SamplingConfig(max_new_tokens=k), on_event=on)[0]
        _sync()
        assert len(out.tokens) == k, (len(out.tokens), out.finish_reason)
        return time.perf_counter() - t0, [b - a for a, b in zip(stamps, stamps[1:])]

    def cudnn_allowed(fn):
        os.environ["GROUNDCODE_CUDNN_ATTENTION"] = "1"
        try:
            return fn()
        finally:
            os.environ.pop("GROUNDCODE_CUDNN_ATTENTION", None)

    hf(ids[:16], 8), ours(ids[:16], 8)             # warm: CUDA context, allocator, numba
    runs = {k: [] for k in ("hf_cold", "engine_cold", "hf_warm", "engine_warm",
                            "hf_cold_without_cudnn", "engine_cold_with_cudnn")}
    engine_steps = {"engine_cold": [], "engine_warm": []}     # step-time summary of each engine run

    def timed_ours(key: str, p: list[int]) -> float:
        t, steps = ours(p, n)
        ms = sorted(1000 * d for d in steps)
        engine_steps[key].append({"p50": round(statistics.median(ms), 2), "mean": round(statistics.mean(ms), 2),
                                  "p99": round(_pct(ms, 0.99), 2), "max": round(ms[-1], 2),
                                  "over_40ms": sum(d > 40 for d in ms)})
        return t
    for rep in range(reps):
        ph, po = ids[:next(fresh)], ids[:next(fresh)]
        for name in (("hf", "ours") if rep % 2 == 0 else ("ours", "hf")):
            if name == "hf":
                if not lite:
                    runs["hf_cold"].append(hf(ph, n))
            else:
                runs["engine_cold"].append(timed_ours("engine_cold", po))
        runs["hf_warm"].append(hf(ph, n))             # the same lengths again
        runs["engine_warm"].append(timed_ours("engine_warm", po))
        if not lite:
            runs["hf_cold_without_cudnn"].append(hf(ids[:next(fresh)], n, no_cudnn=True))
            runs["engine_cold_with_cudnn"].append(cudnn_allowed(lambda: ours(ids[:next(fresh)], n)[0]))
    runs = {k: v for k, v in runs.items() if v}
    tps = {k: round(n / statistics.median(v), 1) for k, v in runs.items()}
    tps.setdefault("hf_cold", float("nan"))
    p = ids[:next(fresh)]
    ref = ids[len(p):len(p) + replay_tokens]
    t_replay, steps = ours(p, len(ref), Teacher(ref))
    steps_ms = [1000 * d for d in steps]
    p50, p99 = statistics.median(steps_ms), _pct(steps_ms, 0.99)
    return {"tokens": n, "prompt_tokens": f"{len(p)}-{prompt_tokens} (a new length every cold run)", "reps": reps,
            "runs_s": {k: [round(t, 3) for t in v] for k, v in runs.items()}, "tok_per_s": tps,
            "engine_step_ms": engine_steps,
            "hf_tok_per_s": tps["hf_warm"], "engine_tok_per_s": tps["engine_cold"],
            "engine_vs_hf": round(tps["engine_cold"] / tps["hf_warm"], 3),
            "engine_vs_hf_both_cold": round(tps["engine_cold"] / tps["hf_cold"], 3),
            "engine_vs_hf_both_warm": round(tps["engine_warm"] / tps["hf_warm"], 3),
            "replay_tokens": len(ref), "replay_s": round(t_replay, 3),
            "step_ms_p50": round(p50, 2), "step_ms_p99": round(p99, 2), "step_ms_max": round(max(steps_ms), 2),
            "p99_over_p50": round(p99 / p50, 2),
            "slowest_steps": sorted(((round(d, 1), i + 1) for i, d in enumerate(steps_ms)), reverse=True)[:8]}


def free_steps_by_language(args, lm, gen_mon, contexts) -> None:
    """(b) for Python (the package's functions) and TypeScript (the recipe's bodies), one run."""
    ts = ts_contexts(args.ts_tasks, args.functions)
    res = {"python": free_step_overhead(gen_mon, contexts), "typescript": free_step_overhead(gen_mon, ts)}
    gen_mon.close()
    result = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "loadavg_end": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version()},
              "model": lm.name, "python_package": args.package, "typescript_tasks": args.ts_tasks,
              "functions": {"python": len(contexts), "typescript": len(ts)}, "free_step": res}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    t = Table(title=f"free-step guide cost by language · {lm.name} (tokenizer) · CPU")
    for col in ("language", "functions", "free steps", "p50 µs", "mean µs", "p99 µs", "other steps", "target p50"):
        t.add_column(col)
    for lang, b in res.items():
        t.add_row(lang, str(result["functions"][lang]), str(b["free_steps"]), str(b["free_us_p50"]),
                  str(b["free_us_mean"]), str(b["free_us_p99"]), str(b["other_steps"]), "≤ 20")
    console.print(t)
    console.print(f"→ {args.out}")


def _null():
    import contextlib
    return contextlib.nullcontext()


def _profile(fn) -> str:
    """torch.profiler's table (host self time first) of one call of fn."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if __import__("torch").cuda.is_available() else [])
    with profile(activities=acts) as prof:
        fn()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="HF id or path (default: the shipped model)")
    ap.add_argument("--package", default="click==8.1.7")
    ap.add_argument("--functions", type=int, default=40)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--max-prompt-tokens", type=int, default=1024, help="prompt cap (0: the model's window)")
    ap.add_argument("--dtype", default="auto", help="auto (the serving dtype here), float32 or bfloat16")
    ap.add_argument("--random", choices=sorted(SHAPES), help="random weights of this shape (no model files)")
    ap.add_argument("--tokenizer", default=None, help="--random's tokenizer directory (default: smollm2-135m's)")
    ap.add_argument("--device", default=None, help="cpu, cuda (default: cuda where there is one)")
    ap.add_argument("--decode-tokens", type=int, default=None,
                    help="(a)'s tokens per run (default 500 on CUDA, 0 = skip, elsewhere); its replay: 1,000")
    ap.add_argument("--decode-reps", type=int, default=1)
    ap.add_argument("--ts-tasks", default=None,
                    help="free step only, for both languages in one run: Python's (--package) and "
                         "TypeScript's bodies from this tasks.jsonl (the typescript recipe)")
    ap.add_argument("--decode-only", action="store_true",
                    help="(a) only, without transformers.generate's cold runs and the cuDNN ones")
    ap.add_argument("--names", action="store_true",
                    help="(c) also replays with the names monitor on (MonitorConfig.names)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "engine_overhead.json"))
    args = ap.parse_args()
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
    from groundcode.api import Generator, function_context
    from groundcode.config import MonitorConfig, PromptConfig
    from groundcode.models.load import load_model, serving_dtype
    root = fetch_package(args.package)
    # random weights take the loader's default (float32 on a CPU, bfloat16 on CUDA) unless --dtype says
    dtype = None if args.random and args.dtype in (None, "auto") else serving_dtype(args.dtype, args.device, args.model)
    lm = random_model(args.random, args.tokenizer, args.device, dtype) if args.random \
        else load_model(args.model, device=args.device, dtype=dtype)
    n_decode = args.decode_tokens if args.decode_tokens is not None else \
        (500 if str(lm.device).startswith("cuda") else 0)
    try:
        a = decode_speed(lm, root, n_decode, 1024, args.decode_reps, lite=args.decode_only) if n_decode else None
    except Exception:                      # (b) and (c) still run; the failure is printed
        import traceback
        traceback.print_exc()
        a = None
    if a:
        console.print(a)
    if args.decode_only:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"model": lm.name, "dtype": dtype, "decode": a}, indent=1))
        return
    prompt = PromptConfig(max_prompt_tokens=args.max_prompt_tokens)
    gen_plain = Generator(lm, MonitorConfig(enabled=False), prompt=prompt)
    gen_mon = Generator(lm, MonitorConfig(enabled=True), prompt=prompt)
    funcs = pick_functions(root, args.functions)
    contexts = []
    for f, q in funcs:
        contexts.append(function_context(f, q, repo=root))
    console.print(f"{len(contexts)} functions from {args.package} · model {lm.name}")
    if args.ts_tasks:
        return free_steps_by_language(args, lm, gen_mon, contexts)
    b = free_step_overhead(gen_mon, contexts)
    gen_mon.close()
    gen_mon = Generator(lm, MonitorConfig(enabled=True), prompt=prompt)   # fresh analyzer: cold caches again
    gen_names = Generator(lm, MonitorConfig(enabled=True, names=True), prompt=prompt) if args.names else None
    c = replay(gen_plain, gen_mon, contexts, gen_names)
    gen_mon.close()
    if gen_names:
        gen_names.close()
    gpu = torch.cuda.get_device_name() if str(lm.device).startswith("cuda") else None
    result = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "gpu": gpu,
                          "transformers": __import__("transformers").__version__,
                          "loadavg_end": [round(x, 2) for x in os.getloadavg()],
                          "python": platform.python_version(), "torch": torch.__version__,
                          "torch_threads": torch.get_num_threads()},
              "package": args.package, "model": lm.name, "dtype": dtype or "float32",
              "max_prompt_tokens": args.max_prompt_tokens,
              "replayed_against": "the healed prompt (ctx.continued(owed))", "decode": a, "free_step": b, "replay": c}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    t = Table(title=f"monitor overhead · {lm.name} · {gpu or 'CPU'}")
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_column("target", justify="right")
    if a:
        q = a["tok_per_s"]
        t.add_row(f"(a) plain decoding tok/s, new lengths: engine / transformers.generate ({a['tokens']} tokens)",
                  f"{q['engine_cold']} / {q['hf_cold']} ({a['engine_vs_hf_both_cold']}×)", "")
        t.add_row("(a) … lengths seen before: engine / transformers.generate",
                  f"{q['engine_warm']} / {q['hf_warm']} ({a['engine_vs_hf_both_warm']}×)", "")
        t.add_row("(a) engine on new lengths / transformers.generate on seen ones",
                  f"{a['engine_vs_hf']}×", "≥ 0.9×")
        t.add_row("(a) new lengths: engine with cuDNN attention / generate without",
                  f"{q['engine_cold_with_cudnn']} / {q['hf_cold_without_cudnn']}", "")
        t.add_row(f"(a) replay step ms p50 / p99 / max ({a['replay_tokens']} tokens)",
                  f"{a['step_ms_p50']} / {a['step_ms_p99']} / {a['step_ms_max']} ({a['p99_over_p50']}×)", "p99 ≤ 2× p50")
    t.add_row("free step: guide cost p50 / mean / p99 (µs)",
              f"{b['free_us_p50']} / {b['free_us_mean']} / {b['free_us_p99']}", "≤ 5")
    t.add_row("free steps / other steps", f"{b['free_steps']} / {b['other_steps']}", "")
    t.add_row("replay tokens (functions)", f"{c['tokens']} ({c['functions']})", "")
    t.add_row("plain s (tok/s)", f"{c['plain_s']} ({c['plain_tok_per_s']})", "")
    t.add_row("monitored s", f"{c['monitored_s']}", "")
    t.add_row("end-to-end slowdown (after the first function)",
              f"{c['slowdown_pct']}% ({c['slowdown_after_first_pct']}%)", "≤ 10%")
    if c["names"]:
        n = c["names"]
        t.add_row("names monitor on: s · slowdown (after the first) · over members alone",
                  f"{n['monitored_s']} · {n['slowdown_pct']}% ({n['slowdown_after_first_pct']}%) · "
                  f"{n['over_members_pct']}%", "≤ +10% over members")
        t.add_row("names monitor on: triggers / failed open", f"{n['triggers']} / {n['failed_open']}", "")
    t.add_row("triggers / failed open / cache hits",
              f"{c['triggers']} / {c['failed_open']} / {c['cache_hits']}", "")
    t.add_row("analysis ms total", f"{c['analysis_ms_total']}", "")
    console.print(t)


if __name__ == "__main__":
    main()
