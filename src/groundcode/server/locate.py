"""Which workspace file a text-only request is about: Continue, llama.vim and llama.vscode send
the text around the cursor, never a path. Grounding needs the file (the analyzer reads it, with
everything after the cursor), so the server finds it from the text.

    loc = Locator(roots); loc.start()        # the index, built and refreshed on its own thread
    found = loc.locate(prefix, suffix, buffers={path: text}, wait_s=5)   # Located, or a Miss
    found.path, found.text, found.line, found.column   # the analyzer's whole file
    miss.reason, loc.facts()                 # why not (said in the response), the index's state
    loc.close()

The index: the workspace's source files (their distinct stripped lines of 8+ characters), built
at the server's start (`Service.prewarm`, or the first text-only request when prewarm is off) and
refreshed every RESCAN_S by size and mtime on the locator's own thread, never on a request's path
(a request reads the index as it stands; one that comes before the first build ends waits for it
at most `wait_s`, then says the index is still being built). Open buffers replace their disk
copies. Bounded: MAX_FILES files of at most MAX_FILE_BYTES, no dot or VCS directories; past
MAX_FILES the walk goes on counting (names only) and a request whose text matches no indexed file
says so — "the workspace has N source files, the index holds the first 5000" — never silently
plain.

Which file: each file is scored by how many of the prompt's last and the suffix's first
distinctive lines it holds. The best file must hold at least MIN_HITS of them and more than the
runner-up (else "ambiguous" / "no workspace file matches": the request decodes plain and says so).

Where in it (`place`): a client that sends a window (llama.vim: a few dozen lines around the
cursor) is placed where the window fits best, not where its first lines first occur: every
complete line of the prompt votes for the offsets where it occurs in the file (the best offset
holds the most of them, in order), the suffix's lines likewise, after the prompt's (a window whose
first lines also occur earlier in a long file — a second class's `__init__` — lands on its own
class). The analyzer's text is the file's lines before the window + prompt + suffix + the file's
lines after the suffix's last line, so the analyzer sees the user's unsaved edits inside the
window and the rest of the file around them. Lines are lines.py's (\r\n, \r, \n). Read only.
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


MAX_COUNT = 200_000    # past MAX_FILES the walk only counts names, up to this many
MAX_REPEATS = 16       # a line the file holds more often than this does not place a window


@dataclass
class Located:
    path: Path
    text: str            # the analyzer's view of the whole file, with the request's text in it
    line: int            # the cursor, 1-based
    column: int
    hits: int


@dataclass
class Miss:
    """Why a text-only request was not placed in a workspace file (it decodes plain and says so)."""
    reason: str
    capped: bool = False         # the workspace has more source files than the index holds

    def __str__(self) -> str:
        return self.reason


def _key_lines(text: str) -> list[str]:
    return [ln.strip() for ln in split_lines(text) if len(ln.strip()) >= MIN_LINE]


class Locator:
    def __init__(self, roots, rescan_s: float | None = None, max_files: int | None = None):
        self.roots = [Path(r) for r in roots]
        self.rescan_s = RESCAN_S if rescan_s is None else rescan_s
        self.max_files = MAX_FILES if max_files is None else max_files
        self._files: dict[Path, tuple] = {}      # path -> (mtime, size, frozenset of key lines)
        self._lock = threading.Lock()
        self.built = threading.Event()           # the first full walk ended
        self.total = 0                           # source files the last walk saw (capped: counted)
        self.capped = False                      # the last walk stopped indexing at max_files
        self.scans = 0
        self.scan_s = 0.0                        # how long the last walk took
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the index, on its own thread ---------------------------------------------------------
    def start(self) -> "Locator":
        """Build the index now, on the locator's thread, and refresh it every `rescan_s`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="groundcode-locate", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:                     # noqa: BLE001 (a walk that failed: the next one)
                pass
            finally:
                self.built.set()
            self._stop.wait(self.rescan_s)

    def _walk(self):
        """(path, indexed?) of the roots' source files in a sorted walk: the first max_files are
        indexed, the rest only counted (up to MAX_COUNT)."""
        n = 0
        for root in self.roots:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
                for f in sorted(filenames):
                    if f.endswith(SOURCE_SUFFIXES) and not f.startswith("."):
                        n += 1
                        yield Path(dirpath) / f, n <= self.max_files
                        if n >= MAX_COUNT or self._stop.is_set():
                            return

    def refresh(self) -> None:
        """One walk: files new or changed by size and mtime are read again, gone ones dropped.
        Runs on the locator's thread (or a test's); requests only read the result."""
        t0 = time.monotonic()
        seen, total = {}, 0
        for p, indexed in self._walk():
            total += 1
            if not indexed:
                continue
            try:
                st = p.stat()
            except OSError:
                continue
            with self._lock:
                old = self._files.get(p)
            if old is not None and old[:2] == (st.st_mtime, st.st_size):
                seen[p] = old
                continue
            if st.st_size > MAX_FILE_BYTES or not stat.S_ISREG(st.st_mode):
                continue
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            seen[p] = (st.st_mtime, st.st_size, frozenset(_key_lines(text)))
        with self._lock:
            self._files = seen
            self.total, self.capped = total, total > self.max_files
            self.scans += 1
            self.scan_s = time.monotonic() - t0
        self.built.set()

    def facts(self) -> dict:
        """The index's state, for a response's `locate` record and /health."""
        with self._lock:
            return {"indexed": len(self._files), "files": self.total, "capped": self.capped,
                    "limit": self.max_files, "ready": self.built.is_set(), "scans": self.scans,
                    "scan_s": round(self.scan_s, 3)}

    # -- a request ------------------------------------------------------------------------------
    def locate(self, prefix: str, suffix: str = "", buffers: dict | None = None,
               wait_s: float = 0.0) -> Located | Miss:
        """The file the text belongs to (see the module docstring), or why none was chosen.
        Never walks the workspace: before the first build ends it waits at most `wait_s`."""
        if not self.built.is_set() and wait_s > 0:
            self.built.wait(wait_s)
        buffers = {Path(p).resolve(): t for p, t in (buffers or {}).items()}
        before = _key_lines(prefix)[-PROBES:]
        after = _key_lines(suffix)[:PROBES]
        probes = list(dict.fromkeys(before + after))
        if len(probes) < MIN_HITS:
            return Miss("too little text to tell which workspace file it is")
        with self._lock:
            files = {p: f[2] for p, f in self._files.items()}
            ready, capped, total = self.built.is_set(), self.capped, self.total
        for p, t in buffers.items():
            files[p] = frozenset(_key_lines(t))
        score = Counter({p: sum(1 for ln in probes if ln in lines) for p, lines in files.items()})
        ranked = score.most_common(2)
        if not ranked or ranked[0][1] < MIN_HITS:
            if not ready:
                return Miss(f"the workspace index is still being built ({len(files)} files so far) "
                            "and no file indexed yet matches the text")
            if capped:
                return Miss(f"no indexed workspace file matches the text, and the workspace has {total:,}"
                            f"{'+' if total >= MAX_COUNT else ''} source files: the index holds the first "
                            f"{self.max_files:,} (serve a smaller --workspace, or send groundcode.path)",
                            capped=True)
            return Miss("no workspace file matches the text")
        if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
            return Miss(f"the text matches {ranked[0][0].name} and {ranked[1][0].name} alike", capped)
        path, hits = ranked[0]
        if path in buffers:
            disk = buffers[path]
        else:
            try:
                disk = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                return Miss(f"{path.name}: {exc.strerror}")
        text, at = place(split_lines(disk, keepends=True), prefix, suffix)
        line, column = end_position(text[:at])
        return Located(path, text, line, column, hits)


