"""What a request may name and send: files inside a served workspace only, text that is text,
cursor positions inside the buffer. Every refusal is a `ClientError` with an HTTP status and a
one-line message.

    path = inside(roots, "shop/cart.py")     # absolute, resolved (symlinks followed), or 403/404
    check_text("prompt", s)                  # 400 on NUL/control bytes or lone surrogates
    check_position(text, line, column)       # 400 when (line, column) is past the buffer

This is the server's own check, made before the Workspace (which resolves paths the same way)
sees the path: two locks on the one door that matters.
Not here: reading files or building contexts (workspace.py). Tested by tests/test_server_http.py.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import GroundcodeError
from ..languages import SOURCE_SUFFIXES      # the files of the workspace's languages the server reads


class ClientError(GroundcodeError):
    """A request the server refuses; `status` is the HTTP status (4xx)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


# C0 controls other than tab, line feed, vertical tab, form feed and carriage return: a file
# holding them is not source code (NUL is the usual sign of a binary file).
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def check_text(name: str, text: str | None) -> None:
    if text is None:
        return
    m = _BINARY.search(text)
    if m:
        raise ClientError(f"{name} looks binary (control character {ord(m.group()):#04x} at "
                          f"offset {m.start()}): send source text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ClientError(f"{name} is not valid Unicode ({exc.reason} at offset {exc.start})") from None


def inside(roots: list[Path], path: str, must_exist: bool = True) -> Path:
    """The resolved file `path` names inside one of `roots` (relative paths are tried against
    each root in order); 403 when it resolves outside all of them, 404 when it is missing
    (`must_exist=False`: a new, unsaved file inside a root is fine)."""
    if not roots:
        raise ClientError("this server serves no workspace: start it with --workspace DIR", 400)
    if not path or "\0" in path:
        raise ClientError("path is empty or holds a NUL byte", 400)
    p = Path(path).expanduser()
    candidates = [p] if p.is_absolute() else [r / p for r in roots]
    seen_inside = False
    for c in candidates:
        real = c.resolve()              # `..` and symlinks are followed before the check
        if not any(real == r or r in real.parents for r in roots):
            continue
        seen_inside = True
        if real.is_file():
            return real
        if real.exists():
            raise ClientError(f"{path} is not a file", 400)
        if not must_exist:
            return real
    if not seen_inside:
        raise ClientError(f"{path} is outside the served workspaces", 403)
    raise ClientError(f"file not found in the served workspaces: {path}", 404)


VCS_DIRS = {".git", ".hg", ".svn", ".bzr", "_darcs", "CVS"}


def readable_source(roots: list[Path], real: Path, max_bytes: int) -> None:
    """A file the server may read whole into a prompt (a request that sends no buffer): a
    source file of the workspace's languages, under `max_bytes`, never a dotfile or anything
    under a dot directory or a VCS directory (`.env`, `.git/config`). ClientError otherwise."""
    root = max((r for r in roots if real == r or r in real.parents), key=lambda r: len(r.parts), default=None)
    parts = real.relative_to(root).parts if root is not None else real.parts
    if any(p.startswith(".") or p in VCS_DIRS for p in parts):
        raise ClientError(f"{real.name}: dotfiles, dot directories and VCS directories are never read; "
                          "send the buffer as `text`", 403)
    if real.suffix not in SOURCE_SUFFIXES:
        raise ClientError(f"{real.name}: not a source file the server reads ({', '.join(SOURCE_SUFFIXES)}); "
                          "send the buffer as `text`", 403)
    size = real.stat().st_size
    if size > max_bytes:
        raise ClientError(f"{real.name} is {size} bytes, above the limit for files read from disk "
                          f"({max_bytes} bytes)", 413)


def check_position(text: str, line: int, column: int) -> None:
    from ..lines import split_lines
    lines = split_lines(text) or [""]
    if text.endswith(("\n", "\r")):
        lines.append("")                # the empty line after a final line break
    if not 1 <= line <= len(lines):
        raise ClientError(f"line {line} is past the end of the buffer (1..{len(lines)})")
    if not 0 <= column <= len(lines[line - 1]):
        raise ClientError(f"column {column} is past the end of line {line} "
                          f"(0..{len(lines[line - 1])})")


def cursor_of(prefix: str) -> tuple[int, int]:
    """(line 1-based, column 0-based) of the end of `prefix` (lines.py's line breaks)."""
    from ..lines import end_position
    return end_position(prefix)
