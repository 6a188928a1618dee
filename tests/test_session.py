"""The session with the tiny test model: concurrent requests batch together and give what each
gives alone; rows join a running batch and leave it (KV freed); cancel stops a prefill or a
decode at once; a failing guide ends only its request; prefix reuse; text held until settled."""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
import torch

from groundcode.api import Generator, cursor_context, function_context
from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
from groundcode.context import CodeContext
from groundcode.decoding.engine import Batch, Engine, RowSpec
from groundcode.decoding.guides import registry
from groundcode.decoding.guides.base import Guide, Rollback
from groundcode.decoding.prefix_cache import PrefixCache
from groundcode.errors import GroundcodeError
from groundcode.models.load import LoadedModel
from groundcode.session import Request, Session


class _CountingModel(torch.nn.Module):
    """The tiny model, noting the shape of every forward; `hook(input_ids)` runs first."""

    def __init__(self, inner, hook=None):
        super().__init__()
        self.inner, self.config, self.batches, self.hook = inner, inner.config, [], hook

    def forward(self, input_ids, **kw):
        self.batches.append(tuple(input_ids.shape))
        if self.hook is not None:
            self.hook(input_ids)
        return self.inner(input_ids=input_ids, **kw)


def _gen(tiny_lm, model=None, monitor=False):
    lm = LoadedModel(model or tiny_lm.model, tiny_lm.tokenizer, "tiny", "cpu", "float32")
    return Generator(lm, MonitorConfig(enabled=monitor))


def _plain(text, n=16, **kw):
    return Request(prompt_text=text, sampling=SamplingConfig(max_new_tokens=n), **kw)


PROMPTS = ["def add(a, b):\n    return", "import os\n\nclass Cart:\n    def __init__(self):\n        self.",
           "for item in items:\n    if item.", "def read(path):\n    with open(path) as fh:\n"]


def test_concurrent_submits_from_threads_give_what_each_gives_alone(tiny_lm):
    alone = []
    with _gen(tiny_lm) as gen:
        sess = gen.session
        for p in PROMPTS:
            alone.append(sess.submit(_plain(p)).result(timeout=60)[0].completion)
    with _gen(tiny_lm) as gen:
        sess = Session(gen, prefix_cache_bytes=0)
        streams = [None] * len(PROMPTS)

        def go(k):
            streams[k] = sess.submit(_plain(PROMPTS[k]))
        threads = [threading.Thread(target=go, args=(k,)) for k in range(len(PROMPTS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = [s.result(timeout=60)[0] for s in streams]
        sess.close()
    assert [g.completion for g in got] == alone
    for s, g in zip(streams, got):      # the stream's text is the completion, nothing taken back
        assert "".join(u.text for u in s if u.kind == "text") == g.completion
        assert g.prompt_tokens > 0 and g.timings["total_ms"] >= g.timings["first_token_ms"] >= 0


def test_a_row_admitted_while_another_decodes_gives_the_same_greedy_text(tiny_lm, shop_repo):
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.add", shop_repo)
    counting = _CountingModel(tiny_lm.model)
    with _gen(tiny_lm, counting) as gen:
        sess = Session(gen, prefix_cache_bytes=0)
        alone = sess.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=20))).result(60)[0]
        # token ids and sampling: no guide ends it early (the tiny model's greedy `rnrnrn…`
        # meets the repetition stop at once), and it runs long enough for the late request's
        # preparation (off the scheduler thread) to end while it still decodes
        ids = tiny_lm.tokenizer(PROMPTS[0])["input_ids"]
        long = sess.submit(Request(prompt_ids=ids, sampling=SamplingConfig(
            max_new_tokens=900, temperature=1.0, seed=3), logit_bias=((tiny_lm.tokenizer.eos_token_id, -100.0),)))
        next(u for u in long if u.kind == "text")       # it is decoding now
        counting.batches.clear()
        late = sess.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=20)))
        joined = late.result(60)[0]
        long.cancel()
        long.result(60)
        sess.close()
    assert joined.completion == alone.completion
    assert max(b[0] for b in counting.batches) == 2       # it joined the running batch


