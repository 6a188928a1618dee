"""What text the analyzer sees for a path: the workspace's open buffer (installed in the worker
by jedi_worker.set_overlay), else the file; and keeping a Script's text from becoming a module
for later Scripts (`unsaved`). A leaf: jedi_worker, jedi_classes and jedi_receiver import it, it
imports none of them (parso only, lazily).

    source_text(path) -> str        # the buffer, else the file on disk
    buffer(path) -> str | None      # the buffer only
    with unsaved(path): ...         # afterwards that text is not the module `path`
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

_OVERLAY: dict = {"stamp": "", "files": {}, "t": 0.0}


def buffer(path) -> str | None:
    if path is None:
        return None
    files = _OVERLAY["files"]
    s = str(path)
    text = files.get(s)
    if text is None and files:
        text = files.get(os.path.realpath(s))
    return text


def forget_parse(path) -> None:
    """The in-memory parse of `path` is no module for later imports (see the module docstring):
    its stamp goes below any file's mtime, so an import parses the file (diffing against it)."""
    if not path:
        return
    import parso.cache
    for per_grammar in parso.cache.parser_cache.values():
        for key in (Path(path), str(path)):
            item = per_grammar.get(key)
            if item is not None:
                item.change_time = float("-inf")


@contextlib.contextmanager
def unsaved(path):
    """Jedi work on a Script whose text is not the file at `path`: afterwards that text is not
    the module `path` for later Scripts in this process."""
    try:
        yield
    finally:
        forget_parse(path)


def source_text(path: str) -> str:
    """A module's text as the analyzer sees it: the open buffer, else the file."""
    text = buffer(path)
    if text is not None:
        return text
    from ..repo import read_source          # in the encoding Python reads it in (PEP 263)
    return read_source(path)
