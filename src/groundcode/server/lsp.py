"""`groundcode lsp`: a language server over stdio (pygls 2.x; the only module that imports pygls
and lsprotocol) whose completions are grounded in the editor's unsaved buffers.

    textDocument/inlineCompletion  one item: insertText at the cursor, its range (one line),
                                   and a command `groundcode.grounded` whose argument says which
                                   identifiers the analyzer chose (executing it does nothing)
    textDocument/completion        the same text as one CompletionItem (clients without inline
                                   completion); `data`/`detail` carry the grounded names
    didOpen/didChange/didClose     the Workspace's buffer overlay (the analyzer reads these)
    initializationOptions          {"trust": true} trusts the folders named at initialize (their
                                   venvs may run; a folder added later, or the repository of a
                                   file opened outside them, is not trusted by it),
                                   {"python": PATH} names the interpreter (trust.py)
    workspace folders              the analyzer roots (initialize, didChangeWorkspaceFolders)
    workspace/executeCommand       `groundcode.health`: the LSP's /health: its roots, the trusted
                                   ones, the analyzers running (Completer.health)
    $/cancelRequest, a newer request on the same document: the older one's rows stop
    selectedCompletionInfo         the item an open suggest widget has selected: the inline item
                                   starts with it and continues it (VS Code shows ghost text
                                   beside the widget only then)

`inlineCompletionProvider` is declared statically: clients older than LSP 3.18 (Neovim 0.7-0.11)
send the request without advertising the capability. Positions use the encoding negotiated at
initialize (UTF-16 unless the client prefers UTF-8/32). Logs go to stderr; stdout carries only
the protocol (fd 1 is moved to stderr, so no library or worker can write into it).

Not here: requests, debounce and cancellation (lsp_completer.py), text rules (lsp_text.py).
Tested by tests/test_lsp_server.py (pytest-lsp with Neovim's and VS Code's captured client
capabilities) and tests/test_lsp_nvim.py (a real headless Neovim).
"""
from __future__ import annotations

import logging
import os
import sys
from enum import Enum

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..errors import GroundcodeError
from . import lsp_text
from .lsp_completer import Answer, Completer

log = logging.getLogger("groundcode.lsp")
COMMAND = "groundcode.grounded"
HEALTH = "groundcode.health"


def _encoding(ls: LanguageServer) -> str:
    enc = ls.workspace.position_encoding or "utf-16"
    return str(enc.value) if isinstance(enc, Enum) else str(enc)


def _path(uri: str):
    return to_fs_path(uri) if uri.startswith("file:") else None


def _range(ls, a: Answer, start_index: int) -> T.Range:
    enc = _encoding(ls)
    return T.Range(T.Position(a.line, lsp_text.from_index(a.line_text, start_index, enc)),
                   T.Position(a.line, lsp_text.from_index(a.line_text, a.index, enc)))


def _info(a: Answer) -> dict:
    return {"grounded": a.grounded, "finish_reason": a.finish_reason, "stop": a.stop,
            "timings": a.timings}