def test_cancel_stops_a_prefill_between_chunks(tiny_lm):
    state = {"stream": None, "prefill_forwards": 0}

    def hook(ids):
        if ids.shape[0] == 1 and ids.shape[1] == 8 and state["stream"] is not None:
            state["prefill_forwards"] += 1
            state["stream"].cancel()                      # cancelled during its first chunk
    counting = _CountingModel(tiny_lm.model, hook)
    with _gen(tiny_lm, counting) as gen:
        sess = Session(gen, prefill_chunk=8)
        text = "x = 1\n" * 40                              # ~80 tokens: ten chunks
        req = _plain(text, n=8)
        state["stream"] = stream = sess.submit(req)
        g = stream.result(timeout=60)[0]
        assert g.finish_reason == "cancelled" and g.tokens == 0 and g.completion == ""
        assert state["prefill_forwards"] == 1              # the other chunks never ran
        assert sess.stats["prefix_cache"]["entries"] == 0  # nothing half-made was stored
        state["stream"] = None
        ok = sess.submit(_plain("def f():\n    return", n=4)).result(60)[0]   # the session goes on
        assert ok.finish_reason in ("length", "eos")
        sess.close()


def test_cancel_mid_decode_ends_the_rows_and_frees_them(tiny_lm):
    with _gen(tiny_lm) as gen:
        sess = Session(gen)
        s = sess.submit(_plain(PROMPTS[1], n=400))
        next(u for u in s if u.kind == "text")
        s.cancel()
        g = s.result(timeout=60)[0]
        assert g.finish_reason == "cancelled" and g.tokens < 400
        assert "".join(u.text for u in s if u.kind == "text") == g.completion
        for _ in range(100):                               # the scheduler drops the row at once
            if sess.stats["rows"] == 0:
                break
            threading.Event().wait(0.01)
        assert sess.stats["rows"] == 0 and sess.stats["kv_bytes"] == 0
        sess.close()


class _Boom(Guide):
    stateless = True     # a test double: what it records or latches survives cuts
    def advance(self, row, token):
        if len(row.tokens) == 3:
            raise ValueError("boom at token 3")
        return None


def test_a_guide_that_raises_ends_only_its_request(tiny_lm):
    registry.register("boom_test")(lambda spec: _Boom())
    try:
        with _gen(tiny_lm) as gen:
            sess = Session(gen)
            alone = sess.submit(_plain(PROMPTS[2], n=12)).result(60)[0]
            good = sess.submit(_plain(PROMPTS[2], n=12))
            bad = sess.submit(Request(context=function_context(
                "tests/fixtures/shop/shop/cart.py", "Cart.add", "tests/fixtures/shop"),
                sampling=SamplingConfig(max_new_tokens=12, temperature=0.5), n=2, guides=("boom_test",)))
            with pytest.raises(GroundcodeError, match="boom at token 3"):
                bad.result(60)
            kinds = [u.kind for u in bad]
            assert kinds.count("error") == 1 and kinds[-1] == "error" and "done" not in kinds
            assert good.result(60)[0].completion == alone.completion
            sess.close()
    finally:
        registry.FACTORIES.pop("boom_test", None)


def test_unknown_guide_names_are_refused(tiny_lm, shop_repo):
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.add", shop_repo)
    with _gen(tiny_lm) as gen:
        with pytest.raises(GroundcodeError, match="unknown guide 'nope'"):
            gen.session.submit(Request(context=ctx, guides=("nope",))).result(60)
        with pytest.raises(GroundcodeError, match="exactly one of"):
            gen.session.submit(Request())


def test_prefix_reuse_next_keystroke_same_greedy_text(tiny_lm, shop_repo):
    cart = shop_repo / "shop" / "cart.py"
    first, nxt = cursor_context(cart, 11, 13, shop_repo), cursor_context(cart, 11, 14, shop_repo)
    s = SamplingConfig(max_new_tokens=12)
    for fim in ("off", "on"):   # with FIM the suffix follows the cursor: reuse stops there
        conf = PromptConfig(fim=fim)
        with _gen(tiny_lm) as gen:
            cold = Session(gen, prefix_cache_bytes=0)
            want = cold.submit(Request(context=nxt, sampling=s, prompt=conf)).result(60)[0]
            cold.close()
        with _gen(tiny_lm) as gen:
            sess = Session(gen)
            a = sess.submit(Request(context=first, sampling=s, prompt=conf)).result(60)[0]
            b = sess.submit(Request(context=nxt, sampling=s, prompt=conf)).result(60)[0]
            sess.close()
        assert a.tokens_cached == 0 and b.tokens_cached > (0.9 if fim == "off" else 0.5) * b.prompt_tokens
        assert b.completion == want.completion and want.tokens_cached == 0
        assert fim == "on" or b.tokens > 1


