"""Success rate's static check: pylint on a sample spliced into a temporary copy of its repository.

A job is (repository dir, file path inside it, the spliced file text, the function's first and
last line). Each job gets its own overlay directory: the repository's .py files as symlinks, the
spliced file as a real file — the repository itself is never written. pylint runs in a few
long-lived worker subprocesses (`python -m groundcode.evaluation.lint JOBS OUT`), one per share of
the repositories, so its start-up and the inference of imported modules are paid once per worker,
not per sample. Only the syntax-error, no-member and undefined-variable checks are on, the
no-member checker only visits attributes inside the job's lines (it is the costly one), and
modules over PRUNE_OVER_LINES lines are pruned around the scored function first (prune.py). After each
job the worker forgets the spliced module, so the next sample of the same file is parsed afresh.
A job succeeds when the file has no syntax error and the function's lines have no no-member /
undefined-variable message. The repository's virtual environment (its .venv: a recipe's pinned
wheels, evaluation/bench_env.py) is left out of the overlays and put after the worker's own
sys.path instead, with the repository's own roots (its directory, `src/`) before it, so the
judge sees the packages the repository imports and its namespace packages, as the analyzer does.
The only module that imports pylint; generated code is parsed, never run.
Not here: splicing (scoring.py). Test: tests/test_bench_lint.py; speed: benchmarks/bench_lint_speed.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

CALL_CHECKS = ("no-value-for-parameter", "too-many-function-args", "unexpected-keyword-arg",
               "redundant-keyword-arg", "missing-kwoa")   # a call that does not fit its callee
CHECKS = ("syntax-error", "no-member", "undefined-variable", "import-error", "no-name-in-module", *CALL_CHECKS)
# the checks success rate counts (ToolGen's); the import checks only feed the hallucination
# counts by kind (scoring.py: an import the reference body does not have that does not resolve),
# and so do the call checks (issue 41: the call kind's hallucinated parameters and arity)
_MIRROR_SUFFIXES = (".py", ".pyi")


@dataclass
class LintJob:
    repo_dir: Path
    path: str            # relative to repo_dir (posix)
    text: str            # the whole spliced file
    first_line: int      # the generated function's lines (1-based, inclusive)
    last_line: int


@dataclass
class LintResult:
    success: bool
    syntax_error: bool = False
    no_member: int = 0
    undefined_variable: int = 0
    import_error: int = 0                      # import-error / no-name-in-module in the lines
    call_error: int = 0                        # CALL_CHECKS in the lines (never a failure)
    crashed: bool = False                      # pylint gave no verdict for this file
    messages: list = field(default_factory=list)


def _mirror(repo_dir: Path, dest: Path, files: list[str]) -> None:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(repo_dir / rel, target)


def overlay(repo_dir: Path, rel: str, text: str, root: Path, cache: dict | None = None) -> Path:
    """A copy of the repository under `root` made of links to its .py/.pyi files, with `rel`
    written as `text` (the repository itself is never written): the path of that file."""
    files = [f for f in _repo_files(Path(repo_dir), {} if cache is None else cache) if f != rel]
    _mirror(Path(repo_dir), root, files)
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def _repo_files(repo_dir: Path, cache: dict) -> list[str]:
    """The repository's .py/.pyi files, without its virtual environment's (on the path instead)."""
    key = str(repo_dir)
    if key not in cache:
        from ..trust import find_venv
        venv = find_venv(repo_dir)
        cache[key] = sorted(p.relative_to(repo_dir).as_posix() for p in repo_dir.rglob("*")
                            if p.suffix in _MIRROR_SUFFIXES and p.is_file()
                            and not (venv is not None and p.is_relative_to(venv)))
    return cache[key]


def _shares(jobs: list[LintJob], workers: int) -> list[list[int]]:
    """Job indices split over workers, whole repositories together (their imports are cached)."""
    by_repo: dict[str, list[int]] = {}
    for i, j in enumerate(jobs):
        by_repo.setdefault(str(j.repo_dir), []).append(i)
    shares: list[list[int]] = [[] for _ in range(max(1, workers))]
    for idx in sorted(by_repo.values(), key=len, reverse=True):
        min(shares, key=len).extend(idx)
    # one repository bigger than the rest would leave a worker idle: split the largest share
    shares = [s for s in shares if s]
    while len(shares) < workers and max(map(len, shares), default=0) > 1:
        big = max(shares, key=len)
        shares.remove(big)
        shares += [big[: len(big) // 2], big[len(big) // 2:]]
    return shares


def _judge_path(repo_dir: Path, cache: dict) -> tuple[str, ...]:
    """What the worker puts after its own sys.path for a repository, as the names monitor's
    module index has it: the repository's own roots (its directory, `src/` where it has one: a
    namespace package such as `svg/charts/`, no `svg/__init__`, is imported from there, not from
    the package directory pylint puts first), then its venv's site-packages read as files
    (evaluation/bench_env.py)."""
    key = ("path", str(repo_dir))
    if key not in cache:
        from ..trust import search_paths
        roots = tuple(str(d) for d in (repo_dir, repo_dir / "src") if d.is_dir())
        cache[key] = roots + search_paths(repo_dir)
    return cache[key]


PRUNE_OVER_LINES = 1000   # modules longer than this are pruned around the scored function (prune.py)


def check(jobs: list[LintJob], *, workers: int = 2, per_job_timeout: float = 20.0,
          prune_over_lines: int = PRUNE_OVER_LINES) -> list[LintResult]:
    """Lint every job; results in job order. A worker that dies or times out marks its
    unfinished jobs `crashed` (not successful). `prune_over_lines=0` never prunes."""
    from .prune import prune
    results: list[LintResult | None] = [None] * len(jobs)
    file_cache: dict = {}
    with tempfile.TemporaryDirectory(prefix="groundcode-lint-") as tmp:
        specs = []
        for i, j in enumerate(jobs):
            text = j.text
            if prune_over_lines and text.count("\n") > prune_over_lines:
                text = prune(text, j.first_line, j.last_line)
            target = overlay(Path(j.repo_dir), j.path, text, Path(tmp) / f"j{i}", file_cache)
            specs.append({"i": i, "path": str(target), "first": j.first_line, "last": j.last_line,
                          "paths": list(_judge_path(Path(j.repo_dir), file_cache))})

        def one(w: int, share: list[int]) -> None:
            job_file, out_file = Path(tmp) / f"w{w}.json", Path(tmp) / f"w{w}.out.jsonl"
            job_file.write_text(json.dumps([specs[i] for i in share]))
            cmd = [sys.executable, "-m", "groundcode.evaluation.lint", str(job_file), str(out_file)]
            try:
                subprocess.run(cmd, capture_output=True, text=True, timeout=30 + per_job_timeout * len(share),
                               env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            except subprocess.TimeoutExpired:
                pass
            if out_file.exists():
                for line in out_file.read_text().splitlines():
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    i = rec["i"]
                    results[i] = verdict(rec["messages"], jobs[i].first_line, jobs[i].last_line)

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(lambda a: one(*a), enumerate(_shares(jobs, workers))))
    return [r if r is not None else LintResult(success=False, crashed=True) for r in results]


def verdict(messages: list[dict], first_line: int, last_line: int) -> LintResult:
    """Success unless a syntax error anywhere or no-member/undefined-variable in [first, last]
    (import-error/no-name-in-module and the call checks there are counted and listed, never a
    failure).
    A pylint crash or fatal message (F: `fatal`, `astroid-error`, `parse-error`, ...) is no
    verdict: a failure, flagged `crashed` so that it is reported apart from lint findings."""
    r = LintResult(success=True)
    for m in messages:
        sym, line = m.get("symbol"), int(m.get("line") or 0)
        if sym == "pylint-crash" or m.get("type") == "fatal" or str(m.get("message-id", "")).startswith("F"):
            r.crashed = True
        elif sym == "syntax-error":
            r.syntax_error = True
        elif sym in ("no-member", "undefined-variable") and first_line <= line <= last_line:
            if sym == "no-member":
                r.no_member += 1
            else:
                r.undefined_variable += 1
        elif sym in ("import-error", "no-name-in-module") and first_line <= line <= last_line:
            r.import_error += 1
        elif sym in CALL_CHECKS and first_line <= line <= last_line:
            r.call_error += 1
        else:
            continue
        r.messages.append(f"{line}: {sym}: {m.get('message', '')}")
    r.success = not (r.syntax_error or r.no_member or r.undefined_variable or r.crashed)
    return r


# ---------------------------------------------------------------- worker process

_RANGE = [0, 0]


def _patch_no_member_range() -> None:
    """Make pylint's no-member check (and its call checks) visit only attributes (calls) on the job's lines (inference of every
    attribute in a large module is what makes pylint slow; the other lines are not scored)."""
    from pylint.checkers.typecheck import TypeChecker
    if getattr(TypeChecker, "_groundcode_ranged", False):
        return
    original = TypeChecker.visit_attribute

    def visit_attribute(self, node):
        if _RANGE[0] <= (node.lineno or 0) <= _RANGE[1]:
            return original(self, node)
        return None

    original_call = TypeChecker.visit_call

    def visit_call(self, node):             # the call checks likewise
        if _RANGE[0] <= (node.lineno or 0) <= _RANGE[1]:
            return original_call(self, node)
        return None

    TypeChecker.visit_attribute = visit_attribute
    TypeChecker.visit_call = visit_call
    TypeChecker._groundcode_ranged = True


def _forget(path: str) -> None:
    """Drop the spliced module from astroid's caches so another sample of it is parsed afresh."""
    import astroid
    real = os.path.realpath(path)
    cache = astroid.MANAGER.astroid_cache
    for name in [n for n, m in cache.items() if getattr(m, "file", None) and os.path.realpath(m.file) == real]:
        cache.pop(name, None)
    # module-name -> file lookups that point at the spliced file (another overlay would reuse them)
    lookups = getattr(astroid.MANAGER, "_mod_file_cache", {})
    for key in [k for k, v in lookups.items()
                if isinstance(getattr(v, "location", None), str) and os.path.realpath(v.location) == real]:
        lookups.pop(key, None)


