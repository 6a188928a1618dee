"""Torch threads that follow the machine (issue 44 item 5, models/threads.py): the pure rule from
(cores, busy cores) to threads, the GROUNDCODE_THREADS override, the follower's rate limit, and
the session's scheduler setting the count on its own thread between forwards. The
machine's usage is a scripted double: nothing here depends on what the machine is doing."""
from __future__ import annotations

import threading

import pytest
import torch

from groundcode.errors import GroundcodeError
from groundcode.models import threads as T


@pytest.mark.parametrize("cores, busy, cap, want", [
    (2, 0.0, None, 2), (2, 0.4, None, 2),        # idle (noise under half a core): every core
    (2, 0.5, None, 1), (2, 1.0, None, 1),        # one core taken: one thread
    (2, 2.0, None, 1), (2, 14.0, None, 1),       # load 14 on 2 cores: one, never zero
    (16, 4.2, None, 12), (16, 0.0, 8, 8),        # at most torch's default (physical cores)
    (1, 0.0, None, 1), (2, -1.0, None, 2),
])
def test_threads_are_the_cores_others_leave_free(cores, busy, cap, want):
    assert T.threads_for(cores, busy, cap) == want


def test_the_override(monkeypatch):
    monkeypatch.setenv(T.ENV, "3")
    assert T.override() == 3
    for v in ("", "auto", " AUTO "):
        monkeypatch.setenv(T.ENV, v)
        assert T.override() is None
    for v in ("0", "two", "-1"):
        monkeypatch.setenv(T.ENV, v)
        with pytest.raises(GroundcodeError, match="GROUNDCODE_THREADS must be"):
            T.override()


class _Usage:
    """Scripted: `others()` returns the next value."""

    def __init__(self, values):
        self.values = list(values)

    def others(self):
        return self.values.pop(0) if self.values else None


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture()
def restore_threads(monkeypatch):
    monkeypatch.delenv(T.ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(T, "cores", lambda: 2)
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_the_follower_measures_at_most_every_window_and_sets_on_change(restore_threads, monkeypatch):
    clock = _Clock()
    f = T.Threads(every_s=2.0, clock=clock, usage=_Usage([None, 1.0, 0.0]))   # None: the first sample
    f.cap = 2
    clock.t = 0.05
    assert f.follow() == f.current                 # before first_s (0.1 s): no measurement
    clock.t = 0.2
    assert f.follow() == 1 and torch.get_num_threads() == 1 and f.busy == 1.0   # the other core busy
    clock.t = 2.0
    assert f.follow() == 1                         # then every 2 s: not measured again yet
    clock.t = 2.3
    assert f.follow() == 2 and torch.get_num_threads() == 2     # free again
    monkeypatch.setenv(T.ENV, "1")                 # the override: fixed, never measured
    g = T.Threads(clock=clock, usage=_Usage([None, 0.0]))
    clock.t = 100.0
    assert g.follow() == 1 and torch.get_num_threads() == 1 and g.busy is None
    assert T.Threads.for_engine("cuda:0") is None and T.Threads.for_engine("remote") is None


def test_before_the_first_measurement_the_count_follows_the_load_average(restore_threads, monkeypatch):
    """Until it has measured, the follower starts from the 1-minute load average less itself: a
    suite's short sessions on a busy machine start on one thread; idle, on every core."""
    monkeypatch.setattr(T, "cores", lambda: 2)
    monkeypatch.setattr(T.os, "getloadavg", lambda: (3.1, 3.0, 2.0))     # itself + 2 busy cores
    assert T.Threads(usage=_Usage([None])).current == 1
    monkeypatch.setattr(T.os, "getloadavg", lambda: (1.2, 1.0, 1.0))     # itself, a little noise
    f = T.Threads(usage=_Usage([None]))
    assert f.current == f.cap
    monkeypatch.setenv(T.ENV, "2")                                        # fixed: no guess
    assert T.Threads(usage=_Usage([None])).current == 2


def test_an_engine_with_its_own_threads_gets_the_count_and_torch_is_left_alone(restore_threads):
    """llama.cpp's engine (decoding/llama_engine.py) sets its own count: torch's stays as it was."""
    clock, got = _Clock(), []
    torch.set_num_threads(1)
    f = T.Threads.for_engine("cpu", apply=got.append)
    f.clock, f.usage, f.cap, f.every_s, f._measured = clock, _Usage([0.0, 1.0]), 2, 2.0, 0.0
    f.current = 2
    assert f.follow() == 2 and got == [2]
    clock.t = 2.5
    assert f.follow() == 2 and got == [2]          # measured, unchanged: not set again
    clock.t = 5.0
    assert f.follow() == 1 and got == [2, 1]       # the other core busy
    assert torch.get_num_threads() == 1


def test_the_usage_of_other_processes_is_measured_without_this_ones(restore_threads):
    """A real measurement: this process spinning on one core for 0.3 s is not counted."""
    import time
    u = T.Usage()
    assert u.others() is None
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        pass
    got = u.others()
    assert got is not None and 0.0 <= got <= T.cores() + 0.5


def test_the_scheduler_follows_the_machine_during_a_request_on_its_own_thread(restore_threads, tiny_lm):
    """The machine is idle, then other processes keep one core busy (scripted), while one request
    decodes: the scheduler measures between its forwards, not only when a request arrives (a batch
    submits every request at once), and sets one thread on its own thread (torch's count is per
    OS thread) before the next forward. Two requests: each turn's follow is a clock read between
    measurements, so a scripted `every_s` of 0 measures every turn."""
    from groundcode.api import Generator
    from groundcode.config import SamplingConfig
    from groundcode.session import Request
    calls = []
    real = torch.set_num_threads

    def record(n):
        calls.append((n, threading.current_thread().name))
        real(n)
    with Generator(tiny_lm) as gen:
        sched = gen.session._sched
        assert sched.threads is not None                   # the tiny model runs on the CPU
        usage = _Usage([0.0, 1.2])
        # the scheduler's thread waits for a request: nothing reads these while they change
        sched.threads.cap, sched.threads.usage, sched.threads.every_s = 2, usage, 0.0
        torch.set_num_threads, saved = record, torch.set_num_threads
        try:
            out = list(gen.session.submit(Request(prompt_text="def f():\n",
                                                  sampling=SamplingConfig(max_new_tokens=4))))
        finally:
            torch.set_num_threads = saved
    assert out and usage.values == []                     # both measured within the one request
    assert calls and calls[-1] == (1, "groundcode-scheduler") and sched.threads.current == 1, calls
    assert all(name == "groundcode-scheduler" for _, name in calls), calls
