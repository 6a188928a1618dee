"""SDK models as an analyzer: what a boto3 client accepts — the only botocore import.

boto3 clients are generated at run time from botocore's service models, so Jedi sees no member
of `boto3.client("s3")`. This module reads the models themselves (data files shipped in the
botocore wheel; no client is created, no network):

    operations("s3")                 every operation as its client method (botocore's own
                                     xform_name: ListObjectsV2 -> list_objects_v2), with the
                                     required and optional keyword parameters and the HTML doc
    SdkAnalyzer().ask(MembersQuery)  the dereference monitor's question for `client.` where
                                     `client` was bound by `boto3.client("<svc>")`,
                                     `session.client("<svc>")`, `boto3.Session(...).client(...)`
                                     or `service_name="<svc>"` (also `self.x = ...`): the service's
                                     operations plus the generic client methods; anything else
                                     is "unknown receiver" (empty, so a chain asks the next one)
    SdkAnalyzer().ask(SignatureQuery) the keyword parameters of `client.<operation>` (boto3 client
                                     methods take keyword arguments only)
    ChainAnalyzer([sdk, jedi])       first non-empty answer wins: SDK first, else Jedi

Receivers are found textually, tolerant of partial code, following the binding in the cursor's
scope (`scoped_service`: a function's own assignment, else a module-level one; `self.x` in the
enclosing class), comments and docstrings excluded. Not supported: `boto3.resource(...)`
(its models live in boto3, not botocore), clients passed through function parameters or returned
by helpers. Test: tests/test_sdk.py.
"""
from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .base import (Analysis, Answered, CallSignature, MembersQuery, ParamSpec, SignatureAnswer,
                   SignatureQuery, empty_answer)

# Methods every botocore client has besides its operations (botocore.client.BaseClient and the
# handlers registered for every service), and the ones boto3 injects into S3 clients.
GENERIC_METHODS = ("can_paginate", "close", "exceptions", "generate_presigned_url", "get_paginator",
                   "get_waiter", "meta", "waiter_names")
S3_INJECTED = ("copy", "download_file", "download_fileobj", "upload_file", "upload_fileobj",
               "generate_presigned_post")


@dataclass(frozen=True)
class Operation:
    service: str
    name: str                        # the model's name: ListObjectsV2
    py_name: str                     # the client method: list_objects_v2
    required: tuple[str, ...]
    optional: tuple[str, ...]
    documentation: str               # HTML, as in the model
    param_docs: tuple[tuple[str, str], ...] = ()   # (name, HTML doc) in model order
    deprecated: bool = False

    def signature(self) -> CallSignature:
        return CallSignature(self.py_name,
                             tuple(ParamSpec(n, "keyword", True) for n in self.required)
                             + tuple(ParamSpec(n, "keyword", False) for n in self.optional))


def _botocore():
    import botocore
    import botocore.loaders
    return botocore


def botocore_version() -> str:
    try:
        return _botocore().__version__
    except ImportError:
        return ""


@functools.lru_cache(maxsize=1)
def _loader():
    return _botocore().loaders.create_loader()


@functools.lru_cache(maxsize=1)
def services() -> tuple[str, ...]:
    """Every service name `boto3.client()` accepts (e.g. 's3', 'ec2', 'cognito-sync')."""
    return tuple(sorted(_loader().list_available_services("service-2")))


@functools.lru_cache(maxsize=None)
def operations(service: str) -> tuple[Operation, ...]:
    """The service's operations in model order (an unknown service gives ())."""
    bc = _botocore()
    from botocore.model import ServiceModel
    if service not in services():
        return ()
    model = ServiceModel(_loader().load_service_model(service, "service-2"), service_name=service)
    out = []
    for op_name in model.operation_names:
        om = model.operation_model(op_name)
        shape = om.input_shape
        members = list(shape.members) if shape is not None else []
        req = [m for m in (shape.required_members if shape is not None else []) if m in members]
        opt = [m for m in members if m not in req]
        docs = tuple((m, shape.members[m].documentation or "") for m in members)
        out.append(Operation(service, op_name, bc.xform_name(op_name), tuple(req), tuple(opt),
                             om.documentation or "", docs, bool(om.deprecated)))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def operation_map(service: str) -> dict[str, Operation]:
    return {op.py_name: op for op in operations(service)}


def client_methods(service: str) -> frozenset[str]:
    """Every attribute a client of `service` has: operations + generic (+ S3's injected ones)."""
    names = set(operation_map(service)) | set(GENERIC_METHODS)
    if service == "s3":
        names |= set(S3_INJECTED)
    return frozenset(names)


