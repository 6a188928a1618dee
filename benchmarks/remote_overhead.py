"""What the remote model back end costs (issue 19, item 1): the same grounded completions through
the local engine and through `--model http://…/v1`, the same model behind both.

Contexts: every `self.` of the shop fixture (tests/fixtures/shop), the cursor right after the dot
(a trigger before the first token), completed to the end of the line, greedy. The remote side is
a `groundcode serve --model MODEL` subprocess on 127.0.0.1 started here (grounding off there),
or any OpenAI-compatible server given with --url (llama-cpp-python: recipes/llama_cpp_server.sh).
Each side runs every context once to warm its analyzer (not counted), then once measured, one
completion at a time: seconds per completion, requests per completion, tokens, triggers, and how
many completions are identical on both sides.

    .venv/bin/python benchmarks/remote_overhead.py [--model tiny] [--url http://HOST:PORT/v1
                                                    --tokenizer NAME] [--out FILE]

Prints a table and writes benchmarks/results/remote_overhead.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHOP = ROOT / "tests" / "fixtures" / "shop"
console = Console()


def contexts():
    from groundcode.api import cursor_context
    out = []
    for f in sorted(SHOP.rglob("*.py")):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            for m in re.finditer(r"\bself\.", line):
                out.append((f"{f.relative_to(SHOP)}:{i}:{m.end()}",
                            cursor_context(f, i, m.end(), SHOP)))
    return out


def serve(model: str) -> tuple[subprocess.Popen, str]:
    import httpx
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "groundcode", "serve", "--model", model,
                             "--port", str(port), "--max-concurrency", "4", "--deadline", "300"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    end = time.time() + 180
    while time.time() < end:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url + "/v1"
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("groundcode serve did not start")


def run(gen, ctxs, sampling) -> list[dict]:
    gen.run([c for _, c in ctxs], sampling)             # warm: analyzers, caches, the server
    rows = []
    for name, ctx in ctxs:
        t = time.perf_counter()
        g = gen.run([ctx], sampling)[0][0]
        rows.append({"site": name, "seconds": time.perf_counter() - t, "text": g.completion,
                     "tokens": g.tokens, "triggers": len(g.triggers),
                     "constrained": sum(bool(x.constrained) for x in g.triggers),
                     "requests": g.remote_requests})
    return rows


def summary(rows: list[dict]) -> dict:
    n = len(rows)
    out = {"completions": n, "seconds_per_completion": round(statistics.mean(r["seconds"] for r in rows), 4),
           "median_seconds": round(statistics.median(r["seconds"] for r in rows), 4),
           "tokens_per_completion": round(sum(r["tokens"] for r in rows) / n, 2),
           "triggers_per_completion": round(sum(r["triggers"] for r in rows) / n, 2)}
    if rows[0]["requests"] is not None:
        out["requests_per_completion"] = round(sum(r["requests"] for r in rows) / n, 2)
        toks = sum(r["tokens"] for r in rows)
        out["requests_per_token"] = round(sum(r["requests"] for r in rows) / max(1, toks), 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny", help="the local model (and the served one, without --url)")
    ap.add_argument("--url", default=None, help="an OpenAI-compatible server already running")
    ap.add_argument("--tokenizer", default=None, help="the served model's tokenizer (default: --model)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--no-local", action="store_true", help="measure the remote side only")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "remote_overhead.json"))
    a = ap.parse_args()
    from groundcode.api import Generator
    from groundcode.config import SamplingConfig
    ctxs = contexts()
    sampling = SamplingConfig(max_new_tokens=a.max_new_tokens, stop="line")
    proc, url = (None, a.url) if a.url else serve(a.model)
    try:
        with Generator(url, tokenizer=a.tokenizer or a.model) as far:
            remote = run(far, ctxs, sampling)
            served = far.lm.name
            constraint = far.engine.constraint
            prompt_mode = far.engine.prompt_mode
            ignored = far.engine.ignored
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    local = None
    if not a.no_local:
        with Generator(a.model) as near:
            local = run(near, ctxs, sampling)
    res = {"model": a.model, "server": "groundcode serve" if proc is not None else a.url,
           "served": served, "constraint": constraint, "prompt_mode": prompt_mode,
           "constraint_ignored": ignored, "max_new_tokens": a.max_new_tokens, "stop": "line",
           "contexts": len(ctxs), "remote": summary(remote),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_1m": round(os.getloadavg()[0], 2)},
           "sites": [{"site": r["site"], "remote_text": r["text"], "requests": r["requests"],
                      "remote_s": round(r["seconds"], 4)} for r in remote]}
    if local is not None:
        res["local"] = summary(local)
        res["identical_text"] = sum(x["text"] == y["text"] for x, y in zip(local, remote))
        res["overhead_x"] = round(res["remote"]["seconds_per_completion"]
                                  / res["local"]["seconds_per_completion"], 2)
        for s, r in zip(res["sites"], local):
            s["local_text"], s["local_s"] = r["text"], round(r["seconds"], 4)
    t = Table(title=f"remote back end vs local engine · {a.model} · {len(ctxs)} completions")
    for col in ("side", "s / completion", "median s", "tokens", "triggers", "requests / completion"):
        t.add_column(col)
    for side in ("local", "remote"):
        if side in res:
            s = res[side]
            t.add_row(side, f"{s['seconds_per_completion']:.3f}", f"{s['median_seconds']:.3f}",
                      f"{s['tokens_per_completion']:.1f}", f"{s['triggers_per_completion']:.2f}",
                      str(s.get("requests_per_completion", "-")))
    console.print(t)
    if local is not None:
        console.print(f"identical text: {res['identical_text']}/{len(ctxs)}; overhead {res['overhead_x']}x")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    console.print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
