"""A recipe's dependency environments: each repository's third-party packages, as wheels, in
`<repo>/.venv`, so that the analyzer and the judge see what the repository imports, as they
would in a user's checkout with its virtual environment.

Without them a benchmark repository that imports Django, with no Django installed, cannot be
judged: the names monitor fails open on `from django.utils.locale import ...` ("imported
elsewhere in the project, not installed") and pylint reports an import error for the reference
itself. With them both read the same files: the monitor's module index and Jedi read the venv's
site-packages as files (the root is untrusted: trust.environment), and the lint worker puts the
same directories after its own on sys.path (evaluation/lint.py).

Nothing of a repository or a package runs: the venv is made by this interpreter (`venv
--without-pip`), the packages are wheels only (`--only-binary :all:`), pinned by version and
sha256 (`--require-hashes`), unpacked with `--no-deps --target` into its site-packages.

    spec = env_spec("heldout2")          # recipes/heldout2.env.json, or None: no environments
    spec = lock(spec)                    # resolve each package's `requires` (pip --dry-run
                                         # --report, wheels only) into `pins`; needs the index
    install(repo_dir, pins)              # <repo_dir>/.venv holding exactly those wheels

The spec, per recipe source (`pypi:NAME==VERSION`): `requires`, the requirements the package's
code imports (its metadata's Requires-Dist, the extras its modules import, and what it imports
without declaring: a Django app's Django), and `pins`, what `lock` resolved them to.
Test: tests/test_bench_env.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from ..errors import GroundcodeError

MARK = ".groundcode-env.json"     # in the venv: the pins it holds (a changed lock reinstalls)


def env_spec(recipe: str) -> dict | None:
    """The environment spec shipped beside a recipe (recipes/NAME.env.json), or of a path."""
    p = Path(recipe)
    if p.suffix == ".json" and p.is_file():
        return json.loads(p.read_text())
    res = resources.files("groundcode.evaluation").joinpath("recipes", f"{recipe}.env.json")
    return json.loads(res.read_text()) if res.is_file() else None


def _pip(args: list[str], what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-6:])
        raise GroundcodeError(f"{what}: pip failed ({run.returncode}):\n{tail}")


def resolve(requires: list[str], index_args: tuple[str, ...] = ()) -> list[dict]:
    """The wheels pip would install for `requires` on this interpreter, with their sha256."""
    if not requires:
        return []
    with tempfile.TemporaryDirectory(prefix="groundcode-env-") as tmp:
        report = Path(tmp) / "report.json"
        _pip(["install", "--dry-run", "--ignore-installed", "--only-binary", ":all:", "--quiet",
              "--report", str(report), *index_args, *requires], f"resolving {' '.join(requires)}")
        data = json.loads(report.read_text())
    pins = []
    for item in data.get("install", []):
        info = item.get("download_info", {})
        digest = (info.get("archive_info", {}).get("hashes") or {}).get("sha256")
        if not digest:
            h = info.get("archive_info", {}).get("hash", "")
            digest = h.split("=", 1)[1] if h.startswith("sha256=") else None
        if not digest:
            raise GroundcodeError(f"{item['metadata']['name']}: the index gave no sha256")
        pins.append({"name": item["metadata"]["name"], "version": item["metadata"]["version"],
                     "file": info.get("url", "").rsplit("/", 1)[-1], "sha256": digest})
    return sorted(pins, key=lambda p: p["name"].lower())


def lock(spec: dict, index_args: tuple[str, ...] = (), progress=None) -> dict:
    """`spec` with every package's `pins` resolved afresh from its `requires`."""
    out = dict(spec, packages={})
    for source, pkg in spec.get("packages", {}).items():
        pins = resolve(list(pkg.get("requires", [])), index_args)
        out["packages"][source] = dict(pkg, pins=pins)
        if progress:
            progress(source, pins)
    return out


def site_dir(venv: Path) -> Path:
    v = sys.version_info
    return venv / "lib" / f"python{v.major}.{v.minor}" / "site-packages"


def installed(venv: Path) -> list[dict] | None:
    try:
        return json.loads((venv / MARK).read_text()).get("pins")
    except (OSError, ValueError):
        return None


def install(repo_dir: Path, pins: list[dict], index_args: tuple[str, ...] = ()) -> str:
    """Make `<repo_dir>/.venv` hold exactly `pins` ("installed", "unchanged" or "empty": no
    pins, no venv). A venv groundcode did not make is never touched."""
    venv = Path(repo_dir) / ".venv"
    if not pins:
        return "empty"
    if venv.exists():
        have = installed(venv)
        if have is None:
            raise GroundcodeError(f"{venv} exists and groundcode did not make it; move it away first")
        if have == pins:
            return "unchanged"
        shutil.rmtree(venv)
    tmp = Path(repo_dir) / ".venv.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], check=True,
                   capture_output=True)
    site = site_dir(tmp)
    site.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for p in pins:
            f.write(f"{p['name']}=={p['version']} --hash=sha256:{p['sha256']}\n")
        reqs = f.name
    try:
        _pip(["install", "--no-deps", "--only-binary", ":all:", "--require-hashes", "--no-compile",
              "--quiet", "--target", str(site), *index_args, "-r", reqs], f"installing into {venv}")
    finally:
        os.unlink(reqs)
    (tmp / MARK).write_text(json.dumps({"pins": pins}, indent=1) + "\n")
    tmp.rename(venv)
    return "installed"
