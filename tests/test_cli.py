"""The CLI: complete/generate output, --json schema, one-line errors, no writes to the repo."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from typer.testing import CliRunner

from groundcode.cli import app

runner = CliRunner()


def _tree_hash(root):
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture()
def repo(tmp_path, shop_repo):
    dst = tmp_path / "shop"
    shutil.copytree(shop_repo, dst)
    return dst


def test_generate_json(repo, tiny_model_dir):
    before = _tree_hash(repo)
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", "--model",
                            str(tiny_model_dir), "-n", "8", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    for key in ("completion", "model", "seconds", "tokens", "triggers"):
        assert key in d
    assert isinstance(d["completion"], str) and d["tokens"] <= 8
    assert _tree_hash(repo) == before


def test_generate_check_first_reports_what_the_checker_found(repo, tiny_model_dir):
    before = _tree_hash(repo)
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", "--model", str(tiny_model_dir),
                            "-n", "12", "--json", "--check-first", "--no-server"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    c = d["check_first"]
    assert c["strategy"] in ("free", "rewritten", "unchanged", "kept free", "budget"), c
    assert 1 <= c["writes"] <= 3 and 1 <= len(c["problems"]) <= c["writes"], c
    assert (c["strategy"] == "free") == (c["problems"][0] == []), c
    assert c["total_s"] >= c["check_s"] >= 0
    assert _tree_hash(repo) == before                 # the checker read a copy
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", "--check-first", "--no-monitor"])
    assert r.exit_code == 2 and "--no-monitor" in r.output


def test_complete_prints_trigger_summary(repo, tiny_model_dir):
    r = runner.invoke(app, ["complete", f"{repo}/shop/cart.py:16:28", "--repo", str(repo),
                            "--model", str(tiny_model_dir), "-n", "4"])
    assert r.exit_code == 0, r.output
    assert "trigger(s)" in r.output and "tokens" in r.output


def test_complete_json_trigger_fields(repo, tiny_model_dir):
    # the cursor is right after `self.registry.`: the first step is a trigger
    (repo / "shop" / "more.py").write_text(
        "from shop.cart import Cart\n\n\ndef f(c: Cart):\n    return c.registry.\n")
    r = runner.invoke(app, ["complete", f"{repo}/shop/more.py:5:22", "--model",
                            str(tiny_model_dir), "-n", "3", "--json", "--analysis-deadline", "60"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert d["triggers"], d
    t = d["triggers"][0]
    assert t["receiver"] == "c.registry" and t["candidates"] >= 3
    for key in ("receiver", "candidates", "chosen", "analysis_ms", "cache_hit", "failed_open"):
        assert key in t
    assert t["chosen"] in {"register", "latest_update", "size", "_registered_updates", None}


@pytest.mark.parametrize("args, message", [
    (["generate", "missing.py:f"], "file not found"),
    (["generate", "{repo}/shop/cart.py:Cart.nope"], "no function or class 'nope'"),
    (["generate", "{repo}/shop/cart.py:Nope"], "no function or class 'Nope'"),
    (["generate", "{repo}/shop/cart.py"], "expected FILE:FUNCTION"),
    (["generate", "{repo}/shop/notes.txt:f"], "expected FILE:FUNCTION"),
    (["complete", "{repo}/shop/cart.py:400:0"], "line 400 is outside the file"),
    (["complete", "{repo}/shop/cart.py:1:999"], "column 999 is outside the line"),
    (["complete", "{repo}/shop/cart.py:1"], "expected FILE:LINE:COL"),
    (["complete", "{repo}/shop/cart.py:1:0", "--repo", "/no/such/dir"], "repository not found"),
    (["generate", "{repo}/shop/latin1.py:f"], "is not UTF-8"),
    (["generate", "{repo}/shop/broken.py:f"], "cannot parse"),
    (["generate", "{repo}/shop/cart.py:Cart.add", "--model", "/no/such/model"], "no such directory"),
])
def test_user_errors_are_one_line(repo, tiny_model_dir, args, message):
    (repo / "shop" / "latin1.py").write_bytes("def f():\n    return 'caf\xe9'\n".encode("latin-1"))
    (repo / "shop" / "broken.py").write_text("def f(:\n    pass\n")
    before = _tree_hash(repo)
    args = [a.replace("{repo}", str(repo)) for a in args]
    if "--model" not in args:
        args += ["--model", str(tiny_model_dir)]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert "Traceback" not in r.output
    assert _tree_hash(repo) == before


def test_a_source_in_any_encoding_python_accepts(repo, tiny_model_dir):
    """PEP 263: a file declared `# -*- coding: latin-1 -*-` is read as Python reads it (it was
    refused as "not UTF-8"); a UTF-8 byte order mark is not part of the text."""
    from groundcode.repo import read_source
    src = '# -*- coding: latin-1 -*-\ndef f():\n    """caf\xe9"""\n    return 1\n'
    (repo / "shop" / "latin1.py").write_bytes(src.encode("latin-1"))
    (repo / "shop" / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")
    assert read_source(repo / "shop" / "latin1.py") == src
    assert read_source(repo / "shop" / "bom.py") == "x = 1\n"
    r = runner.invoke(app, ["generate", f"{repo}/shop/latin1.py:f", "--model", str(tiny_model_dir),
                            "-n", "4", "--json", "--no-server"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.strip().splitlines()[-1])["scope"] == "f"


def test_complete_in_file_with_syntax_error_still_runs(repo, tiny_model_dir):
    (repo / "shop" / "broken.py").write_text("def f(:\n    pass\n\nx = [1, 2\ny = x.\n")
    r = runner.invoke(app, ["complete", f"{repo}/shop/broken.py:5:6", "--model",
                            str(tiny_model_dir), "-n", "3", "--json"])
    assert r.exit_code == 0, r.output
    assert "completion" in json.loads(r.stdout.strip().splitlines()[-1])


# -- the edges a new user met (issue #7, item 5) ---------------------------------------------

def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip().startswith("groundcode ")


def test_errors_are_text_not_markup_or_emoji():
    r = runner.invoke(app, ["generate", "x.py:a:b"])
    assert r.exit_code == 2 and "'x.py:a:b'" in r.output and "🅰" not in r.output


def test_a_method_without_its_class_gets_a_suggestion(repo):
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:last"])
    assert r.exit_code == 2 and "did you mean Cart.last?" in r.output


@pytest.mark.parametrize("flags,message", [
    (["-n", "0"], "max-new-tokens must be >= 1"), (["--top-p", "2"], "top-p must be in (0, 1]"),
    (["-t", "-1"], "temperature must be >= 0"), (["--device", "cuda:7"], "--device cuda:7"),
    (["--stop", "word"], "stop must be block, statement or line"),
    (["--analysis-deadline", "0"], "--analysis-deadline must be > 0"),
    (["--repo", ""], "--repo is empty"), (["--model", "./no/such/model/"], "no such directory")])
def test_bad_values_are_one_line_errors(repo, flags, message):
    model = [] if "--model" in flags else ["--model", "tiny"]
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", *flags, *model])
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_the_old_deadline_flag_is_the_analysis_deadline_with_a_warning(repo):
    # --deadline meant the analysis deadline here, the request's in serve and lsp: one word per
    # meaning now (--analysis-deadline everywhere), the old flag kept as a deprecated alias
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", "--deadline", "0", "--model", "tiny"])
    assert r.exit_code == 2 and "--analysis-deadline must be > 0" in r.output, r.output
    assert "--deadline is deprecated" in r.output
    r = runner.invoke(app, ["complete", "--help"])
    assert "--analysis-deadline" in r.output and "--deadline " not in r.output.replace("--analysis-deadline", "")


def test_an_empty_model_directory_and_a_repo_without_the_file(repo, tmp_path):
    (tmp_path / "empty").mkdir()
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", "--model", str(tmp_path / "empty")])
    assert r.exit_code == 2 and "empty" in r.output
    (tmp_path / "other").mkdir()
    r = runner.invoke(app, ["generate", f"{repo}/shop/cart.py:Cart.last", "--repo", str(tmp_path / "other")])
    assert r.exit_code == 2 and "not inside --repo" in r.output


def test_stop_after_one_line_and_streaming(repo, tiny_model_dir):
    r = runner.invoke(app, ["complete", f"{repo}/shop/cart.py:12:8", "--model", str(tiny_model_dir),
                            "-n", "40", "--stop", "line", "--json", "--no-monitor"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert d["completion"].count("\n") <= 1 and d["finish_reason"] in ("stop", "eos", "length")
    r = runner.invoke(app, ["complete", f"{repo}/shop/cart.py:12:8", "--model", str(tiny_model_dir),
                            "-n", "6", "--stream", "--no-monitor"])
    assert r.exit_code == 0, r.output
    assert "trigger(s)" in r.output


def test_the_stream_view_appends_final_text_only():
    # The session streams only text that will not be taken back (a rollback happens before the
    # text after the trigger is final), so the view only appends.
    from types import SimpleNamespace as E

    from groundcode.cli import _Stream
    s = _Stream(None)
    for ev in (E(kind="text", text="self."), E(kind="trigger", text=""), E(kind="text", text="size"),
               E(kind="done", text="")):
        s.on_event(ev)
    assert s.text == "self.size"
    s.finish("self.size\n")


def test_piped_output_is_not_cut_to_80_columns(monkeypatch):
    import io

    from groundcode.cli import _console
    monkeypatch.setattr("sys.stderr", io.StringIO())
    c = _console(stderr=True)
    assert c.width >= 200
    c.print("x" * 150)
    assert "x" * 150 in c.file.getvalue()


def test_the_cpu_benchmark_script_never_overwrites_results(tmp_path):
    import subprocess
    from pathlib import Path
    script = Path(__file__).parents[1] / "benchmarks" / "bench_standing_cpu.sh"
    full = tmp_path / "full"
    full.mkdir()
    (full / "summary.json").write_text("{}")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GC": "true", "W": str(tmp_path / "w"),
           "BENCH": str(tmp_path)}
    r = subprocess.run(["bash", str(script)], env={**env, "R": str(full)}, cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "already holds results" in r.stderr
    assert (full / "summary.json").read_text() == "{}"
    r = subprocess.run(["bash", str(script)], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    made = list((tmp_path / "benchmarks" / "results").glob("standing_cpu_*/timing.json"))
    assert len(made) == 1


def test_sdk_and_keyword_monitors_can_be_turned_off(repo, tiny_model_dir, monkeypatch):
    import groundcode.api as api
    seen = []
    real = api.Generator

    class Spy(real):
        def __init__(self, model=None, monitor=None, **kw):
            seen.append(monitor)
            super().__init__(model, monitor, **kw)
    monkeypatch.setattr(api, "Generator", Spy)
    base = ["generate", f"{repo}/shop/cart.py:Cart.last", "--model", str(tiny_model_dir), "-n", "4", "--json"]
    assert runner.invoke(app, base).exit_code == 0
    assert runner.invoke(app, base + ["--no-sdk", "--no-keywords"]).exit_code == 0
    assert (seen[0].sdk, seen[0].keywords) == (True, True)
    assert (seen[1].sdk, seen[1].keywords) == (False, False)
