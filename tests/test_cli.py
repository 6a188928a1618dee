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
                            str(tiny_model_dir), "-n", "3", "--json", "--deadline", "60"])
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
    (["generate", "{repo}/shop/cart.py"], "expected FILE.py:FUNCTION"),
    (["complete", "{repo}/shop/cart.py:400:0"], "line 400 is outside the file"),
    (["complete", "{repo}/shop/cart.py:1:999"], "column 999 is outside the line"),
    (["complete", "{repo}/shop/cart.py:1"], "expected FILE:LINE:COL"),
    (["complete", "{repo}/shop/cart.py:1:0", "--repo", "/no/such/dir"], "repository not found"),
    (["generate", "{repo}/shop/latin1.py:f"], "is not UTF-8"),
    (["generate", "{repo}/shop/broken.py:f"], "cannot parse"),
    (["generate", "{repo}/shop/cart.py:Cart.add", "--model", "/no/such/model"], "cannot load model"),
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


def test_complete_in_file_with_syntax_error_still_runs(repo, tiny_model_dir):
    (repo / "shop" / "broken.py").write_text("def f(:\n    pass\n\nx = [1, 2\ny = x.\n")
    r = runner.invoke(app, ["complete", f"{repo}/shop/broken.py:5:6", "--model",
                            str(tiny_model_dir), "-n", "3", "--json"])
    assert r.exit_code == 0, r.output
    assert "completion" in json.loads(r.stdout.strip().splitlines()[-1])
