"""A hostile repository for the trust tests: every way a repository could get code of its own run
by an analyzer, each leaving its own marker file when it runs.

    vectors = plant(repo, markers)     # repo: a directory to fill; markers: where markers land
    fired(markers) -> set[str]         # the names of the vectors that ran
    PY_FILE, PY_LINE, PY_COLUMN        # a Python cursor after `onlyinvenv.` (1-based line)
    TS_FILE, TS_LINE, TS_COLUMN        # a TypeScript cursor after `shop.`

What is planted (name: what it is):

    venv-python        .venv/bin/python{,3}: a script that leaves the marker, then runs the venv's
                       own interpreter (its site-packages holds `onlyinvenv`, a module only it has)
    venv-pth           a .pth file in the venv's site-packages (runs when an interpreter reads it)
    venv-sitecustomize, venv-usercustomize   in the venv's site-packages
    root-sitecustomize, root-usercustomize   at the repository's top level
    stdlib-NAME        top-level pathlib.py, platform.py, types.py, typing.py, json.py, enum.py,
                       re.py, codecs.py, io.py, abc.py (a server started in the repository, or
                       with it on sys.path, imports them instead of the standard library)
    pyproject-pyrefly  [tool.pyrefly] python-interpreter-path
    pyproject-pyright  [tool.pyright] pythonPath, [tool.basedpyright] pythonPath / venvPath+venv
    pyproject-ty       [tool.ty.environment] python (a venv whose interpreter is a marker)
    pyproject-mypy     [tool.mypy] / [tool.zuban] python_executable (zuban reads mypy's config)
    pyrefly-toml       pyrefly.toml in a sub-project (shop2/): python-interpreter-path
    pyrightconfig      pyrightconfig.json in a sub-project (shop3/): pythonPath, venvPath+venv
    mypy-ini           mypy.ini python_executable
    tsc-bin            node_modules/.bin/tsc, node_modules/.bin/tsserver
    ts-plugin          tsconfig.json `plugins` naming hostile-plugin (node_modules/hostile-plugin)
    ts-lib             node_modules/typescript/lib/{tsserver,typescript,tsc}.js (a workspace
                       TypeScript a server could prefer over its own)

Every interpreter named by a configuration is its own script, so the marker says which setting
made a server run it. Used by tests/test_hostile.py and benchmarks/hostile_repo.py.
"""
from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

STDLIB_NAMES = ("pathlib", "platform", "types", "typing", "json", "enum", "re", "codecs", "io", "abc")

PY_FILE = "shop/use.py"
PY_SOURCE = '''import onlyinvenv
from shop.cart import Cart


def call_it(cart: Cart):
    onlyinvenv.venv_function()
    return onlyinvenv.
'''
PY_LINE, PY_COLUMN = 7, len("    return onlyinvenv.")

TS_FILE = "web/use.ts"
TS_SOURCE = '''export class Shop {
  items: string[] = [];
  total(): number { return this.items.length; }
}

export function use(shop: Shop): number {
  return shop.
}
'''
TS_LINE, TS_COLUMN = 7, len("  return shop.")


def _py_marker(marker: Path) -> str:
    return f"open({str(marker)!r}, 'a').write('ran\\n')\n"


def _interpreter(path: Path, marker: Path, real: str | Path = sys.executable) -> Path:
    """A `python` that leaves `marker` then runs the real interpreter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexec '{real}' \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _node(path: Path, marker: Path, extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"require('fs').appendFileSync({json.dumps(str(marker))}, 'ran\\n');\n{extra}")


def _fake_venv(d: Path, marker: Path) -> Path:
    """A directory that looks like a venv (pyvenv.cfg, bin/python) whose interpreter is a marker."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\nversion = "
                                  f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}\n")
    for name in ("python", "python3"):
        _interpreter(d / "bin" / name, marker)
    (d / f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages").mkdir(parents=True,
                                                                                             exist_ok=True)
    return d


