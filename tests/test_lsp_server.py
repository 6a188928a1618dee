"""`groundcode lsp` driven by pytest-lsp as a real client would drive it, with the captured client
capabilities of Neovim (0.11: asks for UTF-8 positions) and VS Code (1.65: UTF-16), on a copy of
the shop fixture whose unsaved buffer adds `def total(self): return self.` to Cart. The bundled
tiny model writes nonsense, but after `self.` the dereference monitor's mask only lets it write
a member of Cart: the item's identifier must be one.

Also here: non-ASCII text earlier on the line (positions converted from the client's units),
the completion fallback, $/cancelRequest and a newer request superseding an older one."""
from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest

import pytest_lsp  # the dev extra (CI installs it)
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

FIXTURE = Path(__file__).parent / "fixtures" / "shop"
CART_MEMBERS = {"owner", "registry", "add", "last", "total"}
CLIENTS = {"neovim": "neovim@v0.11.0", "vscode": "visual-studio-code"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    dst = tmp_path_factory.mktemp("lsp") / "shop"
    shutil.copytree(FIXTURE, dst)
    return dst


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "groundcode", "lsp", "--model", "tiny",
                                              "--debounce-ms", "200", "--max-new-tokens", "24", "--deadline", "60",
                                              "--log-level", "INFO"]),
    params=list(CLIENTS), scope="module")
async def client(lsp_client: LanguageClient, request, repo):
    caps = client_capabilities(CLIENTS[request.param])
    folder = T.WorkspaceFolder(uri=repo.as_uri(), name="shop")
    result = await lsp_client.initialize_session(T.InitializeParams(
        capabilities=caps, root_uri=repo.as_uri(), workspace_folders=[folder]))
    lsp_client.server_capabilities = result.capabilities
    lsp_client.kind = request.param
    lsp_client.caps = caps
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, repo: Path, name: str, added: str) -> tuple[str, str]:
    """Open cart.py with `added` appended in the buffer only; returns (uri, text)."""
    path = repo / "shop" / name
    text = path.read_text() + added
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri, text


def _ident(text: str) -> str:
    m = re.match(r"[A-Za-z_]\w*", text)
    return m.group(0) if m else ""


@pytest.mark.asyncio(loop_scope="module")
async def test_capabilities_declare_inline_completion_statically(client: LanguageClient):
    # Neovim <= 0.11 and VS Code 1.65 do not advertise inline completion; the server must
    # declare it anyway (they send the request regardless)
    assert client.caps.text_document.inline_completion is None
    caps = client.server_capabilities
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None and "." in caps.completion_provider.trigger_characters
    expected = "utf-8" if client.kind == "neovim" else "utf-16"
    assert caps.position_encoding == expected


@pytest.mark.asyncio(loop_scope="module")
async def test_inline_completion_on_an_unsaved_buffer_writes_a_member_of_cart(client: LanguageClient, repo):
    on_disk = (repo / "shop" / "cart.py").read_text()
    line_text = "    def total(self): return self."
    uri, text = await _open(client, repo, "cart.py", "\n" + line_text)
    line = text.count("\n")
    enc = client.server_capabilities.position_encoding
    res = await client.text_document_inline_completion_async(T.InlineCompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=T.Position(line, len(line_text)),
        context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Invoked)))
    items = res.items if hasattr(res, "items") else res
    assert len(items) == 1, res
    item = items[0]
    assert _ident(item.insert_text) in CART_MEMBERS, item.insert_text
    assert "\n" not in item.insert_text           # a statement on one line, no trailing break
    assert item.range.start == item.range.end == T.Position(line, len(line_text))
    # the command says what was grounded
    assert item.command.command == "groundcode.grounded"
    info = item.command.arguments[0]
    first = info["grounded"][0]
    assert first["receiver"] == "self" and first["constrained"] and first["chosen"] == _ident(item.insert_text)
    assert first["candidates"] >= 4 and info["finish_reason"] in ("stop", "eos")
    assert "grounded self." in item.command.title
    assert enc in ("utf-8", "utf-16")
    # the server never writes the workspace
    assert (repo / "shop" / "cart.py").read_text() == on_disk
    client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))


