"""Spawned worker processes that never import from the current directory.

    with isolated():              # around the call that may start a spawn worker
        pool.submit(...)          # the worker (and a resource tracker it starts) runs `python -I`

multiprocessing's spawn starts `python -c "from multiprocessing.spawn import spawn_main; ..."`:
with `-c`, the current directory is the first entry of sys.path, so a user who runs groundcode
inside a repository that ships `types.py`, `pathlib.py` or `sitecustomize.py` would run that file
in the worker before the standard library's (the worker imports `functools`, which imports
`types`), or crash it. Inside `isolated()` the interpreter flags multiprocessing passes to the
child gain `-I` (isolated mode: no current or script directory on sys.path, no PYTHON*
variables, no user site); the worker then takes the parent's sys.path from spawn's preparation
data, as it always does. Only launches made by this thread inside the block are changed (a
thread-local switch on multiprocessing.util's flag function, installed once).

Inside the block this thread also blocks SIGINT, and a child starts with its parent's signal
mask: a terminal's Ctrl-C reaches the whole process group, and a worker still importing its
modules when it lands printed a KeyboardInterrupt traceback of its own before its initializer
could ignore the signal. The parent takes the Ctrl-C when the block ends (another thread may
take it sooner), so none is lost. Test: tests/test_interrupt.py.
Test: tests/test_hostile.py (a Jedi worker started with the hostile repository as the current
directory).
"""
from __future__ import annotations

import contextlib
import signal
import threading

_tls = threading.local()
_installed = False
_lock = threading.Lock()


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        from multiprocessing import util
        original = util._args_from_interpreter_flags

        def flags():
            args = original()
            if getattr(_tls, "on", False) and "-I" not in args:
                args = ["-I", *args]
            return args
        util._args_from_interpreter_flags = flags
        _installed = True


@contextlib.contextmanager
def isolated():
    _install()
    was = getattr(_tls, "on", False)
    _tls.on = True
    mask = getattr(signal, "pthread_sigmask", None)
    old = mask(signal.SIG_BLOCK, {signal.SIGINT}) if mask is not None else None
    try:
        yield
    finally:
        _tls.on = was
        if old is not None:
            mask(signal.SIG_SETMASK, old)
