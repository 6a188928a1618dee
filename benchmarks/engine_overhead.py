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

    .venv/bin/python benchmarks/engine_overhead.py [--model ID|PATH] [--package click==8.1.7]
                                                    [--functions 40] [--max-prompt-tokens 1024]

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


def free_step_overhead(gen, contexts) -> dict:
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.body_end import BodyEnd
    from groundcode.decoding.guides.dereference import WAIT, DereferenceMonitor
    tok = gen.lm.tokenizer
    vocab = gen.vocab
    free, busy = [], []
    perf = time.perf_counter_ns
    for ctx in contexts:
        ids = tok(ctx.reference[len(ctx.lead):], add_special_tokens=False)["input_ids"]
        ctx = ctx.continued("")            # the rows start after the body's indentation
        guides = [BodyEnd(ctx.stop_indent), DereferenceMonitor(gen.analyzer_for(ctx))]
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


def replay(gen_plain, gen_mon, contexts) -> dict:
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
    for k, ctx in enumerate(contexts):
        s = SamplingConfig(max_new_tokens=256)
        times = {}
        order = [("plain", gen_plain), ("monitored", gen_mon)]
        if k % 2:
            order.reverse()
        for name, g in order:
            spec = g.specs([ctx], s)[0][0]
            # token healing: the row starts where the healed prompt ends (ctx.continued(owed)),
            # so it re-writes what the prompt gave back (the line break and the indentation)
            body = (ctx.before + ctx.reference)[len(spec.context.before):]
            ref = tok(body, add_special_tokens=False)["input_ids"]
            t0 = time.perf_counter()
            out = replay_row(g.engine, spec, ref, s)
            times[name] = time.perf_counter() - t0
            if name == "monitored":
                triggers += len(out.triggers)
                failed += sum(t.failed_open for t in out.triggers)
                hits += sum(t.cache_hit for t in out.triggers)
                analysis_ms += sum(t.analysis_ms for t in out.triggers)
        t_plain += times["plain"]
        t_mon += times["monitored"]
        n_tokens += len(ref)
        rows.append({"function": ctx.scope, "tokens": len(ref), "plain_s": round(times["plain"], 4),
                     "monitored_s": round(times["monitored"], 4)})
    return {"functions": len(contexts), "tokens": n_tokens, "plain_s": round(t_plain, 3),
            "monitored_s": round(t_mon, 3), "slowdown_pct": round(100 * (t_mon / t_plain - 1), 2),
            "plain_tok_per_s": round(n_tokens / t_plain, 1), "triggers": triggers,
            "failed_open": failed, "cache_hits": hits, "analysis_ms_total": round(analysis_ms, 1),
            "per_function": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="HF id or path (default: the shipped model)")
    ap.add_argument("--package", default="click==8.1.7")
    ap.add_argument("--functions", type=int, default=40)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--max-prompt-tokens", type=int, default=1024, help="prompt cap (0: the model's window)")
    ap.add_argument("--dtype", default="auto", help="auto (the serving dtype here), float32 or bfloat16")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "engine_overhead.json"))
    args = ap.parse_args()
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
    from groundcode.api import Generator, function_context
    from groundcode.config import MonitorConfig, PromptConfig
    from groundcode.models.load import load_model, serving_dtype
    root = fetch_package(args.package)
    dtype = serving_dtype(args.dtype, None)
    lm = load_model(args.model, dtype=dtype)
    prompt = PromptConfig(max_prompt_tokens=args.max_prompt_tokens)
    gen_plain = Generator(lm, MonitorConfig(enabled=False), prompt=prompt)
    gen_mon = Generator(lm, MonitorConfig(enabled=True), prompt=prompt)
    funcs = pick_functions(root, args.functions)
    contexts = []
    for f, q in funcs:
        contexts.append(function_context(f, q, repo=root))
    console.print(f"{len(contexts)} functions from {args.package} · model {lm.name}")
    b = free_step_overhead(gen_mon, contexts)
    gen_mon.close()
    gen_mon = Generator(lm, MonitorConfig(enabled=True), prompt=prompt)   # fresh analyzer: cold caches again
    c = replay(gen_plain, gen_mon, contexts)
    gen_mon.close()
    result = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "loadavg_end": [round(x, 2) for x in os.getloadavg()],
                          "python": platform.python_version(), "torch": torch.__version__,
                          "torch_threads": torch.get_num_threads()},
              "package": args.package, "model": lm.name, "dtype": dtype or "float32",
              "max_prompt_tokens": args.max_prompt_tokens,
              "replayed_against": "the healed prompt (ctx.continued(owed))", "free_step": b, "replay": c}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    t = Table(title="monitor overhead")
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_column("target", justify="right")
    t.add_row("free step: guide cost p50 / mean / p99 (µs)",
              f"{b['free_us_p50']} / {b['free_us_mean']} / {b['free_us_p99']}", "≤ 5")
    t.add_row("free steps / other steps", f"{b['free_steps']} / {b['other_steps']}", "")
    t.add_row("replay tokens (functions)", f"{c['tokens']} ({c['functions']})", "")
    t.add_row("plain s (tok/s)", f"{c['plain_s']} ({c['plain_tok_per_s']})", "")
    t.add_row("monitored s", f"{c['monitored_s']}", "")
    t.add_row("end-to-end slowdown", f"{c['slowdown_pct']}%", "≤ 10%")
    t.add_row("triggers / failed open / cache hits",
              f"{c['triggers']} / {c['failed_open']} / {c['cache_hits']}", "")
    t.add_row("analysis ms total", f"{c['analysis_ms_total']}", "")
    console.print(t)


if __name__ == "__main__":
    main()