@pytest.mark.asyncio(loop_scope="module")
async def test_non_ascii_earlier_on_the_line_and_incremental_edits(client: LanguageClient, repo):
    # 'é' is 2 UTF-8 bytes, the emoji 4 UTF-8 bytes / 2 UTF-16 units, each 1 Python character:
    # a server counting the wrong units puts the cursor before or after the `self.`
    uri, text = await _open(client, repo, "cart.py", "\n    def total(self):\n        pass\n")
    line = text.count("\n") - 1                    # the `pass` line
    enc = client.server_capabilities.position_encoding
    # edit the buffer incrementally, as editors do: replace `pass` with the non-ASCII line
    new = 'tag = "é😀"; return self.'
    col0 = _col("        ", enc)
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[T.TextDocumentContentChangePartial(
            range=T.Range(T.Position(line, col0), T.Position(line, col0 + _col("pass", enc))), text=new)]))
    end = _col("        " + new, enc)
    res = await client.text_document_inline_completion_async(T.InlineCompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=T.Position(line, end),
        context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Automatic)))
    items = res.items if hasattr(res, "items") else res
    assert len(items) == 1, res
    item = items[0]
    first = item.command.arguments[0]["grounded"][0]
    assert first["receiver"] == "self" and first["constrained"], item
    assert _ident(item.insert_text) in CART_MEMBERS
    assert item.range.start == T.Position(line, end)
    # the completion fallback answers the same text as one item replacing the word at the cursor
    comp = await client.text_document_completion_async(T.CompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=T.Position(line, end)))
    assert len(comp.items) == 1
    ci = comp.items[0]
    assert _ident(ci.text_edit.new_text) in CART_MEMBERS and ci.data["grounded"][0]["constrained"]
    assert ci.text_edit.range.start == T.Position(line, end)
    client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))


def _col(text: str, enc: str) -> int:
    return len(text.encode("utf-16-le")) // 2 if enc == "utf-16" else len(text.encode(enc))


@pytest.mark.asyncio(loop_scope="module")
async def test_cancel_request_and_a_newer_request_supersedes(client: LanguageClient, repo):
    line_text = "    def total(self): return self."
    uri, text = await _open(client, repo, "cart.py", "\n" + line_text)
    pos = T.Position(text.count("\n"), len(line_text))
    params = T.InlineCompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=pos,
        context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Automatic))
    # $/cancelRequest: the request ends with RequestCancelled (it is cancelled in its
    # debounce wait here; tests/test_lsp_completer.py cancels one whose rows are running)
    fut = asyncio.ensure_future(client.protocol.send_request_async(
        T.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id="cancel-me"))
    await asyncio.sleep(0.05)
    client.protocol.notify("$/cancelRequest", T.CancelParams(id="cancel-me"))
    with pytest.raises(Exception) as exc:
        await asyncio.wait_for(fut, 30)
    assert "cancel" in str(exc.value).lower()
    # two requests on one document within the debounce: the older answers nothing, the
    # newer answers a member
    older = asyncio.ensure_future(client.text_document_inline_completion_async(params))
    await asyncio.sleep(0.05)
    newer = asyncio.ensure_future(client.text_document_inline_completion_async(params))
    a, b = await asyncio.wait_for(asyncio.gather(older, newer), 60)
    a_items = a.items if hasattr(a, "items") else a
    b_items = b.items if hasattr(b, "items") else b
    assert len(a_items) == 0 and len(b_items) == 1
    assert _ident(b_items[0].insert_text) in CART_MEMBERS
    client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))


@pytest.mark.asyncio(loop_scope="module")
async def test_an_item_selected_in_the_suggest_widget_is_continued(client: LanguageClient, repo):
    """LSP 3.18 selectedCompletionInfo: VS Code shows ghost text beside an open suggest widget
    (its own TypeScript, Pylance) only when it extends the selected item. The answer starts with
    that item, over its range, and goes on from the buffer as if it were accepted."""
    on_disk = (repo / "shop" / "cart.py").read_text()
    line_text = "    def total(self): return self.reg"
    uri, text = await _open(client, repo, "cart.py", "\n" + line_text)
    line, enc = text.count("\n"), client.server_capabilities.position_encoding
    word = len(line_text) - len("reg")
    sel = T.SelectedCompletionInfo(range=T.Range(T.Position(line, word), T.Position(line, len(line_text))),
                                   text="registry")
    res = await client.text_document_inline_completion_async(T.InlineCompletionParams(
        text_document=T.TextDocumentIdentifier(uri), position=T.Position(line, len(line_text)),
        context=T.InlineCompletionContext(trigger_kind=T.InlineCompletionTriggerKind.Automatic,
                                          selected_completion_info=sel)))
    items = res.items if hasattr(res, "items") else res
    assert len(items) == 1, res
    item = items[0]
    assert item.insert_text.startswith("registry"), item.insert_text
    assert item.range == T.Range(T.Position(line, word), T.Position(line, len(line_text)))
    # the model went on after `self.registry`: what follows it is a member of its Registry
    # (after a dot) or no identifier at all, never `reg` typed twice
    assert not item.insert_text.startswith("registryreg")
    assert enc in ("utf-8", "utf-16") and (repo / "shop" / "cart.py").read_text() == on_disk
    client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri)))
