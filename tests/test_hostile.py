"""The hostile-repository suite (issue 39): every vector of tests/hostile_repo.py planted in
clones of one repository, run against every pinned analyzer that is installed (Jedi always; ty,
jedi-ls and TypeScript in CI; pyrefly, zuban and basedpyright where `groundcode analyzers
install` put them — benchmarks/hostile_repo.py installs all six and runs this file), through
the analyzer itself, `groundcode complete`, `serve`'s structured endpoint and `groundcode lsp`:

- untrusted, no marker ever (the user's shell with the repository's venv active, NODE_OPTIONS
  naming its plugin, PYTHONSTARTUP its file; the CLI run from inside the repository);
- trusted, Jedi starts the repository's venv (`venv-python`, and the .pth and sitecustomize its
  interpreter reads: the user trusted it); a language server runs nothing even then;
- trust given to one root never reaches another: `serve` with two workspaces and one of them on
  the user's list (`/health`'s "trusted"); the LSP with `{"trust": true}` for the folder named at
  initialize, then a file of another clone opened and a folder added (`groundcode.health`).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hostile_repo as H
from groundcode.analysis import lsp_servers

SERVERS = ("ty", "jedi-ls", "pyrefly", "zuban", "basedpyright", "typescript")
INSTALLED = [n for n in SERVERS if lsp_servers.installed(n) is not None
             and (lsp_servers.get(n).run != "node" or lsp_servers.shutil.which("node"))]
ANALYZERS = ["jedi", *INSTALLED]
# what a trusted root may run: Jedi starts its venv's interpreter (which reads its .pth and
# sitecustomize, as any start of that interpreter does); a language server runs nothing
TRUSTED_JEDI = {"venv-python", "venv-pth", "venv-sitecustomize"}


def _where(analyzer: str) -> tuple[str, str, int, int]:
    if analyzer == "typescript":
        return H.TS_FILE, H.TS_SOURCE, H.TS_LINE, H.TS_COLUMN
    return H.PY_FILE, H.PY_SOURCE, H.PY_LINE, H.PY_COLUMN


def _expected(analyzer: str, trusted: bool) -> set:
    return TRUSTED_JEDI if trusted and analyzer == "jedi" else set()


class Clone:
    def __init__(self, base: Path, name: str):
        self.root = base / name
        self.markers = base / f"{name}-markers"
        H.plant(self.root, self.markers)

    def fired(self) -> set:
        return H.fired(self.markers)


@pytest.fixture()
def world(tmp_path, monkeypatch):
    """Three clones (a, b, c) and a shell that points at the first one's code everywhere."""
    monkeypatch.setenv("GROUNDCODE_CONFIG", str(tmp_path / "config"))
    clones = {n: Clone(tmp_path, n) for n in "abc"}
    a = clones["a"].root
    monkeypatch.setenv("VIRTUAL_ENV", str(a / ".venv"))
    monkeypatch.setenv("NODE_OPTIONS", f"--require {a / 'node_modules' / 'hostile-plugin' / 'index.js'}")
    monkeypatch.setenv("PYTHONSTARTUP", str(a / "sitecustomize.py"))
    return clones


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


def _ask(analyzer: str, root: Path, trust: bool = False):
    """The members after the dot in the cursor's file and, for a Python analyzer, in the same
    file of the sub-projects with their own pyrefly.toml (shop2/) and pyrightconfig.json
    (shop3/), so a server loads those configurations too: the first file's answer."""
    from groundcode.analysis.base import MembersQuery
    from groundcode.context import Splice
    f, src, line, col = _where(analyzer)
    files = [f] if analyzer == "typescript" else [f, f.replace("shop/", "shop2/"), f.replace("shop/", "shop3/")]
    if analyzer == "jedi":
        from groundcode.analysis.jedi_client import JediAnalyzer
        a = JediAnalyzer(root, deadline_s=60, trust=trust)
    else:
        from groundcode.analysis.lsp_client import LspAnalyzer
        a = LspAnalyzer(root, analyzer, deadline_s=60, cold_deadline_s=60)
    with a:
        return [a.ask(MembersQuery(Splice(src, line, col, root / x), "x", (x,))).result(timeout=120)
                for x in files][0]


@pytest.mark.parametrize("analyzer", ANALYZERS)
def test_an_analyzer_in_a_hostile_repository_runs_nothing_of_it(world, analyzer, monkeypatch):
    """Started from inside the repository, with its venv active: no marker, and the analyzer
    still answers (a server the repository crashed would fail open: `error: ...`)."""
    a = world["a"]
    monkeypatch.chdir(a.root)
    r = _ask(analyzer, a.root)
    assert not (r.failed or "").startswith("error"), (analyzer, r.failed)
    if analyzer in ("jedi", "jedi-ls", "pyrefly", "typescript"):   # the venv's module, as files
        assert ("total" if analyzer == "typescript" else "venv_function") in r.names, (analyzer, r)
    assert a.fired() == set(), analyzer
    if analyzer == "jedi":
        r = _ask(analyzer, a.root, trust=True)
        assert "venv_function" in r.names
        assert a.fired() == TRUSTED_JEDI


