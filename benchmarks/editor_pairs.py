"""Two runs of benchmarks/editor_latency.py side by side, line end by line end: what a change to the
editor's configuration (a shorter FIM suffix, another dtype) costs in quality and buys in time.

    .venv/bin/python benchmarks/editor_pairs.py A.json B.json [--pass grounded] [--out F.json]

Pairs the patient pass's rows of one condition (`grounded` or `plain`) by (function, line) —
the same line ends when both runs picked the same functions — and prints, for each run, first
token p50 and full line p75 over the paired rows, exact lines and mean edit similarity, and the
paired difference B - A of exact match and edit similarity with a 95% bootstrap interval (line
ends resampled, seeded) and how many lines got better / worse. Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from editor_latency import pct  # noqa: E402
from paired_diff import bootstrap  # noqa: E402


def rows(path: Path, cond: str) -> tuple[dict, dict]:
    res = json.loads(path.read_text(encoding="utf-8"))
    want = cond == "grounded"
    out = {}
    for r in res["requests"]["patient"]:
        if r.get("grounded") == want and r.get("total_ms") is not None and "edit_sim" in r:
            out[(r["function"], r["line"])] = r
    return res, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--pass", dest="cond", default="grounded", choices=("grounded", "plain"))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    (ra, a), (rb, b) = rows(args.a, args.cond), rows(args.b, args.cond)
    keys = sorted(set(a) & set(b))
    if not keys:
        sys.exit(f"no line end in both runs' {args.cond} patient rows (were they run with edit_sim?)")
    out = {"a": str(args.a), "b": str(args.b), "pass": args.cond, "pairs": len(keys),
           "only_a": len(set(a) - set(b)), "only_b": len(set(b) - set(a)), "runs": {}, "diff": {}}
    for name, res, rs in (("a", ra, a), ("b", rb, b)):
        sel = [rs[k] for k in keys]
        out["runs"][name] = {
            "model": res.get("model"), "dtype": res.get("dtype"), "suffix_tokens": res.get("suffix_tokens"),
            "load_before": res.get("load_before"), "load_after": res.get("load_after"),
            "first_token_p50_ms": pct([r.get("first_token_ms") for r in sel], 0.5),
            "full_line_p75_ms": pct([r.get("total_ms") for r in sel], 0.75),
            "prompt_tokens_p50": pct([r.get("prompt_tokens") for r in sel], 0.5),
            "exact": sum(bool(r.get("exact")) for r in sel),
            "edit_sim_mean": round(sum(r["edit_sim"] for r in sel) / len(sel), 4)}
    for metric in ("exact", "edit_sim"):
        d = [float(b[k][metric]) - float(a[k][metric]) for k in keys]
        lo, hi = bootstrap(d)
        out["diff"][metric] = {"mean": round(sum(d) / len(d), 4), "ci95": [round(lo, 4), round(hi, 4)],
                               "better": sum(x > 0 for x in d), "worse": sum(x < 0 for x in d)}
    ka, kb = out["runs"]["a"], out["runs"]["b"]
    print(f"{len(keys)} line ends paired ({args.cond}); a: {args.a.name}, b: {args.b.name}")
    print("| run | suffix tokens | prompt tokens p50 | first token p50 ms | full line p75 ms | exact | edit sim |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, k in (("a", ka), ("b", kb)):
        print(f"| {name} | {k['suffix_tokens']} | {k['prompt_tokens_p50']} | {k['first_token_p50_ms']} | "
              f"{k['full_line_p75_ms']} | {k['exact']}/{len(keys)} | {k['edit_sim_mean']} |")
    for metric, d in out["diff"].items():
        print(f"b - a {metric}: {d['mean']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}] "
              f"({d['better']} better / {d['worse']} worse)")
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
