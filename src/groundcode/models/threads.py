"""How many torch threads the engine uses on a CPU: as many as the cores other processes leave
free (issue 44 item 5). On 2 cores beside one CPU-bound process per core, a float32 prefill chunk
of a layer's size ran 1.7x slower on two threads than on one, and 1.3x faster on two when idle
(docs/EDITORS.md, "Torch threads follow the machine"; benchmarks/threads_loaded.py): a second
thread waits for a core another process holds.

    threads_for(cores, busy, cap)   # the pure rule: cores minus the busy ones (rounded), >= 1
    t = Threads.for_engine(device)  # None off the CPU; the scheduler makes one
    t.follow()                      # on the thread that runs the forwards, every turn:
                                    # measure when due, set torch's count when it changes

`busy` is the CPU time other processes used since the last measurement, in cores: the system's
busy time (psutil.cpu_times) less this process's own (os.times), so the engine's own threads
never count against it; without psutil, the 1-minute load average less one. `follow` measures
first `first_s` after the follower starts (a batch run submits every request at once: its first
forwards must not all run on a count chosen before anything was measured), then at most every
`every_s`, and never blocks: between measurements it is a clock read and a comparison. Until the
first measurement the count is a guess from the 1-minute load average less one (this process). Overrides: `GROUNDCODE_THREADS=N` fixes the count;
`OMP_NUM_THREADS` set by the user is left alone (torch reads it); a count set with
torch.set_num_threads before the scheduler starts is the most it uses. torch keeps a thread count per
OS thread (a thread keeps the count it first ran with), so `follow` runs on the scheduler's
thread. Test: tests/test_threads.py.
"""
from __future__ import annotations

import math
import os
import time

ENV = "GROUNDCODE_THREADS"


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def threads_for(cores: int, busy: float, cap: int | None = None) -> int:
    """Threads for `cores` cores of which other processes keep `busy` (in cores) busy: a core
    counts as busy from half of it on; at least 1, at most `cap` (torch's default: the physical
    cores, or OMP_NUM_THREADS) when given."""
    most = max(1, min(cores, cap) if cap else cores)
    taken = math.floor(max(0.0, busy) + 0.5)
    return max(1, min(most, cores - taken))


def override() -> int | None:
    """GROUNDCODE_THREADS=N (N >= 1): the fixed count; None when unset, empty or `auto`."""
    v = os.environ.get(ENV, "").strip().lower()
    if not v or v == "auto":
        return None
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        from ..errors import GroundcodeError
        raise GroundcodeError(f"{ENV} must be a whole number >= 1 or auto, got {v!r}")
    return n


def load_less_self() -> float:
    """Cores other processes keep busy by the 1-minute load average less one (this process), >= 0:
    the measure without psutil, and the guess before the first measurement."""
    return max(0.0, os.getloadavg()[0] - 1.0)


class Usage:
    """Cores other processes used between two calls of `others()` (None at the first)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._last = None

    @staticmethod
    def _sample() -> tuple[float, float] | None:
        try:
            import psutil
        except ImportError:
            return None
        t = psutil.cpu_times()
        busy = sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "guest", 0.0) \
            - getattr(t, "guest_nice", 0.0)       # guest time is counted in user time already
        own = os.times()
        return busy, own.user + own.system

    def others(self) -> float | None:
        now, s = self.clock(), self._sample()
        if s is None:
            return load_less_self()
        last, self._last = self._last, (now, *s)
        if last is None or now <= last[0]:
            return None
        return max(0.0, ((s[0] - last[1]) - (s[1] - last[2])) / (now - last[0]))


class Threads:
    """The engine's thread count on a CPU, following the machine."""

    def __init__(self, every_s: float = 2.0, clock=time.monotonic, usage: Usage | None = None,
                 first_s: float = 0.1):
        import torch
        self.torch = torch
        self.every_s, self.first_s, self.clock = every_s, first_s, clock
        self.cap = torch.get_num_threads()        # torch's default: physical cores / OMP_NUM_THREADS
        self.fixed = override()
        self.auto = self.fixed is None and not os.environ.get("OMP_NUM_THREADS")
        self.usage = usage or Usage(clock)
        self.usage.others()                       # the first sample: the window starts now
        self._measured = clock()
        self.current = self.fixed or (self._guess() if self.auto else self.cap)
        self.busy: float | None = None            # the last measurement (cores), for records
        self.apply = None                         # for_engine: an engine's own thread setter
        self._applied: int | None = None

    def _guess(self) -> int:
        """The count before the first measurement: the 1-minute load average less this process
        (a test suite's short sessions, a batch's first forwards on a busy machine)."""
        try:
            return threads_for(cores(), load_less_self(), self.cap)
        except (AttributeError, OSError):
            return self.cap

    @classmethod
    def for_engine(cls, device, apply=None) -> "Threads | None":
        """A follower for an engine on `device`; None off the CPU (a GPU, a remote model).
        `apply(n)`: sets an engine's own count (llama.cpp's) instead of torch's."""
        if not str(device or "").startswith("cpu"):
            return None
        t = cls()
        t.apply = apply
        return t

    def follow(self) -> int:
        """Measure (first after `first_s`, then at most every `every_s`) and set torch's count on
        this thread when it changes."""
        now = self.clock()
        due = self.every_s if self.busy is not None else min(self.first_s, self.every_s)
        if self.auto and now - self._measured >= due:
            busy = self.usage.others()
            self._measured = now
            if busy is not None:
                self.busy = busy
                self.current = threads_for(cores(), busy, self.cap)
        if self.apply is not None:
            if self._applied != self.current:
                self.apply(self.current)
                self._applied = self.current
        elif self.torch.get_num_threads() != self.current:
            self.torch.set_num_threads(self.current)
        return self.current


def free_cores(window_s: float = 0.3) -> float:
    """Cores other processes leave free, measured over a short sleep (benchmarks)."""
    u = Usage()
    u.others()
    time.sleep(window_s)
    return max(0.0, cores() - (u.others() or 0.0))
