"""The TypeScript benchmark's tasks, built from the recipe's npm packages (`groundcode bench build
--recipe typescript --out DIR`), in the Python benchmark's JSONL shape with `"language":
"typescript"`:

  function      a function or method body to write from its header and doc comment
                (languages/typescript_bodies.py; bodies of 2 to `max_body_lines` lines)
  dereference   the rest of a line after a member-access dot inside a method body
                (languages/typescript.py's lexer tells code dots from strings, templates,
                comments, regexes and numbers)
  name          (`kinds`, the four-kind benchmark) the rest of a line from a name the method
                body reads (languages/typescript_scope.read: a load, not a binding, no dot
                before it), in the same methods as the dereference tasks
  import        (`kinds`) the rest of a one-line `import … from "x"` statement after `import `

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
from ..languages.typescript_scope import IMPLICIT, module_uses, read
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
    kinds: tuple = ("function", "dereference")
    imports_per_package: int = 10


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
    functions, methods, imports = [], [], []
    for f in source_files(pkg, entry.get("source_dirs")):
        text = f.read_text(encoding="utf-8", errors="replace")
        rel = f.relative_to(pkg).as_posix()
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        lexer = Lexer("")
        if "import" in opts.kinds:
            imports += _import_points(text, repo, rel, sha)
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
                points = {}
                if "dereference" in opts.kinds:
                    points["dereference"] = [
                        _cursor(common, text, k + 1, "dereference") for k in range(b.body_start, b.body_end)
                        if text[k] == "." and text[k + 1: k + 2].isidentifier() and lexer.dot_is_code(text, k)]
                if "name" in opts.kinds:
                    points["name"] = [_cursor(common, text, off, "name")
                                      for name, off in read(text, b.body_start, b.body_end).loads
                                      if name not in IMPLICIT]
                if any(points.values()):
                    methods.append((f"{repo}/{rel}::{b.qualname}", points))
    seen: dict[str, int] = {}
    for t in functions:        # a getter and its setter, overloads: one qualified name, two bodies
        n = seen[t["task_id"]] = seen.get(t["task_id"], 0) + 1
        if n > 1:              # the second and later are told apart by their line
            t["task_id"] += f"@{t['def_line']}"
    functions.sort(key=lambda t: _order(opts.seed, t["task_id"]))
    methods.sort(key=lambda m: _order(opts.seed, m[0]))
    out = functions[: opts.functions_per_package] if "function" in opts.kinds else []
    for _, points in methods[: opts.methods_per_package]:
        for kind in ("dereference", "name"):
            got = sorted(points.get(kind, []), key=lambda t: _order(opts.seed, t["task_id"]))
            out += got[: opts.points_per_method]
    imports.sort(key=lambda t: _order(opts.seed, t["task_id"]))
    return out + imports[: opts.imports_per_package]


def _cursor(common: dict, text: str, offset: int, kind: str) -> dict:
    """A cursor task at `offset`: the reference is the rest of its line."""
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1)
    eol = text.find("\n", offset)
    tag = "" if kind == "dereference" else f"#{kind}"
    return dict(common, task_id=f"{common['repo']}/{common['path']}::{common['scope']}@{line}:{col}{tag}",
                kind=kind, line=line, col=col, offset=offset,
                reference=text[offset: eol if eol >= 0 else len(text)])


def _import_points(text: str, repo: str, rel: str, sha: str) -> list[dict]:
    """A cursor after `import ` in each one-line `import … from "x"` statement of the file."""
    out, seen = [], set()
    for use in module_uses(text, 0, len(text)):
        at = use.stmt
        eol = text.find("\n", at)
        eol = len(text) if eol < 0 else eol
        if at in seen or not text.startswith("import ", at) or not use.at < eol \
                or text.rfind("\n", 0, at) + 1 != at or " from " not in text[at:eol]:
            continue
        seen.add(at)
        common = {"language": "typescript", "repo": repo, "source": f"npm:{repo}", "path": rel,
                  "scope": "<module>", "file_sha256": sha}
        out.append(_cursor(common, text, at + len("import "), "import"))
    return out


def _recipe_options(recipe: dict) -> TsBuildOptions:
    return TsBuildOptions(**{k: (tuple(v) if k == "kinds" else v) for k, v in (recipe.get("options") or {}).items()
                             if k in TsBuildOptions.__dataclass_fields__})


def build(recipe: dict, out_dir: Path, sources_dir: Path, opts: TsBuildOptions | None = None,
          progress=None) -> dict:
    opts = opts or _recipe_options(recipe)
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks, stats = [], []
    for entry in recipe["packages"]:
        pkg = prepare(entry, recipe, sources_dir)
        got = package_tasks(entry, pkg, opts)
        for t in got:
            t["repo_dir"] = str(pkg)
        tasks += got
        s = {"package": f"{entry['name']}@{entry['version']}"} \
            | {f"{k}_tasks": sum(t["kind"] == k for t in got) for k in opts.kinds}
        stats.append(s)
        if progress:
            progress(s)
    tasks.sort(key=lambda t: t["task_id"])
    write_jsonl(out_dir / "tasks.jsonl", tasks)
    manifest = {"recipe": {k: v for k, v in recipe.items() if k != "packages"} | {"packages": len(recipe["packages"])},
                "options": asdict(opts), "packages": stats,
                "counts": {k: sum(t["kind"] == k for t in tasks) for k in opts.kinds},
                "tasks_sha256": task_hash(tasks)}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    want = recipe.get("tasks_sha256")
    if want and manifest["tasks_sha256"] != want and opts == _recipe_options(recipe):
        raise GroundcodeError(f"the TypeScript recipe built other tasks than it pins (tasks sha256 "
                              f"{manifest['tasks_sha256'][:16]}…, pinned {want[:16]}…): a package's "
                              f"files or the task extraction changed; the tasks are in {out_dir}")
    return manifest
