"""Issue 44, items 1 and 2: a row cut from outside (its deadline, a cancel, the length limit)
inside a name the dereference monitor is checking shows nothing of that name, and a stream cut by
its deadline ends with finish_reason "deadline", never an error event.

The scene is the issue's: at `return self.di|` (Cart's `discounts` exists only in the unsaved
buffer) the model writes `sc` of `discounts` and the deadline falls. It is made deterministic
with a scripted model (tests/scripted.py `DeadlineAt`): once the row holds `sc`, the request's
deadline is moved to now, and the scheduler's own sweep ends the row — no guess at speed. What is
shown — by the session, `/v1/completions` plain and streamed, the structured endpoint plain and
streamed, llama.cpp's `/infill`, the LSP completer and `groundcode complete` — is empty or ends at
a whole member, never `sc`; the trigger record says what was cut (`cut: "disc"`).
"""
from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from fake_analyzer import FakeBase
from scripted import DeadlineAt, scripted_lm

MEMBERS = {"add", "last", "owner", "registry", "discounts", "total", "__init__"}
CURSOR_LINE = "        return self.di"


class _Members(FakeBase):
    """Cart's members with the buffer's `discounts`, answered at once (a warm analyzer)."""

    def members(self, code, path, line, column, *, receiver, cache_key):
        from groundcode.analysis.base import Analysis
        if receiver == "self":
            return Analysis(receiver, frozenset(MEMBERS), 1.0, False, None)
        return Analysis(receiver, frozenset(), 1.0, False, "empty")


def _buffer(repo) -> str:
    text = (repo / "shop" / "cart.py").read_text()
    text = text.replace("        self.registry = Registry()\n",
                        "        self.registry = Registry()\n        self.discounts = []\n")
    return text.rstrip("\n") + "\n\n    def total(self):\n" + CURSOR_LINE


@pytest.fixture()
def repo(tmp_path, shop_repo):
    dst = tmp_path / "shop"
    shutil.copytree(shop_repo, dst)
    return dst


def _generator(tiny_lm, repo, rules):
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    gen = rules.bind(Generator(scripted_lm(tiny_lm, rules), MonitorConfig(enabled=True)))
    gen.set_analyzer(repo, _Members())
    return gen


def _grounded_end(shown: str) -> None:
    """What the editor inserts after `self.di`: nothing, or the rest of a whole member."""
    name = ("di" + shown).split("(")[0].split(".")[0].split()[0] if shown.strip() else ""
    assert shown == "" or name in MEMBERS, shown
    assert not ("di" + shown).startswith("disc") or ("di" + shown).startswith("discounts"), shown


def _cut_record(triggers) -> dict:
    t = [x if isinstance(x, dict) else x.to_json() for x in triggers]
    assert t and t[0]["receiver"] == "self" and t[0]["cut"] == "disc", t
    return t[0]


def test_a_deadline_inside_a_member_name_shows_nothing_of_it(tiny_lm, repo):
    from groundcode.config import SamplingConfig
    from groundcode.context import cursor_context
    from groundcode.server import lsp_text
    from groundcode.session import Request
    text = _buffer(repo)
    lines = text.splitlines()
    ctx = cursor_context(repo / "shop" / "cart.py", len(lines), len(CURSOR_LINE), repo, text=text)
    rules = DeadlineAt("sc", "ounts\n")
    with _generator(tiny_lm, repo, rules) as gen:
        stream = gen.session.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=16),
                                            deadline_s=60))
        g = stream.result(60)[0]
        texts = [u.text for u in stream if u.kind == "text"]
    assert rules.fired == 1 and rules.tokens >= 2          # the row held `sc` when it was cut
    assert g.finish_reason == "deadline" and g.completion == "" and texts == [], (g, texts)
    rec = _cut_record(g.triggers)
    assert not rec["failed_open"] and rec["chosen"] is None
    info = lsp_text.grounded(g)
    assert "cut before self.disc" in lsp_text.title(info) and "no member access" not in lsp_text.title(info)


def test_the_length_limit_inside_a_member_name_shows_nothing_of_it(tiny_lm, repo):
    # the same row, ended by max_new_tokens right after `sc` instead of by its deadline
    from groundcode.config import SamplingConfig
    from groundcode.context import cursor_context
    from groundcode.session import Request
    text = _buffer(repo)
    lines = text.splitlines()
    ctx = cursor_context(repo / "shop" / "cart.py", len(lines), len(CURSOR_LINE), repo, text=text)
    probe = DeadlineAt("sc", "ounts\n")
    with _generator(tiny_lm, repo, probe) as gen:
        gen.session.submit(Request(context=ctx, deadline_s=60)).result(60)
    assert probe.fired == 1
    rules = DeadlineAt("sc", "ounts\n")
    rules._cut = lambda jobs: None                           # no deadline: only the length limit
    with _generator(tiny_lm, repo, rules) as gen:
        g = gen.session.submit(Request(context=ctx, deadline_s=60, sampling=SamplingConfig(
            max_new_tokens=probe.tokens))).result(60)[0]
        assert g.finish_reason == "length" and g.completion == "", g
        _cut_record(g.triggers)
        g = gen.session.submit(Request(context=ctx, deadline_s=60, sampling=SamplingConfig(
            max_new_tokens=probe.tokens + 12, stop="line"))).result(60)[0]
    assert g.completion.startswith("scounts"), g        # given the tokens, the member is written
    assert g.triggers[0].chosen == "discounts" and g.triggers[0].cut is None