def test_warm_fills_the_prefix_cache(tiny_lm):
    with _gen(tiny_lm) as gen:
        sess = Session(gen)
        w = sess.warm(PROMPTS[1]).result(60)[0]
        assert w.finish_reason == "warm" and w.tokens == 0
        g = sess.submit(_plain(PROMPTS[1] + "x", n=4)).result(60)[0]
        assert g.tokens_cached > 0
        sess.close()


def test_prefix_cache_is_an_lru_bounded_in_bytes():
    def layers(n):      # one row's KV over n tokens: 2 layers x (k, v) of 1x1xnx4 float32
        return [(torch.zeros(1, 1, n, 4), torch.zeros(1, 1, n, 4)) for _ in range(2)]
    per_token = 2 * 2 * 4 * 4
    pc = PrefixCache(budget_bytes=25 * per_token)
    pc.store(list(range(10)), layers(10))
    pc.store(list(range(100, 110)), layers(10))
    assert len(pc) == 2 and pc.bytes == 20 * per_token
    n, got = pc.lookup(list(range(10)) + [7])          # touches the first entry
    assert n == 10 and got[0][0].shape[2] == 10
    assert pc.lookup(list(range(10)))[0] == 9           # the last token is always fed again
    pc.store(list(range(200, 210)), layers(10))         # over budget: the LRU entry goes
    assert len(pc) == 2 and pc.bytes <= pc.budget and pc.evicted == 1
    assert pc.lookup(list(range(100, 110)))[0] == 0 and pc.lookup(list(range(10)))[0] == 9
    pc.store(list(range(12)), layers(12))               # supersedes its own prefix
    assert pc.lookup(list(range(10)) + [5])[0] == 10 and pc.bytes <= pc.budget
    assert PrefixCache(budget_bytes=per_token).store(list(range(10)), layers(10)) is None


def test_kv_is_freed_when_a_row_leaves(tiny_lm):
    from groundcode.decoding.vocab import VocabIndex
    eng = Engine(tiny_lm.model, tiny_lm.tokenizer, VocabIndex.for_tokenizer(tiny_lm.tokenizer))
    ids = lambda t: tiny_lm.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    long_p, short_p = ids(PROMPTS[1]), ids("x = 1\n")
    batch = Batch(eng)
    short = eng.row(RowSpec(short_p, id="short"), SamplingConfig(max_new_tokens=30))
    long = eng.row(RowSpec(long_p, id="long"), SamplingConfig(max_new_tokens=3))
    for r in (short, long):
        logits, layers, _ = eng.prefill(r.spec.prompt_ids)
        batch.add([r], logits, layers)
    assert len(batch) == 2 and batch.columns == len(long_p)   # the short prompt is left-padded
    before = batch.nbytes
    while long.live:
        batch.step()
        batch.evict() if not long.live else batch.feed()
    assert len(batch) == 1 and batch.layers[0][0].shape[0] == 1
    # the long row's columns and the short row's padding are gone
    assert batch.columns == len(short_p) + len(short.view.tokens) - 1
    assert batch.nbytes < before / 2


class _HoldThenCut(Guide):
    """Speculates from token 2: holds its text back (`final_upto`) and at token 6 proposes to
    cut back to 2 (once), banning the token that had come at position 2."""

    def reset(self, row):
        self.done, self.banned = False, None

    def snapshot(self):
        return (self.done, self.banned)

    def restore(self, row, snap):
        self.done, self.banned = snap

    def final_upto(self, row):
        if self.done or len(row.ends) < 2:
            return len(row.text)
        return row.ends[1]

    def advance(self, row, token):
        if not self.done and len(row.tokens) == 6:
            return Rollback(2, "test", row.tokens[2])
        return None

    def rolled_back(self, row, proposal):
        self.done, self.banned = True, proposal.payload

    def mask(self, row):
        if self.banned is not None and len(row.tokens) == 2:
            ids = np.arange(row.vocab.size, dtype=np.int64)
            return ids[ids != self.banned]
        return None


