"""The analyzer interface and its records. Knows no jedi.

Every analyzer (Jedi's client, the SDK models, a chain of them) answers three questions, each a
small frozen query, asynchronously:

    ticket = analyzer.ask(MembersQuery(at, receiver, key))   # which names may follow `receiver.`
    ticket = analyzer.ask(NamesQuery(at, key))               # which names completion offers at a point
    ticket = analyzer.ask(SignatureQuery(at, receiver, name))  # what `receiver.name(` accepts
    answer = ticket.result(timeout)     # None while the answer runs (timeout 0 polls, None waits)
    analyzer.prewarm(at)                # parse the file and its imports in the background
    analyzer.deadline()                 # how long an answer may take now (the first one is cold)
    analyzer.close()

`at` is a `context.Splice`: the real file with the partial code in it, the cursor, and the
workspace's other open buffers (an `Overlay`). Answers: `Analysis` (members, names) and
`SignatureAnswer`. A late, failed or crashed answer is an answer too, with `failed` set: callers
fail open. `key` is what the answer depends on besides the overlay (the caller knows: file
version outside the function, enclosing scope, receiver); the analyzer adds the overlay's stamp.
How long a caller may block on a ticket is `wait.WaitPolicy`'s business, not the analyzer's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Overlay:
    """Open editor buffers that differ from (or are absent on) disk, other than the file being
    analysed: (absolute path, text) pairs. `stamp` changes whenever one of them changes."""
    stamp: str = ""
    files: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Analysis:
    receiver: str
    names: frozenset[str]            # candidate member names (empty = nothing known)
    ms: float = 0.0                  # wall time of the analysis call (0 for cache hits)
    cache_hit: bool = False
    failed: str | None = None        # "timeout", "error: ...", "empty": the monitor fails open
    kinds: dict = field(default_factory=dict, compare=False, hash=False)  # name -> jedi type
    hidden: frozenset[str] = frozenset()  # legal names never to be suggested (--hide-private)
    # () -> ticket: a careful analyzer's opinion on this fast answer, asked only before a name it
    # lacks is forbidden (analysis/second_opinion.py); None: this answer is final
    second: Any = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True, eq=False)
class MembersQuery:
    at: Any                          # context.Splice: the cursor right after the dot
    receiver: str
    key: tuple = ()                  # cache key (besides the overlay): what the answer depends on
    prefetch: bool = False           # a guess made ahead of time: a failed answer is not cached
    soon: bool = False               # a guess whose trigger is likely a line away (a local just
                                     # bound): answered before the other guesses waiting
    ended: Any = None                # the asking row's end (is_set()): a question still queued
                                     # when every row that asked it has ended is dropped


@dataclass(frozen=True, eq=False)
class NamesQuery:
    at: Any                          # context.Splice: the cursor where a name starts
    key: tuple = ()
    receiver: str = ""               # how the caller records it ("<COMP>", ...)


@dataclass(frozen=True, eq=False)
class SignatureQuery:
    at: Any                          # context.Splice: the cursor right after the `(`
    receiver: str                    # `client` of `client.put_object(`; "" for a bare name
    name: str


@dataclass(frozen=True)
class SignatureAnswer:
    signature: "CallSignature | None"    # None: not known to this analyzer
    ms: float = 0.0
    failed: str | None = None


class Ticket(Protocol):
    def result(self, timeout: float | None = 0) -> Any:
        """The answer, or None while it runs (timeout 0 polls; None waits for good)."""
        ...


class Answered:
    """A ticket whose answer is known at once (a cache hit, a synchronous analyzer)."""
    __slots__ = ("answer",)

    def __init__(self, answer):
        self.answer = answer

    def result(self, timeout: float | None = 0):
        return self.answer


class Analyzer(Protocol):
    name: str                        # who answers (trigger records name it): jedi, ty, botocore+jedi
    pid: int | None                  # its server's process, if it runs one (/health lists them)

    def ask(self, query) -> Ticket:
        """Start answering `query` (MembersQuery, NamesQuery, SignatureQuery); never blocks."""
        ...

    def prewarm(self, at) -> None:
        """Parse `at.code` (saved at `at.path`) and infer its imports in the background."""
        ...

    def deadline(self) -> float:
        """Seconds an answer may take now (longer for the first, cold one); 0: answers at once."""
        ...

    def close(self) -> None:
        ...


def links(analyzer) -> list:
    """The single analyzers of a composite one (a chain, a second opinion; nested), in order."""
    return [p for a in getattr(analyzer, "analyzers", None) or () for p in links(a)] or [analyzer]


def empty_answer(query, failed: str) -> Any:
    """The failed answer to `query` (what a caller fails open with)."""
    if isinstance(query, SignatureQuery):
        return SignatureAnswer(None, 0.0, failed)
    return Analysis(query.receiver, frozenset(), 0.0, False, failed)


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str = "keyword"            # "positional" (positional-only), "either", "keyword"
    required: bool = False


@dataclass(frozen=True)
class CallSignature:
    """What a callable accepts, as far as an analyzer knows it (an SDK model, an API index)."""
    name: str
    params: tuple[ParamSpec, ...] = ()
    var_positional: bool = False     # *args
    var_keyword: bool = False        # **kwargs

    @property
    def required(self) -> list[str]:
        return [p.name for p in self.params if p.required]

    @property
    def optional(self) -> list[str]:
        return [p.name for p in self.params if not p.required]

    def keywords(self) -> frozenset[str]:
        """Names that may be passed as `name=` (positional-only ones may not)."""
        return frozenset(p.name for p in self.params if p.kind != "positional")

    def to_inspect(self):
        """An `inspect.Signature` to bind calls against (defaults are placeholders)."""
        import inspect
        P = inspect.Parameter
        kinds = {"positional": P.POSITIONAL_ONLY, "either": P.POSITIONAL_OR_KEYWORD,
                 "keyword": P.KEYWORD_ONLY}
        out = []
        for p in self.params:            # source order (Python's own order rules hold there)
            if p.kind != "keyword":
                out.append(P(p.name, kinds[p.kind], default=P.empty if p.required else None))
        if self.var_positional:
            out.append(P("_gc_args", P.VAR_POSITIONAL))
        for p in self.params:
            if p.kind == "keyword":
                out.append(P(p.name, P.KEYWORD_ONLY, default=P.empty if p.required else None))
        if self.var_keyword:
            out.append(P("_gc_kwargs", P.VAR_KEYWORD))
        return inspect.Signature(out)


def query_key(query, who: str) -> tuple[str, tuple]:
    """("members" | "names", the caller's key) of a question an analyzer caches; a NamesQuery
    without a key is keyed by its code's digest and position; any other query is a TypeError."""
    if isinstance(query, MembersQuery):
        return "members", query.key
    if isinstance(query, NamesQuery):
        if query.key:
            return "names", query.key
        import hashlib
        digest = hashlib.blake2s(query.at.code.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        return "names", (digest, query.at.line, query.at.column)
    raise TypeError(f"{who} cannot answer {type(query).__name__}")
