"""The engine on llama.cpp (`--dtype gguf`, decoding/llama_engine.py) against the torch engine,
token for token: the llama.cpp runner is replaced by a double with its four calls that keeps
llama.cpp's cache as cells (sequence, position) -> token and computes each position's logits
with the tiny model from exactly the cells that sequence holds, so a cell left behind by a cut,
a position fed twice or a prompt copied short changes the text or fails the test."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from groundcode.api import Generator
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.decoding.engine import Engine, RowSpec
from groundcode.decoding.llama_engine import KEPT, LlamaEngine
from groundcode.decoding.vocab import VocabIndex
from groundcode.errors import GroundcodeError
from groundcode.models.load import GGUF, LoadedModel, load_model
from groundcode.session import Request
from test_engine import _ids, _RollbackOnce


class CellRunner:
    """llama_cpp.LlamaRunner's calls over a dict of cells; logits from the tiny model."""

    def __init__(self, model, n_seq: int):
        self.model, self.n_seq, self.ctx = model, n_seq, object()
        self.cells: dict[int, dict[int, int]] = {}
        self.decodes: list[int] = []          # entries per decode call
        self.threads = None
        self.threads_seen: list = []          # the thread count of each decode
        self.clears = 0
        self.n_ctx = None                     # cells in all (None: no limit)
        self.uids: dict[int, dict[int, int]] = {}   # (sequence, position) -> the cell's identity
        self._uid = 0                         # (seq_cp shares a cell: the same identity)
        self.peak = 0                         # most cells held at once

    def set_threads(self, n):
        self.threads = n

    @torch.inference_mode()
    def decode(self, tokens, positions, seqs, wanted):
        self.decodes.append(len(tokens))
        self.threads_seen.append(self.threads)
        positions = list(positions)
        for s in set(seqs):
            held = self.cells.get(s, {})
            new = [p for p, q in zip(positions, seqs) if q == s]
            assert not held or max(held) < min(new), f"sequence {s} holds positions past {min(new)}"
        for t, p, s in zip(tokens, positions, seqs):
            cells = self.cells.setdefault(s, {})
            assert p not in cells, f"position {p} of sequence {s} fed twice"
            cells[p] = t
            self._uid += 1
            self.uids.setdefault(s, {})[p] = self._uid
        held = len({u for c in self.uids.values() for u in c.values()})
        if self.n_ctx is not None and held > self.n_ctx:       # as llama_decode's rc 1
            for p, s in zip(positions, seqs):
                del self.cells[s][p], self.uids[s][p]
            raise GroundcodeError(f"llama.cpp could not decode {len(tokens)} tokens: no room left in its KV cache")
        self.peak = max(self.peak, held)
        out = []
        for p, s, w in zip(positions, seqs, wanted):
            if w:
                cells = self.cells[s]
                ids = [cells[q] for q in range(p + 1)]          # a hole: KeyError
                out.append(self.model(input_ids=torch.tensor([ids])).logits[0, -1].float().numpy())
        return np.stack(out)

    def clear(self):
        self.cells, self.uids = {}, {}
        self.clears += 1

    def seq_rm(self, seq, p0=-1):
        cells, uids = self.cells.get(seq, {}), self.uids.get(seq, {})
        for p in [p for p in cells if p0 < 0 or p >= p0]:
            del cells[p], uids[p]

    def seq_cp(self, src, dst, p1):
        dst_cells, dst_uids = self.cells.setdefault(dst, {}), self.uids.setdefault(dst, {})
        for p, t in self.cells.get(src, {}).items():
            if p < p1:
                assert p not in dst_cells
                dst_cells[p], dst_uids[p] = t, self.uids[src][p]

    def close(self):
        self.ctx = None


class _Gguf:
    """GgufModel's shape: a runner per engine."""

    def __init__(self, model, n_ctx=None):
        self.model, self.runners, self.n_ctx = model, [], n_ctx

    def runner(self, n_seq):
        self.runners.append(CellRunner(self.model, n_seq))
        self.runners[-1].n_ctx = self.n_ctx
        return self.runners[-1]


def _lm(tiny_lm, model=None, n_ctx=None):
    return LoadedModel(_Gguf(model or tiny_lm.model, n_ctx), tiny_lm.tokenizer, "tiny", "cpu", GGUF, tiny_lm.template)


