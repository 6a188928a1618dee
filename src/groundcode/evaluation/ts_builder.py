"""The TypeScript benchmark's tasks, built from the recipe's npm packages (`groundcode bench build
--recipe typescript --out DIR`), in the Python benchmark's JSONL shape with `"language":
"typescript"`:

  function      a function or method body to write from its header and doc comment
                (languages/typescript_bodies.py; bodies of 2 to `max_body_lines` lines)
  dereference   the rest of a line after a member-access dot inside a method body
                (languages/typescript.py's lexer tells code dots from strings, templates,
                comments, regexes and numbers)

Choices are made in a fixed order (sha256 of seed and task id), so a recipe builds the same
tasks everywhere; the manifest records the tasks' hash. Sources are the packages' own files as
npm serves them (evaluation/ts_packages.py); only the tasks' JSONL and the manifest are written
to the output directory, outside the repository.
Test: tests/test_tsc_judge.py.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import GroundcodeError
from ..jsonl import write_jsonl
from ..languages.typescript import Lexer
from ..languages.typescript_bodies import bodies
from .builder import task_hash
from .ts_packages import prepare

_TEST_PARTS = ("test", "tests", "__tests__", "__mocks__", "bench", "benchmarks", "examples")


@dataclass
class TsBuildOptions:
    seed: int = 0
    functions_per_package: int = 20
    methods_per_package: int = 20
    points_per_method: int = 10
    max_body_lines: int = 30


def _order(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\0{key}".encode()).hexdigest()


def source_files(pkg: Path, dirs) -> list[Path]:
    out = []
    for d in dirs or ["src"]:
        for f in sorted((pkg / d).rglob("*.ts")):
            rel = f.relative_to(pkg)
            if f.name.endswith(".d.ts") or any(p in _TEST_PARTS for p in rel.parts) \
                    or ".test." in f.name or ".spec." in f.name:
                continue
            out.append(f)
    return out


def package_tasks(entry: dict, pkg: Path, opts: TsBuildOptions) -> list[dict]:
    repo = f"{entry['name']}@{entry['version']}"
    functions, methods = [], []
    for f in source_files(pkg, entry.get("source_dirs")):
        text = f.read_text(encoding="utf-8", errors="replace")
        rel = f.relative_to(pkg).as_posix()
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        lexer = Lexer("")
        for b in bodies(text, tsx=f.suffix == ".tsx"):
            body = text[b.body_start:b.body_end]
            common = {"language": "typescript", "repo": repo, "source": f"npm:{repo}", "path": rel,
                      "scope": b.qualname, "def_line": b.line, "header": text[b.header_start:b.body_start],
                      "doc": b.doc, "body_start": b.body_start, "body_end": b.body_end, "file_sha256": sha}
            lines = body.strip("\n").count("\n") + 1
            if 2 <= lines <= opts.max_body_lines:
                functions.append(dict(common, task_id=f"{repo}/{rel}::{b.qualname}", kind="function",
                                      reference=body))
            if b.kind == "method":
                points = []
                for k in range(b.body_start, b.body_end):
                    if text[k] == "." and text[k + 1: k + 2].isidentifier() and lexer.dot_is_code(text, k):
                        line = text.count("\n", 0, k) + 1
                        col = k + 1 - (text.rfind("\n", 0, k) + 1)
                        eol = text.find("\n", k)
                        points.append(dict(common, task_id=f"{repo}/{rel}::{b.qualname}@{line}:{col}",
                                           kind="dereference", line=line, col=col, offset=k + 1,
                                           reference=text[k + 1: eol if eol >= 0 else len(text)]))
                if points:
                    methods.append((f"{repo}/{rel}::{b.qualname}", points))
    seen: dict[str, int] = {}
    for t in functions:        # a getter and its setter, overloads: one qualified name, two bodies
        n = seen[t["task_id"]] = seen.get(t["task_id"], 0) + 1
        if n > 1:              # the second and later are told apart by their line
            t["task_id"] += f"@{t['def_line']}"
    functions.sort(key=lambda t: _order(opts.seed, t["task_id"]))
    methods.sort(key=lambda m: _order(opts.seed, m[0]))
    out = functions[: opts.functions_per_package]
    for _, points in methods[: opts.methods_per_package]:
        points.sort(key=lambda t: _order(opts.seed, t["task_id"]))
        out += points[: opts.points_per_method]
    return out


def build(recipe: dict, out_dir: Path, sources_dir: Path, opts: TsBuildOptions | None = None,
          progress=None) -> dict:
    opts = opts or TsBuildOptions(**{k: v for k, v in (recipe.get("options") or {}).items()
                                     if k in TsBuildOptions.__dataclass_fields__})
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks, stats = [], []
    for entry in recipe["packages"]:
        pkg = prepare(entry, recipe, sources_dir)
        got = package_tasks(entry, pkg, opts)
        for t in got:
            t["repo_dir"] = str(pkg)
        tasks += got
        s = {"package": f"{entry['name']}@{entry['version']}",
             "function_tasks": sum(t["kind"] == "function" for t in got),
             "dereference_tasks": sum(t["kind"] == "dereference" for t in got)}
        stats.append(s)
        if progress:
            progress(s)
    tasks.sort(key=lambda t: t["task_id"])
    write_jsonl(out_dir / "tasks.jsonl", tasks)
    manifest = {"recipe": {k: v for k, v in recipe.items() if k != "packages"} | {"packages": len(recipe["packages"])},
                "options": asdict(opts), "packages": stats,
                "counts": {k: sum(t["kind"] == k for t in tasks) for k in ("function", "dereference")},
                "tasks_sha256": task_hash(tasks)}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    want = recipe.get("tasks_sha256")
    if want and manifest["tasks_sha256"] != want and asdict(opts) == dict(recipe.get("options") or {}):
        raise GroundcodeError(f"the TypeScript recipe built other tasks than it pins (tasks sha256 "
                              f"{manifest['tasks_sha256'][:16]}…, pinned {want[:16]}…): a package's "
                              f"files or the task extraction changed; the tasks are in {out_dir}")
    return manifest
