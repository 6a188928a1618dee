"""The LSP server's engine side, free of any LSP library: editor buffers into a Workspace,
completion requests into Session requests, one live request per document.

    c = Completer(load=lambda: Generator("tiny"), roots=[repo], debounce_s=0.05)
    c.start([...], trust=None, python=None)    # initialize: the folders the editor named, its
                                               # options ({"trust": true} trusts those folders)
    c.set_roots([...])                         # the editor's workspace folders (later ones: untrusted)
    c.trusted_roots                            # the roots whose own venv may run (trust.py)
    c.open(path, text) / c.change(path, text) / c.close(path)   # the buffer overlay
    ans = await c.complete(path, line0, character, "utf-16")    # Answer, or None (superseded)
    c.close_all()

A newer request on the same document cancels the older one (its Session stream is cancelled,
waits included) and the older one answers None; a request cancelled by the client
($/cancelRequest: its asyncio task is cancelled) cancels its stream too. Requests wait
`debounce_s` before starting, so a burst of keystrokes starts one generation. The model loads
in a thread at start; the first request waits for it.

Trust is per root, never inherited: `trust=True` (`lsp --trust`) trusts the roots given here and
the folders the editor names at initialize; `{"trust": true}` trusts the folders named at
initialize. A folder added later (didChangeWorkspaceFolders) or the repository of a file opened
outside every root (`_ensure`) is untrusted unless the user's list names it (`groundcode trust`).

Not here: the protocol and its types (lsp.py), text rules (lsp_text.py), decoding (session.py).
Tested by tests/test_lsp_server.py (through pygls and pytest-lsp) and tests/test_lsp_nvim.py.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import itertools
import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..config import SamplingConfig
from ..errors import GroundcodeError
from . import lsp_text

from ..lines import LINE_BREAK as _LINE_BREAK   # LSP's line breaks (str.splitlines knows more)
from ..lines import offset


@dataclass
class Answer:
    text: str                     # what to insert at the cursor ("" = nothing worth showing)
    line: int                     # 0-based line of the cursor
    index: int                    # Python index of the cursor in that line
    word_start: int               # Python index where the identifier at the cursor starts
    line_text: str                # the line (no break)
    grounded: list = field(default_factory=list)   # lsp_text.grounded(generation)
    finish_reason: str = ""
    stop: str = ""                # the boundary asked for: statement | block | line
    timings: dict = field(default_factory=dict)
    start: int | None = None      # where `text` starts when not at the cursor (a selected item)


class Completer:
    def __init__(self, load, roots=(), *, max_new_tokens: int = 64, debounce_s: float = 0.05,
                 deadline_s: float | None = 30.0, stop: str = "auto", python=None, trust: bool = False):
        if stop not in ("auto", "line", "statement", "block"):
            raise GroundcodeError(f"stop must be auto, line, statement or block, got {stop!r}")
        if debounce_s < 0:
            raise GroundcodeError(f"debounce must be >= 0, got {debounce_s}")
        self.max_new_tokens, self.debounce_s, self.deadline_s, self.stop = \
            max_new_tokens, debounce_s, deadline_s, stop
        self.python = python              # the environment Jedi sees (Workspace(python=))
        self.trust = bool(trust)          # --trust: the roots named at start and at initialize
        self._trusted: set[Path] = set()  # the roots trusted here (the user's list aside)
        self._named: set[Path] = set()    # the roots given at start and named at initialize
        self._roots: list[Path] = []
        self._buffers: dict[Path, str] = {}
        self._ws = None
        self._seq = itertools.count(1)
        self._latest: dict[Path, int] = {}      # document -> the newest request's number
        self._live: dict[Path, object] = {}     # document -> its running Session stream
        self._lock = threading.Lock()
        self._ready: cf.Future = cf.Future()
        threading.Thread(target=self._load, args=(load,), name="groundcode-lsp-load",
                         daemon=True).start()
        self.set_roots(roots)
        self._named = set(self._roots)
        if self.trust:
            self._trust(self._roots)

    # -- the model ----------------------------------------------------------------------------
    def _load(self, load) -> None:
        try:
            self._ready.set_result(load())
        except BaseException as exc:   # a missing model is each request's error, and logged
            logging.getLogger("groundcode.lsp").error("could not load the model: %s", exc)
            self._ready.set_exception(exc)

    def on_loaded(self, fn) -> None:
        """Call `fn(future)` once the model has loaded or failed to (at once if it has)."""
        self._ready.add_done_callback(fn)

    def generator(self, timeout: float | None = None):
        """The Generator once loaded (GroundcodeError if loading failed)."""
        try:
            return self._ready.result(timeout)
        except GroundcodeError:
            raise
        except cf.TimeoutError:
            raise GroundcodeError("the model is still loading") from None
        except Exception as exc:
            raise GroundcodeError(f"could not load the model: {exc}".splitlines()[0]) from None

    # -- workspace and buffers ----------------------------------------------------------------
    @property
    def roots(self) -> list[Path]:
        return list(self._roots)

    @property
    def trusted_roots(self) -> list[Path]:
        """The roots whose own venv may run: trusted here or on the user's list."""
        with self._lock:
            ws = self._ws
        return ws.trusted_roots() if ws is not None else []

    def health(self) -> dict:
        """The LSP's /health (`groundcode.health`): the roots, the trusted ones (trust is per
        root), and the analyzers running once the model has loaded."""
        out = {"roots": [str(r) for r in self.roots], "trusted": [str(r) for r in self.trusted_roots],
               "model_loaded": self._ready.done() and self._ready.exception() is None}
        if out["model_loaded"]:
            out["analyzers"] = [{"name": n, "root": str(r), "pid": p}
                                for n, r, p in self._ready.result().running_analyzers()]
        return out

    def _trust(self, roots) -> None:
        with self._lock:
            self._trusted |= {Path(r).resolve() for r in roots}
        self.set_roots(self._roots)

    def start(self, roots, trust: bool | None = None, python=None) -> None:
        """initialize: the folders the editor named become roots; they are trusted when the
        editor says so (`trust`) or `--trust` was given. Nothing else is trusted by this."""
        self.set_roots(self._roots + [Path(r) for r in roots])
        named = [Path(r).resolve() for r in roots]
        self._named |= set(named)
        try:
            self.configure(None, python)
        finally:
            if trust or (trust is None and self.trust):
                self._trust(named)
            elif trust is False:
                with self._lock:
                    self._trusted -= set(named)
                self.set_roots(self._roots)

    def configure(self, trust: bool | None = None, python=None) -> None:
        """The editor's initialization options: trust the roots named at start and at
        initialize (never one added later, nor a file's repository), name the interpreter."""
        if python:
            if not Path(python).expanduser().exists():
                raise GroundcodeError(f"python: no such interpreter or environment: {python}")
            self.python = python
        if trust:
            self._trust([r for r in self._roots if r in self._named])
            return
        if trust is False:
            with self._lock:
                self._trusted.clear()
        self.set_roots(self._roots)

    def set_roots(self, roots) -> None:
        """The analyzer roots (the editor's workspace folders); open buffers carry over."""
        from ..workspace import Workspace
        uniq: list[Path] = []
        for r in roots:
            p = Path(r).resolve()
            if p.is_dir() and p not in uniq:
                uniq.append(p)
        with self._lock:
            self._roots = uniq
            self._trusted &= set(uniq)             # a folder removed and added again: untrusted
            self._ws = Workspace(uniq, self.python, self._trusted) if uniq else None
            for path, text in self._buffers.items():
                self._ws_call("open", path, text)

    def _ensure(self, path: Path):
        """The workspace, with a root around `path`: a file outside every root gets its
        repository as one (an editor may open any file; the analyzer needs a project), never
        trusted by this (only the roots in `_trusted` are, and the user's list)."""
        if self._ws is not None:
            try:
                self._ws.resolve(path)
                return self._ws
            except GroundcodeError:
                pass
        from ..repo import find_repo_root
        from ..workspace import Workspace
        self._roots.append(Path(find_repo_root(path)).resolve())
        self._ws = Workspace(self._roots, self.python, self._trusted)
        for p, t in self._buffers.items():
            if p != path:
                self._ws.open(p, t)
        return self._ws

    def _ws_call(self, what: str, path: Path, text: str | None = None) -> None:
        ws = self._ensure(path)
        if what == "close":
            ws.close(path)
        elif what == "open":
            ws.open(path, text)
        else:
            ws.change(path, text)

    def open(self, path, text: str) -> None:
        path = Path(path).resolve()
        with self._lock:
            self._buffers[path] = text
            self._ws_call("open", path, text)
        self._prewarm(path, text)

    def change(self, path, text: str) -> None:
        path = Path(path).resolve()
        with self._lock:
            first = path not in self._buffers
            self._buffers[path] = text
            self._ws_call("open" if first else "change", path, text)
        if first:
            self._prewarm(path, text)

    def close(self, path) -> None:
        path = Path(path).resolve()
        with self._lock:
            if self._buffers.pop(path, None) is not None:
                self._ws_call("close", path)
            stream = self._live.pop(path, None)
        if stream is not None:
            stream.cancel()

    def text(self, path) -> str:
        """The buffer if the editor opened it, else the file on disk."""
        path = Path(path).resolve()
        with self._lock:
            return self._ensure(path).text(path)

    def _prewarm(self, path: Path, text: str) -> None:
        """Jedi's cold start (0.3-2 s) happens when a file opens, not in the first request."""
        def go(fut):
            if fut.exception() is not None:
                return
            gen = fut.result()
            if not (gen.monitor.enabled or gen.tools.enabled):
                return
            try:
                with self._lock:
                    ctx = self._ensure(path).cursor(path, 1, 0)
                gen.prewarm(ctx)               # the generator's own (analyzer + mask kernel)
            except Exception:      # a warm-up only: the request will say what is wrong
                pass
        self._ready.add_done_callback(go)

    # -- requests -----------------------------------------------------------------------------
    async def complete(self, path, line: int, character: int, encoding: str = "utf-16",
                       selected: tuple[int, str] | None = None) -> Answer | None:
        """A completion at LSP position (line, character) of `path`'s buffer; None when a newer
        request on the document superseded this one, or the client cancelled it. `selected`:
        (start character, text) of the item the editor's suggest widget has selected, which
        replaces the line from there to the cursor (LSP 3.18 selectedCompletionInfo): the
        answer continues that item and starts with it (an editor shows ghost text beside an
        open suggest widget only when it extends the selected item)."""
        from ..session import Request
        path = Path(path).resolve()
        seq = next(self._seq)
        with self._lock:
            self._latest[path] = seq
            older = self._live.pop(path, None)
        if older is not None:
            older.cancel()
        if self.debounce_s:
            await asyncio.sleep(self.debounce_s)
            if self._latest.get(path) != seq:
                return None
        while not self._ready.done():     # the model is loading (polled: a cancelled wait
            await asyncio.sleep(0.05)     # must not cancel the load's future)
        gen = self.generator()
        if self._latest.get(path) != seq:
            return None
        text = self.text(path)
        lines = _LINE_BREAK.split(text)
        if not 0 <= line < len(lines):
            raise GroundcodeError(f"{path.name}: line {line} is outside the buffer (0..{len(lines) - 1}, 0-based)")
        cur = lines[line]
        index = lsp_text.to_index(cur, character, encoding)
        start, forced, at = index, "", index
        if selected is not None:          # the buffer as if the selected item were accepted
            start = min(index, lsp_text.to_index(cur, selected[0], encoding))
            forced, cur = selected[1], cur[:start] + selected[1] + cur[index:]
            base = offset(text, line + 1, 0)
            text = text[:base + start] + forced + text[base + index:]
            index = start + len(forced)
        head = cur[:index]
        stop = lsp_text.stop_for(head) if self.stop == "auto" else self.stop
        with self._lock:
            ctx = self._ensure(path).cursor(path, line + 1, index, text=text if forced else None)
        req = Request(context=ctx, sampling=SamplingConfig(max_new_tokens=self.max_new_tokens, stop=stop),
                      deadline_s=self.deadline_s)
        stream = gen.session.submit(req)
        with self._lock:
            if self._latest.get(path) != seq:       # superseded while this one set up
                stream.cancel()
                return None
            self._live[path] = stream
        result = None

        async def read():
            nonlocal result
            async for u in stream.aiter():
                if u.kind == "done":
                    result = u.result
                elif u.kind == "error":
                    raise GroundcodeError(u.error)
        try:       # the session ends the request by its deadline; one that stalls, by + 1 s here
            await asyncio.wait_for(read(), None if self.deadline_s is None else self.deadline_s + 1.0)
        except asyncio.TimeoutError:
            logging.getLogger("groundcode.lsp").warning(
                "no answer by the request's deadline (%.1f s): no item", self.deadline_s)
            return None
        finally:
            with self._lock:
                if self._live.get(path) is stream:
                    del self._live[path]
            if not stream.closed:
                stream.cancel()          # the client cancelled this task ($/cancelRequest)
        if result is None or self._latest.get(path) != seq or result.finish_reason == "cancelled":
            return None
        info = lsp_text.grounded(result)
        chosen = [g["chosen"] for g in info if g["chosen"]]
        insert = lsp_text.shape(result.completion, result.finish_reason, cur[index:], chosen, head)
        if forced:               # back to the buffer's own line: the item, then what follows it
            cur, index, insert = lines[line], at, forced + insert
        m = re.search(r"[A-Za-z_0-9]*$", cur[:index])
        return Answer(insert, line, index, m.start(), cur, info, result.finish_reason, stop,
                      dict(result.timings or {}), start if forced else None)

    def analysis_news(self) -> tuple[str, bool] | None:
        """(a line for the editor, degraded?) when the set of failing analyzers changed since
        the last call (analysis/health.py: hung, flooding, crashing, restarting), else None."""
        if not self._ready.done() or self._ready.exception() is not None:
            return None
        bad = {(a["name"], a["root"]): a["reason"] for a in self._ready.result().analyzer_report()
               if a["status"] != "ok"}
        if set(bad) == getattr(self, "_degraded", set()):
            return None
        self._degraded = set(bad)
        if not bad:
            return "groundcode: the analyzers answer again; completions are grounded", False
        return "groundcode: " + "; ".join(f"analyzer {n} ({root}) is failing: {why}" for (n, root), why in
                                          sorted(bad.items())) + " (completions are not grounded meanwhile)", True

    def close_all(self) -> None:
        with self._lock:
            live = list(self._live.values())
            self._live.clear()
        for s in live:
            s.cancel()
        if self._ready.done() and self._ready.exception() is None:
            self._ready.result().close()
