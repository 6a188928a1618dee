"""Editors that tell the truth (issue 30): a language server whose model is not pulled says so
once with window/showMessage (naming the model cache and the command), and each completion
request gets a clear error instead of an empty answer."""
from __future__ import annotations

import asyncio
import os
import sys

from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, client_capabilities


async def _run(repo, env) -> tuple:
    config = ClientServerConfig(server_command=[sys.executable, "-m", "groundcode", "lsp",
                                                "--model", "smollm2-135m", "--debounce-ms", "0"],
                                server_env=env)
    client = await config.start()
    try:
        await client.initialize_session(T.InitializeParams(
            capabilities=client_capabilities("neovim@v0.11.0"),
            workspace_folders=[T.WorkspaceFolder(uri=repo.as_uri(), name="shop")]))
        uri = (repo / "shop" / "cart.py").as_uri()
        client.text_document_did_open(T.DidOpenTextDocumentParams(
            T.TextDocumentItem(uri=uri, language_id="python", version=1,
                               text=(repo / "shop" / "cart.py").read_text())))
        errors = []
        for _ in range(2):
            try:
                await asyncio.wait_for(client.text_document_inline_completion_async(T.InlineCompletionParams(
                    text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(10, 8),
                    context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Invoked))), 60)
            except Exception as exc:          # the JSON-RPC error of the request
                errors.append(str(exc))
        for _ in range(50):
            if client.messages:
                break
            await asyncio.sleep(0.1)
        messages = list(client.messages)
        await client.shutdown_session()
        return messages, errors
    finally:
        await client.stop()


def test_a_missing_model_is_shown_once_and_each_request_says_why(tmp_path, shop_repo):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), HF_HUB_OFFLINE="1",
               GROUNDCODE_CACHE=str(tmp_path / "empty-cache"))
    messages, errors = asyncio.run(_run(shop_repo, env))
    assert len(messages) == 1 and messages[0].type == T.MessageType.Error, messages
    assert "not pulled" in messages[0].message and "groundcode models pull" in messages[0].message
    assert str(tmp_path / "empty-cache") in messages[0].message
    assert len(errors) == 2 and all("not pulled" in e for e in errors), errors
