"""DS-1000 (Lai et al. 2022): load the problems, build the official test programs, execute samples
in the sandbox, and aggregate pass@k by library and perturbation type.

Records of the official JSONL(.gz): prompt, reference_code, code_context, metadata {problem_id,
library, perturbation_type, ...}. A sample's code is cut as the official post-processing does
(`extract_code`: up to `</code>`, a closing fence or `END SOLUTION`), then the test program is
exactly the official harness's:

    code_context + "\\n" + f"code = {code!r}\\n" + "test_execution(code)\\n"
                 + ("test_string(code)\\n" if "test_string(" in code_context else "\\n")

judged when executed here (execution.judged_program): the harness's `exec(code, test_env)` runs
the sample in a forked child that holds none of the harness's descriptors and cannot read its
memory; what the sample left in test_env comes back through an allow-listed unpickler, and the
harness prints the run's nonce after its tests, so an early exit, a read of the nonce's pipe or
patched assertion helpers in the sample do not pass. It runs
in a fresh sandboxed process (evaluation/execution.py; 120 s as upstream). A problem
whose modules (its library, or anything its test imports, e.g. seaborn or tensorflow) the
sandbox's interpreter lacks is skipped and counted with the missing names.

Not here: generation (ds1000_run.py), the sandbox itself. Test: tests/test_ds1000.py.
"""
from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GroundcodeError
from .execution import ExecutionResult, SandboxConfig, judged_program, new_nonce, run_many
from ..jsonl import read_jsonl
from .metrics import pass_at_k
from .. import pyparse

LIBRARY_MODULES = {"Pandas": "pandas", "Numpy": "numpy", "Matplotlib": "matplotlib", "Sklearn": "sklearn",
                   "Scipy": "scipy", "Pytorch": "torch", "Tensorflow": "tensorflow"}
SANDBOX_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
STOP_STRINGS = ("</code>", "# SOLUTION END", "\nEND SOLUTION", "```")


@dataclass
class Problem:
    task_id: str                   # "ds1000/<problem_id>"
    problem_id: int
    library: str
    perturbation: str              # Origin | Surface | Semantic | Difficult-Rewrite
    prompt: str
    reference: str
    code_context: str
    modules: tuple = ()            # top-level modules the test program imports
    origin_id: int | None = None
    meta: dict = field(default_factory=dict)


def _modules(problem: dict) -> tuple:
    """Top-level modules imported by the test program (code_context, its exec_context string)."""
    src = problem["code_context"]
    mods = set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", src, re.M))
    try:
        for node in ast.walk(pyparse.parse(src)):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods.add(node.module.split(".")[0])
    except SyntaxError:
        pass
    lib = LIBRARY_MODULES.get(problem["metadata"].get("library", ""))
    if lib:
        mods.add(lib)
    return tuple(sorted(mods))


def load(source: str | Path) -> list[Problem]:
    """Problems from the official JSONL(.gz) path, or an HF dataset id (needs `datasets` and a hub)."""
    p = Path(source)
    if p.exists():
        records = list(read_jsonl(p))
    else:
        if "/" not in str(source) or str(source).startswith((".", "/")):
            raise GroundcodeError(f"DS-1000 data not found: {source} (a .jsonl.gz path, or an HF dataset id)")
        try:
            from datasets import load_dataset  # optional; only when a hub is reachable
        except ImportError:
            raise GroundcodeError(f"{source} is not a file and `datasets` is not installed to fetch it") from None
        try:
            records = [dict(r) for r in load_dataset(str(source), split="test")]
        except Exception as e:  # offline, unknown id, ...
            raise GroundcodeError(f"cannot load the dataset {source}: {str(e)[:200]}") from None
    out = []
    for r in records:
        try:
            m = r["metadata"]
            out.append(Problem(task_id=f"ds1000/{m['problem_id']}", problem_id=int(m["problem_id"]),
                               library=m["library"], perturbation=m["perturbation_type"], prompt=r["prompt"],
                               reference=r["reference_code"], code_context=r["code_context"],
                               modules=_modules(r), origin_id=m.get("perturbation_origin_id"), meta=m))
        except (KeyError, TypeError) as e:
            raise GroundcodeError(f"{source}: not a DS-1000 record (missing {e})") from None
    if not out:
        raise GroundcodeError(f"{source}: no problems")
    return sorted(out, key=lambda q: q.problem_id)


