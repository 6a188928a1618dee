"""The user cache directory: $GROUNDCODE_CACHE, else the platformdirs user cache
(~/.cache/groundcode on Linux). Downloaded models, benchmark sources and vocab tables live
here; never in a user's repository. The one place that decides it.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("GROUNDCODE_CACHE")
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_cache_dir("groundcode", appauthor=False))


def sha256_file(path: Path) -> str:
    """The sha256 of a downloaded artifact (read in 1 MB blocks)."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