def test_text_after_an_open_speculation_is_held_until_it_settles(tiny_lm):
    registry.register("hold_test")(lambda spec: _HoldThenCut())
    try:
        with _gen(tiny_lm) as gen:
            sess = Session(gen)
            ctx = function_context("tests/fixtures/shop/shop/cart.py", "Cart.add", "tests/fixtures/shop")
            s = sess.submit(Request(context=ctx, sampling=SamplingConfig(max_new_tokens=12),
                                    guides=("hold_test",)))
            g = s.result(60)[0]
            sess.close()
    finally:
        registry.FACTORIES.pop("hold_test", None)
    assert g.rollbacks == 1 and g.finish_reason in ("length", "eos", "stop")
    texts = [u.text for u in s if u.kind == "text"]
    assert "".join(texts) == g.completion and len(texts) >= 2     # streamed, never retracted


def test_async_iteration_sees_the_same_updates(tiny_lm):
    with _gen(tiny_lm) as gen:
        sess = Session(gen)
        s = sess.submit(_plain(PROMPTS[0], n=8))

        async def collect():
            return [u async for u in s.aiter()]
        got = asyncio.run(collect())
        assert [u.kind for u in got] == [u.kind for u in s] and got[-1].kind == "done"
        sess.close()


def test_deadline_ends_the_row(tiny_lm):
    with _gen(tiny_lm) as gen:
        sess = Session(gen)
        g = sess.submit(_plain(PROMPTS[1], n=1000, deadline_s=0.05)).result(60)[0]
        assert g.finish_reason == "deadline" and g.tokens < 1000
        sess.close()


def test_an_idle_session_gives_freed_memory_back(tiny_lm, monkeypatch):
    # a server's resident memory must fall back once a busy batch is gone (glibc keeps freed
    # KV pages in its arenas unless trimmed)
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, SamplingConfig
    from groundcode.decoding import scheduler
    calls = []
    real = scheduler.release_memory
    monkeypatch.setattr(scheduler, "release_memory", lambda: (calls.append(1), real()))
    with Generator(tiny_lm, MonitorConfig(enabled=False)) as gen:
        out = gen.session.submit(gen.request(None, SamplingConfig(max_new_tokens=4),
                                             prompt_text="def f():\n    return")).result(60)
    assert out[0].tokens >= 1 and calls


def test_stop_strings_count_only_text_after_the_cursor(tiny_lm):
    # Token healing gives back text before the cursor (`\n\n` + `re` at a new line after a blank
    # one); the row re-writes it first. A stop string in it (`\n\n`, as completion clients send)
    # used to end the row at once with an empty completion.
    s = SamplingConfig(max_new_tokens=12)
    with _gen(tiny_lm) as gen, Session(gen) as sess:
        for prompt in ("x = 1\n\nre", "x = 1\n\n"):
            free = sess.submit(Request(prompt_text=prompt, sampling=s)).result(60)[0]
            cut = sess.submit(Request(prompt_text=prompt, sampling=s, stop=("\n\n",))).result(60)[0]
            assert gen.prompt(CodeContext(path="<prompt>", repo=".", before=prompt, kind="cursor"),
                              12).owed.startswith("\n\n")
            assert free.completion and cut.completion == free.completion.split("\n\n")[0], (prompt, free, cut)
            assert cut.tokens > 1


class _Silent:
    """An analyzer whose answers never come (a hung worker) and whose deadline is long."""
    name, pid = "silent", None

    def ask(self, query):
        from groundcode.analysis.base import Answered
        return Answered(None) if getattr(query, "prefetch", False) else _Never()

    def prewarm(self, at):
        pass

    def deadline(self):
        return 30.0

    def close(self):
        pass


class _Never:
    def result(self, timeout=0):
        import time as _t
        if timeout:
            _t.sleep(min(timeout, 0.05))
        return None