@pytest.mark.parametrize("analyzer", ANALYZERS)
def test_complete_runs_nothing_of_an_untrusted_repository(world, analyzer, tiny_model_dir, monkeypatch):
    from groundcode.cli import app
    a = world["a"]
    monkeypatch.chdir(a.root)
    f, _, line, col = _where(analyzer)
    args = ["complete", f"{a.root / f}:{line}:{col}", "--model", str(tiny_model_dir), "-n", "4", "--json",
            "--analyzer", analyzer]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    triggers = json.loads(r.stdout.strip().splitlines()[-1])["triggers"]
    assert triggers and not any(t["trusted"] for t in triggers), triggers
    assert a.fired() == set()
    r = CliRunner().invoke(app, [*args, "--trust"])
    assert r.exit_code == 0, r.output
    assert all(t["trusted"] for t in json.loads(r.stdout.strip().splitlines()[-1])["triggers"])
    assert a.fired() == _expected(analyzer, True)


@pytest.mark.parametrize("analyzer", ANALYZERS)
def test_serve_trusts_the_listed_root_and_no_other(world, analyzer, tmp_path):
    """`serve --workspace a --workspace b` with a on the user's list: /health names a alone;
    b's request runs nothing of b; a's runs what a trusted root may."""
    import httpx

    from groundcode import trust
    from serve_process import free_port, start_serve, stop
    a, b = world["a"], world["b"]
    trust.add(a.root)
    f, _, line, col = _where(analyzer)
    proc, base = start_serve(["--model", "tiny", "--workspace", str(a.root), "--workspace", str(b.root),
                              "--lookahead", "0", "--analyzer", analyzer], _env(), free_port())
    try:
        health = httpx.get(base + "/health", timeout=30).json()
        assert health["trusted"] == [str(a.root.resolve())], health
        for clone, trusted in ((b, False), (a, True)):
            r = httpx.post(base + "/v1/code/completions", timeout=120, json={
                "path": str(clone.root / f), "line": line, "column": col, "max_tokens": 4})
            assert r.status_code == 200, r.text
            triggers = r.json()["triggers"]
            assert triggers and all(t["trusted"] == trusted for t in triggers), (clone.root, triggers)
    finally:
        stop(proc)
    assert b.fired() == set()
    assert a.fired() == _expected(analyzer, True)


async def _lsp(world, analyzer: str) -> None:
    """initialize naming folder a with {"trust": true}; complete in a, then in a file of clone
    b (outside every root), then in folder c added by didChangeWorkspaceFolders."""
    from lsprotocol import types as T
    from pytest_lsp import ClientServerConfig, client_capabilities
    f, src, line, col = _where(analyzer)
    config = ClientServerConfig(server_command=[sys.executable, "-m", "groundcode", "lsp", "--model", "tiny",
                                                "--debounce-ms", "0", "--max-new-tokens", "4",
                                                "--lookahead", "0", "--analyzer", analyzer],
                                server_env=_env())
    client = await config.start()
    a, b, c = world["a"].root, world["b"].root, world["c"].root
    try:
        await client.initialize_session(T.InitializeParams(
            capabilities=client_capabilities("neovim@v0.11.0"),
            workspace_folders=[T.WorkspaceFolder(uri=a.as_uri(), name="a")],
            initialization_options={"trust": True}))
        for root in (a, b, c):
            if root == c:
                client.workspace_did_change_workspace_folders(T.DidChangeWorkspaceFoldersParams(
                    T.WorkspaceFoldersChangeEvent(added=[T.WorkspaceFolder(uri=c.as_uri(), name="c")],
                                                  removed=[])))
            uri = (root / f).as_uri()
            client.text_document_did_open(T.DidOpenTextDocumentParams(T.TextDocumentItem(
                uri=uri, language_id="typescript" if analyzer == "typescript" else "python", version=1,
                text=src)))
            out = await asyncio.wait_for(client.text_document_completion_async(T.CompletionParams(
                text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line - 1, col))), 120)
            for item in getattr(out, "items", None) or ():
                for g in (item.data or {}).get("grounded", ()):
                    assert g["trusted"] == (root == a), (root, g)
        health = await client.workspace_execute_command_async(T.ExecuteCommandParams(command="groundcode.health"))
        assert set(health["roots"]) == {str(r) for r in (a, b, c)}, health     # b: its file's repository
        assert health["trusted"] == [str(a)], health
        await client.shutdown_session()
    finally:
        await client.stop()


@pytest.mark.parametrize("analyzer", ANALYZERS)
def test_the_editors_trust_stays_with_the_folder_it_named(world, analyzer):
    asyncio.run(_lsp(world, analyzer))
    assert world["b"].fired() == set(), "a file of another clone opened later"
    assert world["c"].fired() == set(), "a folder added later"
    assert world["a"].fired() == _expected(analyzer, True)
