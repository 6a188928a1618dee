"""Build benchmark tasks from repositories: ToolGen-style *function* tasks and MGD-style *dereference* tasks
(and, when asked, the cursor kinds of the four-kind benchmark: name, call, import).

function:    a documented function whose body uses >= 1 repository-level dependency (a name the
             analyzer resolves to a definition inside the repository); the model writes the body
             from the signature and docstring (prompt = the file up to the docstring).
dereference: inside a method (not an initializer, >= 2 statements, >= 7 lines, >= 1 repository
             dependency), up to `points_per_method` `expr.` positions spread uniformly; the model
             completes the method from right after the dot. <= `methods_per_repo` methods per repo.

Sampling is seeded per (seed, repository, kind) and candidates are analyzed in that order until the
caps fill, so a rebuild from the same archives, options and analyzer gives the same tasks; the
manifest's `tasks_sha256` (over the tasks without machine paths) proves it.
Not here: downloads (sources.py), AST scanning (extract.py), generation (harness.py).
Test: tests/test_bench_builder.py.
"""
from __future__ import annotations

import hashlib
import json
import platform
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import GroundcodeError
from . import extract
from ..jsonl import write_jsonl
from .sources import RepoSource

SKIP_DIRS = {"test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark", "benchmarks",
             "build", "dist", "scripts", "__pycache__", "site-packages", "node_modules", "venv", ".venv"}
TASK_KINDS = ("function", "dereference")
# the cursor kinds of the four-kind benchmark (issue 40), built only when asked (`--kinds`): a
# cursor where a name is read, right after a call's `(`, and inside a module-level import line;
# with `dereference` (a member after a dot) the four hallucinations. `keyword` (Python): the call
# kind's other cursor, at a keyword argument's name, where a parameter's name is invented
CURSOR_KINDS = ("name", "call", "import", "keyword")
ALL_KINDS = TASK_KINDS + CURSOR_KINDS


@dataclass
class BuildOptions:
    seed: int = 0
    kinds: tuple = TASK_KINDS
    functions_per_repo: int = 20      # function tasks kept per repository
    max_body_lines: int = 30          # longer bodies are skipped (ToolGen's functions average ~55 tokens)
    methods_per_repo: int = 20        # MGD: <= 20 methods per repository
    points_per_method: int = 10       # MGD: <= 10 dereference positions per method
    min_method_lines: int = 7         # MGD: methods spanning >= 7 lines
    max_files_per_repo: int = 400     # guards against vendored trees


@dataclass
class RepoStats:
    name: str
    spec: str
    artifact: str = ""
    sha256: str = ""
    files: int = 0
    unparsable_files: int = 0
    function_candidates: int = 0
    functions_analyzed: int = 0
    function_tasks: int = 0
    method_candidates: int = 0
    methods_analyzed: int = 0
    methods: int = 0
    dereference_tasks: int = 0
    name_tasks: int = 0
    call_tasks: int = 0
    keyword_tasks: int = 0
    import_tasks: int = 0
    analysis_s: float = 0.0
    skipped: list = field(default_factory=list)


def python_files(root: Path, limit: int) -> list[Path]:
    """Library .py files under root, sorted, without tests, docs, examples, setup scripts."""
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        parts = {x.lower() for x in rel.parts[:-1]}
        name = p.name.lower()
        if parts & SKIP_DIRS or any(x.endswith((".egg-info", ".dist-info", ".data")) for x in parts):
            continue
        if name in ("setup.py", "conftest.py", "noxfile.py", "fabfile.py") or name.startswith("test_") \
                or name.endswith("_test.py") or name == "tests.py":
            continue
        out.append(p)
    return out[:limit]


def _dependencies(root: Path, path: Path, code: str, first: int, last: int) -> set[str]:
    from ..analysis.jedi_oracle import repo_dependencies  # Jedi in-process (the jedi_* modules import jedi)
    try:
        return set(repo_dependencies(root, path, code, first, last))
    except Exception:  # an analyzer crash on one function must not end a build; counted as "no deps"
        return set()


