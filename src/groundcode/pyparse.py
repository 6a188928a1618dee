"""Python's own parser (`ast.parse`), safe to call from several threads at once.

CPython 3.11 keeps the AST constructor's recursion counter in the interpreter's state, shared by
every thread (gh-106905). When a garbage collection inside one thread's parse runs a finalizer
that lets another thread in, and that thread parses too, the first parse ends with
`SystemError: AST constructor recursion depth mismatch` though its code is fine (reproduced here
on 3.11.7). groundcode's server parses on several threads at once (a request, the look-ahead, the
analyzer's worker), and a CI run lost a test worker to this error.

So every parse of groundcode goes through `parse`: one lock for all of them, and the spurious
error, which another library's unlocked parse can still cause, retried.
"""

from __future__ import annotations

import ast
import threading

_parse = ast.parse          # the interpreter's own, kept before anything may wrap ast.parse
_LOCK = threading.RLock()   # re-entrant: a finalizer run inside a parse may parse on the same thread
_TRIES = 3


def spurious(exc: BaseException) -> bool:
    """The shared-counter race's error, not a fault of the code parsed."""
    return isinstance(exc, SystemError) and "recursion depth mismatch" in str(exc)


def parse(source, filename="<unknown>", mode="exec", **kwargs) -> ast.AST:
    """`ast.parse`, one thread at a time; a SyntaxError is raised as ast.parse raises it."""
    with _LOCK:
        for _ in range(_TRIES - 1):
            try:
                return _parse(source, filename, mode, **kwargs)
            except SystemError as exc:
                if not spurious(exc):
                    raise
        return _parse(source, filename, mode, **kwargs)     # the last try's error is raised
