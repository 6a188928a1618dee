"""Issue 44's acceptance through the LSP itself: `groundcode lsp` over stdio (pytest-lsp, Neovim
0.11's captured capabilities) with a scripted model (tests/scripted_lsp.py) that writes `sc` of
`discounts` at `return self.di|` — `discounts` a member only in the unsaved buffer — when the
request's deadline falls. Neither the inline completion nor the completion item offers `sc`
(the editor would accept `self.disc`): no item, while the server's answer says finish_reason
"deadline" and that `self.disc` was cut."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

HERE = Path(__file__).parent
LOG = Path(tempfile.mkdtemp(prefix="gc-lsp-deadline-")) / "answers.json"
CURSOR_LINE = "        return self.di"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    dst = tmp_path_factory.mktemp("lsp-deadline") / "shop"
    shutil.copytree(HERE / "fixtures" / "shop", dst)
    return dst


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, str(HERE / "scripted_lsp.py")],
    server_env={**os.environ, "GC_SCRIPTED_LOG": str(LOG)}), scope="module")
async def client(lsp_client: LanguageClient, repo):
    folder = T.WorkspaceFolder(uri=repo.as_uri(), name="shop")
    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=client_capabilities("neovim@v0.11.0"), root_uri=repo.as_uri(),
        workspace_folders=[folder]))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_a_deadline_mid_name_offers_no_half_written_member(client: LanguageClient, repo):
    path = repo / "shop" / "cart.py"
    text = path.read_text().replace("        self.registry = Registry()\n",
                                    "        self.registry = Registry()\n        self.discounts = []\n")
    text = text.rstrip("\n") + "\n\n    def total(self):\n" + CURSOR_LINE
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    pos = T.Position(text.count("\n"), len(CURSOR_LINE))      # ASCII: UTF-8 = UTF-16 = index
    res = await client.text_document_inline_completion_async(T.InlineCompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=pos,
        context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Invoked)))
    items = res.items if hasattr(res, "items") else res
    assert list(items) == [], items
    res = await client.text_document_completion_async(T.CompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=pos))
    assert list(res.items) == [], res
    seen = json.loads(LOG.read_text())
    assert seen["fired"] == 2, seen                     # both rows held `sc` when cut
    assert len(seen["answers"]) == 2
    for a in seen["answers"]:
        assert a["finish_reason"] == "deadline" and a["text"] == "", a
        assert a["grounded"][0]["receiver"] == "self" and a["grounded"][0]["cut"] == "disc", a
