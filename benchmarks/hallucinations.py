"""Hallucination rates by kind from a scored results file (issue 40): the share of tasks whose
completion reads a name, imports a module or name, or uses a member that does not exist —
judged by pylint (undefined-variable; import-error and no-name-in-module; no-member), never by
the monitor that was asked — counting only what the task's reference does not have (the
reference's own messages, e.g. an import of a dependency the lint environment lacks, are
subtracted by the name they quote), and never a name the token budget cut in two (the row's
`cut_name`, written by the scorer: a message on the last line of a length- or deadline-cut
completion about the identifier it ends in), nor an import pylint could not resolve that resolves
when the scorer runs it in the sandbox (the row's `import_ok`, evaluation/import_check.py:
typing_extensions' `Optional`). Paired bootstrap 95% interval of B − A over tasks.

    python3 benchmarks/hallucinations.py RESULTS.jsonl --a monitored --b monitored+names \
        [--reference reference] [--out benchmarks/results/.../hallucinations.json]

Needs the reference rows (`groundcode bench run --config reference --oracle`) in RESULTS.
"""
from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

from paired_diff import bootstrap as _bootstrap   # benchmarks/: the paired tasks resampled, seeded
from groundcode.evaluation.judged import judged_messages  # noqa: E402  (src/ on the path: paired_diff)

KINDS = {"name": ("undefined-variable",), "import": ("import-error", "no-name-in-module"),
         "member": ("no-member",),
         "call": ("no-value-for-parameter", "too-many-function-args", "unexpected-keyword-arg",
                  "redundant-keyword-arg", "missing-kwoa"),
         "parameter": ("unexpected-keyword-arg",)}      # of the call errors: an invented parameter name
_QUOTED = re.compile(r"'([^']+)'")


def _marks(messages: list[str]) -> dict[str, set]:
    """What each hallucination kind's messages name: kind -> {(symbol, quoted name)}."""
    out: dict[str, set] = {k: set() for k in KINDS}
    for m in messages:
        parts = m.split(": ", 2)
        if len(parts) < 3:
            continue
        sym, text = parts[1], parts[2]
        for kind, syms in KINDS.items():
            if sym in syms:
                q = _QUOTED.findall(text)
                out[kind].add((sym, q[0] if q else text))
    return out


def _judged(row: dict) -> list[str]:
    """The first sample's lint messages as the judge counts them (evaluation/judged.py; rows
    scored before the scorer wrote `cut_name` / `import_ok` keep every one)."""
    return judged_messages(row["lint"][0], (row.get("cut_name") or [None])[0],
                           set((row.get("import_ok") or [[]])[0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--a", default="monitored")
    ap.add_argument("--b", default="monitored+names")
    ap.add_argument("--reference", default="reference")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    by: dict = defaultdict(dict)
    for r in rows:
        by[r["config"]][r["task_id"]] = r
    ref = by.get(args.reference, {})
    out = {"a": args.a, "b": args.b, "reference_tasks": len(ref), "kinds": {}}
    task_kinds = sorted({r["kind"] for r in rows if r["config"] in (args.a, args.b)})
    print(f"| task kind | hallucination | tasks | {args.a} | {args.b} | diff [95% CI] | better / worse |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for tk in task_kinds:
        ids = sorted(t for t in by[args.a] if t in by[args.b] and by[args.a][t]["kind"] == tk)
        for hk in KINDS:
            va, vb = [], []
            for t in ids:
                base = _marks(ref[t]["lint"][0])[hk] if t in ref else set()
                va.append(float(bool(_marks(_judged(by[args.a][t]))[hk] - base)))
                vb.append(float(bool(_marks(_judged(by[args.b][t]))[hk] - base)))
            if not ids:
                continue
            d = [b - a for a, b in zip(va, vb)]
            lo, hi = _bootstrap(d)
            row = {"tasks": len(ids), args.a: sum(va), args.b: sum(vb), "diff_rate": sum(d) / len(d),
                   "ci95": [lo, hi], "better": sum(x < 0 for x in d), "worse": sum(x > 0 for x in d)}
            out["kinds"].setdefault(tk, {})[hk] = row
            print(f"| {tk} | {hk} | {len(ids)} | {int(sum(va))} | {int(sum(vb))} | {row['diff_rate']:+.3f} "
                  f"[{lo:+.3f}, {hi:+.3f}] | {row['better']} / {row['worse']} |")
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
