"""Greedy choice is the same every run (issue 40): an exact tie — frequent in bfloat16, where a
tie between two tokens made repeated TypeScript benchmark runs write either one — goes to the
lowest token id in every path that makes a greedy choice (decoding/sampling.py `greedy`: the
engine's step, drafts' verification, a resample under a refusal, transformers' processor), and
the same arm run twice gives the same completions."""
from __future__ import annotations

import torch

from groundcode.decoding.sampling import greedy, sample_rows


def test_a_tie_goes_to_the_lowest_id_in_every_dtype_and_shape():
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        x = torch.full((3, 300), -5.0, dtype=dtype)
        x[0, [7, 250]] = 2.0                      # a tie at the top: the lower id, whichever order
        x[1, [299, 3, 150]] = 1.0
        x[2, 42] = 0.5
        assert greedy(x).tolist() == [7, 3, 42]
        assert greedy(x[1]).item() == 3           # one row (drafts, transformers' processor)
        assert sample_rows(x, 0.0, 1.0, None).tolist() == [7, 3, 42]
    # masked (the other tokens at -inf, as keep_only leaves them) or not: the same choice
    x = torch.zeros(10, dtype=torch.bfloat16)
    x[[4, 8]] = 1.0
    m = torch.full_like(x, float("-inf"))
    m[[4, 8, 9]] = x[[4, 8, 9]]
    assert greedy(x).item() == greedy(m).item() == 4
    # bfloat16 values that round to the same number tie: the float32 comparison keeps that tie
    y = torch.tensor([1.0, 1.0078125, 1.001953125], dtype=torch.float32).to(torch.bfloat16)
    assert y[0] == y[2] and greedy(y).item() == 1
    nan = torch.full((4,), float("nan"))
    assert 0 <= greedy(nan).item() < 4


def test_the_same_arm_twice_gives_the_same_completions(tiny_lm):
    """Two runs of one monitored arm (the tiny model, greedy) on the same contexts, the second
    with the session's caches warm and the contexts in another order: identical completions."""
    from pathlib import Path

    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, SamplingConfig
    from groundcode.context import cursor_context
    repo = Path(__file__).parent / "fixtures" / "shop"
    cart = repo / "shop" / "cart.py"
    lines = cart.read_text().splitlines()
    spots = [(i + 1, len(l)) for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("#")][:4]
    with Generator(tiny_lm, MonitorConfig(enabled=True)) as gen:
        s = SamplingConfig(max_new_tokens=12)
        first = [gen.run([cursor_context(cart, ln, col, repo)], s)[0][0].completion for ln, col in spots]
        again = [gen.run([cursor_context(cart, ln, col, repo)], s)[0][0].completion for ln, col in reversed(spots)]
    assert first == list(reversed(again))
