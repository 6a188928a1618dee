"""Where an index is written: never over data that is not an index of ours, never losing the old
index before the new one is complete.

    check(directory, marker, kind)     # before the work: refuses a non-empty `directory` without `marker`;
    tmp = staging(directory, marker, kind)   # the same check; a fresh temporary directory beside it
    install(tmp, directory)            # the new index renamed in; only then the old one removed

Test: tests/test_retrievers.py.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import GroundcodeError


def check(directory: Path, marker: str, kind: str) -> None:
    """A GroundcodeError unless `directory` is new, empty, or an index of ours (`marker`)."""
    directory = Path(directory)
    if directory.exists():
        if not directory.is_dir():
            raise GroundcodeError(f"{directory} is a file, not an index directory")
        if any(directory.iterdir()) and not (directory / marker).is_file():
            raise GroundcodeError(f"{directory} is not empty and holds no {kind} index: refusing to "
                                  "replace it (name a new or empty directory)")


def staging(directory: Path, marker: str, kind: str) -> Path:
    directory = Path(directory)
    check(directory, marker, kind)
    directory.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{directory.name}.building-", dir=directory.parent))


def install(tmp: Path, directory: Path) -> None:
    directory = Path(directory)
    old = None
    if directory.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
        os.replace(directory, old / "index")
    try:
        os.replace(tmp, directory)
    except BaseException:
        if old is not None:                   # put the old index back
            os.replace(old / "index", directory)
            shutil.rmtree(old, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
