"""Which workspace file a text-only request is about: Continue, llama.vim and llama.vscode send
the text around the cursor, never a path. Grounding needs the file (the analyzer reads it, with
everything after the cursor), so the server finds it from the text.

    loc = Locator(roots)
    found = loc.locate(prefix, suffix, buffers={path: text})   # Located, or a str saying why not
    found.path, found.text, found.line, found.column           # the analyzer's whole file

How: an index of the workspace's source files (their distinct stripped lines of 8+ characters,
kept fresh by size and mtime, rescanned at most every RESCAN_S; open buffers replace their disk
copies) scores each file by how many of the prompt's last and the suffix's first distinctive
lines it holds. The best file must hold at least MIN_HITS of them and more than the runner-up
(else "ambiguous" / "no workspace file matches": the request decodes plain and says so).
The analyzer's text is the file's lines before the prompt's first lines (a client that sends a
window, as llama.vim does) + prompt + suffix + the file's lines after the suffix's last lines,
so the analyzer sees the user's unsaved edits inside the window and the rest of the file around
them. Read only; bounded: MAX_FILES files of at most MAX_FILE_BYTES, no dot or VCS directories.
Test: tests/test_locate.py.
"""
from __future__ import annotations

import itertools
import os
import stat
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..lines import end_position, split_lines
from .guard import SOURCE_SUFFIXES

SKIP_DIRS = {"node_modules", "venv", "env", "__pycache__", "site-packages", "build", "dist"}
MAX_FILES = 5000
MAX_FILE_BYTES = 2 << 20
RESCAN_S = 5.0
PROBES = 12           # distinctive lines taken from each side of the cursor
MIN_HITS = 2
MIN_LINE = 8          # shorter stripped lines (`return`, `else:`) say nothing about the file


@dataclass
class Located:
    path: Path
    text: str            # the analyzer's view of the whole file, with the request's text in it
    line: int            # the cursor, 1-based
    column: int
    hits: int


def _key_lines(text: str) -> list[str]:
    return [ln.strip() for ln in split_lines(text) if len(ln.strip()) >= MIN_LINE]


class Locator:
    def __init__(self, roots):
        self.roots = [Path(r) for r in roots]
        self._files: dict[Path, tuple] = {}      # path -> (mtime, size, frozenset of key lines)
        self._scanned = 0.0
        self._lock = threading.Lock()

    # -- the index ------------------------------------------------------------------------------
    def _walk(self):
        n = 0
        for root in self.roots:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
                for f in sorted(filenames):
                    if f.endswith(SOURCE_SUFFIXES) and not f.startswith("."):
                        yield Path(dirpath) / f
                        n += 1
                        if n >= MAX_FILES:
                            return

    def refresh(self, force: bool = False) -> None:
        with self._lock:
            if not force and time.monotonic() - self._scanned < RESCAN_S:
                return
            seen = set()
            for p in self._walk():
                seen.add(p)
                try:
                    st = p.stat()
                except OSError:
                    continue
                old = self._files.get(p)
                if old is not None and old[:2] == (st.st_mtime, st.st_size):
                    continue
                if st.st_size > MAX_FILE_BYTES or not stat.S_ISREG(st.st_mode):
                    continue
                try:
                    text = p.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                self._files[p] = (st.st_mtime, st.st_size, frozenset(_key_lines(text)))
            for p in [p for p in self._files if p not in seen]:
                del self._files[p]
            self._scanned = time.monotonic()

    # -- a request ------------------------------------------------------------------------------
    def locate(self, prefix: str, suffix: str = "", buffers: dict | None = None) -> Located | str:
        """The file the text belongs to (see the module docstring), or why none was chosen."""
        self.refresh()
        buffers = {Path(p).resolve(): t for p, t in (buffers or {}).items()}
        before = _key_lines(prefix)[-PROBES:]
        after = _key_lines(suffix)[:PROBES]
        probes = list(dict.fromkeys(before + after))
        if len(probes) < MIN_HITS:
            return "too little text to tell which workspace file it is"
        with self._lock:
            files = {p: f[2] for p, f in self._files.items()}
        for p, t in buffers.items():
            files[p] = frozenset(_key_lines(t))
        score = Counter({p: sum(1 for ln in probes if ln in lines) for p, lines in files.items()})
        ranked = score.most_common(2)
        if not ranked or ranked[0][1] < MIN_HITS:
            return "no workspace file matches the text"
        if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
            return f"the text matches {ranked[0][0].name} and {ranked[1][0].name} alike"
        path, hits = ranked[0]
        if path in buffers:
            disk = buffers[path]
        else:
            try:
                disk = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                return f"{path.name}: {exc.strerror}"
        text, at = _splice(split_lines(disk, keepends=True), prefix, suffix)
        line, column = end_position(text[:at])
        return Located(path, text, line, column, hits)


def _find(lines: list[str], probe: list[str], start: int = 0) -> int | None:
    """The index in `lines` where the stripped `probe` lines start (in order, blank lines of
    `lines` skipped between them), or None."""
    want = [p for p in probe if p]
    if not want:
        return None
    for i in range(start, len(lines)):
        if lines[i].strip() != want[0]:
            continue
        j, k = i + 1, 1
        while k < len(want) and j < len(lines):
            s = lines[j].strip()
            if s:
                if s != want[k]:
                    break
                k += 1
            j += 1
        if k == len(want):
            return i
    return None


def _splice(file_lines: list[str], prefix: str, suffix: str) -> tuple[str, int]:
    """(the file's lines before the prompt's window + prompt + suffix + the lines after it,
    the cursor's offset in it)."""
    head = [ln.strip() for ln in split_lines(prefix)][:-1]          # complete lines only
    head = [ln for ln in head if ln][:3]
    start = 0
    if head:                # the window's first lines, as many as the file still has (the
        start = next((at for k in range(len(head), 0, -1)          # user may have edited them)
                      if (at := _find(file_lines, head[:k])) is not None), None)
    tail_lines = [ln.strip() for ln in split_lines(suffix)][1:]       # the first is the cursor's
    tail_lines = [ln for ln in tail_lines if ln][-3:]
    end = None
    if tail_lines:
        at = _find(file_lines, tail_lines, start or 0)
        if at is not None:
            k, j = 0, at                                              # past the probe's lines
            while j < len(file_lines) and k < len(tail_lines):
                if file_lines[j].strip():
                    k += 1
                j += 1
            end = j
    before = "".join(file_lines[:start]) if start else ""
    after = "".join(file_lines[end:]) if end is not None else ""
    joined = prefix + suffix
    if after and not joined.endswith(("\n", "\r")):
        joined += "\n"
    return before + joined + after, len(before) + len(prefix)


def some_python_files(root: Path, k: int) -> list[Path]:
    """Up to `k` Python files of `root`, shallow first, skipping hidden and virtualenv folders
    (a bounded walk: a huge workspace must not delay the start)."""
    out = []
    for dirpath, dirnames, filenames in itertools.islice(os.walk(root), 200):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in
                             ("node_modules", "venv", "__pycache__", "site-packages"))
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
        if len(out) >= k:
            break
    return out[:k]