def _engines(tiny_lm):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    return Engine(tiny_lm.model, tiny_lm.tokenizer, vocab), LlamaEngine(_lm(tiny_lm), vocab, max_rows=4)


def test_greedy_rows_and_samples_give_the_torch_engines_tokens(tiny_lm):
    torch_eng, eng = _engines(tiny_lm)
    a = _ids(tiny_lm, "import os\n")
    b = _ids(tiny_lm, "def read(path):\n    with open(path) as fh:\n        return fh.")
    s = SamplingConfig(max_new_tokens=12)
    want = [o.tokens for o in torch_eng.generate([RowSpec(a), RowSpec(b)], s)]
    got = [o.tokens for o in eng.generate([RowSpec(a), RowSpec(b)], s)]
    assert got == want and all(len(t) == 12 for t in got)
    runner = eng.runner
    assert max(runner.decodes[-3:]) == 2                   # both rows in one llama_decode
    # n samples of one prompt share its cells (one prefill), each sampled with its own seed
    s = SamplingConfig(max_new_tokens=10, temperature=1.0, top_p=0.95, seed=7)
    specs = [RowSpec(b, seed=1), RowSpec(b, seed=2)]
    assert [o.tokens for o in eng.generate(specs, s)] == [o.tokens for o in torch_eng.generate(specs, s)]
    # every row's sequence is free again; only the kept prompt holds cells
    assert sorted(eng._free) == list(range(1, runner.n_seq))
    assert {s for s, c in runner.cells.items() if c} == {KEPT}


