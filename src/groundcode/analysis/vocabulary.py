"""The project's member vocabulary: the names that exist as members somewhere in the code the
analyzer sees. The dereference monitor's last resort where a receiver's type is unknown (an
unannotated parameter, a value Jedi cannot follow): such a name may be any member of anything,
but not a name that exists nowhere (`self.owner.get_latest_item` in a project without one).

    vocab = project_vocabulary(repo)          # one per repository root, shared by the process
    names = vocab.names(path, buffer_text)    # frozenset; None while the first scan or the
                                              # buffer's reading runs (both in the background)
    vocab.after(path, buffer_text, "conf")    # names written right after `conf.` (steering)
    member_names(text) -> frozenset[str]      # the member-like names one file's code writes
    buffer_of(ctx) -> str                     # a context's file text as its rows have it

What counts as a member-like name, from Python's own tokenizer (comments and strings do not
count): an identifier after a dot (`x.name`, read or written), a name defined by `def` or
`class`, an assignment target or keyword argument (`name = ...`, `f(name=...)`), an annotated
name at a line's start (`name: int`, dataclass fields); and every member of the builtin types
(`str`, `bytes`, `list`, `dict`, `set`, numbers, exceptions, file objects).

The file being written counts as the buffer's text, never as its copy on disk: that copy may
hold the very body being written (a benchmark's reference) or be stale. The rest of the
repository is scanned once in a background thread (never inside a decoding step) and rescanned,
files whose size or mtime changed only, at most every `RESCAN_S` seconds when asked again.
Bounded: at most `MAX_FILES` files of at most `MAX_FILE_BYTES` each; virtual environments,
VCS, caches and build output are skipped.
Test: tests/test_vocabulary.py.
"""
from __future__ import annotations

import io
import keyword
import stat
import threading
import time
import tokenize
from collections import Counter, OrderedDict
from pathlib import Path

RESCAN_S = 30.0
MAX_FILES = 5000
MAX_FILE_BYTES = 2 << 20
SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "node_modules", "__pycache__",
             "site-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache", "build", "dist"}
_KEYWORDS = frozenset(keyword.kwlist) | frozenset(getattr(keyword, "softkwlist", ()))


def _builtin_members() -> frozenset:
    import builtins
    import io as _io
    types = [str, bytes, bytearray, memoryview, list, tuple, dict, set, frozenset, int, float,
             complex, bool, range, slice, object, type, BaseException, Exception, OSError,
             _io.TextIOWrapper, _io.BufferedReader, _io.BufferedWriter, _io.BytesIO, _io.StringIO,
             type({}.keys()), type({}.values()), type({}.items()), type(iter([])),
             type((lambda: 0)), type(builtins)]
    out = set()
    for t in types:
        out.update(n for n in dir(t) if n.isidentifier())
    return frozenset(out)


BUILTIN_MEMBERS = _builtin_members()


def member_names(text: str) -> frozenset:
    """The member-like names `text` writes (see the module docstring)."""
    return read_names(text)[0]


def read_names(text: str) -> tuple[frozenset, dict]:
    """(member-like names, {receiver name: names written after `receiver.`}) of `text`; the
    receiver is the name right before the dot (`conf` in `self.conf.retry`), or `name()` /
    `name[]` after a call or subscript of a name (`encode()` in `s.encode("idna").decode`).
    Tolerates code that does not tokenize to the end (a buffer being edited): what came before
    the error counts."""
    out: set[str] = set()
    after: dict[str, set] = {}
    prev = prev2 = None             # the tokens before (type, string); NL, comments skipped
    at = 0                          # tokens so far in the logical line
    opened: list = []               # open brackets: the `name()` / `name[]` key they would close
    closed = None                   # the key of the bracket closed last
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in skip:
                continue
            if tok.type == tokenize.NEWLINE:
                prev = prev2 = None
                at = 0
                continue
            s = tok.string
            if tok.type == tokenize.OP and s in "([{":
                name = prev[1] if prev is not None and prev[0] == tokenize.NAME and prev[1] not in _KEYWORDS else None
                opened.append(f"{name}{'()' if s == '(' else '[]'}" if name and s != "{" else None)
            elif tok.type == tokenize.OP and s in ")]}":
                closed = opened.pop() if opened else None
            if tok.type == tokenize.OP and prev is not None and prev[0] == tokenize.NAME \
                    and prev[1] not in _KEYWORDS and (s == "=" or (s == ":" and at == 1)):
                out.add(prev[1])            # `name = ...`, `f(name=...)`, `name: T` at a line's start
            elif tok.type == tokenize.NAME and s not in _KEYWORDS and prev is not None:
                if prev == (tokenize.OP, "."):
                    out.add(s)
                    if prev2 is not None and prev2[0] == tokenize.NAME:
                        after.setdefault(prev2[1], set()).add(s)
                    elif prev2 in ((tokenize.OP, ")"), (tokenize.OP, "]")) and closed:
                        after.setdefault(closed, set()).add(s)
                elif prev[1] in ("def", "class"):
                    out.add(s)
            at += 1
            prev2, prev = prev, (tok.type, s)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return frozenset(out), {k: frozenset(v) for k, v in after.items()}


