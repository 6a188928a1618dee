"""pygls's language client with a meter on what the server sends: a server that floods is cut
off, whatever the machine's speed.

    c = GuardedClient("groundcode", "1", on_flood=lambda why: ..., limits={"max_unanswered": 20000})
    await c.start_io(cmd, *args, cwd=..., env=...)      # as pygls's, reading through a Meter

A flood is counted, never timed: more than `max_unanswered` messages (notifications, requests
to the client) or `max_bytes` bytes since the server last answered a request of ours, or a
single message over `max_message_bytes`. Any of these stops the reader at once (nothing more
is parsed or buffered) and calls `on_flood(reason)`; the analyzer (lsp_client.py) then kills
the process, fails the question open and restarts the server after a backoff. The limits are
far above what a language server sends between two answers (ty, TypeScript: tens of
diagnostics or progress messages).
The exit of the process is reported too (`on_exit`), so a crash starts the restart backoff when
it happens, not when the next question notices it. The server's stderr is read as it comes (a
full pipe would block it) and its last 16 KiB kept: `last_words()` is the line that says why it
exited (a Go panic, a Python or Node error), for the failure's reason.
Test: tests/test_analyzer_faults.py.
"""
from __future__ import annotations

import asyncio
import re

from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient

MAX_UNANSWERED = 20_000
MAX_BYTES = 256 << 20
MAX_MESSAGE_BYTES = 64 << 20
STDERR_KEPT = 16 << 10
_WHY = re.compile(rb"^(?:panic: |fatal error: |thread '.*' panicked|\w*(?:Error|Exception)\b|error\b|Error\b).*$",
                  re.M | re.I)


class Meter:
    """The reader pygls's loop reads the server's stdout through: counts what arrives."""

    def __init__(self, inner, on_flood, max_unanswered=MAX_UNANSWERED, max_bytes=MAX_BYTES,
                 max_message_bytes=MAX_MESSAGE_BYTES):
        self.inner, self.on_flood = inner, on_flood
        self.max_unanswered, self.max_bytes, self.max_message_bytes = max_unanswered, max_bytes, max_message_bytes
        self.messages = self.bytes = 0          # since the last answer
        self.flooded: str | None = None

    def answered(self) -> None:
        self.messages = self.bytes = 0

    def _flood(self, reason: str) -> bytes:
        if self.flooded is None:
            self.flooded = reason
            self.on_flood(reason)
        return b""                              # ends pygls's read loop

    async def readline(self) -> bytes:
        if self.flooded:
            return b""
        line = await self.inner.readline()
        self.bytes += len(line)
        if self.bytes > self.max_bytes:
            return self._flood(f"flooded: {self.bytes >> 20} MB with no answer")
        return line

    async def readexactly(self, n: int) -> bytes:
        if self.flooded:
            return b""
        if n > self.max_message_bytes:
            return self._flood(f"flooded: a message of {n >> 20} MB")
        body = await self.inner.readexactly(n)
        self.messages += 1
        self.bytes += n
        if self.messages > self.max_unanswered:
            return self._flood(f"flooded: {self.messages} messages with no answer")
        if self.bytes > self.max_bytes:
            return self._flood(f"flooded: {self.bytes >> 20} MB with no answer")
        return body


class GuardedClient(LanguageClient):
    def __init__(self, *args, on_flood=None, on_exit=None, limits=None, **kw):
        super().__init__(*args, **kw)
        self._limits = dict(limits or {})       # Meter's max_unanswered, max_bytes, max_message_bytes
        self._on_flood = on_flood or (lambda reason: None)
        self._on_exit = on_exit or (lambda returncode: None)
        self.meter: Meter | None = None
        self.stderr_tail = b""
        self._stderr_task = None
        proto = self.protocol
        handle = proto.handle_message

        def counted(message):                   # a response to one of our requests: the server
            if getattr(message, "id", None) is not None and not hasattr(message, "method"):
                if self.meter is not None:      # is answering, not only talking
                    self.meter.answered()
            return handle(message)
        proto.handle_message = counted

    async def start_io(self, cmd: str, *args, **kwargs):
        """pygls's start_io, reading the server's stdout through a Meter."""
        server = await asyncio.create_subprocess_exec(
            cmd, *args, stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, **kwargs)
        self.protocol.set_writer(server.stdin)
        self.meter = Meter(server.stdout, self._on_flood, **self._limits)
        connection = asyncio.create_task(run_async(
            stop_event=self._stop_event, reader=self.meter, protocol=self.protocol,
            error_handler=self.report_server_error))
        self._server = server
        self._stderr_task = asyncio.create_task(self._keep_stderr(server.stderr))
        notify_exit = asyncio.create_task(self._server_exit())
        self._async_tasks.extend([connection, notify_exit, self._stderr_task])

    async def _keep_stderr(self, stream) -> None:
        try:
            while chunk := await stream.read(65536):
                self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_KEPT:]
        except Exception:                       # noqa: BLE001 (the process is gone)
            pass

    def last_words(self) -> str:
        """The last line of the server's stderr that names an error, else its last line ("")."""
        found = _WHY.findall(self.stderr_tail)
        lines = found or [x for x in self.stderr_tail.splitlines() if x.strip()][-1:]
        return lines[-1].decode("utf-8", "replace").strip()[:200] if lines else ""

    async def server_exit(self, server) -> None:
        if self._stderr_task is not None:       # what it wrote before it exited
            await asyncio.wait([self._stderr_task], timeout=1.0)
        self._on_exit(server.returncode)
