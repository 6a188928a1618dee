"""Augmentation throughput (training/augment.py) on real PyPI packages, and how far the fast
lookup (`analysis.jedi_oracle.offered_in_file`) agrees with a full Jedi completion on the truncated file.

    python benchmarks/augment_speed.py [--workers 2] [--agree 300]

1. `augment` over the ToolGen training recipe's packages (training/toolgen_corpus.json) with
   `--workers` processes: functions, <COMP> per function, hit rate, wall seconds, functions/s,
   CPU seconds of the workers, load average before/after (the machine is shared: read wall time
   against the load).
2. On the first `--agree` identifiers (fixed order) the exact mode's answer vs the fast one.
Writes benchmarks/results/augment_speed.json.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from importlib import resources
from pathlib import Path

from groundcode.training.augment import AugmentConfig, augment, augment_file, python_files


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--agree", type=int, default=300, help="identifiers to check against exact mode")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/augment_speed.json"))
    ap.add_argument("--keep", type=Path, default=None, help="keep the augmented JSONL here")
    a = ap.parse_args()
    recipe = json.loads(resources.files("groundcode.training").joinpath("toolgen_corpus.json").read_text())
    from groundcode.evaluation import sources
    repos = [sources.resolve(s) for s in recipe["sources"]]          # downloads outside the timing
    with tempfile.TemporaryDirectory() as tmp:
        out = a.keep or Path(tmp) / "aug.jsonl"
        load0 = os.getloadavg()
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        s = augment(AugmentConfig(sources=recipe["sources"], out=str(out), workers=a.workers), progress=False)
        wall = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    res = {"packages": recipe["sources"], "workers": a.workers, "functions": s["functions"],
           "files": s["files"], "identifiers": s["identifiers"], "marked": s["marked"],
           "comp_per_function": s["comp_per_function"], "hit_rate": s["hit_rate"],
           "wall_s": round(wall, 1), "functions_per_s": round(s["functions"] / wall, 2),
           "worker_cpu_s": round(cpu, 1), "functions_per_cpu_s": round(s["functions"] / cpu, 2) if cpu else None,
           "loadavg_before": [round(x, 2) for x in load0], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
           "cpus": os.cpu_count()}
    # agreement: fast lookup vs a full completion on the truncated file, identifier by identifier
    fast = exact = agree = n = 0
    opts = {"max_file_bytes": 300_000, "min_doc_words": 3, "max_body_lines": 30}
    for r in repos:
        for rel in python_files(r.root):
            if n >= a.agree:
                break
            f_recs, _ = augment_file(str(r.root), r.name, rel, opts | {"exact": False})
            if not f_recs:
                continue
            e_recs, _ = augment_file(str(r.root), r.name, rel, opts | {"exact": True})
            for fr, er in zip(f_recs, e_recs):
                fm = {tuple(p) for p in fr["positions"]}
                em = {tuple(p) for p in er["positions"]}
                k = fr["identifiers"]
                n += k
                fast += len(fm)
                exact += len(em)
                agree += k - len(fm ^ em)
    res["agreement"] = {"identifiers": n, "fast_marked": fast, "exact_marked": exact,
                        "same_answer": agree, "rate": round(agree / n, 3) if n else None}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    print("| packages | functions | <COMP>/function | hit rate | wall s | functions/s | worker CPU s | functions/CPU-s | load (1 min) before→after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {len(recipe['sources'])} | {res['functions']} | {res['comp_per_function']} | {res['hit_rate']} | "
          f"{res['wall_s']} | {res['functions_per_s']} | {res['worker_cpu_s']} | {res['functions_per_cpu_s']} | "
          f"{res['loadavg_before'][0]}→{res['loadavg_after'][0]} |")
    g = res["agreement"]
    print(f"fast vs exact: {g['same_answer']}/{g['identifiers']} identifiers agree ({g['rate']}); "
          f"marked fast {g['fast_marked']}, exact {g['exact_marked']}")


if __name__ == "__main__":
    main()
