"""A recipe's dependency environments (evaluation/bench_env.py): wheels pinned by sha256 into the
repository's .venv, seen by the judge (pylint) and the names monitor's module index, never
mirrored into the judge's overlays; a venv groundcode did not make is never touched."""
import base64
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from groundcode.errors import GroundcodeError
from groundcode.evaluation import bench_env, lint
from groundcode.languages.python_modules import ModuleIndex

LOCAL = ("--no-index", "--find-links")


def _wheel(d: Path, name: str, version: str, files: dict[str, str]) -> dict:
    """A pure-Python wheel made here, and its pin."""
    dist = f"{name}-{version}"
    info = {f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    body = {**files, **info}
    record = []
    for path, text in body.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    whl = d / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in body.items():
            z.writestr(path, text)
        z.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return {"name": name, "version": version, "file": whl.name,
            "sha256": hashlib.sha256(whl.read_bytes()).hexdigest()}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    d = tmp_path_factory.mktemp("wheels")
    pin = _wheel(d, "fakedep", "1.0", {"fakedep/__init__.py": "there = 1\n",
                                        "fakedep/sub.py": "def helper():\n    return 2\n"})
    return d, pin


def _repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text("from fakedep import there\n")
    return repo


def test_resolve_pins_local_wheels_with_their_sha256(wheels):
    d, pin = wheels
    assert bench_env.resolve(["fakedep"], (*LOCAL, str(d))) == [pin]
    assert bench_env.resolve([], (*LOCAL, str(d))) == []
    with pytest.raises(GroundcodeError, match="pip failed"):
        bench_env.resolve(["nosuchdep"], (*LOCAL, str(d)))


def test_install_makes_the_venv_once_and_never_touches_a_foreign_one(tmp_path, wheels):
    d, pin = wheels
    repo = _repo(tmp_path)
    args = (*LOCAL, str(d))
    assert bench_env.install(repo, [pin], args) == "installed"
    site = bench_env.site_dir(repo / ".venv")
    assert (repo / ".venv" / "pyvenv.cfg").is_file()
    assert (site / "fakedep" / "__init__.py").read_text() == "there = 1\n"
    assert bench_env.installed(repo / ".venv") == [pin]
    assert bench_env.install(repo, [pin], args) == "unchanged"
    assert bench_env.install(repo, [], args) == "empty"
    # a pin whose hash does not match is refused and leaves no venv half made
    other = _repo(tmp_path / "b")
    with pytest.raises(GroundcodeError, match="pip failed"):
        bench_env.install(other, [dict(pin, sha256="0" * 64)], args)
    assert not (other / ".venv").exists()
    # a venv someone else made is never replaced
    foreign = _repo(tmp_path / "c")
    (foreign / ".venv").mkdir()
    (foreign / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with pytest.raises(GroundcodeError, match="did not make it"):
        bench_env.install(foreign, [pin], args)
    assert (foreign / ".venv" / "pyvenv.cfg").read_text() == "home = /usr/bin\n"


def test_the_judge_and_the_module_index_see_the_venv(tmp_path, wheels):
    d, pin = wheels
    repo = _repo(tmp_path)
    text = "from fakedep import there\nfrom fakedep import absent\nfrom fakedep.sub import helper\n"

    def judged():
        [res] = lint.check([lint.LintJob(repo, "pkg/mod.py", text, 1, 3)], workers=1)
        return sorted((int(m.split(":")[0]), m.split(":")[1].strip()) for m in res.messages)

    # no venv: the package cannot be read, every line is an import error, even the true ones,
    # and the monitor fails open (the project imports it: no invention, but not judged)
    assert judged() == [(1, "import-error"), (2, "import-error"), (3, "import-error")]
    assert ModuleIndex(repo).resolve("fakedep.nosuch").kind == "unknown"
    bench_env.install(repo, [pin], (*LOCAL, str(d)))
    # with it: only the invented name is one
    assert judged() == [(2, "no-name-in-module")]
    index = ModuleIndex(repo)
    assert index.resolve("fakedep.sub").kind == "found"
    assert index.resolve("fakedep.nosuch").kind == "missing"
    # the venv's files are on the judge's path, never mirrored into its overlays
    assert lint._repo_files(repo, {}) == ["pkg/__init__.py", "pkg/mod.py"]


def test_shipped_specs_pin_every_requirement():
    spec = bench_env.env_spec("heldout2")
    assert spec is not None and bench_env.env_spec("no-such-recipe") is None
    recipe = json.loads((Path(bench_env.__file__).parent / "recipes" / "heldout2.json").read_text())
    assert set(spec["packages"]) == {p["source"] for p in recipe["packages"]}
    for source, pkg in spec["packages"].items():
        assert bool(pkg["requires"]) == bool(pkg["pins"]), source
        for p in pkg["pins"]:
            assert len(p["sha256"]) == 64 and p["file"].endswith(".whl"), (source, p)
