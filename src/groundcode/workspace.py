"""A workspace: the project roots an editor has open and its unsaved buffers, as the analyzer
must see them.

    ws = Workspace([root, ...], python=None, trust=False)   # roots: analyzer projects; python,
                                                  # trust: what the analyzer may run (trust.py):
                                                  # True trusts these roots, or a set of roots
    ws.trusted(root) -> bool                      # trusted here, or on the user's list
    ws.trusted_roots() -> [Path, ...]             # the roots that are (for /health)
    ws.resolve(path) -> Path                      # absolute, inside a root (symlinks resolved)
    ws.open(path, text) / ws.change(path, text) / ws.close(path)   # editor buffers
    ws.text(path) -> str                          # the buffer if open, else the file on disk
    ws.version -> int                             # bumps on every buffer change
    ctx = ws.cursor(path, line, column, text=None)    # a CodeContext from the buffer (or `text`)
    ctx = ws.function(path, qualname, text=None)

Contexts made here carry the workspace's other open buffers (`ctx.overlay`, an
analysis.base.Overlay with a stamp that changes when one of them does) and the Python
environment; the analyzer reads those buffers instead of the disk when the code it analyses
imports them, and keys its cache by the stamp, so an edit in one buffer is seen by questions
about another. The file being completed is analysed from the context's own text (the buffer),
so its keystrokes do not change the stamp. Files are only ever read. Thread-safe.

Trust is per root (trust.py): a context's `trust` is whether the root that holds its file is
trusted — named in `trust` (a root under a trusted one is too), or on the user's list
(`groundcode trust DIR`). A root added later (another Workspace with more roots) is trusted
only if the caller says so: `trust=True` means the roots given here, never a later one.
Not here: making contexts from text (context.py), reading overlays (analysis/jedi_worker.py).
Test: tests/test_workspace.py.
"""
from __future__ import annotations

import threading
from pathlib import Path

from .analysis.base import Overlay
from .context import CodeContext, cursor_context, function_context
from .errors import GroundcodeError
from .repo import read_source, text_version


class Workspace:
    def __init__(self, roots, python: str | Path | None = None, trust=False):
        roots = [roots] if isinstance(roots, (str, Path)) else list(roots)
        if not roots:
            raise GroundcodeError("a workspace needs at least one root directory")
        self.roots = []
        for r in roots:
            p = Path(r).expanduser().resolve()
            if not p.is_dir():
                raise GroundcodeError(f"workspace root is not a directory: {r}")
            self.roots.append(p)
        self.python = Path(python).expanduser() if python else None
        if isinstance(trust, bool):               # True: the roots given here, and no other
            self.trusted_set = frozenset(self.roots) if trust else frozenset()
        else:
            self.trusted_set = frozenset(Path(t).expanduser().resolve() for t in trust)
        self._buffers: dict[Path, tuple[str, str]] = {}     # path -> (text, its content hash)
        self._version = 0
        self._lock = threading.Lock()

    # -- trust --------------------------------------------------------------------------------
    def trusted(self, root: str | Path) -> bool:
        """`root` lies under a root trusted here, or under one on the user's list."""
        from . import trust
        p = Path(root).expanduser().resolve()
        return any(p == t or p.is_relative_to(t) for t in self.trusted_set) or trust.trusted(p)

    def trusted_roots(self) -> list[Path]:
        return [r for r in self.roots if self.trusted(r)]

    # -- paths --------------------------------------------------------------------------------
    def root_of(self, path: str | Path) -> Path:
        """The (innermost) root that holds `path`."""
        p = self.resolve(path)
        return max((r for r in self.roots if p.is_relative_to(r)), key=lambda r: len(r.parts))

    def resolve(self, path: str | Path) -> Path:
        """`path` made absolute (a relative one is taken from the first root) with symlinks
        resolved; a GroundcodeError when it lies outside every root."""
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.roots[0] / p
        p = p.resolve()
        if not any(p.is_relative_to(r) for r in self.roots):
            raise GroundcodeError(f"{path} is outside the workspace ({', '.join(map(str, self.roots))})")
        return p

    # -- buffers ------------------------------------------------------------------------------
    def open(self, path: str | Path, text: str) -> None:
        self._set(self.resolve(path), text)

    def change(self, path: str | Path, text: str) -> None:
        self._set(self.resolve(path), text)

    def close(self, path: str | Path) -> None:
        p = self.resolve(path)
        with self._lock:
            if self._buffers.pop(p, None) is not None:
                self._version += 1

    def _set(self, p: Path, text: str) -> None:
        if not isinstance(text, str):
            raise GroundcodeError(f"buffer text of {p} must be a str")
        with self._lock:
            old = self._buffers.get(p)
            if old is not None and old[0] == text:
                return
            self._version += 1
            self._buffers[p] = (text, text_version(text))

    def text(self, path: str | Path) -> str:
        p = self.resolve(path)
        with self._lock:
            b = self._buffers.get(p)
        return b[0] if b is not None else read_source(p)

    @property
    def version(self) -> int:
        return self._version

    def overlay(self, exclude: str | Path | None = None) -> Overlay:
        """The open buffers other than `exclude`, with a stamp of their paths and contents (a
        content hash, not a counter: a Workspace rebuilt by the LSP counts from 1 again, and
        the analyzer's cache must not serve an answer made for other text under the same
        number)."""
        skip = self.resolve(exclude) if exclude is not None else None
        with self._lock:
            items = sorted((str(p), t, v) for p, (t, v) in self._buffers.items() if p != skip)
        if not items:
            return Overlay()
        stamp = text_version("\0".join(f"{p}\0{v}" for p, _, v in items))
        return Overlay(stamp, tuple((p, t) for p, t, _ in items))

    # -- contexts -----------------------------------------------------------------------------
    def _dress(self, ctx: CodeContext, p: Path) -> CodeContext:
        ctx.overlay = self.overlay(exclude=p)
        ctx.python = self.python
        root = Path(ctx.repo) if ctx.repo is not None else p
        ctx.trust = any(root == t or root.is_relative_to(t) for t in self.trusted_set)   # (the
        return ctx                                # user's list: trust.environment reads it)

    def cursor(self, path: str | Path, line: int, column: int, text: str | None = None) -> CodeContext:
        """Continue the buffer (or `text`) at (line 1-based, column 0-based)."""
        p = self.resolve(path)
        src = self.text(p) if text is None else text
        return self._dress(cursor_context(p, line, column, self.root_of(p), text=src), p)

    def function(self, path: str | Path, qualname: str, text: str | None = None) -> CodeContext:
        """Write the body of `qualname` in the buffer (or `text`)."""
        p = self.resolve(path)
        src = self.text(p) if text is None else text
        return self._dress(function_context(p, qualname, self.root_of(p), text=src), p)
