"""Mask time per constrained step of the vocab index (groundcode.decoding.vocab), p50/p99.

Measures, for byte-level BPE vocabularies of 32k and ~150k tokens (trained locally, see
benchmarks/_tokenizers.py) and candidate sets of 10/100/1000 identifier names harvested with `ast`
from the stdlib (seeded samples):
- first step: `allowed(names)` right after `expr.` — the whole candidate set;
- first step after a merged-dot token: a third of the same sets with prefix "." (the sampled
  token glued the dot to a name, e.g. `.append`, which cl100k-style vocabularies have; the
  monitor then constrains dot-led tokens);
- session: every step of a walk that types one seeded target name token by token (greedy longest
  allowed token), the suffix set narrowing after each token, as the dereference monitor does;
- cold = the index's answer caches cleared before each call (only the tables built once per
  tokenizer are used; the default path: the numba-compiled trie walk), warm = the same call
  repeated (LRU hit), np = the numpy fallback path (no numba), py = the pure-Python dict path (the
  first version's approach), both on the same query, cold;
- wall and thread-CPU time for cold steps (the machine is shared; CPU time is less disturbed);
- index build time: cold (decode the vocabulary + build tables) and from the disk cache, and the
  time to import numba and load (or compile) the walk;
- allowed_in rows (the per-step API the monitor moves to): the candidate set is sorted and encoded
  once per trigger (`index.candidates(names)`, timed separately: "candidate-set build µs (once per
  trigger)"), then each step is `allowed_in(cs, typed, prefix)`, uncached (answer caches cleared,
  the candidate set kept): first step (typed ""), first step with prefix ".", and narrowing steps
  with typed = the first 1 or 3 characters of a random candidate; with, per row, the same step
  warm, `allowed_mask_in` uncached, and the old per-step cost on the same query (build the rests
  of the names by hand, then uncached `allowed`). CPU caches are not flushed between steps, but
  order matters: "cold" follows the previous set's old-path step (other memory; like a model
  forward pass between two steps, it evicts trie rows), "mask cold" follows the warm call (the
  trie rows it needs are then in the CPU caches), so mask cold can read lower than cold;
- a calibration loop (CPU µs for `sum(range(10000))`), to compare runs on differently loaded machines.

    .venv/bin/python benchmarks/mask_time.py [--reps 300] [--out benchmarks/results/mask_time.json]

Prints a rich table and writes the JSON. Not a test: nothing here asserts.
"""
from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import platform
import random
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _tokenizers  # noqa: E402

from groundcode.decoding.vocab import (_IDENT_RUN, IDENT_CHARS, VocabIndex,  # noqa: E402
                                       decode_token_texts, jit_walk)

SEED = 0
SIZES = (10, 100, 1000)


def harvest_names() -> list[str]:
    """Distinct attribute and def/class names used in the stdlib's top-level modules (sorted)."""
    names: set[str] = set()
    root = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(root.glob("*.py")):
        try:
            tree = ast.parse(p.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
    return sorted(n for n in names if n.isascii())


def pct(xs: list[float]) -> dict:
    a = np.asarray(xs, dtype=float)
    return {"p50": round(float(np.percentile(a, 50)), 1), "p99": round(float(np.percentile(a, 99)), 1),
            "mean": round(float(a.mean()), 1), "n": len(xs)}


def time_cold(index: VocabIndex, sufs: frozenset, prefix: str = ""):
    index.clear_cache()
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    ids = index.allowed(sufs, prefix)
    w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    return ids, (w1 - w0) / 1e3, (c1 - c0) / 1e3


def time_call(fn, *args) -> float:
    w0 = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - w0) / 1e3


def next_token(index: VocabIndex, ids, rest: str) -> str:
    """The longest allowed token text that types a prefix of `rest`, or types all of it and ends
    the name (`append(`), as a greedy model would pick."""
    best = ""
    for i in ids:
        t = index.texts[i]
        if len(t) > len(best) and (rest.startswith(t) or (
                t.startswith(rest) and len(t) > len(rest) and t[len(rest)] not in IDENT_CHARS)):
            best = t
    return best


