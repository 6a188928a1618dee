"""Engine-owned checkpoints of one row: one per accepted token, and the one way a row is cut.

    ck = Checkpoints(row, guides)      # after the guides' reset: checkpoint 0, reset's triggers at 0
    ck.accept(token)                   # the row's tokens, text, ends grow
    ck.mark()                          # after the guides advanced: checkpoint len(tokens); new
                                       # triggers are tagged with that token count
    won = ck.resolve(proposals)        # [(guide, Rollback)] -> the shortest cut and its proposers
    ck.cut(length, winners)            # cut the row, drop the triggers recorded after `length`,
                                       # restore every guide, then tell the winners

Triggers are events tagged with the token count at which they were recorded (a trigger seen by a
check before token k is accepted belongs to token k): a cut to L drops exactly those tagged > L,
whichever guide recorded them, so no guide deletes another's records and nothing is counted
twice (a guide that redoes its trigger puts its record back in `rolled_back`, tagged L).
Not here: the KV cache side of a cut (engine.py), guide state (each guide's snapshot).
Test: tests/test_engine.py (E1, E2, E3), tests/test_guides_rewind.py.
"""
from __future__ import annotations

from .guides.base import Rollback, RowView


class Checkpoints:
    __slots__ = ("row", "guides", "snaps", "trigger_at")

    def __init__(self, row: RowView, guides: list):
        self.row, self.guides = row, list(guides)
        self.trigger_at: list[int] = []
        self.tag(0)
        self.snaps: list[tuple] = [self._take()]

    def _take(self) -> tuple:
        return tuple(g.snapshot() for g in self.guides)

    def tag(self, at: int) -> None:
        """Triggers recorded since the last tag belong to token count `at`."""
        n, tags = len(self.row.triggers), self.trigger_at
        while len(tags) < n:
            tags.append(at)

    def accept(self, token: int) -> None:
        r = self.row
        r.tokens.append(token)
        r.text += r.vocab.texts[token]
        r.ends.append(len(r.text))

    def mark(self) -> None:
        n = len(self.row.tokens)
        self.tag(n)
        del self.snaps[n:]
        self.snaps.append(self._take())

    @staticmethod
    def resolve(proposals: list) -> tuple[int, list] | None:
        """The shortest proposed cut and every (guide, proposal) that asked for exactly it."""
        if not proposals:
            return None
        length = min(p.length for _, p in proposals)
        return length, [(g, p) for g, p in proposals if p.length == length]

    def cut(self, length: int, winners: list = ()) -> None:
        r = self.row
        length = max(0, min(length, len(r.tokens)))
        self.tag(len(r.tokens))
        del r.tokens[length:]
        del r.ends[length:]
        r.text = r.text[: r.ends[-1]] if r.ends else ""
        r.forced.clear()
        keep = next((k for k, at in enumerate(self.trigger_at) if at > length), len(self.trigger_at))
        del r.triggers[keep:]
        del self.trigger_at[keep:]
        snap = self.snaps[min(length, len(self.snaps) - 1)]
        del self.snaps[length + 1:]
        for g, s in zip(self.guides, snap):
            g.restore(r, s)
        for g, p in winners:
            g.rolled_back(r, p)
        self.tag(length)


def proposals_of(guides, call) -> list[tuple[object, Rollback]]:
    """[(guide, Rollback)] from calling `call(guide)` on every guide (advance or settle)."""
    from .guides.base import as_rollback
    out = []
    for g in guides:
        p = as_rollback(call(g))
        if p is not None:
            out.append((g, p))
    return out
