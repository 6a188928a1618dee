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
