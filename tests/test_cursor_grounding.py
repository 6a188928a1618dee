"""Cursor completions are grounded at `self.` (issue 16's headline bug): the analyzer is asked
about the real file with the completion spliced in once (`CodeContext.splice`), and the
prewarm asks about `self.` as a new statement of the body (`CodeContext.probe`), never at the
cursor's own text (which already ends in `self.`: the old splice asked about
`self.        self.`, got nothing and cached that under the real question's key)."""
from __future__ import annotations

import json
import sys
import shutil

import pytest
from typer.testing import CliRunner

from groundcode.cli import app
from groundcode.config import SamplingConfig
from groundcode.context import cursor_context, function_context
from fake_analyzer import FakeBase

runner = CliRunner()

CART_MEMBERS = {"add", "last", "owner", "registry", "__init__"}


@pytest.fixture()
def repo(tmp_path, shop_repo):
    dst = tmp_path / "shop"
    shutil.copytree(shop_repo, dst)
    return dst


def _first_trigger(repo, spec):
    r = runner.invoke(app, ["complete", f"{repo}/shop/cart.py:{spec}", "--repo", str(repo), "--json",
                            "--model", "tiny", "--max-new-tokens", "12"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    return d["triggers"][0]


@pytest.mark.parametrize("spec", ["11:13", "7:13"])       # in Cart.add, in Cart.__init__
def test_complete_at_self_dot_is_constrained_with_the_members_of_cart(repo, spec):
    # `groundcode complete FILE:LINE:COL --json` with the bundled test model, as a user runs it
    t = _first_trigger(repo, spec)
    assert t["receiver"] == "self" and not t["failed_open"], t
    assert t["candidates"] >= len(CART_MEMBERS)
    assert t["constrained"] or t["binding"] or t["chosen"] in CART_MEMBERS, t


def _scripted(tiny_lm, target):
    from scripted import scripted_generator
    return scripted_generator(tiny_lm, target)


def test_a_non_member_written_at_the_cursor_is_redone_as_a_member(tiny_lm, shop_repo):
    ctx = cursor_context(shop_repo / "shop" / "cart.py", 11, 13, shop_repo)
    with _scripted(tiny_lm, "registri.register(item)\n") as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=16))[0][0]
    t = out.triggers[0]
    assert t.receiver == "self" and not t.failed_open and t.candidates >= len(CART_MEMBERS)
    assert out.completion.startswith("registry"), out.completion
    assert t.chosen == "registry" and (t.constrained or t.rolled_back)


def test_probe_is_a_new_statement_of_the_body_not_the_cursor_text(shop_repo):
    f = shop_repo / "shop" / "cart.py"
    ctx = cursor_context(f, 11, 13, shop_repo)           # `        self.|registry.register(item)`
    sp = ctx.probe("self")
    lines = sp.code.splitlines()
    assert lines[sp.line - 1] == "        self." and sp.column == len("        self.")
    assert "self.        self." not in sp.code and sp.code.count("        self.\n") == 1
    assert lines[sp.line - 2].strip().startswith('"""Add an item')     # inside Cart.add's body
    # the real question: the text at the cursor, spliced once
    sp = ctx.splice("")
    assert sp.code.splitlines()[sp.line - 1][: sp.column] == "        self."
    # a function context: the probe is the body's first statement
    fctx = function_context(f, "Cart.last", shop_repo)
    sp = fctx.probe("self")
    assert sp.code.splitlines()[sp.line - 1] == "        self."
    assert sp.code.splitlines()[sp.line - 2].strip() == '"""Return the latest update."""'


def test_probe_on_the_header_line_goes_after_it_and_outside_a_function_is_none(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("class A:\n    def f(self, x: int):\n        return 1\n\nimport os\nos.\n")
    sp = cursor_context(f, 2, len("    def f(self, x: int):"), tmp_path).probe("self")
    assert sp.code.splitlines()[sp.line - 2] == "    def f(self, x: int):"
    assert sp.code.splitlines()[sp.line - 1] == "        self."
    assert cursor_context(f, 6, 3, tmp_path).probe("os") is None


def test_python_option_names_the_analyzers_environment(repo):
    r = runner.invoke(app, ["complete", f"{repo}/shop/cart.py:11:13", "--repo", str(repo), "--model", "tiny",
                            "--python", "/no/such/venv"])
    assert r.exit_code != 0 and "--python: no such interpreter" in r.output
    r = runner.invoke(app, ["complete", f"{repo}/shop/cart.py:11:13", "--repo", str(repo), "--model", "tiny",
                            "--json", "-n", "4", "--python", sys.executable])
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout.strip().splitlines()[-1])["triggers"][0]
    assert t["receiver"] == "self" and not t["failed_open"]


class _Prefetches(FakeBase):
    """Records the prefetch questions a monitor asks at reset (answers nothing)."""

    def __init__(self):
        self.asked = []

    def ask(self, query):
        from groundcode.analysis.base import Analysis, Answered
        if query.prefetch:
            self.asked.append(query)
        return Answered(Analysis(query.receiver, frozenset(), 0.0, False, "empty"))


