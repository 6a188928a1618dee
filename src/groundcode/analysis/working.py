"""How many analyzer calls are running now in other processes (Jedi's worker, a language server):
work on this machine's cores that the process's own thread counts do not see. The engine on
llama.cpp gives them a core while they run (decoding/llama_engine.py): llama.cpp's threads meet
at a barrier after every operation, so one of them descheduled by an analyzer stalls them all
(one token, smollm2-135m, 2 cores, analyzers at work: p90 25.8 ms and p99 129 ms against 11 ms
idle; with a core given up, p90 18.9 and p99 33 ms; docs/EDITORS.md).

    working.started(); ... working.ended()     # around one call (every start ends once)
    working.now() -> int                       # calls running now
Test: tests/test_llama_engine.py.
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_running = 0


def started() -> None:
    global _running
    with _lock:
        _running += 1


def ended() -> None:
    global _running
    with _lock:
        _running = max(0, _running - 1)


def now() -> int:
    return _running