def plant(repo: Path, markers: Path) -> dict[str, Path]:
    """Fill `repo` with every vector; returns {vector: its marker file} (none exists yet)."""
    repo.mkdir(parents=True, exist_ok=True)
    markers.mkdir(parents=True, exist_ok=True)
    m = {}

    def marker(name: str) -> Path:
        m[name] = markers / name
        return m[name]

    # the code the analyzers are asked about
    (repo / "shop").mkdir(exist_ok=True)
    (repo / "shop" / "__init__.py").write_text("")
    (repo / "shop" / "cart.py").write_text("class Cart:\n    def add(self, item):\n        pass\n\n"
                                           "    def last(self):\n        return None\n")
    (repo / PY_FILE).write_text(PY_SOURCE)
    (repo / "web").mkdir(exist_ok=True)
    (repo / TS_FILE).write_text(TS_SOURCE)

    # the venv: its interpreter, .pth, sitecustomize, usercustomize
    venv = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "onlyinvenv.py").write_text("def venv_function():\n    pass\n")
    real = venv / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"   # kept: the
    for name in ("python", "python3"):                                                   # venv's own
        p = venv / "bin" / name
        if p.exists() or p.is_symlink():
            p.unlink()
        _interpreter(p, marker("venv-python"), real)
    (site / "hostile.pth").write_text(f"import os; {_py_marker(marker('venv-pth')).strip()}\n")
    (site / "sitecustomize.py").write_text(_py_marker(marker("venv-sitecustomize")))
    (site / "usercustomize.py").write_text(_py_marker(marker("venv-usercustomize")))
    (repo / "sitecustomize.py").write_text(_py_marker(marker("root-sitecustomize")))
    (repo / "usercustomize.py").write_text(_py_marker(marker("root-usercustomize")))

    # top-level modules named like the standard library: a marker, then nothing it should hold
    for name in STDLIB_NAMES:
        (repo / f"{name}.py").write_text(_py_marker(marker(f"stdlib-{name}")))

    # interpreters named by each Python server's configuration
    py_pyrefly = _interpreter(repo / "tools" / "pyrefly-python", marker("pyproject-pyrefly"))
    py_pyright = _interpreter(repo / "tools" / "pyright-python", marker("pyproject-pyright"))
    py_mypy = _interpreter(repo / "tools" / "mypy-python", marker("pyproject-mypy"))
    ty_env = _fake_venv(repo / "tools" / "ty-env", marker("pyproject-ty"))
    _fake_venv(repo / "tools" / "pyright-venv", marker("pyproject-pyright"))
    (repo / "pyproject.toml").write_text(f'''[project]
name = "shop"
version = "0.1"

[tool.pyrefly]
python-interpreter-path = "{py_pyrefly}"

[tool.pyright]
pythonPath = "{py_pyright}"
venvPath = "tools"
venv = "pyright-venv"

[tool.basedpyright]
pythonPath = "{py_pyright}"
venvPath = "tools"
venv = "pyright-venv"

[tool.ty.environment]
python = "{ty_env}"

[tool.mypy]
python_executable = "{py_mypy}"

[tool.zuban]
python_executable = "{py_mypy}"
''')
    (repo / "mypy.ini").write_text(f"[mypy]\npython_executable = "
                                   f"{_interpreter(repo / 'tools' / 'mypy-ini-python', marker('mypy-ini'))}\n")
    for sub, what in (("shop2", "pyrefly-toml"), ("shop3", "pyrightconfig")):
        (repo / sub).mkdir(exist_ok=True)
        (repo / sub / "__init__.py").write_text("")
        (repo / sub / "use.py").write_text(PY_SOURCE.replace("from shop.cart", "from shop.cart"))
        py = _interpreter(repo / "tools" / f"{what}-python", marker(what))
        if what == "pyrefly-toml":
            (repo / sub / "pyrefly.toml").write_text(f'python-interpreter-path = "{py}"\n')
        else:
            _fake_venv(repo / "tools" / "pyrightconfig-venv", marker(what))
            (repo / sub / "pyrightconfig.json").write_text(json.dumps(
                {"pythonPath": str(py), "venvPath": str(repo / "tools"), "venv": "pyrightconfig-venv"}))

    # TypeScript: tsconfig plugins, node_modules/.bin, a workspace TypeScript
    nm = repo / "node_modules"
    (repo / "tsconfig.json").write_text(json.dumps({"compilerOptions": {
        "strict": True, "target": "es2020", "plugins": [{"name": "hostile-plugin"}]}}))
    (repo / "package.json").write_text(json.dumps({"name": "shop", "version": "0.1.0",
                                                   "devDependencies": {"typescript": "5.0.0"}}))
    _node(nm / "hostile-plugin" / "index.js", marker("ts-plugin"), "module.exports = () => ({create: (i) => i.languageService});\n")
    (nm / "hostile-plugin" / "package.json").write_text(json.dumps({"name": "hostile-plugin", "main": "index.js"}))
    for name in ("tsc", "tsserver", "typescript-language-server"):
        p = nm / ".bin" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"#!/bin/sh\necho ran >> '{marker('tsc-bin')}'\nexit 1\n")
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    for name in ("tsserver.js", "typescript.js", "tsc.js", "_tsserver.js"):
        _node(nm / "typescript" / "lib" / name, marker("ts-lib"))
    (nm / "typescript" / "package.json").write_text(json.dumps({"name": "typescript", "version": "5.0.0",
                                                                "main": "lib/typescript.js"}))
    return m


def fired(markers: Path) -> set[str]:
    """The vectors whose marker exists."""
    return {p.name for p in markers.iterdir()} if markers.is_dir() else set()
