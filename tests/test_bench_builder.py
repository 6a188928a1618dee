"""Task building: candidate extraction, deterministic sampling, sources (local dirs, archives)."""
import io
import json
import tarfile
from pathlib import Path

import pytest

from groundcode.errors import GroundcodeError
from groundcode.evaluation import builder, extract, sources
from groundcode.jsonl import read_jsonl

FIXTURE = Path(__file__).parent / "fixtures" / "bench_repo"

CODE = '''class A:
    def m(self, x):
        """Doc."""
        y = self.items.get(x)
        é = "ü"; z = é.upper()
        return y

    def one(self): return 1

    def stub(self):
        """Not implemented."""
        raise NotImplementedError

    def inline(self):
        """Doc."""; return 2


def f():
    """Top level."""
    def inner():
        """Nested: skipped."""
        return 1
    return inner
'''


def test_extract_functions_and_dereference_points():
    sites = {s.scope: s for s in extract.functions(CODE)}
    assert sorted(sites) == ["A.m", "f"]           # one-liner, stub, inline-docstring, nested: skipped
    m = sites["A.m"]
    assert (m.def_line, m.header_end, m.body_line, m.end_line, m.indent) == (2, 2, 4, 6, 4)
    assert m.is_method and m.statements == 4 and m.docstring == "Doc."
    lines = CODE.splitlines()
    # points sit right after a dot; columns are characters even after non-ASCII text
    assert m.points == [(4, 17), (4, 23), (5, 23)]
    for line, col in m.points:
        assert lines[line - 1][col - 1] == "."
    assert lines[4][23:28] == "upper"
    undocumented = {s.scope for s in extract.functions(CODE, require_docstring=False)}
    assert "A.one" not in undocumented             # one-line def: no line to start at


def test_spread_and_method_filter():
    assert extract.spread(list(range(5)), 10) == [0, 1, 2, 3, 4]
    assert extract.spread(list(range(100)), 10) == [0, 11, 22, 33, 44, 55, 66, 77, 88, 99]
    assert extract.spread(list(range(5)), 1) == [2] and extract.spread(list(range(5)), 0) == []   # it was a ZeroDivisionError
    sites = {s.scope: s for s in extract.functions(CODE)}
    assert not extract.dereference_method(sites["A.m"])        # 5 lines < 7
    assert extract.dereference_method(sites["A.m"], min_lines=5)


def test_build_fixture_is_deterministic_and_correct(tmp_path):
    src = sources.resolve(str(FIXTURE))
    opts = builder.BuildOptions(functions_per_repo=3, methods_per_repo=2, points_per_method=3)
    m1 = builder.build([src], opts, tmp_path / "a")
    m2 = builder.build([src], opts, tmp_path / "b")
    assert m1["tasks_sha256"] == m2["tasks_sha256"]
    assert m1["counts"] == {"function": 3, "dereference": 6}   # 2 methods x 3 points
    tasks = list(read_jsonl(tmp_path / "a" / "tasks.jsonl"))
    for t in tasks:
        text = (FIXTURE / t["path"]).read_text()
        lines = text.splitlines(keepends=True)
        # the reference is exactly the file from the cursor to the end of the function
        assert t["reference"] == lines[t["line"] - 1][t["col"]:] + "".join(lines[t["line"]:t["end_line"]])
        assert t["function"].startswith(lines[t["def_line"] - 1])
        assert t["deps"], t["task_id"]
        if t["kind"] == "dereference":
            assert lines[t["line"] - 1][t["col"] - 1] == "."
    # all documented functions with repository dependencies, when the cap allows
    builder.build([src], builder.BuildOptions(kinds=("function",)), tmp_path / "all")
    every = {t["task_id"].split("::")[1]: t for t in read_jsonl(tmp_path / "all" / "tasks.jsonl")}
    assert sorted(every) == ["Inventory.add", "Inventory.remove", "Inventory.sale_price", "Inventory.tagged",
                             "Inventory.total_value", "Item.add_tag", "Item.is_empty", "PriceBook.price_with_tax",
                             "PriceBook.set_price", "with_tax"]      # discount() uses no repository name
    add = every["Inventory.add"]
    assert "inventory.pricing.PriceBook.set_price" in add["deps"]
    assert "inventory.models.Item" in add["deps"]
    assert add["signature"] == "    def add(self, name, quantity, price):"
    # another seed picks other tasks; the caps hold
    m3 = builder.build([src], builder.BuildOptions(seed=1, functions_per_repo=3, methods_per_repo=2,
                                                   points_per_method=3), tmp_path / "c")
    assert m3["tasks_sha256"] != m1["tasks_sha256"]
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["repos"][0]["function_tasks"] == 3


