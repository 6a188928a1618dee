"""The TypeScript compiler as the judge (evaluation/tsc_judge.py) in the sandbox, and a package
rebuilt from the TypeScript recipe (evaluation/ts_packages.py, npm.py): the fixture project
compiles clean and a hallucinated member is TS2551/TS2339 at its line, the original files
untouched; @msgpack/msgpack packed from npm by its pinned integrity compiles with 0 errors."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.evaluation.tsc_judge import MEMBER_CODES, judge

FIXTURE = Path(__file__).parent / "fixtures" / "tsshop"


@pytest.fixture(scope="module")
def tsc():
    return lsp_servers.install("typescript")


def test_the_compiler_judges_a_replaced_body(tsc, tmp_path):
    pkg = tmp_path / "tsshop" / "package"
    shutil.copytree(FIXTURE, pkg)
    (pkg / "tsconfig.recipe.json").write_text((pkg / "tsconfig.json").read_text())
    clean, run = judge(pkg)
    assert clean == [] and run.passed
    cart = (pkg / "src" / "cart.ts").read_text()
    bad = cart.replace("return this.registry.size;", "return this.registry.sizes + this.registry.latest();")
    diags, _ = judge(pkg, {"src/cart.ts": bad})
    assert {d.code for d in diags} <= MEMBER_CODES and len(diags) == 2, diags
    assert all(d.path == "src/cart.ts" and d.line == 9 for d in diags)
    assert (pkg / "src" / "cart.ts").read_text() == cart          # the judge wrote a copy only


def test_a_recipe_package_from_npm_compiles_clean(tsc, tmp_path):
    from groundcode.evaluation.ts_packages import prepare
    recipe = json.loads((Path(__file__).parents[1] / "src" / "groundcode" / "evaluation" / "recipes"
                         / "typescript.json").read_text())
    entry = next(p for p in recipe["packages"] if p["name"] == "@msgpack/msgpack")
    pkg = prepare(entry, recipe, tmp_path)
    assert (pkg / "src").is_dir() and (pkg / "tsconfig.recipe.json").is_file()
    diags, _ = judge(pkg)
    assert len(diags) == entry["baseline_errors"] == 0, diags[:3]
    assert prepare(entry, recipe, tmp_path) == pkg                  # idempotent


def test_tasks_from_a_recipe_package(tsc, tmp_path):
    """Function tasks are bodies whose reference puts the file back as it was; dereference
    tasks start right after a member-access dot; a wrong body is a compile error there."""
    from groundcode.evaluation.ts_builder import TsBuildOptions, package_tasks
    from groundcode.evaluation.ts_packages import prepare
    recipe = json.loads((Path(__file__).parents[1] / "src" / "groundcode" / "evaluation" / "recipes"
                         / "typescript.json").read_text())
    entry = next(p for p in recipe["packages"] if p["name"] == "@msgpack/msgpack")
    pkg = prepare(entry, recipe, tmp_path)
    tasks = package_tasks(entry, pkg, TsBuildOptions(functions_per_package=5, methods_per_package=3))
    fns = [t for t in tasks if t["kind"] == "function"]
    drefs = [t for t in tasks if t["kind"] == "dereference"]
    assert len(fns) == 5 and 3 <= len(drefs) <= 30
    assert tasks == package_tasks(entry, pkg, TsBuildOptions(functions_per_package=5, methods_per_package=3))
    for t in fns:
        text = (pkg / t["path"]).read_text()
        assert text[t["body_start"]:t["body_end"]] == t["reference"] and t["header"].rstrip().endswith("{")
    for t in drefs:
        text = (pkg / t["path"]).read_text()
        assert text[t["offset"] - 1] == "." and text[t["offset"]:].startswith(t["reference"])
    t = fns[0]
    text = (pkg / t["path"]).read_text()
    wrong = text[:t["body_start"]] + "\n    return this.noSuchMember;\n  " + text[t["body_end"]:]
    diags, _ = judge(pkg, {t["path"]: wrong})
    assert any(d.path == t["path"] and d.code in (2339, 2683, 2322, 2355) for d in diags), diags


def test_compile_rate_counts_only_errors_the_reference_does_not_have(tsc, tmp_path):
    from groundcode.evaluation.ts_scoring import put_in_place, score_task
    pkg = tmp_path / "tsshop" / "package"
    shutil.copytree(FIXTURE, pkg)
    (pkg / "tsconfig.recipe.json").write_text((pkg / "tsconfig.json").read_text())
    cart = (pkg / "src" / "cart.ts").read_text()
    start = cart.index("add(item: string): number {") + len("add(item: string): number {")
    end = cart.index("}", start)
    fn = {"task_id": "t", "kind": "function", "repo_dir": str(pkg), "path": "src/cart.ts",
          "body_start": start, "body_end": end}
    assert put_in_place(fn, cart, cart[start:end]) == cart
    base: dict = {}
    assert score_task(fn, cart[start:end], base)["compiles"]
    bad = score_task(fn, "\n    return this.registry.sizes;\n  ", base)
    assert not bad["compiles"] and bad["codes"] == {"2551": 1}
    assert bad["quoted"] == [["2551", "sizes"]]              # what the error is about
    k = cart.index("this.registry.size;") + len("this.registry.")
    dr = {"task_id": "d", "kind": "dereference", "repo_dir": str(pkg), "path": "src/cart.ts", "offset": k}
    assert score_task(dr, "size;", base)["compiles"]
    assert score_task(dr, "latest();", base)["codes"] == {"2339": 1}


def test_a_getter_and_its_setter_are_two_tasks_with_two_ids(tmp_path):
    """One qualified name, two bodies (a getter and its setter): the second task id carries its
    line, so samples and scores keyed by id never mix them."""
    from groundcode.evaluation.ts_builder import TsBuildOptions, package_tasks
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "u.ts").write_text(
        "export class U {\n  #v = 0;\n  get id(): number {\n    const v = this.#v;\n    return v;\n  }\n"
        "  set id(v: number) {\n    this.#v = v;\n    return;\n  }\n}\n")
    fns = [t for t in package_tasks({"name": "u", "version": "1.0.0"}, tmp_path, TsBuildOptions(functions_per_package=5))
           if t["kind"] == "function"]
    assert sorted(t["task_id"] for t in fns) == ["u@1.0.0/src/u.ts::U.id", "u@1.0.0/src/u.ts::U.id@7"]


def test_name_and_import_cursor_tasks(tmp_path):
    """The four-kind benchmark's TypeScript cursors: a name a method reads (not a binding, not
    after a dot, not `this`) and the rest of a one-line import after `import `; the default
    kinds build what they built before."""
    from groundcode.evaluation.ts_builder import TsBuildOptions, package_tasks
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "u.ts").write_text(
        'import { join } from "node:path";\nimport {\n  a,\n} from "./a";\n'
        "export class U {\n  run(x: number): string {\n    const y = x + 1;\n"
        "    return join(String(y), this.name);\n  }\n}\n")
    entry = {"name": "u", "version": "1.0.0"}
    opts = TsBuildOptions(kinds=("function", "dereference", "name", "import"))
    tasks = package_tasks(entry, tmp_path, opts)
    text = (tmp_path / "src" / "u.ts").read_text()
    names = [t for t in tasks if t["kind"] == "name"]
    import re
    assert sorted(re.match(r"\w+", t["reference"]).group(0) for t in names) == ["String", "join", "x", "y"]
    for t in names:
        assert text[t["offset"]:].startswith(t["reference"]) and text[t["offset"] - 1] != "."
    (imp,) = [t for t in tasks if t["kind"] == "import"]        # the multi-line one is left out
    assert imp["reference"] == '{ join } from "node:path";' and imp["task_id"].endswith("#import")
    default = package_tasks(entry, tmp_path, TsBuildOptions())
    assert {t["kind"] for t in default} <= {"function", "dereference"}
    assert [t for t in tasks if t["kind"] in ("function", "dereference")] == default


def test_a_name_error_counts_as_written_only_where_the_line_writes_the_name():
    """ts_bench's hallucination rate: an error about a name the completion's line does not write
    (a binding it dropped, read further down) is a consequence, not an invented name."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("ts_bench", Path(__file__).parents[1] / "benchmarks" / "ts_bench.py")
    ts_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ts_bench)
    line = "0; i < mapping._maps.length; i++) {"
    assert ts_bench.written("mapping", line, "name") and ts_bench.written("i", line, "name")
    assert not ts_bench.written("totalSize", line, "name") and not ts_bench.written("map", line, "name")
    assert not ts_bench.written("_maps", "x._mapsy", "name") and not ts_bench.written("", line, "name")
    assert ts_bench.written("./nodes", 'import { a } from "./nodes"', "import")
