"""Import messages checked by importing: does the import pylint calls unresolved resolve in the
repository's own environment when Python runs it?

pylint reads modules as files, so a name a module makes at import time is invisible to it:
typing_extensions re-exports typing's `Optional`, `List`, `Dict` through `globals().update(...)`,
and pylint says `no-name-in-module` for an import that works (session 35: every import
"hallucination" the names monitor left on the standing recipe was one of these). The scorer
asks this module about each `import-error` / `no-name-in-module` message in a completion's
lines; a message whose import succeeds when run is not counted as a hallucination (the row's
`import_ok`; the message stays in its lint).

The imports run in the sandbox (execution.py: bubblewrap, no network, read-only view, limits),
one program per repository, never in this process: importing a package runs its code. The
program sees the standard library, the repository's roots and its virtual environment's
site-packages (lint._judge_path: what the names monitor's module index and pylint read), not
groundcode's own environment. Relative imports and messages of other shapes are left as pylint
said. Without bubblewrap nothing is checked (`available()` False): pylint's verdict stands.

    ok = confirm(repo_dir, [("typing_extensions", "Optional"), ("numpy", None)])   # [True, True]
Test: tests/test_import_check.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

_NO_NAME = re.compile(r"No name '([\w.]+)' in module '([\w.]+)'")
_UNABLE = re.compile(r"Unable to import '([\w.]+)'")
SYMBOLS = ("import-error", "no-name-in-module")

_PROGRAM = r"""
import importlib, json, sys
sys.path[:] = [p for p in sys.path if p and "site-packages" not in p and "dist-packages" not in p]
sys.path[:0] = PATHS
out = []
for mod, name in PAIRS:
    try:
        m = importlib.import_module(mod)
        ok = name is None or hasattr(m, name)
        if not ok:
            try:
                importlib.import_module(mod + "." + name)
                ok = True
            except BaseException:
                ok = False
    except BaseException:
        ok = False
    out.append(ok)
print("IMPORT-CHECK " + json.dumps(out))
"""


def import_of(message: str) -> tuple | None:
    """(module, name or None) a pylint message `"LINE: SYMBOL: TEXT"` says does not resolve;
    None for any other message (a relative module is never absolute in pylint's text: left)."""
    parts = message.split(": ", 2)
    if len(parts) < 3 or parts[1] not in SYMBOLS:
        return None
    m = _NO_NAME.search(parts[2]) if parts[1] == "no-name-in-module" else _UNABLE.search(parts[2])
    if m is None:
        return None
    return (m.group(2), m.group(1)) if parts[1] == "no-name-in-module" else (m.group(1), None)


def available() -> bool:
    from .execution import bwrap_path
    return bwrap_path() is not None


def confirm(repo_dir: Path, pairs: list[tuple], cache: dict | None = None) -> list[bool]:
    """For each (module, name or None): does `from module import name` (`import module`) succeed
    in the repository's environment? One sandboxed program for all of them; a program that
    fails or times out confirms nothing (all False)."""
    if not pairs:
        return []
    from .execution import SandboxConfig, run_program
    from .lint import _judge_path
    paths = list(_judge_path(Path(repo_dir), {} if cache is None else cache))
    src = f"PATHS = {paths!r}\nPAIRS = {[tuple(p) for p in pairs]!r}\n" + _PROGRAM
    res = run_program(src, SandboxConfig(wall_s=60.0, cpu_s=60, memory_mb=2048, ro_paths=tuple(paths)))
    for line in reversed(res.stdout.splitlines()):
        if line.startswith("IMPORT-CHECK "):
            got = json.loads(line[len("IMPORT-CHECK "):])
            if len(got) == len(pairs):
                return [bool(x) for x in got]
    return [False] * len(pairs)


def confirmed_messages(jobs: list[tuple[Path, list[str]]]) -> list[set[str]]:
    """For each (repo_dir, messages): the import messages whose import succeeds when run. One
    sandboxed program per repository for every message of its jobs."""
    out: list[set[str]] = [set() for _ in jobs]
    if not available():
        return out
    by_repo: dict[str, list[tuple[int, str, tuple]]] = {}
    for i, (repo, messages) in enumerate(jobs):
        for msg in messages:
            pair = import_of(msg)
            if pair is not None:
                by_repo.setdefault(str(repo), []).append((i, msg, pair))
    cache: dict = {}
    for repo, items in by_repo.items():
        pairs = sorted({p for _, _, p in items}, key=lambda p: (p[0], p[1] or ""))
        ok = dict(zip(pairs, confirm(Path(repo), pairs, cache)))
        for i, msg, pair in items:
            if ok.get(pair):
                out[i].add(msg)
    return out
