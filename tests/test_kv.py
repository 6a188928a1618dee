"""decoding/kv.py's growing cache layers: what a forward sees is the concatenation of what was
written; updates within the spare room copy nothing; a tensor handed out never changes."""
from __future__ import annotations

import torch

from groundcode.decoding import kv


def _layers(n, seed=0, b=2):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, 3, n, 4, generator=g), torch.randn(b, 3, n, 4, generator=g)) for _ in range(2)]


def test_updates_append_and_reuse_the_spare_room():
    start = _layers(10)
    cache = kv.cache(start)
    assert [k.data_ptr() for k, _ in kv.layers(cache)] == [k.data_ptr() for k, _ in start]   # wrapped, not copied
    new = _layers(1, seed=1)
    k0, v0 = cache.layers[0].update(*new[0])
    assert k0.shape[2] == 11 and torch.equal(k0, torch.cat([start[0][0], new[0][0]], 2))
    assert torch.equal(v0, torch.cat([start[0][1], new[0][1]], 2))
    ptr = k0.data_ptr()
    for i in range(kv.SPARE - 1):                       # within the spare room: same buffer
        k1, _ = cache.layers[0].update(*_layers(1, seed=2 + i)[0])
        assert k1.data_ptr() == ptr
    assert k1.shape[2] == 11 + kv.SPARE - 1
    k2, _ = cache.layers[0].update(*_layers(2, seed=99)[0])    # past the room: a new buffer
    assert k2.data_ptr() != ptr and k2.shape[2] == 11 + kv.SPARE + 1
    assert torch.equal(k2[:, :, :11], k0)


def test_a_tensor_handed_out_never_changes():
    cache = kv.cache(_layers(5))
    cache.layers[0].update(*_layers(1, seed=3)[0])
    handed = kv.layers(cache)[0][0]
    before = handed.clone()
    trimmed = handed[:, :, :4]                           # a trim, then a new cache over the view
    again = kv.cache([(trimmed, kv.layers(cache)[0][1][:, :, :4])])
    again.layers[0].update(*_layers(3, seed=4)[0])
    cache.layers[0].update(*_layers(2, seed=5)[0])
    assert torch.equal(handed, before)


def test_tight_copies_only_views_of_a_larger_buffer():
    cache = kv.cache(_layers(5))
    cache.layers[0].update(*_layers(1, seed=6)[0])
    grown = kv.layers(cache)
    tight = kv.tight(grown)
    assert tight[0][0].data_ptr() != grown[0][0].data_ptr() and torch.equal(tight[0][0], grown[0][0])
    assert tight[1][0].data_ptr() == grown[1][0].data_ptr()        # layer 1 was never grown
    assert kv.nbytes(tight) == kv.nbytes(grown)


def test_the_dynamic_cache_switch(monkeypatch):
    from transformers import DynamicCache
    monkeypatch.setattr(kv, "GROWING", False)
    cache = kv.cache(_layers(4))
    assert type(cache) is DynamicCache and kv.layers(cache)[0][0].shape[2] == 4


def test_a_long_layer_moves_with_a_quarter_to_spare():
    """Past SPARE*4 positions a move leaves a quarter of the length as room (a long row moves
    O(log n) times: each move is an allocation per layer, a slow step on a GPU)."""
    cache = kv.cache(_layers(1000, b=1))
    k, _ = cache.layers[0].update(*_layers(1, seed=5, b=1)[0])
    ptr, moves = k.data_ptr(), 0
    for i in range(600):
        k, _ = cache.layers[0].update(*_layers(1, seed=6 + i, b=1)[0])
        moves += k.data_ptr() != ptr
        ptr = k.data_ptr()
    assert k.shape[2] == 1601 and moves == 2         # room 250, then 312: not 9 moves of 64
