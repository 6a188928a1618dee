"""The engine loop: equal to transformers' greedy generate, batch-invariant, exact rollback,
seeded sampling, stopping at the end of a function body."""
from __future__ import annotations

import numpy as np
import torch

from groundcode.api import CodeContext
from groundcode.config import SamplingConfig
from groundcode.decoding.engine import Engine, RowSpec
from groundcode.decoding.guides.base import Guide
from groundcode.decoding.guides.body_end import BodyEnd
from groundcode.decoding.vocab import VocabIndex


def _engine(lm):
    return Engine(lm.model, lm.tokenizer, VocabIndex.for_tokenizer(lm.tokenizer))


def _ids(lm, text):
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


def test_greedy_matches_transformers_generate(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "class Registry:\n    def register(self, update):\n        self.")
    out = eng.generate([RowSpec(prompt)], SamplingConfig(max_new_tokens=24))[0]
    ref = tiny_lm.model.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False,
                                 pad_token_id=tiny_lm.tokenizer.pad_token_id)
    want = ref[0, len(prompt):].tolist()
    n = len(out.tokens)
    assert out.tokens == want[:n]
    assert out.finish_reason in ("length", "eos")


def test_batch_rows_are_independent_of_padding(tiny_lm):
    eng = _engine(tiny_lm)
    a = _ids(tiny_lm, "import os\n")
    b = _ids(tiny_lm, "def read(path):\n    with open(path) as fh:\n        return fh.")
    s = SamplingConfig(max_new_tokens=12)
    both = eng.generate([RowSpec(a), RowSpec(b)], s)
    alone = [eng.generate([RowSpec(a)], s)[0], eng.generate([RowSpec(b)], s)[0]]
    assert [o.tokens for o in both] == [o.tokens for o in alone]


class _RollbackOnce(Guide):
    """Forces one rollback to `to` tokens after `at` tokens, then bans the token that had been
    chosen at position `to` so the continuation must differ."""
    stateless = True     # a test double: what it records or latches survives cuts

    def __init__(self, at, to):
        self.at, self.to = at, to

    def reset(self, row):
        self.done = False
        self.banned = None

    def advance(self, row, token):
        if not self.done and len(row.tokens) == self.at:
            self.done = True
            self.banned = row.tokens[self.to]
            return self.to
        return None

    def final_upto(self, row):
        """Text from token `to` on may still be cut (until the rollback happened)."""
        if self.done or len(row.ends) < self.to:
            return len(row.text)
        return row.ends[self.to - 1] if self.to else 0

    def mask(self, row):
        if self.banned is not None and len(row.tokens) == self.to:
            ids = np.arange(row.vocab.size, dtype=np.int64)
            return ids[ids != self.banned]
        return None