def build_repo(src: RepoSource, opts: BuildOptions) -> tuple[list[dict], RepoStats]:
    """All tasks for one repository, and the counts behind them."""
    stats = RepoStats(name=src.name, spec=src.spec, artifact=src.artifact, sha256=src.sha256)
    files = python_files(src.root, opts.max_files_per_repo)
    stats.files = len(files)
    texts: dict[str, str] = {}
    fn_cands, meth_cands = [], []
    for p in files:
        rel = p.relative_to(src.root).as_posix()
        try:
            code = p.read_text(encoding="utf-8")
            sites = extract.functions(code, require_docstring=False)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            stats.unparsable_files += 1
            continue
        texts[rel] = code
        for s in sites:
            if s.docstring and s.end_line - s.body_line + 1 <= opts.max_body_lines:
                fn_cands.append((rel, s))
            if extract.dereference_method(s, opts.min_method_lines):
                meth_cands.append((rel, s))
    stats.function_candidates, stats.method_candidates = len(fn_cands), len(meth_cands)
    tasks: list[dict] = []
    trees: dict = {}
    t0 = time.perf_counter()

    def analysed(cands: list, kind: str, counter: str, full):
        """Candidates in a seeded order with their repository dependencies, until `full()`;
        `counter` (a stats field) counts the analysed ones."""
        random.Random(f"{opts.seed}/{src.name}/{kind}").shuffle(cands)
        for rel, s in cands:
            if full():
                return
            setattr(stats, counter, getattr(stats, counter) + 1)
            yield rel, s, _dependencies(src.root, src.root / rel, texts[rel], s.body_line, s.end_line)

    if "function" in opts.kinds:
        for rel, s, deps in analysed(fn_cands, "function", "functions_analyzed",
                                     lambda: stats.function_tasks >= opts.functions_per_repo):
            if deps:
                tasks.append(_function_task(src, rel, texts[rel], s, deps))
                stats.function_tasks += 1
    cursor = [k for k in ("name", "call", "keyword") if k in opts.kinds]
    if "dereference" in opts.kinds or cursor:
        for rel, s, deps in analysed(meth_cands, "dereference", "methods_analyzed",
                                     lambda: stats.methods >= opts.methods_per_repo):
            if not deps:
                continue
            stats.methods += 1
            if "dereference" in opts.kinds:
                for line, col in extract.spread(s.points, opts.points_per_method):
                    tasks.append(_dereference_task(src, rel, texts[rel], s, line, col, deps))
                    stats.dereference_tasks += 1
            for kind in cursor:        # the same methods: a name read, a call's arguments, a keyword's name
                tree, lines = _tree(trees, rel, texts[rel])
                pts = getattr(extract, f"{kind}_points")(tree, lines, s.body_line, s.end_line)
                for line, col in extract.spread(pts, opts.points_per_method):
                    tasks.append(_dereference_task(src, rel, texts[rel], s, line, col, deps, kind))
                    setattr(stats, f"{kind}_tasks", getattr(stats, f"{kind}_tasks") + 1)
    if "import" in opts.kinds:
        found = []
        for rel in sorted(texts):
            tree, lines = _tree(trees, rel, texts[rel])
            found += [(rel, line, col) for line, col in extract.import_points(tree, lines)]
        random.Random(f"{opts.seed}/{src.name}/import").shuffle(found)
        for rel, line, col in found[: opts.methods_per_repo]:
            tasks.append(_import_task(src, rel, texts[rel], line, col))
            stats.import_tasks += 1
    stats.analysis_s = round(time.perf_counter() - t0, 2)
    return tasks, stats


def _common(src: RepoSource, rel: str, code: str, s: extract.FunctionSite, deps: set[str]) -> dict:
    lines = code.splitlines(keepends=True)
    return {
        "repo": src.name, "source": src.spec, "path": rel, "scope": s.scope,
        "def_line": s.def_line, "end_line": s.end_line, "indent": s.indent,
        "signature": "".join(lines[s.def_line - 1:max(s.def_line, s.header_end)]).rstrip("\n"),
        "docstring": s.docstring,
        "function": "".join(lines[s.def_line - 1:s.end_line]),
        "deps": sorted(deps),
        "file_sha256": hashlib.sha256(code.encode("utf-8")).hexdigest(),
        "repo_dir": "",   # filled by build(); machine-specific, excluded from the task hash
    }


