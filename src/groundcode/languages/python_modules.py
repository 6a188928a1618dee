"""Which Python modules an import may name, read from the file system alone: the names monitor's
module index. No interpreter runs and nothing of a repository's or an installed distribution's
is imported (a repository's own code, its `.pth` files and its interpreter are never executed:
docs/ANALYZERS.md, "what runs when"); only the names of this interpreter's own compiled
modules (builtins such as `sys`, its standard library's extensions such as `math`) are read by
importing them.

    index = module_index(repo, python)      # cached per (repo, interpreter)
    index.resolve("a.b", path)              # Resolved(kind, where, why) for `import a.b` from
                                            # the file `path` (relative imports resolve against it)
    index.top_level()                       # every top-level module name it can see
    index.exports(resolved)                 # the names `from a.b import ...` may take (what the
                                            # module binds at module level, its submodules), or None
                                            # (unknown: an extension module, `__getattr__`, ...)

Where it looks: the standard library (sys.stdlib_module_names and the builtin modules); the
repository's own modules (its root, `src/`, `lib/`, and every directory of it that holds Python
files: tests importing siblings, namespace packages); the site-packages of the interpreter the
analyzer sees (`python`: the trusted root's venv, else the interpreter groundcode runs), with
the directories their `.pth` files name and the packages their editable-install finders map.
A `.pth` line that runs code (`import ...`) is never run; where it may add modules unseen, an
unknown module fails open ("import hook") rather than being blocked.
Test: tests/test_names_monitor.py.
"""
from __future__ import annotations

import functools
import importlib
import os
import re
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import trust
from .python_scope import module_names, opaque, star_modules

_EXTS = (".py", ".pyi", ".pyc")
_STAR_DEPTH = 8        # star imports followed this deep (then: the exports are not told)
_NATIVE = re.compile(r"\.(?:cpython|abi3|pypy)[^/]*\.(?:so|pyd)$|\.(?:so|pyd)$")
_MAPPING = re.compile(r"MAPPING\s*(?::[^=]*)?=\s*\{([^}]*)\}")
_REQ_NAME = re.compile(r"[ \t]*([A-Za-z0-9][A-Za-z0-9._-]*)")
_SETUP_LISTS = re.compile(r"(?:install_requires|extras_require|requires)\s*[=:]\s*(\[[^\]]*\]|\{[^}]*\}|(?:\n[ \t]+[^\n]+)+)")


def _requirements(repo: Path) -> list[str]:
    """Distribution names a repository declares, read as text (nothing of it runs)."""
    out: list[str] = []
    try:
        import tomllib
        data = tomllib.loads((repo / "pyproject.toml").read_text(errors="replace"))
    except (OSError, ValueError, ImportError):
        data = {}
    proj = data.get("project", {}) if isinstance(data, dict) else {}
    reqs = list(proj.get("dependencies", []) or [])
    for extra in (proj.get("optional-dependencies", {}) or {}).values():
        reqs += list(extra or [])
    reqs += list(data.get("build-system", {}).get("requires", []) or []) if isinstance(data, dict) else []
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data, dict) else {}
    for table in ("dependencies", "dev-dependencies"):
        reqs += list((poetry.get(table) or {}).keys())
    for group in (poetry.get("group") or {}).values():
        reqs += list((group.get("dependencies") or {}).keys())
    for f in ("setup.py", "setup.cfg"):
        try:
            text = (repo / f).read_text(errors="replace")
        except OSError:
            continue
        for block in _SETUP_LISTS.findall(text):
            reqs += re.findall(r"[\"']([^\"']+)[\"']", block) or block.split("\n")
    for f in sorted(repo.glob("requirements*.txt")):
        try:
            reqs += [ln for ln in f.read_text(errors="replace").splitlines() if not ln.lstrip().startswith(("#", "-"))]
        except OSError:
            pass
    for r in reqs:
        m = _REQ_NAME.match(str(r))
        if m and m.group(1).lower() != "python":
            out.append(m.group(1))
    return out