def buffer_of(ctx) -> str:
    """The text of a context's file as its rows have it (the cursor's line cut at the cursor)."""
    return ctx.before + "\n" + ctx.after


def _python_files(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    while stack and len(out) < MAX_FILES:
        d = stack.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.is_dir():
                if p.name not in SKIP_DIRS and not p.name.startswith(".") and not p.is_symlink():
                    stack.append(p)
            elif p.suffix == ".py":
                out.append(p)
                if len(out) >= MAX_FILES:
                    break
    return out


class ProjectVocabulary:
    """Member-like names of one repository's Python files, kept per file (see the module
    docstring). Thread-safe; the scans run in a daemon thread."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self._lock = threading.Lock()
        self._files: dict[str, tuple[float, int, frozenset]] = {}
        self._counts: Counter = Counter()           # name -> number of files that write it
        self._after: dict[str, Counter] = {}        # receiver name -> {name after it: files}
        self._ready = threading.Event()
        self._scanning = False
        self._scanned_at = 0.0
        self._generation = 0
        self._rest: OrderedDict = OrderedDict()     # (path, generation) -> names of the others
        self._buffers: OrderedDict = OrderedDict()  # buffer text -> read_names
        self._reading: set = set()                  # buffers being read in the background

    # -- scanning -----------------------------------------------------------------------------
    def _scan(self) -> None:
        try:
            seen = set()
            for p in _python_files(self.root):
                key = str(p.resolve())
                seen.add(key)
                try:
                    st = p.stat()
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):      # a FIFO, socket or device named *.py
                    continue                           # would block or never end: skipped
                old = self._files.get(key)
                if old is not None and old[0] == st.st_mtime and old[1] == st.st_size:
                    continue
                if st.st_size > MAX_FILE_BYTES:
                    names, after = frozenset(), {}
                else:
                    try:
                        names, after = read_names(p.read_text(encoding="utf-8", errors="replace"))
                    except OSError:
                        continue
                with self._lock:
                    self._set(key, (st.st_mtime, st.st_size, names, after))
            with self._lock:
                for key in [k for k in self._files if k not in seen]:
                    self._set(key, None)
        finally:
            with self._lock:
                self._scanning = False
                self._scanned_at = time.monotonic()
            self._ready.set()

    def _set(self, key: str, entry) -> None:
        old = self._files.pop(key, None)
        if old is not None:
            self._counts.subtract(old[2])
            for r, ns in old[3].items():
                self._after[r].subtract(ns)
        if entry is not None:
            self._files[key] = entry
            self._counts.update(entry[2])
            for r, ns in entry[3].items():
                self._after.setdefault(r, Counter()).update(ns)
        if old is None or entry is None or old[2:] != entry[2:]:
            self._generation += 1

    def refresh(self, force: bool = False) -> None:
        """Start a (re)scan in the background unless one runs or (not `force`) the last one
        ended less than RESCAN_S seconds ago."""
        with self._lock:
            recent = self._ready.is_set() and time.monotonic() - self._scanned_at < RESCAN_S
            if self._scanning or (recent and not force):
                return
            self._scanning = True
        threading.Thread(target=self._scan, name="groundcode-vocabulary", daemon=True).start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the first scan has ended (tests, benchmarks); True if it has."""
        self.refresh()
        return self._ready.wait(timeout)

    def settle(self, timeout: float = 30.0) -> None:
        """Block until no scan runs (tests: after `refresh(force=True)`)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if not self._scanning and self._ready.is_set():
                    return
            time.sleep(0.01)

    # -- answers ------------------------------------------------------------------------------
    def names(self, path: str | Path | None, buffer: str = "", block: bool = False) -> frozenset | None:
        """Member-like names of the repository's other files, of `buffer` (the text of `path`
        as the editor has it) and of the builtin types. Without `block`, None until the first
        scan has ended and the buffer has been read (both in the background: ask again later);
        with it, waits for the scan and reads the buffer here."""
        self.refresh()
        if not self._ready.is_set():
            if not block:
                return None
            self._ready.wait()
        read = self._buffer_names(buffer, block)
        if read is None:
            return None
        own = read[0]
        key = _file_key(path)
        with self._lock:
            gen = self._generation
            rest = self._rest.get((key, gen))
            if rest is None:
                disk = self._files.get(key, (0, 0, frozenset(), {}))[2]     # the file's disk copy
                rest = _beyond(self._counts, disk)
                self._rest[(key, gen)] = rest
                while len(self._rest) > 8:
                    self._rest.popitem(last=False)
        return rest | own | BUILTIN_MEMBERS

    def wait_names(self, path: str | Path | None, buffer: str, timeout: float | None) -> frozenset | None:
        """`names` once ready, waiting up to `timeout` seconds (None: for good) while the scan
        and the buffer's read run in the background; None if they are still running then."""
        if timeout is None:
            return self.names(path, buffer, block=True)
        end = time.monotonic() + timeout
        while True:
            got = self.names(path, buffer)
            if got is not None or time.monotonic() >= end:
                return got
            time.sleep(min(0.005, max(0.0, end - time.monotonic())))

    def after(self, path: str | Path | None, buffer: str, receiver: str) -> frozenset:
        """Names the repository's other files and `buffer` write right after `receiver.` (the
        receiver's last name: `conf` for `self.conf`); empty until the scan and the buffer's
        read have ended (never waits)."""
        if not receiver or not self._ready.is_set():
            return frozenset()
        read = self._buffer_names(buffer, False)
        if read is None:
            return frozenset()
        key = _file_key(path)
        with self._lock:
            disk = self._files.get(key, (0, 0, frozenset(), {}))[3].get(receiver, frozenset())
            rest = _beyond(self._after.get(receiver, {}), disk)
        return rest | read[1].get(receiver, frozenset())

    def _buffer_names(self, buffer: str, block: bool) -> tuple | None:
        if not buffer:
            return frozenset(), {}
        with self._lock:
            hit = self._buffers.get(buffer)
            if hit is not None:
                self._buffers.move_to_end(buffer)
                return hit
            if not block:
                if buffer not in self._reading:
                    self._reading.add(buffer)
                    threading.Thread(target=self._read_buffer, args=(buffer,), daemon=True,
                                     name="groundcode-vocabulary").start()
                return None
        return self._read_buffer(buffer)

    def _read_buffer(self, buffer: str) -> tuple:
        names = (frozenset(), {})
        try:
            names = read_names(buffer)
        finally:
            with self._lock:
                self._reading.discard(buffer)
                self._buffers[buffer] = names
                while len(self._buffers) > 32:
                    self._buffers.popitem(last=False)
        return names


def _file_key(path) -> str:
    """The key of a file in the scan (its resolved path), "" for none."""
    return str(Path(path).resolve()) if path else ""


def _beyond(counts, disk: frozenset) -> frozenset:
    """Names that files other than the one whose disk copy wrote `disk` write: `counts` holds
    how many files write each name."""
    return frozenset(n for n, c in counts.items() if c > 1 or (c == 1 and n not in disk))


_VOCABS: dict[Path, ProjectVocabulary] = {}
_VOCABS_LOCK = threading.Lock()


def project_vocabulary(root: str | Path) -> ProjectVocabulary:
    """The process's vocabulary of the repository at `root` (made, and its scan started, once)."""
    key = Path(root).resolve()
    with _VOCABS_LOCK:
        v = _VOCABS.get(key)
        if v is None:
            v = _VOCABS[key] = ProjectVocabulary(key)
    v.refresh()
    return v
