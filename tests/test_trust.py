"""Workspace trust (trust.py): a repository's own interpreter never runs unless the workspace is
trusted. The repository here ships `.venv/bin/python`, a script that writes a marker file and
then runs the real interpreter; its site-packages holds a module only it has.

- `complete`, `generate`, `serve --workspace` and `lsp` (didOpen + a completion of one of its
  files) never start it, and the analyzer still answers members of the venv's module (its
  site-packages read as files);
- `--trust`, the LSP initialization option and the user's trusted list do start it;
- an explicit `--python` is that interpreter only.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundcode import trust
from groundcode.cli import app

FIXTURE = Path(__file__).parent / "fixtures" / "shop"
USE = '''import onlyinvenv


def call_it():
    return onlyinvenv.
'''


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


@pytest.fixture()
def hostile(tmp_path, monkeypatch) -> Path:
    """The shop fixture with a `.venv` whose interpreter leaves a marker when it runs."""
    monkeypatch.setenv("GROUNDCODE_CONFIG", str(tmp_path / "config"))
    repo = tmp_path / "shop"
    shutil.copytree(FIXTURE, repo)
    (repo / "shop" / "use.py").write_text(USE)
    venv = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "onlyinvenv.py").write_text("def venv_function():\n    pass\n")
    py = venv / "bin" / "python"
    real = venv / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    py.unlink()
    py.write_text(f"#!/bin/sh\necho ran >> '{tmp_path / 'MARKER'}'\nexec '{real}' \"$@\"\n")
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    return repo


def _ran(repo: Path) -> bool:
    return (repo.parent / "MARKER").exists()


def test_the_environment_an_analyzer_may_run(hostile):
    env = trust.environment(hostile)
    assert env.python is None and not env.trusted
    assert len(env.site_paths) == 1 and env.site_paths[0].endswith("site-packages")
    assert trust.environment(hostile, trust=True).python == str(hostile / ".venv")
    assert trust.environment(hostile, python=sys.executable).python == sys.executable
    assert not trust.trusted(hostile / "shop")
    trust.add(hostile)
    assert trust.trusted(hostile / "shop") and trust.roots() == [hostile.resolve()]
    assert trust.environment(hostile).python == str(hostile / ".venv")
    assert trust.remove(hostile) and not trust.trusted(hostile)


def test_the_search_paths_a_language_server_reads(hostile, tmp_path):
    """A language server runs nothing: it reads the repository venv's site-packages (trusted or
    not), or the named interpreter's environment (`--python`: a venv or its bin/python)."""
    venv_site = trust.environment(hostile).site_paths
    assert trust.search_paths(hostile) == venv_site
    import subprocess
    other = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True)
    want = trust.site_packages(other)
    assert want and trust.search_paths(hostile, other) == want
    assert trust.search_paths(hostile, other / "bin" / "python") == want
    assert trust.search_paths(tmp_path / "no-repo") == ()


def test_a_broken_trusted_list_is_an_error_not_an_empty_list(hostile):
    from groundcode.errors import GroundcodeError
    f = trust.config_dir() / "trusted.json"
    f.parent.mkdir(parents=True)
    f.write_text("[not json")
    with pytest.raises(GroundcodeError, match="trusted-roots list"):
        trust.roots()


def _members(analyzer, repo: Path):
    from groundcode.analysis.base import MembersQuery
    from groundcode.context import Splice
    code = USE
    line = code.splitlines().index("    return onlyinvenv.") + 1
    at = Splice(code, line, len("    return onlyinvenv."), repo / "shop" / "use.py")
    return analyzer.ask(MembersQuery(at, "onlyinvenv", ("t",))).result(timeout=120)


def test_the_analyzer_reads_an_untrusted_venv_as_files_and_starts_a_trusted_one(hostile):
    from groundcode.analysis.jedi_client import JediAnalyzer
    with JediAnalyzer(hostile, deadline_s=30) as a:
        r = _members(a, hostile)
    assert "venv_function" in r.names, r
    assert not _ran(hostile)
    with JediAnalyzer(hostile, deadline_s=30, trust=True) as a:
        r = _members(a, hostile)
    assert "venv_function" in r.names, r
    assert _ran(hostile)


def test_language_servers_never_run_an_untrusted_venv(hostile, monkeypatch):
    """jedi-ls runs an interpreter (groundcode's own: environmentPath, no VIRTUAL_ENV), ty reads
    files; with the hostile venv active in the environment neither starts it, and both still
    answer the venv module's members (its site-packages as search paths)."""
    from groundcode.analysis import lsp_servers
    from groundcode.analysis.lsp_client import LspAnalyzer
    monkeypatch.setenv("VIRTUAL_ENV", str(hostile / ".venv"))      # as if the user had it active
    for name in ("jedi-ls", "ty"):
        lsp_servers.install(name)
        with LspAnalyzer(hostile, name, deadline_s=60, cold_deadline_s=60) as a:
            r = _members(a, hostile)
        assert "venv_function" in r.names, (name, r)
    assert not _ran(hostile)


def test_complete_and_generate_never_run_an_untrusted_venv(hostile, tiny_model_dir):
    runner = CliRunner()
    use = hostile / "shop" / "use.py"
    for args in (["complete", f"{use}:5:22"], ["generate", f"{hostile}/shop/cart.py:Cart.last"]):
        r = runner.invoke(app, [*args, "--model", str(tiny_model_dir), "-n", "6", "--json"])
        assert r.exit_code == 0, r.output
        if args[0] == "complete":     # the cursor's trigger was asked (generate: prewarmed)
            assert json.loads(r.stdout.strip().splitlines()[-1])["triggers"], r.output
    assert not _ran(hostile)
    r = runner.invoke(app, ["complete", f"{use}:5:22", "--model", str(tiny_model_dir), "-n", "6",
                            "--json", "--trust"])
    assert r.exit_code == 0, r.output
    assert _ran(hostile)


