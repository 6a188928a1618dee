"""An analyzer that asks a language server (the only module that speaks LSP to servers; pygls's
client and lsprotocol's types, no hand-written framing):

    a = LspAnalyzer(repo, server="ty", deadline_s=2.0)      # analysis/base.py's interface
    ticket = a.ask(MembersQuery(at, "self", key))            # textDocument/completion after the dot
    ticket = a.ask(NamesQuery(at, key))                      # completion at a name start
    a.prewarm(at); a.deadline(); a.close()

One server per (server, workspace root), started lazily (or by prewarm) as a subprocess on stdio,
`initialize`d with the workspace folder; the file analysed (the splice: the real file with the
partial code) and the workspace's other open buffers in the server's languages (the Overlay; tsgo
panics on a .py file) are opened with `didOpen` and kept with `didChange` (the changed lines only,
where the server takes ranged changes; else the whole text). Members keep their kinds (method,
field, property, constant, enum member, …) in Jedi's words; keywords, snippets and text items are
dropped (lsp_messages.py). An `isIncomplete` list is treated as open (fail open, "incomplete"),
never as closed. A SignatureQuery is `textDocument/signatureHelp` after the `(` (one signature read
whole, else unknown). Answers are cached under (kind, overlay stamp, key); a late answer is cached
when it lands. A server that exits, hangs or floods fails its questions open and is restarted at
the next question after a backoff (`restart_backoff_s`, doubled with each failure in a row up to
`max_backoff_s`; a question meanwhile fails open at once): every wait on it is bounded by `hang_s`
— initialize, the prewarm's didOpen, a question, and the wait for the document lock — and an
operation that outlives it kills the process; a flood (lsp_guard.py: too many messages or bytes
with no answer) kills it at once. `health()` says whether questions are failing open now and why
(health.py: `/health`, the LSP server's messages). `close()` sends shutdown/exit, then kills the
process: nothing is left; a question asked after it fails open at once.
The protocol runs on one asyncio loop in a daemon thread; tickets are that loop's futures.
Not here: which servers exist and how they are installed (lsp_servers.py).
Test: tests/test_lsp_analyzer.py.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
import time
from collections import OrderedDict
from pathlib import Path

from . import working
from .base import Analysis, Answered, Overlay, SignatureAnswer, SignatureQuery, query_key
from .lsp_messages import OBJECT_MEMBERS, edit, language_id, members, served, signature, utf16

_NO_OVERLAY = Overlay()


class ServerHung(RuntimeError):
    """A question outlived `hang_s` (not a ticket's timeout: the server was killed)."""


class ServerDown(RuntimeError):
    """The server failed and waits for its restart backoff, or the analyzer is closed."""


def _ignored(params) -> None:
    """A server's log lines and progress, its capability registrations: not needed here
    (pygls would print each one, or answer "unknown method")."""
    return None


class LspAnalyzer:
    def __init__(self, repo, server: str = "ty", deadline_s: float = 2.0, cold_deadline_s: float = 10.0,
                 hide_private: bool = False, hide_dunder: bool = True, cache_size: int = 4096,
                 command: list[str] | None = None, restart_backoff_s: float = 1.0, hang_s: float = 30.0,
                 paths=None, max_backoff_s: float = 60.0):
        from . import lsp_servers
        self.repo = Path(repo).resolve()
        self.server = self.name = server
        self.cmd = list(command) if command else lsp_servers.command(server)   # missing: an error now
        from ..trust import search_paths           # library directories, read as files (a named
        self.paths = tuple(paths) if paths is not None else search_paths(self.repo)   # interpreter's, or the venv's)
        self._launch = lsp_servers.Launch(server, self.repo, self.paths, server in lsp_servers.SERVERS and not command)
        self._incremental = False                 # the server takes ranged didChange events
        self.deadline_s = deadline_s
        self.cold_deadline_s = max(cold_deadline_s, deadline_s)
        self.hide_private, self.hide_dunder = hide_private, hide_dunder
        self.restart_backoff_s = restart_backoff_s
        self.hang_s = hang_s                      # a question this old means a hung server
        self.flood_limits: dict = {}             # lsp_guard.Meter's, when not its defaults
        from .health import Health
        self.health_state = Health(server, self.repo, restart_backoff_s, max_backoff_s)
        # a server that marks every list incomplete (ty: auto-import candidates may follow as
        # the user types) while its members after a dot are all there (lsp_servers.py)
        spec = lsp_servers.SERVERS.get(server)   # None: a command the caller gave (a test's server)
        self.complete_members = spec.complete_members if spec else False
        self.languages = spec.languages if spec else None       # the buffers it is sent (served)
        self._warm = False
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._client = None
        self._spawned = None                      # the last client started (answering or not)
        self._docs: dict[str, tuple[int, str]] = {}     # uri -> (version, text) the server has
        self._started_at = 0.0
        self._closed = False
        self.calls = self.timeouts = self.errors = self.restarts = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"groundcode-lsp-{server}", daemon=True)
        self._thread.start()
        self._start_lock = None                           # asyncio.Locks, made on the loop
        self._doc_lock = None

    # -- the interface --------------------------------------------------------------------------
    def deadline(self) -> float:
        return self.deadline_s if self._warm else self.cold_deadline_s

    def ask(self, query):
        if isinstance(query, SignatureQuery):
            return self._ask_signature(query)
        kind, key = query_key(query, "LspAnalyzer")
        overlay = query.at.overlay or _NO_OVERLAY
        full = (kind, overlay.stamp, *key)
        with self._lock:
            hit = self._cache.get(full)
            if hit is not None:
                self._cache.move_to_end(full)
                return Answered(Analysis(query.receiver if kind == "members" else "", hit.names, 0.0, True,
                                         hit.failed, hit.kinds, hit.hidden))
            self.calls += 1
        receiver = query.receiver if kind == "members" else ""
        if self._closed:                          # evicted or closed: fail open now, never hang
            return Answered(Analysis(receiver, frozenset(), 0.0, False, f"error: {self.server} is closed"))
        fut = asyncio.run_coroutine_threadsafe(self._complete(query.at, kind == "members"), self._loop)
        t0 = time.perf_counter()
        fut.add_done_callback(lambda f: self._landed(f, full, receiver, t0, getattr(query, "prefetch", False)))
        return LspTicket(self, fut, receiver, t0)

    def prewarm(self, at) -> None:
        """Start the server and open the file, off the clock."""
        if not self._closed:
            asyncio.run_coroutine_threadsafe(self._prewarm(at), self._loop)

    async def _prewarm(self, at) -> None:
        try:                                      # bounded like a question (a server hung at
            await self._asked(lambda: self._open(at), "initialize and didOpen")   # initialize:
        except Exception:                         # noqa: BLE001 (killed; the failure is in health)
            pass

    def health(self) -> dict:
        """`{"status": "ok" | "degraded", "reason", ...}`: degraded while questions fail open
        (health.py)."""
        return self.health_state.report(self.deadline())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=5)
        except Exception:          # noqa: BLE001 (a hung server: killed below)
            pass
        self._kill()
        try:
            asyncio.run_coroutine_threadsafe(self._cancel_rest(), self._loop).result(timeout=2)
        except Exception:          # noqa: BLE001
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._launch.close()                      # its private working directory, removed

    def __enter__(self) -> "LspAnalyzer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        c = self._spawned
        proc = getattr(c, "_server", None) if c is not None else None
        return proc.pid if proc is not None and proc.returncode is None else None

    # -- the server (on the loop) ---------------------------------------------------------------
    async def _ensure(self):
        c = self._client
        proc = getattr(c, "_server", None) if c is not None else None
        if c is not None and proc is not None and proc.returncode is None:
            return c
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            c = self._client
            proc = getattr(c, "_server", None) if c is not None else None
            if c is not None and proc is not None and proc.returncode is None:
                return c
            if self._closed:
                raise ServerDown(f"{self.server} is closed")
            if self._spawned is not None:         # it died, hung or flooded: restart after the
                wait = self.health_state.backoff_left()        # backoff; until then fail open
                if wait > 0:
                    raise ServerDown(f"{self.server}: {self.health_state.reason}; restarting in {wait:.1f} s")
                self.restarts += 1
                self._warm = False                # the cold deadline again, for the new process
                await self._discard()
            try:
                return await self._start()
            except (asyncio.TimeoutError, asyncio.CancelledError):
                raise                             # _asked kills it and says why
            except Exception as exc:              # could not start (or exited at initialize)
                self._fail(self._spawned, f"could not start: {type(exc).__name__}: {exc}"[:200])
                self._kill()
                raise

    async def _start(self):
        from lsprotocol import types as T

        from .lsp_guard import GuardedClient
        c = GuardedClient("groundcode", "1", on_flood=lambda why: self._flooded(c, why),
                          on_exit=lambda code: self._exited(c, code), limits=self.flood_limits)
        # the notebook part of a server's capabilities (ty sends a selector lsprotocol's converter
        # cannot structure) is of no use here: not structured at all
        c.protocol._converter.register_structure_hook(T.NotebookDocumentSyncOptions, lambda obj, _: None)

        @c.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diagnostics(params):            # not asked for, not needed: ignored quietly
            return None

        for method in (T.WINDOW_LOG_MESSAGE, T.WINDOW_SHOW_MESSAGE, T.PROGRESS,    # notifications,
                       T.CLIENT_REGISTER_CAPABILITY, T.WINDOW_WORK_DONE_PROGRESS_CREATE):  # requests: ok
            c.feature(method)(_ignored)

        c.feature(T.WORKSPACE_CONFIGURATION)(   # pyright, pyrefly ask: groundcode's answers (lsp_servers)
            lambda params: [self._launch.answer(item.section) for item in params.items])
        self._started_at = time.monotonic()
        await c.start_io(self.cmd[0], *self.cmd[1:], cwd=str(self._launch.cwd), env=self._launch.env)
        self._spawned = c                         # killed by close() even if it never answers
        caps = T.ClientCapabilities(
            text_document=T.TextDocumentClientCapabilities(
                completion=T.CompletionClientCapabilities(
                    completion_item=T.ClientCompletionItemOptions(snippet_support=False,
                                                                  commit_characters_support=True),
                    completion_list=T.CompletionListCapabilities(item_defaults=["commitCharacters"])),
                synchronization=T.TextDocumentSyncClientCapabilities(),
                signature_help=T.SignatureHelpClientCapabilities(
                    signature_information=T.ClientSignatureInformationOptions(
                        parameter_information=T.ClientSignatureParameterInformationOptions(
                            label_offset_support=True)))),
            workspace=T.WorkspaceClientCapabilities(configuration=True, workspace_folders=True))
        res = await c.initialize_async(T.InitializeParams(
            capabilities=caps, process_id=None, root_uri=self.repo.as_uri(),
            initialization_options=self._launch.init_options,
            workspace_folders=[T.WorkspaceFolder(uri=self.repo.as_uri(), name=self.repo.name)]))
        sync = getattr(res, "capabilities", None) and res.capabilities.text_document_sync
        change = sync.change if isinstance(sync, T.TextDocumentSyncOptions) else sync
        self._incremental = change == T.TextDocumentSyncKind.Incremental
        c.initialized(T.InitializedParams())
        self._client, self._docs = c, {}
        self.health_state.busy("didOpen and a question")    # initialize is done: what runs now
        return c

    async def _cancel_rest(self) -> None:
        """The client's reader and exit watcher, the log drain: cancelled and let finish, and
        the process's pipes closed, so the loop stops with nothing pending or left to close."""
        proc = getattr(self._spawned, "_server", None)
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    async def _discard(self) -> None:
        c, self._client = self._client, None
        if c is not None:
            try:
                await asyncio.wait_for(c.stop(), 2)
            except Exception:                     # noqa: BLE001
                pass

    async def _stop(self) -> None:
        c = self._client
        if c is None:
            return
        try:
            await asyncio.wait_for(c.shutdown_async(None), 2)
            c.exit(None)
        except Exception:                         # noqa: BLE001 (exited, hung: killed after)
            pass
        await self._discard()

    def _kill(self) -> None:
        """Kill the process started last; the next question starts a new one (after the
        backoff). Its client's tasks end with the pipes (stopped in the background)."""
        c = self._spawned
        proc = getattr(c, "_server", None) if c is not None else None
        if c is not None:
            c._gc_killed = True                   # our doing: not reported again as a crash
        if self._client is c:
            self._client = None
        for p in [proc]:
            if p is not None and p.returncode is None:
                try:
                    p.kill()
                except ProcessLookupError:
                    pass

    def _fail(self, c, reason: str) -> None:
        """One failure per process (a flood, a hang, a crash, a start that failed)."""
        if self._closed or (c is not None and getattr(c, "_gc_failed", False)):
            return
        if c is not None:
            c._gc_failed = True
        self.health_state.failed(reason)

    def _flooded(self, c, why: str) -> None:
        """The meter's verdict (lsp_guard.py), on the loop: the process is killed now."""
        if c is self._spawned:
            self._fail(c, f"{why}: killed")
            self._kill()

    def _exited(self, c, code) -> None:
        """The process exited: a crash unless we killed it (or closed the analyzer)."""
        if self._client is c:
            self._client = None
        if not getattr(c, "_gc_killed", False) and c is self._spawned:
            why = c.last_words()                  # its stderr's last error line (lsp_guard.py)
            self._fail(c, f"exited with code {code}" + (f": {why}" if why else ""))

    async def _sync(self, c, path: str, text: str) -> str:
        from lsprotocol import types as T
        uri = Path(path).resolve().as_uri()
        have = self._docs.get(uri)
        if have is None:
            c.text_document_did_open(T.DidOpenTextDocumentParams(
                T.TextDocumentItem(uri=uri, language_id=language_id(path), version=1, text=text)))
            self._docs[uri] = (1, text)
        elif have[1] != text:
            v = have[0] + 1
            c.text_document_did_change(T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=v),
                content_changes=[edit(have[1], text) if self._incremental
                                 else T.TextDocumentContentChangeWholeDocument(text=text)]))
            self._docs[uri] = (v, text)
        return uri

    async def _open(self, at):
        """Sync the question's file and the workspace's open buffers; close every other document
        the server holds from an earlier question, so it reads those files from disk again: a
        splice left open (a line cut at `obj.`) would otherwise stand in for its file in every
        later answer — TypeScript then lost the members a class declares after the cut when
        asked from another file (the audit's false blocks on @tanstack/query-core)."""
        from lsprotocol import types as T
        c = await self._ensure()
        files = served((at.overlay or _NO_OVERLAY).files, self.languages) + [(str(at.path), at.code)]
        keep = {Path(p).resolve().as_uri() for p, _ in files}
        for uri in [u for u in self._docs if u not in keep]:
            c.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri=uri)))
            del self._docs[uri]
        uri = None
        for p, t in files:
            uri = await self._sync(c, p, t)
        return c, uri

    async def _asked(self, work, what: str = "a question"):
        """One question, answered once here. The document is synced and asked under its lock,
        so no other question's text replaces it before the server answers (a completion
        answered against another splice's text is wrong or empty). Both waits are bounded by
        `hang_s`: the lock's (its holder is bounded itself: nothing is killed) and the work's
        (start, initialize, didOpen, the answer: past it the process is killed)."""
        if self._doc_lock is None:
            self._doc_lock = asyncio.Lock()
        try:
            await asyncio.wait_for(self._doc_lock.acquire(), self.hang_s)
        except asyncio.TimeoutError:
            raise ServerDown(f"{self.server} is busy: waited {self.hang_s:g} s for an earlier question") from None
        health = self.health_state
        working.started()
        try:
            health.busy("initialize" if self._client is None else what)
            out = await asyncio.wait_for(work(), self.hang_s)
            if what == "a question":
                health.answered()
            return out
        except asyncio.TimeoutError:          # hung: killed, restarted at the next question
            phase = "initialize" if self._client is None else what
            self._fail(self._spawned, f"no answer to {phase} in {self.hang_s:g} s: killed")
            self._kill()
            raise ServerHung(f"{self.server} gave no answer in {self.hang_s:g} s: restarted") from None
        finally:
            working.ended()
            health.idle()
            self._doc_lock.release()

    async def _complete(self, at, after_dot: bool):
        return await self._asked(lambda: self._complete_now(at, after_dot))

    def _ask_signature(self, query):
        """textDocument/signatureHelp right after the `(`: a CallSignature when the server shows
        exactly one signature that reads whole, else unknown (the keyword guide stays open)."""
        fut = asyncio.run_coroutine_threadsafe(self._asked(lambda: self._signature_now(query.at)), self._loop)
        return SignatureTicket(self, fut, time.perf_counter())

    async def _signature_now(self, at):
        from lsprotocol import types as T
        c, uri = await self._open(at)
        res = await c.text_document_signature_help_async(T.SignatureHelpParams(
            text_document=T.TextDocumentIdentifier(uri=uri), position=self._position(at),
            context=T.SignatureHelpContext(trigger_kind=T.SignatureHelpTriggerKind.TriggerCharacter,
                                           trigger_character="(", is_retrigger=False)))
        return signature(res, typescript=self.server == "typescript")

    @staticmethod
    def _position(at):
        from lsprotocol import types as T
        from ..lines import line_text           # the LSP's breaks (\r\n, \r, \n): the Splice's
        return T.Position(line=at.line - 1, character=utf16(line_text(at.code, at.line), at.column))

    async def _complete_now(self, at, after_dot: bool):
        from lsprotocol import types as T
        c, uri = await self._open(at)
        ctx = T.CompletionContext(trigger_kind=T.CompletionTriggerKind.TriggerCharacter, trigger_character=".") \
            if after_dot else T.CompletionContext(trigger_kind=T.CompletionTriggerKind.Invoked)
        res = await c.text_document_completion_async(T.CompletionParams(
            text_document=T.TextDocumentIdentifier(uri=uri), position=self._position(at), context=ctx))
        python = language_id(at.path) == "python"
        return members(res, after_dot, self.complete_members, dunders=python, object_members=not python)

    # -- answers ----------------------------------------------------------------------------------
    def _hidden(self, names) -> frozenset:
        # TypeScript's Object.prototype members: legal when written, never steered to (as dunders)
        always = OBJECT_MEMBERS & names if self.server == "typescript" else frozenset()
        if not self.hide_private:
            return always
        return always | frozenset(n for n in names if n.startswith("_") and not (n.startswith("__") and n.endswith("__")))

    def _landed(self, fut, full: tuple, receiver: str, t0: float, prefetch: bool) -> None:
        try:
            names, kinds, failed = fut.result()
        except Exception:                         # noqa: BLE001 (a crash: not cached)
            return
        if prefetch and failed is not None:
            return
        self._warm = True
        with self._lock:
            self._cache[full] = Analysis(receiver, names, (time.perf_counter() - t0) * 1e3, False, failed,
                                         kinds, self._hidden(names))
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


