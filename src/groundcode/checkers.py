"""The judges check-first asks (check_first.py): a completion put in its file and checked whole.

    typescript_checker(package)   the package's compiler (`tsc --noEmit`, its tsconfig, in the
                                  sandbox: evaluation/tsc_judge.py); errors the package already
                                  has with its own text in place are not the completion's, every
                                  other one is (one past the body, e.g. a brace left open, counts
                                  at the body's end)
    python_checker(repo)          pylint (evaluation/lint.py: syntax, undefined names, members,
                                  imports, calls that do not fit), on the completion's lines
    ty_checker(repo)              ty, the pinned type checker (`groundcode analyzers install ty`):
                                  the same kinds (names, members, imports, arguments, syntax) in
                                  milliseconds, never type errors; errors the file already has do
                                  not count

Both read the repository and never run it. Each returns `Checker`: (context, completion) ->
[Problem] with offsets in the completion. `checker_for(ctx)`: the one for the file's language.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from .check_first import Checker, Problem
from .context import CodeContext
from .errors import GroundcodeError


def _line_starts(text: str) -> list[int]:
    out = [0]
    out += [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return out


def _placed(at: int, completion: str) -> int:
    """A new error's offset in the completion: one before it counts at its start, one after it
    (a brace the completion left open, a name it broke below) at its end: every error the file
    did not have is the completion's, wherever the checker reports it."""
    return min(max(at, 0), len(completion))


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
                at = len(completion)                  # another file, or past the end
            else:
                at = starts[d.line - 1] + max(0, d.col - 1) - lo
            out.append(Problem(_placed(at, completion), f"TS{d.code}", d.message))
        return out

    check.name = "tsc"
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

    check.name = "pylint"
    return check


# ty's rules that name a hallucination (a name, member, module or argument that does not exist,
# a call that does not fit) or unreadable code; its type errors are left to the compiler's users
TY_RULES = frozenset({"unresolved-reference", "missing-attribute", "unresolved-attribute", "import-not-found",
                      "unresolved-import", "missing-argument", "unknown-argument",
                      "too-many-positional-arguments", "parameter-already-assigned", "invalid-syntax"})
_TY_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?:error|warning)\[(?P<rule>[\w-]+)\] (?P<msg>.*)$")


def ty_checker(repo: Path, python: str | None = None) -> Checker:
    """ty on a linked copy of the repository with the completion in place (nothing written to
    the repository; ty reads files, runs nothing): TY_RULES in the completion that the file
    without it does not have. `python`: the environment ty reads installed packages from (its
    `--python`; default: groundcode's own)."""
    from .analysis.lsp_servers import installed
    from .evaluation.lint import overlay
    exe = installed("ty")
    if exe is None:
        raise GroundcodeError("the ty checker needs ty: run `groundcode analyzers install ty`")
    repo = Path(repo).resolve()
    env = python or sys.prefix
    files: dict = {}
    baselines: dict = {}

    def run(rel: str, text: str) -> list:
        with tempfile.TemporaryDirectory(prefix="groundcode-ty-") as tmp:
            overlay(repo, rel, text, Path(tmp), files)
            p = subprocess.run([str(exe), "check", "--output-format", "concise", "--python", env,
                                "--project", tmp, rel], cwd=tmp, capture_output=True, text=True, timeout=120)
        out = []
        for line in p.stdout.splitlines():
            m = _TY_LINE.match(line.strip())
            if m and m["rule"] in TY_RULES and Path(m["path"]).as_posix() == rel:
                out.append((int(m["line"]), int(m["col"]), m["rule"], m["msg"]))
        return out

    def check(ctx: CodeContext, completion: str) -> list:
        rel = Path(ctx.path).resolve().relative_to(repo).as_posix()
        if rel not in baselines:
            own = Path(ctx.path).read_text(encoding="utf-8") if Path(ctx.path).exists() else ""
            baselines[rel] = Counter((r, msg) for _, _, r, msg in run(rel, own))
        text = ctx.before + completion + ctx.after
        base, starts, lo, out = Counter(baselines[rel]), _line_starts(text), len(ctx.before), []
        for line, col, rule, msg in run(rel, text):
            if base[(rule, msg)] > 0:
                base[(rule, msg)] -= 1
                continue
            at = starts[line - 1] + col - 1 - lo if 0 < line <= len(starts) else len(completion)
            out.append(Problem(_placed(at, completion), rule, msg))
        return out

    check.name = "ty"
    return check


def checker_for(ctx: CodeContext) -> Checker:
    """ty for a Python file where it is installed, else pylint; for TypeScript the compiler on the nearest tsconfig.json above
    the file inside the repository (the package as its configuration says)."""
    if ctx.path.suffix == ".py":
        from .analysis.lsp_servers import installed
        if installed("ty") is not None:
            return ty_checker(ctx.repo, ctx.python and str(ctx.python) if ctx.trust else None)
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