def test_rollback_continues_exactly_like_a_fresh_run(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    s = SamplingConfig(max_new_tokens=10)
    for to in (0, 3):
        out = eng.generate([RowSpec(prompt, guides=[_RollbackOnce(at=6, to=to)])], s)[0]
        assert out.rollbacks == 1
        # A fresh greedy run on prompt + kept tokens + the token chosen after the rollback
        # must produce the same continuation: the masked cache columns are truly gone.
        head = out.tokens[: to + 1]
        fresh = eng.generate([RowSpec(prompt + head)], SamplingConfig(max_new_tokens=10 - to - 1))[0]
        assert out.tokens[to + 1:] == fresh.tokens


def test_sampling_is_seeded_per_row(tiny_lm):
    eng = _engine(tiny_lm)
    p = _ids(tiny_lm, "def get_latest(client, name):\n")
    s = SamplingConfig(temperature=1.0, top_p=0.95, seed=7, max_new_tokens=16)
    r1 = eng.generate([RowSpec(p, seed=1), RowSpec(p, seed=2)], s)
    r2 = eng.generate([RowSpec(p, seed=1)], s)
    assert r1[0].tokens == r2[0].tokens
    assert r1[0].tokens != r1[1].tokens


def test_body_end_stops_at_dedent_but_not_inside_strings(tiny_lm):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    ctx = CodeContext(path="x.py", repo=".", before="def f():\n", stop_indent=0,
                      lex_prefix="def f():\n")
    from groundcode.decoding.guides.base import RowView
    g = BodyEnd(0)
    row = RowView(0, ctx, vocab)
    g.reset(row)
    for piece, want in [("    x = '''\n", None), ("a\n", None), ("'''\n", None), ("    return x\n", None),
                        ("def", len("    x = '''\na\n'''\n    return x\n"))]:
        row.text += piece
        # the guide looks only at whether the last token had a newline
        tok = next(i for i, t in enumerate(vocab.texts) if ("\n" in t) == ("\n" in piece) and t)
        g.advance(row, tok)
        s = g.stop(row)
        assert (s.cut if s is not None else None) == want
        assert s is None or s.reason == "body_end"


# -- the seams: events, cancel, forced tokens, stop events, shared prefill --------------------

from groundcode.decoding.engine import FINISHED, ROLLBACK, STOP, TOKEN, TRIGGER  # noqa: E402
from groundcode.decoding.guides.base import Stop  # noqa: E402


def test_cancel_ends_one_row_and_leaves_the_others_alone(tiny_lm):
    eng = _engine(tiny_lm)
    a = _ids(tiny_lm, "import os\n")
    b = _ids(tiny_lm, "def read(path):\n")
    s = SamplingConfig(max_new_tokens=12)
    run = eng.stream([RowSpec(a, id="a"), RowSpec(b, id="b")], s)
    seen = {"a": 0, "b": 0}
    finished = {}
    for ev in run:
        if ev.kind == TOKEN:
            seen[ev.row] += 1
            if ev.row == "a" and seen["a"] == 2:
                run.cancel("a")
        if ev.kind == FINISHED:
            finished[ev.row] = ev.output
    assert finished["a"].finish_reason == "cancelled" and len(finished["a"].tokens) == 2
    assert finished["b"].finish_reason in ("length", "eos")
    assert finished["b"].tokens == eng.generate([RowSpec(b)], s)[0].tokens
    assert [o.id for o in run.outputs] == ["a", "b"]


class _ForceAt(Guide):
    """Queues `ids` after `at` tokens; records every token it was advanced on."""
    stateless = True     # a test double: what it records or latches survives cuts

    def __init__(self, at, ids):
        self.at, self.ids = at, ids

    def reset(self, row):
        self.advanced = []

    def advance(self, row, token):
        self.advanced.append(token)
        if len(row.tokens) == self.at:
            row.force(self.ids)
        return None


def test_forced_tokens_are_fed_unsampled_and_the_model_continues_from_them(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "class Registry:\n    def register(self, update):\n")
    forced = _ids(tiny_lm, "        self._registered_updates.append(update)\n")
    g = _ForceAt(2, forced)
    s = SamplingConfig(max_new_tokens=2 + len(forced) + 6)
    out = eng.generate([RowSpec(prompt, guides=[g])], s)[0]
    assert out.tokens[2: 2 + len(forced)] == forced
    assert g.advanced == out.tokens                      # guides see forced tokens too
    head = out.tokens[: 2 + len(forced)]
    fresh = eng.generate([RowSpec(prompt + head)], SamplingConfig(max_new_tokens=6))[0]
    assert out.tokens[len(head):] == fresh.tokens


class _StopAfter(Guide):
    stateless = True     # a test double: what it records or latches survives cuts
    def __init__(self, n):
        self.n = n

    def stop(self, row):
        if len(row.tokens) == self.n:
            return Stop("unknown_api", cut=row.ends[0], payload={"name": "frobnicate"})
        return None


def test_stop_event_carries_reason_and_payload(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "def get_latest(client, name):\n")
    events = []
    out = eng.generate([RowSpec(prompt, guides=[_StopAfter(3)], id="r")],
                       SamplingConfig(max_new_tokens=20), on_event=events.append)[0]
    kinds = [e.kind for e in events]
    assert kinds.count(TOKEN) == 3 and kinds[-2:] == [STOP, FINISHED]
    stop = events[-2].stop
    assert stop.reason == "unknown_api" and stop.payload == {"name": "frobnicate"}
    assert out.finish_reason == "stop" and out.stop is stop and len(out.tokens) == 3
    assert out.completion == eng.detok.decode(out.tokens[:1])   # cut after the first token


class _CountingModel(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.config, self.batches = inner, inner.config, []

    def forward(self, input_ids, **kw):
        self.batches.append(tuple(input_ids.shape))
        return self.inner(input_ids=input_ids, **kw)


def test_rows_with_the_same_prompt_share_one_prefill(tiny_lm):
    counting = _CountingModel(tiny_lm.model)
    eng = Engine(counting, tiny_lm.tokenizer, VocabIndex.for_tokenizer(tiny_lm.tokenizer))
    p = _ids(tiny_lm, "def get_latest(client, name):\n")
    q = _ids(tiny_lm, "import os\n")
    s = SamplingConfig(temperature=1.0, top_p=0.95, max_new_tokens=8)
    specs = [RowSpec(p, seed=1), RowSpec(p, seed=2), RowSpec(q, seed=3), RowSpec(p, seed=4)]
    run = eng.stream(specs, s)
    list(run)
    assert run.prefilled_rows == 2
    # each distinct prompt is prefilled once, alone (so its KV can be stored for prefix reuse);
    # then the four rows step together (fewer once rows end: they leave the batch at once)
    assert counting.batches[:2] == [(1, len(p)), (1, len(q))]
    assert counting.batches[2][0] == 4 and all(b[0] <= 4 for b in counting.batches[2:])
    alone = [eng.generate([sp], s)[0].tokens for sp in specs]
    assert [o.tokens for o in run.outputs] == alone


def test_events_follow_triggers_and_rollbacks(tiny_lm):
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    events = []
    out = eng.generate([RowSpec(prompt, guides=[_RollbackOnce(at=6, to=3)])],
                       SamplingConfig(max_new_tokens=10), on_event=events.append)[0]
    rb = [e for e in events if e.kind == ROLLBACK]
    assert len(rb) == 1 and rb[0].length == 3
    assert rb[0].text == eng.detok.decode(out.tokens[:3])
    assert not [e for e in events if e.kind == TRIGGER]
    assert events[-1].kind == FINISHED and events[-1].output is out


def test_generator_n_samples_share_one_prefill_per_context(tiny_lm, shop_repo):
    from groundcode.api import Generator, function_context
    from groundcode.config import MonitorConfig
    from groundcode.models.load import LoadedModel
    counting = _CountingModel(tiny_lm.model)
    gen = Generator(LoadedModel(counting, tiny_lm.tokenizer, "tiny", "cpu", "float32"),
                    MonitorConfig(enabled=False))
    ctxs = [function_context(shop_repo / "shop" / "cart.py", q, shop_repo) for q in ("Cart.last", "Cart.add")]
    outs = gen.run(ctxs, SamplingConfig(temperature=0.8, top_p=0.95, max_new_tokens=6), n=3)
    assert [len(o) for o in outs] == [3, 3]
    gen.close()
    prefills = [b for b in counting.batches if b[0] == 1]           # decode steps have >= 3 rows
    assert len(prefills) == 2                                        # two prompts, once each
    assert prefills[0][1] == outs[0][0].prompt_tokens               # the first one whole; the
    assert prefills[1][1] + outs[1][0].tokens_cached == outs[1][0].prompt_tokens   # second
    assert outs[1][0].tokens_cached > 0             # reuses the prefix it shares with the first
    assert max(b[0] for b in counting.batches) == 6                   # six rows step together
    lead = "        "                             # healed: the body's indentation comes first
    assert all(g.completion.startswith(lead) or lead.startswith(g.completion) for o in outs for g in o)


class _Only(Guide):
    stateless = True     # a test double: what it records or latches survives cuts
    def __init__(self, ids):
        self.ids = np.array(sorted(ids), dtype=np.int64)

    def mask(self, row):
        return self.ids


def test_disjoint_masks_keep_the_earlier_guides_and_never_blank_the_step(tiny_lm):
    # Decided: guides are ordered by authority; a mask disjoint from the earlier ones (or an
    # empty one) is dropped for that step. Before, every logit became -inf.
    from groundcode.decoding.masking import combine
    a, b = np.array([3, 5]), np.array([7])
    assert combine([a, b]).tolist() == [3, 5] and combine([b, a]).tolist() == [7]
    assert combine([a, np.array([5, 9])]).tolist() == [5] and combine([np.array([], dtype=np.int64), b]).tolist() == [7]
    assert combine([None, None]) is None
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "def f(x):\n    return x")
    s = SamplingConfig(max_new_tokens=4, temperature=0.8, seed=1)
    out = eng.generate([RowSpec(prompt, guides=[_Only({11, 12}), _Only({40})])], s)[0]
    assert set(out.tokens) <= {11, 12}


class _Ban(Guide):
    """Refuses (by `check`) the tokens of `banned`: resample among every other token."""
    stateless = True

    def __init__(self, banned, size):
        self.banned, self.size = set(banned), size

    def check(self, row, token):
        if token not in self.banned:
            return None
        return np.array([i for i in range(self.size) if i not in self.banned])


def _one_greedy_step(tiny_lm):
    """An engine, a prompt, one greedy step's sampling, the vocabulary's size and the token that
    step writes with no guide."""
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "def f(x):\n    return x")
    s = SamplingConfig(max_new_tokens=1)
    top = eng.generate([RowSpec(prompt, guides=[])], s)[0].tokens[0]
    return eng, prompt, s, eng.vocab.size, top