# distributions whose import name is not their own
_ALIASES = {"pyyaml": ("yaml",), "beautifulsoup4": ("bs4",), "pillow": ("pil",), "scikit_learn": ("sklearn",),
            "opencv_python": ("cv2",), "opencv_python_headless": ("cv2",), "python_dateutil": ("dateutil",),
            "attrs": ("attr", "attrs"), "pyjwt": ("jwt",), "pycryptodome": ("crypto",), "pyopenssl": ("openssl",),
            "pyzmq": ("zmq",), "gitpython": ("git",), "scikit_image": ("skimage",), "pyserial": ("serial",),
            "protobuf": ("google",), "websocket_client": ("websocket",), "msgpack_python": ("msgpack",),
            "typing_extensions": ("typing_extensions",), "setuptools": ("pkg_resources", "setuptools")}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


_KNOWN_HOOKS = ("__editable__", "_distutils_hack", "_virtualenv")
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import\b|import[ \t]+([^\n#;()\\]+))", re.M)
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".tox", ".nox",
                        ".mypy_cache", ".pytest_cache", "build", "dist", ".eggs"})


@dataclass(frozen=True)
class Resolved:
    kind: str                  # "found", "missing", "unknown" (cannot tell: fail open)
    where: Path | None = None  # the module's file (package: its __init__) or directory
    why: str = ""              # unknown: why; missing: which part is missing
    package: Path | None = None    # a package's directory (for its submodules)
    stdlib: bool = False


def _entries(d: Path) -> dict[str, Path]:
    """Module names directly in directory `d` -> their path, as Python's finder picks between
    entries of one name: a package (a directory with `__init__`), else a module file, else a
    directory without `__init__` (a namespace package)."""
    out: dict[str, Path] = {}
    try:
        it = list(os.scandir(d))
    except OSError:
        return out
    spaces: dict[str, Path] = {}
    packages: dict[str, Path] = {}
    for e in it:
        name = e.name
        if e.is_dir(follow_symlinks=True):
            if name.isidentifier() and name not in _SKIP_DIRS:
                init = any(os.path.isfile(os.path.join(e.path, f"__init__{x}")) for x in (".py", ".pyi"))
                (packages if init else spaces)[name] = Path(e.path)
        elif name.endswith(_EXTS):
            stem = name.rsplit(".", 1)[0]
            if stem.isidentifier():
                out.setdefault(stem, Path(e.path))
        elif _NATIVE.search(name):
            stem = name.split(".", 1)[0]
            if stem.isidentifier():
                out.setdefault(stem, Path(e.path))
    return {**spaces, **out, **packages}


def _site_dirs(python: Path | None) -> list[Path]:
    """The site-packages directories of `python` (None: the running interpreter), read from the
    file system: lib/python3*/site-packages under its prefix. A venv's `bin/python` links to the
    interpreter it was made from, perhaps this one: the prefix, not the executable, says whose."""
    if python is None or Path(python).absolute().parent.parent == Path(sys.prefix).absolute():
        paths = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
        paths.update(p for p in sys.path if p.endswith("site-packages"))
        return [Path(p) for p in sorted(paths) if Path(p).is_dir()]
    # another prefix (a venv): its site-packages by name, lib64 -> lib resolved to one root
    return [Path(p) for p in trust.site_packages(Path(python).parent.parent)]


