"""The TypeScript compiler as the judge: `tsc --noEmit` on a package's own configuration with some
of its files replaced (a generated body in place), run in the sandbox (no network, memory-capped,
a private copy of the sources; the package's node_modules and the compiler read-only).

    diags, run = judge(package_dir, {"src/cart.ts": new_text})
    [(d.path, d.line, d.code) for d in diags]    # ("src/cart.ts", 9, 2551): TS2551 "Did you mean"

The compiler is the pinned one `groundcode analyzers install typescript` puts in the user cache
(TypeScript 7's native `tsc`). Error codes worth naming: TS2339/TS2551 (no such member),
TS2304 (no such name), TS2554/TS2345 (a call's arguments).
Test: tests/test_tsc_judge.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import GroundcodeError
from .execution import ExecutionResult, SandboxConfig, run_program

MEMBER_CODES = frozenset({2339, 2551})
_LINE = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+),(?P<col>\d+)\): error TS(?P<code>\d+): (?P<msg>.*)$")

# the judge's sandbox: the Go compiler maps more address space than it touches, and runs a
# thread per core
CONFIG = SandboxConfig(wall_s=120, cpu_s=240, memory_mb=3072, address_mb=65536, procs=64, tmp_mb=512)


@dataclass(frozen=True)
class Diagnostic:
    path: str                  # relative to the package
    line: int
    col: int
    code: int
    message: str


def compiler() -> Path:
    from ..analysis.lsp_servers import installed
    exe = installed("typescript")
    if exe is None:
        raise GroundcodeError("the TypeScript compiler is not installed: run "
                              "`groundcode analyzers install typescript`")
    return exe


def parse(output: str) -> list[Diagnostic]:
    out = []
    for line in output.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.append(Diagnostic(m["path"].strip(), int(m["line"]), int(m["col"]), int(m["code"]), m["msg"]))
    return out


_PROGRAM = '''
import os, shutil, subprocess, sys
pkg, tsc, conf, replaced = {pkg!r}, {tsc!r}, {conf!r}, {replaced!r}
home = os.path.dirname(pkg)
work = os.path.join("/tmp/w", os.path.basename(home))
shutil.copytree(pkg, os.path.join(work, "package"), symlinks=True)
if os.path.isdir(os.path.join(home, "node_modules")):
    os.symlink(os.path.join(home, "node_modules"), os.path.join(work, "node_modules"))
for rel, text in replaced.items():
    with open(os.path.join(work, "package", rel), "w", encoding="utf-8") as f:
        f.write(text)
r = subprocess.run([tsc, "--noEmit", "--pretty", "false", "-p", conf], cwd=os.path.join(work, "package"),
                   capture_output=True, text=True)
sys.stdout.write(r.stdout)
sys.stderr.write(r.stderr[-2000:])
sys.exit(0 if r.returncode in (0, 1, 2) else r.returncode)
'''


def judge(package: Path, replaced: dict | None = None, tsconfig: str = "tsconfig.recipe.json",
          config: SandboxConfig | None = None) -> tuple[list[Diagnostic], ExecutionResult]:
    """The compiler's errors for the package with `replaced` files (relative path -> text)."""
    package = Path(package).resolve()
    tsc = compiler()
    cfg = config or CONFIG
    cfg = replace(cfg, ro_paths=tuple(cfg.ro_paths) + (str(package.parent), str(tsc.parent)),
                  output_bytes=max(cfg.output_bytes, 1 << 20))
    src = _PROGRAM.format(pkg=str(package), tsc=str(tsc), conf=tsconfig, replaced=dict(replaced or {}))
    run = run_program(src, cfg)
    if not run.passed:
        raise GroundcodeError(f"the compiler did not run to its end in the sandbox: {run.reason}")
    return parse(run.stdout), run
