"""A row whose guides still owe analysis answers when it ends waits for them without stopping
the batch (issue 29 item 3): the engine polls `Guide.owes` each step, the other rows decode on,
and `settle` then runs with what landed (`row.polled`), ending the row or cutting it back."""
from __future__ import annotations

import threading
import time

import pytest

from groundcode.config import SamplingConfig
from groundcode.decoding.engine import Engine, RowSpec
from groundcode.decoding.guides.base import Guide, Rollback, Stop
from groundcode.decoding.vocab import VocabIndex


class _Ticket:
    def __init__(self):
        self.answer = None
        self.landed = threading.Event()

    def land(self, answer) -> None:
        self.answer = answer
        self.landed.set()

    def result(self, timeout=0):
        if timeout:
            self.landed.wait(timeout)
        return self.answer


class _Owing(Guide):
    """Ends its row after `after` tokens, owing `ticket` until `wait_s` after that; settle
    records what it saw and may propose a cut once."""
    stateless = True

    def __init__(self, after: int, ticket: _Ticket, wait_s: float, cut_to: int | None = None):
        self.after, self.ticket, self.wait_s, self.cut_to = after, ticket, wait_s, cut_to
        self.until = None
        self.land_after = None
        self.settled = []                    # (polled, answer, perf_counter) per settle

    def stop(self, row):
        return Stop("test") if len(row.tokens) >= self.after else None

    def owes(self, row):
        if self.ticket.result(0) is not None:
            return None
        if self.until is None:
            self.until = time.perf_counter() + self.wait_s
            if self.land_after is not None:      # the answer lands this long after the row's end
                threading.Timer(self.land_after, self.ticket.land, args=("members",)).start()
        return [self.ticket], self.until

    def final_upto(self, row):
        return 0 if self.cut_to is not None else len(row.text)    # a cut may still come

    def settle(self, row):
        self.settled.append((row.polled, self.ticket.result(0), time.perf_counter()))
        if self.cut_to is not None:
            cut, self.cut_to, self.after = self.cut_to, None, 10_000
            return Rollback(cut, "test")
        return None


def _run(lm, owing: Guide, new_tokens: int = 40, hook=None):
    """Rows a (with `owing`) and b (free) in one batch: (outputs, [(perf_counter, event)]);
    `hook(event)` runs in the decoding loop as each event comes."""
    eng = Engine(lm.model, lm.tokenizer, VocabIndex.for_tokenizer(lm.tokenizer))
    prompt = lm.tokenizer("def f(x):\n    return x", add_special_tokens=False)["input_ids"]
    events = []

    def on_event(e):
        events.append((time.perf_counter(), e))
        if hook is not None:
            hook(e)
    outs = eng.generate([RowSpec(prompt, guides=[owing], id="a"), RowSpec(prompt, id="b")],
                        SamplingConfig(max_new_tokens=new_tokens), on_event=on_event)
    return outs, events


def _b_tokens() -> tuple[list, object]:
    """A counter of row b's tokens, and the hook that keeps it."""
    count = [0]

    def hook(e):
        if e.kind == "token" and e.row == "b":
            count[0] += 1
    return count, hook


def test_the_other_rows_decode_while_a_row_waits_for_its_answers(tiny_lm):
    """Row a ends owing an answer that lands once row b has written 6 more tokens (counted in
    the decoding loop, so no machine is too slow for it): b decodes while a waits; a then
    settles once, polled, with the answer."""
    ticket = _Ticket()
    owing = _Owing(3, ticket, wait_s=60.0)
    count, counted = _b_tokens()
    at = []

    def hook(e):
        counted(e)
        if owing.until is not None and not at:
            at.append(count[0])
        if at and count[0] >= at[0] + 6 and not ticket.landed.is_set():
            ticket.land("members")
    outs, events = _run(tiny_lm, owing, hook=hook)
    a_tokens = [t for t, e in events if e.kind == "token" and e.row == "a"]
    a_done = next(t for t, e in events if e.kind == "finished" and e.row == "a")
    b_during = [t for t, e in events if e.kind == "token" and e.row == "b" and a_tokens[-1] < t < a_done]
    assert len(outs[0].tokens) == 3 and outs[0].finish_reason == "stop"
    assert len(b_during) >= 5                               # row b went on while a waited ...
    assert a_done < owing.until                             # ... and a ended when it landed
    assert owing.settled == [(True, "members", owing.settled[0][2])]   # once, polled, answered
    assert len(outs[1].tokens) == 40