def installed_modules(modules, python: str | None = None) -> set[str]:
    """Which of `modules` the interpreter that will run the tests can import (found, not imported)."""
    mods = sorted(set(modules))
    probe = ("import importlib.util, json, sys\n"
             "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None]))")
    r = subprocess.run([python or sys.executable, "-c", probe, *mods], capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        raise GroundcodeError(f"cannot probe the interpreter {python or sys.executable}: {r.stderr.strip()[-200:]}")
    return set(json.loads(r.stdout))


def split_runnable(problems: list[Problem], python: str | None = None) -> tuple[list[Problem], dict]:
    """(runnable problems, {task_id: "missing: a, b"}) for the interpreter's installed modules."""
    have = installed_modules({m for q in problems for m in q.modules}, python)
    run, skipped = [], {}
    for q in problems:
        missing = [m for m in q.modules if m not in have]
        if missing:
            skipped[q.task_id] = "missing: " + ", ".join(missing)
        else:
            run.append(q)
    return run, skipped


def select(problems: list[Problem], libraries: tuple = (), per_library: int | None = None,
           seed: int = 0, perturbations: tuple = ()) -> list[Problem]:
    """A seeded subset: at most `per_library` problems of each library (all when None)."""
    libs = {x.lower() for x in libraries}
    pool = [q for q in problems if (not libs or q.library.lower() in libs)
            and (not perturbations or q.perturbation in perturbations)]
    if per_library is None:
        return pool
    by_lib: dict[str, list[Problem]] = defaultdict(list)
    for q in pool:
        by_lib[q.library].append(q)
    picked = []
    for lib in sorted(by_lib):
        group = by_lib[lib]
        picked += random.Random(f"{seed}:{lib}").sample(group, min(per_library, len(group)))
    return sorted(picked, key=lambda q: q.problem_id)


def extract_code(completion: str) -> str:
    """The code of a completion, as the official post-processing cuts it."""
    code = completion.split("</code>")[0]
    code = code.replace("```python", "")
    code = code.split("```")[0]
    code = code.split("\nEND SOLUTION")[0]
    code = code.split("# SOLUTION END")[0]
    return code.replace("<code>", "")


def test_program(problem: Problem, code: str, nonce: bool = False) -> str:
    """The official DS-1000 test program for one sample's code; with `nonce` (as executed here),
    judged: the harness's `exec(code, test_env)` runs the sample in a child out of the verdict's
    reach, and the harness prints the run's nonce after its tests (execution.judged_program)."""
    ctx = problem.code_context
    prog = (ctx + "\n" + f"code = {code!r}\n" + "test_execution(code)\n"
            + ("test_string(code)\n" if "test_string(" in ctx else "\n"))
    return judged_program(prog) if nonce else prog


def sandbox_config(**overrides) -> SandboxConfig:
    """Upstream's 120 s per program; 4 GiB for the whole tree (torch or tensorflow and a test's data),
    8 GiB of address space per process (their imports map far more than they touch), 128
    processes + threads (tensorflow's thread pools)."""
    base = dict(wall_s=120.0, cpu_s=120, memory_mb=4096, address_mb=8192, procs=128, tmp_mb=256)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return SandboxConfig(**base)


def execute(problems: list[Problem], completions: dict[str, list[str]], config: SandboxConfig,
            workers: int = 2, progress=None) -> list[dict]:
    """Run every sample of every problem; one result record per problem, keyed by task_id."""
    jobs = [(q, i, extract_code(c)) for q in problems for i, c in enumerate(completions.get(q.task_id, []))]
    nonces = [new_nonce() for _ in jobs]
    results: list[ExecutionResult] = run_many([test_program(q, code, True) for q, _, code in jobs],
                                              config, workers=workers, env=SANDBOX_ENV, progress=progress,
                                              nonces=nonces)
    per: dict[str, dict] = {}
    for (q, i, code), r in zip(jobs, results):
        rec = per.setdefault(q.task_id, {"task_id": q.task_id, "library": q.library,
                                         "perturbation": q.perturbation, "passed": [], "reasons": [],
                                         "seconds": [], "timed_out": []})
        rec["passed"].append(r.passed)
        rec["reasons"].append(r.reason)
        rec["seconds"].append(r.seconds)
        rec["timed_out"].append(r.timed_out)
    return [per[q.task_id] for q in problems if q.task_id in per]


def summarize(results: list[dict], skipped: dict | None = None, ks=(1, 5)) -> dict:
    """pass@k overall, by library and by perturbation type (problems with n >= k only)."""
    def agg(rows):
        out = {"problems": len(rows), "samples": sum(len(r["passed"]) for r in rows),
               "solved_any": sum(any(r["passed"]) for r in rows)}
        for k in ks:
            vals = [pass_at_k(len(r["passed"]), sum(r["passed"]), k) for r in rows if len(r["passed"]) >= k]
            out[f"pass@{k}"] = round(sum(vals) / len(vals), 4) if vals else None
        return out
    by_lib, by_pert = defaultdict(list), defaultdict(list)
    for r in results:
        by_lib[r["library"]].append(r)
        by_pert[r["perturbation"]].append(r)
    skipped = skipped or {}
    return {"overall": agg(results),
            "by_library": {k: agg(v) for k, v in sorted(by_lib.items())},
            "by_perturbation": {k: agg(v) for k, v in sorted(by_pert.items())},
            "skipped": len(skipped),
            "skipped_reasons": dict(sorted(tally(skipped.values()).items()))}


def tally(values) -> dict:
    """{value: how many times it occurs}."""
    c: dict = defaultdict(int)
    for v in values:
        c[v] += 1
    return c


def failure_reasons(results: list[dict], top: int = 5) -> dict:
    """{library: {reason: count}} over failed samples; reasons shortened to their error type."""
    out: dict = defaultdict(lambda: defaultdict(int))
    for r in results:
        for ok, why in zip(r["passed"], r["reasons"]):
            if not ok:
                out[r["library"]][_short(why)] += 1
    return {lib: dict(sorted(v.items(), key=lambda kv: -kv[1])[:top]) for lib, v in sorted(out.items())}


def _short(reason: str) -> str:
    m = re.match(r"exit \d+: (\w+(?:\.\w+)*)(?::\s*(.*))?", reason)
    if not m:
        return reason
    err, msg = m.group(1), (m.group(2) or "")
    return f"{err}: {msg[:80]}" if msg and err != "AssertionError" else err


def env_dir() -> Path:
    """Where recipes/ds1000_env.sh builds the test interpreter (the user cache)."""
    from ..cache import cache_dir
    return cache_dir() / "ds1000-env"


def default_python() -> str:
    """The DS-1000 environment's interpreter when built (upstream's library versions), else this one."""
    p = env_dir() / "bin" / "python"
    return str(p) if p.exists() else sys.executable


def library_versions(python: str | None = None) -> dict:
    """Versions of DS-1000's libraries in the interpreter that runs the tests (None = missing)."""
    probe = ("import importlib.metadata as m, json\n"
             "names = ['numpy', 'pandas', 'scipy', 'scikit-learn', 'matplotlib', 'seaborn', 'torch', 'tensorflow']\n"
             "def v(n):\n"
             "    try:\n        return m.version(n)\n"
             "    except m.PackageNotFoundError:\n        return None\n"
             "print(json.dumps({n: v(n) for n in names}))")
    r = subprocess.run([python or sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def execute_resumable(problems: list[Problem], completions: dict[str, list[str]], results_path: Path,
                      config: str, sandbox: SandboxConfig, workers: int = 2, progress=None,
                      chunk: int = 8) -> list[dict]:
    """`execute` in chunks, appending {config, ...} records to `results_path` as they finish;
    problems already there for `config` are not run again. Returns this config's records."""
    from ..jsonl import append_jsonl
    have = {r["task_id"]: r for r in read_jsonl(results_path) if r.get("config") == config} \
        if Path(results_path).exists() else {}
    todo = [q for q in problems if q.task_id not in have and completions.get(q.task_id)]
    if progress:
        progress(sum(len(completions.get(q.task_id, [])) for q in problems if q.task_id in have))
    for k in range(0, len(todo), chunk):
        for rec in execute(todo[k:k + chunk], completions, sandbox, workers=workers, progress=progress):
            rec["config"] = config
            append_jsonl(results_path, rec)
            have[rec["task_id"]] = rec
    return [have[q.task_id] for q in problems if q.task_id in have]


def markdown_table(summaries: dict, key: str = "by_library") -> str:
    """pass@1 / pass@5 per library (rows) and configuration (columns), with problem counts."""
    configs = list(summaries)
    groups = sorted({g for s in summaries.values() for g in s[key]})
    head = "| " + key.split("_", 1)[1] + " | problems | " + " | ".join(
        f"{c} pass@1 | {c} pass@5" for c in configs) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(configs))]

    def cell(v):
        return "-" if v is None else f"{v:.3f}"
    for g in groups + ["overall"]:
        row = [summaries[c]["overall"] if g == "overall" else summaries[c][key].get(g, {}) for c in configs]
        n = max((r.get("problems", 0) for r in row), default=0)
        lines.append(f"| {g} | {n} | " + " | ".join(f"{cell(r.get('pass@1'))} | {cell(r.get('pass@5'))}"
                                                 for r in row) + " |")
    return "\n".join(lines)
