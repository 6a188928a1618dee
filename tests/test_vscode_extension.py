"""The VS Code extension (editors/vscode/) as shipped: its manifest and its code agree (every
setting the code reads is contributed, the languages the server serves activate it, workspace
trust is declared and passed on), and the build is pinned. The real-editor test is issue 43's."""
from __future__ import annotations

import json
import re
from pathlib import Path

EXT = Path(__file__).parents[1] / "editors" / "vscode"


def test_the_manifest_contributes_every_setting_the_code_reads():
    manifest = json.loads((EXT / "package.json").read_text())
    code = (EXT / "extension.js").read_text()
    props = manifest["contributes"]["configuration"]["properties"]
    read = set(re.findall(r'cfg\.get\("(\w+)"\)', code))
    assert read and {"groundcode." + k for k in read} <= set(props), (read, sorted(props))
    assert {"groundcode.command", "groundcode.model", "groundcode.analyzer", "groundcode.python"} <= set(props)
    for lang in ("python", "typescript", "javascript"):
        assert f"onLanguage:{lang}" in manifest["activationEvents"] and f'"{lang}"' in code
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert commands == set(re.findall(r'registerCommand\("([\w.]+)"', code))


def test_workspace_trust_is_the_servers_trust():
    manifest = json.loads((EXT / "package.json").read_text())
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    assert {"groundcode.command", "groundcode.python"} <= set(untrusted["restrictedConfigurations"])
    code = (EXT / "extension.js").read_text()
    assert "vscode.workspace.isTrusted" in code and "initializationOptions: { trust: trusted, python }" in code
    assert "const python = trusted ?" in code          # an interpreter named only where trusted
    assert "onDidGrantWorkspaceTrust(restart)" in code


def test_the_build_is_pinned():
    manifest = json.loads((EXT / "package.json").read_text())
    lock = json.loads((EXT / "package-lock.json").read_text())
    assert manifest["dependencies"] == {"vscode-languageclient": "11.0.0"}
    assert manifest["devDependencies"] == {"@vscode/vsce": "3.9.2"}
    pkgs = lock["packages"]
    assert pkgs["node_modules/vscode-languageclient"]["version"] == "11.0.0"
    assert all("integrity" in v for k, v in pkgs.items() if k)       # every package by its hash
    assert "npm ci" in (EXT / "build.sh").read_text()


def test_what_a_real_vscode_needed():
    """Found by driving the extension in code-server (benchmarks/vscode_editor.sh): the client
    library logs through a LogOutputChannel's .error/.info (a plain channel: "could not start"),
    and the completion fallback is not asked beside the inline request while ghost text is on
    (the server cancels the older of two requests on one document: no ghost text)."""
    code = (EXT / "extension.js").read_text()
    assert 'createOutputChannel("groundcode", { log: true })' in code
    assert 'provideCompletionItem:' in code and '.get("inlineSuggest.enabled", true)' in code


def test_the_editor_benchmark_reads_the_lines_the_extension_logs():
    """benchmarks/vscode_editor.py pairs each timed keystroke with the server's times from the
    extension's output channel: the line extension.js writes is the line the benchmark parses."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("vscode_editor", EXT.parents[1] / "benchmarks" / "vscode_editor.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("vscode_editor", mod)
    spec.loader.exec_module(mod)
    code = (EXT / "extension.js").read_text()
    template = re.search(r"output\.appendLine\(`(suggestion [^`]*)` \+\s*`([^`]*)` \+", code)
    assert template, "the extension's per-suggestion log line"
    line = (template[1] + template[2]).replace("${document.uri.fsPath}", "/ws/shop/inventory.py") \
        .replace("${position.line + 1}", "14").replace("${position.character}", "17") \
        .replace("${t.first_token_ms}", "38.6").replace("${t.total_ms}", "403.4").replace("${g.finish_reason}", "stop")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "logs" / "1" / "exthost1" / "groundcode.groundcode" / "groundcode.log"
        log.parent.mkdir(parents=True)
        log.write_text(f"2026-11-29 03:22:16.826 [info] {line}\n")
        rows = mod._server_times(Path(d))
    assert rows == [{"file": "/ws/shop/inventory.py", "line": 14, "col": 17, "first_token_ms": 38.6, "total_ms": 403.4}]
    r = {"latency_ms": [530.0, None], "trial_cursors": [[14, 17], [15, 17]]}
    mod._pair(r, rows)
    assert r["paired_trials"] == 1 and r["editor_overhead_p50_ms"] == 126.6 and r["key_to_ghost_p50_ms"] == 530.0


def test_the_status_says_ready_once_the_model_is_loaded():
    """"ready" is the server's own word (its health: the model loaded, the analyzers running),
    not the client's connection: the command the extension asks is the one the server serves."""
    from groundcode.server.lsp import HEALTH
    code = (EXT / "extension.js").read_text()
    assert f'command: "{HEALTH}"' in code and "h.model_loaded" in code and "h.analyzers" in code
    running = code[code.index("e.newState === State.Running"):]
    assert running.index("watchLoad(") < running.index("State.Stopped")
