"""Two analyzers, one answer: a fast one answers first; the careful one is asked only on the path
to a block (issue 42, item 5).

A language server (ty) answers a member question in tens of milliseconds even on a busy machine,
but misses members that Jedi finds (a mixin's, a base's, a call's result's); Jedi is precise but
takes seconds when the cores are busy, and a late answer fails the trigger open
(docs/ANALYZERS.md). `SecondOpinionAnalyzer(fast, careful)`, configured as `--analyzer ty+jedi`:

  * members: the fast answer, carrying `second` — a callable that asks the careful analyzer the
    same question and whose ticket answers the union of both (a name either knows is allowed).
    The dereference monitor calls it only before it would refuse or roll back a name the fast
    answer lacks (decoding/guides/dereference_second.py); a careful answer that fails (dynamic
    attributes, an untyped receiver, a timeout) fails that trigger open. So nothing is forbidden
    that the careful analyzer would not forbid, and the careful one works only where the fast
    one disagrees with what the model wrote.
  * a fast answer that failed or is empty: the careful analyzer is asked at once and its
    answer stands (as in a ChainAnalyzer).
  * names and signatures: the careful analyzer's (the name and call monitors keep its precision).

Not here: when the second opinion is asked (the monitor's business), the servers themselves.
Test: tests/test_second_opinion.py.
"""
from __future__ import annotations

from dataclasses import replace

from .base import Analysis, MembersQuery


def _useful(a) -> bool:
    return a.failed is None and bool(a.names)


class Union:
    """The careful answer to a question the fast analyzer answered with `first`: both answers'
    names (None while it runs; a failed careful answer stands as it is: the trigger fails open)."""

    __slots__ = ("_ticket", "_first", "_answer")

    def __init__(self, ticket, first: Analysis):
        self._ticket, self._first, self._answer = ticket, first, None

    def result(self, timeout: float | None = 0):
        if self._answer is not None:
            return self._answer
        b = self._ticket.result(timeout)
        if b is None:
            return None
        a = self._first
        if b.failed is not None or not b.names:
            self._answer = replace(b, ms=a.ms + b.ms, second=None)
        else:
            self._answer = Analysis(a.receiver, a.names | b.names, a.ms + b.ms, a.cache_hit and b.cache_hit,
                                    None, {**a.kinds, **b.kinds}, a.hidden | b.hidden)
        return self._answer


class _Second:
    """`Analysis.second` of a fast answer: asks the careful analyzer once, when called."""

    __slots__ = ("_careful", "_query", "_first", "_ticket")

    def __init__(self, careful, query: MembersQuery, first: Analysis):
        self._careful, self._query, self._first, self._ticket = careful, query, first, None

    def __call__(self) -> Union:
        if self._ticket is None:
            self._ticket = Union(self._careful.ask(self._query), self._first)
        return self._ticket


class FirstOpinion:
    """The ticket of a member question: the fast answer with its second opinion attached, or
    (the fast answer failed or is empty) the careful analyzer's answer."""

    __slots__ = ("_owner", "_query", "_cur", "_fast", "_answer")

    def __init__(self, owner: "SecondOpinionAnalyzer", query: MembersQuery):
        self._owner, self._query, self._answer = owner, query, None
        self._cur = owner.fast.ask(query)
        self._fast = True

    def result(self, timeout: float | None = 0):
        if self._answer is not None:
            return self._answer
        r = self._cur.result(timeout)
        if r is None:
            return None
        if self._fast:
            if _useful(r):
                self._answer = replace(r, second=_Second(self._owner.careful, self._query, r))
                return self._answer
            self._fast = False                    # the fast analyzer knows nothing: ask the other
            self._cur = self._owner.careful.ask(self._query)
            return self.result(timeout)
        self._answer = r
        return r


class SecondOpinionAnalyzer:
    """A fast analyzer's member answers, checked by a careful one before anything is forbidden."""

    def __init__(self, fast, careful):
        self.fast, self.careful = fast, careful
        self.analyzers = [fast, careful]          # Generator.running_analyzers lists each
        self.name = f"{fast.name}+{careful.name}"
        self.pid = None
        self.trusted = bool(getattr(careful, "trusted", False) or getattr(fast, "trusted", False))

    def ask(self, query):
        if isinstance(query, MembersQuery):
            return FirstOpinion(self, query)
        return self.careful.ask(query)

    def deadline(self) -> float:
        # how long a wait for an owed answer may last: the careful one's (a second opinion's)
        return max(self.fast.deadline(), self.careful.deadline())

    def prewarm(self, at) -> None:
        self.fast.prewarm(at)
        self.careful.prewarm(at)

    def close(self) -> None:
        self.fast.close()
        self.careful.close()
