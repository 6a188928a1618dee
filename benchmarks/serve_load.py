"""Load on `groundcode serve`, bounded and on loopback only: starts the server as a subprocess on
127.0.0.1, then runs 1, 4 and 16 concurrent clients, each for a fixed time, over a mix of the
three completion endpoints (the structured one on an unsaved buffer of the shop fixture, llama.cpp
/infill, OpenAI /v1/completions). Per level: p50/p95 latency of answered requests, throughput,
status counts (the goal: nothing but 200 and 429), the 429 share, tokens per second. Around the
run: the server's RSS and its worker processes (the analyzers') before and after, and whether
any of them outlives the server (a leak). Writes one JSON with the machine and load average.

    .venv/bin/python benchmarks/serve_load.py [--model NAME] [--seconds 60] [--levels 1,4,16]
    .venv/bin/python benchmarks/serve_load.py --model tiny --quick     # smoke run, ~1 minute

Stops by itself: every level ends after --seconds (a request in flight then gets at most the
server's --deadline plus 10 s), at most --max-requests per level. Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _serve import free_port, stop, wait_ready

ROOT = Path(__file__).resolve().parents[1]
EDIT = "\n    def total(self): return self."


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return round(xs[k], 1)


def _machine() -> dict:
    cpu = ""
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu": cpu,
            "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity") else None, "commit": commit}


def _requests(ws: Path, max_tokens: int) -> list[tuple[str, dict]]:
    text = (ws / "shop" / "cart.py").read_text() + EDIT
    lines = text.splitlines()
    return [("/v1/code/completions", {"path": "shop/cart.py", "text": text, "line": len(lines),
                                      "column": len(lines[-1]), "max_tokens": max_tokens}),
            ("/infill", {"input_prefix": "import os\n\n\ndef read(path):\n", "prompt": "    ",
                         "input_suffix": "\n", "n_predict": max_tokens, "cache_prompt": True}),
            ("/v1/completions", {"prompt": "def add(a, b):\n    return", "max_tokens": max_tokens,
                                 "temperature": 0})]


def _tokens(path: str, d: dict) -> int:
    if path == "/v1/code/completions":
        return int(d.get("tokens", 0))
    if path == "/infill":
        return int(d.get("tokens_predicted", 0))
    return int((d.get("usage") or {}).get("completion_tokens", 0))


def run_level(base: str, clients: int, seconds: float, reqs, timeout: float, max_requests: int) -> dict:
    import httpx
    lat, statuses, tokens, errors = [], {}, [0], []
    lock = threading.Lock()
    t_end = time.perf_counter() + seconds
    count = [0]

    def client(k: int) -> None:
        with httpx.Client(base_url=base, timeout=timeout) as c:
            i = k
            while time.perf_counter() < t_end:
                with lock:
                    if count[0] >= max_requests:
                        return
                    count[0] += 1
                path, body = reqs[i % len(reqs)]
                i += 1
                t0 = time.perf_counter()
                try:
                    r = c.post(path, json=body)
                    code = r.status_code
                except httpx.HTTPError as exc:
                    code = f"client:{type(exc).__name__}"
                    r = None
                dt = (time.perf_counter() - t0) * 1e3
                with lock:
                    statuses[str(code)] = statuses.get(str(code), 0) + 1
                    if code == 200:
                        lat.append(dt)
                        tokens[0] += _tokens(path, r.json())
                    elif code == 429:
                        time.sleep(0.05)      # a polite client backs off a little
                    elif len(errors) < 5:
                        errors.append(f"{path} {code}: {r.text[:200] if r is not None else ''}")
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + timeout + 5)
    wall = time.perf_counter() - t0
    total = sum(statuses.values())
    ok = statuses.get("200", 0)
    return {"clients": clients, "seconds": round(wall, 2), "requests": total, "ok": ok,
            "statuses": statuses, "share_429": round(statuses.get("429", 0) / total, 3) if total else 0.0,
            "errors_other_than_429": total - ok - statuses.get("429", 0),
            "p50_ms": _pct(lat, 0.5), "p95_ms": _pct(lat, 0.95),
            "throughput_rps": round(ok / wall, 3) if wall else 0.0,
            "tokens_per_s": round(tokens[0] / wall, 2) if wall else 0.0,
            "error_samples": errors}


def _proc_facts(pid: int) -> dict:
    import psutil
    p = psutil.Process(pid)
    kids = p.children(recursive=True)
    rss = p.memory_info().rss
    kid_rss = 0
    for k in kids:
        try:
            kid_rss += k.memory_info().rss
        except psutil.Error:
            pass
    return {"rss_mb": round(rss / 2**20, 1), "workers": len(kids),
            "workers_rss_mb": round(kid_rss / 2**20, 1), "worker_pids": [k.pid for k in kids]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="as for groundcode serve (default: the registry default)")
    ap.add_argument("--seconds", type=float, default=60.0, help="per concurrency level")
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--max-concurrency", type=int, default=2)
    ap.add_argument("--queue", type=int, default=8)
    ap.add_argument("--deadline", type=float, default=30.0)
    ap.add_argument("--max-requests", type=int, default=5000, help="per level")
    ap.add_argument("--quick", action="store_true", help="8 s per level, 8 tokens (a smoke run)")
    ap.add_argument("--note", default="", help="recorded in the JSON (what was run, and why)")
    ap.add_argument("--out", default=None, help="default benchmarks/results/serve_load.json "
                                                "(--quick: serve_load_quick.json)")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.max_tokens = min(args.seconds, 8.0), min(args.max_tokens, 8)
    out = Path(args.out or ROOT / "benchmarks" / "results" /
               ("serve_load_quick.json" if args.quick else "serve_load.json"))
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    import httpx
    import psutil

    tmp = Path(tempfile.mkdtemp(prefix="serve-load-"))
    ws = tmp / "shop"
    shutil.copytree(ROOT / "tests" / "fixtures" / "shop", ws)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "groundcode", "serve", "--workspace", str(ws), "--port", str(port),
           "--max-concurrency", str(args.max_concurrency), "--queue", str(args.queue),
           "--deadline", str(args.deadline)] + (["--model", args.model] if args.model else [])
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    load_before = os.getloadavg()
    t_start = time.perf_counter()
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    result: dict = {"benchmark": "serve_load", "machine": _machine(), "command": cmd[1:],
                    "levels": [], "max_tokens": args.max_tokens, "seconds_per_level": args.seconds,
                    "load_avg_before": [round(x, 2) for x in load_before], "note": args.note}
    try:
        h = wait_ready(proc, base, tmp / "server.log")
        result["startup_s"] = round(time.perf_counter() - t_start, 2)
        result["model"] = h["model"]
        reqs = _requests(ws, args.max_tokens)
        for path, body in reqs:                       # one of each: warm, and a sanity check
            r = httpx.post(base + path, json=body, timeout=args.deadline + 10)
            result.setdefault("warmup_status", {})[path] = r.status_code
        result["server_before"] = _proc_facts(proc.pid)
        for n in levels:
            lv = run_level(base, n, args.seconds, reqs, args.deadline + 10, args.max_requests)
            lv["above_limit"] = n > args.max_concurrency + args.queue
            lv["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
            result["levels"].append(lv)
            print(json.dumps({k: lv[k] for k in ("clients", "requests", "statuses", "p50_ms",
                                                 "p95_ms", "throughput_rps")}), flush=True)
        time.sleep(1.0)
        result["server_after"] = _proc_facts(proc.pid)
        result["health_after"] = httpx.get(base + "/health", timeout=5).json()
    finally:
        stop(proc)
        log.close()
    pids = set(result.get("server_before", {}).get("worker_pids", [])) | \
        set(result.get("server_after", {}).get("worker_pids", []))
    time.sleep(1.0)
    result["leaked_workers_after_exit"] = sorted(p for p in pids if psutil.pid_exists(p)
                                                 and psutil.Process(p).status() != psutil.STATUS_ZOMBIE)
    result["server_exit_code"] = proc.returncode
    result["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    result["total_s"] = round(time.perf_counter() - t_start, 1)
    shutil.rmtree(tmp, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