def test_a_rollback_cuts_the_sequence_and_continues_as_the_torch_engine(tiny_lm):
    torch_eng, eng = _engines(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    s = SamplingConfig(max_new_tokens=10)
    for to in (0, 3):
        want = torch_eng.generate([RowSpec(prompt, guides=[_RollbackOnce(at=6, to=to)])], s)[0]
        got = eng.generate([RowSpec(prompt, guides=[_RollbackOnce(at=6, to=to)])], s)[0]
        assert got.rollbacks == want.rollbacks == 1
        assert got.tokens == want.tokens and got.completion == want.completion


def test_a_prompt_reuses_the_kept_prompts_common_prefix(tiny_lm):
    _, eng = _engines(tiny_lm)
    first = _ids(tiny_lm, "class Cart:\n    def __init__(self):\n        self.items = []\n")
    second = first + _ids(tiny_lm, "    def add(self, item):\n        self.")
    assert eng.prefill(first)[2] == 0
    fed = sum(eng.runner.decodes)
    logits, seq, cached = eng.prefill(second)
    assert cached == len(first) and sum(eng.runner.decodes) - fed == len(second) - len(first)
    fresh = LlamaEngine(_lm(tiny_lm), eng.vocab, max_rows=4).prefill(second)[0]
    assert torch.equal(logits, fresh)
    seq.release()
    assert eng.prefill(second)[2] == len(second) - 1      # the last token is fed for its logits


def test_an_analyzer_at_work_takes_one_thread_and_gives_it_back(tiny_lm):
    from groundcode.analysis import working
    _, eng = _engines(tiny_lm)
    eng.set_threads(3)
    prompt = _ids(tiny_lm, "import os\n")
    s = SamplingConfig(max_new_tokens=4)
    eng.generate([RowSpec(prompt)], s)
    idle = len(eng.runner.threads_seen)
    working.started()                               # Jedi's worker or a server answers meanwhile
    try:
        eng.generate([RowSpec(prompt)], s)
    finally:
        working.ended()
    busy = len(eng.runner.threads_seen)
    eng.generate([RowSpec(prompt)], s)
    seen = eng.runner.threads_seen
    assert set(seen[:idle]) == {3} and set(seen[idle:busy]) == {2} and set(seen[busy:]) == {3}
    eng.set_threads(1)                              # never below one
    working.started()
    try:
        eng.generate([RowSpec(prompt)], s)
    finally:
        working.ended()
    assert eng.runner.threads_seen[-1] == 1


def test_a_prefill_keeps_every_thread_while_an_analyzer_works(tiny_lm):
    # a forward of WIDE tokens or more (a line end's prefill) has long operations: on one
    # thread fewer it took 37 against 27 ms a token (qwen, the editor, session 38)
    from groundcode.analysis import working
    from groundcode.decoding.llama_engine import WIDE
    _, eng = _engines(tiny_lm)
    eng.set_threads(2)
    long = _ids(tiny_lm, "class Cart:\n    def __init__(self):\n        self.items = []\n" * 3)
    assert len(long) > WIDE
    working.started()
    try:
        before = len(eng.runner.threads_seen)
        eng.prefill(long)[1].release()
        eng.generate([RowSpec(long + _ids(tiny_lm, "    def add"))], SamplingConfig(max_new_tokens=3))
    finally:
        working.ended()
    seen = eng.runner.threads_seen[before:]
    # the prefill's forward on both threads; the few new tokens and each decoded one on one
    assert seen[0] == 2 and seen[-1] == 1 and set(seen) == {1, 2}, seen


def test_token_probabilities_are_the_models_own(tiny_lm):
    from groundcode.decoding.probabilities import token_probabilities
    _, eng = _engines(tiny_lm)
    prompt = _ids(tiny_lm, "class Cart:\n    def add(self, item):\n        self.")
    tokens = _ids(tiny_lm, "items.append(item)")
    eng.prefill(prompt)                                   # the kept prompt's prefix is reused
    got = eng.token_probabilities(prompt, tokens)
    want = token_probabilities(tiny_lm.model, prompt, tokens)
    assert np.allclose(got, want, atol=1e-5) and len(got) == len(tokens)
    assert sorted(eng._free) == list(range(1, eng.runner.n_seq))


def test_the_session_serves_a_gguf_model_as_it_serves_the_torch_model(tiny_lm):
    prompts = ["def add(a, b):\n    return", "for item in items:\n    if item."]

    def run(lm):
        with Generator(lm, MonitorConfig(enabled=False)) as gen:
            streams = [gen.session.submit(Request(prompt_text=p, sampling=SamplingConfig(max_new_tokens=16)))
                       for p in prompts]
            return [st.result(timeout=60)[0].completion for st in streams]
    lm = _lm(tiny_lm)
    assert run(lm) == run(tiny_lm)
    with Generator(_lm(tiny_lm), MonitorConfig(enabled=False)) as gen:     # an editor's session:
        from groundcode.session import Session                             # no lookahead rows,
        sess = Session(gen, lookahead=2)                                   # which only make drafts
        assert sess._sched.drafter is None and sess._sched.lookahead == 0
        sess.close()
    assert len(lm.model.runners) == 1 and lm.model.runners[0].ctx is None   # closed with the generator


def test_a_reproducible_request_computes_its_whole_prompt(tiny_lm):
    """llama.cpp's numbers for a position depend on how its prompt was cut into batches, so a
    prefix kept from an earlier prompt made the same greedy request decode differently in two
    benchmark runs; a reproducible request reuses nothing (an editor's request still does)."""
    first = "class Cart:\n    def __init__(self):\n        self.items = []\n"
    second = first + "    def add(self, item):\n        self."

    def cached(reproducible: bool) -> list[int]:
        with Generator(_lm(tiny_lm), MonitorConfig(enabled=False, reproducible=reproducible)) as gen:
            out = []
            for p in (first, second):
                g = gen.session.submit(Request(prompt_text=p, sampling=SamplingConfig(max_new_tokens=2)))
                out.append(g.result(timeout=60)[0].tokens_cached)
            return out
    assert cached(True) == [0, 0]
    reused = cached(False)[1]
    assert reused > 0


def test_a_reproducible_prompt_starts_from_an_empty_cache_on_steady_threads(tiny_lm):
    """Where earlier requests left their cells, and the thread count, changed llama.cpp's
    numbers (qwen: a task decoded `) {` after 13 others and `&&` alone; a 700-token prefill
    on 2 threads and on 1 differ by 0.5 in a logit). A reproducible prefill empties the cache
    when no other sequence is in use (never under a live one: the double's cells would show
    the hole) and runs on the steady count, whatever the follower or an analyzer at work say."""
    from groundcode.analysis import working
    _, eng = _engines(tiny_lm)
    eng.steady = 1                      # the follower says 3, and 2 while an analyzer works
    eng.set_threads(3)
    first = _ids(tiny_lm, "class Cart:\n    def __init__(self):\n        self.items = []\n")
    second = first + _ids(tiny_lm, "    def add(self, item):\n        self.")
    eng.prefill(first)                                       # kept: sequence KEPT holds it
    assert eng.runner.clears == 0 and eng._kept
    seen = len(eng.runner.threads_seen)
    working.started()
    try:
        p = eng.new_prefill(second, reuse=False)
        while not p.step():
            pass
    finally:
        working.ended()
    assert eng.runner.clears == 1 and p.cached == 0 and eng._kept == second
    assert set(eng.runner.threads_seen[seen:]) == {1}
    alone = LlamaEngine(_lm(tiny_lm), eng.vocab, max_rows=4).prefill(second)[0]
    assert torch.equal(p.logits, alone)
    q = eng.new_prefill(first, reuse=False)                  # p's sequence is live: kept
    while not q.step():
        pass
    assert eng.runner.clears == 1
    t = int(p.logits[0].argmax())                            # p's cells are whole (a hole:
    nxt = eng.decode([t], [len(second)], [p.layers.id], [True])   # KeyError in the double)
    want = tiny_lm.model(input_ids=torch.tensor([second + [t]])).logits[0, -1].float()
    assert torch.allclose(nxt[0], want, atol=1e-5)
    assert eng.runner.threads_seen[-1] == 3                  # back to the follower's count
    p.layers.release()
    q.layers.release()


def test_requests_wait_for_cells_of_the_fixed_cache_and_all_finish(tiny_lm):
    """llama.cpp's cache is a fixed number of cells shared by every sequence: 8 benchmark rows
    of 1,100 tokens overran 8,192 and every row failed ("no room left in its KV cache"). The
    scheduler admits a job when its prompt and its rows' new tokens fit beside the running ones;
    the rest wait, and every request ends with the text it has alone."""
    from groundcode.decoding.scheduler import ROW_SLACK
    prompts = [f"class Cart{i}:\n    def __init__(self):\n        self.items = []\n    def add(self, item):\n        self."
               for i in range(4)]
    need = max(len(_ids(tiny_lm, p)) for p in prompts) + 8 + ROW_SLACK
    s = SamplingConfig(max_new_tokens=8)

    def run(n_ctx):
        with Generator(_lm(tiny_lm, n_ctx=n_ctx), MonitorConfig(enabled=False)) as gen:
            futs = [gen.session.submit(Request(prompt_text=p, sampling=s)) for p in prompts]
            outs = [f.result(timeout=120)[0] for f in futs]
            if n_ctx is not None:         # a prompt longer than the cache fails alone, and its
                long = gen.session.submit(Request(prompt_text=prompts[0] * 4, sampling=s))
                with pytest.raises(GroundcodeError, match="no room left"):
                    long.result(timeout=120)
                eng = gen.session._sched.engine           # sequence is free again
                assert sorted(eng._free) == list(range(1, eng.runner.n_seq))
                assert gen.session.submit(Request(prompt_text=prompts[1], sampling=s)).result(timeout=120)[0].completion == outs[1].completion
            return outs, gen.lm.model.runners[0]
    alone, _ = run(None)
    outs, runner = run(2 * need)                  # two jobs at most
    assert [o.finish_reason for o in outs] == [o.finish_reason for o in alone] and "error" not in {o.finish_reason for o in outs}
    assert [o.completion for o in outs] == [o.completion for o in alone]
    assert runner.peak <= runner.n_ctx and runner.peak > need      # more than one job at a time


def test_gguf_takes_a_registry_model_on_the_cpu_and_says_what_to_install(monkeypatch):
    with pytest.raises(GroundcodeError, match="registry model"):
        load_model("tiny", dtype=GGUF)
    with pytest.raises(GroundcodeError, match="on the CPU"):
        load_model(None, device="cuda", dtype=GGUF)
    import builtins
    real = builtins.__import__

    def no_llama(name, *a, **kw):
        if name.startswith("llama_cpp"):
            raise ImportError(name)
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_llama)
    from groundcode.decoding.llama_cpp import LlamaRunner
    with pytest.raises(GroundcodeError, match=r"pip install 'groundcode\[gguf\]'"):
        LlamaRunner("model.gguf", 512, 2, 1)
