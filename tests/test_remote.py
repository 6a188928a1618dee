"""The remote model back end (decoding/remote.py) against a real `groundcode serve --model tiny`
subprocess on 127.0.0.1 (grounding off there: a plain model server, no workspace):

- `groundcode complete … --model http://…/v1 --tokenizer tiny --json` grounds the completion
  here: its first trigger is constrained and chose a member of Cart; requests are counted;
- with no trigger (monitor off), remote and local greedy decoding of the same model and context
  give the same text, through several chunks (the server stops at every dot);
- the server's side of it: `logit_bias` (+100 keeps exactly those ids, -100 bans them) and
  token-id prompts in POST /v1/completions, and `stop_reason`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from serve_process import free_port, start_serve, stop

CART_MEMBERS = {"owner", "registry", "add", "last"}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


@pytest.fixture(scope="module")
def remote():
    """`python -m groundcode serve --model tiny` (no workspace), stopped at the end."""
    proc, base = start_serve(["--model", "tiny", "--max-concurrency", "4"], _env(), free_port())
    yield base + "/v1"
    stop(proc)


def test_cli_complete_through_a_remote_server_is_grounded(remote, shop_repo):
    cart = shop_repo / "shop" / "cart.py"
    out = subprocess.run([sys.executable, "-m", "groundcode", "complete", f"{cart}:11:13",
                          "--repo", str(shop_repo), "--model", remote, "--tokenizer", "tiny",
                          "--json", "--analysis-deadline", "60"],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    d = json.loads(out.stdout)
    first = d["triggers"][0]
    assert first["receiver"] == "self" and first["constrained"] is True, json.dumps(d["triggers"][:2])
    assert first["chosen"] in CART_MEMBERS
    assert d["model"] == f"tiny@{remote}"
    assert d["remote_requests"] >= 2                # a free chunk, then constrained steps
    print(f"remote: {d['remote_requests']} requests for {d['tokens']} tokens, {d['seconds']} s")


def test_remote_and_local_greedy_text_agree_without_triggers(remote, shop_repo):
    from groundcode.api import Generator, cursor_context
    from groundcode.config import MonitorConfig, SamplingConfig
    off = MonitorConfig(enabled=False)
    ctxs = [cursor_context(shop_repo / "shop" / "cart.py", 12, 8, shop_repo),
            cursor_context(shop_repo / "shop" / "cart.py", 16, 8, shop_repo)]
    sampling = SamplingConfig(max_new_tokens=48, stop="line")
    with Generator("tiny", off) as local, Generator(remote, off, tokenizer="tiny") as far:
        want = [o[0] for o in local.run(ctxs, sampling)]
        got = [o[0] for o in far.run(ctxs, sampling)]
    for w, g in zip(want, got):
        assert g.completion == w.completion and g.finish_reason == w.finish_reason
        assert w.remote_requests is None and g.remote_requests >= 1
        assert not g.triggers


def test_remote_model_errors_are_one_line(remote):
    from groundcode.api import Generator
    from groundcode.errors import GroundcodeError
    with pytest.raises(GroundcodeError, match="does not serve 'other'"):
        Generator(remote, remote_model="other", tokenizer="tiny")
    port = free_port()
    with pytest.raises(GroundcodeError, match="cannot connect"):
        Generator(f"http://127.0.0.1:{port}/v1", tokenizer="tiny")


# -- the server's side: token prompts, logit_bias, stop_reason ----------------------------------------

def _ids(text: str) -> list[int]:
    from groundcode.models.load import tiny_model_path
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(tiny_model_path()))
    return tok(text, add_special_tokens=False)["input_ids"], tok


def test_logit_bias_keeps_or_bans_token_ids(remote):
    import httpx
    prompt, tok = _ids("class Cart:\n    def add(self, item):\n        return self")
    body = {"prompt": prompt, "max_tokens": 1, "temperature": 0}
    free = httpx.post(remote + "/completions", json=body, timeout=60).json()["choices"][0]["text"]
    free_id = tok(free, add_special_tokens=False)["input_ids"][0]
    allowed = [a for a in range(200, 400) if a != free_id and tok.decode([a]).strip()][:2]
    kept = httpx.post(remote + "/completions", timeout=60, json={
        **body, "logit_bias": {str(a): 100 for a in allowed}}).json()["choices"][0]["text"]
    assert kept in {tok.decode([a]) for a in allowed}
    banned = httpx.post(remote + "/completions", timeout=60, json={
        **body, "logit_bias": {str(free_id): -100}}).json()["choices"][0]["text"]
    assert banned != free
    r = httpx.post(remote + "/completions", timeout=60, json={**body, "logit_bias": {"x": 100}})
    assert r.status_code == 400 and "token id" in r.json()["error"]["message"]
    r = httpx.post(remote + "/completions", timeout=60, json={**body, "prompt": [10 ** 9]})
    assert r.status_code == 400


def test_token_prompt_and_stop_reason(remote):
    import httpx
    prompt, _ = _ids("import os\nx = os")
    long = httpx.post(remote + "/completions", timeout=60, json={
        "prompt": prompt, "max_tokens": 24, "temperature": 0}).json()["choices"][0]
    cut = httpx.post(remote + "/completions", timeout=60, json={
        "prompt": prompt, "max_tokens": 24, "temperature": 0, "stop": ["."]}).json()["choices"][0]
    if "." in long["text"]:
        assert cut["text"] == long["text"][: long["text"].index(".")]
        assert cut["finish_reason"] == "stop" and cut["stop_reason"] == "."
    else:
        assert cut["text"] == long["text"] and cut["stop_reason"] is None


class _LateTicket:
    def __init__(self, at: float, answer):
        self.at, self.answer = at, answer

    def result(self, timeout=0):
        import time
        left = self.at - time.perf_counter()
        if left > 0:
            if not timeout:
                return None
            time.sleep(min(left, timeout))
            if self.at > time.perf_counter():
                return None
        return self.answer


class _Late:
    """Members of Cart, answered `delay` seconds after each question (a cold analyzer)."""
    name, pid = "late", None

    def __init__(self, delay: float):
        self.delay, self.asked = delay, 0

    def ask(self, query):
        import time

        from groundcode.analysis.base import Analysis, Answered, MembersQuery, SignatureAnswer
        if not isinstance(query, MembersQuery):
            return Answered(SignatureAnswer(None) if not hasattr(query, "key") else None)
        if query.prefetch:
            return Answered(None)
        self.asked += 1
        return _LateTicket(time.perf_counter() + self.delay,
                           Analysis(query.receiver, frozenset(CART_MEMBERS), 1.0, False, None))

    def prewarm(self, at):
        pass

    def deadline(self):
        return 8.0

    def close(self):
        pass


def test_a_row_held_for_its_answer_lets_the_others_go_on(remote, shop_repo):
    """Issue 29: on a remote model a trigger whose answer was still running blocked the batch (a
    wait on the loop's thread). Now that row is held — it takes no token and sends no request —
    while the others go on: a plain request submitted after a grounded one whose answer takes
    3 s ends first, and the grounded one is still constrained once its answer lands."""
    import time

    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, SamplingConfig
    from groundcode.context import cursor_context
    from groundcode.session import Request
    late = _Late(3.0)
    with Generator(remote, tokenizer="tiny", monitor=MonitorConfig(enabled=True)) as gen:
        gen.set_analyzer(shop_repo, late)
        ctx = cursor_context(shop_repo / "shop" / "cart.py", 11, 13, shop_repo)   # `self.|`
        t0 = time.perf_counter()
        grounded = gen.session.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=6)))
        plain = gen.session.submit(Request(prompt_text="def f(x):\n    return", sampling=SamplingConfig(max_new_tokens=4)))
        plain.result(30)
        t_plain = time.perf_counter() - t0
        g = grounded.result(30)[0]
        t_grounded = time.perf_counter() - t0
    first = g.triggers[0]
    assert late.asked >= 1 and first.receiver == "self"
    assert first.chosen in CART_MEMBERS and not first.failed_open, first
    assert t_plain < 2.5 <= 3.0 <= t_grounded, (t_plain, t_grounded)
