"""ToolGen's corpus augmentation (Algorithm 1): mark with `<COMP>` the identifiers the
autocompleter would have offered, in every documented function of a set of repositories.

    groundcode augment pypi:boltons==24.1.0 ./my-repo --out aug.jsonl

For each function with a docstring (`evaluation.extract.functions`: not nested in another
function, a non-trivial body on its own lines) that passes the filters below, walk the NAME
tokens of its body in order; skip keywords, builtins (`dir(builtins)`), dunder names and a
method's first parameter (`self`/`cls`: Figure 4 leaves `self` unmarked); for each remaining
identifier ask the analyzer whether completion at the identifier's start, *with only the code
before that point in the function* and the rest of the file as context, offers it; if so insert
`<COMP>` before it. The analyzer is Jedi (`analysis.jedi_oracle.offered_in_file`: one parse per file,
the completion's own lookup per identifier; `exact=True` uses `analysis.jedi_oracle.completion_names`,
a full completion on the truncated file per identifier, ~20x slower — the two agree on 95% of
identifiers, benchmarks/augment_speed.py).

Filters (ToolGen keeps docstring/function pairs from CodeSearchNet, whose functions average 54
tokens; ours, documented in docs/TOOLGEN.md):
  * the docstring's first paragraph has >= `min_doc_words` words (3),
  * the body (after the docstring) spans 1..`max_body_lines` lines (30, as the benchmark),
  * files under test/doc/example/... directories, `setup.py` and `test_*.py` are skipped,
  * files over `max_file_bytes` (300 kB) are skipped (generated tables, vendored bundles).
Jedi's dynamic inference (call-site search for parameter types) is off by default here
(`dynamic_inference=True` turns it on): 1.6x faster, 0.6% of the marks differ on marshmallow.

Output: JSONL, one record per function (task_id, repo, path, scope, docstring, signature,
original, augmented, body_offset, positions, identifiers), appended as each file finishes;
`<out>.files` lists finished files so a rerun resumes where it stopped; statistics go to
`<out>.stats.json` (functions, <COMP> per function, hit rate, seconds, functions/s, load).
Files are processed by a pool of worker processes (one Jedi each), with a rich progress bar; with an
executor (`--executor ray`), a repository's files at a time on its workers (groundcode/executor.py;
the records and `.files` marks are the same, written as each repository finishes).
Not here: downloads (evaluation/sources.py), Jedi (analysis/jedi_oracle.py), training (finetune.py).
Test: tests/test_augment.py (Figure 4 on a fixture class; resume).
"""
from __future__ import annotations

import builtins
import concurrent.futures as cf
import io
import json
import keyword
import multiprocessing as mp
import os
import time
import tokenize
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import GroundcodeError

COMP = "<COMP>"
_BUILTINS = frozenset(dir(builtins))
_KEYWORDS = frozenset(keyword.kwlist)
_SKIP_DIRS = {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark",
              "benchmarks", "build", "dist", "scripts", "__pycache__", "site-packages",
              "node_modules", "venv", ".venv"}


@dataclass
class AugmentConfig:
    sources: list[str]                  # directories or pypi:NAME==VERSION
    out: str                            # JSONL output (appended; <out>.files marks finished files)
    workers: int = 2                    # processes, one Jedi each
    min_doc_words: int = 3              # words in the docstring's first paragraph
    max_body_lines: int = 30            # body lines after the docstring
    max_file_bytes: int = 300_000
    max_files_per_repo: int | None = None
    exact: bool = False                 # full Jedi completion per identifier (slow, faithful)
    dynamic_inference: bool = False     # Jedi's call-site search for parameter types (slower)


@dataclass
class AugmentStats:
    files: int = 0
    files_skipped_resume: int = 0
    functions: int = 0
    functions_filtered: int = 0
    identifiers: int = 0                # candidates asked about (after keyword/builtin/dunder skips)
    marked: int = 0                     # <COMP> inserted
    seconds: float = 0.0
    repos: dict = field(default_factory=dict)

    def summary(self) -> dict:
        d = asdict(self)
        d["comp_per_function"] = round(self.marked / self.functions, 3) if self.functions else 0.0
        d["hit_rate"] = round(self.marked / self.identifiers, 3) if self.identifiers else 0.0
        d["functions_per_s"] = round(self.functions / self.seconds, 2) if self.seconds else 0.0
        return d


def skip_name(name: str) -> bool:
    """Keywords, builtins and dunder names are never marked (Algorithm 1's ISBUILTIN)."""
    return name in _KEYWORDS or name in _BUILTINS or (name.startswith("__") and name.endswith("__"))


