"""Where snippets come from: the "Examples" sections of installed libraries' docstrings, read
statically, and user JSONL files with description/code fields.

Docstrings: every `.py` file of the package (tests left out) is parsed with `ast`, never
imported; docstrings of modules, classes and functions, and the strings numpy hands to
`add_newdoc(...)` for its compiled functions, are scanned for a numpydoc `Examples` section.
One snippet per example: a run of doctest lines (`>>>`/`...`, outputs dropped) up to the next
prose paragraph, described by the prose that precedes it in the section (empty for the first
example when no prose leads it); `name` is the documented object ("numpy.percentile"). Examples
that only import are dropped. The package is located (and its version and license read) by
asking the interpreter that will use it (`python`, default this one) for its spec and metadata.

Not here: deduplication and decontamination (snippet_index.py, contamination.py).
Test: tests/test_snippets.py (a fixture package written in the test).
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import GroundcodeError
from .snippet import Snippet
from .. import pyparse

_HEADER = re.compile(r"^\s*(\w[\w ]*)\n\s*-{3,}\s*$", re.M)
_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


@dataclass
class PackageInfo:
    name: str              # import name
    paths: list            # package directories
    dist: str = ""
    version: str = ""
    license: str = ""


_PROBE = r"""
import importlib.util, importlib.metadata as md, json, sys
out = {}
dists = md.packages_distributions()
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    if spec is None:
        out[name] = None
        continue
    paths = list(spec.submodule_search_locations or []) or ([spec.origin] if spec.origin else [])
    dist = (dists.get(name) or [""])[0]
    version = lic = ""
    if dist:
        try:
            m = md.metadata(dist)
            version = m.get("Version", "")
            lic = m.get("License-Expression") or ""
            if not lic:
                cls = [c.split("::")[-1].strip() for c in m.get_all("Classifier") or [] if c.startswith("License ::")]
                lic = cls[0] if cls else (m.get("License") or "").strip().splitlines()[0][:80] if m.get("License") else ""
        except md.PackageNotFoundError:
            pass
    out[name] = {"paths": paths, "dist": dist, "version": version, "license": lic}
print(json.dumps(out))
"""


def locate(names: list[str], python: str | None = None, optional: tuple = ()) -> dict[str, PackageInfo]:
    """Package directories, distribution, version and license as `python` sees them (no import).
    A missing name is an error unless it is in `optional` (then it is left out of the answer)."""
    r = subprocess.run([python or sys.executable, "-c", _PROBE, *names], capture_output=True, text=True,
                       timeout=120)
    if r.returncode:
        raise GroundcodeError(f"cannot ask {python or sys.executable} for packages: {r.stderr.strip()[-200:]}")
    found = json.loads(r.stdout)
    missing = [n for n in names if not found.get(n) and n not in optional]
    if missing:
        raise GroundcodeError(f"not installed for {python or sys.executable}: {', '.join(missing)}")
    return {n: PackageInfo(n, **found[n]) for n in names if found.get(n)}


def examples_section(doc: str) -> str:
    """The text of a numpydoc `Examples` section ('' when there is none)."""
    heads = list(_HEADER.finditer(doc))
    for i, m in enumerate(heads):
        if m.group(1).strip().lower() == "examples":
            end = heads[i + 1].start() if i + 1 < len(heads) else len(doc)
            return doc[m.end():end]
    return ""


def split_examples(section: str) -> list[tuple[str, str]]:
    """[(description, code)]: each run of doctest lines with the prose paragraph(s) before it.
    A non-prompt line right after a prompt line (no blank line between) is output, dropped."""
    out: list[tuple[str, str]] = []
    prose: list[str] = []
    code: list[str] = []
    state = "start"                          # start | prose | code | output | blank

    def flush():
        if code:
            out.append((" ".join(" ".join(prose).split()), "\n".join(code).rstrip() + "\n"))
            prose.clear()
            code.clear()
    for raw in section.splitlines():
        line = raw.strip()
        if line.startswith(">>>"):
            code.append(_DIRECTIVE.sub("", raw.lstrip()[4:]))
            state = "code"
        elif line.startswith("...") and state == "code":
            code.append(_DIRECTIVE.sub("", raw.lstrip()[4:]))
        elif not line:
            state = "blank" if state != "start" else state
        elif state in ("code", "output"):
            state = "output"
        else:
            flush()
            prose.append(line)
            state = "prose"
    flush()
    return [(d, c) for d, c in out if not _only_imports(c)]


def _only_imports(code: str) -> bool:
    try:
        tree = pyparse.parse(code)
    except SyntaxError:
        return not code.strip()
    return all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)


def _docstrings(tree: ast.Module, module: str) -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of the module, its classes and functions, and add_newdoc calls."""
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        yield module, doc

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{node.name}"
                d = ast.get_docstring(node, clean=True)
                if d:
                    yield name, d
                if isinstance(node, ast.ClassDef):
                    yield from walk(node.body, name)
    yield from walk(tree.body, module)
    for node in ast.walk(tree):               # numpy: add_newdoc('numpy._core.multiarray', 'array', doc)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "add_newdoc":
            strs = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            tup = [a for a in node.args if isinstance(a, ast.Tuple)]
            if len(strs) >= 3:
                yield f"{strs[0]}.{strs[1]}", _clean(strs[2])
            elif len(strs) == 2 and tup and len(tup[0].elts) == 2 \
                    and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in tup[0].elts):
                yield f"{strs[0]}.{strs[1]}.{tup[0].elts[0].value}", _clean(tup[0].elts[1].value)