def test_an_answer_that_never_comes_ends_the_wait_at_its_instant(tiny_lm):
    owing = _Owing(2, _Ticket(), wait_s=0.3)
    outs, events = _run(tiny_lm, owing, new_tokens=8)
    a_last = [t for t, e in events if e.kind == "token" and e.row == "a"][-1]
    a_done = next(t for t, e in events if e.kind == "finished" and e.row == "a")
    assert 0.25 <= a_done - a_last < 5.0
    assert [s[:2] for s in owing.settled] == [(True, None)]   # settled with what landed: nothing
    assert outs[0].finish_reason == "stop"


@pytest.mark.parametrize("land_after", [0.0, 0.3])
def test_a_cut_proposed_after_the_wait_lets_the_row_go_on(tiny_lm, land_after):
    """The cut after a wait (pad columns were fed for the row meanwhile) or with nothing owed
    (settled at once, as before): the row goes on from the cut and writes what greedy decoding
    of its prompt writes — the pad columns are attended by no one."""
    ticket = _Ticket()
    if not land_after:
        ticket.land("members")
    owing = _Owing(4, ticket, wait_s=30.0, cut_to=2)
    owing.land_after = land_after or None
    outs, events = _run(tiny_lm, owing, new_tokens=12)
    plain, _ = _run(tiny_lm, _Plain(), new_tokens=12)
    kinds = [e.kind for _, e in events if e.row == "a"]
    assert "rollback" in kinds
    assert outs[0].rollbacks == 1 and outs[0].finish_reason == "length"
    assert outs[0].tokens == plain[0].tokens
    assert owing.settled[0][:2] == ((True, "members") if land_after else (False, "members"))


class _Plain(Guide):
    stateless = True


def test_a_lone_waiting_row_runs_no_forwards(tiny_lm, monkeypatch):
    """Every row waiting: the batch sleeps between polls instead of feeding pad columns."""
    ticket = _Ticket()
    owing = _Owing(2, ticket, wait_s=30.0)
    owing.land_after = 0.3
    eng = Engine(tiny_lm.model, tiny_lm.tokenizer, VocabIndex.for_tokenizer(tiny_lm.tokenizer))
    calls = []
    real = eng.forward
    monkeypatch.setattr(eng, "forward", lambda *a, **k: calls.append(1) or real(*a, **k))
    prompt = tiny_lm.tokenizer("x = 1\n", add_special_tokens=False)["input_ids"]
    out = eng.generate([RowSpec(prompt, guides=[owing])], SamplingConfig(max_new_tokens=8))[0]
    assert len(out.tokens) == 2 and owing.settled[0][:2] == (True, "members")
    assert len(calls) == 2                  # the prefill, and the forward after the first token


class _Holding(Guide):
    """Holds its row once it has `at` tokens (an answer it needs first runs) until `count[0]`
    (row b's tokens) reaches `until`."""
    stateless = True

    def __init__(self, at: int, count: list, until: int):
        self.at, self.count, self.until, self.held_steps = at, count, until, 0

    def holding(self, row):
        if len(row.tokens) != self.at or self.count[0] >= self.until:
            return False
        self.held_steps += 1
        return True


def test_a_held_row_keeps_its_logits_while_the_others_decode(tiny_lm):
    """A guide holds row a after 3 tokens until row b has 9: row b decodes meanwhile; row a
    then goes on exactly as greedy decoding does (its logits were kept through the pad
    columns)."""
    count, hook = _b_tokens()
    holding = _Holding(3, count, 9)
    outs, events = _run(tiny_lm, holding, new_tokens=10, hook=hook)
    plain, _ = _run(tiny_lm, _Plain(), new_tokens=10)
    a_times = [t for t, e in events if e.kind == "token" and e.row == "a"]
    b_during = [t for t, e in events if e.kind == "token" and e.row == "b" and a_times[2] < t < a_times[3]]
    assert holding.held_steps >= 2
    assert len(b_during) >= 5                   # b's tokens 4-10 come while a is held
    assert outs[0].tokens == plain[0].tokens and outs[1].tokens == plain[1].tokens
