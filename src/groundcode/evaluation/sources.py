"""Where benchmark repositories come from: a local directory, or `pypi:NAME==VERSION`.

A PyPI source is fetched as bytes from the index (PEP 691 JSON simple API; no pip, no build
backend, none of the package's code runs) into a cache outside the repository (default
~/.cache/groundcode, env GROUNDCODE_CACHE), never installed: the source distribution, else a
pure-Python wheel (which holds the same .py files); a recipe pins which. Its sha256 is checked
against the index's and the recipe's before it is stored or unpacked. The archive is
unpacked once into <cache>/src/NAME-VERSION/ with tarfile's "data" filter (no links out, no
absolute paths). Its sha256 and the URL found in its metadata are returned so that a recipe can pin
the exact artifact and prove the PyPI name is the project it means.
Not here: choosing functions (builder.py). Test: tests/test_bench_builder.py (local dirs, archives).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from ..cache import cache_dir
from ..errors import GroundcodeError

_PYPI_RE = re.compile(r"^pypi:([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


@dataclass
class RepoSource:
    spec: str            # what the user named: a path or pypi:NAME==VERSION
    name: str            # repository name used in task ids (NAME-VERSION, or the directory name)
    root: Path           # directory holding the sources
    artifact: str = ""   # downloaded file name ("" for a local directory)
    sha256: str = ""     # of the artifact
    urls: tuple = ()     # home page / project URLs from the artifact's metadata


from ..cache import sha256_file  # noqa: E402,F401 (the one file hash; re-exported for callers)


def resolve(spec: str, *, cache: Path | None = None, artifact: str | None = None,
            sha256: str | None = None) -> RepoSource:
    """Turn a source spec into a directory of sources, downloading and unpacking when needed.

    `artifact` ("sdist" or "wheel") forces the archive kind a recipe was built from; `sha256`
    checks the downloaded archive against the recipe."""
    m = _PYPI_RE.match(spec)
    if not m:
        root = Path(spec).expanduser()
        if not root.is_dir():
            raise GroundcodeError(f"benchmark source not found: {spec} (a directory or pypi:NAME==VERSION)")
        return RepoSource(spec=spec, name=root.resolve().name, root=root.resolve())
    name, version = m.group(1), m.group(2)
    cache = cache or cache_dir()
    archive = download(name, version, cache / "sdists", artifact=artifact, sha256=sha256)
    digest = sha256_file(archive)            # a cached archive is checked again before unpacking
    if sha256 and digest != sha256:
        raise GroundcodeError(f"{spec}: downloaded {archive.name} has sha256 {digest}, recipe pins {sha256}")
    dest = cache / "src" / f"{_norm(name)}-{version}"
    root = unpack(archive, dest)
    return RepoSource(spec=spec, name=f"{_norm(name)}-{version}", root=root, artifact=archive.name,
                      sha256=digest, urls=tuple(metadata_urls(root)))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_archive_of(fname: str, name: str, version: str) -> bool:
    stem = re.sub(r"[-_.]+", "-", fname).lower()
    return stem.startswith(f"{_norm(name)}-{_norm(version)}") and (
        fname.endswith((".tar.gz", ".zip", ".tgz")) or fname.endswith("-none-any.whl"))


INDEX_URL = "https://pypi.org/simple"   # PEP 691 JSON simple index (env GROUNDCODE_INDEX_URL)


def _http_get(url: str, accept: str | None = None) -> bytes:
    import urllib.request
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=180) as resp:
        return resp.read()


def index_files(name: str, version: str, *, get=_http_get) -> list[dict]:
    """The index's files of NAME==VERSION: [{"filename", "url", "hashes"}, ...] (PEP 691 JSON)."""
    base = os.environ.get("GROUNDCODE_INDEX_URL", INDEX_URL).rstrip("/")
    try:
        import json
        data = json.loads(get(f"{base}/{_norm(name)}/", "application/vnd.pypi.simple.v1+json"))
    except Exception as exc:
        raise GroundcodeError(f"could not list pypi:{name} on {base} ({type(exc).__name__}: {exc})") from None
    return [f for f in data.get("files", []) if _is_archive_of(f.get("filename", ""), name, version)
            and not f.get("yanked")]


