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
        out = []
        for p, s, w in zip(positions, seqs, wanted):
            if w:
                cells = self.cells[s]
                ids = [cells[q] for q in range(p + 1)]          # a hole: KeyError
                out.append(self.model(input_ids=torch.tensor([ids])).logits[0, -1].float().numpy())
        return np.stack(out)

    def seq_rm(self, seq, p0=-1):
        cells = self.cells.get(seq, {})
        for p in [p for p in cells if p0 < 0 or p >= p0]:
            del cells[p]

    def seq_cp(self, src, dst, p1):
        dst_cells = self.cells.setdefault(dst, {})
        for p, t in self.cells.get(src, {}).items():
            if p < p1:
                assert p not in dst_cells
                dst_cells[p] = t

    def close(self):
        self.ctx = None


class _Gguf:
    """GgufModel's shape: a runner per engine."""

    def __init__(self, model):
        self.model, self.runners = model, []

    def runner(self, n_seq):
        self.runners.append(CellRunner(self.model, n_seq))
        return self.runners[-1]


def _lm(tiny_lm, model=None):
    return LoadedModel(_Gguf(model or tiny_lm.model), tiny_lm.tokenizer, "tiny", "cpu", GGUF, tiny_lm.template)


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
