"""A scripted OpenAI-compatible completions server on 127.0.0.1 for the remote back end's fault
tests (tests/test_remote_faults.py). Not a test itself.

    with Upstream(tokenizer, script=[429, 429]) as up:   # the first two completions answer 429
        up.url          # "http://127.0.0.1:PORT/v1"
        up.bodies       # every completions body received

After the script, a completion answers: with `logit_bias`, the text of the first id biased +100
(or, with only bans, a token not banned); with `allowed_token_ids`, the first id's text; else
`free` (`ignore=True`: always `free`, whatever the constraint). `refuse_ids=True` answers a
token prompt with 400; `refuse_bias=True` answers logit_bias with a 400 naming it. A script
entry is a status code (429 and 503 carry `Retry-After: 0`), "garbage" (200, not JSON),
"stall" (sleeps 5 s before answering normally) or "reset" (closes the connection).
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Upstream:
    def __init__(self, tokenizer, script=(), free: str = " free", ignore: bool = False,
                 refuse_ids: bool = False, refuse_bias: bool = False, admits: int | None = None,
                 hold_s: float = 0.01):
        self.tok, self.script, self.free = tokenizer, list(script), free
        self.ignore, self.refuse_ids, self.refuse_bias = ignore, refuse_ids, refuse_bias
        self.admits = admits              # answer 429 beyond this many at once
        self.hold_s = hold_s              # how long a successful answer takes
        self.active = self.peak = 0
        self.bodies: list = []
        self.statuses: list = []
        self._lock = threading.Lock()
        up = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, code: int, body: bytes, headers=()):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, json.dumps({"data": [{"id": "stub"}]}).encode())

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n))
                code, payload, headers = up._answer(body)
                if code == "reset":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                with up._lock:
                    up.statuses.append(code)
                self._send(code, payload, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _answer(self, body: dict):
        with self._lock:
            self.bodies.append(body)
            step = self.script.pop(0) if self.script else None
            self.active += 1
            self.peak = max(self.peak, self.active)
            over = self.admits is not None and self.active > self.admits
        try:
            if over:
                return 429, _err("busy"), [("Retry-After", "0")]
            if step == "garbage":
                return 200, b"<html>not json", []
            if step == "reset":
                return "reset", b"", []
            if step == "stall":
                time.sleep(5)
            elif isinstance(step, int):
                hdr = [("Retry-After", "0")] if step in (429, 503) else []
                return step, _err(f"scripted {step}"), hdr
            if self.refuse_ids and isinstance(body["prompt"], list):
                return 400, _err("prompt must be a string"), []
            if self.refuse_bias and "logit_bias" in body:
                return 400, _err("logit_bias is not supported"), []
            time.sleep(self.hold_s)
            return 200, json.dumps({"choices": [{"text": self._text(body), "finish_reason": "length"}]}).encode(), []
        finally:
            with self._lock:
                self.active -= 1

    def _text(self, body: dict) -> str:
        if self.ignore:
            return self.free
        bias = body.get("logit_bias")
        if bias:
            up = [int(k) for k, v in bias.items() if v > 0]
            if up:
                return self.tok.decode([up[0]])
            banned = {int(k) for k in bias}
            return self.tok.decode([next(t for t in range(len(self.tok)) if t not in banned)])
        if body.get("allowed_token_ids"):
            return self.tok.decode([body["allowed_token_ids"][0]])
        return self.free

    def __enter__(self) -> "Upstream":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _err(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
