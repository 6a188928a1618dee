"""A language server as the analyzer (analysis/lsp_client.py) against a real server: ty, pinned
and installed by `groundcode analyzers install ty` (scripts/test installs it). Members at `self.`
and at a module alias, on an unsaved buffer and after a didChange; an untyped receiver fails open;
a crashed server restarts; a hung one fails open at the deadline; nothing is left after close."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.analysis.base import MembersQuery, SignatureQuery
from groundcode.analysis.lsp_client import LspAnalyzer
from groundcode.context import Splice


@pytest.fixture(scope="module")
def ty():
    return lsp_servers.install("ty")          # idempotent; downloads the pinned wheel once


def _ask(a, repo, code, line_text, receiver, key, timeout=30):
    lines = code.split("\n")
    ln = lines.index(line_text) + 1
    path = repo / "shop" / "cart.py"
    return a.ask(MembersQuery(Splice(code, ln, len(line_text), path), receiver, key)).result(timeout)


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:       # a zombie is gone for our purposes
        return f.read().split()[2] != "Z"


def test_members_of_self_a_module_alias_an_unsaved_buffer_and_after_a_change(ty, shop_repo):
    cart = (shop_repo / "shop" / "cart.py").read_text()
    unsaved = cart + "\n    def total(self):\n        return self.\n"       # only in the buffer
    with LspAnalyzer(shop_repo, "ty", deadline_s=30) as a:
        r = _ask(a, shop_repo, unsaved, "        return self.", "self", ("self",))
        assert {"owner", "registry", "add", "last", "total"} <= r.names and r.failed is None, r
        assert r.kinds["add"] == "function"
        alias = unsaved.replace("        return self.\n", "        import os.path as osp\n        return osp.\n")
        r = _ask(a, shop_repo, alias, "        return osp.", "osp", ("osp",))
        assert {"join", "exists"} <= r.names and r.failed is None
        changed = unsaved.replace("    def total(self):", "    def grand_total(self):")   # a didChange
        r = _ask(a, shop_repo, changed, "        return self.", "self", ("self2",))
        assert "grand_total" in r.names and "total" not in r.names
        untyped = unsaved.replace("        return self.\n", "        return self.owner.\n")
        r = _ask(a, shop_repo, untyped, "        return self.owner.", "self.owner", ("owner",))
        assert r.failed and r.failed.startswith("untyped")              # fails open
        assert a.calls == 4
        pid = a.pid
    assert pid and not _alive(pid)                                        # closed: nothing left


def test_signature_help_and_ranged_changes(ty, shop_repo):
    """signatureHelp after `(` is what the call accepts; a name the server cannot resolve is
    unknown (the keyword guide stays open); ty takes ranged didChange events, and answers after
    one are those of the new text."""
    cart = (shop_repo / "shop" / "cart.py").read_text() + "\n    def total(self):\n        return self.add(\n"
    line = "        return self.add("
    at = Splice(cart, cart.split("\n").index(line) + 1, len(line), shop_repo / "shop" / "cart.py")
    with LspAnalyzer(shop_repo, "ty", deadline_s=30) as a:
        ans = a.ask(SignatureQuery(at, "self", "add")).result(30)
        assert ans.failed is None and [(p.name, p.required) for p in ans.signature.params] == [("item", True)]
        assert not ans.signature.var_keyword and ans.signature.keywords() == {"item"}
        unknown = cart.replace("return self.add(", "return nowhere_defined(")
        at2 = Splice(unknown, at.line, len("        return nowhere_defined("), at.path)
        ans = a.ask(SignatureQuery(at2, "", "nowhere_defined")).result(30)
        assert ans.signature is None and ans.failed == "unknown"
        assert a._incremental                                     # ranged changes were sent
        renamed = cart.replace("    def add(self, item):", "    def add(self, item, *, qty=1):")
        at3 = Splice(renamed, at.line, len(line), at.path)
        ans = a.ask(SignatureQuery(at3, "self", "add")).result(30)
        assert ans.signature.keywords() == {"item", "qty"} and ans.signature.params[1].kind == "keyword"


def test_a_crashed_server_restarts_and_a_hung_one_fails_open(ty, shop_repo, tmp_path):
    cart = (shop_repo / "shop" / "cart.py").read_text() + "\n    def total(self):\n        return self.\n"
    with LspAnalyzer(shop_repo, "ty", deadline_s=30, restart_backoff_s=0.1) as a:
        assert "owner" in _ask(a, shop_repo, cart, "        return self.", "self", ("a",)).names
        os.kill(a.pid, 9)
        time.sleep(0.2)
        r = _ask(a, shop_repo, cart, "        return self.", "self", ("b",))
        if r.failed and r.failed.startswith("error"):                     # the question in flight
            r = _ask(a, shop_repo, cart, "        return self.", "self", ("c",))
        assert "owner" in r.names and a.restarts >= 1
    hang = tmp_path / "hang.py"
    hang.write_text("import sys, time\nsys.stdin.read(1)\ntime.sleep(600)\n")
    with LspAnalyzer(shop_repo, "ty", deadline_s=0.5, cold_deadline_s=0.5, hang_s=2.0,
                     command=[sys.executable, str(hang)]) as a:
        t = a.ask(MembersQuery(Splice(cart, 1, 0, shop_repo / "shop" / "cart.py"), "self", ("h",)))
        t0 = time.monotonic()
        assert t.result(a.deadline()) is None or t.result(0).failed       # nothing in time: fail open
        assert time.monotonic() - t0 < a.deadline() + 1
        pid = a.pid
        end = time.monotonic() + 10                                       # hung past hang_s: killed
        while _alive(pid) and time.monotonic() < end:
            time.sleep(0.1)
        assert not _alive(pid) and t.result(5).failed.startswith("error")
    assert pid is not None and not _alive(pid)                            # killed, never orphaned


def test_a_missing_server_is_one_clear_line(tmp_path, monkeypatch):
    from groundcode.errors import GroundcodeError
    monkeypatch.setenv("GROUNDCODE_ANALYZERS", str(tmp_path))
    with pytest.raises(GroundcodeError, match="groundcode analyzers install ty"):
        LspAnalyzer(tmp_path, "ty")
    with pytest.raises(GroundcodeError, match="no language server"):
        lsp_servers.get("nope")
    from typer.testing import CliRunner

    from groundcode.cli import app
    (tmp_path / "x.py").write_text("x = 1\n")
    r = CliRunner().invoke(app, ["complete", f"{tmp_path}/x.py:1:0", "--model", "tiny"],
                           env={"GROUNDCODE_ANALYZER": "nope"})
    assert r.exit_code == 2 and "no language server 'nope'" in r.output        # the config key


def test_complete_with_the_ty_analyzer_names_it_in_the_triggers(ty, shop_repo, tiny_model_dir):
    import json

    from typer.testing import CliRunner

    from groundcode.cli import app
    r = CliRunner().invoke(app, ["complete", f"{shop_repo}/shop/cart.py:11:13", "--model", str(tiny_model_dir),
                                 "--analyzer", "ty", "--json", "-n", "6", "--no-server"])
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout.strip().splitlines()[-1])["triggers"][0]
    assert first["analyzer"].endswith("ty") and first["receiver"] == "self"
    assert first["chosen"] in {"owner", "registry", "add", "last"} and not first["failed_open"], first


def test_the_default_analyzer_is_ty_checked_by_jedi_where_ty_is_installed(ty, shop_repo, tiny_model_dir):
    import json

    from typer.testing import CliRunner

    from groundcode.cli import app
    r = CliRunner().invoke(app, ["complete", f"{shop_repo}/shop/cart.py:11:13", "--model", str(tiny_model_dir),
                                 "--json", "-n", "6", "--no-server"], env={"GROUNDCODE_ANALYZER": "auto"})
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout.strip().splitlines()[-1])["triggers"][0]
    assert first["analyzer"].endswith("ty+jedi") and first["receiver"] == "self"
    assert first["chosen"] in {"owner", "registry", "add", "last"} and not first["failed_open"], first
