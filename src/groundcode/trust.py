"""Workspace trust: code a repository ships (its interpreter, virtual environment, scripts,
configuration) runs only in a workspace the user trusts, as VS Code's workspace trust.

    env = environment(repo, python=None, trust=False)
    env.python       # the interpreter the analyzer may start: `python` when the user named one,
                     # the repository's .venv/venv/env when the workspace is trusted, else None
                     # (groundcode's own interpreter)
    env.site_paths   # untrusted: the repository venv's site-packages, read as files (on the
                     # analyzer's search path; its interpreter never starts, no .pth file or
                     # compiled extension of it is loaded)
    trusted(repo)    # repo lies under a root of the user's trusted list
    add(path) / remove(path) / roots()    # that list: `groundcode trust PATH|--list|--remove`

The trusted list is a JSON file in the user config directory ($GROUNDCODE_CONFIG, else
platformdirs' user config dir: ~/.config/groundcode/trusted.json on Linux), never in a repository
(a clone must not be able to trust itself).

Trust is per root, never inherited (VS Code's per-folder trust): a root is trusted when

    groundcode trust DIR                  the list names it (or a directory above it)
    complete/generate --trust             that run's repository
    serve --trust                         the --workspace roots given at start (Workspace(trust=True))
    lsp --trust, {"trust": true}          the folders the editor named at initialize
                                          (server/lsp_completer.py Completer.start)

and by nothing else: a file of another clone opened later (its repository becomes a root), or a
folder added by didChangeWorkspaceFolders, is untrusted unless the list names it. `/health`
("trusted") and each trigger record ("trusted") say which roots are. Naming `--python PATH`
trusts that interpreter only.

What runs when (docs/ANALYZERS.md, "What runs when"; tests/test_hostile.py checks each cell):

    analyzer      untrusted root                               trusted root
    jedi          groundcode's interpreter (spawn worker,      + the root's venv interpreter
                  `python -I`); the venv's site-packages       (it reads its own .pth files
                  read as files                                and sitecustomize)
    jedi-ls       groundcode's interpreter, `python -I`,       the same
                  environmentPath = it, extraPaths = files
    ty, zuban     their binaries; configuration and venvs      the same
                  read as files, no interpreter executed
    pyrefly       its binary with groundcode's config          the same
                  (skip-interpreter-query): the repository's
                  python-interpreter-path is never queried
    basedpyright  Node.js on its script; pythonPath =          the same
                  groundcode's interpreter
    typescript    its Go binary; no tsconfig plugins, nothing  the same
                  from node_modules/.bin

Every server starts in a private directory, never the repository, with interpreter and plugin
variables (PYTHON*, VIRTUAL_ENV, NODE_OPTIONS, …) removed from its environment
(analysis/lsp_servers.py).
Not here: how the analyzer uses the environment (analysis/jedi_worker.py).
Test: tests/test_trust.py, tests/test_hostile.py.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import GroundcodeError

VENV_NAMES = (".venv", "venv", "env")


@dataclass(frozen=True)
class Environment:
    python: str | None = None             # an interpreter or venv the analyzer may start
    site_paths: tuple[str, ...] = ()      # directories read as files (untrusted venvs)
    trusted: bool = False


def config_dir() -> Path:
    env = os.environ.get("GROUNDCODE_CONFIG")
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_config_dir("groundcode", appauthor=False))


def _file() -> Path:
    return config_dir() / "trusted.json"


def roots() -> list[Path]:
    """The user's trusted roots (an unreadable list is an error, never silently empty)."""
    f = _file()
    if not f.is_file():
        return []
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
        return [Path(p) for p in data.get("trusted", [])]
    except (ValueError, AttributeError, TypeError) as exc:
        raise GroundcodeError(f"{f}: not a trusted-roots list ({exc}); fix or remove it") from None


def _save(paths: list[Path]) -> None:
    f = _file()
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps({"trusted": [str(p) for p in paths]}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, f)


def add(path: str | Path) -> Path:
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise GroundcodeError(f"not a directory: {path}")
    have = roots()
    if p not in have:
        _save(have + [p])
    return p


def remove(path: str | Path) -> bool:
    p = Path(path).expanduser().resolve()
    have = roots()
    if p not in have:
        return False
    _save([r for r in have if r != p])
    return True


def trusted(repo: str | Path | None) -> bool:
    if repo is None:
        return False
    p = Path(repo).expanduser().resolve()
    return any(p == r or p.is_relative_to(r) for r in roots())


def find_venv(repo: str | Path | None) -> Path | None:
    """The repository's virtual environment (`.venv`, `venv`, `env` under its root), if any."""
    if repo is None:
        return None
    for name in VENV_NAMES:
        d = Path(repo) / name
        if (d / "pyvenv.cfg").is_file():
            return d
    return None


def site_packages(venv: Path) -> tuple[str, ...]:
    """A venv's site-packages directories, found by name (nothing in the venv runs)."""
    found = sorted({str(p.resolve()) for pat in ("lib/python*/site-packages", "lib64/python*/site-packages",
                                                  "Lib/site-packages")
                    for p in venv.glob(pat) if p.is_dir()})
    return tuple(found)


def search_paths(repo: str | Path | None, python: str | Path | None = None) -> tuple[str, ...]:
    """The library directories a language server reads as files (it runs nothing, trusted or
    not): the named interpreter's environment (a venv directory, or the one a `bin/python` is
    in) if one is named, else the repository's venv."""
    if python:
        p = Path(python).expanduser()
        venv = p if p.is_dir() else p.parent.parent
        return site_packages(venv)
    venv = find_venv(repo)
    return site_packages(venv) if venv is not None else ()


def environment(repo: str | Path | None, python: str | Path | None = None,
                trust: bool = False) -> Environment:
    """What the analyzer of `repo` may run and read (see the module docstring)."""
    if python:
        return Environment(str(Path(python).expanduser()), (), True)
    venv = find_venv(repo)
    if venv is None:
        return Environment(None, (), bool(trust))
    if trust or trusted(repo):
        return Environment(str(venv), (), True)
    return Environment(None, site_packages(venv), False)