def _events(r) -> list:
    out = []
    for line in r.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[len("data: "):]))
    return out


def test_every_endpoint_cuts_before_the_unfinished_name(tiny_lm, repo):
    from groundcode.server.app import create_app
    from groundcode.server.options import ServeOptions
    from groundcode.server.service import Service
    text = _buffer(repo)
    lines = text.splitlines()
    rules = DeadlineAt("sc", "ounts\n")
    gen = _generator(tiny_lm, repo, rules)
    svc = Service(ServeOptions(workspaces=[repo], prewarm=False, lookahead=0), generator=gen)
    code = {"path": "shop/cart.py", "text": text, "line": len(lines), "column": len(CURSOR_LINE),
            "max_tokens": 16, "until": "line"}
    plain = {"prompt": text, "max_tokens": 16, "groundcode": {"path": "shop/cart.py"}}
    infill = {"input_prefix": text[: len(text) - len(CURSOR_LINE)], "prompt": CURSOR_LINE,
              "input_suffix": "", "n_predict": 16, "groundcode": {"path": "shop/cart.py"}}
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        # the structured endpoint
        r = c.post("/v1/code/completions", json=code)
        assert r.status_code == 200, r.text
        d = r.json()
        assert d["finish_reason"] == "deadline", d
        _grounded_end(d["completion"])
        _cut_record(d["triggers"])
        with c.stream("POST", "/v1/code/completions", json={**code, "stream": True}) as r:
            ev = _events(r)
        assert not [e for e in ev if e.get("type") == "error"], ev
        _grounded_end("".join(e["text"] for e in ev if e.get("type") == "text"))
        done = [e for e in ev if e.get("type") == "done"]
        assert len(done) == 1 and done[0]["finish_reason"] == "deadline", ev
        _cut_record(done[0]["triggers"])
        # OpenAI's legacy completions
        r = c.post("/v1/completions", json=plain)
        assert r.status_code == 200, r.text
        ch = r.json()["choices"][0]
        assert ch["finish_reason"] == "deadline" and ch["groundcode"]["grounded"], ch
        _grounded_end(ch["text"])
        _cut_record(ch["groundcode"]["triggers"])
        with c.stream("POST", "/v1/completions", json={**plain, "stream": True}) as r:
            ev = _events(r)
        assert not [e for e in ev if "error" in e], ev
        _grounded_end("".join(e["choices"][0]["text"] for e in ev if e.get("choices")))
        fin = [e["choices"][0] for e in ev if e.get("choices") and e["choices"][0]["finish_reason"]]
        assert len(fin) == 1 and fin[0]["finish_reason"] == "deadline", ev
        _cut_record(fin[0]["groundcode"]["triggers"])
        # llama.cpp's /infill
        r = c.post("/infill", json=infill)
        assert r.status_code == 200, r.text
        d = r.json()
        assert d["stop_type"] == "deadline", d
        _grounded_end(d["content"])
        _cut_record(d["groundcode"]["triggers"])
    gen.close()
    assert rules.fired == 5


def test_the_lsp_completer_offers_nothing_of_an_unfinished_name(tiny_lm, repo):
    from groundcode.server import lsp_text
    from groundcode.server.lsp_completer import Completer
    text = _buffer(repo)
    rules = DeadlineAt("sc", "ounts\n")
    gen = _generator(tiny_lm, repo, rules)
    c = Completer(lambda: gen, [repo], debounce_s=0, deadline_s=60)
    path = repo / "shop" / "cart.py"
    c.open(path, text)
    try:
        a = asyncio.run(c.complete(path, text.count("\n"), len(CURSOR_LINE)))
    finally:
        c.close_all()
    assert rules.fired == 1
    assert a is not None and a.finish_reason == "deadline" and a.text == "", a   # no item
    assert a.grounded[0]["cut"] == "disc"
    assert lsp_text.title(a.grounded) == "groundcode: cut before self.disc"