class ModuleIndex:
    def __init__(self, repo: Path | None, python: Path | None = None):
        self.repo = Path(repo) if repo else None
        self.stdlib = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset(sys.builtin_module_names)
        self.stdlib_dir = Path(sysconfig.get_paths()["stdlib"])
        self.hooks = False             # a .pth runs code that may add modules we cannot see
        self.roots: list[Path] = []    # where top-level modules live, in search order
        self._top: dict[str, list[Path]] = {}
        self._lock = threading.Lock()
        self._built = False
        self.python = python

    # -- building (lazy: the first import a row checks) ---------------------------------------
    def _build(self) -> None:
        with self._lock:
            if self._built:
                return
            roots: list[Path] = []
            if self.repo is not None and self.repo.is_dir():
                roots.append(self.repo)
                for sub in ("src", "lib", "python"):
                    if (self.repo / sub).is_dir():
                        roots.append(self.repo / sub)
                roots.extend(self._repo_dirs())
            for key in ("stdlib", "platstdlib"):
                roots.append(Path(sysconfig.get_paths()[key]))
            roots.extend(Path(p) for p in sys.path if p.endswith("lib-dynload"))
            mapped: dict[str, Path] = {}
            sites = list(_site_dirs(self.python))
            if self.repo is not None:     # the repository's own venv, read as files (never run)
                for venv in (".venv", "venv", "env"):
                    if (self.repo / venv / "pyvenv.cfg").is_file():
                        sites += _site_dirs(self.repo / venv / "bin" / "python")
            for site in dict.fromkeys(sites):
                roots.append(site)
                for pth in sorted(site.glob("*.pth")):
                    self._read_pth(site, pth, roots)
                for finder in site.glob("__editable__*finder.py"):
                    mapped.update(self._read_finder(finder))
            self.roots = list(dict.fromkeys(roots))
            top: dict[str, list[Path]] = {}
            for r in self.roots:
                for name, p in _entries(r).items():
                    top.setdefault(name, []).append(p)
            for name, p in mapped.items():
                top.setdefault(name, []).insert(0, p)
            self._top = top
            self._built = True

    def _repo_dirs(self, limit: int = 2000) -> list[Path]:
        """Directories of the repository that hold Python files but are not packages' insides:
        scripts and tests import their siblings by bare name."""
        out, seen = [], 0
        for dirpath, dirnames, filenames in os.walk(self.repo):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
            seen += 1
            if seen > limit:
                break
            if any(f.endswith(".py") for f in filenames) and "__init__.py" not in filenames:
                out.append(Path(dirpath))
        return out

    def _read_pth(self, site: Path, pth: Path, roots: list) -> None:
        try:
            lines = pth.read_text(errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                # editable finders are read from their files; setuptools' distutils shim and
                # virtualenv's patch add no module names (distutils is the standard library's)
                if not any(k in line for k in _KNOWN_HOOKS):
                    self.hooks = True
                continue
            d = (site / line) if not os.path.isabs(line) else Path(line)
            if d.is_dir():
                roots.append(d)

    @staticmethod
    def _read_finder(finder: Path) -> dict[str, Path]:
        try:
            m = _MAPPING.search(finder.read_text(errors="replace"))
        except OSError:
            return {}
        if not m:
            return {}
        return {k: Path(v) for k, v in re.findall(r"['\"]([\w.]+)['\"]\s*:\s*['\"]([^'\"]+)['\"]", m.group(1))
                if "." not in k}

    # -- questions ----------------------------------------------------------------------------
    def _stdlib_dirs(self) -> frozenset:
        return frozenset(Path(p) for p in sys.path if p.endswith("lib-dynload")) | {self.stdlib_dir}

    def top_level(self) -> frozenset:
        self._build()
        return frozenset(self._top) | self.stdlib

    def declared(self) -> frozenset:
        """The import names the repository's declared dependencies may have (pyproject.toml's
        dependency tables, setup.py/setup.cfg's install_requires and extras, requirements*.txt),
        normalized: a dependency that is not installed cannot be read, so a module named like
        one is not judged."""
        if getattr(self, "_declared", None) is None:
            names: set[str] = set()
            for dist in (_requirements(self.repo) if self.repo is not None else ()):
                dist = _norm(dist)
                names.update((dist, dist.split("_")[0], *_ALIASES.get(dist, ())))
                for pre in ("python_", "py_", "django_"):
                    if dist.startswith(pre):
                        names.add(dist[len(pre):])
            self._declared = frozenset(names)
        return self._declared

    def project_imports(self, limit: int = 3000) -> frozenset:
        """The top-level modules the repository's own files import (read as text; the first
        `limit` files): a module the project already imports is no invention, installed here or
        not (an optional dependency, one a distribution of another name provides)."""
        if getattr(self, "_imported", None) is None:
            names: set[str] = set()
            n = 0
            for dirpath, dirnames, filenames in os.walk(self.repo) if self.repo is not None else ():
                dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")
                               and not (Path(dirpath, d) / "pyvenv.cfg").exists()]
                for f in filenames:
                    if not f.endswith((".py", ".pyi")) or n >= limit:
                        continue
                    n += 1
                    try:
                        with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                            code = fh.read(200_000)
                    except OSError:
                        continue
                    for m in _IMPORT_LINE.finditer(code):
                        if m.group(1):
                            names.add(m.group(1))
                        else:
                            names.update(x.split()[0].split(".")[0] for x in m.group(2).split(",")
                                         if x.split() and x.split()[0][:1].isalpha())
            self._imported = frozenset(names)
        return self._imported

    def submodules(self, package: Path) -> frozenset:
        return frozenset(_entries(package))

    def resolve(self, module: str, path: Path | None = None) -> Resolved:
        """Where `import module` (as written in the file `path`) leads."""
        self._build()
        level = len(module) - len(module.lstrip("."))
        parts = [p for p in module[level:].split(".") if p]
        if level:
            if path is None:
                return Resolved("unknown", why="relative import without a file")
            base = Path(path).parent
            for _ in range(level - 1):
                base = base.parent
            if not parts:
                return Resolved("found", where=base / "__init__.py", package=base)
            here = _entries(base)
            first = here.get(parts[0])
            if first is None:
                return Resolved("missing", why=parts[0])
            return self._descend(first, parts[1:], parts[0])
        if not parts:
            return Resolved("unknown", why="empty")
        head = parts[0]
        found = self._top.get(head) or self._look_again(head)
        if not found:
            if head in sys.builtin_module_names and len(parts) == 1:
                return Resolved("found", why=head, stdlib=True)    # compiled into the interpreter
            if head in self.stdlib:
                return Resolved("unknown", why="builtin module", stdlib=True)
            if _norm(head) in self.declared():
                return Resolved("unknown", why="declared dependency, not installed")
            if head in self.project_imports():
                return Resolved("unknown", why="imported elsewhere in the project, not installed")
            if self.hooks:
                return Resolved("unknown", why="import hook")
            return Resolved("missing", why=head)
        res = self._descend(found[0], parts[1:], head)
        if res.kind == "missing" and len(found) > 1:     # a namespace package split over roots
            return Resolved("unknown", why="namespace package")
        return res

    def _look_again(self, head: str) -> list[Path]:
        """A module the index does not list may have been created since it was built: look for
        it in every root before calling it missing."""
        for r in self.roots:
            for cand in (r / head, r / f"{head}.py", r / f"{head}.pyi"):
                if cand.exists() and (cand.is_file() or cand.is_dir()):
                    self._top.setdefault(head, []).append(cand)
                    return self._top[head]
        return []

    def _descend(self, first: Path, rest: list[str], name: str) -> Resolved:
        cur = first
        for i, part in enumerate(rest):
            if not cur.is_dir():
                # a module file is no package: `import a.b` fails unless the module puts `a.b`
                # in sys.modules itself (`os.path`), which is not judged
                if cur.suffix not in (".py", ".pyi") or _registers_modules(cur):
                    return Resolved("unknown", why=f"{name} is not a package")
                return Resolved("missing", why=f"{name}.{part}")
            nxt = _entries(cur).get(part)
            if nxt is None:
                init = cur / "__init__.py"
                if init.is_file() and _dynamic(init):
                    return Resolved("unknown", why=f"{name} builds its modules")
                return Resolved("missing", why=f"{name}.{part}")
            cur, name = nxt, f"{name}.{part}"
        if cur.is_dir():
            init = next((cur / f"__init__{e}" for e in (".py", ".pyi") if (cur / f"__init__{e}").is_file()), None)
            return Resolved("found", where=init, package=cur)
        return Resolved("found", where=cur)

    def exports(self, res: Resolved, _seen: frozenset = frozenset()) -> frozenset | None:
        """The names `from <module> import name` may take: what the module's file (and a stub
        beside it) binds at module level (python_scope.module_names: imports, defs, classes,
        assignments, conditional ones included), a package's submodules, and the public names
        of the modules it star-imports, read the same way; None where that cannot be told (an
        extension module, a module with `__getattr__` or `globals()`, a star import of such a
        module or of one that does not resolve, no source)."""
        names: set[str] = set()
        if res.package is not None:
            names |= self.submodules(res.package)
        where = res.where
        if where is None and res.stdlib and res.why:
            return _interpreter_module(res.why, None)
        if where is not None and _NATIVE.search(where.name) and where.parent in self._stdlib_dirs():
            return _interpreter_module(where.name.split(".", 1)[0], str(where))   # lib-dynload: math
        if where is None:
            return frozenset(names) if res.package is not None else None
        if where.suffix not in (".py", ".pyi"):
            return None
        try:
            code = where.read_text(errors="replace")
        except OSError:
            return None
        why = opaque(code)
        stars: list[str] = []
        if why == "star import" and opaque(code, skip=("star import",)) is None:
            stars = star_modules(code) or []
            if not stars or len(_seen) >= _STAR_DEPTH:
                return None
        elif why:
            return None
        if re.search(r"^def __getattr__\b", code, re.M):
            return None
        for module in stars:          # `from m import *`: m's names (a superset of what the
            sub = self.resolve(module, where)         # star takes), read as this module is
            if sub.kind != "found":
                return None
            if sub.where is not None and (sub.where in _seen or sub.where == where):
                continue                              # an import cycle: its names are counted
            got = self.exports(sub, _seen | {where})
            if got is None:
                return None
            names |= got                   # `_x` too: an `__all__` may name it
        stub = where.with_suffix(".pyi")
        if where.suffix == ".py" and stub.is_file():      # a stub beside the module: both count
            try:
                names |= module_names(stub.read_text(errors="replace"))
            except OSError:
                pass
        return frozenset(names | module_names(code))


