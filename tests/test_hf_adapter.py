"""The guides as a transformers LogitsProcessor for users of `model.generate`."""
from __future__ import annotations

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from groundcode.analysis.jedi_client import JediAnalyzer
from groundcode.api import function_context
from groundcode.decoding.guides.dereference import DereferenceMonitor
from groundcode.decoding.hf import GuidesLogitsProcessor
from groundcode.decoding.vocab import VocabIndex

from scripted import planted


class PlantedBias(LogitsProcessor):
    """Adds a bonus to tokens that continue the planted text (runs before the guides)."""

    def __init__(self, vocab, rules, prompt_len):
        self.vocab, self.rules, self.prompt_len = vocab, rules, prompt_len

    def __call__(self, input_ids, scores):
        for i in range(input_ids.shape[0]):
            text = self.vocab.text_of(input_ids[i, self.prompt_len:].tolist())
            want = self.rules(text)
            if want:
                for t, s in enumerate(self.vocab.texts):
                    if s and want.startswith(s):
                        scores[i, t] += 50.0 * (1 + len(s) / 100)
        return scores


def test_logits_processor_grounds_model_generate(tiny_lm, shop_repo):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    # the prompt ends with the body's indentation: the rows see the context continued after it
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.last", shop_repo).continued("")
    ids = torch.tensor([tiny_lm.tokenizer(ctx.before, add_special_tokens=False)["input_ids"]])
    rules = planted("return self.registry.latest()\n")  # the prompt ends with the indentation
    outs = {}
    for monitored in (False, True):
        procs = [PlantedBias(vocab, rules, ids.shape[1])]
        if monitored:
            mon = DereferenceMonitor(JediAnalyzer(shop_repo), rollback=False)
            procs.append(GuidesLogitsProcessor(vocab, [[mon]], [ctx]))
        out = tiny_lm.model.generate(ids, max_new_tokens=30, do_sample=False,
                                     logits_processor=LogitsProcessorList(procs),
                                     pad_token_id=tiny_lm.tokenizer.pad_token_id)
        outs[monitored] = vocab.text_of(out[0, ids.shape[1]:].tolist())
    assert outs[False].startswith("return self.registry.latest()")
    assert outs[True].startswith("return self.registry.latest_update()"), outs[True]


def test_a_checked_top_token_that_sampling_did_not_pick_leaves_no_trace():
    # transformers samples after the processor ran: the processor peeked at the top token (a
    # merged-dot token) and the monitor checked it, but another token was sampled.
    from pathlib import Path

    from groundcode.analysis.base import Analysis
    from groundcode.context import CodeContext

    from fake_analyzer import FakeBase

    class Fake(FakeBase):
        def members(self, code, path, line, column, *, receiver, cache_key):
            return Analysis(receiver, frozenset({"append", "add"}), 1.0)

    tokens = ["", "x", ".append", ".", "add", "(", ")", " ", "=", "y", "\n", "        "]
    vocab = VocabIndex(tokens)
    before = "class A:\n    def f(self, x: list):\n        "
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before,
                      lex_prefix=before[before.index("    def"):], starts_at_line=False)
    mon = DereferenceMonitor(Fake(), rollback=False)
    proc = GuidesLogitsProcessor(vocab, [[mon]], [ctx])
    prompt = torch.tensor([[0, 0]])
    scores = torch.zeros((1, len(tokens)))
    proc(prompt, scores.clone())
    top = scores.clone()
    top[0, 2] = 10.0                                                          # ".append" on top
    proc(torch.cat([prompt, torch.tensor([[1]])], 1), top)                    # "x" written
    row = proc.rows[0]
    assert len(row.triggers) == 1                                             # checked: x.
    # ... but sampling picked " " instead: the next call must not act on the stale check
    proc(torch.cat([prompt, torch.tensor([[1, 7]])], 1), scores.clone())
    assert row.text == "x " and row.triggers == [] and mon.state == "wait"
    proc(torch.cat([prompt, torch.tensor([[1, 7, 8, 7, 9, 10]])], 1), scores.clone())
    assert mon.state == "wait" and row.triggers == []