def worker(job_file: str, out_file: str) -> None:
    import io

    from pylint.lint import Run
    from pylint.reporters import JSONReporter
    _patch_no_member_range()
    args = ["--disable=all", f"--enable={','.join(CHECKS)}", "--score=n", "--persistent=n",
            "--rcfile=/dev/null", "--unsafe-load-any-extension=n"]
    base, extra = list(sys.path), []
    with open(out_file, "a", encoding="utf-8") as out:
        for spec in json.loads(Path(job_file).read_text()):
            _RANGE[:] = [spec["first"], spec["last"]]
            if spec.get("paths", []) != extra:   # another repository: its roots and venv after our own path
                import astroid
                extra = spec.get("paths", [])
                sys.path[:] = base + extra
                astroid.MANAGER.clear_cache()
            t0 = time.perf_counter()
            buf = io.StringIO()
            try:
                Run([*args, spec["path"]], reporter=JSONReporter(buf), exit=False)
                msgs = json.loads(buf.getvalue() or "[]")
            except Exception as e:   # astroid/pylint crash on odd code: report it, go on
                msgs = [{"symbol": "pylint-crash", "line": 0, "message": repr(e)[:200]}]
            finally:
                _forget(spec["path"])
            out.write(json.dumps({"i": spec["i"], "messages": msgs, "s": round(time.perf_counter() - t0, 3)}) + "\n")
            out.flush()


if __name__ == "__main__":
    worker(sys.argv[1], sys.argv[2])
