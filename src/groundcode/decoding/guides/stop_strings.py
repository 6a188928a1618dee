"""Stop a row at the first occurrence of any of a few strings (e.g. DS-1000's `</code>`).

Only the tail that a new token can complete is searched, so a step costs O(longest stop string).
Text that may be the start of a stop string is held back from streams (`final_upto`): it is cut
if the rest of the stop string follows. Only text after the cursor counts: `skip` is the length
of what the row first re-writes for its prompt (token healing's owed text, such as the blank
line before a word typed at a line start), which may itself hold a stop string (`\n\n`).
Test: tests/test_ds1000.py (the generation path with the tiny model).
"""
from __future__ import annotations

from .base import Guide, RowView, Stop


class StopStrings(Guide):
    def __init__(self, stops, skip: int = 0):
        self.stops = tuple(s for s in stops if s)
        self.skip = max(0, int(skip))
        self._longest = max((len(s) for s in self.stops), default=0)

    def reset(self, row: RowView) -> None:
        self._cut: int | None = None
        self._which: str | None = None
        self._seen = 0                      # text before this index was searched already

    def snapshot(self):
        return (self._cut, self._which, self._seen)

    def restore(self, row: RowView, snap) -> None:
        self._cut, self._which, self._seen = snap
        self._seen = min(self._seen, len(row.text))

    def final_upto(self, row: RowView) -> int:
        text = row.text
        if self._cut is not None:
            return self._cut
        for k in range(min(self._longest - 1, len(text) - self.skip), 0, -1):   # a stop string's start at the end
            tail = text[-k:]
            if any(s.startswith(tail) for s in self.stops):
                return len(text) - k
        return len(text)

    def advance(self, row: RowView, token: int) -> int | None:
        text = row.text
        if self._cut is not None:           # the first occurrence holds
            return None
        start = max(self.skip, self._seen - self._longest + 1)
        hits = [i for i in (text.find(s, start) for s in self.stops) if i >= 0]
        if hits:
            self._cut = min(hits)
            self._which = next(s for s in self.stops if text.find(s, start) == self._cut)
        self._seen = len(text)
        return None

    def stop(self, row: RowView) -> Stop | None:
        # payload: the stop string found (OpenAI servers such as vLLM answer it as stop_reason)
        return None if self._cut is None else Stop("stop_string", cut=self._cut, payload=self._which)