def first_steps(index: VocabIndex, sets: list[frozenset], prefix: str, n: int, kind: str) -> dict:
    cold, cpu, warm, npp, py, sizes = [], [], [], [], [], []
    gc.collect()
    for s in sets:
        ids, w, c = time_cold(index, s, prefix)
        cold.append(w)
        cpu.append(c)
        sizes.append(len(ids))
        warm.append(time_call(index.allowed, s, prefix))
        npp.append(time_call(index._compute, s, prefix, "np"))
        py.append(time_call(index._compute, s, prefix, "py"))
    return {"candidates": n, "kind": kind, "prefix": prefix, "cold_us": pct(cold), "cold_cpu_us": pct(cpu),
            "warm_us": pct(warm), "np_cold_us": pct(npp), "py_cold_us": pct(py),
            "allowed_ids_p50": int(np.median(sizes))}


def time_in(index: VocabIndex, cs, typed: str, prefix: str):
    """One uncached `allowed_in` step: answer caches cleared, the candidate set kept (it is built
    once per trigger and timed on its own)."""
    index.clear_cache()
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    ids = index.allowed_in(cs, typed, prefix)
    w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    return ids, (w1 - w0) / 1e3, (c1 - c0) / 1e3


def old_step(index: VocabIndex, names: list[str], typed: str, prefix: str) -> float:
    """What a step cost before: build the rests of the names by hand, then uncached `allowed`."""
    index.clear_cache()
    w0 = time.perf_counter_ns()
    index.allowed(frozenset(n[len(typed):] for n in names if n.startswith(typed)), prefix)
    return (time.perf_counter_ns() - w0) / 1e3


def in_steps(index: VocabIndex, sets: list[frozenset], n: int, kind: str, prefix: str, typed_len: int,
             rng: random.Random) -> dict:
    """`allowed_in` rows: per candidate set, build the CandidateSet (from a list, as the monitor
    gets names; its LRU emptied first), then one uncached step at typed = the first `typed_len`
    characters of a random name (0: the first step after `expr.`), then the same step warm, and
    the uncached `allowed_mask_in` of it."""
    build, cold, cpu, warm, mask, old, sizes, ranges = [], [], [], [], [], [], [], []
    gc.collect()
    for s in sets:
        names = list(s)
        index._cands.clear()
        w0 = time.perf_counter_ns()
        cs = index.candidates(names)
        build.append((time.perf_counter_ns() - w0) / 1e3)
        typed = rng.choice(cs.names)[:typed_len] if typed_len else ""
        ids, w, c = time_in(index, cs, typed, prefix)
        cold.append(w)
        cpu.append(c)
        sizes.append(len(ids))
        lo, hi = cs.span(typed)
        ranges.append(hi - lo)
        warm.append(time_call(index.allowed_in, cs, typed, prefix))
        index.clear_cache()
        mask.append(time_call(index.allowed_mask_in, cs, typed, prefix))
        old.append(old_step(index, cs.names, typed, prefix))
    return {"candidates": n, "kind": kind, "prefix": prefix, "typed_chars": typed_len,
            "cold_us": pct(cold), "cold_cpu_us": pct(cpu), "warm_us": pct(warm), "mask_cold_us": pct(mask),
            "candidate_set_build_us": pct(build), "old_allowed_cold_us": pct(old),
            "allowed_ids_p50": int(np.median(sizes)), "names_in_range_p50": int(np.median(ranges))}