# `<target> = <anything>.client("svc"` or `client(service_name="svc"` at a statement's start.
_BIND_RE = re.compile(
    r"^[ \t]*(?P<target>[A-Za-z_][\w.]*)[ \t]*(?::[^=\n]*)?=[ \t]*(?P<call>[^\n#=]*?(?:\([^\n#]*?\))?[^\n#=]*?\bclient)"
    r"[ \t]*\([ \t\n]*(?:service_name[ \t]*=[ \t]*)?[\"'](?P<svc>[\w.-]+)[\"']", re.M)


def client_bindings(code: str) -> dict[str, str]:
    """{receiver text: service} for every client binding in `code`, the last one winning."""
    out: dict[str, str] = {}
    for m in _BIND_RE.finditer(code):
        out[m.group("target")] = m.group("svc")
    return out


def _offset(code: str, line: int, column: int) -> int:
    """Text offset of (1-based line, 0-based column)."""
    pos = 0
    for _ in range(line - 1):
        nl = code.find("\n", pos)
        if nl < 0:
            return len(code)
        pos = nl + 1
    return pos + column


@functools.lru_cache(maxsize=8)
def _code_only(code: str) -> str:
    """`code` with comments and triple-quoted strings (docstrings) blanked, offsets kept: a
    binding written in a docstring's example is no binding."""
    from ..pycode import lex
    out = list(code)
    for kind, s, e in lex(code):
        if kind == "comment" or (kind == "string" and code[s:e].lstrip("rRbBuUfF")[:3] in ('"""', "'''")):
            for i in range(s, e):
                if out[i] != "\n":
                    out[i] = " "
    return "".join(out)


_BLOCK = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.M)


def _enclosing(code: str, cursor: int) -> list[tuple[str, int, int, int, str]]:
    """The def/class blocks around `cursor`, innermost first: (kind, start, end, indent, header)."""
    line_start = code.rfind("\n", 0, cursor) + 1
    cur_line = code[line_start:cursor]
    cur = len(cur_line) - len(cur_line.lstrip(" \t")) if cur_line.strip() else len(cur_line) or 1 << 30
    out = []
    for m in reversed([m for m in _BLOCK.finditer(code, 0, line_start)]):
        ind = len(m.group(1).expandtabs(8))
        if ind >= cur:
            continue
        end = len(code)
        pos = code.find("\n", m.end())
        while pos >= 0:                         # the first later line indented <= ind ends it
            nxt = code.find("\n", pos + 1)
            ln = code[pos + 1: nxt if nxt >= 0 else len(code)]
            if ln.strip() and len(ln.expandtabs(8)) - len(ln.expandtabs(8).lstrip()) <= ind \
                    and pos + 1 >= line_start:
                end = pos + 1
                break
            pos = nxt
        out.append((m.group(2), m.start(), end, ind, code[m.start(): code.find(":", m.end()) + 1]))
        cur = ind
        if ind == 0:
            break
    return out


