"""The judges check-first asks (check_first.py): a completion put in its file and checked whole.

    typescript_checker(package)   the package's compiler (`tsc --noEmit`, its tsconfig, in the
                                  sandbox: evaluation/tsc_judge.py); errors the package already
                                  has with its own text in place are not the completion's
    python_checker(repo)          pylint (evaluation/lint.py: syntax, undefined names, members,
                                  imports, calls that do not fit), on the completion's lines

Both read the repository and never run it. Each returns `Checker`: (context, completion) ->
[Problem] with offsets in the completion. `checker_for(ctx)`: the one for the file's language.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from .check_first import Checker, Problem
from .context import CodeContext
from .errors import GroundcodeError


def _line_starts(text: str) -> list[int]:
    out = [0]
    out += [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return out


def typescript_checker(package: Path, tsconfig: str = "tsconfig.json") -> Checker:
    from .evaluation.tsc_judge import judge
    package = Path(package).resolve()
    baselines: dict = {}

    def check(ctx: CodeContext, completion: str) -> list:
        rel = Path(ctx.path).resolve().relative_to(package).as_posix()
        if rel not in baselines:       # the file as it is: errors that are not the completion's
            text0 = Path(ctx.path).read_text(encoding="utf-8") if Path(ctx.path).exists() else None
            diags0, _ = judge(package, {rel: text0} if text0 is not None else None, tsconfig=tsconfig)
            baselines[rel] = Counter((d.path, d.code, d.message) for d in diags0)
        text = ctx.before + completion + ctx.after
        diags, _ = judge(package, {rel: text}, tsconfig=tsconfig)
        base, starts = Counter(baselines[rel]), _line_starts(text)
        lo, out = len(ctx.before), []
        for d in diags:
            key = (d.path, d.code, d.message)
            if base[key] > 0:
                base[key] -= 1
                continue
            if d.path != rel or not 0 < d.line <= len(starts):
                continue
            at = starts[d.line - 1] + max(0, d.col - 1) - lo
            if 0 <= at <= len(completion):
                out.append(Problem(at, f"TS{d.code}", d.message))
        return out

    return check


def python_checker(repo: Path) -> Checker:
    from .evaluation.lint import LintJob, check as lint
    repo = Path(repo).resolve()

    def check(ctx: CodeContext, completion: str) -> list:
        rel = Path(ctx.path).resolve().relative_to(repo).as_posix()
        text = ctx.before + completion + ctx.after
        first = ctx.before.count("\n") + 1
        last = first + completion.count("\n")
        res = lint([LintJob(repo, rel, text, first, last)], workers=1)[0]
        starts, lo, out = _line_starts(text), len(ctx.before), []
        for m in res.messages:
            line, sym, msg = (m.split(": ", 2) + ["", ""])[:3]
            if not line.isdigit() or not 0 < int(line) <= len(starts):
                continue
            at = max(0, starts[int(line) - 1] - lo)
            if at <= len(completion):
                out.append(Problem(at, sym, msg))
        return out

    return check


def checker_for(ctx: CodeContext) -> Checker:
    """pylint for a Python file; for TypeScript the compiler on the nearest tsconfig.json above
    the file inside the repository (the package as its configuration says)."""
    if ctx.path.suffix == ".py":
        return python_checker(ctx.repo)
    if ctx.path.suffix in (".ts", ".tsx", ".mts", ".cts"):
        repo = Path(ctx.repo).resolve()
        for d in Path(ctx.path).resolve().parents:
            if (d / "tsconfig.json").is_file():
                return typescript_checker(d)
            if d == repo:
                break
        raise GroundcodeError(f"--check-first: no tsconfig.json above {ctx.path} in {ctx.repo} "
                              "(the compiler checks the package as its configuration says)")
    raise GroundcodeError(f"--check-first checks Python and TypeScript files, not {ctx.path.suffix or ctx.path.name}")
