"""Declarations: what an IDE knows at the cursor, as model-only prompt blocks.

    blocks = declaration_blocks(ctx, budget_tokens=384, count=len)   # [PromptBlock], best first

For the code being written (a `CodeContext`: the real file around the cursor) this lists

  1. the enclosing class: its bases, docstring's first line, attributes (assigned anywhere in
     the class, with a type when the value is a call of a class or an annotated name), and the
     signatures and first docstring lines of its methods — the method being written excluded;
  2. the classes those attributes, the class's bases and the function's parameter annotations
     name, when they are defined in the repository;
  3. the repository names the file imports (`from pkg.mod import X`, `import pkg.mod as m`),
     ranked by how often the text around the cursor uses them;

each as a comment block headed by its file's path (`# shop/registry.py`), so a model that
continues code reads them as context, not as code to continue. The blocks come best first;
they stop at `budget_tokens` (counted with `count`, the model's tokenizer length). The body
being written is never shown (it is not in the context: the region between `before` and
`after` is what the model writes).

Static and fast (Python's `ast` over the file and the repository modules it imports, parsed once
per file version): no analyzer process, no imports of user code. What it is not: type
inference (Jedi's job, in the monitor) — an attribute whose value is not a plain call or an
annotation gets no type here. Installed libraries are not described (only repository files).
Test: tests/test_declarations.py.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..decoding.prompt import PromptBlock
from .. import pyparse


@dataclass
class ClassInfo:
    name: str
    path: Path
    line: int
    end_line: int
    bases: list[str] = field(default_factory=list)
    doc: str = ""
    attributes: dict[str, str] = field(default_factory=dict)     # name -> type text or ""
    methods: list[tuple[str, str, str, int]] = field(default_factory=list)  # (name, sig, doc, line)


@dataclass
class FunctionInfo:
    name: str
    path: Path
    line: int
    signature: str
    doc: str = ""


# -- parsing -------------------------------------------------------------------------------------

def _first_line(doc: str | None) -> str:
    if not doc:
        return ""
    return doc.strip().splitlines()[0].strip() if doc.strip() else ""


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    head = "async def" if isinstance(fn, ast.AsyncFunctionDef) else "def"
    ret = f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else ""
    return f"{head} {fn.name}({ast.unparse(fn.args)}){ret}"


def _value_type(value: ast.expr | None, annotation: ast.expr | None) -> str:
    """A type for an attribute from its annotation, or from `Name(...)`/`mod.Name(...)` calls
    whose callee looks like a class (capitalised); else ""."""
    if annotation is not None:
        return ast.unparse(annotation)
    if isinstance(value, ast.Call):
        f = value.func
        last = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if last[:1].isupper():
            return ast.unparse(f)
    if isinstance(value, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(value, (ast.Set, ast.SetComp)):
        return "set"
    if isinstance(value, ast.Constant) and value.value is not None:
        return type(value.value).__name__
    return ""


def _class_info(node: ast.ClassDef, path: Path) -> ClassInfo:
    info = ClassInfo(node.name, path, node.lineno, node.end_lineno or node.lineno,
                     [ast.unparse(b) for b in node.bases], _first_line(ast.get_docstring(node)))
    attrs = info.attributes
    for stmt in node.body:                          # class-level names
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            attrs.setdefault(stmt.target.id, _value_type(stmt.value, stmt.annotation))
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    attrs.setdefault(t.id, _value_type(stmt.value, None))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decos = {ast.unparse(d) for d in stmt.decorator_list}
            if "property" in decos or "functools.cached_property" in decos or "cached_property" in decos:
                ret = ast.unparse(stmt.returns) if stmt.returns is not None else ""
                attrs.setdefault(stmt.name, ret)
                continue
            info.methods.append((stmt.name, _signature(stmt), _first_line(ast.get_docstring(stmt)),
                                 stmt.lineno))
            for sub in ast.walk(stmt):              # self.x = ... / self.x: T = ... in methods
                targets, value, ann = [], None, None
                if isinstance(sub, ast.Assign):
                    targets, value = sub.targets, sub.value
                elif isinstance(sub, ast.AnnAssign):
                    targets, value, ann = [sub.target], sub.value, sub.annotation
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                            and t.value.id in ("self", "cls"):
                        typ = _value_type(value, ann)
                        if not attrs.get(t.attr):
                            attrs[t.attr] = typ
    return info


@dataclass
class ModuleInfo:
    path: Path
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local -> (module, name)
    tree: ast.Module | None = None


def _module_info(text: str, path: Path, package: str) -> ModuleInfo:
    info = ModuleInfo(path)
    try:
        tree = pyparse.parse(text)
    except SyntaxError:
        return info
    info.tree = tree
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            info.classes[stmt.name] = _class_info(stmt, path)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info.functions[stmt.name] = FunctionInfo(stmt.name, path, stmt.lineno, _signature(stmt),
                                                     _first_line(ast.get_docstring(stmt)))
        elif isinstance(stmt, ast.ImportFrom):
            mod = stmt.module or ""
            if stmt.level:                          # relative: resolve against the package
                parts = package.split(".") if package else []
                base = parts[: len(parts) - (stmt.level - 1)] if stmt.level > 1 else parts
                mod = ".".join([*base, mod] if mod else base)
            for a in stmt.names:
                if a.name != "*":
                    info.imports[a.asname or a.name] = (mod, a.name)
        elif isinstance(stmt, ast.Import):
            for a in stmt.names:
                info.imports[a.asname or a.name.split(".")[0]] = (a.name if a.asname else
                                                                 a.name.split(".")[0], None)
    return info


@lru_cache(maxsize=512)
def _module_file(path_str: str, mtime_ns: int, package: str) -> ModuleInfo:
    path = Path(path_str)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ModuleInfo(path)
    return _module_info(text, path, package)


def _package_of(path: Path, roots: tuple[Path, ...]) -> str:
    """Dotted package of a file under the first root that holds it: shop/cart.py -> "shop"."""
    for root in roots:
        try:
            rel = path.resolve().relative_to(root.resolve())
        except ValueError:
            continue
        return ".".join(rel.parent.parts)
    return ""


def import_roots(path: Path, repo: Path) -> tuple[Path, ...]:
    """Where `import pkg.mod` looks for repository code: the directory above the file's
    top-level package (walking up while `__init__.py` exists), the repository, repository/src."""
    d = Path(path).resolve().parent
    while (d / "__init__.py").is_file() and d.parent != d:
        d = d.parent
    out = []
    for r in (d, Path(repo).resolve(), Path(repo).resolve() / "src"):
        if r not in out:
            out.append(r)
    return tuple(out)


def _find_module(module: str, roots: tuple[Path, ...]) -> Path | None:
    if not module:
        return None
    parts = module.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        for cand in (base.with_suffix(".py"), base / "__init__.py"):
            if cand.is_file():
                return cand
    return None


def _load(module: str, roots: tuple[Path, ...]) -> ModuleInfo | None:
    p = _find_module(module, roots)
    if p is None:
        return None
    try:
        mtime = p.stat().st_mtime_ns
    except OSError:
        return None
    return _module_file(str(p), mtime, ".".join(module.split(".")[:-1]) if p.name != "__init__.py"
                        else module)


# -- the current file, with the region being written left out -----------------------------------

def _parse_current(ctx) -> ModuleInfo:
    """The current file as the analyzer sees it, minus the region being written: a body becomes
    `pass`; a cursor's unfinished line is dropped. Parsed with `ast`; None-tolerant."""
    before, after = ctx.before, ctx.after
    lead = getattr(ctx, "lead", "")
    head, _, cur = before.rpartition("\n")
    indent = re.match(r"[ \t]*", cur).group(0) if cur.strip() else (lead or cur)
    tries = [before + (lead or "    ") + "pass\n" + after,          # a function body
             head + "\n" + (indent or "") + "pass\n" + after,      # a cursor: its line dropped
             head + "\n" + after]
    package = _package_of(Path(ctx.path), import_roots(Path(ctx.path), Path(ctx.repo)))
    for text in tries:
        info = _module_info(text, Path(ctx.path), package)
        if info.tree is not None:
            return info
    return ModuleInfo(Path(ctx.path))


