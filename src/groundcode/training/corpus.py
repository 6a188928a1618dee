"""Corpus builder: Python source from installed distributions, with provenance, as JSONL.gz shards.

    groundcode corpus build --out corpus/            # default roots: this interpreter's stdlib + site-packages
    build_corpus(CorpusConfig(roots=[...], out_dir="corpus"))

Every file keeps its provenance (distribution, version, license from the distribution's metadata;
the stdlib is "python" under the PSF license). Files are kept only when the license is permissive
(unknown -> excluded, counted), the distribution is not on the excluded list
(groundcode/data/excluded_packages.txt), the text is not generated/minified/huge, it parses, it is
not an exact duplicate (sha256 of the bytes) and none of its functions is a benchmark task function
(training/decontam.py). Output: shard-NNNNN.jsonl.gz records {id, package, version, license, path,
sha256, chars, text} and manifest.json (config, per-package counts, drop reasons, totals; `tokens` is
filled in by training/tokenizer.py). Files are read and checked in worker processes (or, with an
executor, `--executor ray`, one package's files at a time on its workers); the parent
deduplicates in a fixed (sorted) order, so the output is deterministic for a given set of roots.
Not here: tokenizing (training/tokenizer.py), batching (training/pretrain.py).
Test: tests/test_training_corpus.py.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import multiprocessing as mp
import re
import sys
import sysconfig
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import GroundcodeError
from ..jsonl import read_jsonl
from . import decontam, licenses
from .. import pyparse

EXCLUDED_LIST = Path(__file__).resolve().parent.parent / "data" / "excluded_packages.txt"


@dataclass
class CorpusConfig:
    out_dir: str = "corpus"
    roots: list[str] = field(default_factory=list)   # empty = stdlib + site-packages of this interpreter
    exclude_file: str = str(EXCLUDED_LIST)            # one distribution name per line
    exclude: list[str] = field(default_factory=list)  # more names, on top of the file
    decontaminate: list[str] = field(default_factory=list)  # benchmark task JSONL(.gz) files
    default_license: str | None = None  # license of files no distribution claims (your own code); None = unknown
    max_bytes: int = 300_000        # bigger .py files are mostly data tables or generated
    min_chars: int = 64             # empty __init__.py files teach nothing
    max_line_chars: int = 1000      # a longer line means minified or embedded data
    max_mean_line_chars: float = 100.0
    shard_records: int = 2000       # records per shard file
    workers: int = 2                # processes reading and checking files
    progress: bool = True


def normalise_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def default_roots() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["stdlib"], paths["purelib"], paths["platlib"]]))


def read_excluded(cfg: CorpusConfig) -> set[str]:
    names = set(normalise_name(n) for n in cfg.exclude)
    if cfg.exclude_file:
        for line in Path(cfg.exclude_file).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(normalise_name(line))
    return names


# ---------------------------------------------------------------- discovery (parent process)
@dataclass
class Owner:
    package: str
    version: str
    license: str
    permissive: bool


def _dist_owner(dist) -> Owner:
    meta = dist.metadata
    name, ok = licenses.classify(meta.get("License-Expression"), meta.get_all("Classifier") or [],
                                 meta.get("License"))
    return Owner(normalise_name(meta["Name"] or "unknown"), meta["Version"] or "?", name, ok)


def _is_site_dir(root: Path) -> bool:
    return root.name in ("site-packages", "dist-packages") or any(root.glob("*.dist-info"))


def discover(roots: list[str], default_license: str | None = None) -> list[tuple[str, str, Owner | None]]:
    """(absolute path, path shown in provenance, owner) for every .py file under the roots, sorted.

    Files that no distribution claims get `default_license` (the user vouches for their own code)
    under the root directory's name as package, or no owner at all (-> excluded as unknown)."""
    from importlib import metadata
    found: dict[str, tuple[str, Owner | None]] = {}
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for root_str in roots:
        root = Path(root_str).resolve()
        if not root.is_dir():
            raise GroundcodeError(f"corpus root {root} is not a directory")
        if _is_site_dir(root):
            for dist in metadata.distributions(path=[str(root)]):
                owner = _dist_owner(dist)
                for f in dist.files or []:
                    if f.suffix == ".py":
                        p = (root / f).resolve()
                        if p.is_file() and str(p) not in found:
                            found[str(p)] = (f"{owner.package}/{f}", owner)
            for p in sorted(root.rglob("*.py")):  # files no distribution claims
                found.setdefault(str(p.resolve()), (str(p.relative_to(root)), _vouched(root, default_license)))
        else:
            is_stdlib = root == stdlib
            owner = Owner("python", ".".join(map(str, sys.version_info[:3])), "PSF", True) if is_stdlib \
                else _vouched(root, default_license)
            for p in sorted(root.rglob("*.py")):
                rel = p.relative_to(root)
                if is_stdlib and rel.parts[0] in ("site-packages", "dist-packages"):
                    continue
                found.setdefault(str(p.resolve()), (f"{owner.package if owner else root.name}/{rel}", owner))
    return [(p, shown, owner) for p, (shown, owner) in sorted(found.items())]


