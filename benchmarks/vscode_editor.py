"""The extension in a real VS Code (issue 43): code-server in Chromium, driven by puppeteer-core
(benchmarks/vscode/drive.mjs), with editors/vscode/groundcode.vsix installed. Run through
benchmarks/vscode_editor.sh, which installs what is missing first (pinned versions).

For each trust mode (untrusted, then trusted) it makes a fixture workspace — the hostile
repository of tests/hostile_repo.py (a `.venv` whose interpreter leaves a marker, .pth and
sitecustomize files, interpreters named by every server's configuration, a workspace TypeScript)
plus a Python class and a TypeScript class — starts code-server on loopback with a fresh
user-data and extensions directory, installs the .vsix, and drives one browser per file:

  - types at `self.` (Python) and `this.` (TypeScript), waits for the ghost text and asserts that
    it begins with a member of the class; takes a screenshot (docs/img/); accepts with Tab, saves,
    and reads the file back;
  - times keystroke to ghost text over N trials (the last keystroke of `self.` / `this.` on a
    fresh line, both ends observed in the page), beside the server's own first-token and answer
    times for the same requests (the extension logs them to its output channel);
  - untrusted: no marker may appear; trusted: the workspace's venv interpreter ran (Jedi saw it).

    bash benchmarks/vscode_editor.sh [--trials 20] [--model smollm2-135m] [--out F]

Prints a table; writes JSON (benchmarks/results/vscode_editor.json) and the screenshots; exits 1
when an assertion fails.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import hostile_repo  # noqa: E402  (the fixture's hostile half)

PY_CLASS = '''class Inventory:
    """Stock levels and the updates registered against them."""

    def __init__(self):
        self._registered_updates = []
        self.stock_levels = {}

    def restock(self, item: str, count: int) -> None:
        self.stock_levels[item] = self.stock_levels.get(item, 0) + count
        self._registered_updates.append((item, count))

    def pending(self) -> int:
        return self.
'''
TS_CLASS = '''export class Inventory {
  private registeredUpdates: Array<[string, number]> = [];
  stockLevels = new Map<string, number>();

  restock(item: string, count: number): void {
    this.stockLevels.set(item, (this.stockLevels.get(item) ?? 0) + count);
    this.registeredUpdates.push([item, count]);
  }

  pending(): number {
    return this.
'''
FILES = {   # file: (text, 1-based trigger line, members of the class, what a trial types)
    "python": ("shop/inventory.py", PY_CLASS, 13, ["_registered_updates", "stock_levels", "restock", "pending"],
               "v = self."),
    "typescript": ("web/inventory.ts", TS_CLASS, 11, ["registeredUpdates", "stockLevels", "restock", "pending"],
                   "const v = this."),
}
EXPECTED_TRUSTED = {"venv-python", "venv-pth", "venv-sitecustomize"}   # Jedi runs the venv's python


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fixture(ws: Path, markers: Path) -> None:
    hostile_repo.plant(ws, markers)
    for rel, text, *_ in FILES.values():
        (ws / rel).write_text(text)


def _settings(ud: Path, groundcode: str, model: str, trusted: bool) -> None:
    settings = {
        "groundcode.command": groundcode, "groundcode.model": model,
        "security.workspace.trust.enabled": not trusted,          # off: every folder is trusted
        "security.workspace.trust.startupPrompt": "never",        # on: restricted mode, no dialog
        "security.workspace.trust.banner": "never",
        "workbench.startupEditor": "none", "workbench.tips.enabled": False,
        "workbench.welcomePage.walkthroughs.openOnInstall": False,
        "telemetry.telemetryLevel": "off", "update.mode": "none",
        "extensions.autoCheckUpdates": False, "extensions.autoUpdate": False,
        "extensions.ignoreRecommendations": True, "chat.disableAIFeatures": True,
        "editor.inlineSuggest.enabled": True, "files.autoSave": "off", "editor.minimap.enabled": False,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
    }
    # code-server is a remote window: settings of machine scope (groundcode.command, .python)
    # apply from the remote's settings (Machine/), not the browser's user settings
    for where in ("User", "Machine"):
        (ud / where).mkdir(parents=True, exist_ok=True)
        (ud / where / "settings.json").write_text(json.dumps(settings, indent=1))


def _server_times(ud: Path) -> list[dict]:
    """The extension's per-suggestion lines from its output channel's log files."""
    rows = []
    for f in sorted(ud.glob("logs/**/*groundcode*.log")):
        for m in re.finditer(r"suggestion (\S+):(\d+):(\d+) first token (\S+) ms, answer (\S+) ms", f.read_text(errors="replace")):
            rows.append({"file": m[1], "line": int(m[2]), "col": int(m[3]),
                         "first_token_ms": float(m[4]) if m[4] != "None" else None,
                         "total_ms": float(m[5]) if m[5] != "None" else None})
    return rows


def _pair(r: dict, srv: list[dict]) -> None:
    """Each timed trial beside the server's answer for the same cursor (the last one logged
    there): the server's first token and answer times, and what the editor added on top."""
    first, answer, over = [], [], []
    for ms, cur in zip(r.get("latency_ms") or [], r.get("trial_cursors") or []):
        at = [s for s in srv if cur and [s["line"], s["col"]] == list(cur)]
        if ms is None or not at:
            continue
        first.append(at[-1]["first_token_ms"])
        answer.append(at[-1]["total_ms"])
        over.append(ms - at[-1]["total_ms"] if at[-1]["total_ms"] is not None else None)
    r["paired_trials"] = len(first)
    r["server_first_token_p50_ms"] = _pct(first, 0.5)
    r["server_answer_p50_ms"] = _pct(answer, 0.5)
    r["editor_overhead_p50_ms"] = _pct(over, 0.5)
    r["key_to_ghost_p50_ms"] = _pct(r.get("latency_ms") or [], 0.5)
    r["key_to_ghost_p95_ms"] = _pct(r.get("latency_ms") or [], 0.95)


