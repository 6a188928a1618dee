"""`python -m groundcode serve ...` as a child process for the tests that need a real server
(tests/test_remote.py, tests/test_server_http.py): a free loopback port, a start that waits for
/health (or fails with the server's output), and a stop. Not a test itself."""
from __future__ import annotations

import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(args: list[str], env: dict, port: int, timeout: float = 120) -> tuple[subprocess.Popen, str]:
    """Start `groundcode serve ARGS --port PORT` and wait until /health answers 200:
    (process, "http://127.0.0.1:PORT")."""
    import httpx
    proc = subprocess.Popen([sys.executable, "-m", "groundcode", "serve", *args, "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout
    while True:
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError("groundcode serve did not start: " + proc.stdout.read().decode()[-2000:])
        time.sleep(0.3)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