def download(name: str, version: str, where: Path, *, artifact: str | None = None,
             sha256: str | None = None, get=_http_get) -> Path:
    """The cached archive for NAME==VERSION, fetched from the index if absent. Prefers the sdist.

    Nothing of the package runs: the archive is fetched as bytes (no pip, no build backend, no
    setup.py), its sha256 is checked against the index's and the pinned one *before* it is
    stored, and only a verified archive is ever unpacked."""
    where = where / f"{_norm(name)}=={version}"
    where.mkdir(parents=True, exist_ok=True)
    kinds = [artifact] if artifact else ["sdist", "wheel"]
    for kind in kinds:
        found = _cached(where, name, version, kind)
        if found:
            return found
    files = index_files(name, version, get=get)
    for kind in kinds:
        picks = sorted((f for f in files if f["filename"].endswith(".whl") == (kind == "wheel")),
                       key=lambda f: (not f["filename"].endswith(".tar.gz"), f["filename"]))
        if not picks:
            continue
        f = picks[0]
        data = get(f["url"])
        digest = hashlib.sha256(data).hexdigest()
        listed = (f.get("hashes") or {}).get("sha256")
        if listed and digest != listed:
            raise GroundcodeError(f"pypi:{name}=={version}: {f['filename']} has sha256 {digest}, "
                                  f"the index lists {listed}")
        if sha256 and digest != sha256:
            raise GroundcodeError(f"pypi:{name}=={version}: downloaded {f['filename']} has sha256 "
                                  f"{digest}, recipe pins {sha256}")
        with tempfile.NamedTemporaryFile(dir=where, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, where / f["filename"])
        return where / f["filename"]
    raise GroundcodeError(f"could not download pypi:{name}=={version}: the index has no "
                          f"{' or '.join(kinds)} archive of it (pure-Python wheels only)")


def _cached(where: Path, name: str, version: str, kind: str) -> Path | None:
    for p in sorted(where.iterdir()):
        if _is_archive_of(p.name, name, version) and (p.suffix == ".whl") == (kind == "wheel"):
            return p
    return None


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack once (a `.complete` marker guards against half-written trees); returns the source root."""
    marker = dest / ".complete"
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        if archive.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    target = (dest / info.filename).resolve()
                    if not str(target).startswith(str(dest.resolve()) + os.sep):
                        raise GroundcodeError(f"{archive.name}: unsafe member path {info.filename}")
                z.extractall(dest)
        else:
            with tarfile.open(archive) as t:
                t.extractall(dest, filter="data")
        marker.write_text(archive.name + "\n")
    entries = [p for p in dest.iterdir() if p.name != ".complete"]
    # an sdist holds one top-level NAME-VERSION/ directory; a wheel unpacks flat
    if len(entries) == 1 and entries[0].is_dir() and not archive.name.endswith(".whl"):
        return entries[0]
    return dest


def metadata_urls(root: Path) -> list[str]:
    """Home-page and Project-URL values from PKG-INFO (sdist) or *.dist-info/METADATA (wheel)."""
    candidates = [root / "PKG-INFO", *sorted(root.glob("*.dist-info/METADATA"))]
    for path in candidates:
        if path.is_file():
            msg = Parser().parsestr(path.read_text(encoding="utf-8", errors="replace"), headersonly=True)
            urls = list(msg.get_all("Home-page") or [])
            urls += [v.split(",", 1)[-1].strip() for v in msg.get_all("Project-URL") or []]
            return urls
    return []


def check_project(source: RepoSource, expect: str) -> None:
    """Fail unless the artifact's metadata names `expect` (e.g. github.com/owner/repo)."""
    want = expect.lower().rstrip("/")
    if not any(want in u.lower() for u in source.urls):
        raise GroundcodeError(f"{source.spec} does not look like {expect}: its metadata lists "
                              f"{list(source.urls) or 'no URLs'}")
