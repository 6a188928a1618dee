"""The TypeScript benchmark's packages, rebuilt from the recipe (recipes/typescript.json: names,
versions, sha512 integrity — third-party code is never committed):

    pkg = prepare(entry, recipe, root)      # root/<name>-<version>/package, ready for tsc
    pkg / "tsconfig.recipe.json"             # what the compiler checks the package with

The tarball is packed from npm by name and version and checked against its integrity; the
packages its sources need for type checking are installed beside it with `--ignore-scripts` (no
package script ever runs), each checked against its pinned integrity; the tsconfig is the
package's own (extended) or the recipe's default, with the recipe's overrides. The language
server reads no `-p`: it takes the nearest `tsconfig.json`, so that file is written too, the
recipe's configuration (`server_config`; a package's own tsconfig.json kept as
tsconfig.package.json where the recipe extends it) — else the monitor's answers come from another
program than the one the compiler judges (a dependency's published .d.ts with its @internal
members stripped, no Node types). Idempotent: a stamp file marks a finished package.
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


SERVER_TSCONFIG, OWN_TSCONFIG = "tsconfig.json", "tsconfig.package.json"


def server_config(pkg: Path, entry: dict, recipe: dict) -> None:
    """Write the recipe's configuration where TypeScript's language server looks for one (the
    nearest tsconfig.json, no `-p`), so the monitor asks about the program the compiler checks.
    A recipe that extends the package's own tsconfig.json extends its copy
    (tsconfig.package.json), in both files: no configuration extends itself."""
    pkg = Path(pkg)
    conf = tsconfig(entry, recipe)
    own = (entry.get("tsconfig") or "").removeprefix("./")
    if own == SERVER_TSCONFIG:
        if not (pkg / OWN_TSCONFIG).exists():
            shutil.copyfile(pkg / SERVER_TSCONFIG, pkg / OWN_TSCONFIG)
        conf["extends"] = "./" + OWN_TSCONFIG
    text = json.dumps(conf, indent=1) + "\n"
    for name in (TSCONFIG, SERVER_TSCONFIG):
        if not (pkg / name).is_file() or (pkg / name).read_text() != text:
            (pkg / name).write_text(text)


def prepare(entry: dict, recipe: dict, root: Path) -> Path:
    """The package's directory (its files; node_modules beside it), ready for `tsc -p
    tsconfig.recipe.json` and for TypeScript's language server (tsconfig.json, the same)."""
    home = Path(root) / _dirname(entry)
    pkg = home / "package"
    if (home / ".done").is_file():
        server_config(pkg, entry, recipe)         # (a package prepared before it was written)
        return pkg
    if home.exists():
        shutil.rmtree(home)                       # an unfinished earlier attempt
    home.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="gc-npm-") as tmp:
        tgz = npm.pack(entry["name"], entry["version"], entry["integrity"], Path(tmp))
        npm.unpack(tgz, pkg)
    npm.install(home, entry.get("install") or [])
    server_config(pkg, entry, recipe)             # tsconfig.recipe.json and tsconfig.json
    (home / ".done").write_text("ok\n")
    return pkg
