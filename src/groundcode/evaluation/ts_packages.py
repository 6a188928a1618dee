"""The TypeScript benchmark's packages, rebuilt from the recipe (recipes/typescript.json: names,
versions, sha512 integrity — third-party code is never committed):

    pkg = prepare(entry, recipe, root)      # root/<name>-<version>/package, ready for tsc
    pkg / "tsconfig.recipe.json"             # what the compiler checks the package with

The tarball is packed from npm by name and version and checked against its integrity; the
packages its sources need for type checking are installed beside it with `--ignore-scripts` (no
package script ever runs), each checked against its pinned integrity; the tsconfig is the
package's own (extended) or the recipe's default, with the recipe's overrides. Idempotent: a
stamp file marks a finished package.
Test: tests/test_tsc_judge.py.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from .. import npm

TSCONFIG = "tsconfig.recipe.json"


def _dirname(entry: dict) -> str:
    return f"{entry['name'].replace('/', '__').lstrip('@')}-{entry['version']}"


def tsconfig(entry: dict, recipe: dict) -> dict:
    over = dict(entry.get("tsconfig_overrides") or {})
    if entry.get("tsconfig"):
        return {"extends": "./" + entry["tsconfig"], "compilerOptions": {**over, "noEmit": True}}
    base = dict(recipe["default_tsconfig"]["compilerOptions"])
    return {"compilerOptions": {**base, **over},
            "include": list(entry.get("include") or entry.get("source_dirs") or ["src"]),
            "exclude": list(entry.get("exclude") or [])}


def prepare(entry: dict, recipe: dict, root: Path) -> Path:
    """The package's directory (its files; node_modules beside it), ready for `tsc -p
    tsconfig.recipe.json`."""
    home = Path(root) / _dirname(entry)
    pkg = home / "package"
    if (home / ".done").is_file():
        return pkg
    if home.exists():
        shutil.rmtree(home)                       # an unfinished earlier attempt
    home.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="gc-npm-") as tmp:
        tgz = npm.pack(entry["name"], entry["version"], entry["integrity"], Path(tmp))
        npm.unpack(tgz, pkg)
    npm.install(home, entry.get("install") or [])
    (pkg / TSCONFIG).write_text(json.dumps(tsconfig(entry, recipe), indent=1) + "\n")
    (home / ".done").write_text("ok\n")
    return pkg
