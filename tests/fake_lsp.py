"""A tiny language server on stdio for fault tests (no pygls: it starts in milliseconds).

    python fake_lsp.py MODE STATE [N]

It answers `initialize` (full text sync, completion after "."), keeps nothing, and answers every
completion with Cart's members (owner, registry, add, last). MODE says how it misbehaves, and
only in its first N starts (default 1; STATE is a file that counts the starts, so the restarted
server behaves and the test sees grounding resume):

    ok           never misbehaves
    hang-init    reads `initialize` and never answers (sleeps)
    hang-answer  answers `initialize`, then never answers the first completion (sleeps)
    flood        after `initialize`, writes window/logMessage notifications without end
    flood-big    after `initialize`, announces a message of 1 GB
    crash        exits with code 3 at the first completion (a panic line on stderr first)
"""
from __future__ import annotations

import json
import os
import sys
import time

MEMBERS = [("owner", 5), ("registry", 5), ("add", 2), ("last", 2)]


def _read(inp):
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return json.loads(inp.read(length))


def _write(out, msg) -> None:
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def main() -> None:
    mode, state = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    starts = int(open(state).read() or 0) if os.path.exists(state) else 0
    with open(state, "w") as f:
        f.write(str(starts + 1))
    bad = mode if starts < n else "ok"
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        msg = _read(inp)
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            if bad == "hang-init":
                time.sleep(3600)
            _write(out, {"jsonrpc": "2.0", "id": mid, "result": {"capabilities": {
                "textDocumentSync": 1, "completionProvider": {"triggerCharacters": ["."]}}}})
            if bad == "flood":
                note = {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 4, "message": "x" * 200}}
                while True:
                    _write(out, note)
            if bad == "flood-big":
                out.write(b"Content-Length: %d\r\n\r\n" % (1 << 30))
                out.flush()
                time.sleep(3600)
        elif method == "textDocument/completion":
            if bad == "hang-answer":
                time.sleep(3600)
            if bad == "crash":
                sys.stderr.write("goroutine 1 [running]:\npanic: the fake server crashed on purpose\n\tmain.go:1\n")
                sys.stderr.flush()
                sys.exit(3)
            _write(out, {"jsonrpc": "2.0", "id": mid, "result": {"isIncomplete": False, "items": [
                {"label": name, "kind": kind} for name, kind in MEMBERS]}})
        elif method == "shutdown":
            _write(out, {"jsonrpc": "2.0", "id": mid, "result": None})
        elif method == "exit":
            sys.exit(0)
        elif mid is not None:
            _write(out, {"jsonrpc": "2.0", "id": mid, "result": None})


if __name__ == "__main__":
    main()