class LspTicket:
    """A running completion request: `result(timeout)` is its Analysis, or None while it runs;
    a server that failed or exited fails open ("error: ...")."""

    __slots__ = ("_owner", "_fut", "_receiver", "_t0", "_answer")

    def __init__(self, owner: LspAnalyzer, fut, receiver: str, t0: float):
        self._owner, self._fut, self._receiver, self._t0, self._answer = owner, fut, receiver, t0, None

    def result(self, timeout: float | None = 0) -> Analysis | None:
        if self._answer is not None:
            return self._answer
        owner = self._owner
        try:
            if timeout == 0 and not self._fut.done():
                return None
            names, kinds, failed = self._fut.result(timeout=timeout)
            owner._warm = True
        except cf.TimeoutError:
            owner.timeouts += 1
            return None
        except Exception as exc:                  # noqa: BLE001 (never kills generation)
            owner.errors += 1
            names, kinds, failed = frozenset(), {}, f"error: {type(exc).__name__}: {exc}"[:200]
        self._answer = Analysis(self._receiver, names, (time.perf_counter() - self._t0) * 1e3, False, failed,
                                kinds, owner._hidden(names))
        return self._answer


class SignatureTicket:
    """A running signatureHelp: `result(timeout)` is a SignatureAnswer (signature None: unknown,
    or the server failed), or None while it runs."""

    __slots__ = ("_owner", "_fut", "_t0", "_answer")

    def __init__(self, owner: LspAnalyzer, fut, t0: float):
        self._owner, self._fut, self._t0, self._answer = owner, fut, t0, None

    def result(self, timeout: float | None = 0) -> SignatureAnswer | None:
        if self._answer is not None:
            return self._answer
        try:
            if timeout == 0 and not self._fut.done():
                return None
            sig, failed = self._fut.result(timeout=timeout), None
        except cf.TimeoutError:
            self._owner.timeouts += 1
            return None
        except Exception as exc:                  # noqa: BLE001 (never kills generation)
            self._owner.errors += 1
            sig, failed = None, f"error: {type(exc).__name__}: {exc}"[:200]
        ms = (time.perf_counter() - self._t0) * 1e3
        self._answer = SignatureAnswer(sig, ms, failed if failed else (None if sig else "unknown"))
        return self._answer
