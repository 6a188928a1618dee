"""Grounding for text-only clients (issue 30): Continue, llama.vim and llama.vscode send text,
never a path; the server finds the workspace file from the text (server/locate.py) and grounds
with the whole file as the analyzer's view, the rest of the file after the cursor included."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from groundcode.server.app import create_app
from groundcode.server.locate import Locator, Miss
from groundcode.server.options import ServeOptions
from groundcode.server.service import Service

CART_MEMBERS = {"owner", "registry", "add", "last", "total"}


@pytest.fixture(scope="module")
def ws(tmp_path_factory, shop_repo) -> Path:
    root = tmp_path_factory.mktemp("located") / "shop"
    shutil.copytree(shop_repo, root)
    (root / "shop" / "other.py").write_text("class Other:\n    def ping(self):\n        return 1\n")
    return root


def _typing(ws):
    """The buffer as the user has it: a new method typed in Cart (never saved), cursor after
    `self.`; (prefix, suffix)."""
    cart = (ws / "shop" / "cart.py").read_text()
    at = cart.index("    def last(self):")
    prefix = cart[:at] + "    def total(self):\n        return self."
    suffix = "\n\n" + cart[at:]
    return prefix, suffix


def test_the_locator_finds_the_file_of_a_whole_buffer_and_of_a_window(ws):
    loc = Locator([ws])
    loc.refresh()                                 # the index (the server builds it at prewarm)
    prefix, suffix = _typing(ws)
    f = loc.locate(prefix, suffix)
    assert f.path.name == "cart.py" and f.text == prefix + suffix
    assert f.text[: len(prefix)].endswith("return self.")
    window = "".join(prefix.splitlines(keepends=True)[-4:])     # llama.vim: a few lines around
    tail = "".join(suffix.splitlines(keepends=True)[:3])
    f = loc.locate(window, tail)
    assert f.path.name == "cart.py"
    assert f.text.startswith("from shop.registry import Registry")          # the file around it
    assert "return self.registry.latest_update()" in f.text                  # ... and after it
    assert f.text.count("def total(self):") == 1
    assert isinstance(loc.locate("import os\n", ""), Miss)                   # too little text
    miss = loc.locate("def nothing_like_this():\n    return unknown_value_here\n", "")
    assert "no workspace file" in str(miss) and not miss.capped


def _client(ws, tiny_model_dir):
    svc = Service(ServeOptions(workspaces=[ws], model=str(tiny_model_dir), prewarm=False, lookahead=0))
    return TestClient(create_app(svc), base_url="http://127.0.0.1")


def test_continues_request_is_grounded_on_the_file_it_came_from(ws, tiny_model_dir):
    # Continue's OpenAI provider (legacy completions): prefix and suffix, streamed, its stops
    prefix, suffix = _typing(ws)
    req = {"model": "groundcode", "prompt": prefix, "suffix": suffix, "max_tokens": 8,
           "temperature": 0.01, "stream": True,
           "stop": ["\n\n", "\r\n\r\n", "/src/", "#- coding: utf-8", "```", "\ndef", "\nclass"]}
    with _client(ws, tiny_model_dir) as c:
        with c.stream("POST", "/v1/completions", json=req) as r:
            assert r.status_code == 200, r.read()
            events = [json.loads(ln[6:]) for ln in r.iter_lines() if ln.startswith("data: ") and ln != "data: [DONE]"]
    g = [e["groundcode"] for e in events if e.get("groundcode")] or \
        [e["choices"][0].get("groundcode") for e in events if e["choices"] and e["choices"][0].get("groundcode")]
    meta = next(x for x in g if x)
    assert meta["grounded"] is True and meta["path"] == "shop/cart.py", meta
    assert "found the file by its text" in meta["note"]
    trig = meta["triggers"]
    assert trig and trig[0]["receiver"] == "self" and trig[0]["chosen"] in CART_MEMBERS, meta


def test_llama_vims_request_is_grounded_and_unmatched_text_says_so(ws, tiny_model_dir):
    prefix, suffix = _typing(ws)
    lines = prefix.splitlines(keepends=True)
    req = {"id_slot": 0, "input_prefix": "".join(lines[-5:-1]), "prompt": lines[-1],
           "input_suffix": "".join(suffix.splitlines(keepends=True)[:4]),
           "input_extra": [{"text": "class Other:\n    def ping(self):\n", "time": 0, "filename": "shop/other.py"}],
           "n_predict": 8, "stop": [], "n_indent": 8, "top_k": 40, "top_p": 0.90,
           "samplers": ["top_k", "top_p", "infill"], "stream": False, "cache_prompt": True,
           "t_max_prompt_ms": 500, "t_max_predict_ms": 1000}
    with _client(ws, tiny_model_dir) as c:
        d = c.post("/infill", json=req).json()
        g = d["groundcode"]
        assert g["grounded"] is True and g["path"] == "shop/cart.py", g
        assert g["triggers"] and g["triggers"][0]["chosen"] in CART_MEMBERS, g
        plain = c.post("/infill", json=dict(req, input_prefix="def unrelated_function_here(x):\n",
                                            prompt="    return x.", input_suffix="\n")).json()["groundcode"]
        assert plain["grounded"] is False and "plain decoding" in plain["note"]


# -- issue 39 item 8: the best fit, the index off the request path, no silent cap -----------------
TWINS = """from shop.registry import Registry


class Base:
    def helper_method(self):
        return 1


class Plain:
    def __init__(self, owner, registry):
        self.owner = owner
        self.registry = registry
        self.items_seen = []

    def plain_only(self):
        return self.owner