def test_the_trust_command_keeps_the_list_in_the_user_config(hostile):
    runner = CliRunner()
    r = runner.invoke(app, ["trust", str(hostile)])
    assert r.exit_code == 0 and "trusted:" in r.output
    assert runner.invoke(app, ["trust", "--list"]).output.strip() == str(hostile.resolve())
    assert not any(hostile.rglob("trusted.json"))            # never in the repository
    r = runner.invoke(app, ["trust", str(hostile), "--remove"])
    assert "no longer trusted" in r.output and trust.roots() == []


def test_serve_never_runs_an_untrusted_venv(hostile):
    import httpx

    from serve_process import free_port, start_serve, stop
    proc, base = start_serve(["--model", "tiny", "--workspace", str(hostile), "--lookahead", "0"],
                             _env(), free_port())
    try:
        r = httpx.post(base + "/v1/code/completions", timeout=120, json={
            "path": "shop/use.py", "line": 5, "column": 22, "max_tokens": 6})
        assert r.status_code == 200, r.text
        assert r.json()["triggers"], r.json()
    finally:
        stop(proc)
    assert not _ran(hostile)


async def _lsp_complete(repo: Path, options: dict | None) -> None:
    """`groundcode lsp --model tiny`: initialize (with `options`), open use.py, ask for an
    inline completion after `onlyinvenv.`, shut down."""
    from lsprotocol import types as T
    from pytest_lsp import ClientServerConfig, client_capabilities
    config = ClientServerConfig(server_command=[sys.executable, "-m", "groundcode", "lsp", "--model", "tiny",
                                                "--debounce-ms", "0", "--max-new-tokens", "6",
                                                "--lookahead", "0"],
                                server_env=_env())
    client = await config.start()
    try:
        await client.initialize_session(T.InitializeParams(
            capabilities=client_capabilities("neovim@v0.11.0"),
            workspace_folders=[T.WorkspaceFolder(uri=repo.as_uri(), name="shop")],
            initialization_options=options))
        uri = (repo / "shop" / "use.py").as_uri()
        client.text_document_did_open(T.DidOpenTextDocumentParams(
            T.TextDocumentItem(uri=uri, language_id="python", version=1, text=USE)))
        out = await asyncio.wait_for(client.text_document_inline_completion_async(T.InlineCompletionParams(
            text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(4, 22),
            context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Invoked))), 120)
        assert out is not None
        await client.shutdown_session()
    finally:
        await client.stop()


def test_the_language_server_runs_a_venv_only_when_the_editor_trusts_it(hostile):
    asyncio.run(_lsp_complete(hostile, None))
    assert not _ran(hostile)
    asyncio.run(_lsp_complete(hostile, {"trust": True}))
    assert _ran(hostile)


def test_an_explicit_python_is_that_interpreter_only(hostile):
    from groundcode.analysis.jedi_client import JediAnalyzer
    with JediAnalyzer(hostile, deadline_s=30, python=sys.executable) as a:
        r = _members(a, hostile)
    assert "venv_function" not in r.names
    assert not _ran(hostile)


def test_trust_is_per_root_and_never_spreads(tmp_path, monkeypatch):
    """The editor's {"trust": true} trusts the folder it named at initialize; the repository of a
    file opened outside it, and a folder added later, stay untrusted unless the user's list names
    them; `serve --trust` (Workspace(trust=True)) trusts the roots given at start only."""
    from groundcode.server.lsp_completer import Completer
    from groundcode.workspace import Workspace
    monkeypatch.setenv("GROUNDCODE_CONFIG", str(tmp_path / "config"))
    roots = {}
    for n in "abc":
        r = tmp_path / n
        (r / ".git").mkdir(parents=True)
        (r / "m.py").write_text("x = 1\n")
        roots[n] = r.resolve()
    a, b, c = roots["a"], roots["b"], roots["c"]

    def boom():
        raise RuntimeError("no model in this test")
    comp = Completer(boom, debounce_s=0)
    comp.start([a], trust=True)
    assert comp.trusted_roots == [a]
    comp.open(b / "m.py", "x = 1\n")                 # another clone: a root, not trusted
    assert set(comp.roots) == {a, b} and comp.trusted_roots == [a]
    assert comp._ensure(b / "m.py").cursor(b / "m.py", 1, 0).trust is False
    assert comp._ensure(a / "m.py").cursor(a / "m.py", 1, 0).trust is True
    comp.configure(trust=True)                       # the options again: still a alone
    assert comp.trusted_roots == [a]
    comp.set_roots(comp.roots + [c])                 # didChangeWorkspaceFolders
    assert comp.trusted_roots == [a]
    trust.add(c)                                     # `groundcode trust c`
    assert comp.trusted_roots == [a, c]
    comp.set_roots([b, c])                           # a removed ...
    comp.set_roots([a, b, c])                        # ... and added again: no longer trusted
    assert comp.trusted_roots == [c]

    cli = Completer(boom, [a], debounce_s=0, trust=True)   # `lsp --trust --workspace a`
    cli.open(b / "m.py", "x = 1\n")
    assert cli.trusted_roots == [a]

    ws = Workspace([a, b], trust=True)                # `serve --trust --workspace a --workspace b`
    assert ws.trusted_roots() == [a, b] and Workspace([a, b], trust=[a]).trusted_roots() == [a]