def _enclosing(info: ModuleInfo, line: int):
    """(class node, function node) around `line` (1-based), either may be None."""
    cls = fn = None
    if info.tree is None:
        return None, None
    for node in ast.walk(info.tree):
        end = getattr(node, "end_lineno", None)
        if end is None or not node.lineno <= line <= end:
            continue
        if isinstance(node, ast.ClassDef) and (cls is None or node.lineno > cls.lineno):
            cls = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (fn is None or node.lineno > fn.lineno):
            fn = node
    return cls, fn


# -- rendering -------------------------------------------------------------------------------------

def _rel(path: Path, roots: tuple[Path, ...]) -> str:
    """The path as an import sees it (shop/registry.py), else the file's name."""
    for root in roots:
        try:
            return path.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
    return path.name


def _render_class(c: ClassInfo, repo: tuple[Path, ...], skip_line: int | None = None) -> str:
    head = f"class {c.name}({', '.join(c.bases)}):" if c.bases else f"class {c.name}:"
    out = [f"# {_rel(c.path, repo)}", f"# {head}"]
    if c.doc:
        out.append(f'#     """{c.doc}"""')
    for name, typ in c.attributes.items():
        out.append(f"#     {name}: {typ}" if typ else f"#     {name}")
    for name, sig, doc, line in c.methods:
        if line == skip_line:
            continue
        out.append(f"#     {sig}: ...  # {doc}" if doc else f"#     {sig}: ...")
    return "\n".join(out) + "\n"