def build(completer: Completer) -> LanguageServer:
    ls = LanguageServer("groundcode", __version__,
                        text_document_sync_kind=T.TextDocumentSyncKind.Incremental)

    def folders(params) -> list:
        uris = [f.uri for f in (params.workspace_folders or [])]
        if not uris and params.root_uri:
            uris = [params.root_uri]
        return [p for p in (_path(u) for u in uris) if p]

    @ls.feature(T.INITIALIZE)
    def initialize(params: T.InitializeParams):
        opts = params.initialization_options
        opts = opts if isinstance(opts, dict) else {}
        try:           # workspace trust (trust.py): the editor says whether the folders it names
            completer.start(folders(params), opts.get("trust"), opts.get("python"))   # are trusted
        except GroundcodeError as exc:
            log.warning("%s", exc)

    told: list = []

    def tell(message: str) -> None:
        """A setup failure (the model not pulled, the analyzer missing), shown once."""
        if told:
            return
        told.append(message)
        try:
            ls.window_show_message(T.ShowMessageParams(type=T.MessageType.Error,
                                                       message=f"groundcode: {message}"))
        except Exception as exc:      # noqa: BLE001 (a client that went away)
            log.warning("could not show the message: %s", exc)

    @ls.feature(T.INITIALIZED)
    def initialized(params: T.InitializedParams):
        def loaded(fut):
            exc = fut.exception()
            if exc is not None:
                tell(f"could not load the model: {exc}".splitlines()[0])
        completer.on_loaded(loaded)

    @ls.feature(T.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(params: T.DidChangeWorkspaceFoldersParams):
        gone = {_path(f.uri) for f in params.event.removed or ()}
        new = [p for p in (_path(f.uri) for f in params.event.added or ()) if p]
        completer.set_roots([r for r in completer.roots if str(r) not in gone] + new)

    def sync(uri: str) -> None:
        path = _path(uri)
        if path is not None:
            completer.change(path, ls.workspace.get_text_document(uri).source)

    @ls.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: T.DidOpenTextDocumentParams):
        path = _path(params.text_document.uri)
        if path is not None:
            completer.open(path, params.text_document.text)

    @ls.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: T.DidChangeTextDocumentParams):
        sync(params.text_document.uri)     # pygls applied the (incremental) changes already

    @ls.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: T.DidCloseTextDocumentParams):
        path = _path(params.text_document.uri)
        if path is not None:
            completer.close(path)

    async def answer(params, selected=None) -> Answer | None:
        path = _path(params.text_document.uri)
        if path is None:
            return None
        try:
            out = await completer.complete(path, params.position.line, params.position.character,
                                           _encoding(ls), selected)
            news = completer.analysis_news()          # an analyzer failing (or back): said once
            if news is not None:
                log.warning("%s", news[0]) if news[1] else log.info("%s", news[0])
                ls.window_show_message(T.ShowMessageParams(
                    type=T.MessageType.Warning if news[1] else T.MessageType.Info, message=news[0]))
            return out
        except GroundcodeError as exc:
            log.warning("%s", exc)
            if "load the model" in str(exc):
                tell(str(exc))
            raise JsonRpcInvalidParams(f"groundcode: {exc}") from None

    @ls.feature(T.TEXT_DOCUMENT_INLINE_COMPLETION, T.InlineCompletionOptions())
    async def inline_completion(params: T.InlineCompletionParams):
        sel = params.context.selected_completion_info if params.context else None
        on_line = sel is not None and sel.range.start.line == sel.range.end.line == params.position.line
        a = await answer(params, (sel.range.start.character, sel.text) if on_line else None)
        if a is None or not a.text:
            return T.InlineCompletionList(items=[])
        info = _info(a)
        item = T.InlineCompletionItem(     # a selected suggest item: its range, its text first
            insert_text=a.text, range=_range(ls, a, a.index if a.start is None else a.start),
            command=T.Command(title=lsp_text.title(a.grounded), command=COMMAND, arguments=[info]))
        return T.InlineCompletionList(items=[item])

    @ls.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=["."]))
    async def completion(params: T.CompletionParams):
        a = await answer(params)
        if a is None or not a.text:
            return T.CompletionList(is_incomplete=True, items=[])
        # The item replaces the identifier being typed, so clients filter on the whole name.
        word = a.line_text[a.word_start: a.index]
        text = word + a.text
        item = T.CompletionItem(
            label=text.split("\n", 1)[0].strip() or text.strip(), kind=T.CompletionItemKind.Text,
            filter_text=text, sort_text="0", detail=lsp_text.title(a.grounded),
            text_edit=T.TextEdit(_range(ls, a, a.word_start), text),
            insert_text_format=T.InsertTextFormat.PlainText, data=_info(a))
        return T.CompletionList(is_incomplete=True, items=[item])

    @ls.command(COMMAND)
    def grounded_command(*args):
        return None                 # informational: the argument is the item's grounding

    @ls.command(HEALTH)
    def health_command(*args):
        return completer.health()   # which roots are trusted, which analyzers run

    @ls.feature(T.SHUTDOWN)
    def shutdown(*args):
        completer.close_all()

    return ls


def serve_stdio(completer: Completer) -> None:
    """Run the server on this process's stdin/stdout until the client says exit."""
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)                   # stray prints (libraries, spawned workers) go to stderr
    sys.stdout = sys.stderr
    ls = build(completer)
    try:
        ls.start_io(sys.stdin.buffer, proto_out)
    finally:
        completer.close_all()