def _function_task(src, rel, code, s, deps) -> dict:
    lines = code.splitlines(keepends=True)
    t = _common(src, rel, code, s, deps)
    t.update(task_id=f"{src.name}/{rel}::{s.scope}", kind="function", line=s.body_line, col=0,
             reference="".join(lines[s.body_line - 1:s.end_line]))
    return t


def _dereference_task(src, rel, code, s, line, col, deps, kind: str = "dereference") -> dict:
    """A cursor inside a method, the reference the rest of it (`kind`: dereference, name, call)."""
    lines = code.splitlines(keepends=True)
    t = _common(src, rel, code, s, deps)
    rest = lines[line - 1][col:] + "".join(lines[line:s.end_line])
    tag = "" if kind == "dereference" else f"#{kind}"
    t.update(task_id=f"{src.name}/{rel}::{s.scope}@{line}:{col}{tag}", kind=kind, line=line, col=col,
             reference=rest)
    return t


def _import_task(src, rel, code, line, col) -> dict:
    """A cursor inside a module-level import line, the reference the rest of that line."""
    lines = code.splitlines(keepends=True)
    return {"repo": src.name, "source": src.spec, "path": rel, "scope": "<module>", "def_line": line,
            "end_line": line, "indent": 0, "signature": "", "docstring": "", "function": lines[line - 1],
            "deps": [], "file_sha256": hashlib.sha256(code.encode("utf-8")).hexdigest(), "repo_dir": "",
            "task_id": f"{src.name}/{rel}::<module>@{line}:{col}#import", "kind": "import", "line": line,
            "col": col, "reference": lines[line - 1][col:]}


def _tree(cache: dict, rel: str, code: str):
    if rel not in cache:
        from .. import pyparse
        cache[rel] = (pyparse.parse(code), code.splitlines())
    return cache[rel]


def task_hash(tasks: list[dict]) -> str:
    """sha256 over the tasks' canonical JSON, sorted by task_id, without machine-specific fields."""
    h = hashlib.sha256()
    for t in sorted(tasks, key=lambda t: t["task_id"]):
        clean = {k: v for k, v in t.items() if k != "repo_dir"}
        h.update(json.dumps(clean, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def build(sources: list[RepoSource], opts: BuildOptions, out_dir: Path, *, recipe: dict | None = None,
          progress=None) -> dict:
    """Build tasks for every source into out_dir/tasks.jsonl and out_dir/manifest.json; returns the manifest."""
    unknown = set(opts.kinds) - set(ALL_KINDS)
    if unknown:
        raise GroundcodeError(f"unknown task kind(s) {sorted(unknown)}; choose from {ALL_KINDS}")
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise GroundcodeError(f"two sources share a repository name: {names}")
    out_dir.mkdir(parents=True, exist_ok=True)
    all_tasks, repos = [], []
    for src in sources:
        tasks, stats = build_repo(src, opts)
        for t in tasks:
            t["repo_dir"] = str(src.root)
        all_tasks += tasks
        repos.append(asdict(stats))
        if progress:
            progress(stats)
    all_tasks.sort(key=lambda t: t["task_id"])
    write_jsonl(out_dir / "tasks.jsonl", all_tasks)
    manifest = {
        "recipe": recipe or {},
        "options": asdict(opts) | {"kinds": list(opts.kinds)},
        "repos": repos,
        "counts": {k: sum(t["kind"] == k for t in all_tasks) for k in ALL_KINDS
                   if k in TASK_KINDS or k in opts.kinds},
        "tasks_sha256": task_hash(all_tasks),
        "versions": {"python": platform.python_version(), "jedi": _version("jedi")},
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"