def _render_function(f: FunctionInfo, repo: tuple[Path, ...]) -> str:
    line = f"# {f.signature}: ...  # {f.doc}" if f.doc else f"# {f.signature}: ..."
    return f"# {_rel(f.path, repo)}\n{line}\n"


_TYPE_NAMES = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def declaration_blocks(ctx, budget_tokens: int = 384, count=None) -> list[PromptBlock]:
    """The declarations an IDE would show at `ctx`'s cursor, best first, within the budget
    (`count(text) -> tokens`; default: characters / 4)."""
    count = count or (lambda s: (len(s) + 3) // 4)
    repo = import_roots(Path(ctx.path), Path(ctx.repo))
    info = _parse_current(ctx)
    line = ctx.before.count("\n") + 1
    cls_node, fn_node = _enclosing(info, line)
    ranked: list[tuple[str, str]] = []         # (key, text) best first
    seen: set[str] = set()

    def add(key: str, text: str) -> None:
        if key not in seen:
            seen.add(key)
            ranked.append((key, text))

    def resolve(name: str):
        """A repository class or function for `name` as the current file sees it."""
        root, _, rest = name.partition(".")
        if not rest and root in info.classes:
            return info.classes[root]
        if not rest and root in info.functions:
            return info.functions[root]
        imp = info.imports.get(root)
        if imp is None:
            return None
        module, member = imp
        if member is not None:                  # from mod import member [as root]
            mi = _load(module, repo)
            target = member if not rest else rest.split(".")[-1]
            if mi is None:
                mi = _load(f"{module}.{member}", repo)   # from pkg import submodule
                target = rest.split(".")[-1] if rest else ""
            if mi is None:
                return None
            return mi.classes.get(target) or mi.functions.get(target)
        mod_path, _, last = rest.rpartition(".")
        mi = _load(".".join(p for p in (module, mod_path) if p), repo)
        if mi is None:
            return None
        return mi.classes.get(last) or mi.functions.get(last)

    def add_named(name: str) -> None:
        d = resolve(name)
        if isinstance(d, ClassInfo):
            add(f"class:{d.path}:{d.name}", _render_class(d, repo))
        elif isinstance(d, FunctionInfo):
            add(f"fn:{d.path}:{d.name}", _render_function(d, repo))

    # 1. the enclosing class, without the method being written
    if cls_node is not None:
        c = _class_info(cls_node, Path(ctx.path))
        add(f"class:{ctx.path}:{c.name}",
            _render_class(c, repo, skip_line=fn_node.lineno if fn_node is not None else None))
        # 2. what its attributes, bases and the function's annotations name
        for typ in list(c.attributes.values()) + c.bases:
            for n in _TYPE_NAMES.findall(typ):
                add_named(n)
    if fn_node is not None:
        for a in fn_node.args.posonlyargs + fn_node.args.args + fn_node.args.kwonlyargs:
            if a.annotation is not None:
                for n in _TYPE_NAMES.findall(ast.unparse(a.annotation)):
                    add_named(n)
    # 3. the file's repository imports, by use in the text around the cursor
    window = ctx.before[-4000:] + ctx.after[:2000]
    uses = {name: len(re.findall(rf"\b{re.escape(name)}\b", window)) for name in info.imports}
    for name in sorted(info.imports, key=lambda n: -uses[n]):
        add_named(name)

    blocks, used = [], 0
    for key, text in ranked:
        n = count(text)
        if used + n > budget_tokens:
            continue                            # a smaller one further down may still fit
        used += n
        blocks.append(PromptBlock(text, source="declaration:" + key.split(":", 1)[1]))
    return blocks