def test_a_resampled_token_is_verified_by_every_guide_again(tiny_lm):
    # A refusal resamples under its mask; the resample is still every guide's to check (the
    # call monitor never saw `()` after the dereference monitor resampled `stream.read`: a
    # required parameter went unbound). Greedy: the top token is banned by the first guide, the
    # next best by the second: neither may be written.
    eng, prompt, s, size, top = _one_greedy_step(tiny_lm)
    second = eng.generate([RowSpec(prompt, guides=[_Ban({top}, size)])], s)[0].tokens[0]
    assert second != top
    out = eng.generate([RowSpec(prompt, guides=[_Ban({top}, size), _Ban({second}, size)])], s)[0]
    assert out.tokens[0] not in (top, second), (top, second, out.tokens)


class _Only(Guide):
    """Masks the step to `ids` (a narrowing of less authority, as the names monitor's redo)."""
    stateless = True

    def __init__(self, ids):
        self.ids = np.array(sorted(ids))

    def mask(self, row):
        return self.ids


def test_a_mask_of_less_authority_yields_to_a_refusal_it_leaves_nothing_of(tiny_lm):
    # sitetree's `get_tree_item_model(tree_alias)`: the names monitor redid a name (its mask:
    # names in scope) where the call monitor, above it, takes no further argument (its refusal:
    # `)`). The two had nothing in common and the refusal was passed over: the name stood. A
    # refusal now yields only to the masks of the guides above it.
    eng, prompt, s, size, top = _one_greedy_step(tiny_lm)
    others = [i for i in range(size) if i != top]
    out = eng.generate([RowSpec(prompt, guides=[_Ban({top}, size), _Only({top})])], s)[0]
    assert out.tokens[0] != top, out.tokens                  # the refusal of more authority wins
    first = eng.generate([RowSpec(prompt, guides=[_Ban({top}, size)])], s)[0].tokens[0]
    assert out.tokens[0] == first                             # sampled from the unmasked logits
    # a mask above the refusing guide still holds: nothing in common with it, the token stands
    out = eng.generate([RowSpec(prompt, guides=[_Only({top}), _Ban({top}, size), _Only({top})])], s)[0]
    assert out.tokens[0] == top and len(others) == size - 1


