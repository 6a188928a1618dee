"""The analyzer protocol and its result record. Knows no jedi.

An analyzer answers one question for the dereference monitor: which members may follow
`receiver.` at (line, column) of `code` placed at `path`. Results are small dataclasses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Analysis:
    receiver: str
    names: frozenset[str]            # candidate member names (empty = nothing known)
    ms: float = 0.0                  # wall time of the analysis call (0 for cache hits)
    cache_hit: bool = False
    failed: str | None = None        # "timeout", "error: ...", "empty": the monitor fails open
    kinds: dict = field(default_factory=dict, compare=False, hash=False)  # name -> jedi type


class Analyzer(Protocol):
    def members(self, code: str, path: Path, line: int, column: int, *, receiver: str,
                cache_key: tuple) -> Analysis:
        """Members after the dot that ends at (line, column) (1-based line, 0-based column)."""
        ...
