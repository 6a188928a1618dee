"""Jedi analyzer: repo-level members, cache, deadline and crash fail-open, dependencies."""
from __future__ import annotations

import time

from groundcode.analysis import jedi as jedi_adapter
from groundcode.analysis.jedi import JediAnalyzer, repo_dependencies


def _partial(shop_repo):
    f = shop_repo / "shop" / "cart.py"
    lines = f.read_text().splitlines()
    code = "\n".join(lines[:15]) + "\n        return self.registry.\n"
    return f, code, 16, len("        return self.registry.")


def test_members_resolve_across_files_and_cache(shop_repo):
    a = JediAnalyzer(shop_repo, deadline_s=30)
    f, code, line, col = _partial(shop_repo)
    r = a.members(code, f, line, col, receiver="self.registry", cache_key=("v", "Cart.last", "self.registry"))
    assert {"register", "latest_update", "_registered_updates", "size"} <= r.names
    assert not r.cache_hit and r.failed is None
    r2 = a.members(code, f, line, col, receiver="self.registry", cache_key=("v", "Cart.last", "self.registry"))
    assert r2.cache_hit and r2.names == r.names and a.calls == 1


def test_hide_private_and_dunder(shop_repo):
    a = JediAnalyzer(shop_repo, deadline_s=30, hide_private=True, hide_dunder=True)
    f, code, line, col = _partial(shop_repo)
    r = a.members(code, f, line, col, receiver="self.registry", cache_key=("x",))
    assert "_registered_updates" not in r.names and not any(n.startswith("__") for n in r.names)
    assert "register" in r.names


def test_deadline_fails_open(shop_repo, monkeypatch):
    a = JediAnalyzer(shop_repo, deadline_s=0.2)

    def slow(*args):
        time.sleep(1.0)
        return frozenset({"x"}), {}
    monkeypatch.setattr(a, "_complete", slow)
    f, code, line, col = _partial(shop_repo)
    t0 = time.perf_counter()
    r = a.members(code, f, line, col, receiver="self.registry", cache_key=("t",))
    assert time.perf_counter() - t0 < 0.9
    assert r.names == frozenset() and r.failed == "timeout" and a.timeouts == 1
    time.sleep(1.2)  # the late answer lands in the cache for the next trigger
    r2 = a.members(code, f, line, col, receiver="self.registry", cache_key=("t",))
    assert r2.cache_hit and r2.names == frozenset({"x"})


def test_crash_fails_open(shop_repo, monkeypatch):
    a = JediAnalyzer(shop_repo)

    def boom(*args):
        raise RecursionError("jedi blew up")
    monkeypatch.setattr(a, "_complete", boom)
    f, code, line, col = _partial(shop_repo)
    r = a.members(code, f, line, col, receiver="self.registry", cache_key=("c",))
    assert r.names == frozenset() and r.failed.startswith("error: RecursionError") and a.errors == 1


def test_repo_dependencies(shop_repo):
    f = shop_repo / "shop" / "cart.py"
    deps = repo_dependencies(shop_repo, f, f.read_text(), 9, 16)
    assert "shop.registry.Registry.register" in deps
    assert "shop.registry.Registry.latest_update" in deps
    assert not any(d.startswith("builtins") for d in deps)
    assert jedi_adapter  # the adapter module is the only jedi importer