def bench_in(index: VocabIndex, names: list[str], reps: int) -> list[dict]:
    rows = []
    for n in SIZES:
        rng = random.Random(f"{SEED}-in-{n}")
        sets = [frozenset(rng.sample(names, n)) for _ in range(reps)]
        rows.append(in_steps(index, sets, n, "first step", "", 0, rng))
        rows.append(in_steps(index, sets[: max(1, reps // 3)], n, "first step, prefix '.'", ".", 0, rng))
        rows.append(in_steps(index, sets, n, "typed 1 char", "", 1, rng))
        rows.append(in_steps(index, sets, n, "typed 3 chars", "", 3, rng))
    return rows


def bench_sizes(index: VocabIndex, names: list[str], reps: int, sessions: int) -> list[dict]:
    rows = []
    for n in SIZES:
        rng = random.Random(f"{SEED}-{n}")
        sets = [frozenset(rng.sample(names, n)) for _ in range(reps)]
        rows.append(first_steps(index, sets, "", n, "first step"))
        # the sampled token merged the dot with the name (`.append`, cl100k-style vocabularies): lead "."
        rows.append(first_steps(index, sets[: max(1, reps // 3)], ".", n, "first step, prefix '.'"))
        # sessions: type one target per set, token by token, narrowing the suffix set
        cold, cpu, warm, npp, py, sizes, steps = [], [], [], [], [], [], 0
        for s in sets[:sessions]:
            cands = sorted(s)
            target = rng.choice(cands)
            typed = ""
            for _ in range(64):
                sufs = frozenset(c[len(typed):] for c in cands if c.startswith(typed))
                ids, w, c = time_cold(index, sufs)
                cold.append(w)
                cpu.append(c)
                sizes.append(len(ids))
                warm.append(time_call(index.allowed, sufs, ""))
                npp.append(time_call(index._compute, sufs, "", "np"))
                py.append(time_call(index._compute, sufs, "", "py"))
                steps += 1
                rest = target[len(typed):]
                tok = next_token(index, ids, rest) if rest else ""
                run = _IDENT_RUN.match(tok).group(0)
                if not run or run != tok:
                    break  # the name is complete, or this token ends it
                typed += run
        rows.append({"candidates": n, "kind": "session step", "cold_us": pct(cold), "cold_cpu_us": pct(cpu),
                     "warm_us": pct(warm), "np_cold_us": pct(npp), "py_cold_us": pct(py),
                     "allowed_ids_p50": int(np.median(sizes)), "sessions": min(sessions, len(sets)), "steps": steps})
    return rows


def calibrate() -> float:
    """CPU µs of a fixed pure-Python loop (best of 20): how fast this core is right now."""
    best = float("inf")
    for _ in range(20):
        c0 = time.thread_time_ns()
        sum(range(10000))
        best = min(best, (time.thread_time_ns() - c0) / 1e3)
    return round(best, 1)


def build_times(tok) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        VocabIndex.for_tokenizer(tok, cache_dir=tmp)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = VocabIndex.for_tokenizer(tok, cache_dir=tmp)
        disk = time.perf_counter() - t0
    t0 = time.perf_counter()
    texts = decode_token_texts(tok)
    decode = time.perf_counter() - t0
    t0 = time.perf_counter()
    VocabIndex(texts)
    tables = time.perf_counter() - t0
    return {"cold_s": round(cold, 3), "disk_cache_s": round(disk, 3), "decode_s": round(decode, 3),
            "tables_s": round(tables, 3)}, index


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__,
            "loadavg_start": list(os.getloadavg())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300, help="candidate sets per size (first steps)")
    ap.add_argument("--sessions", type=int, default=100, help="typed names per size")
    ap.add_argument("--vocabs", default="bpe32k,bpe150k")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mask_time.json"))
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    info = machine()
    info["calibration_cpu_us_start"] = calibrate()
    t_start = time.perf_counter()
    jit_s = time.perf_counter()
    jit = jit_walk() is not None
    warm_up = VocabIndex(["a", "ab", "("])  # import numba, load/compile both walks
    warm_up._compute(frozenset(["ab"]), "")
    warm_up.allowed_in(warm_up.candidates(["ab", "b"]), "a")
    warm_up.allowed_mask_in(warm_up.candidates(["ab", "b"]), "a")  # imports torch: not timed below
    jit_s = round(time.perf_counter() - jit_s, 3)
    names = harvest_names()
    result = {"benchmark": "mask_time", "machine": info, "seed": SEED, "candidate_pool": len(names),
              "jit": jit, "jit_load_s": jit_s,
              "reps": args.reps, "sessions": args.sessions, "vocabs": {}}
    table = Table(title="vocab index: mask time per constrained step (µs)")
    for col in ["vocab", "cands", "step", "ids p50", "cold p50", "cold p99", "cold CPU p50", "cold CPU p99",
                "warm p50", "warm p99", "np p50", "np p99", "py p50", "py p99"]:
        table.add_column(col, justify="right")
    table_in = Table(title="vocab index: allowed_in per constrained step (µs); candidate set encoded once per trigger")
    for col in ["vocab", "cands", "step", "names in range", "ids p50", "cold p50", "cold p99", "cold CPU p50",
                "cold CPU p99", "warm p50", "warm p99", "mask cold p50", "mask cold p99",
                "candidate-set build µs (once per trigger) p50", "build p99", "old: rests+allowed cold p50",
                "old p99"]:
        table_in.add_column(col, justify="right")
    for name in args.vocabs.split(","):
        tok = _tokenizers.load(name)
        build, index = build_times(tok)
        t0 = time.perf_counter()
        index._root._trie.range_rows()
        build["range_rows_s"] = round(time.perf_counter() - t0, 3)
        rows = bench_sizes(index, names, args.reps, args.sessions)
        rows_in = bench_in(index, names, args.reps)
        result["vocabs"][name] = {"vocab_size": index.size, "family": _tokenizers.RECIPES[name][1],
                                  "build": build, "rows": rows, "rows_allowed_in": rows_in}
        for r in rows:
            table.add_row(f"{name} ({index.size})", str(r["candidates"]), r["kind"], str(r["allowed_ids_p50"]),
                          *[str(r[k][q]) for k in ("cold_us", "cold_cpu_us", "warm_us", "np_cold_us", "py_cold_us")
                            for q in ("p50", "p99")])
        for r in rows_in:
            table_in.add_row(f"{name} ({index.size})", str(r["candidates"]), r["kind"], str(r["names_in_range_p50"]),
                             str(r["allowed_ids_p50"]),
                             *[str(r[k][q]) for k in ("cold_us", "cold_cpu_us", "warm_us", "mask_cold_us",
                                                       "candidate_set_build_us", "old_allowed_cold_us")
                               for q in ("p50", "p99")])
    info["loadavg_end"] = list(os.getloadavg())
    info["calibration_cpu_us_end"] = calibrate()
    result["wall_s"] = round(time.perf_counter() - t_start, 1)
    big = result["vocabs"].get("bpe150k", {}).get("rows", [])
    target = next((r for r in big if r["candidates"] == 1000 and r["kind"] == "first step"), None)
    if target:
        result["target_150k_1000"] = {
            "p50_target_us": 50, "p99_target_us": 500, "compared_with": "cold (uncached) first step, wall",
            "cold_p50_us": target["cold_us"]["p50"], "cold_p99_us": target["cold_us"]["p99"],
            "met": target["cold_us"]["p50"] <= 50 and target["cold_us"]["p99"] <= 500,
            "warm_met": target["warm_us"]["p50"] <= 50 and target["warm_us"]["p99"] <= 500}
    big_in = result["vocabs"].get("bpe150k", {}).get("rows_allowed_in", [])
    result["target_150k_1000_allowed_in"] = {
        r["kind"]: {"p50_target_us": 50, "p99_target_us": 500, "cold_p50_us": r["cold_us"]["p50"],
                    "cold_p99_us": r["cold_us"]["p99"], "cold_cpu_p50_us": r["cold_cpu_us"]["p50"],
                    "cold_cpu_p99_us": r["cold_cpu_us"]["p99"],
                    "met_wall": r["cold_us"]["p50"] <= 50 and r["cold_us"]["p99"] <= 500,
                    "met_cpu": r["cold_cpu_us"]["p50"] <= 50 and r["cold_cpu_us"]["p99"] <= 500}
        for r in big_in if r["candidates"] == 1000}
    console = Console(width=260)
    console.print(table)
    console.print(table_in)
    for name, v in result["vocabs"].items():
        console.print(f"{name}: build cold {v['build']['cold_s']} s (decode {v['build']['decode_s']} s, "
                      f"tables {v['build']['tables_s']} s), from disk cache {v['build']['disk_cache_s']} s")
    console.print(f"compiled walk: {jit} (numba import + load/compile of both walks {jit_s} s); load average start "
                  f"{info['loadavg_start']} end {info['loadavg_end']}; calibration "
                  f"{info['calibration_cpu_us_start']}/{info['calibration_cpu_us_end']} CPU µs; "
                  f"{info['cores']} cores; wall {result['wall_s']} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