def doc_summary(doc: str) -> str:
    """The docstring's first paragraph on one line."""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def candidates(body: str, first_line: int, receiver: str | None = None) -> list[tuple[int, int, str]]:
    """(line, column, name) of the identifiers of `body` to ask about, in order; `first_line` is
    the file line of the body's first line. Raises tokenize.TokenError/SyntaxError on bad input."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(body).readline):
        if tok.type != tokenize.NAME:
            continue
        name = tok.string
        if skip_name(name) or name == receiver:
            continue
        out.append((first_line + tok.start[0] - 1, tok.start[1], name))
    return out


def insert_marks(text: str, marks: list[tuple[int, int]]) -> str:
    """`text` with COMP inserted at each (line, column) (1-based line, 0-based column in `text`)."""
    lines = text.splitlines(keepends=True)
    for line, col in sorted(marks, reverse=True):
        s = lines[line - 1]
        lines[line - 1] = s[:col] + COMP + s[col:]
    return "".join(lines)


def _receiver(code_lines: list[str], site) -> str | None:
    """The first parameter's name of a method (self/cls), else None."""
    if not site.is_method:
        return None
    from .. import pyparse
    header = "".join(code_lines[site.def_line - 1: site.header_end]).strip()
    try:
        fn = pyparse.parse(header + "\n    pass\n").body[0]
    except SyntaxError:
        return None
    args = getattr(fn, "args", None)
    params = (args.posonlyargs + args.args) if args else []
    return params[0].arg if params else None


def augment_file(root: str, repo: str, rel: str, cfg: dict) -> tuple[list[dict], dict]:
    """Augment the documented functions of one file (runs in a worker). Returns (records, counts)."""
    from ..evaluation import extract
    counts = {"functions": 0, "filtered": 0, "identifiers": 0, "marked": 0}
    path = Path(root) / rel
    try:
        raw = path.read_bytes()
        if len(raw) > cfg["max_file_bytes"]:
            return [], counts
        code = raw.decode("utf-8")
        sites = extract.functions(code)
    except (UnicodeDecodeError, SyntaxError, ValueError, OSError, RecursionError):
        return [], counts
    lines = code.splitlines(keepends=True)
    jobs = []       # (site, receiver, candidates)
    for s in sites:
        body_lines = s.end_line - s.body_line + 1
        if len(doc_summary(s.docstring).split()) < cfg["min_doc_words"] or body_lines > cfg["max_body_lines"]:
            counts["filtered"] += 1
            continue
        recv = _receiver(lines, s)
        body = "".join(lines[s.body_line - 1: s.end_line])
        try:
            cands = candidates(body, s.body_line, recv)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            counts["filtered"] += 1
            continue
        jobs.append((s, cands))
    if not jobs:
        return [], counts
    from ..analysis import jedi_oracle as jedi_adapter
    before = jedi_adapter.set_dynamic_inference(cfg.get("dynamic_inference", False))
    try:
        hits = _ask(jedi_adapter, root, path, code, lines, jobs, cfg["exact"])
    finally:
        jedi_adapter.set_dynamic_inference(before)
    records, k = [], 0
    for s, cands in jobs:
        marks = []
        for ln, col, name in cands:
            if hits[k]:
                marks.append((ln, col, name))
            k += 1
        first = s.def_line
        original = "".join(lines[first - 1: s.end_line])
        rel_marks = [(ln - first + 1, col) for ln, col, _ in marks]
        augmented = insert_marks(original, rel_marks)
        body_offset = len("".join(lines[first - 1: s.body_line - 1]))
        signature = "".join(lines[s.def_line - 1: s.header_end]).rstrip("\n")
        records.append({
            "task_id": f"{repo}/{rel}::{s.scope}", "repo": repo, "path": rel, "scope": s.scope,
            "docstring": s.docstring, "signature": signature, "original": original,
            "augmented": augmented, "body_offset": body_offset,
            "positions": [[ln - first + 1, col, name] for ln, col, name in marks],
            "identifiers": len(cands), "indent": s.indent,
        })
        counts["functions"] += 1
        counts["identifiers"] += len(cands)
        counts["marked"] += len(marks)
    return records, counts


def _ask(jedi_adapter, root, path, code, lines, jobs, exact: bool) -> list[bool]:
    """One answer per candidate of every job, in order: is it offered at its start?"""
    queries = [(ln, col, name, s.end_line) for s, cands in jobs for ln, col, name in cands]
    if exact:
        hits = []
        for s, cands in jobs:
            after = "".join(lines[s.end_line:])
            for ln, col, name in cands:
                head = lines[ln - 1][:col]
                # a line holding only indentation gets a filler token after the cursor, so that
                # Jedi places the cursor in the function and not in the next, dedented statement
                text = "".join(lines[:ln - 1]) + head + ("pass" if not head.strip() else "") + "\n" + after
                try:
                    names = jedi_adapter.completion_names(root, text, str(path), ln, col)
                except Exception:
                    names = frozenset()
                hits.append(name in {n.rstrip("=") for n in names})
    else:
        hits = jedi_adapter.offered_in_file(root, code, str(path), queries)
    return hits


