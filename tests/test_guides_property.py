"""A property of every guide the registry can build (heal, body_end, stop_at, stop_strings,
repetition, dereference, keywords, names, toolcall), alone and all together: driven like the engine
(checkpoints.py: a snapshot per token, a cut restores every guide) through random token
sequences with random cuts, a guide that was cut back and fed the same tokens again says exactly
what a fresh guide fed only those tokens says — masks, checks, rollback proposals, stops,
final offsets and trigger records. A guide holding state it does not snapshot fails here; so
does a class that declares neither a snapshot nor `stateless` (guides/base.py)."""
from __future__ import annotations

import random
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fake_analyzer import FakeBase
from groundcode.analysis.base import Analysis, Answered, CallSignature, ParamSpec, SignatureAnswer, SignatureQuery
from groundcode.analysis.wait import WaitPolicy
from groundcode.api import CodeContext
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.decoding.checkpoints import Checkpoints
from groundcode.decoding.guides import registry
from groundcode.decoding.guides.base import Guide, RowView, as_rollback
from groundcode.decoding.guides.toolcall import ToolCallGuide
from groundcode.decoding.vocab import VocabIndex

TOKENS = ["self", ".", "_", "reg", "registered", "_updates", "append", "(", ")", "\n", "        ",
          "    ", " ", "=", "[]", ".append", "._", "x", "return", "size", ").", "foo", "1", "#",
          " c", ":", "a", ",", "item", "=1", " qty", "add", ".add", "(item", '"', "'s", "<COMP>",
          "\n\n", "    def", "real", "if", " x", "e", "d", "{", "}", "this", " }", "`", "${", "/*", "*/"]
T = {t: i for i, t in enumerate(TOKENS)}
VOCAB = VocabIndex(TOKENS)
WEIGHTS = [6 if t in ("self", ".", "\n", "        ", "x", "(", ")", " ") else 2 for t in TOKENS]


class Analyzer(FakeBase):
    """Members of a few receivers, and one signature: `add(item, *, qty=1)`."""

    def ask(self, query):
        if isinstance(query, SignatureQuery):
            sig = CallSignature("add", (ParamSpec("item", "either", True), ParamSpec("qty", "keyword", False))) \
                if query.name == "add" else None
            return Answered(SignatureAnswer(sig, 0.1, None if sig else "unknown"))
        return super().ask(query)

    def members(self, code, path, line, column, *, receiver, cache_key):
        names = frozenset({"self": ["_registered_updates", "size", "add", "reg"],
                           "self.size": ["real", "bit_length"],
                           "x": ["append", "add", "foo"],
                           "<names>": ["self", "x", "size", "item", "real", "console"]}.get(receiver, ()))
        return Analysis(receiver, names, 1.0, False, None if names else "empty")


def _ctx(ts: bool = False):
    if ts:                            # a TypeScript body: BraceEnd, the monitor in TypeScript
        before = "class A {\n  f(x: number[]): void {\n"
        return CodeContext(path=Path("a.ts"), repo=Path("."), before=before + "    ", after="\n  }\n}\n",
                           starts_at_line=False, kind="body")
    before = "class A:\n    def f(self, x: list):\n"
    return CodeContext(path=Path("a.py"), repo=Path("."), before=before + "        ", after="",
                       stop_indent=4, lex_prefix="        ", starts_at_line=False)


def _build(names, stop: str, owed: str, ts: bool = False) -> list:
    analyzer = Analyzer()
    gen = SimpleNamespace(monitor=MonitorConfig(enabled=True, keywords=True, names=True), waits=WaitPolicy(),
                          analyzer_for=lambda ctx: analyzer,
                          tool_guide=lambda ctx: ToolCallGuide(analyzer, T["<COMP>"], threshold=0.5))
    spec = registry.GuideSpec(gen, _ctx(ts), SimpleNamespace(owed=owed), SamplingConfig(stop=stop),
                              stop=("\n\n", "#"))
    return registry.build(names, spec)


def _kinds():
    """Every guide by name (built alone), and all together; then those of a TypeScript body."""
    full = _build(("dereference", "keywords", "names", "toolcall"), "statement", " ")
    names = [type(g).__name__ for g in full]
    assert {"Heal", "BodyEnd", "StopAt", "StopStrings", "RepetitionStop", "DereferenceMonitor",
            "KeywordArgMonitor", "NamesMonitor", "ToolCallGuide"} <= set(names), names
    ts = [type(g).__name__ for g in _build(("dereference", "names"), "block", " ", ts=True)]
    assert {"BraceEnd", "DereferenceMonitor", "TsNamesMonitor"} <= set(ts) and "BodyEnd" not in ts, ts
    return [(n, i, False) for i, n in enumerate(names)] + [("all", None, False)] + \
        [(f"ts-{n}", i, True) for i, n in enumerate(ts)] + [("ts-all", None, True)]


KINDS = _kinds()


def _start(which, ts: bool = False):
    gs = _build(("dereference", "keywords", "names", "toolcall"), "statement", " ") if not ts else \
        _build(("dereference", "names"), "block", " ", ts=True)
    if which is not None:
        gs = [gs[which]]
    row = RowView(0, _ctx(ts).continued(" "), VOCAB)
    for g in gs:
        g.reset(row)
    return Checkpoints(row, gs), row


