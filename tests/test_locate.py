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
from groundcode.server.locate import Locator
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
    assert isinstance(loc.locate("import os\n", ""), str)                    # too little text
    assert "no workspace file" in loc.locate("def nothing_like_this():\n    return unknown_value_here\n", "")


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