def test_groundcode_complete_shows_nothing_of_an_unfinished_name(tiny_lm, repo, monkeypatch):
    import groundcode.api as api
    from groundcode.cli import app
    text = _buffer(repo)
    (repo / "shop" / "cart.py").write_text(text)
    rules = DeadlineAt("sc", "ounts\n")
    real = api.Generator

    class Scripted(real):              # `--model` named, the scripted model loaded
        def __init__(self, model=None, monitor=None, **kw):
            super().__init__(scripted_lm(tiny_lm, rules), monitor, **kw)
            self.set_analyzer(repo, _Members())
            rules.bind(self)
    monkeypatch.setattr(api, "Generator", Scripted)
    r = CliRunner().invoke(app, ["complete", f"{repo}/shop/cart.py:{len(text.splitlines())}:{len(CURSOR_LINE)}",
                                 "--model", "tiny", "--no-server", "--json", "-n", "16"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert rules.fired == 1
    assert d["finish_reason"] == "deadline" and d["completion"] == "", d
    _cut_record(d["triggers"])


def test_a_stalled_stream_ends_with_finish_reason_deadline_not_an_error(tiny_lm, repo):
    # item 2: the session writes `x = 1` and then stalls past the deadline (+ the grace second);
    # the server ends the stream itself: the text sent, then finish_reason "deadline"
    from groundcode.server.app import create_app
    from groundcode.server.options import ServeOptions
    from groundcode.server.service import Service
    rules = DeadlineAt("x = 1\n", "y = 2\n", stall=True)
    gen = _generator(tiny_lm, repo, rules)
    svc = Service(ServeOptions(workspaces=[repo], prewarm=False, lookahead=0, deadline_s=3),
                  generator=gen)
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        with c.stream("POST", "/v1/completions", json={"prompt": "def f():\n    ", "max_tokens": 32,
                                                       "stream": True}) as r:
            assert r.status_code == 200
            ev = _events(r)
        assert rules.fired == 1
        assert not [e for e in ev if "error" in e], ev
        fin = [e["choices"][0] for e in ev if e.get("choices") and e["choices"][0]["finish_reason"]]
        assert len(fin) == 1 and fin[0]["finish_reason"] == "deadline", ev
        shown = "".join(e["choices"][0]["text"] for e in ev if e.get("choices"))
        assert "x = 1" in shown, shown                     # what was sent before the stall
        with c.stream("POST", "/v1/code/completions", json={
                "path": "shop/cart.py", "line": 11, "column": 8, "max_tokens": 32, "stream": True}) as r:
            ev = _events(r)
        assert not [e for e in ev if e.get("type") == "error"], ev
        assert [e["finish_reason"] for e in ev if e.get("type") == "done"] == ["deadline"], ev
    gen.close()


@pytest.mark.parametrize("limit", ["deadline", "length"])
def test_a_name_after_a_dot_the_row_wrote_itself_is_cut_with_its_dot(tiny_lm, repo, limit):
    # the trigger is the row's own (`return |` + `self.disc`): the text shown ends before the
    # token that holds the dot — `self`, a whole name — never `self.` or `self.disc`
    from groundcode.config import SamplingConfig
    from groundcode.context import cursor_context
    from groundcode.session import Request
    text = _buffer(repo)[: -len("self.di")]
    lines = text.splitlines()
    ctx = cursor_context(repo / "shop" / "cart.py", len(lines), len("        return "), repo, text=text)
    probe = DeadlineAt("self.disc", "ounts\n")
    with _generator(tiny_lm, repo, probe) as gen:
        g = gen.session.submit(Request(context=ctx, deadline_s=60)).result(60)[0]
    assert probe.fired == 1
    if limit == "length":
        rules = DeadlineAt("self.disc", "ounts\n")
        rules._cut = lambda jobs: None
        with _generator(tiny_lm, repo, rules) as gen:
            g = gen.session.submit(Request(context=ctx, deadline_s=60, sampling=SamplingConfig(
                max_new_tokens=probe.tokens))).result(60)[0]
    assert g.finish_reason == limit, g
    assert g.completion.strip() in ("", "self"), g
    assert g.triggers[0].receiver == "self" and g.triggers[0].cut == "disc", g.triggers


def test_a_cancel_inside_a_member_name_shows_nothing_of_it(tiny_lm, repo):
    # the client cancels (a newer keystroke, $/cancelRequest) once the row holds `sc`
    from groundcode.context import cursor_context
    from groundcode.session import Request
    text = _buffer(repo)
    lines = text.splitlines()
    ctx = cursor_context(repo / "shop" / "cart.py", len(lines), len(CURSOR_LINE), repo, text=text)
    rules = DeadlineAt("sc", "ounts\n")
    cancels = []

    def cancel(jobs):
        cancels.extend(jobs)
        for job in jobs:
            job.stream.cancel()
    rules._cut = cancel
    with _generator(tiny_lm, repo, rules) as gen:
        g = gen.session.submit(Request(context=ctx, deadline_s=60)).result(60)[0]
    assert cancels and g.finish_reason == "cancelled" and g.completion == "", g
    _cut_record(g.triggers)
