"""Torch threads on a busy CPU (issue 44 item 5): a bfloat16 matmul of a language-model layer's
size (qwen2.5-coder-0.5b's MLP up projection, 896 x 4864), in bfloat16 and float32, on 1 and 2
torch threads, idle and beside one CPU-bound process per core, for a decode step (1 row) and a
prefill chunk (32 rows).

    .venv/bin/python benchmarks/threads_loaded.py [--seconds 1.0] [--out benchmarks/results/threads_loaded.json]

Per condition: the median time of one matmul, and the thread count `models/threads.py` picks for
the load it measures there. Short and bounded: each cell runs `--seconds` at most, the background
processes are killed when the loaded runs end. Run it only when nothing else heavy runs (`uptime`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    pass\n"


def _cell(torch, dtype, rows: int, threads: int, seconds: float) -> float:
    torch.set_num_threads(threads)
    a = torch.randn(rows, 896, dtype=dtype)
    w = torch.randn(896, 4864, dtype=dtype)
    for _ in range(3):
        a @ w
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        a @ w
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def _table(torch, seconds: float) -> dict:
    from groundcode.models.threads import free_cores, threads_for
    cores = os.cpu_count() or 1
    free = free_cores(window_s=0.5)
    out = {"free_cores_measured": round(free, 2), "picked": threads_for(cores, cores - free)}
    for dtype in ("bfloat16", "float32"):
        for rows in (1, 32):
            for threads in (1, 2):
                ms = _cell(torch, getattr(torch, dtype), rows, threads, seconds)
                out[f"{dtype}_rows{rows}_threads{threads}_ms"] = round(ms, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import torch
    res = {"cores": os.cpu_count(), "torch": torch.__version__, "loadavg_before": os.getloadavg()}
    res["idle"] = _table(torch, args.seconds)
    spin = [subprocess.Popen([sys.executable, "-c", SPIN.format(s=30)]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        res["one_hog_per_core"] = _table(torch, args.seconds)
    finally:
        for p in spin:
            p.kill()
            p.wait()
    res["loadavg_after"] = os.getloadavg()
    print(json.dumps(res, indent=2))
    if args.out:
        args.out.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    main()
