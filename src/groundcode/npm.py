"""npm as a package registry, for pinned files only: a tarball packed by name and version and
checked against its integrity (sha512), unpacked as files; pinned packages installed with
`--ignore-scripts` (no package script ever runs) and each checked against the lock file.

    tgz = pack("@msgpack/msgpack", "3.1.3", "sha512-…", tmp)
    unpack(tgz, dest)                        # dest/<the tarball's files, without `package/`>
    install(dir, [{"name", "version", "integrity"}, …])

Used by the language servers' installs (analysis/lsp_servers.py) and the TypeScript benchmark's
packages (evaluation/ts_packages.py). Test: tests/test_tsc_judge.py.
"""
from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

from .errors import GroundcodeError


def verify(path: Path, digest: str) -> None:
    """`digest`: "sha256:<hex>" (PyPI) or "sha512-<base64>" (npm's integrity)."""
    algo, _, want = digest.partition(":") if digest.startswith("sha256:") else digest.partition("-")
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    got = h.hexdigest() if algo == "sha256" else base64.b64encode(h.digest()).decode()
    if got != want:
        raise GroundcodeError(f"{Path(path).name}: {algo} {got} is not the pinned {want}; nothing installed")


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise GroundcodeError("npm is not on PATH (Debian: apt install npm)")
    return npm


def pack(name: str, version: str, integrity: str, dest: Path) -> Path:
    """The package's tarball in `dest`, its integrity checked (`npm pack` runs no script of it)."""
    dest = Path(dest)
    r = subprocess.run([_npm(), "pack", f"{name}@{version}", "--ignore-scripts", "--json",
                        "--pack-destination", str(dest)], capture_output=True, text=True, timeout=600, cwd=dest)
    try:
        path = dest / json.loads(r.stdout)[0]["filename"]
    except (ValueError, LookupError, TypeError):
        path = None
    if r.returncode != 0 or path is None or not path.is_file():
        raise GroundcodeError(f"could not download {name}@{version} from npm: "
                              f"{(r.stderr.strip().splitlines() or ['no tarball'])[-1]}")
    verify(path, integrity)
    return path


def unpack(tgz: Path, dest: Path) -> None:
    """The tarball's regular files under `dest` (its leading `package/` dropped); nothing outside."""
    dest = Path(dest)
    root = dest.resolve()
    with tarfile.open(tgz, "r:gz") as t:
        for m in t.getmembers():
            if not m.isfile():
                continue
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            target = dest / rel
            if not target.resolve().is_relative_to(root):
                raise GroundcodeError(f"{Path(tgz).name}: an entry outside the package ({m.name})")
            target.parent.mkdir(parents=True, exist_ok=True)
            with t.extractfile(m) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            if m.mode & 0o111:
                target.chmod(0o755)


def install(directory: Path, pins: list[dict]) -> None:
    """The exact pinned packages into `directory`/node_modules (`npm install --ignore-scripts`),
    each one's installed integrity checked against its pin (package-lock.json)."""
    directory = Path(directory)
    if not pins:
        return
    (directory / "package.json").write_text('{"private": true}\n')
    specs = [f"{p['name']}@{p['version']}" for p in pins]
    r = subprocess.run([_npm(), "install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact",
                        *specs], capture_output=True, text=True, timeout=1800, cwd=directory)
    if r.returncode != 0:
        raise GroundcodeError(f"npm install failed in {directory}: "
                              f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
    lock = json.loads((directory / "package-lock.json").read_text())["packages"]
    for p in pins:
        got = lock.get(f"node_modules/{p['name']}", {})
        if got.get("version") != p["version"] or got.get("integrity") != p["integrity"]:
            raise GroundcodeError(f"{p['name']}: npm installed {got.get('version')} "
                                  f"({got.get('integrity')}), not the pinned {p['version']} ({p['integrity']})")
