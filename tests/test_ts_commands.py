"""TypeScript in every command (issue 44 item 4): `groundcode generate FILE.ts:FUNCTION` and the
structured endpoint's `"function"` mode write a TypeScript body between its braces
(languages/typescript_bodies.find_body, as the TypeScript benchmark's function tasks), grounded
by TypeScript's server; `--repo` takes a TypeScript-only repository. The model is the bundled
tiny one with a planted preference (tests/scripted.py) for `this.registry.count`, which Registry
does not have: the monitor writes one of its members instead. The Neovim half is
tests/test_lsp_nvim.py."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundcode.analysis import lsp_servers
from groundcode.cli import app
from groundcode.context import function_context
from groundcode.errors import GroundcodeError

REPO = Path(__file__).parent / "fixtures" / "tsshop"
MEMBERS = {"register", "size", "latestUpdate"}
PLANT = "    return this.registry.count;\n  }\n"     # scripted.py: from the line start


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")


@pytest.fixture()
def repo(tmp_path):
    dst = tmp_path / "tsshop"
    shutil.copytree(REPO, dst)
    return dst


def _scripted(tiny_lm):
    from groundcode.decoding.vocab import VocabIndex
    from groundcode.models.load import LoadedModel

    from scripted import ScriptedLM, planted
    model = ScriptedLM(tiny_lm, VocabIndex.for_tokenizer(tiny_lm.tokenizer), planted(PLANT))
    return LoadedModel(model, tiny_lm.tokenizer, "scripted", "cpu", "float32")


def _grounded(completion: str, triggers: list[dict]) -> str:
    (t,) = [t for t in triggers if t["receiver"] == "this.registry"]
    assert not t["failed_open"] and t["candidates"] >= 3, t     # + Object.prototype members
    m = re.search(r"this\.registry\.([\w$]+)", completion)
    assert m and m.group(1) in MEMBERS and m.group(1) == t["chosen"], (completion, t)
    return m.group(1)


def test_a_typescript_body_is_found_by_name(tmp_path):
    text = (REPO / "src" / "cart.ts").read_text()
    ctx = function_context(REPO / "src" / "cart.ts", "Cart.add", REPO)
    assert ctx.kind == "body" and ctx.before.endswith("add(item: string): number {")
    assert ctx.after.startswith("}\n}") and ctx.before + ctx.reference + ctx.after == text
    assert ctx.language.name == "typescript"
    # an empty one-line stub is a body to write too; a JavaScript file; a near miss is named
    js = tmp_path / "pkg" / "a.js"
    js.parent.mkdir()
    (tmp_path / "pkg" / "package.json").write_text("{}\n")
    js.write_text("// it's a stub\nclass A {\n  run(x) {}\n}\nfunction helper() { return 1; }\n")
    stub = function_context(js, "A.run")
    assert stub.before.endswith("run(x) {") and stub.after.startswith("}\n}") and stub.reference == ""
    assert stub.repo == tmp_path / "pkg"                 # package.json marks a JS repository
    assert function_context(js, "helper").reference == " return 1; "
    with pytest.raises(GroundcodeError, match="did you mean A.run"):
        function_context(js, "run")


def test_generate_writes_a_grounded_typescript_body(ts, repo, tiny_lm, monkeypatch):
    """`groundcode generate src/cart.ts:Cart.add --repo DIR` (a TypeScript-only repository:
    no Python file in it) prints a body whose member after `this.registry.` is Registry's."""
    scripted = _scripted(tiny_lm)
    monkeypatch.setattr("groundcode.models.load.load_model", lambda *a, **k: scripted)
    assert not list(repo.rglob("*.py"))
    r = CliRunner().invoke(app, ["generate", f"{repo}/src/cart.ts:Cart.add", "--repo", str(repo),
                                 "--no-server", "--json", "-n", "24", "--analysis-deadline", "60"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert d["scope"] == "Cart.add" and "count" not in d["completion"]
    _grounded(d["completion"], d["triggers"])
    assert d["finish_reason"] == "stop" and not d["completion"].rstrip().endswith("}")   # ends at its brace


def test_the_structured_endpoint_writes_a_typescript_function(ts, tiny_lm):
    """`"function": "Cart.add"` on a .ts buffer whose comment holds an apostrophe (parsed as
    Python before: 400 "unterminated string literal"): 200, grounded by TypeScript's server."""
    from fastapi.testclient import TestClient

    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    from groundcode.server.app import create_app
    from groundcode.server.options import ServeOptions
    from groundcode.server.service import Service
    text = (REPO / "src" / "cart.ts").read_text().replace(
        "  add(", "  // the cart's add: it's where items go\n  add(")
    svc = Service(ServeOptions(workspaces=[REPO], prewarm=False, lookahead=0),
                  generator=Generator(_scripted(tiny_lm), MonitorConfig(enabled=True, deadline_s=60)))
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        r = c.post("/v1/code/completions", json={"path": "src/cart.ts", "text": text,
                                                 "function": "Cart.add", "max_tokens": 24})
        missing = c.post("/v1/code/completions", json={"path": "src/cart.ts", "function": "Cart.nope"})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["grounded"] and "count" not in d["completion"]
    _grounded(d["completion"], d["triggers"])
    assert missing.status_code == 400 and "no function or method 'Cart.nope'" in missing.text


def test_a_typescript_only_repository_is_a_repository(ts, repo, tiny_model_dir):
    """--repo accepts a repository of any supported language (`complete src/cart.ts:9:25 --repo
    DIR` said "holds no Python files"); one with no source file is named."""
    from groundcode.cli import _check_repo
    r = CliRunner().invoke(app, ["complete", f"{repo}/src/cart.ts:9:25", "--repo", str(repo), "--model",
                                 str(tiny_model_dir), "--no-server", "--json", "-n", "3", "--analysis-deadline", "60"])
    assert r.exit_code == 0, r.output
    (t,) = [t for t in json.loads(r.stdout.strip().splitlines()[-1])["triggers"] if t["receiver"] == "this.registry"]
    assert t["analyzer"] == "typescript" and not t["failed_open"] and t["chosen"] in MEMBERS
    assert _check_repo(str(repo), repo / "src" / "cart.ts") == repo
    (repo / "notes").mkdir()
    (repo / "notes" / "a.txt").write_text("x")
    with pytest.raises(GroundcodeError, match="holds no source files"):
        _check_repo(str(repo / "notes"), repo / "notes" / "a.txt")