class _Refuser(Guide):
    """Refuses (by `check`) every token; records what it was asked to check."""
    stateless = True     # a test double: what it records or latches survives cuts

    def reset(self, row):
        self.checked = []

    def check(self, row, token):
        self.checked.append((len(row.tokens), token))
        return np.array([0])


def test_replay_keeps_its_tokens_but_guides_see_every_check(tiny_lm):
    # Teacher forcing (the grounding audit): the guides are asked exactly what generation would
    # ask them, before each token is accepted, and a refusal does not change the replayed text.
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "class Registry:\n    def register(self, update):\n")
    ref = _ids(tiny_lm, "        self._registered_updates.append(update)\n")
    from groundcode.decoding.replay import replay
    g = _Refuser()
    out = replay(eng, RowSpec(prompt, guides=[g]), ref, SamplingConfig(max_new_tokens=len(ref) + 1))
    assert out.tokens == ref
    assert g.checked == list(enumerate(ref))


# -- engine-owned checkpoints: regressions E1, E2, E3 ------------------------------------------

from groundcode.decoding.guides.base import Rollback, TriggerRecord  # noqa: E402


class _Trig(Guide):
    """Records a trigger named `name` whenever the row reaches `at` tokens."""
    stateless = True     # a test double: what it records or latches survives cuts

    def __init__(self, name, at):
        self.name, self.at = name, at

    def advance(self, row, token):
        if len(row.tokens) in self.at:
            row.triggers.append(TriggerRecord(receiver=f"{self.name}@{len(row.tokens)}", candidates=0))
        return None


