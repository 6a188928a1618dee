"""Concurrency through the session: N requests at once (continuous batching) against the same N
requests one at a time, in one run, grounding on; and a next-keystroke request with prefix reuse
against the same request cold.

    python benchmarks/concurrency.py                       # the registry default (smollm2-135m)
    python benchmarks/concurrency.py --model tiny --quick  # a smoke run with the bundled model

Requests: cursor and function contexts of tests/fixtures/shop, plus (when built) the standing
benchmark's tasks (`--tasks`, default ~/.cache/groundcode/bench/standing/tasks.jsonl: up to
`--per-kind` function and dereference tasks), cycled to N. Both runs of a level use a session
with the prefix cache off (so batching alone is measured) and the same greedy requests.
Figures per level (1, 4, 16): wall seconds one at a time and at once, their ratio (throughput
gain), p50/p95 request latency (submit to done) in both modes, errors, generated tokens, and
the process's resident memory before the level and after it. Next keystroke: for cursor sites
at column c, the request at c+1 (one more character typed) after the one at c, with the prefix
cache on, against the c+1 request cold; the median latency ratio — with the session's drafts
(the c request's suggestion verified in one forward where the typed character starts it:
decoding/drafts.py) and without (`reuse_no_drafts_ms`: prefix reuse alone). Every mode is a
fresh session that serves the c request and then the c+1 one (measured), so the analyzer's
caches and the scheduler thread are equally warm: cold differs only in reusing nothing (no
prefix cache, no drafts). Each site is measured `--repeats` times (median per site); ratios
are given over all sites, the real files' sites (~1,000-token prompts) and the fixture's
(30-77 tokens, where prefill is a small part of a request). The reuse mode is the session as
`groundcode serve` and the LSP run it: drafts and lookahead (after a suggestion, rows with
other first characters run on idle time: decoding/scheduler.py). The test runs twice: the c+1
request sent the moment the c result is in (`next_keystroke`: no idle time, so lookahead can
only cost), and `--debounce-ms` (350: Continue's debounce) after it (`next_keystroke_debounced`:
what a client sends after a keystroke; every mode waits the same).
`--keystroke-only` runs just that part.
Prompts are capped at `--max-prompt-tokens` (1,024: what Continue sends) so that a CPU run ends;
the keystroke sites are the fixture's and (when built) standing dereference tasks' real files,
whose capped prompts are long enough for the prefill to matter.
Weights: `--dtype auto` (the default) loads what `groundcode serve` would on this machine
(bfloat16 on a CPU with native bfloat16). Writes benchmarks/results/concurrency.json (or --out)
and prints a table. CPU by default.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "tests" / "fixtures" / "shop"
CACHE = Path(os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for ln in fh:
            if ln.startswith("VmRSS:"):
                return round(int(ln.split()[1]) / 1024, 1)
    return 0.0


def contexts(tasks_path: Path, per_kind: int) -> tuple[list, list]:
    """(contexts for the load levels, cursor sites (file, line, col) for the keystroke test)."""
    from groundcode.api import cursor_context, function_context
    cart, reg = SHOP / "shop" / "cart.py", SHOP / "shop" / "registry.py"
    ctxs = [cursor_context(cart, 11, 13, SHOP), function_context(cart, "Cart.add", SHOP),
            cursor_context(cart, 7, 13, SHOP), function_context(cart, "Cart.last", SHOP),
            cursor_context(reg, 9, 13, SHOP), function_context(reg, "Registry.register", SHOP),
            cursor_context(reg, 14, 15, SHOP), function_context(reg, "Registry.latest_update", SHOP)]
    sites = [(cart, 11, 13, SHOP), (cart, 7, 13, SHOP), (reg, 9, 13, SHOP), (reg, 14, 15, SHOP)]
    if tasks_path.exists():
        from groundcode.evaluation.harness import context_for, select
        from groundcode.jsonl import read_jsonl
        try:
            tasks = select(list(read_jsonl(tasks_path)), limit=per_kind, kinds=("function", "dereference"))
            ctxs += [context_for(t) for t in tasks]
            sites += [(Path(t["repo_dir"]) / t["path"], t["line"], t["col"], Path(t["repo_dir"]))
                      for t in tasks if t["kind"] == "dereference"][:4]
        except Exception as exc:        # a stale task file: the fixture contexts still run
            print(f"standing tasks skipped: {exc}", file=sys.stderr)
    return ctxs, sites


def pct(xs: list, q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))], 1) if xs else 0.0


def level(gen, ctxs, n: int, max_new: int) -> dict:
    from groundcode.config import SamplingConfig
    from groundcode.session import Session
    s = SamplingConfig(max_new_tokens=max_new)
    reqs = [gen.request(ctxs[k % len(ctxs)], s) for k in range(n)]
    rss0 = rss_mb()
    out = {"requests": n}
    for mode in ("sequential", "concurrent"):
        sess = Session(gen, max_rows=max(16, n), prefix_cache_bytes=0)
        errors, lat, tokens = 0, [], 0
        t0 = time.perf_counter()
        if mode == "sequential":
            streams = []
            for r in reqs:
                st = sess.submit(r)
                streams.append(st)
                try:
                    st.result(timeout=600)
                except Exception:
                    pass
        else:
            streams = [None] * n

            def go(k):
                streams[k] = sess.submit(reqs[k])
            th = [threading.Thread(target=go, args=(k,)) for k in range(n)]
            for t in th:
                t.start()
            for t in th:
                t.join()
            for st in streams:
                try:
                    st.result(timeout=600)
                except Exception:
                    pass
        wall = time.perf_counter() - t0
        for st in streams:
            try:
                g = st.result(timeout=0)[0]
                lat.append(g.timings["total_ms"])
                tokens += g.tokens
            except Exception:
                errors += 1
        sess.close()
        out[mode] = {"wall_s": round(wall, 3), "p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95),
                     "errors": errors, "tokens": tokens, "tok_per_s": round(tokens / wall, 1) if wall else 0}
    out["throughput_ratio"] = round(out["sequential"]["wall_s"] / out["concurrent"]["wall_s"], 2)
    import gc
    gc.collect()
    out["rss_mb_before"], out["rss_mb_after"] = rss0, rss_mb()
    return out


def keystroke(gen, sites, max_new: int, repeats: int = 3, gap_ms: float = 0.0) -> dict:
    from groundcode.api import cursor_context
    from groundcode.config import SamplingConfig
    from groundcode.server.options import ServeOptions
    from groundcode.session import Session
    lookahead = ServeOptions().lookahead          # what `groundcode serve` and the LSP ship
    s = SamplingConfig(max_new_tokens=max_new)
    med = lambda xs: round(statistics.median(xs), 3) if xs else None  # noqa: E731
    rows = []
    for path, line, col, repo in sites:
        # the cursor one character further on: the character the file has there is typed
        a, b = cursor_context(path, line, col, repo), cursor_context(path, line, col + 1, repo)
        runs = {"cold": [], "reuse": [], "reuse_no_drafts": []}
        for _ in range(repeats):
            # Each mode is a fresh session that serves the request at c, then the one at c+1
            # (measured): the same history (analysis caches, the scheduler thread's warm-up),
            # differing only in what is reused. cold: no prefix cache, no drafts.
            for mode, kw in (("cold", {"prefix_cache_bytes": 0, "drafts": False}),
                             ("reuse_no_drafts", {"drafts": False}), ("reuse", {"lookahead": lookahead})):
                sess = Session(gen, **kw)
                sess.submit(gen.request(a, s)).result(600)
                time.sleep(gap_ms / 1000)         # the client's debounce after the keystroke
                runs[mode].append(sess.submit(gen.request(b, s)).result(600)[0])
                sess.close()
        gc_, gw, gp = runs["cold"][-1], runs["reuse"][-1], runs["reuse_no_drafts"][-1]
        ms = lambda mode, key="total_ms": med([g.timings[key] for g in runs[mode]])  # noqa: E731
        rows.append({"site": f"{path.name}:{line}:{col + 1}", "fixture": repo == SHOP,
                     "cold_ms": ms("cold"), "reuse_ms": ms("reuse"), "reuse_no_drafts_ms": ms("reuse_no_drafts"),
                     "cold_ms_runs": [g.timings["total_ms"] for g in runs["cold"]],
                     "reuse_ms_runs": [g.timings["total_ms"] for g in runs["reuse"]],
                     "prompt_tokens": gw.prompt_tokens, "tokens_cached": gw.tokens_cached,
                     "cold_prefill_ms": ms("cold", "prefill_ms"), "reuse_prefill_ms": ms("reuse", "prefill_ms"),
                     "tokens": gw.tokens, "drafted": gw.drafted, "draft_accepted": gw.draft_accepted,
                     "same_text": gw.completion == gc_.completion == gp.completion})

    def ratio(key, base="cold_ms", which=None):
        return med([r[key] / r[base] for r in rows if r[base] and (which is None or r["fixture"] == which)])
    return {"sites": rows, "repeats": repeats, "gap_ms": gap_ms, "lookahead": lookahead,
            "median_latency_ratio": ratio("reuse_ms"),
            "median_latency_ratio_no_drafts": ratio("reuse_no_drafts_ms"),
            "median_latency_ratio_real_files": ratio("reuse_ms", which=False),
            "median_latency_ratio_fixture": ratio("reuse_ms", which=True),
            "median_prefill_ratio": ratio("reuse_prefill_ms", "cold_prefill_ms")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="registry name, tiny, or a path (default: smollm2-135m)")
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--tasks", default=str(CACHE / "bench" / "standing" / "tasks.jsonl"))
    ap.add_argument("--per-kind", type=int, default=8)
    ap.add_argument("--max-prompt-tokens", type=int, default=1024)
    ap.add_argument("--keystroke-new-tokens", type=int, default=16, help="new tokens in the keystroke test (a line)")
    ap.add_argument("--repeats", type=int, default=3, help="keystroke measurements per site (median)")
    ap.add_argument("--debounce-ms", type=float, default=350.0,
                    help="the keystroke test again with the c+1 request sent this long after the c "
                         "result (a client's debounce: Continue's 350 ms); 0: only back to back")
    ap.add_argument("--quick", action="store_true", help="levels 1,4; 8 new tokens; fixture contexts only")
    ap.add_argument("--keystroke-only", action="store_true",
                    help="only the next-keystroke part (no load levels, no warm-up of their contexts)")
    ap.add_argument("--dtype", default="auto",
                    help="weights' dtype; auto: what `groundcode serve` loads here (bfloat16 on a CPU "
                         "with native bfloat16, models/load.serving_dtype)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "concurrency.json"))
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from rich.console import Console
    from rich.table import Table

    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
    if args.quick:
        args.levels, args.max_new_tokens, args.tasks = "1,4", 8, "/nonexistent"
    levels = [] if args.keystroke_only else [int(x) for x in args.levels.split(",")]
    from groundcode.models.load import serving_dtype
    dtype = serving_dtype(args.dtype, None, args.model)
    with Generator(args.model, MonitorConfig(enabled=True), dtype=dtype,
                   prompt=PromptConfig(max_prompt_tokens=args.max_prompt_tokens)) as gen:
        ctxs, sites = contexts(Path(args.tasks), args.per_kind)
        # warm-up: every context once, so the analyzer's caches are as warm for the first
        # mode measured as for the second
        if levels:
            gen.run(ctxs, SamplingConfig(max_new_tokens=args.max_new_tokens))
        else:           # the keystroke sites' first requests (what the levels' warm-up covers)
            from groundcode.api import cursor_context
            gen.run([cursor_context(p, ln, c, r) for p, ln, c, r in sites],
                    SamplingConfig(max_new_tokens=args.keystroke_new_tokens))
        t0 = time.perf_counter()
        result = {"model": gen.lm.name, "device": str(gen.engine.device), "grounding": True,
                  "dtype": dtype or "float32",
                  "max_new_tokens": args.max_new_tokens, "contexts": len(ctxs),
                  "max_prompt_tokens": args.max_prompt_tokens,
                  "keystroke_new_tokens": args.keystroke_new_tokens,
                  "cpu_threads": __import__("torch").get_num_threads(),
                  "load_avg": round(os.getloadavg()[0], 2), "levels": []}
        for n in levels:
            result["levels"].append(level(gen, ctxs, n, args.max_new_tokens))
        ks_sites, reps = (sites[:2], 1) if args.quick else (sites, args.repeats)
        result["next_keystroke"] = keystroke(gen, ks_sites, args.keystroke_new_tokens, reps)
        if args.debounce_ms > 0:
            result["next_keystroke_debounced"] = keystroke(gen, ks_sites, args.keystroke_new_tokens, reps,
                                                           args.debounce_ms)
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        result["load_avg_end"] = round(os.getloadavg()[0], 2)
        result["rss_mb_end"] = rss_mb()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    t = Table(title=f"concurrency · {result['model']} · {result['device']} · grounding on · "
                    f"{args.max_new_tokens} new tokens", title_justify="left")
    for c in ("N", "one at a time s", "at once s", "ratio", "p50 ms (seq/conc)", "p95 ms (seq/conc)",
              "errors", "RSS MB before→after"):
        t.add_column(c)
    for lv in result["levels"]:
        sq, cc = lv["sequential"], lv["concurrent"]
        t.add_row(str(lv["requests"]), str(sq["wall_s"]), str(cc["wall_s"]), f"{lv['throughput_ratio']}×",
                  f"{sq['p50_ms']}/{cc['p50_ms']}", f"{sq['p95_ms']}/{cc['p95_ms']}",
                  str(sq["errors"] + cc["errors"]), f"{lv['rss_mb_before']}→{lv['rss_mb_after']}")
    Console().print(t)
    for key, label in (("next_keystroke", "back to back"), ("next_keystroke_debounced", "after the debounce")):
        ks = result.get(key)
        if ks:
            Console().print(f"next keystroke ({label}, {ks['gap_ms']:g} ms) with reuse / cold: median latency "
                            f"ratio {ks['median_latency_ratio']} (real files {ks['median_latency_ratio_real_files']}, "
                            f"fixture {ks['median_latency_ratio_fixture']}), without drafts "
                            f"{ks['median_latency_ratio_no_drafts']}, prefill ratio {ks['median_prefill_ratio']}")
    print(f"→ {args.out}")


if __name__ == "__main__":
    main()
