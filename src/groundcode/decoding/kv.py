"""The KV cache as plain tensors: the one module that touches transformers' Cache API.

    layers = kv.layers(cache)            # [(keys, values)] per layer, [batch, heads, seq, dim]
    cache = kv.cache(layers)             # a DynamicCache holding them (public constructor)
    kv.nbytes(layers)

The engine merges, selects and compacts caches as tensors (continuous batching, eviction,
prefix reuse) and wraps them back; models whose cache is not one full-attention layer list
(sliding-window or hybrid layers) are refused with a GroundcodeError.
Test: tests/test_session.py (merge, eviction, prefix reuse through the session).
"""
from __future__ import annotations

import torch

from ..errors import GroundcodeError


def layers(cache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = []
    for entry in cache:
        k, v = entry[0], entry[1]
        if len(entry) > 2 and entry[2] is not None:
            raise GroundcodeError("sliding-window KV caches are not supported by the groundcode engine")
        out.append((k, v))
    return out


def cache(layers_):
    from transformers import DynamicCache
    return DynamicCache(ddp_cache_data=[(k, v) for k, v in layers_])


def nbytes(layers_) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers_)


def pad_left(t: torch.Tensor, n: int) -> torch.Tensor:
    """Zeros before the sequence axis (dim 2) of a [batch, heads, seq, dim] tensor."""
    if n <= 0:
        return t
    z = t.new_zeros(t.shape[0], t.shape[1], n, t.shape[3])
    return torch.cat([z, t], dim=2)
