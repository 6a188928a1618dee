"""A CLI that feels like the editor (issue 30): `complete` sends its request to a running
`groundcode serve` (no model load per call), stops where the editor server stops (`--stop auto`)
and loads the serving dtype. It finds the user's own server by its discovery file, never by a
port, and sends an impostor nothing (issue 39 item 4); alone and through a server it gives the
same text, every option that shapes the answer sent (issue 44 item 3)."""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from typer.testing import CliRunner

from groundcode.cli import _stop_for, app
from serve_process import free_port, start_serve, stop

CART_MEMBERS = {"owner", "registry", "add", "last"}


def _env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A private runtime directory for discovery files (this process and the servers it starts)."""
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
    monkeypatch.delenv("GROUNDCODE_API_KEY", raising=False)
    return d


def test_stop_auto_is_the_editor_servers_rule(tmp_path):
    from groundcode.context import cursor_context
    text = "def f(x):\n    if x:\n    return x.\n"
    opens = cursor_context(tmp_path / "m.py", 2, len("    if x:"), tmp_path, text=text)
    plain = cursor_context(tmp_path / "m.py", 3, len("    return x."), tmp_path, text=text)
    assert _stop_for("auto", opens) == "block" and _stop_for("auto", plain) == "statement"
    assert _stop_for("line", plain) == "line"


def test_complete_and_generate_through_a_running_server(tmp_path, shop_repo, runtime):
    ws = tmp_path / "shop"
    shutil.copytree(shop_repo, ws)
    proc, base = start_serve(["--model", "tiny", "--workspace", str(ws), "--lookahead", "0"], _env(), free_port())
    try:
        cart = ws / "shop" / "cart.py"
        r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base, "--json", "-n", "8"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["server"] == base and d["model"] == "tiny"
        first = d["triggers"][0]
        assert first["receiver"] == "self" and first["chosen"] in CART_MEMBERS, d
        r = CliRunner().invoke(app, ["generate", f"{cart}:Cart.last", "--server", base, "--json", "-n", "8"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["server"] == base and d["tokens"] <= 8 and isinstance(d["completion"], str)
        r = CliRunner().invoke(app, ["generate", f"{cart}:Cart.nope", "--server", base])
        assert r.exit_code == 2 and "nope" in r.output
        outside = tmp_path / "elsewhere.py"
        outside.write_text("x = 1\n")
        r = CliRunner().invoke(app, ["complete", f"{outside}:1:0", "--server", base])
        assert r.exit_code == 2 and "does not serve" in r.output
        # an option the server cannot take is an error with --server, never silently dropped
        r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base, "--no-monitor"])
        assert r.exit_code == 2 and "--no-monitor cannot be sent to a server" in r.output
        # one it can take but not honour (another model, another analyzer) is refused by it
        r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base, "--model", "smollm2-135m"])
        assert r.exit_code == 2 and "serves tiny, not smollm2-135m" in r.output
        r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base, "--analyzer", "ty"])
        assert r.exit_code == 2 and "analyzer is jedi, not ty" in r.output, r.output
        import httpx
        ask = {"path": str(cart), "line": 11, "column": 13, "max_tokens": 4}
        r = httpx.post(base + "/v1/code/completions", json=dict(ask, model="smollm2-135m"), timeout=60)
        assert r.status_code == 400 and "serves tiny, not smollm2-135m" in r.text
        r = httpx.post(base + "/v1/code/completions", json=dict(ask, model="tiny", max_prompt_tokens=32,
                                                                analysis_deadline=5), timeout=60)
        assert r.status_code == 200 and r.json()["prompt_tokens"] <= 32 + 16, r.text
    finally:
        stop(proc)
    r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base])
    assert r.exit_code == 2 and "no groundcode serve answers" in r.output


# -- finding the user's own server: a discovery file, a proof, no key (issue 39 item 4) ----------

class _Impostor:
    """An HTTP server on a loopback port that records everything it is sent and answers every
    request with a plausible groundcode answer (a wrong proof, an ok health, a completion)."""

    def __init__(self, port: int = 0):
        import http.server
        import threading
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                seen.append((self.command, self.path, dict(self.headers), self.rfile.read(n)))
                body = json.dumps({"status": "ok", "proof": "0" * 64, "model": "tiny",
                                   "workspaces": ["/"], "completion": "IMPOSTOR"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _plant(runtime, name: str, url: str, pid: int, ws, mode: int = 0o600) -> "os.PathLike":
    (runtime / "groundcode").mkdir(mode=0o700, exist_ok=True)
    f = runtime / "groundcode" / name
    f.write_text(json.dumps({"url": url, "pid": pid, "token": "t" * 64, "model": "tiny",
                             "analyzer": "jedi", "workspaces": [str(ws)]}))
    os.chmod(f, mode)
    return f


def test_an_impostor_on_a_loopback_port_receives_nothing(tmp_path, shop_repo, runtime, monkeypatch):
    """An impostor on the old default port (when free here), one a discovery file of this user
    names (with a live pid: the proof fails), and one named by a file open to others: `complete`
    sends none of them the file or the key, prints its own completion, and removes a dead
    server's file."""
    import subprocess
    ws = tmp_path / "shop"
    shutil.copytree(shop_repo, ws)
    cart = ws / "shop" / "cart.py"
    monkeypatch.setenv("GROUNDCODE_API_KEY", "secret-key-of-the-user")
    impostors = [_Impostor(), _Impostor()]
    try:
        impostors.append(_Impostor(8012))               # the port the CLI used to trust
    except OSError:
        pass                                            # taken here: the two others still run
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        _plant(runtime, "server-1.json", impostors[0].url, os.getpid(), ws)
        _plant(runtime, "server-2.json", impostors[1].url, os.getpid(), ws, mode=0o644)
        stale = _plant(runtime, "server-3.json", impostors[1].url, dead.pid, ws)
        r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--model", "tiny", "--json", "-n", "4"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert "server" not in d and "IMPOSTOR" not in d["completion"]      # answered here
        assert not stale.exists()                                          # dead pid: removed
        text = cart.read_text()
        for imp in impostors:
            for method, path, headers, body in imp.seen:
                blob = json.dumps(headers) + path + body.decode("latin-1")
                assert "secret-key-of-the-user" not in blob and "t" * 64 not in blob
                assert "registry" not in blob and text[:40] not in blob
                assert method == "GET" and path.startswith("/v1/identity?challenge=")
        assert len(impostors[0].seen) == 1                 # only the challenge
        assert all(not imp.seen for imp in impostors[1:])     # never asked: no file of ours names them
    finally:
        for imp in impostors:
            imp.close()