@functools.lru_cache(maxsize=256)
def _interpreter_module(name: str, file: str | None) -> frozenset | None:
    """The names of one of the interpreter's own compiled modules, read by importing it here:
    a builtin (`file` None: the builtin importer, never a file of that name on sys.path), or an
    extension of its standard library loaded from that very file (`file`), so that a
    repository's `math.py` on sys.path is never what runs."""
    try:
        mod = sys.modules.get(name)
        if mod is None and file is None:
            if name not in sys.builtin_module_names:
                return None
            mod = importlib.import_module(name)
        elif mod is None:
            import importlib.machinery
            import importlib.util
            loader = importlib.machinery.ExtensionFileLoader(name, file)
            spec = importlib.util.spec_from_file_location(name, file, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
        return frozenset(dir(mod))
    except Exception:
        return None


# a module that may make `itself.x` importable: it writes sys.modules (os: `sys.modules['os.path']
# = path`; requests.packages) or installs an importer (six.moves); reading sys.modules
# (`sys.modules.get('__main__')`, `sys.modules[__name__]`) makes nothing importable
_REGISTERS = re.compile(r"sys\.modules\s*(?:\[[^\n]*\]\s*=(?!=)|\.\s*(?:setdefault|update|__setitem__)\s*\()"
                        r"|sys\.(?:meta_path|path_hooks)\b")


def _registers_modules(path: Path) -> bool:
    try:
        return bool(_REGISTERS.search(path.read_text(errors="replace")))
    except OSError:
        return True


def _dynamic(init: Path) -> bool:
    try:
        code = init.read_text(errors="replace")
    except OSError:
        return True
    return bool(_REGISTERS.search(code) or re.search(r"^def __getattr__\b|__path__", code, re.M))


_CACHE: dict[tuple, ModuleIndex] = {}


def module_index(repo, python=None) -> ModuleIndex:
    """One index per (repository, interpreter), kept for the process: an editor's rows share
    it. (A module created later in the repository is seen by a new index: `forget()`.)"""
    key = (str(repo) if repo else "", str(python) if python else "")
    idx = _CACHE.get(key)
    if idx is None:
        idx = _CACHE[key] = ModuleIndex(repo, python)
    return idx


def forget() -> None:
    _CACHE.clear()