def _last_binding(code: str, target: str, lo: int, hi: int, indent: str | None = None):
    """The last statement in code[lo:hi] that assigns `target` (at `indent` when given): the
    service it binds a client of, or "" when it assigns something else; None when none."""
    pat = re.compile(rf"^([ \t]*){re.escape(target)}[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
    last = None
    for m in pat.finditer(code, lo, hi):
        if indent is None or m.group(1) == indent:
            last = m
    if last is None:
        return None
    b = _BIND_RE.match(code, last.start())
    return b.group("svc") if b is not None and b.group("target") == target else ""


def scoped_service(code: str, receiver: str, cursor: int) -> str | None:
    """The service of the client `receiver` names at `cursor`, following its binding in the
    scope the cursor is in (Python's rules, textually): a name assigned in the enclosing
    function is that function's (the last assignment before the cursor); else a module-level
    one; `self.x`/`cls.x`: an assignment in any method of the enclosing class. A parameter,
    or a binding to anything but a client, is unknown (None)."""
    if "client" not in code or _BIND_RE.search(code) is None:
        return None                                  # no client is bound anywhere (the common case:
                                                     # no need to lex a large file per query)
    text = _code_only(code)
    chain = _enclosing(text, cursor)
    if receiver.startswith(("self.", "cls.")):
        cls = next((c for c in chain if c[0] == "class"), None)
        if cls is None:
            return None
        return _last_binding(text, receiver, cls[1], cls[2]) or None
    root = receiver.split(".")[0]
    fn = next((c for c in chain if c[0] == "def"), None)
    if fn is not None:
        if re.search(rf"[(,*\s]{re.escape(root)}\s*[:=,)]", fn[4]):
            return None                              # a parameter: not followed
        local = _last_binding(text, receiver, fn[1], fn[2])
        if local is not None:                        # assigned in the function: local
            return _last_binding(text, receiver, fn[1], cursor) or None
    glob = _last_binding(text, receiver, 0, cursor if fn is None else len(text), indent="")
    return glob or None


class SdkAnalyzer:
    """Members and call signatures of boto3 clients, from botocore's service models. Answers
    at once (an in-process lookup): `ask` returns answered tickets."""

    name = "botocore"
    pid = None                              # in-process

    def __init__(self):
        self.calls = 0

    def service_of(self, code: str, receiver: str, cursor: int | None = None) -> str | None:
        """The service of the client `receiver` is bound to at `cursor` (see scoped_service)."""
        svc = scoped_service(code, receiver, len(code) if cursor is None else cursor)
        if svc is None or svc not in services():
            return None
        return svc

    # -- the analyzer interface --------------------------------------------------------------
    def ask(self, query):
        if isinstance(query, MembersQuery):
            at = query.at
            return Answered(self.members(at.code, at.path, at.line, at.column, receiver=query.receiver))
        if isinstance(query, SignatureQuery):
            at = query.at
            t0 = time.perf_counter()
            sig = self.signature(at.code, at.path, at.line, at.column, receiver=query.receiver,
                                 name=query.name)
            return Answered(SignatureAnswer(sig, (time.perf_counter() - t0) * 1e3))
        return Answered(empty_answer(query, "unknown receiver"))

    def prewarm(self, at) -> None:
        pass

    def deadline(self) -> float:
        return 0.0

    def close(self) -> None:
        pass

    # -- the lookups (synchronous, in-process) ---------------------------------------------------
    def members(self, code: str, path: Path, line: int, column: int, *, receiver: str) -> Analysis:
        t0 = time.perf_counter()
        self.calls += 1
        try:
            svc = self.service_of(code, receiver, _offset(code, line, column))
        except ImportError:
            return Analysis(receiver, frozenset(), 0.0, False, "botocore not installed")
        if svc is None:
            return Analysis(receiver, frozenset(), (time.perf_counter() - t0) * 1e3, False,
                            "unknown receiver")
        names = client_methods(svc)
        return Analysis(receiver, names, (time.perf_counter() - t0) * 1e3, False, None,
                        {n: "function" for n in names})

    def signature(self, code: str, path: Path, line: int, column: int, *, receiver: str,
                  name: str) -> CallSignature | None:
        """The parameters of `receiver.name(` when `receiver` is a client and `name` one of its
        operations; None when unknown."""
        try:
            svc = self.service_of(code, receiver, _offset(code, line, column))
        except ImportError:
            return None
        op = operation_map(svc).get(name) if svc else None
        return op.signature() if op else None


def _useful(answer) -> bool:
    if isinstance(answer, SignatureAnswer):
        return answer.signature is not None
    return bool(answer.names)


class ChainTicket:
    """Asks the chain's analyzers in turn, the next only once the previous answered nothing."""

    __slots__ = ("_rest", "_query", "_cur", "_ms")

    def __init__(self, analyzers: list, query):
        self._rest, self._query, self._ms = list(analyzers[1:]), query, 0.0
        self._cur = analyzers[0].ask(query)
        # Pass on at once what the first analyzers answered with nothing (the SDK lookup is
        # synchronous): a prefetch's ticket is never read, so asking the next analyzer only in
        # `result` would never ask Jedi about it at all.
        self.result(0)

    def result(self, timeout: float | None = 0):
        end = None if timeout is None else time.perf_counter() + timeout
        while True:
            left = None if end is None else max(0.0, end - time.perf_counter())
            r = self._cur.result(left)
            if r is None:
                return None
            if _useful(r) or not self._rest:
                ms = self._ms + r.ms
                return r if ms == r.ms else replace(r, ms=ms)
            self._ms += r.ms
            self._cur = self._rest.pop(0).ask(self._query)


class ChainAnalyzer:
    """Several analyzers asked in order; the first useful answer wins (SDK, else Jedi)."""

    def __init__(self, analyzers: list):
        self.analyzers = list(analyzers)
        self.name = "+".join(a.name for a in self.analyzers)
        self.pid = None                     # each link's own: Generator.running_analyzers
        self.trusted = any(getattr(a, "trusted", False) for a in self.analyzers)   # trust.py

    def ask(self, query) -> ChainTicket:
        return ChainTicket(self.analyzers, query)

    def deadline(self) -> float:
        return max((a.deadline() for a in self.analyzers), default=0.0)

    def prewarm(self, at) -> None:
        for a in self.analyzers:
            a.prewarm(at)

    def close(self) -> None:
        for a in self.analyzers:
            a.close()
