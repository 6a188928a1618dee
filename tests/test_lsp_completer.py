"""The LSP server's Completer without a client or a model: a scripted Session whose rows run
until cancelled shows that $/cancelRequest (the handler's task cancelled) and a newer request
on the same document cancel the older request's Session stream, that requests on different
documents do not cancel each other, that the debounce lets a burst start one request, and that
unsaved buffers are what the context is made from."""
from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from groundcode.api import Generation
from groundcode.server.lsp_completer import Completer

FIXTURE = Path(__file__).parent / "fixtures" / "shop"


class FakeStream:
    """Runs until cancelled, or answers `text` at once when given one."""

    def __init__(self, req, text=None):
        self.request, self.cancels, self._text = req, 0, text
        self._done = threading.Event()
        if text is not None:
            self._done.set()

    def cancel(self):
        self.cancels += 1
        self._done.set()

    @property
    def closed(self):
        return self._done.is_set()

    async def aiter(self):
        while not self._done.is_set():
            await asyncio.sleep(0.01)
        reason = "cancelled" if self._text is None else "stop"
        yield SimpleNamespace(kind="done", result=Generation(self._text or "", 1, 0.0, reason))


class FakeSession:
    def __init__(self, answer=None):
        self.streams, self.answer = [], answer

    def submit(self, req):
        s = FakeStream(req, self.answer)
        self.streams.append(s)
        return s


def _completer(tmp_path, answer=None, debounce_s=0.0):
    repo = tmp_path / "shop"
    shutil.copytree(FIXTURE, repo)
    gen = SimpleNamespace(session=FakeSession(answer), monitor=SimpleNamespace(enabled=False),
                          tools=SimpleNamespace(enabled=False), close=lambda: None)
    c = Completer(lambda: gen, [repo], debounce_s=debounce_s)
    return c, gen.session, repo


async def _until(pred, timeout=5.0):
    for _ in range(int(timeout / 0.01)):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_cancel_request_cancels_the_running_stream(tmp_path):
    c, sess, repo = _completer(tmp_path)
    path = repo / "shop" / "cart.py"

    async def go():
        task = asyncio.ensure_future(c.complete(path, 12, 20))
        await _until(lambda: sess.streams)             # its rows are running
        task.cancel()                                  # what pygls does on $/cancelRequest
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sess.streams[0].cancels == 1
    asyncio.run(go())


def test_a_newer_request_on_the_document_cancels_the_older(tmp_path):
    c, sess, repo = _completer(tmp_path)
    cart, reg = repo / "shop" / "cart.py", repo / "shop" / "registry.py"

    async def go():
        first = asyncio.ensure_future(c.complete(cart, 12, 20))
        other = asyncio.ensure_future(c.complete(reg, 1, 0))
        await _until(lambda: len(sess.streams) == 2)
        second = asyncio.ensure_future(c.complete(cart, 12, 20))
        assert await first is None                     # superseded: answers nothing
        assert sess.streams[0].cancels >= 1
        await _until(lambda: len(sess.streams) == 3)
        assert sess.streams[1].cancels == 0            # another document's request goes on
        for s in sess.streams[1:]:
            s.cancel()
        await asyncio.gather(second, other)
    asyncio.run(go())


def test_debounce_starts_one_request_for_a_burst_and_reads_the_unsaved_buffer(tmp_path):
    c, sess, repo = _completer(tmp_path, answer="registry.size()\n", debounce_s=0.1)
    path = repo / "shop" / "cart.py"
    on_disk = path.read_text()
    c.open(path, on_disk + "\n    def total(self): return self.")
    line = on_disk.count("\n") + 1

    async def go():
        burst = [asyncio.ensure_future(c.complete(path, line, 33)) for _ in range(3)]
        return await asyncio.gather(*burst)
    answers = asyncio.run(go())
    assert answers[:2] == [None, None] and len(sess.streams) == 1
    a = answers[2]
    assert a.text == "registry.size()" and a.stop == "statement"
    ctx = sess.streams[0].request.context
    assert ctx.before.endswith("    def total(self): return self.")   # the buffer, not the disk
    assert path.read_text() == on_disk


def test_bad_flags_are_one_line_errors_before_any_model_loads():
    from typer.testing import CliRunner

    from groundcode.cli import app
    runner = CliRunner()
    for args, message in [(["--stop", "word"], "--stop must be auto, line, statement or block"),
                          (["--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
                          (["--debounce-ms", "-5"], "--debounce-ms must be >= 0"),
                          (["--deadline", "0"], "--deadline must be > 0"),
                          (["--analysis-deadline", "0"], "--analysis-deadline must be > 0"),
                          (["--workspace", "/no/such/dir"], "is not a directory"),
                          (["--log-level", "loud"], "--log-level must be")]:
        r = runner.invoke(app, ["lsp", "--model", "/no/such/model", *args])
        assert r.exit_code == 2 and message in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1


def test_a_model_that_cannot_load_is_each_request_s_error(tmp_path):
    from groundcode.errors import GroundcodeError

    def load():
        raise GroundcodeError("model not found: nope")
    repo = tmp_path / "shop"
    shutil.copytree(FIXTURE, repo)
    c = Completer(load, [repo], debounce_s=0)
    with pytest.raises(GroundcodeError, match="model not found: nope"):
        asyncio.run(c.complete(repo / "shop" / "cart.py", 0, 0))


def test_workspace_folders_are_the_analyzer_roots(tmp_path):
    c, sess, repo = _completer(tmp_path, answer="x\n")
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "mod.py").write_text("class A:\n    def f(self):\n        return self.\n")
    c.set_roots([repo, other])                      # initialize / didChangeWorkspaceFolders
    asyncio.run(c.complete(other / "pkg" / "mod.py", 2, len("        return self.")))
    asyncio.run(c.complete(repo / "shop" / "cart.py", 0, 0))
    assert [s.request.context.repo for s in sess.streams] == [other.resolve(), repo.resolve()]
    c.set_roots([repo])                             # a folder removed: a file there gets its
    asyncio.run(c.complete(other / "pkg" / "mod.py", 2, 10))   # repository as a root again
    assert sess.streams[-1].request.context.repo == (other / "pkg").resolve()   # no package, no marker
    assert c.roots == [repo.resolve(), (other / "pkg").resolve()]
