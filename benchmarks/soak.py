"""Soak test of `groundcode serve` (issue 28): many concurrent clients for minutes, with random
cancels, bad bodies and disconnects, against a server on 127.0.0.1 only. Bounded in time and in
requests; it stops by itself and stops the server.

    .venv/bin/python benchmarks/soak.py [--model tiny|smollm2-135m] [--clients 64]
        [--seconds 600] [--max-requests 200000] [--deadline 10] [--out benchmarks/results/soak_MODEL.json]

What each client does, in a loop, chosen at random per request (seeded):
  ok          a structured, OpenAI or /infill request (streamed or not) that should succeed
  cancel      a streamed request closed after a random 0-300 ms
  disconnect  a plain request whose client gives up after 50-300 ms
  bad         a malformed body: broken JSON, an unknown field, max_tokens 10^9, a seed of 2^80,
              a path outside the workspace, a binary buffer
Every request has a client-side limit of the server's deadline + 5 s: a request still open then
is counted as *hung* (goal 0). A client answered 429 waits as `Retry-After` (1 s) says, with
jitter (0.5-1 s), as the editor clients do. Reported: requests by outcome and status, 5xx other than 503
(goal 0), hung requests, p50/p95 latency of answered requests, the server's resident memory and
its worker processes at start and end (goal: flat). Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _serve import free_port, stop, wait_ready

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "shop"
EDIT = "\n    def total(self): return self."


def _tree(pid: int) -> tuple[int, int]:
    """(resident bytes of the server and its children, number of child processes)."""
    import psutil
    p = psutil.Process(pid)
    kids = p.children(recursive=True)
    rss = p.memory_info().rss
    for k in kids:
        try:
            rss += k.memory_info().rss
        except psutil.Error:
            pass
    return rss, len(kids)


def _bodies(ws: Path):
    text = (ws / "shop" / "cart.py").read_text() + EDIT
    lines = text.splitlines()
    code = {"path": "shop/cart.py", "text": text, "line": len(lines), "column": len(lines[-1]),
            "max_tokens": 12}
    openai = {"prompt": "def add(a, b):\n    return", "max_tokens": 12, "temperature": 0.0}
    grounded = {"prompt": text, "max_tokens": 12, "groundcode": {"path": "shop/cart.py"}}
    infill = {"input_prefix": "def f(x):\n", "prompt": "    return ", "input_suffix": "\n", "n_predict": 12}
    ok = [("/v1/code/completions", code), ("/v1/completions", openai), ("/v1/completions", grounded),
          ("/infill", infill)]
    bad = [("/v1/completions", b"{not json"), ("/v1/completions", {"prompt": "x", "bogus": 1}),
           ("/v1/completions", {"prompt": "x", "max_tokens": 10 ** 9}),
           ("/v1/completions", {"prompt": "x", "seed": 2 ** 80}),
           ("/v1/code/completions", {"path": "../../etc/passwd", "line": 1, "column": 0}),
           ("/v1/code/completions", dict(code, text="\x00\x01binary"))]
    return ok, bad


async def _client(k: int, base: str, args, ok, bad, stop_at: float, budget: list, out: list):
    import httpx
    rng = random.Random(args.seed * 1000 + k)
    limit = args.deadline + 5.0
    async with httpx.AsyncClient(base_url=base, timeout=limit) as c:
        while time.monotonic() < stop_at and budget[0] > 0:
            budget[0] -= 1
            kind = rng.choices(["ok", "cancel", "disconnect", "bad"], weights=[6, 1, 1, 2])[0]
            t0 = time.perf_counter()
            rec = {"kind": kind}
            try:
                if kind == "bad":
                    path, body = rng.choice(bad)
                    if isinstance(body, bytes):
                        r = await c.post(path, content=body, headers={"Content-Type": "application/json"})
                    else:
                        r = await c.post(path, json=body)
                    rec["status"] = r.status_code
                elif kind == "cancel":
                    path, body = rng.choice(ok)
                    async with c.stream("POST", path, json=dict(body, stream=True)) as r:
                        rec["status"] = r.status_code
                        await asyncio.sleep(rng.uniform(0, 0.3))
                elif kind == "disconnect":
                    path, body = rng.choice(ok)
                    try:
                        r = await c.post(path, json=body, timeout=rng.uniform(0.05, 0.3))
                        rec["status"] = r.status_code
                    except httpx.TimeoutException:
                        rec["status"] = "gave up"
                else:
                    path, body = rng.choice(ok)
                    if rng.random() < 0.3:
                        async with c.stream("POST", path, json=dict(body, stream=True)) as r:
                            rec["status"] = r.status_code
                            async for _ in r.aiter_lines():
                                pass
                    else:
                        r = await c.post(path, json=body)
                        rec["status"] = r.status_code
            except httpx.TimeoutException:
                rec["status"] = "hung"
            except httpx.HTTPError as exc:
                rec["status"] = f"transport: {type(exc).__name__}"
            rec["s"] = time.perf_counter() - t0
            out.append(rec)
            if rec["status"] == 429:          # a polite client: it waits as Retry-After says
                await asyncio.sleep(rng.uniform(0.5, 1.0))


async def _soak(base: str, args, ws: Path) -> list:
    ok, bad = _bodies(ws)
    stop_at = time.monotonic() + args.seconds
    budget = [args.max_requests]
    out: list = []
    await asyncio.gather(*(_client(k, base, args, ok, bad, stop_at, budget, out) for k in range(args.clients)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--max-requests", type=int, default=200_000)
    ap.add_argument("--deadline", type=float, default=10.0)
    ap.add_argument("--max-concurrency", type=int, default=2)
    ap.add_argument("--queue", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import httpx
    tmp = Path(tempfile.mkdtemp(prefix="gc-soak-"))
    ws = tmp / "shop"
    shutil.copytree(FIXTURE, ws)
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "groundcode", "serve", "--model", args.model, "--workspace", str(ws),
           "--host", "127.0.0.1", "--port", str(port), "--deadline", str(args.deadline),
           "--max-concurrency", str(args.max_concurrency), "--queue", str(args.queue)]
    log = open(tmp / "serve.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, base, tmp / "serve.log")
        # one request of each kind first: the model and the analyzer warm, then the baseline
        ok, _ = _bodies(ws)
        for path, body in ok:
            httpx.post(base + path, json=body, timeout=120)
        rss0, kids0 = _tree(proc.pid)
        t0 = time.time()
        load0 = os.getloadavg()[0]
        recs = asyncio.run(_soak(base, args, ws))
        took = time.time() - t0
        time.sleep(2)                         # let the last cancels reach the session
        health = httpx.get(base + "/health", timeout=10).json()
        after = httpx.post(base + "/v1/code/completions", json=ok[0][1], timeout=60)
        rss1, kids1 = _tree(proc.pid)
    finally:
        stop(proc)
        log.close()
    by = Counter((r["kind"], str(r["status"])) for r in recs)
    statuses = Counter(str(r["status"]) for r in recs)
    five = sum(v for k, v in statuses.items() if k.isdigit() and int(k) >= 500 and k != "503")
    hung = statuses.get("hung", 0)
    lat = sorted(r["s"] for r in recs if r["kind"] == "ok" and r["status"] == 200)
    res = {
        "model": args.model, "clients": args.clients, "seconds": round(took, 1),
        "requests": len(recs), "deadline_s": args.deadline, "max_concurrency": args.max_concurrency,
        "queue": args.queue, "load_avg_start": round(load0, 2), "load_avg_end": round(os.getloadavg()[0], 2),
        "by_kind_and_status": {f"{k} {s}": v for (k, s), v in sorted(by.items())},
        "statuses": dict(sorted(statuses.items())),
        "unexpected_5xx": five, "hung": hung,
        "ok_latency_s": {"n": len(lat), "p50": round(statistics.median(lat), 3) if lat else None,
                         "p95": round(lat[int(0.95 * (len(lat) - 1))], 3) if lat else None},
        "rss_mb": {"start": rss0 >> 20, "end": rss1 >> 20}, "worker_processes": {"start": kids0, "end": kids1},
        "server_after": {"status": health.get("status"), "active": health.get("active"),
                         "queued": health.get("queued"), "next_request": after.status_code},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
    }
    print(f"soak: {args.model}, {args.clients} clients, {res['seconds']} s, {len(recs)} requests")
    print(f"{'outcome':<28}{'count':>8}")
    for k, v in res["by_kind_and_status"].items():
        print(f"{k:<28}{v:>8}")
    print(f"unexpected 5xx {five} (goal 0) · hung {hung} (goal 0) · ok p50 {res['ok_latency_s']['p50']} s "
          f"p95 {res['ok_latency_s']['p95']} s · RSS {rss0 >> 20} → {rss1 >> 20} MB · workers {kids0} → {kids1} "
          f"· after: {res['server_after']}")
    out = Path(args.out or ROOT / "benchmarks" / "results" / f"soak_{Path(args.model).name}.json")
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"-> {out}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