def _votes(file_keys: list[str], window: list[str]) -> Counter:
    """offset -> how many of `window`'s distinctive lines sit at file_keys[offset + k] (k: their
    index in the window). Short lines (`}`, `return`) and lines the file repeats more than
    MAX_REPEATS times do not vote: they say little and would cost a vote per occurrence."""
    where: dict[str, list[int]] = {}
    for j, s in enumerate(file_keys):
        if len(s) >= MIN_LINE:
            where.setdefault(s, []).append(j)
    votes: Counter = Counter()
    for k, s in enumerate(window):
        at = where.get(s, ())
        if len(at) <= MAX_REPEATS:
            for j in at:
                votes[j - k] += 1
    return votes


def place(file_lines: list[str], prefix: str, suffix: str) -> tuple[str, int]:
    """(the file's lines before the prompt's window + prompt + suffix + the lines after it, the
    cursor's offset in it). The window goes where it fits best: the offset (in the file's
    non-blank lines) holding the most of the prompt's complete lines, then the suffix's lines at
    the offset after it holding the most of them; ties go to the nearest fit."""
    keys = [(i, ln.strip()) for i, ln in enumerate(file_lines) if ln.strip()]
    file_keys = [s for _, s in keys]
    head = [ln.strip() for ln in split_lines(prefix)][:-1] if not prefix.endswith(("\n", "\r")) \
        else [ln.strip() for ln in split_lines(prefix)]                   # complete lines only
    head = [ln for ln in head if ln]
    tail = [ln.strip() for ln in split_lines(suffix)][1:]               # the first is the cursor's
    tail = [ln for ln in tail if ln]
    hv = _votes(file_keys, head) if head else Counter()
    tv = _votes(file_keys, tail) if tail else Counter()
    start = end = None
    if hv:
        best = max(hv.values())
        heads = sorted(d for d, v in hv.items() if v == best)
    else:
        heads = []
    if heads:
        choice = None                             # (head votes, tail votes, -gap, -d)
        for d in heads:                           # after the head's last line the file holds
            last = max(k for k in range(len(head)) if 0 <= d + k < len(keys) and file_keys[d + k] == head[k])
            after_head = d + last + 1             # (lines typed since are not in the file)
            cands = [(v, -(e - after_head), e) for e, v in tv.items() if e >= after_head] if tv else []
            v, neg_gap, e = max(cands) if cands else (0, 0, None)
            key = (v, neg_gap, -d)
            if choice is None or key > choice[0]:
                choice = (key, d, e)
        _, d, e = choice
        start = keys[max(d, 0)][0] if keys else 0
        if e is not None:
            last = min(e + len(tail), len(keys)) - 1
            end = keys[last][0] + 1 if last >= 0 else None
    elif tv:                                      # no complete prompt line: the suffix alone
        best = max(tv.values())
        e = min(d for d, v in tv.items() if v == best)
        last = min(e + len(tail), len(keys)) - 1
        end = keys[last][0] + 1 if last >= 0 else None
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
