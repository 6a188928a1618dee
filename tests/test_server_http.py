"""`groundcode serve` over HTTP: FastAPI's TestClient for the endpoints, the guards and every bad
input; a real `groundcode serve` subprocess on 127.0.0.1 for the official openai client
(streamed and not), llama.vim's exact /infill requests, concurrency, client disconnects and the
workspace that is never written to. The tiny model writes nonsense, but grounded answers must
still name members of the class (the mask forces them)."""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from groundcode.server.admission import Admission, Busy
from groundcode.server.app import create_app
from groundcode.server.options import ServeOptions
from groundcode.server.service import Service

from serve_process import free_port, start_serve, stop

CART_MEMBERS = {"owner", "registry", "add", "last", "total"}
EDIT = "\n    def total(self): return self."


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if "__pycache__" in p.parts:
            continue
        h.update(str(p.relative_to(root)).encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def ws(tmp_path_factory, shop_repo) -> Path:
    """A copy of the shop fixture, with a symlink that points out of it."""
    base = tmp_path_factory.mktemp("served")
    root = base / "shop"
    shutil.copytree(shop_repo, root)
    secret = base / "secret.py"
    secret.write_text("TOKEN = 'not for you'\n")
    (root / "shop" / "leak.py").symlink_to(secret)
    return root


def _edited(ws: Path) -> tuple[str, int, int]:
    text = (ws / "shop" / "cart.py").read_text() + EDIT
    lines = text.splitlines()
    return text, len(lines), len(lines[-1])


@pytest.fixture(scope="module")
def client(ws, tiny_model_dir):
    # (generous deadlines: these tests judge what is answered, not how fast — beside two
    # CPU-bound processes the first request once passed the 30 s default before writing, and an
    # analysis may pass the 2 s default, which fails its trigger open)
    svc = Service(ServeOptions(workspaces=[ws], model=str(tiny_model_dir), max_body_bytes=64 << 10,
                               deadline_s=180.0, analysis_deadline_s=60.0))
    with TestClient(create_app(svc), base_url="http://127.0.0.1", raise_server_exceptions=bool(os.environ.get("GC_RAISE"))) as c:
        assert svc.prewarmed.wait(60)
        yield c


@pytest.fixture(scope="module")
def no_fim_client(ws, tiny_model_dir):
    """The tiny model as the registry describes the default one: FIM tokens in its tokenizer,
    but no fill-in-the-middle template (never trained for it)."""
    from groundcode.api import Generator
    from groundcode.models.load import load_model
    from groundcode.models.registry import TemplateFacts
    lm = load_model(str(tiny_model_dir))
    lm.template = TemplateFacts(context_length=lm.context_length)
    svc = Service(ServeOptions(workspaces=[ws], prewarm=False), generator=Generator(lm))
    with TestClient(create_app(svc), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def _one_line_error(r, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    msg = r.json()["error"]["message"]
    assert msg and "\n" not in msg
    return msg


# -- the endpoints --------------------------------------------------------------------------------

def test_models_health_and_docs(client):
    m = client.get("/v1/models").json()
    assert m["object"] == "list" and m["data"][0]["object"] == "model"
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["prewarmed"] and len(h["workspaces"]) == 1
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/completions", "/infill", "/v1/code/completions", "/v1/models", "/health"} <= set(paths)


def test_code_completion_on_unsaved_buffer_chooses_a_member_of_cart(client, ws):
    before = _tree_hash(ws)
    text, line, col = _edited(ws)
    r = client.post("/v1/code/completions", json={"path": "shop/cart.py", "text": text,
                                                  "line": line, "column": col, "max_tokens": 12})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["grounded"] and d["path"] == "shop/cart.py" and isinstance(d["completion"], str)
    first = d["triggers"][0]
    assert first["receiver"] == "self" and first["constrained"] and not first["failed_open"], d
    assert first["chosen"] in CART_MEMBERS, d
    assert d["completion"].startswith(first["chosen"])
    assert set(d["timings"]) >= {"admission_ms", "server_ms"}
    assert _tree_hash(ws) == before          # the unsaved buffer never reached the disk
    # the server's session looks ahead on idle time (other first members, as drafts for the
    # next keystroke): /health counts it
    end = time.monotonic() + 10
    while True:                              # queued at once, admitted at the scheduler's next turn
        la = client.get("/health").json()["lookahead"]
        if la["started"] + la["dropped"] >= 1 or time.monotonic() > end:
            break
        time.sleep(0.02)
    assert la["started"] + la["dropped"] >= 1, la


def test_code_completion_streams_text_triggers_and_done(client, ws):
    text, line, col = _edited(ws)
    with client.stream("POST", "/v1/code/completions",
                       json={"path": str(ws / "shop" / "cart.py"), "text": text, "line": line,
                             "column": col, "max_tokens": 8, "stream": True}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [ln[6:] for ln in r.iter_lines() if ln.startswith("data: ")]
    assert events[-1] == "[DONE]"
    parsed = [json.loads(e) for e in events[:-1]]
    done = parsed[-1]
    assert done["type"] == "done"
    streamed = "".join(e["text"] for e in parsed if e["type"] == "text")
    assert streamed == done["completion"]


def test_code_completion_reads_the_file_on_disk_without_text(client):
    r = client.post("/v1/code/completions", json={"path": "shop/registry.py", "line": 9,
                                                  "column": 8, "max_tokens": 4})
    assert r.status_code == 200, r.text
    assert r.json()["grounded"] is True


def test_openai_completion_plain_says_it_is_not_grounded(client):
    r = client.post("/v1/completions", json={"model": "x", "prompt": "def f(x):\n    return",
                                             "max_tokens": 6})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["object"] == "text_completion" and len(d["choices"]) == 1
    assert d["choices"][0]["finish_reason"] in ("stop", "length")
    assert d["groundcode"]["grounded"] is False and d["usage"]["completion_tokens"] <= 6


def test_openai_completion_grounded_by_the_extension_field(client, ws):
    text, _, _ = _edited(ws)
    r = client.post("/v1/completions", json={"prompt": text, "suffix": "\n", "max_tokens": 8,
                                             "groundcode": {"path": "shop/cart.py"}})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["groundcode"]["grounded"] is True and d["groundcode"]["path"] == "shop/cart.py"
    trig = d["choices"][0]["groundcode"]["triggers"]
    assert trig and trig[0]["receiver"] == "self" and trig[0]["chosen"] in CART_MEMBERS, d


def test_openai_sse_chunks_end_with_done(client):
    with client.stream("POST", "/v1/completions",
                       json={"prompt": "def f(x):\n    return", "suffix": "\n", "max_tokens": 6,
                             "stream": True, "stream_options": {"include_usage": True}}) as r:
        assert r.status_code == 200
        raw = r.read().decode()
    events = [ln[6:] for ln in raw.splitlines() if ln.startswith("data: ")]
    assert events and events[-1] == "[DONE]", raw
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "text_completion" for c in chunks)
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finals) == 1 and chunks[-1]["usage"]["completion_tokens"] <= 6


def test_completion_as_continue_sends_it(client):
    # Continue's OpenAI provider with useLegacyCompletionsEndpoint and the template
    # "{{{prefix}}}": a streamed legacy request with its long list of stop words
    req = {"model": "groundcode", "prompt": "import os\n\n\ndef read(path):\n    ",
           "max_tokens": 8, "temperature": 0.01, "stream": True,
           "stop": ["\n\n", "\r\n\r\n", "/src/", "#- coding: utf-8", "```", "\ndef", "\nclass",
                    "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<|endoftext|>"]}
    with client.stream("POST", "/v1/completions", json=req,
                       headers={"Authorization": "Bearer none"}) as r:
        assert r.status_code == 200, r.read()
        events = [ln[6:] for ln in r.iter_lines() if ln.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join(c["choices"][0]["text"] for c in map(json.loads, events[:-1]) if c["choices"])
    assert all(s not in text for s in req["stop"])


def test_infill_as_llama_vim_sends_it(client):
    # llama.vim's FIM request and its warm-up (n_predict 0), field for field
    req = {"id_slot": 0, "input_prefix": "def f(x):\n", "input_suffix": "\n\nprint(f(1))\n",
           "input_extra": [{"text": "def g():\n    return 1\n", "time": 0, "filename": "g.py"}],
           "prompt": "    return ", "n_predict": 8, "stop": [], "n_indent": 4, "top_k": 40,
           "top_p": 0.90, "samplers": ["top_k", "top_p", "infill"], "stream": False,
           "cache_prompt": True, "t_max_prompt_ms": 500, "t_max_predict_ms": 1000,
           "response_fields": ["content", "timings/prompt_n", "timings/prompt_ms",
                               "timings/prompt_per_token_ms", "timings/prompt_per_second",
                               "timings/predicted_n", "timings/predicted_ms",
                               "timings/predicted_per_token_ms", "timings/predicted_per_second",
                               "truncated", "tokens_cached"]}
    r = client.post("/infill", json=req)
    assert r.status_code == 200, r.text
    d = r.json()
    assert set(d) == set(req["response_fields"]) and isinstance(d["content"], str)
    assert d["timings/predicted_n"] <= 8
    warm = dict(req, n_predict=0, samplers=[], temperature=0.0, response_fields=[""])
    r = client.post("/infill", json=warm)
    assert r.status_code == 200 and r.json() == {}
    full = client.post("/infill", json={k: v for k, v in req.items() if k != "response_fields"})
    d = full.json()
    assert {"content", "stop", "timings", "tokens_cached", "truncated"} <= set(d)
    assert set(d["timings"]) >= {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms"}


def test_infill_streams_content_then_stop(client):
    with client.stream("POST", "/infill", json={"input_prefix": "def f(x):\n", "prompt": "    ",
                                                "input_suffix": "\n", "n_predict": 5,
                                                "stream": True}) as r:
        events = [json.loads(ln[6:]) for ln in r.iter_lines() if ln.startswith("data: ")]
    assert events[-1]["stop"] is True and all(e["stop"] is False for e in events[:-1])
    assert "timings" in events[-1]


# -- guards ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, status", [
    ("../secret.py", 403),                  # `..` out of the workspace
    ("shop/../../secret.py", 403),
    ("/etc/hostname", 403),                 # absolute, elsewhere
    ("shop/leak.py", 403),                  # a symlink inside that points out
    ("shop/nope.py", 404),
])
def test_paths_outside_the_workspace_are_refused(client, path, status):
    r = client.post("/v1/code/completions", json={"path": path, "line": 1, "column": 0})
    _one_line_error(r, status)
    if status == 403:     # the OpenAI extension field goes through the same door
        r = client.post("/v1/completions", json={"prompt": "x", "groundcode": {"path": path}})
        _one_line_error(r, 403)


@pytest.mark.parametrize("endpoint, body, expect", [
    ("/v1/completions", '{"prompt": "x", ', "malformed JSON"),
    ("/v1/completions", '{"prompt": "x", "temprature": 0.2}', "unknown field 'temprature'"),
    ("/v1/completions", '{"prompt": "x", "max_tokens": -5}', "max_tokens"),
    ("/infill", '{"input_prefix": "x", "n_predict": -7}', "n_predict"),
    ("/infill", '{"input_prefix": "x", "bogus": true}', "unknown field 'bogus'"),
    ("/v1/code/completions", '{"path": "shop/cart.py", "line": 1, "column": 0, "max_tokens": -1}',
     "max_tokens"),
    ("/v1/code/completions", '{"path": "shop/cart.py", "line": 99, "column": 0}', "line 99"),
    ("/v1/code/completions", '{"path": "shop/cart.py", "line": 1, "column": 500}', "column 500"),
    ("/v1/code/completions", '{"path": "shop/cart.py", "text": "a\\u0000b", "line": 1, "column": 0}',
     "binary"),
    ("/v1/completions", '{"prompt": "\\u0001\\u0002"}', "binary"),
    ("/v1/completions", '{"prompt": "x", "n": 2}', "temperature"),
    ("/v1/completions", '{"prompt": "x", "logprobs": 3}', "logprobs"),
    ("/v1/completions", '[1, 2]', "dictionary"),
    ("/v1/completions", '', "body"),
])
def test_bad_input_gets_a_one_line_4xx(client, endpoint, body, expect):
    r = client.post(endpoint, content=body, headers={"content-type": "application/json"})
    assert expect in _one_line_error(r, 400)


def test_suffix_on_a_model_without_fim_is_answered_with_a_note(no_fim_client):
    # Continue always sends a suffix: a 400 left it with nothing (issue 30). The suffix informs
    # the analyzer of a grounded request; the note says the model did not see it
    r = no_fim_client.post("/v1/completions", json={"prompt": "def f():\n", "suffix": "\n", "max_tokens": 2})
    assert r.status_code == 200, r.text
    assert "fill-in-the-middle" in r.json()["groundcode"]["note"]
    assert no_fim_client.get("/health").json()["fim"] is False


def test_infill_on_a_model_without_fim_continues_the_prefix_and_says_so(no_fim_client):
    r = no_fim_client.post("/infill", json={"input_prefix": "def f(x):\n", "prompt": "    ",
                                            "input_suffix": "\n", "n_predict": 4})
    assert r.status_code == 200, r.text
    g = r.json()["groundcode"]
    assert g["fim"] is False and "without seeing the suffix" in g["note"]


def test_request_size_limit(client):
    r = client.post("/v1/completions", json={"prompt": "x" * (70 << 10)})
    assert "limit" in _one_line_error(r, 413)


def test_bearer_auth(ws, tiny_model_dir):
    svc = Service(ServeOptions(workspaces=[ws], model=str(tiny_model_dir), api_key="s3cret",
                               prewarm=False))
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        assert c.get("/health").status_code == 200          # open: liveness probes
        _one_line_error(c.get("/v1/models"), 401)
        _one_line_error(c.get("/v1/models", headers={"Authorization": "Bearer wrong"}), 401)
        assert c.get("/v1/models", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_deadline_cuts_a_long_completion(ws, tiny_model_dir):
    svc = Service(ServeOptions(workspaces=[ws], model=str(tiny_model_dir), deadline_s=1.5,
                               prewarm=False))
    text = (ws / "shop" / "cart.py").read_text() + "\n"       # a new top-level line: no block end
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        t0 = time.perf_counter()
        r = c.post("/v1/code/completions", json={"path": "shop/cart.py", "text": text,
                                                  "line": text.count("\n") + 1, "column": 0,
                                                  "max_tokens": 1000, "temperature": 1.0})
        took = time.perf_counter() - t0
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["finish_reason"] in ("deadline", "eos"), d
    if d["finish_reason"] == "deadline":
        assert d["tokens"] < 1000
    assert took < 10


def test_admission_queue_bound_and_timeout():
    async def main():
        adm = Admission(limit=1, queue=1)
        first = await adm.enter(1.0)
        waiter = asyncio.ensure_future(adm.enter(5.0))
        await asyncio.sleep(0.01)
        with pytest.raises(Busy) as full:                # one running, one queued: refused
            await adm.enter(1.0)
        assert full.value.full and adm.rejected == 1
        first.release()
        first.release()                                  # idempotent
        second = await asyncio.wait_for(waiter, 1.0)
        with pytest.raises(Busy) as late:                # waited past its deadline
            await adm.enter(0.05)
        assert not late.value.full
        second.release()
        assert adm.active == 0 and adm.waiting == 0
    asyncio.run(main())


# -- a real server: `groundcode serve` on loopback ---------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory, shop_repo):
    """`python -m groundcode serve --workspace <copy of shop> --model tiny` (the bundled tiny
    model), stopped at the end of the module."""
    root = tmp_path_factory.mktemp("live") / "shop"
    shutil.copytree(shop_repo, root)
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc, base = start_serve(["--workspace", str(root), "--model", "tiny", "--max-concurrency", "2",
                              "--queue", "4"], env, port)
    before = _tree_hash(root)
    yield base, root
    stop(proc)
    assert _tree_hash(root) == before        # the server never wrote into its workspace


def test_openai_client_not_streamed_and_streamed(server):
    import openai
    base, _ = server
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60)
    model = client.models.list().data[0].id
    out = client.completions.create(model=model, prompt="def f(x):\n    return", max_tokens=6,
                                    temperature=0)
    assert out.object == "text_completion" and isinstance(out.choices[0].text, str)
    assert out.choices[0].finish_reason in ("stop", "length")
    assert out.model_extra["groundcode"]["grounded"] is False
    pieces, finish = [], None
    for chunk in client.completions.create(model=model, prompt="def f(x):\n    return",
                                           suffix="\n", max_tokens=6, stream=True):
        for ch in chunk.choices:
            pieces.append(ch.text)
            finish = ch.finish_reason or finish
    assert finish in ("stop", "length")
    grounded = client.completions.create(
        model=model, prompt=(Path(server[1]) / "shop" / "cart.py").read_text() + EDIT,
        max_tokens=8, extra_body={"groundcode": {"path": "shop/cart.py"}})
    g = grounded.model_extra["groundcode"]
    assert g["grounded"] is True
    t = grounded.choices[0].model_extra["groundcode"]["triggers"]
    assert t and t[0]["chosen"] in CART_MEMBERS


def test_four_endpoints_and_eight_concurrent_requests_without_5xx(server):
    import httpx
    base, root = server
    text = (root / "shop" / "cart.py").read_text() + EDIT
    lines = text.splitlines()
    bodies = [("/v1/code/completions", {"path": "shop/cart.py", "text": text, "line": len(lines),
                                        "column": len(lines[-1]), "max_tokens": 8}),
              ("/infill", {"input_prefix": "def f(x):\n", "prompt": "    ", "n_predict": 8}),
              ("/v1/completions", {"prompt": "import os\n", "max_tokens": 8})]
    assert httpx.get(base + "/v1/models").status_code == 200
    statuses: list = []

    def one(k):
        path, body = bodies[k % len(bodies)]
        statuses.append(httpx.post(base + path, json=body, timeout=120).status_code)
    threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(150)
    assert len(statuses) == 8 and all(s < 500 for s in statuses), statuses
    assert set(statuses) <= {200, 429} and 200 in statuses
    h = httpx.get(base + "/health").json()
    assert h["active"] == 0 and h["queued"] == 0


@pytest.mark.parametrize("stream", [False, True])
def test_client_disconnect_cancels_the_request(server, stream):
    import httpx
    base, root = server
    before = httpx.get(base + "/health").json()["cancelled"]
    # a new top-level line: no block ends there, so only eos or 1000 tokens would end the row
    text = (root / "shop" / "cart.py").read_text() + "\n"
    body = {"path": "shop/cart.py", "text": text, "line": text.count("\n") + 1, "column": 0,
            "max_tokens": 1000, "temperature": 1.0, "seed": 3, "stream": stream}
    if stream:
        with httpx.stream("POST", base + "/v1/code/completions", json=body, timeout=60) as r:
            assert r.status_code == 200                  # decoding has started: hang up
            time.sleep(0.3)
    else:
        with pytest.raises(httpx.TimeoutException):
            httpx.post(base + "/v1/code/completions", json=body, timeout=1.0)
    t_end = time.time() + 15
    while time.time() < t_end:
        h = httpx.get(base + "/health").json()
        if h["active"] == 0 and h["cancelled"] > before:
            break
        time.sleep(0.2)
    assert h["active"] == 0 and h["cancelled"] > before, h


@pytest.mark.parametrize("grounded", [False, True])
def test_llama_vims_warm_up_prefills_the_prompt_its_real_request_builds(client, grounded):
    """Issue 28: the warm-up prefilled blocks + prefix while the real request's prompt had the
    suffix and its own layout, so the real request found nothing cached (tokens_cached 0)."""
    import uuid
    tag = uuid.uuid4().hex[:8]
    req = {"input_prefix": f"# {tag}\nclass Cart:\n    def add(self, item):\n",
           "input_suffix": "\n\n    def last(self):\n        return 1\n",
           "input_extra": [{"text": f"def helper_{tag}():\n    return 1\n", "filename": "h.py"}],
           "prompt": "        return ", "n_predict": 6, "cache_prompt": True}
    if grounded:
        req["groundcode"] = {"path": "shop/new_module.py"}
    r = client.post("/infill", json=dict(req, n_predict=0))
    assert r.status_code == 200, r.text
    d = client.post("/infill", json=req).json()
    assert d["tokens_cached"] > 0, d
