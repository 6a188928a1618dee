"""Which modules a TypeScript/JavaScript import may name, read from the file system alone: the
TypeScript names monitor's module index. Nothing is run (no npm, no package scripts, no
language server needed).

    index = ts_module_index(root)            # cached per root
    index.resolve("x", path)                 # TsResolved(kind, why): "ok", "missing" or
                                             # "unknown" (fail open, `why` says why) for
                                             # `import ... from "x"` in the file `path`
    index.candidates(path)                   # the specifiers that resolve from `path`: the
                                             # installed packages, Node's modules, the
                                             # project's modules near the file ("./x",
                                             # "./dir/x", "../x", "../dir/x")
    index.candidates_for(path, names)        # ... those that export all of `names`, else
                                             # those whose text holds them

How a specifier resolves (TypeScript's and Node's rules, in the part a file system shows):
- relative (`./x`, `../x`, `/x`): a file with a TypeScript or JavaScript extension (`./x.js`
  names `x.ts` too), or a directory with an index or a package.json; else missing;
- `node:x` and Node's own modules (`fs`, `path`, ...): exist;
- a package: `node_modules/<name>` (or `@types/<name>`) in the file's directory or one above
  it, up to the filesystem root, as Node looks; a subpath of an installed package exists when a
  file holds it, else its `exports` decide and, where they cannot be read, it fails open; the
  package the file belongs to (its nearest package.json's `name`) is found by that name too;
- a tsconfig's `baseUrl` (a file under it exists) and `paths` (a specifier one of its patterns
  matches fails open: `@/*` matches `@/x`, not `redux-x`), read from the file's directory up to
  the root; a config that cannot be read whole (not JSON with comments, an `extends`) fails
  open for every bare specifier;
- fails open ("unknown") where the file system cannot tell: a mapping as above, a dependency
  the package.json declares that is not installed, no node_modules and no package.json at all,
  a specifier with an interpolation or a loader prefix (`x!y`). With no node_modules (nothing
  installed yet) a package.json still says what may be imported: an undeclared package is
  missing, and the declared ones are candidates.
Test: tests/test_names_typescript.py.
"""
from __future__ import annotations

import functools
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

_EXTS = (".ts", ".tsx", ".d.ts", ".mts", ".cts", ".d.mts", ".d.cts", ".js", ".jsx", ".mjs", ".cjs",
         ".json")
_JS = {".js": (".ts", ".tsx", ".d.ts"), ".mjs": (".mts", ".d.mts"), ".cjs": (".cts", ".d.cts"),
       ".jsx": (".tsx",)}
# Node's own modules (node >= 18, `require("module").builtinModules` without the internals)
NODE = frozenset("""assert assert/strict async_hooks buffer child_process cluster console constants crypto
dgram diagnostics_channel dns dns/promises domain events fs fs/promises http http2 https inspector
inspector/promises module net os path path/posix path/win32 perf_hooks process punycode querystring
readline readline/promises repl stream stream/consumers stream/promises stream/web string_decoder
sys timers timers/promises tls trace_events tty url util util/types v8 vm wasi worker_threads zlib
test sqlite sea""".split())


@dataclass(frozen=True)
class TsResolved:
    kind: str                 # "ok" | "missing" | "unknown"
    why: str = ""


def _package_name(spec: str) -> tuple[str, str]:
    """("@scope/name" or "name", the subpath after it, "" for none)."""
    parts = spec.split("/")
    k = 2 if spec.startswith("@") else 1
    return "/".join(parts[:k]), "/".join(parts[k:])


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None


_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING = re.compile(r",(\s*[}\]])")