def _scores(k: int, tok: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 * k + tok)
    return torch.randn(len(TOKENS), generator=g)


def _arr(m):
    return None if m is None else tuple(sorted(np.asarray(m).tolist()))


def _step(ck, row, tok: int) -> list:
    """One engine step with `tok` sampled: what every guide said (proposals recorded, not
    applied: the property is about the same tokens)."""
    gs, k = ck.guides, len(row.tokens)
    said = []
    scores = _scores(k, tok)
    for g in gs:
        g.logits(row, scores)
    said.append(tuple(torch.isfinite(scores).tolist()))
    said += [_arr(g.mask(row)) for g in gs]
    said += [_arr(g.check(row, tok)) for g in gs]
    ck.accept(tok)
    for g in gs:
        p = as_rollback(g.advance(row, tok))
        said.append(None if p is None else (p.length, p.reason))
    ck.mark()
    said += [repr(g.stop(row)) for g in gs]
    said += [g.final_upto(row) for g in gs]
    return said


def _sequence(rng) -> list[int]:
    """Random tokens; every other sequence holds a run written 3-5 times (a loop, for the
    repetition guide), inside a line or as whole lines."""
    ids = rng.choices(range(len(TOKENS)), weights=WEIGHTS, k=rng.randrange(8, 40))
    if rng.random() < 0.5:
        run = rng.choices(range(len(TOKENS)), weights=WEIGHTS, k=rng.randrange(1, 5))
        run = run + [T["\n"], T["        "]] if rng.random() < 0.6 else run + [T["self"]]
        at = rng.randrange(0, len(ids))
        ids = ids[:at] + run * rng.randrange(3, 6) + ids[at:]
    return ids


def _triggers(row):
    return [(t.receiver, t.chosen, t.failed_open, t.binding, t.constrained, t.reason) for t in row.triggers]


@pytest.mark.parametrize("name,which,ts", KINDS, ids=[k[0] for k in KINDS])
def test_a_restored_guide_says_what_a_fresh_replay_says(name, which, ts):
    rng = random.Random(zlib.crc32(name.encode()))     # the same sequences in every process
    for trial in range(100):
        ids = _sequence(rng)
        fresh_ck, fresh = _start(which, ts)
        trace = [_step(fresh_ck, fresh, t) for t in ids]
        ck, row = _start(which, ts)
        at, cuts = 0, 0
        while at < len(ids):
            went = min(len(ids), at + rng.randrange(1, 8))
            for t in ids[at:went]:
                _step(ck, row, t)
            # any earlier length (the start now and then), then on past where it was
            back = 0 if rng.random() < 0.1 else rng.randrange(max(0, at - 6), went + 1)
            ck.cut(back)
            cuts += 1
            # after the cut: what a fresh run fed ids[:back] said next, token by token
            again = [_step(ck, row, t) for t in ids[back:max(went + 1, back + 3)]]
            assert again == trace[back:back + len(again)], (name, trial, ids, back)
            at = back + len(again)
        assert row.text == fresh.text and _triggers(row) == _triggers(fresh), (name, trial)
        assert cuts


def test_a_guide_declares_its_state_or_that_it_has_none():
    with pytest.raises(TypeError, match="snapshot"):
        class Forgetful(Guide):          # noqa: F841 (defining it is the test)
            def advance(self, row, token):
                self.count = getattr(self, "count", 0) + 1

    class Declared(Guide):
        stateless = True
    assert Declared().snapshot() is None


class _After:
    """A ticket that answers on its n-th poll (a signature that lands late)."""

    def __init__(self, n: int, answer):
        self.n, self.answer = n, answer

    def result(self, timeout=0):
        self.n -= 1
        return self.answer if self.n < 0 else None


def test_a_wrong_keyword_written_before_its_signature_landed_is_redone():
    """Found by the per-analyzer benchmark: a language server's signature that landed after
    `wrong=` was written proposed a cut to before the call had opened; the restored state knew
    no call and `rolled_back` failed (AttributeError on the record). The proposal now carries the
    call: the argument is redone under the mask, its record put back."""
    from groundcode.decoding.checkpoints import proposals_of
    from groundcode.decoding.guides.keyword_args import NARROW, KeywordArgMonitor

    class LateSignature(Analyzer):
        def ask(self, query):
            if isinstance(query, SignatureQuery):
                return _After(2, Analyzer.ask(self, query).result())
            return super().ask(query)

    g = KeywordArgMonitor(LateSignature())
    row = RowView(0, _ctx().continued(""), VOCAB)
    g.reset(row)
    ck = Checkpoints(row, [g])
    cut = None
    for tok in ["add", "(", "x", "=1", ",", " qty", "=1"]:
        ck.accept(T[tok])
        proposals = proposals_of([g], lambda gd: gd.advance(row, T[tok]))
        ck.mark()
        if proposals:
            length, winners = Checkpoints.resolve(proposals)
            ck.cut(length, winners)
            cut = length
            break
    assert cut == 2 and row.text == "add("                   # back to the argument's start
    assert g.state == NARROW and g.record is not None and g.record.rolled_back
    assert any(t is g.record for t in row.triggers) and g.record.receiver == "add("