def _clean(doc: str) -> str:
    import inspect
    return inspect.cleandoc(doc)


def package_snippets(info: PackageInfo, progress=None, summaries: dict | None = None) -> Iterator[Snippet]:
    """Snippets of every docstring example in an installed package (static; nothing imported).
    `summaries`, when given, gets {name: the docstring's first paragraph} of documented objects
    that have examples (held-out retrieval queries are made from them)."""
    tag = f"{info.dist or info.name}=={info.version}" if info.version else info.name
    for root in info.paths:
        root = Path(root)
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for path in files:
            rel = path.relative_to(root.parent)
            parts = rel.parts
            if any(p in ("tests", "testing", "_vendor", "vendored") for p in parts[:-1]):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if ">>>" not in text:
                continue
            try:
                tree = pyparse.parse(text)
            except (SyntaxError, ValueError):
                continue
            module = ".".join(parts)[:-3].removesuffix(".__init__")
            for qual, doc in _docstrings(tree, module):
                section = examples_section(doc)
                if not section:
                    continue
                short = qual.rsplit(".", 1)[-1] if qual != module else module
                name = _public_name(qual, info.name)
                found = split_examples(section)
                if found and summaries is not None:
                    summaries.setdefault(name, " ".join(doc.strip().split("\n\n")[0].split()))
                for desc, code in found:
                    yield Snippet(description=desc, code=code, source=f"{tag}:{rel.as_posix()}:{short}",
                                  license=info.license, name=name)
            if progress:
                progress(1)


def _public_name(qual: str, package: str) -> str:
    """numpy._core.fromnumeric.sum -> numpy.sum; sklearn.linear_model._base.LinearRegression ->
    sklearn.linear_model.LinearRegression (private module parts dropped)."""
    parts = qual.split(".")
    keep = [p for p in parts[1:-1] if not p.startswith("_")]
    return ".".join([parts[0], *keep, parts[-1]]) if len(parts) > 1 else qual


def jsonl_snippets(path: Path, license: str = "") -> Iterator[Snippet]:
    """Snippets of a JSONL file with `description` (or `title`/`question`/`intent`) and `code`
    (or `snippet`/`answer`) fields; `source`, `license`, `name` are kept when present."""
    from ..jsonl import read_jsonl
    n = 0
    for i, r in enumerate(read_jsonl(path)):
        desc = next((r[k] for k in ("description", "title", "question", "intent") if isinstance(r.get(k), str)), None)
        code = next((r[k] for k in ("code", "snippet", "answer") if isinstance(r.get(k), str)), None)
        if desc is None or not code or not code.strip():
            continue
        n += 1
        yield Snippet(description=" ".join(desc.split()), code=code if code.endswith("\n") else code + "\n",
                      source=str(r.get("source") or f"{Path(path).name}:{i + 1}"),
                      license=str(r.get("license") or license), name=str(r.get("name") or ""))
    if n == 0:
        raise GroundcodeError(f"{path}: no records with a description and a code field")