def test_task_hash_ignores_machine_paths():
    t = {"task_id": "r/a.py::f", "x": 1, "repo_dir": "/home/a"}
    assert builder.task_hash([t]) == builder.task_hash([dict(t, repo_dir="/other")])
    assert builder.task_hash([t]) != builder.task_hash([dict(t, x=2)])


def test_python_files_skip_tests_and_setup(tmp_path):
    for rel in ("pkg/__init__.py", "pkg/core.py", "pkg/tests/test_core.py", "tests/test_x.py", "setup.py",
                "docs/conf.py", "pkg/core_test.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    got = [p.relative_to(tmp_path).as_posix() for p in builder.python_files(tmp_path, 100)]
    assert got == ["pkg/__init__.py", "pkg/core.py"]


def _sdist(tmp_path: Path, name="demo", version="1.0") -> Path:
    archive = tmp_path / f"{name}-{version}.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        for rel, text in ((f"{name}-{version}/PKG-INFO",
                           f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                           "Home-page: https://github.com/someone/demo\n"),
                          (f"{name}-{version}/demo/__init__.py", "X = 1\n")):
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return archive


def test_unpack_archive_metadata_and_project_check(tmp_path):
    root = sources.unpack(_sdist(tmp_path), tmp_path / "src" / "demo-1.0")
    assert root.name == "demo-1.0" and (root / "demo" / "__init__.py").read_text() == "X = 1\n"
    assert sources.unpack(_sdist(tmp_path), tmp_path / "src" / "demo-1.0") == root   # cached
    urls = sources.metadata_urls(root)
    assert urls == ["https://github.com/someone/demo"]
    src = sources.RepoSource(spec="pypi:demo==1.0", name="demo-1.0", root=root, urls=tuple(urls))
    sources.check_project(src, "github.com/someone/demo")
    with pytest.raises(GroundcodeError, match="does not look like"):
        sources.check_project(src, "github.com/other/demo")


def test_cached_download_is_reused_without_network(tmp_path):
    where = tmp_path / "sdists" / "demo==1.0"
    where.mkdir(parents=True)
    archive = _sdist(where)
    got = sources.download("demo", "1.0", tmp_path / "sdists")
    assert got == archive
    src = sources.resolve("pypi:demo==1.0", cache=tmp_path, sha256=sources.sha256_file(archive))
    assert src.name == "demo-1.0" and src.urls == ("https://github.com/someone/demo",)
    with pytest.raises(GroundcodeError, match="sha256"):
        sources.resolve("pypi:demo==1.0", cache=tmp_path, sha256="0" * 64)


def test_missing_source_is_a_user_error(tmp_path):
    with pytest.raises(GroundcodeError, match="not found"):
        sources.resolve(str(tmp_path / "nope"))


def test_download_runs_no_package_code_and_verifies_before_storing(tmp_path, monkeypatch):
    """An sdist is fetched as bytes (no pip, no setup.py) and a hash mismatch keeps nothing."""
    import json
    import subprocess
    archive = _sdist(tmp_path)
    data = archive.read_bytes()
    good = sources.sha256_file(archive)
    index = {"files": [{"filename": "demo-1.0.tar.gz", "url": "https://files.example/demo-1.0.tar.gz",
                        "hashes": {"sha256": good}},
                       {"filename": "demo-1.1.tar.gz", "url": "https://files.example/x", "hashes": {}}]}
    asked = []

    def get(url, accept=None):
        asked.append(url)
        return json.dumps(index).encode() if url.endswith("/demo/") else data

    def no_subprocess(*a, **k):
        raise AssertionError("a subprocess ran while fetching a benchmark source")
    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    with pytest.raises(GroundcodeError, match="recipe pins"):
        sources.download("demo", "1.0", tmp_path / "bad", sha256="0" * 64, get=get)
    assert not list((tmp_path / "bad" / "demo==1.0").iterdir())      # nothing stored, nothing unpacked
    index["files"][0]["hashes"]["sha256"] = "1" * 64
    with pytest.raises(GroundcodeError, match="index lists"):
        sources.download("demo", "1.0", tmp_path / "bad", get=get)
    index["files"][0]["hashes"]["sha256"] = good
    got = sources.download("demo", "1.0", tmp_path / "sdists", sha256=good, get=get)
    assert got.read_bytes() == data and got.name == "demo-1.0.tar.gz"
    assert asked[-1] == "https://files.example/demo-1.0.tar.gz"