def _vouched(root: Path, license_name: str | None) -> Owner | None:
    if not license_name:
        return None
    name, ok = licenses.classify(license_name)
    return Owner(normalise_name(root.name), "local", name, ok)


# ---------------------------------------------------------------- per-file checks (workers)
_GENERATED = re.compile(r"(auto-?generated|generated by|do not edit|code generated)", re.IGNORECASE)
_W: dict = {}


def _init_worker(cfg: CorpusConfig, task_hashes: set[str]) -> None:
    _W["cfg"], _W["hashes"] = cfg, task_hashes


def check_file(path: str, cfg: CorpusConfig | None = None, task_hashes: set[str] | None = None):
    """(reason, None) for a dropped file, or ("ok", (sha256, text)) for a kept one."""
    cfg = cfg or _W["cfg"]
    task_hashes = _W.get("hashes", set()) if task_hashes is None else task_hashes
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return "unreadable", None
    if len(raw) > cfg.max_bytes:
        return "huge", None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not_utf8", None
    if len(text) < cfg.min_chars:
        return "tiny", None
    lines = text.splitlines() or [""]
    if max(map(len, lines)) > cfg.max_line_chars or len(text) / len(lines) > cfg.max_mean_line_chars:
        return "minified", None
    if _GENERATED.search("\n".join(lines[:10])):
        return "generated", None
    try:
        tree = pyparse.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "syntax", None
    if task_hashes and decontam.function_hashes(tree) & task_hashes:
        return "contaminated", None
    return "ok", (hashlib.sha256(raw).hexdigest(), text)


def _check(item):
    return item[0], check_file(item[1])


# ---------------------------------------------------------------- the build
class _ShardWriter:
    def __init__(self, out: Path, per_shard: int):
        self.out, self.per_shard, self.count, self.fh, self.names = out, per_shard, 0, None, []

    def write(self, record: dict) -> None:
        if self.count % self.per_shard == 0:
            self.close()
            name = f"shard-{len(self.names):05d}.jsonl.gz"
            self.names.append(name)
            # mtime=0: byte-identical shards on every rebuild
            self.fh = gzip.GzipFile(self.out / name, "wb", mtime=0)
        self.fh.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        self.count += 1

    def close(self) -> None:
        if self.fh:
            self.fh.close()
            self.fh = None