def test_discovery_files_are_private_and_a_dir_open_to_others_is_not_used(tmp_path, monkeypatch):
    from groundcode.server import discovery
    d = tmp_path / "rt"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(d))
    with discovery.advertise("http://127.0.0.1:1", discovery.new_token(), [tmp_path], "tiny") as f:
        st = os.stat(f)
        assert f.parent == d / "groundcode" and st.st_mode & 0o777 == 0o600 and st.st_uid == os.getuid()
        assert os.stat(f.parent).st_mode & 0o777 == 0o700
        assert [c["pid"] for c in discovery.candidates()] == [os.getpid()]
    assert not f.exists()                                   # removed when the server ends
    os.chmod(d / "groundcode", 0o755)                       # open to others: not read, not written
    assert discovery.runtime_dir() is None and discovery.candidates() == []


def test_complete_finds_its_server_by_file_and_answers_as_it_does_alone(tmp_path, shop_repo, runtime, monkeypatch):
    """Through a discovered `serve` (which requires an API key the CLI does not have: the
    file's token authenticates) and alone, the same completion at 6 cursors (4 of them in a
    2,100-line file), the prompt capped by the same --max-prompt-tokens; the file goes at
    shutdown."""
    ws = tmp_path / "shop"
    shutil.copytree(shop_repo, ws)
    cart = ws / "shop" / "cart.py"
    long = ws / "shop" / "long.py"
    body = "".join(f"def helper_{i}(items):\n    total = 0\n    for item in items:\n"
                   f"        total += item * {i}\n    return total\n\n\n" for i in range(300))
    long.write_text("from shop.cart import Cart\n\n\n" + body + "def use(cart: Cart):\n    return cart.\n")
    n_long = long.read_text().count("\n")
    proc, base = start_serve(["--model", "tiny", "--workspace", str(ws), "--lookahead", "0",
                              "--api-key", "server-key"], _env(), free_port())
    try:
        files = list(runtime.glob("groundcode/server-*.json"))
        assert len(files) == 1 and os.stat(files[0]).st_mode & 0o777 == 0o600
        monkeypatch.setenv("GROUNDCODE_API_KEY", "not-the-server-key")
        cursors = [f"{cart}:11:13", f"{cart}:16:15", f"{long}:{n_long}:16",
                   *(f"{long}:{4 + 7 * i + 4}:11" for i in (10, 299)),    # `    return |`
                   f"{long}:{4 + 7 * 150 + 2}:8"]                         # `    for |`
        assert len(cursors) == 6 and n_long > 2000
        written = []
        for cur in cursors:
            args = ["complete", cur, "--model", "tiny", "--json", "-n", "12", "--max-prompt-tokens", "256"]
            r = CliRunner().invoke(app, args)
            assert r.exit_code == 0, r.output
            via = json.loads(r.stdout.strip().splitlines()[-1])
            assert via.get("server") == base, via            # found by its file
            r = CliRunner().invoke(app, args + ["--no-server"])
            assert r.exit_code == 0, r.output
            alone = json.loads(r.stdout.strip().splitlines()[-1])
            assert via["completion"] == alone["completion"], (cur, via, alone)
            assert via["prompt_tokens"] == alone["prompt_tokens"] <= 256 + 16, (cur, via, alone)
            written.append(via["completion"])
        assert sum(bool(c.strip()) for c in written) >= 5, written      # not six empty answers
    finally:
        stop(proc)
    assert list(runtime.glob("groundcode/server-*.json")) == []