class Special(Base):
    def __init__(self, owner, registry):
        self.owner = owner
        self.registry = registry
        self.items_seen = []
        self.special_count = 0

    def bump(self):
        self.special_count += 1
        return self.special_count

    def describe(self):
        return str(self.owner)
"""


@pytest.fixture()
def twins(tmp_path, shop_repo) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(shop_repo, root)
    (root / "shop" / "twins.py").write_text(TWINS)
    return root


def _special_window():
    """llama.vim's window inside Special.bump, its first lines the same as Plain.__init__'s."""
    at = TWINS.index("        self.special_count += 1")
    start = TWINS.index("    def __init__(self, owner, registry):\n        self.owner = owner\n        self.registry = registry\n        self.items_seen = []\n        self.special_count")
    prefix = TWINS[start:at] + "        self."
    suffix = "\n" + TWINS[at:].split("\n", 1)[1]
    suffix = "".join(suffix.splitlines(keepends=True)[:3])
    return prefix, suffix


def test_a_window_is_placed_where_it_fits_not_at_the_first_match_of_its_first_lines(twins, tiny_lm):
    loc = Locator([twins])
    loc.refresh()
    prefix, suffix = _special_window()
    f = loc.locate(prefix, suffix)
    assert f.path.name == "twins.py"
    head = f.text[: f.text.index(prefix)]
    assert head.endswith("class Special(Base):\n") and "class Plain:" in head     # its class header stays
    assert f.text.count("class Special(Base):") == 1 and f.text.count("def plain_only") == 1
    assert f.text.endswith("        return str(self.owner)\n")                     # the file after it
    assert f.text.count("self.special_count = 0") == 1
    # what the analyzer then answers at the cursor: Special's members, the inherited one included
    from groundcode.analysis.base import MembersQuery
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    from groundcode.context import cursor_context
    ctx = cursor_context(f.path, f.line, f.column, twins, text=f.text)
    with Generator(tiny_lm, MonitorConfig(enabled=True)) as gen:
        ans = gen.analyzer_for(ctx).ask(MembersQuery(ctx.splice(""), "self", ("twins",))).result(60)
    assert {"helper_method", "special_count", "bump", "describe"} <= ans.names, ans
    assert "plain_only" not in ans.names


def test_the_index_is_built_at_prewarm_and_refreshed_off_the_request_path(ws, tiny_model_dir, monkeypatch, tmp_path):
    import threading
    walkers = []
    real_walk = Locator._walk

    def walk(self):
        walkers.append(threading.current_thread().name)
        return real_walk(self)
    monkeypatch.setattr(Locator, "_walk", walk)
    root = tmp_path / "shop"
    shutil.copytree(ws, root)
    svc = Service(ServeOptions(workspaces=[root], model=str(tiny_model_dir), prewarm=False, lookahead=0))
    try:
        svc.gen.monitor.enabled = False           # the index only (no analyzer to prewarm)
        svc.prewarm()                             # the server's start: the index is built now
        loc = svc._locator
        assert loc is not None and loc.built.wait(60) and loc.facts()["indexed"] >= 3
        prefix, suffix = _typing(root)
        with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
            req = {"input_prefix": prefix, "input_suffix": suffix, "prompt": "", "n_predict": 2}
            g = c.post("/infill", json=req).json()["groundcode"]
            assert g["grounded"] is True and g["locate"]["placed"] and g["locate"]["path"] == "shop/cart.py", g
            h = c.get("/health").json()
            assert h["locate"]["ready"] and h["locate"]["indexed"] >= 3 and not h["locate"]["capped"], h
            # a file written after the start is found once the locator's own thread rescans
            (root / "shop" / "fresh.py").write_text("class Fresh:\n    def distinctive_fresh_method(self):\n"
                                                   "        return self.something_else_entirely\n")
            loc.rescan_s = 0.01
            seen = loc.scans
            deadline = __import__("time").monotonic() + 60
            while loc.scans < seen + 2 and __import__("time").monotonic() < deadline:
                loc.built.wait(0.05)
            g = c.post("/infill", json=dict(req, input_prefix="class Fresh:\n    def distinctive_fresh_method(self):\n",
                                            prompt="        return self.", input_suffix="\n")).json()["groundcode"]
            assert g["grounded"] is True and g["path"] == "shop/fresh.py", g
    finally:
        svc.close()
    assert walkers and set(walkers) == {"groundcode-locate"}, walkers          # never a request's thread


def test_past_the_cap_a_request_that_cannot_be_placed_says_so(ws, tiny_model_dir, monkeypatch):
    loc = Locator([ws], max_files=1)
    loc.refresh()
    facts = loc.facts()
    assert facts["capped"] and facts["indexed"] == 1 and facts["files"] > 1, facts
    prefix, suffix = _typing(ws)
    miss = loc.locate(prefix, suffix)
    assert isinstance(miss, Miss) and miss.capped
    assert "the index holds the first 1" in miss.reason and f"{facts['files']:,} source files" in miss.reason
    import groundcode.server.locate as locate_module
    monkeypatch.setattr(locate_module, "MAX_FILES", 1)
    with _client(ws, tiny_model_dir) as c:
        d = c.post("/infill", json={"input_prefix": prefix, "input_suffix": suffix, "prompt": "",
                                    "n_predict": 2}).json()
        g = d["groundcode"]
    assert g["grounded"] is False and "the index holds the first 1" in g["note"] and "plain decoding" in g["note"]
    assert g["locate"]["placed"] is False and g["locate"]["capped"] is True and g["locate"]["index"]["capped"]
