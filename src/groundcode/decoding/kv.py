"""The KV cache as plain tensors: the one module that touches transformers' Cache API.

    layers = kv.layers(cache)            # [(keys, values)] per layer, [batch, heads, seq, dim]
    cache = kv.cache(layers)             # a DynamicCache holding them, nothing copied
    kv.nbytes(layers)
    kv.tight(layers)                     # the same, each in a tensor of its own size

Growing layers: transformers' DynamicLayer concatenates on every update (a copy of the whole
layer per decode step), and building a DynamicCache from tensors copies them once more. Here a
cache wraps the given tensors as they are, and its first update moves each layer into a buffer
with room to spare (`SPARE` more positions, or a quarter of what it holds where that is more:
a long row moves O(log n) times, not every 64 steps — each move a cudaMalloc per layer on a
GPU, a step several times slower than the others): later updates write into the spare room, and the
layer is a view of the buffer's filled part. A buffer is only ever written past what its views
cover, so a tensor handed out (to the prefix cache, a trimmed batch) never changes. Where
transformers has no DynamicLayer (older releases), its plain DynamicCache is used.

The engine merges, selects and compacts caches as tensors (continuous batching, eviction,
prefix reuse) and wraps them back; models whose cache is not one full-attention layer list
(sliding-window or hybrid layers) are refused with a GroundcodeError.
Test: tests/test_kv.py; tests/test_session.py (merge, eviction, prefix reuse through the session).
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


SPARE = 64               # positions of spare room a growing layer takes when it moves
GROWING = True           # False: transformers' DynamicCache (benchmarks/decode_step.py's baseline)


def cache(layers_):
    if GROWING:
        try:
            return _growing_cache_class()(layers_)
        except (ImportError, TypeError):     # a transformers without DynamicLayer
            pass
    from transformers import DynamicCache
    return DynamicCache(ddp_cache_data=[(k, v) for k, v in layers_])


def tight(layers_) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each (k, v) in a tensor of its own size: views of a larger buffer are copied out (so
    that a stored prefix holds no spare room and its bytes are what `nbytes` says)."""
    def own(t):
        return t if t.is_contiguous() and t.untyped_storage().nbytes() == t.numel() * t.element_size() \
            else t.contiguous()
    return [(own(k), own(v)) for k, v in layers_]


_GROWING_CACHE = None


def _growing_cache_class():
    """The cache class with growing layers, made once (transformers is imported lazily)."""
    global _GROWING_CACHE
    if _GROWING_CACHE is None:
        from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

        class GrowingLayer(DynamicLayer):
            def __init__(self, k=None, v=None):
                super().__init__()
                self._kb = self._vb = None
                if k is not None:
                    self.lazy_initialization(k, v)
                    self.keys, self.values = k, v

            def update(self, key_states, value_states, *args, **kwargs):
                if not self.is_initialized:
                    self.lazy_initialization(key_states, value_states)
                    self.keys = self.values = None
                n = 0 if self.keys is None or self.keys.numel() == 0 else self.keys.shape[2]
                w = key_states.shape[2]
                if self._kb is None or n + w > self._kb.shape[2]:
                    cap = n + w + max(SPARE, n // 4)
                    b, h, _, d = key_states.shape
                    kb = key_states.new_empty(b, h, cap, d)
                    vb = value_states.new_empty(b, h, cap, value_states.shape[3])
                    if n:
                        kb[:, :, :n].copy_(self.keys)
                        vb[:, :, :n].copy_(self.values)
                    self._kb, self._vb = kb, vb
                self._kb[:, :, n:n + w].copy_(key_states)
                self._vb[:, :, n:n + w].copy_(value_states)
                self.keys, self.values = self._kb[:, :, :n + w], self._vb[:, :, :n + w]
                return self.keys, self.values

        class GrowingCache(DynamicCache):
            def __init__(self, layers_):
                Cache.__init__(self, layers=[GrowingLayer(k, v) for k, v in layers_])

        _GROWING_CACHE = GrowingCache
    return _GROWING_CACHE


def nbytes(layers_) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in layers_)


def pad_left(t: torch.Tensor, n: int) -> torch.Tensor:
    """Zeros before the sequence axis (dim 2) of a [batch, heads, seq, dim] tensor."""
    if n <= 0:
        return t
    z = t.new_zeros(t.shape[0], t.shape[1], n, t.shape[3])
    return torch.cat([z, t], dim=2)