def python_files(root: Path, limit: int | None = None) -> list[str]:
    """Source files of a repository, relative paths, sorted; tests, docs, examples skipped."""
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        parts = set(rel.parts[:-1])
        if parts & _SKIP_DIRS or any(x.endswith((".egg-info", ".dist-info", ".data")) for x in rel.parts):
            continue
        if p.name == "setup.py" or p.name.startswith("test_") or p.name.endswith("_test.py") or p.name == "conftest.py":
            continue
        out.append(str(rel))
        if limit and len(out) >= limit:
            break
    return out


def _done_files(out: Path) -> set[str]:
    marker = Path(str(out) + ".files")
    if not marker.exists():
        return set()
    return {ln.rstrip("\n") for ln in marker.read_text(encoding="utf-8").splitlines() if ln.strip()}


class AugmentWorker:
    """The files of one repository at a time (a shard of `--executor ray`; Jedi's caches stay warm)."""

    def __init__(self, opts: dict):
        self.opts = opts

    def __call__(self, shard: list[tuple]) -> list[tuple[str, list[dict], dict]]:
        return [(key, *augment_file(root, name, rel, self.opts)) for root, name, rel, key in shard]


def _pooled(work: list[tuple], opts: dict, workers: int):
    """(key, records, counts) per file as files finish, from local worker processes."""
    with cf.ProcessPoolExecutor(max_workers=max(1, workers), mp_context=mp.get_context("spawn")) as pool:
        futs = {pool.submit(augment_file, root, name, rel, opts): key for root, name, rel, key in work}
        for fut in cf.as_completed(futs):
            yield (futs[fut], *fut.result())


def _sharded(work: list[tuple], opts: dict, executor):
    """(key, records, counts) per file, a repository's files at a time, from the executor's workers."""
    from ..executor import shard_by
    for _, files in executor.map(AugmentWorker, {"opts": opts}, shard_by(work, lambda w: w[1])):
        yield from files


def augment(cfg: AugmentConfig, progress: bool = True, executor=None) -> dict:
    """Augment every source; returns the statistics (also written to <out>.stats.json).
    `executor` (groundcode/executor.py): repositories sharded onto its workers instead of local processes."""
    from ..evaluation import sources as src_mod
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    repos = [src_mod.resolve(s) for s in cfg.sources]
    done = _done_files(out)
    work = []
    stats = AugmentStats()
    for r in repos:
        stats.repos[r.name] = {"spec": r.spec, "artifact": r.artifact, "sha256": r.sha256,
                               "functions": 0, "marked": 0, "identifiers": 0}
        for rel in python_files(r.root, cfg.max_files_per_repo):
            key = f"{r.name}\t{rel}"
            if key in done:
                stats.files_skipped_resume += 1
                continue
            work.append((str(r.root), r.name, rel, key))
    if not work and not done:
        raise GroundcodeError("no Python files found in the sources")
    opts = {"max_file_bytes": cfg.max_file_bytes, "min_doc_words": cfg.min_doc_words,
            "max_body_lines": cfg.max_body_lines, "exact": cfg.exact,
            "dynamic_inference": cfg.dynamic_inference}
    t0 = time.perf_counter()
    marker = open(str(out) + ".files", "a", encoding="utf-8")
    sink = open(out, "a", encoding="utf-8")
    bar = _bar(progress, len(work))
    try:
        done_files = _pooled(work, opts, cfg.workers) if executor is None else _sharded(work, opts, executor)
        for key, records, counts in done_files:
            for rec in records:
                sink.write(json.dumps(rec) + "\n")
            sink.flush()
            marker.write(key + "\n")
            marker.flush()
            stats.files += 1
            stats.functions += counts["functions"]
            stats.functions_filtered += counts["filtered"]
            stats.identifiers += counts["identifiers"]
            stats.marked += counts["marked"]
            repo = key.split("\t", 1)[0]
            rs = stats.repos[repo]
            for k in ("functions", "marked", "identifiers"):
                rs[k] += counts[k]
            if bar:
                bar.update(stats.functions)
    finally:
        sink.close()
        marker.close()
        if bar:
            bar.close()
    stats.seconds = round(time.perf_counter() - t0, 2)
    summary = stats.summary() | {"workers": cfg.workers, "exact": cfg.exact,
                                 "executor": "local" if executor is None else f"ray x{executor.workers}",
                                 "loadavg": [round(x, 2) for x in os.getloadavg()],
                                 "cpus": os.cpu_count(), "config": asdict(cfg)}
    Path(str(out) + ".stats.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


class _bar:
    """A rich progress bar over files, showing functions augmented so far."""

    def __new__(cls, enabled: bool, total: int):
        if not enabled or total == 0:
            return None
        return super().__new__(cls)

    def __init__(self, enabled: bool, total: int):
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        from ..progress import progress_bar
        self.p = progress_bar(TextColumn("augment"), BarColumn(), MofNCompleteColumn(), TextColumn("files ·"),
                          TextColumn("{task.fields[functions]} functions"), TimeElapsedColumn())
        self.p.start()
        self.t = self.p.add_task("files", total=total, functions=0)

    def update(self, functions: int) -> None:
        self.p.update(self.t, advance=1, functions=functions)

    def close(self) -> None:
        self.p.stop()
