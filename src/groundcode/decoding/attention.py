"""Attention kernels: the one module that touches transformers' attention interface and
PyTorch's choice of scaled-dot-product kernels.

    attention.install(model)      # engine.Engine: on CPU, where the model uses sdpa attention
    with attention.kernels(device): model(...)    # every forward of the engine (GPU: no cuDNN)

On a GPU, PyTorch may pick cuDNN's attention for sdpa (Hopper: the H100, the H200). cuDNN builds
an execution graph for every new sequence length, so a decode step whose cache length the process
has not seen yet costs tens of milliseconds more: on one H200, a random-weight 1.7B Llama decoded
1,000 tokens at 17-19 tok/s the first time a length came up and 60 tok/s once the lengths had
been seen (transformers.generate alike; benchmarks/engine_overhead.py (a)). A decoder's cache
lengths are always new, so the engine's forwards exclude that backend: flash, memory-efficient
and math kernels take no per-shape build. `GROUNDCODE_CUDNN_ATTENTION=1` keeps PyTorch's choice.

transformers' `sdpa` attention is right for a prefill (hundreds of query positions) and for a
batch of rows, but for a decode step of one row (one query position, or a few with draft tokens)
the kernel it reaches on a CPU is slow: on smollm2-135m in bfloat16 over a 950-token cache it
spends ~0.4 ms a layer, 40% of the step. `eager` attention is faster there but copies the keys
and values of every layer to repeat them over the query heads (grouped-query attention).

`groundcode` attention: a forward of one row with at most `NARROW` query positions (a decode
step of a request alone: the editor's case) takes the "fold" path: the query heads that share a
key/value head are folded onto the query axis and PyTorch's scaled_dot_product_attention runs
once over the key/value heads, with an explicit boolean mask. Nothing is copied, and the kernel
sees a few queries per head instead of one. Every other forward (a prefill, a batch of rows)
goes to transformers' own sdpa function, unchanged: with 4 rows the two measured alike, with 16
sdpa was faster (throughput 2.29× against 1.8–2.0× in benchmarks/concurrency.py). (A first
version computed the scores with bfloat16 matmuls: oneDNN then kept a primitive for every new
cache length, and the process grew by ~1 MB a step.) Both take the boolean mask that sdpa takes
(registered as this implementation's mask), so a model may switch between them from one forward
to the next. The result equals sdpa's up to floating-point order (tests/test_attention.py).
`GROUNDCODE_ATTENTION=sdpa` in the environment keeps transformers' sdpa everywhere (to compare
with runs made before, or to rule this module out).
Measured: benchmarks/decode_step.py.
"""
from __future__ import annotations

import contextlib
import os

import torch

NAME = "groundcode"
NARROW = 32              # query positions up to which a one-row forward takes the fold path


def _fold(module, query, key, value, attention_mask, scaling=None, dropout: float = 0.0, **kwargs):
    B, H, q, D = query.shape
    kvh, L = key.shape[1], key.shape[2]
    g = H // kvh
    qf = query.reshape(B, kvh, g * q, D)        # heads kv·g + j share kv head kv: folded onto queries
    mask = attention_mask
    if mask is None and q > 1:                  # causal: position i sees keys ≤ L - q + i
        mask = torch.ones(q, L, dtype=torch.bool, device=query.device).tril(L - q).view(1, 1, q, L)
    if mask is not None:
        if mask.dtype != torch.bool:            # an additive mask: 0 where attended
            mask = mask == 0
        mask = mask.view(mask.shape[0], 1, q, L)
        if g > 1:
            mask = mask.repeat(1, 1, g, 1)
    out = torch.nn.functional.scaled_dot_product_attention(qf, key, value, attn_mask=mask, scale=scaling)
    return out.view(B, H, q, D).transpose(1, 2).contiguous(), None


def _attention(module, query, key, value, attention_mask, **kwargs):
    if query.shape[0] > 1 or query.shape[2] > NARROW or kwargs.get("output_attentions") or module.training:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    return _fold(module, query, key, value, attention_mask, **kwargs)


_registered = False


def _register() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
        AttentionInterface.register(NAME, _attention)
        AttentionMaskInterface.register(NAME, sdpa_mask)
        _registered = True


def supported() -> bool:
    """This transformers has the attention and mask interfaces the path registers with."""
    try:
        _register()
        return True
    except ImportError:
        return False


def install(model) -> bool:
    """Switch a model that uses sdpa attention on a CPU to `groundcode` attention; True if done
    (or done before). Other models (CUDA, eager, flash, anything not a transformers model) are
    left as they are, and every model when GROUNDCODE_ATTENTION=sdpa."""
    from transformers import PreTrainedModel
    if not isinstance(model, PreTrainedModel):
        return False
    impl = model.config._attn_implementation
    if impl == NAME:
        return True
    if os.environ.get("GROUNDCODE_ATTENTION", "").strip().lower() == "sdpa" or impl != "sdpa" \
            or model.device.type != "cpu":
        return False
    try:
        _register()
    except ImportError:             # a transformers without the attention/mask interfaces
        return False
    model.set_attn_implementation(NAME)
    return model.config._attn_implementation == NAME


def kernels(device):
    """A context for the engine's forwards on `device`: on CUDA, sdpa without cuDNN's backend
    (see the module docstring); elsewhere (or GROUNDCODE_CUDNN_ATTENTION=1) nothing changes."""
    if torch.device(device).type != "cuda" or os.environ.get("GROUNDCODE_CUDNN_ATTENTION", "") == "1":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])
