"""TypeScript's analysis is the LSP analyzer talking to TypeScript 7's own server (`tsc --lsp
--stdio`, pinned and installed by `groundcode analyzers install typescript`; scripts/test
installs it): members after `this.registry.` (a private field of the other class left out),
after `this.`, on an unsaved buffer, and a method's signature. Fixture: tests/fixtures/tsshop."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.analysis.base import MembersQuery, SignatureQuery
from groundcode.analysis.lsp_client import LspAnalyzer
from groundcode.context import Splice

REPO = Path(__file__).parent / "fixtures" / "tsshop"


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")      # idempotent: the pinned npm tarball, once


def _at(code: str, line_text: str) -> Splice:
    ln = code.split("\n").index(line_text) + 1
    return Splice(code, ln, len(line_text), REPO / "src" / "cart.ts")


def test_members_and_signatures_from_typescripts_server(ts):
    cart = (REPO / "src" / "cart.ts").read_text()
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        code = cart.replace("    return this.registry.size;", "    return this.registry.")   # unsaved
        r = a.ask(MembersQuery(_at(code, "    return this.registry."), "this.registry", ("r",))).result(30)
        assert r.failed is None and {"register", "size", "latestUpdate"} <= r.names, r
        assert "items" not in r.names                       # private to Registry
        assert r.kinds["register"] == "function" and r.kinds["size"] in ("instance", "property")
        code = cart.replace("    return this.registry.size;", "    return this.")
        r = a.ask(MembersQuery(_at(code, "    return this."), "this", ("t",))).result(30)
        assert {"add", "owner", "registry"} <= r.names and r.failed is None
        code = cart.replace("    return this.registry.size;", "    this.registry.register(")
        s = a.ask(SignatureQuery(_at(code, "    this.registry.register("), "this.registry", "register")).result(30)
        assert s.signature is not None and [p.name for p in s.signature.params] == ["item"]
        pid = a.pid
    assert pid is not None


def test_a_cut_in_another_file_does_not_stand_in_for_it(ts):
    """A question asked in registry.ts with its line cut at `this.items.` (the class ended early
    for the parser) and then one in cart.ts: the server has read registry.ts from disk again
    (the earlier splice closed), so Registry's members declared after that cut are all there."""
    reg = (REPO / "src" / "registry.ts").read_text()
    cut = "  register(item: string): void { if (this.items."
    broken = reg.replace("  register(item: string): void { this.items.push(item); }", cut + "\n    }\n  }")
    cart = (REPO / "src" / "cart.ts").read_text().replace("    return this.registry.size;", "    return this.registry.")
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        ln = broken.split("\n").index(cut) + 1
        r = a.ask(MembersQuery(Splice(broken, ln, len(cut), REPO / "src" / "registry.ts"), "this.items", ("a",))).result(30)
        assert r.failed is None and "push" in r.names
        r = a.ask(MembersQuery(_at(cart, "    return this.registry."), "this.registry", ("b",))).result(30)
        assert r.failed is None and {"register", "size", "latestUpdate"} <= r.names, r.names


def test_a_type_with_an_index_signature_takes_any_member_name(ts):
    """`b.` where Bag has a string index signature (and `r.` of a Record): TypeScript lists the
    declared members but any name is legal, and says so by offering no commit character (a place
    for a new name) — the answer fails open. `m.` of a Map is narrowed as usual."""
    path = REPO / "src" / "bag.ts"
    text = path.read_text()
    line = "  return b.size + (r.a ?? 0) + m.size;"
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        for cut, receiver, want in (("  return b.", "b", None), ("  return b.size + (r.", "r", None),
                                    ("  return b.size + (r.a ?? 0) + m.", "m", {"get", "set", "size"})):
            code = text.replace(line, cut)
            ln = code.split("\n").index(cut) + 1
            r = a.ask(MembersQuery(Splice(code, ln, len(cut), path), receiver, (cut,))).result(30)
            if want is None:
                assert r.failed == "open: the type takes any member name (index signature)", (receiver, r)
            else:
                assert r.failed is None and want <= r.names, r

def test_a_python_buffer_open_in_the_editor_never_reaches_typescript(ts):
    """VS Code restores a workspace's tabs: a Python buffer and a TypeScript one open together
    (the real-editor test found it). TypeScript's Go server panics on a .py document ("ScriptKind
    must be specified") and exits; the analyzer sends each server its languages' buffers only."""
    from groundcode.analysis.base import Overlay
    cart = (REPO / "src" / "cart.ts").read_text().replace("    return this.registry.size;", "    return this.")
    py = (str(REPO / "tool.py"), "class Tool:\n    def run(self):\n        return self.\n")
    tsx = (str(REPO / "src" / "view.tsx"), "export const View = 1;\n")
    at = _at(cart, "    return this.")
    at = Splice(at.code, at.line, at.column, at.path, Overlay("s1", (py, tsx)))
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30, restart_backoff_s=60) as a:
        r = a.ask(MembersQuery(at, "this", ("t",))).result(30)
        assert r.failed is None and {"add", "owner", "registry"} <= r.names, r
        assert a.restarts == 0 and a.health()["status"] == "ok", a.health()
    from groundcode.analysis.lsp_messages import served
    assert served([py, tsx], ("typescript", "javascript")) == [tsx]
    assert served([py, tsx], ("python",)) == [py] and served([py, tsx], None) == [py, tsx]