def test_the_four_kinds_cursors_read_a_name_open_a_call_or_sit_in_an_import(tmp_path):
    """The cursor kinds (issue 40) come from the same methods as the dereference tasks (so the
    default build, and its hash, are unchanged), each cursor where its kind says."""
    src = sources.resolve(str(FIXTURE))
    base = builder.BuildOptions(functions_per_repo=3, methods_per_repo=2, points_per_method=3)
    m0 = builder.build([src], base, tmp_path / "base")
    four = builder.BuildOptions(functions_per_repo=3, methods_per_repo=2, points_per_method=3,
                                kinds=("function", "dereference", "name", "call", "import"))
    m1 = builder.build([src], four, tmp_path / "four")
    assert m1["counts"]["function"] == 3 and m1["counts"]["dereference"] == 6
    assert m1["counts"]["name"] > 0 and m1["counts"]["call"] > 0 and m1["counts"]["import"] > 0, m1["counts"]
    tasks = list(read_jsonl(tmp_path / "four" / "tasks.jsonl"))
    base_ids = {t["task_id"] for t in read_jsonl(tmp_path / "base" / "tasks.jsonl")}
    assert base_ids <= {t["task_id"] for t in tasks} and len({t["task_id"] for t in tasks}) == len(tasks)
    assert builder.task_hash([t for t in tasks if t["task_id"] in base_ids]) == m0["tasks_sha256"]
    for t in tasks:
        line = (FIXTURE / t["path"]).read_text().splitlines()[t["line"] - 1]
        if t["kind"] == "name":
            assert line[t["col"]].isidentifier() and line[t["col"] - 1] not in "._" and not line[t["col"] - 1].isalnum()
        elif t["kind"] == "call":
            assert line[t["col"] - 1] == "("
        elif t["kind"] == "import":
            assert line[: t["col"]] in ("import ", "from ") and t["reference"] == line[t["col"]:] + "\n"


def test_keyword_cursors_sit_before_a_keyword_arguments_name():
    """The call kind's keyword cursors (issue 41's invented parameter names): before each named
    keyword argument in the lines asked, also on a call's later lines and inside a nested call;
    never at `**kw`, a positional argument or a default in a `def`."""
    import ast
    code = ('def f(a, b=1):\n'
            '    g(a, key=1, **kw)\n'
            '    h(é="ü", n=k(x, deep = 2),\n'
            '      last=3)\n'
            '    return m(a, b)\n'
            'z = q(out=1)\n')
    lines = code.splitlines()
    got = extract.keyword_points(ast.parse(code), lines, 2, 5)
    assert got == [(2, 9), (3, 6), (3, 13), (3, 20), (4, 6)]
    assert [lines[ln - 1][c:].split("=")[0].strip() for ln, c in got] == ["key", "é", "n", "deep", "last"]


def test_a_build_asked_for_keyword_cursors_puts_one_at_each_keyword_name(tmp_path):
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    models = repo / "inventory" / "models.py"
    models.write_text(models.read_text().replace("item = Item(name)\n", "item = Item(name, quantity=0)\n"))
    opts = builder.BuildOptions(functions_per_repo=3, methods_per_repo=2, points_per_method=3,
                                kinds=("dereference", "keyword"))
    m = builder.build([sources.resolve(str(repo))], opts, tmp_path / "out")
    kw = [t for t in read_jsonl(tmp_path / "out" / "tasks.jsonl") if t["kind"] == "keyword"]
    assert m["counts"]["keyword"] == len(kw) == 1
    assert kw[0]["task_id"].endswith("#keyword") and kw[0]["reference"].startswith("quantity=0)\n")
