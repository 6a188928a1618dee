"""The hostile-repository suite across all six pinned language servers and Jedi (issue 39):
installs every pinned server (`groundcode analyzers install NAME`: pinned files, hashes checked,
nothing of them runs at install), then runs tests/test_hostile.py — every vector of
tests/hostile_repo.py, through the analyzer itself, `groundcode complete`, `serve`'s structured
endpoint and `groundcode lsp` — and reports one row per analyzer and way in.

    flock /tmp/gc-pytest.lock .venv/bin/python benchmarks/hostile_repo.py [--analyzers ty,zuban,...] [--no-install]
        [--out benchmarks/results/hostile_repo.json]

A row passes when no marker of an untrusted root appeared and a trusted root ran only what the
suite expects (Jedi: its venv's interpreter, which reads its .pth and sitecustomize; a language
server: nothing). Needs Node.js for basedpyright. Prints a table, writes JSON (the machine's
load, each test's outcome and duration, the pinned versions).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIX = ("ty", "zuban", "pyrefly", "basedpyright", "jedi-ls", "typescript")
WAYS = {"test_an_analyzer_in_a_hostile_repository_runs_nothing_of_it": "analyzer",
        "test_complete_runs_nothing_of_an_untrusted_repository": "complete (CLI)",
        "test_serve_trusts_the_listed_root_and_no_other": "serve (HTTP)",
        "test_the_editors_trust_stays_with_the_folder_it_named": "lsp"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analyzers", default=",".join(SIX), help="the servers to install first")
    ap.add_argument("--no-install", action="store_true", help="run with what is installed")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hostile_repo.json"))
    args = ap.parse_args()
    names = [n for n in args.analyzers.split(",") if n]
    from groundcode.analysis import lsp_servers
    if not args.no_install:
        for n in names:
            print(f"install {n}: {lsp_servers.install(n, progress=print)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="gc-hostile-") as tmp:
        xml = Path(tmp) / "junit.xml"
        t0 = time.time()
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "test_hostile.py"),
               f"--junitxml={xml}"]           # it runs every analyzer that is installed
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.time() - t0
        rows = []
        for case in ET.parse(xml).getroot().iter("testcase"):
            test, _, param = case.get("name").partition("[")
            bad = case.find("failure") if case.find("failure") is not None else case.find("error")
            skipped = case.find("skipped") is not None
            rows.append({"analyzer": param.rstrip("]"), "way": WAYS.get(test, test),
                         "outcome": "failed" if bad is not None else "skipped" if skipped else "passed",
                         "seconds": round(float(case.get("time", 0)), 2),
                         "detail": (bad.get("message") or "")[:300] if bad is not None else ""})
    chosen = list(dict.fromkeys(x["analyzer"] for x in rows))
    versions = {n: lsp_servers.get(n).version for n in chosen if n != "jedi"}
    print(f"\n{'analyzer':<14}" + "".join(f"{w:<18}" for w in WAYS.values()))
    for a in chosen:
        cells = []
        for w in WAYS.values():
            row = next((x for x in rows if x["analyzer"] == a and x["way"] == w), None)
            cells.append(f"{row['outcome']} {row['seconds']:.1f}s" if row else "-")
        print(f"{a:<14}" + "".join(f"{c:<18}" for c in cells))
    failed = [x for x in rows if x["outcome"] != "passed"]
    print(f"\n{len(rows)} runs, {len(failed)} not passed, {wall:.0f} s wall; load {os.getloadavg()[0]:.1f}")
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-2000:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"analyzers": chosen, "versions": versions, "rows": rows, "wall_s": round(wall, 1),
                               "loadavg": os.getloadavg(), "cpus": os.cpu_count(),
                               "pytest_rc": r.returncode}, indent=1) + "\n")
    print(f"wrote {out}")
    sys.exit(1 if failed or r.returncode else 0)


if __name__ == "__main__":
    main()
