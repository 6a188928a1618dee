"""A `groundcode serve` on 127.0.0.1 for the benchmarks that drive one (serve_load.py, soak.py,
cli_speed.py): a free loopback port, a wait until /health says prewarmed (or the server's log's
tail as the error), and a stop that never leaves it running. Not a benchmark itself."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc: subprocess.Popen, base: str, log: Path | None = None, timeout: float = 300) -> dict:
    """/health once the server is prewarmed; SystemExit (with the log's tail) if it exits or
    does not get there within `timeout` seconds."""
    import httpx
    end = time.monotonic() + timeout
    while True:
        try:
            h = httpx.get(base + "/health", timeout=2).json()
            if h.get("prewarmed"):
                return h
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > end:
            tail = Path(log).read_text()[-3000:] if log is not None and Path(log).exists() else ""
            raise SystemExit("the server did not start" + (":\n" + tail if tail else ""))
        time.sleep(0.5)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
