"""Compile rate for the TypeScript benchmark: a task's completion put in place (a function task's
body, or the rest of a dereference task's line) and the package checked by its compiler in the
sandbox (tsc_judge.py). Only errors the reference does not have count: the package's errors with
the reference in place are the baseline, compared as a multiset of (file, code, message) (line
numbers shift with a body's length).

    row = score_task(task, completion, baselines)
    row["compiles"], row["new_errors"], row["codes"]     # {"2339": 1, ...}
    row["quoted"]                                        # [["2304", "name"], ...]: each new error's
                                                         # code and the first name its message quotes

Errors worth naming: TS2339/TS2551 (no such member), TS2304 (no such name), TS2554/TS2345 (a
call's arguments). Test: tests/test_tsc_judge.py.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from .tsc_judge import judge


def put_in_place(task: dict, text: str, completion: str) -> str:
    if task["kind"] == "function":
        return text[: task["body_start"]] + completion + text[task["body_end"]:]
    eol = text.find("\n", task["offset"])
    return text[: task["offset"]] + completion + (text[eol:] if eol >= 0 else "")


def _key(d) -> tuple:
    return (d.path, d.code, d.message)


def baseline(package: Path) -> Counter:
    """The package's errors as it ships (the reference in place everywhere)."""
    diags, _ = judge(package)
    return Counter(_key(d) for d in diags)


def score_task(task: dict, completion: str, baselines: dict) -> dict:
    """`baselines`: package dir -> Counter (filled on first use)."""
    pkg = Path(task["repo_dir"])
    if str(pkg) not in baselines:
        baselines[str(pkg)] = baseline(pkg)
    text = (pkg / task["path"]).read_text(encoding="utf-8")
    diags, _ = judge(pkg, {task["path"]: put_in_place(task, text, completion)})
    new = Counter(_key(d) for d in diags) - baselines[str(pkg)]
    codes = Counter()
    quoted = []
    for (_, code, message), n in new.items():
        codes[str(code)] += n
        q = _QUOTED.search(message)
        quoted += [[str(code), q.group(1) if q else ""]] * n
    return {"task_id": task["task_id"], "kind": task["kind"], "compiles": not new,
            "new_errors": sum(new.values()), "codes": dict(codes), "quoted": quoted}


_QUOTED = re.compile(r"['\"]([^'\"]+)['\"]")     # the name or module an error is about: its first quote