class _Cut(Guide):
    """Proposes, once, a cut to `to` at `at` tokens; counts tokens seen as checkpointed state."""

    def __init__(self, at, to):
        self.at, self.to = at, to

    def reset(self, row):
        self.done, self.seen, self.told = False, 0, []

    def snapshot(self):
        return (self.done, self.seen)

    def restore(self, row, snap):
        self.done, self.seen = snap

    def advance(self, row, token):
        self.seen += 1
        if not self.done and len(row.tokens) == self.at:
            return Rollback(self.to, "test")
        return None

    def rolled_back(self, row, proposal):
        self.done = True
        self.told.append(proposal.length)

    def final_upto(self, row):
        return len(row.text) if self.done or len(row.ends) < self.to else (row.ends[self.to - 1] if self.to else 0)


def test_e1_triggers_after_a_cut_are_still_reported(tiny_lm):
    # E1: the count of triggers seen was never lowered after a rollback shortened the list, so
    # the triggers recorded on the redo were dropped from the events.
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    events = []
    out = eng.generate([RowSpec(prompt, guides=[_Trig("t", {4, 5}), _Cut(at=6, to=2)])],
                       SamplingConfig(max_new_tokens=8), on_event=events.append)[0]
    trig = [e.trigger.receiver for e in events if e.kind == TRIGGER]
    assert trig == ["t@4", "t@5", "t@4", "t@5"]            # the redo's triggers come out too
    assert [t.receiver for t in out.triggers] == ["t@4", "t@5"] and out.rollbacks == 1


def test_e2_a_cut_drops_only_triggers_recorded_after_it(tiny_lm):
    # E2: each guide truncated the shared trigger list with a count from its own history and
    # deleted other guides' records; now the engine drops exactly those tagged after the cut.
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    out = eng.generate([RowSpec(prompt, guides=[_Trig("a", {1, 3}), _Cut(at=5, to=2), _Trig("b", {2, 4})])],
                       SamplingConfig(max_new_tokens=7))[0]
    assert [t.receiver for t in out.triggers] == ["a@1", "b@2", "a@3", "b@4"]
    assert out.rollbacks == 1


def test_e3_the_shortest_cut_wins_and_only_its_proposer_is_told(tiny_lm):
    # E3: guides changed state when they *asked* for a rollback and the engine applied only the
    # first request. Now both propose, the shorter cut is taken, every guide is restored to its
    # checkpoint there, and only the winner is told.
    eng = _engine(tiny_lm)
    prompt = _ids(tiny_lm, "for item in items:\n    if item.")
    longer, shorter = _Cut(at=6, to=4), _Cut(at=6, to=2)
    events = []
    out = eng.generate([RowSpec(prompt, guides=[longer, shorter])], SamplingConfig(max_new_tokens=8),
                       on_event=events.append)[0]
    cuts = [e.length for e in events if e.kind == ROLLBACK]
    assert cuts[0] == 2 and shorter.told == [2]
    # asking changed nothing: the loser, restored to its state at 2 tokens, asks again when the
    # row is back at 6 tokens, and wins then
    assert longer.told == [4] and cuts == [2, 4] and out.rollbacks == 2
    # every guide's checkpointed state matches the row (restored on both cuts)
    n = len([t for t in out.tokens if t not in eng.eos])
    assert longer.seen == shorter.seen == n


class _WideHead(torch.nn.Module):
    """The tiny model with 24 extra output columns (a head padded past the tokenizer), which
    would win every argmax."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.config = inner, inner.config

    def forward(self, input_ids, **kw):
        out = self.inner(input_ids=input_ids, **kw)
        extra = torch.full(out.logits.shape[:-1] + (24,), 1e4, device=out.logits.device,
                           dtype=out.logits.dtype)      # on the model's device (CUDA too)
        out.logits = torch.cat([out.logits, extra], -1)
        return out


def test_a_head_wider_than_the_tokenizer_is_never_sampled(tiny_lm):
    # Regression: IndexError (vocab.texts[tok]) when the head had more columns than tokens.
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    eng = Engine(_WideHead(tiny_lm.model), tiny_lm.tokenizer, vocab)
    prompt = _ids(tiny_lm, "def f(x):\n    return x")
    for s in (SamplingConfig(max_new_tokens=6), SamplingConfig(max_new_tokens=6, temperature=1.0, seed=3)):
        out = eng.generate([RowSpec(prompt)], s)[0]
        assert out.tokens and max(out.tokens) < vocab.size and out.finish_reason != "error"