def build_corpus(cfg: CorpusConfig, executor=None) -> dict:
    """Build the shards and manifest under cfg.out_dir; returns the manifest. `executor`
    (groundcode/executor.py): the file checks sharded by package onto its workers (same output)."""
    roots = cfg.roots or default_roots()
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("shard-*.jsonl.gz"):
        old.unlink()
    excluded = read_excluded(cfg)
    task_hashes, task_counts = decontam.read_task_hashes(cfg.decontaminate)
    files = discover(roots, cfg.default_license)

    drops: Counter = Counter()
    dropped_by_package: dict[str, Counter] = defaultdict(Counter)
    packages: dict[str, dict] = {}
    todo = []
    for i, (path, shown, owner) in enumerate(files):
        if owner is None:
            drops["license_unknown"] += 1
            continue
        if owner.package in excluded:
            drops["excluded_package"] += 1
            dropped_by_package[owner.package]["excluded_package"] += 1
            continue
        if not owner.permissive:
            reason = "license_unknown" if owner.license == "unknown" else "license_not_permissive"
            drops[reason] += 1
            dropped_by_package[owner.package][reason] += 1
            continue
        todo.append((i, path))

    writer = _ShardWriter(out, cfg.shard_records)
    seen: set[str] = set()
    results = _run_checks(cfg, task_hashes, todo) if executor is None else \
        _sharded_checks(cfg, task_hashes, todo, [files[i][2].package for i, _ in todo], executor)
    for i, (reason, payload) in results:
        path, shown, owner = files[i]
        if reason == "ok" and payload[0] in seen:
            reason = "duplicate"
        if reason != "ok":
            drops[reason] += 1
            dropped_by_package[owner.package][reason] += 1
            continue
        sha, text = payload
        seen.add(sha)
        writer.write({"id": sha[:16], "package": owner.package, "version": owner.version,
                      "license": owner.license, "path": shown, "sha256": sha, "chars": len(text),
                      "text": text})
        pkg = packages.setdefault(owner.package, {"version": owner.version, "license": owner.license,
                                                  "files": 0, "chars": 0})
        pkg["files"] += 1
        pkg["chars"] += len(text)
    writer.close()

    cfg_json = asdict(cfg) | {"roots": roots}
    manifest = {
        "config": cfg_json,
        "python": sys.version.split()[0],
        "excluded_packages": sorted(excluded),
        "decontamination": task_counts,
        "files_seen": len(files),
        "files": writer.count,
        "chars": sum(p["chars"] for p in packages.values()),
        "tokens": None,
        "dropped": dict(sorted(drops.items())),
        "dropped_by_package": {k: dict(v) for k, v in sorted(dropped_by_package.items())},
        "licenses": dict(sorted(Counter(p["license"] for p in packages.values()).items())),
        "packages": dict(sorted(packages.items())),
        "shards": writer.names,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _run_checks(cfg: CorpusConfig, task_hashes: set[str], todo: list):
    """Yield (index, check result) in input order; processes when cfg.workers > 1."""
    progress = None
    if cfg.progress:
        from rich.progress import Progress
        progress = Progress(transient=True)
        task = progress.add_task("corpus", total=len(todo))
        progress.start()
    try:
        if cfg.workers > 1:
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
            with ctx.Pool(cfg.workers, initializer=_init_worker, initargs=(cfg, task_hashes)) as pool:
                for item in pool.imap(_check, todo, chunksize=32):   # imap keeps the order
                    progress and progress.advance(task)
                    yield item
        else:
            _init_worker(cfg, task_hashes)
            for item in todo:
                progress and progress.advance(task)
                yield _check(item)
    finally:
        if progress:
            progress.stop()


class CheckWorker:
    """check_file over one package's files at a time (a shard of `--executor ray`)."""

    def __init__(self, cfg: CorpusConfig, task_hashes: set[str]):
        _init_worker(cfg, task_hashes)

    def __call__(self, shard: list[tuple[int, tuple]]) -> list[tuple[int, tuple]]:
        return [(pos, _check(item)) for pos, item in shard]


def _sharded_checks(cfg: CorpusConfig, task_hashes: set[str], todo: list, packages: list[str], executor):
    """_run_checks' output (input order) from the executor's workers, sharded by package: results that
    finish early wait until those before them are in (dedup keeps the sorted order)."""
    from ..executor import shard_by
    shards = shard_by(list(enumerate(todo)), lambda pt: packages[pt[0]])
    progress = None
    if cfg.progress:
        from rich.progress import Progress
        progress = Progress(transient=True)
        task = progress.add_task("corpus", total=len(todo))
        progress.start()
    held, nxt = {}, 0
    try:
        for i, got in executor.map(CheckWorker, {"cfg": cfg, "task_hashes": task_hashes}, shards):
            held.update(got)
            progress and progress.advance(task, len(got))
            while nxt in held:
                yield held.pop(nxt)
                nxt += 1
    finally:
        if progress:
            progress.stop()


def iter_records(corpus_dir: str | Path):
    """Every record of a built corpus, in shard order."""
    corpus = Path(corpus_dir)
    manifest = corpus / "manifest.json"
    if not manifest.exists():
        raise GroundcodeError(f"no corpus at {corpus} (manifest.json missing); run `groundcode corpus build`")
    for name in json.loads(manifest.read_text())["shards"]:
        yield from read_jsonl(corpus / name)