def test_a_cancel_ends_a_row_that_waits_on_analysis(tiny_lm, shop_repo):
    # The row decodes past `self.` while the answer runs (speculation) and, at its end, waits
    # for it (settle, up to the analyzer's 30 s deadline). A cancel ends that wait at once.
    import time as _t
    ctx = cursor_context(shop_repo / "shop" / "cart.py", 11, 13, shop_repo)
    with _gen(tiny_lm, monitor=True) as gen:
        gen.set_analyzer(shop_repo, _Silent())
        with Session(gen) as sess:
            st = sess.submit(gen.request(ctx, SamplingConfig(max_new_tokens=4)))
            _t.sleep(1.0)                           # in the settle wait by now
            assert not st.closed
            t0 = _t.perf_counter()
            st.cancel()
            g = st.result(5)[0]
            # (the row was finishing: it ends as it would have, without the answer)
            assert _t.perf_counter() - t0 < 2.0 and g.finish_reason in ("cancelled", "eos", "length"), g


def test_a_deadline_ends_a_row_that_waits_on_analysis(tiny_lm, shop_repo):
    import time as _t
    ctx = cursor_context(shop_repo / "shop" / "cart.py", 11, 13, shop_repo)
    with _gen(tiny_lm, monitor=True) as gen:
        gen.set_analyzer(shop_repo, _Silent())
        with Session(gen) as sess:
            t0 = _t.perf_counter()
            req = gen.request(ctx, SamplingConfig(max_new_tokens=4))
            from dataclasses import replace
            g = sess.submit(replace(req, deadline_s=1.0)).result(10)[0]
            assert _t.perf_counter() - t0 < 3.0, g         # not the analyzer's 30 s


def test_a_slow_preparation_does_not_stall_the_running_rows(tiny_lm):
    """Issue 29: preparing a request (its prompt's context blocks here: retrieval or the IDE's
    declarations read from disk) ran on the scheduler thread, so every running row stopped
    meanwhile. It runs off that thread now: a row decoding while another request's preparation
    takes 1.5 s keeps streaming, and the slow request still gets its answer."""
    import threading
    import time as _t
    gen = _gen(tiny_lm)
    preparing = threading.Event()

    def slow_source(ctx):                      # a retrieval source that takes its time
        if "SLOW" in ctx.before:
            preparing.set()
            _t.sleep(1.5)
        return []
    gen.block_sources.append(slow_source)
    with gen, Session(gen) as sess:
        ids = tiny_lm.tokenizer(PROMPTS[0])["input_ids"]     # token ids: no guide ends it early
        running = sess.submit(Request(prompt_ids=ids, sampling=SamplingConfig(max_new_tokens=400)))
        it = iter(running)
        next(it)                                # the first update: the row is decoding
        slow = sess.submit(_plain("# SLOW\ndef f():\n    return", n=4))
        assert preparing.wait(10)
        t0, seen = _t.perf_counter(), 0
        for u in it:                            # updates of the running row during that 1.5 s
            if u.kind == "text":
                seen += 1
            if _t.perf_counter() - t0 > 1.0 or u.kind == "done":
                break
        assert seen >= 3, seen                  # it decoded on (before: nothing for 1.5 s)
        assert slow.result(30)[0].tokens > 0
        running.cancel()


def test_closing_a_session_stops_its_loop_before_its_preparation_thread(tiny_lm):
    """A session closed while its loop may still admit work (idle lookahead starts a job on the
    preparation thread) shut the preparation thread first: the loop's next start raised 'cannot
    schedule new futures after shutdown' and five failed turns were logged (seen when the editor
    benchmark closed its sessions under load). The loop is joined first now, and a closing
    session starts no lookahead."""
    gen = _gen(tiny_lm)
    with gen:
        sess = Session(gen, lookahead=2)
        sched = sess._sched
        assert sess.submit(_plain(PROMPTS[0], n=4)).result(30)[0].tokens > 0
        seen = []
        real = sched._preparer.close
        sched._preparer.close = lambda: (seen.append(sched._thread.is_alive()), real())
        sess.close()
        assert seen == [False]                 # the loop had ended when the pool was shut
        assert sched.dead is None and sched.recovered == 0
