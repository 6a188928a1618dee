"""Attention for decode steps on a CPU: the one module that touches transformers' attention
interface.

    attention.install(model)      # engine.Engine: on CPU, where the model uses sdpa attention

transformers' `sdpa` attention is right for a prefill (hundreds of query positions), but for a
decode step (one position per row, or a few with draft tokens) PyTorch's CPU kernel is slow:
on smollm2-135m in bfloat16 over a 950-token cache it spends ~0.4 ms a layer, 40% of the step,
for one row. `eager` attention is faster there but copies the
keys and values of every layer to repeat them over the query heads (grouped-query attention).

`groundcode` attention: a forward of one row with at most `NARROW` query positions (a decode
step of a request alone: the editor's case) takes the plain math path (scores, softmax in
float32, weighted values) with the query heads folded onto their key/value head, so nothing is
copied. Every other forward (a prefill, a batch of rows) goes to transformers' own sdpa function,
unchanged: with 4 rows the two measured alike, with 16 sdpa's kernel was faster (throughput 2.29×
against 1.8–2.0× in benchmarks/concurrency.py) and the math path's temporaries left the process
~180 MB larger. Both take the boolean mask that sdpa takes (registered as this implementation's mask),
so a model may switch between them from one forward to the next. The result equals sdpa's up
to floating-point order (tests/test_attention.py).
`GROUNDCODE_ATTENTION=sdpa` in the environment keeps transformers' sdpa everywhere (to compare
with runs made before, or to rule this module out).
Measured: benchmarks/decode_step.py.
"""
from __future__ import annotations

import os

import torch

NAME = "groundcode"
NARROW = 32              # query positions up to which a forward takes the math path


def _math(module, query, key, value, attention_mask, scaling=None, dropout: float = 0.0, **kwargs):
    B, H, q, D = query.shape
    kvh, L = key.shape[1], key.shape[2]
    g = H // kvh
    scale = scaling if scaling is not None else D ** -0.5
    qf = query.reshape(B, kvh, g * q, D)                    # heads h = kv·g + j share kv head kv
    scores = torch.matmul(qf, key.transpose(2, 3)).float() * scale
    scores = scores.view(B, kvh, g, q, L)
    if attention_mask is not None:
        allowed = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
        scores = scores.masked_fill(~allowed.view(allowed.shape[0], 1, 1, q, L), torch.finfo(torch.float32).min)
    elif q > 1:                                             # causal: position i sees keys ≤ L - q + i
        causal = torch.ones(q, L, dtype=torch.bool, device=query.device).tril(L - q)
        scores = scores.masked_fill(~causal, torch.finfo(torch.float32).min)
    probs = scores.softmax(-1).to(value.dtype).view(B, kvh, g * q, L)
    out = torch.matmul(probs, value).view(B, H, q, D)
    return out.transpose(1, 2).contiguous(), None


def _attention(module, query, key, value, attention_mask, **kwargs):
    if query.shape[0] > 1 or query.shape[2] > NARROW or kwargs.get("output_attentions") or module.training:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    return _math(module, query, key, value, attention_mask, **kwargs)


_registered = False


def _register() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
        AttentionInterface.register(NAME, _attention)
        AttentionMaskInterface.register(NAME, sdpa_mask)
        _registered = True


def install(model) -> bool:
    """Switch a model that uses sdpa attention on a CPU to `groundcode` attention; True if done
    (or done before). Other models (CUDA, eager, flash, a test double without a config or
    without transformers' `set_attn_implementation`) are left as they are, and every model when
    GROUNDCODE_ATTENTION=sdpa."""
    cfg = getattr(model, "config", None)
    impl = getattr(cfg, "_attn_implementation", None)
    if impl == NAME:
        return True
    if os.environ.get("GROUNDCODE_ATTENTION", "").strip().lower() == "sdpa" or impl != "sdpa" \
            or not hasattr(model, "set_attn_implementation"):
        return False
    try:
        if next(model.parameters()).device.type != "cpu":
            return False
    except (StopIteration, AttributeError, TypeError):
        return False
    _register()
    model.set_attn_implementation(NAME)
    return getattr(model.config, "_attn_implementation", None) == NAME
