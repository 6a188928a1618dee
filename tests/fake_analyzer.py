"""A base for tests' fake analyzers: the analyzer interface (analysis/base.py) answered at
once from a subclass's `members(code, path, line, column, *, receiver, cache_key)`."""
from __future__ import annotations

from groundcode.analysis.base import Answered, MembersQuery, NamesQuery, SignatureAnswer, SignatureQuery


class FakeBase:
    name = "fake"
    pid = None

    def ask(self, query):
        if isinstance(query, SignatureQuery):
            return Answered(SignatureAnswer(None))
        assert isinstance(query, (MembersQuery, NamesQuery))
        at = query.at
        if isinstance(query, MembersQuery) and query.prefetch:
            self.prefetched(query)
            return Answered(None)
        return Answered(self.members(at.code, at.path, at.line, at.column, receiver=query.receiver,
                                     cache_key=query.key))

    def prefetched(self, query) -> None:
        """A prefetch (its answer is never read): recorded by subclasses that care."""

    def prewarm(self, at) -> None:
        pass

    def deadline(self) -> float:
        return 0.5

    def close(self) -> None:
        pass