@pytest.mark.parametrize("kind", ["cursor", "function"])
def test_prewarm_asks_self_annotated_parameters_and_imported_names_as_body_statements(tmp_path, kind):
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.dereference import DereferenceMonitor
    from groundcode.decoding.vocab import VocabIndex
    f = tmp_path / "m.py"
    f.write_text("import os\nfrom shop.registry import Registry\n\n\nclass A:\n"
                 "    def f(self, reg: Registry, n):\n        \"\"\"Doc.\"\"\"\n        x = os.path\n"
                 "        return self.size\n\n\nprint(os.sep)\n")
    ctx = (cursor_context(f, 9, len("        return self."), tmp_path) if kind == "cursor"
           else function_context(f, "A.f", tmp_path))
    an = _Prefetches()
    DereferenceMonitor(an).reset(RowView(0, ctx.continued(""), VocabIndex(["", "x"])))
    asked = {q.receiver: q.at for q in an.asked}
    # the cursor's own trigger (`self.`) was asked for real, not prefetched, in a cursor context
    assert set(asked) == ({"reg", "os"} if kind == "cursor" else {"self", "reg", "os"})
    for receiver, at in asked.items():
        lines = at.code.splitlines()
        assert lines[at.line - 1] == f"        {receiver}." and at.column == len(lines[at.line - 1])
        assert lines[at.line - 2].strip() == ('"""Doc."""' if kind == "function" else "x = os.path")


@pytest.mark.parametrize("typed,heal", [("r", True), ("reg", True), ("reg", False)])
def test_a_cursor_inside_a_member_name_completes_a_member_from_the_cursor(tiny_lm, shop_repo, typed, heal):
    # `self.reg|`: the prompt gives the word's last token back (token healing), the row
    # re-writes it under the heal mask, and the name it goes on with is grounded like any other:
    # a model that would write the non-member `registri` is redone as `registry`, and what is
    # shown starts at the cursor. The redo keeps the part of the name typed before the row's
    # start (regression: it was dropped, and `self.re` + `registry` came out).
    from groundcode.config import PromptConfig
    from groundcode.session import Request, Session
    cart = shop_repo / "shop" / "cart.py"
    ctx = cursor_context(cart, 11, 13 + len(typed), shop_repo)
    assert ctx.before.endswith("self." + typed)
    pconf = PromptConfig(heal=heal)
    with _scripted(tiny_lm, "") as probe:
        owed = probe.prompt_builder(pconf).build(ctx, 16).owed
    assert (owed and typed.endswith(owed.lstrip("."))) if heal else owed == "", owed
    row_start = ctx.continued(owed).before
    with _scripted(tiny_lm, (ctx.before + "istri.register(item)\n")[len(row_start):]) as gen, \
            Session(gen) as sess:
        out = sess.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=16),
                                  prompt=pconf)).result(60)[0]
    t = out.triggers[0]
    assert t.receiver == "self" and not t.failed_open and t.chosen == "registry", t
    assert out.completion.startswith("registry"[len(typed):] + "."), out.completion


class _Members(FakeBase):
    """Cart's members, answered at once (a warm analyzer)."""

    def members(self, code, path, line, column, *, receiver, cache_key):
        from groundcode.analysis.base import Analysis
        if receiver == "self":
            return Analysis(receiver, frozenset(CART_MEMBERS), 1.0, False, None)
        return Analysis(receiver, frozenset(), 1.0, False, "empty")


def test_a_heal_masked_token_that_runs_past_the_name_is_still_checked(tiny_lm, shop_repo):
    """Issue 29: a cursor inside a name (`self.reg|`) gives the word's last token back (token
    healing); that step is masked by the heal guide, and the engine skipped every guide's check
    on a masked step, so a token writing the owed text merged with a non-member (`ister`) passed
    unverified: `self.regist|` became `register` or `registype`. Every guide's verdict now
    applies on every step."""
    text = (shop_repo / "shop" / "cart.py").read_text()
    line = "        self.registry.register(item)"
    cut = text.replace(line, "        return self.regist")
    row = cut.splitlines().index("        return self.regist") + 1
    ctx = cursor_context(shop_repo / "shop" / "cart.py", row, len("        return self.regist"), shop_repo, text=cut)
    with _scripted(tiny_lm, "registype(item)\n") as gen:
        gen.set_analyzer(shop_repo, _Members())           # the answer is in before the first step
        out = gen.run([ctx], SamplingConfig(max_new_tokens=8, stop="line"))[0][0]
    name = ("regist" + out.completion).split("(")[0].split(".")[0].strip()
    t = out.triggers[0]
    assert t.receiver == "self" and not t.failed_open, t
    assert name in CART_MEMBERS and name.startswith("reg"), (out.completion, t)


def test_the_server_grounds_a_heal_masked_merged_token_too(tiny_lm, shop_repo, tmp_path):
    # the same through the structured endpoint a client calls (its own session over the scripted model)
    from fastapi.testclient import TestClient

    from groundcode.server.app import create_app
    from groundcode.server.options import ServeOptions
    from groundcode.server.service import Service
    repo = tmp_path / "shop"
    shutil.copytree(shop_repo, repo)
    text = (repo / "shop" / "cart.py").read_text().replace("        self.registry.register(item)",
                                                           "        return self.regist")
    row = text.splitlines().index("        return self.regist") + 1
    gen = _scripted(tiny_lm, "registype(item)\n")
    gen.set_analyzer(repo, _Members())
    svc = Service(ServeOptions(workspaces=[repo], prewarm=False, lookahead=0), generator=gen)
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        r = c.post("/v1/code/completions", json={"path": "shop/cart.py", "text": text, "line": row,
                                                  "column": len("        return self.regist"), "max_tokens": 8,
                                                  "until": "line"})
    assert r.status_code == 200, r.text
    d = r.json()
    name = ("regist" + d["completion"]).split("(")[0].split(".")[0].strip()
    assert name in CART_MEMBERS, d