def _tsconfig(path: Path) -> dict | None:
    """A tsconfig's compilerOptions (JSON with comments and trailing commas), or None where it
    cannot be read whole: not JSON, or an `extends` (its base may map modules too)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    try:
        data = json.loads(_TRAILING.sub(r"\1", text))
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("extends"):
        return None
    opts = data.get("compilerOptions") or {}
    return opts if isinstance(opts, dict) else None


def _matches(pattern: str, spec: str) -> bool:
    """Does a `paths` key match the specifier (`@/*` matches `@/x`; no star: the key itself)?"""
    if "*" not in pattern:
        return pattern == spec
    head, _, tail = pattern.partition("*")
    return len(spec) >= len(head) + len(tail) and spec.startswith(head) and spec.endswith(tail)


class TsModuleIndex:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._lock = threading.Lock()
        self._dirs: dict = {}

    # -- what exists ------------------------------------------------------------------------
    def _node_modules(self, start: Path) -> list[Path]:
        """The node_modules directories Node looks in from `start` (nearest first)."""
        out = []
        d = start
        while True:
            nm = d / "node_modules"
            if nm.is_dir():
                out.append(nm)
            if d.parent == d:
                return out
            d = d.parent

    def _installed(self, nm: Path) -> frozenset:
        """The packages of a node_modules directory (read again when it changes: an install)."""
        try:
            stamp = nm.stat().st_mtime_ns
        except OSError:
            return frozenset()
        with self._lock:
            hit = self._dirs.get(nm)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        names = set()
        try:
            for e in nm.iterdir():
                if e.name.startswith("."):
                    continue
                if e.name.startswith("@") and e.is_dir():
                    names.update(f"{e.name}/{s.name}" for s in e.iterdir() if not s.name.startswith("."))
                else:
                    names.add(e.name)
        except OSError:
            pass
        got = frozenset(names)
        with self._lock:
            self._dirs[nm] = (stamp, got)
        return got

    def _declared(self, start: Path) -> set | None:
        """Dependencies the package.json files from `start` up to the root declare (None: no
        package.json there that reads as one)."""
        out: set | None = None
        d = start
        while True:
            data = _read_json(d / "package.json")
            if isinstance(data, dict):
                out = out if out is not None else set()
                for table in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
                    deps = data.get(table)
                    if isinstance(deps, dict):
                        out.update(deps)
            if d == self.root or d.parent == d:
                return out
            d = d.parent

    def _own_package(self, start: Path, name: str) -> Path | None:
        """The directory of the nearest package.json above `start` when it is the package
        `name` itself (a package imports itself by name through its `exports`)."""
        d = start
        while True:
            data = _read_json(d / "package.json")
            if isinstance(data, dict):
                return d if data.get("name") == name else None
            if d == self.root or d.parent == d:
                return None
            d = d.parent

    def _mapped(self, start: Path, spec: str) -> str | None:
        """What the tsconfig/jsconfig files from `start` up to the root say of a bare `spec`
        that no node_modules holds: "ok" (a file under `baseUrl`), "mapped" (it matches a
        `paths` pattern, or a config cannot be read whole: an `extends` not followed, text
        that is not JSON with comments), None (no mapping touches it)."""
        d = start
        while True:
            for name in ("tsconfig.json", "jsconfig.json"):
                f = d / name
                if not f.is_file():
                    continue
                opts = _tsconfig(f)
                if opts is None:
                    return "mapped"
                paths, base = opts.get("paths"), opts.get("baseUrl")
                if isinstance(paths, dict) and any(_matches(str(k), spec) for k in paths):
                    return "mapped"
                if isinstance(base, str) and _file(d / base / spec):
                    return "ok"
            if d == self.root or d.parent == d:
                return None
            d = d.parent

    # -- the questions ----------------------------------------------------------------------
    def _file_of(self, path) -> Path:
        """The importing file: `path` as given (absolute, or relative to the current directory
        as a command line names it), else relative to the root."""
        p = Path(path)
        if p.is_absolute():
            return p
        return p.resolve() if p.exists() else self.root / p

    def resolve(self, spec: str, path: Path) -> TsResolved:
        here = self._file_of(path).parent
        if not spec or "${" in spec or "!" in spec or "?" in spec or "\\" in spec:
            return TsResolved("unknown", "specifier not a plain path")
        if spec.startswith(("./", "../", "/")) or spec in (".", ".."):
            base = Path(spec) if spec.startswith("/") else here / spec
            return TsResolved("ok") if _file(base) else TsResolved("missing", spec)
        if spec.startswith("node:") or spec in NODE:
            return TsResolved("ok")
        if spec.startswith("#"):
            return TsResolved("unknown", "package imports map")
        name, sub = _package_name(spec)
        nms = self._node_modules(here)
        for nm in nms:
            for pkg in (name, "@types/" + name.replace("@", "").replace("/", "__")):
                if pkg in self._installed(nm):
                    if not sub or pkg.startswith("@types/"):
                        return TsResolved("ok")
                    return self._subpath(nm / pkg, sub)
        own = self._own_package(here, name)
        if own is not None:
            return self._subpath(own, sub) if sub else TsResolved("ok")
        mapped = self._mapped(here, spec)
        if mapped == "ok":
            return TsResolved("ok")
        if mapped:
            return TsResolved("unknown", "tsconfig paths")
        declared = self._declared(here)
        if declared and name in declared:
            return TsResolved("unknown", "declared dependency not installed")
        if not nms and declared is None:
            return TsResolved("unknown", "no node_modules")   # no package.json to say what it uses
        return TsResolved("missing", name)    # (nothing installed: a package its package.json
                                              # does not declare cannot be imported either)

    def _subpath(self, pkg: Path, sub: str) -> TsResolved:
        if _file(pkg / sub):
            return TsResolved("ok")
        data = _read_json(pkg / "package.json")
        exports = data.get("exports") if isinstance(data, dict) else None
        if isinstance(exports, dict) and any(k.startswith("./") for k in exports):
            key = "./" + sub
            if key in exports or any("*" in k and key.startswith(k.split("*")[0]) for k in exports):
                return TsResolved("ok")
            return TsResolved("missing", f"{pkg.name}/{sub}")
        return TsResolved("unknown", "package subpath")

    def candidates(self, path: Path) -> frozenset:
        me = self._file_of(path)
        here = me.parent
        names = set(NODE) | {"node:" + n for n in NODE}
        for nm in self._node_modules(here):
            names.update(n for n in self._installed(nm) if not n.startswith("@types/"))
        names.update(n for n in (self._declared(here) or ()) if not n.startswith("@types/"))
        root = self.root.resolve()
        inside = here.resolve() != root and root in here.resolve().parents
        names.update(_relative(here, me, parent=inside))
        return frozenset(names)

    def candidates_for(self, path: Path, names) -> frozenset:
        """Where the model wrote `import { a, b } from "<invented>"`, the specifiers that may
        export a and b, in tiers: the candidates (above) whose module exports every one of
        `names` (`export function a`, `export { a }`, `export declare const a` ...); else those
        whose text holds them all as words (a re-export from another file is not followed, so
        such a module is found by this tier only); else those that export the most of them (the
        names they lack are redone among its exports next: `{getExtendedYear, getExtendedMonth}`
        goes to the module exporting getExtendedYear); else all. Read as text: a superset of what
        exports them. A module that merely imports the names comes after one that exports them
        (rxjs: `../types` was redone as `./bindCallbackInternals`, which imports them)."""
        every = self.candidates(path)
        names = list(names)
        if not names:
            return every
        words = [re.compile(rf"(?<![\w$]){re.escape(n)}(?![\w$])") for n in names]
        exports = [re.compile(_EXPORT.format(name=re.escape(n)), re.S) for n in names]
        here = self._file_of(path).parent
        nms = self._node_modules(here)
        held, most, count = set(), set(), 0
        for spec in every:
            text = self._module_text(spec, here, nms)
            if not text:
                continue
            n = sum(1 for e in exports if e.search(text))
            if n and n >= count:
                most, count = (most if n == count else set()) | {spec}, n
            if all(w.search(text) for w in words):
                held.add(spec)
        if count == len(names):
            return frozenset(most)
        return frozenset(held or most or every)

    def _module_text(self, spec: str, here: Path, nms: list) -> str:
        if spec.startswith(("./", "../")):
            base = here / spec
            files = [base.with_name(base.name + e) for e in _EXTS if e != ".json"] \
                + [base / ("index" + e) for e in (".ts", ".tsx", ".d.ts", ".js")]
        else:
            name = spec[5:] if spec.startswith("node:") else spec
            files = []
            for nm in nms:
                if spec.startswith("node:") or spec in NODE:
                    files += [nm / "@types" / "node" / f"{name}.d.ts"]
                    continue
                data = _read_json(nm / name / "package.json")
                if isinstance(data, dict):
                    for key in ("types", "typings"):
                        if isinstance(data.get(key), str):
                            files.append(nm / name / data[key])
                files += [nm / name / "index.d.ts", nm / "@types" / name / "index.d.ts"]
        for f in files:
            text = _text(str(f))
            if text:
                return text
        return ""


@functools.lru_cache(maxsize=512)
def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(2_000_000)
    except OSError:
        return ""


# `export [declare] [default] [abstract] [async] function|class|const|… name`, or the name in an
# `export { … }` / `export type { … }` list (a superset: `export { a as b }` counts for a too)
_EXPORT = (r"(?<![\w$])export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?"
           r"(?:function\s*\*?|class|const|let|var|type|interface|enum|namespace|module)\s+{name}(?![\w$])"
           r"|(?<![\w$])export\s+(?:type\s+)?\{{[^}}]*(?<![\w$]){name}(?![\w$])[^}}]*\}}")
_LISTED = 2000          # entries read from one directory for the relative candidates


def _relative(here: Path, me: Path, parent: bool = True) -> set:
    """The relative specifiers a file may import, as a project's own imports are written:
    siblings `./x`, one level into a sibling directory `./dir/x`, the parent's modules `../x`
    and one level into the parent's other directories `../dir/x` (rxjs's `../types`,
    `../util/isFunction`; the parent only when it is inside the project). At most _LISTED
    entries of each directory are read."""
    out = set()
    mine = me.resolve()

    def listing(d: Path) -> list:
        try:
            return [e for _, e in zip(range(_LISTED), d.iterdir())]
        except OSError:
            return []

    def add(d: Path, prefix: str, deeper: bool, skip: Path | None = None):
        for e in listing(d):
            stem = _stem(e)
            if stem and e.resolve() != mine:
                out.add(prefix + stem)
            if deeper and e.is_dir() and e.name not in ("node_modules",) and not e.name.startswith(".") \
                    and (skip is None or e.resolve() != skip):
                add(e, f"{prefix}{e.name}/", False)
    add(here, "./", True)
    if parent and here.parent != here:
        add(here.parent, "../", True, skip=here.resolve())
    return out


def _stem(e: Path) -> str | None:
    if e.name.startswith(".") or e.name == "node_modules":
        return None
    if e.is_dir():
        return e.name if _file(e) else None
    for ext in sorted(_EXTS, key=len, reverse=True):
        if e.name.endswith(ext) and ext != ".json":
            return e.name[: -len(ext)]
    return None


def _file(base: Path) -> bool:
    """Does `base` name a module: the file itself, with an extension, a `.js` name for a
    TypeScript source, or a directory with an index or a package.json?"""
    try:
        if base.is_file():
            return True
        for ext in _EXTS:
            if base.with_name(base.name + ext).is_file():
                return True
        for js, tss in _JS.items():
            if base.name.endswith(js):
                stem = base.name[: -len(js)]
                if any(base.with_name(stem + t).is_file() for t in tss):
                    return True
        if base.is_dir():
            return (base / "package.json").is_file() or any((base / ("index" + e)).is_file() for e in _EXTS)
    except OSError:
        return False
    return False


_INDEXES: dict = {}
_INDEX_LOCK = threading.Lock()


def ts_module_index(root) -> TsModuleIndex:
    key = str(Path(root).resolve())
    with _INDEX_LOCK:
        idx = _INDEXES.get(key)
        if idx is None:
            idx = _INDEXES[key] = TsModuleIndex(Path(key))
        return idx
