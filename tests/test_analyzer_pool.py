"""The analyzers a Generator keeps are bounded (issue 39, analysis/pool.py): twenty repositories
opened in turn keep at most the pool's limit of analyzer processes (counted as this process's
children), an analyzer unused for idle_s is closed, and closing the generator leaves none. The
analyzer is tests/fake_lsp.py (a language server that starts in milliseconds), reached through
the Generator's own path (`prewarm` → `analyzer_for` → LspAnalyzer). Every wait is for an event
(a process started, a process gone) with a generous limit.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil
import pytest

from groundcode.analysis import lsp_servers
from groundcode.analysis.pool import AnalyzerPool
from groundcode.api import Generator
from groundcode.config import MonitorConfig
from groundcode.context import cursor_context

FAKE = Path(__file__).with_name("fake_lsp.py")
LIMIT_S = 60.0                                 # generous: an event, not a guess at speed


def _servers() -> list:
    out = []
    for k in psutil.Process().children(recursive=True):
        try:
            if str(FAKE) in " ".join(k.cmdline()) and k.status() != psutil.STATUS_ZOMBIE:
                out.append(k.pid)
        except psutil.NoSuchProcess:
            pass
    return out


def _until(cond, what: str):
    end = time.monotonic() + LIMIT_S
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"not within {LIMIT_S} s: {what}")
        time.sleep(0.02)


@pytest.fixture()
def fake_server(monkeypatch, tmp_path):
    monkeypatch.setattr(lsp_servers, "command",
                        lambda name: [sys.executable, str(FAKE), "ok", str(tmp_path / "starts")])


def test_twenty_repositories_opened_in_turn_keep_at_most_the_bound(tmp_path, tiny_model_dir, fake_server):
    gen = Generator(str(tiny_model_dir), MonitorConfig(analyzer="fake", sdk=False))
    pool = gen._analyzers
    pool.limit = 3
    try:
        for i in range(20):
            repo = tmp_path / f"repo{i}"
            repo.mkdir()
            (repo / "m.py").write_text("import os\nos.\n")
            ctx = cursor_context(repo / "m.py", 2, 3, repo)
            gen.prewarm(ctx)                                  # opens the file: starts its server
            a = gen.analyzer_for(ctx)
            _until(lambda: a.pid is not None, f"the server of repo{i} started")
            _until(lambda: len(_servers()) <= pool.limit, "the least recently used closed")
            assert len(pool) <= pool.limit
        assert pool.closed == 17 and len(_servers()) <= 3
        assert {r["root"] for r in gen.analyzer_report()} == {str(tmp_path / f"repo{i}") for i in (17, 18, 19)}
        assert pool.sweep(time.monotonic() + pool.idle_s + 1) == 3        # unused for idle_s
        _until(lambda: not _servers(), "idle analyzers closed")
        ctx = cursor_context(tmp_path / "repo0" / "m.py", 2, 3, tmp_path / "repo0")
        gen.prewarm(ctx)                                      # used again: started again
        _until(lambda: len(_servers()) == 1, "repo0's server started again")
    finally:
        gen.close()
    _until(lambda: not _servers(), "closing the generator leaves no server")


def test_the_pool_orders_by_use_and_keeps_pinned_analyzers():
    closed = []

    class A:
        def __init__(self, name):
            self.name, self.pid = name, None

        def close(self):
            closed.append(self.name)

    pool = AnalyzerPool(limit=2, idle_s=100)
    pool.pin(("p",), A("pinned"))
    pool[("a",)] = A("a")
    pool[("b",)] = A("b")
    assert pool.get(("a",)).name == "a"                    # a used: b is now the oldest
    pool[("c",)] = A("c")
    _until(lambda: closed == ["b"], "b closed")
    assert pool.sweep(time.monotonic() + 101) == 2
    _until(lambda: sorted(closed) == ["a", "b", "c"], "idle ones closed")
    assert [a.name for a in pool.values()] == ["pinned"]
    pool.close()
    assert "pinned" in closed
