"""Greedy and temperature / top-p sampling with per-row seeded generators.

Per-row generators make sample j of a prompt reproducible whatever else is in the batch.
`greedy(logits)` is the one greedy choice (the engine's step, drafts' verification, a
resample under a refusal, transformers' processor): the scores compared in float32 and an exact
tie (common in bfloat16: 8 bits of mantissa) given to the lowest token id, on every device
and whatever the reduction's thread count, masked or not. Test: tests/test_sampling.py.
"""
from __future__ import annotations

import torch


def make_generators(seeds: list[int], device) -> list[torch.Generator]:
    gens = []
    for s in seeds:
        g = torch.Generator(device=device)
        g.manual_seed(int(s))
        gens.append(g)
    return gens


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The highest-scoring token id along the last axis; an exact tie goes to the lowest id.
    (torch.argmax returns the first maximum, but says so per device; this asks for it.)"""
    x = logits.float()
    top = x.amax(dim=-1, keepdim=True)
    ids = torch.arange(x.shape[-1], device=x.device).expand_as(x)
    out = torch.where(x == top, ids, x.shape[-1]).amin(dim=-1)
    return torch.where(out < x.shape[-1], out, x.argmax(dim=-1))     # a row of NaNs: argmax's


def sample_rows(logits: torch.Tensor, temperature: float, top_p: float,
                generators: list[torch.Generator] | None) -> torch.Tensor:
    """logits: (B, V) float -> token ids (B,). temperature 0 = greedy."""
    if temperature <= 0:
        return greedy(logits)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        cum = sorted_p.cumsum(dim=-1)
        drop = cum - sorted_p > top_p          # keep the smallest prefix whose mass reaches top_p
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    out = torch.empty(probs.shape[0], dtype=torch.long, device=probs.device)
    for i in range(probs.shape[0]):
        g = generators[i] if generators else None
        out[i] = torch.multinomial(probs[i], 1, generator=g)[0]
    return out