def _pct(xs: list, q: float):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return round(xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))], 1)


def run_mode(args, trusted: bool, tmp: Path) -> dict:
    mode = "trusted" if trusted else "untrusted"
    ws, markers, ud, ext = (tmp / mode / d for d in ("ws", "markers", "ud", "ext"))
    _fixture(ws, markers)
    _settings(ud, args.groundcode, args.model, trusted)
    env = dict(os.environ, PATH=f"{Path(args.node).parent}:{os.environ['PATH']}", HF_HUB_OFFLINE="1")
    base = [args.code_server, "--user-data-dir", str(ud), "--extensions-dir", str(ext)]
    subprocess.run(base + ["--install-extension", str(args.vsix)], env=env, check=True,
                   capture_output=True, text=True, timeout=300)
    port = _port()
    log = open(tmp / f"code-server-{mode}.log", "w")
    proc = subprocess.Popen(base + ["--bind-addr", f"127.0.0.1:{port}", "--auth", "none", "--disable-telemetry",
                                    "--disable-update-check", "--disable-getting-started-override", str(ws)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    out = {"mode": mode, "files": {}}
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"code-server did not answer on {url}: see {log.name}")
        for lang, (rel, text, line, members, typed) in FILES.items():
            shot = Path(args.screenshots) / f"vscode_{lang}_{mode}.png"
            cmd = [args.driver_node, str(ROOT / "benchmarks" / "vscode" / "drive.mjs"), "--url", f"{url}?folder={ws}",
                   "--chromium", args.chromium, "--file", rel, "--line", str(line), "--typed", typed, "--members", ",".join(members), "--trials", str(args.trials),
                   "--screenshot", str(shot)]
            t0 = time.time()
            r = subprocess.run(cmd, env=dict(env, NODE_PATH=str(Path(args.puppeteer).parent)),
                               capture_output=True, text=True, timeout=600, cwd=Path(args.puppeteer).parent.parent)
            res = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {"ok": False, "error": r.stderr[-2000:]}
            res["wall_s"] = round(time.time() - t0, 1)
            res["saved_line"] = (ws / rel).read_text().splitlines()[line - 1]
            res["accepted"] = res.get("ghost") is not None and res["saved_line"].strip() != text.splitlines()[line - 1].strip()
            res["screenshot"] = str(shot.relative_to(ROOT)) if shot.is_relative_to(ROOT) else str(shot)
            out["files"][lang] = res
            print(f"[{mode}] {lang}: ghost {res.get('ghost')!r}, saved {res['saved_line']!r}, "
                  f"{res.get('error', '')[:400]}", flush=True)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    out["markers"] = sorted(hostile_repo.fired(markers))
    out["server"] = _server_times(ud)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code-server", required=True)
    ap.add_argument("--node", required=True, help="the Node.js code-server runs on (24)")
    ap.add_argument("--driver-node", default=shutil.which("node"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--puppeteer", required=True, help="the node_modules/puppeteer-core directory")
    ap.add_argument("--vsix", default=str(ROOT / "editors" / "vscode" / "groundcode.vsix"))
    ap.add_argument("--groundcode", default=shutil.which("groundcode") or str(ROOT / ".venv" / "bin" / "groundcode"))
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--modes", default="untrusted,trusted")
    ap.add_argument("--screenshots", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--keep", help="keep the workspaces, user data and logs in this directory")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "vscode_editor.json"))
    args = ap.parse_args()
    Path(args.screenshots).mkdir(parents=True, exist_ok=True)
    results, failures = [], []
    with tempfile.TemporaryDirectory(prefix="gc-vscode-") as tmp:
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            tmp = args.keep
        for mode in args.modes.split(","):
            res = run_mode(args, mode == "trusted", Path(tmp))
            results.append(res)
            for lang, r in res["files"].items():
                if not r.get("member"):
                    failures.append(f"{mode} {lang}: the ghost text {r.get('ghost')!r} names no member ({r.get('error', '')[:200]})")
                if not r.get("accepted"):
                    failures.append(f"{mode} {lang}: Tab did not put the suggestion in the buffer ({r['saved_line']!r})")
            fired = set(res["markers"])
            if mode == "untrusted" and fired:
                failures.append(f"untrusted: the workspace's code ran: {sorted(fired)}")
            if mode == "trusted" and "venv-python" not in fired:
                failures.append("trusted: the workspace's venv interpreter never ran (the analyzer did not see it)")
            if mode == "trusted" and fired - EXPECTED_TRUSTED:
                failures.append(f"trusted: more than the venv ran: {sorted(fired - EXPECTED_TRUSTED)}")
    print(f"\n{'mode':<10}{'file':<11}{'ghost text':<32}{'key→ghost p50/p95':>18}{'server 1st token':>17}"
          f"{'server answer':>14}{'editor overhead':>16}   (ms, p50 unless said)")
    for res in results:
        for lang, r in res["files"].items():
            _pair(r, [s for s in res["server"] if s["file"].endswith(FILES[lang][0])])
            print(f"{res['mode']:<10}{lang:<11}{(r.get('ghost') or '-')[:30]!s:<32}"
                  f"{str(r['key_to_ghost_p50_ms']) + ' / ' + str(r['key_to_ghost_p95_ms']):>18}"
                  f"{str(r['server_first_token_p50_ms']):>17}{str(r['server_answer_p50_ms']):>14}"
                  f"{str(r['editor_overhead_p50_ms']):>16}")
        print(f"{res['mode']:<10}markers: {res['markers'] or 'none'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"results": results, "failures": failures, "model": args.model, "trials": args.trials,
                               "loadavg": os.getloadavg(), "cpus": os.cpu_count()}, indent=1) + "\n")
    print(f"wrote {out}")
    for f in failures:
        print("FAILED:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
