"""Quantized weights on CPU: the one adapter over torch's int8 weight kernels.

    quantize(model, "int8")    every nn.Linear (attention, MLP, the output head) replaced in place
                               by Int8Linear: int8 weights with one scale per output channel
                               (symmetric, from the weights as loaded); activations, embeddings,
                               norms and the KV cache stay in the model's float dtype (bfloat16 on
                               a CPU with native bfloat16), so the engine (cache cuts on rollback,
                               prefix reuse, drafts, every guide) runs unchanged.

A decode step (a few rows) multiplies with torch's int8 weight-only kernel
(`torch._weight_int8pack_mm`: reads a quarter of float32's bytes, half of bfloat16's); more rows
(the editor's new line, a prefill) cast the layer's weight to the float dtype once per call and
multiply densely, where the int8 kernel (a loop over rows) is slower: measured per layer shape
on 2 cores, the thresholds below. Weight-only, because activations quantized to int8
per call (torch's dynamic quantization) cost smollm2-135m +64% bits per character here (a quick
8,000-character sample): LLM activations have outliers.

Why this mechanism (docs/ARCHITECTURE.md, "Quantized weights"): it ships inside the torch the
project already pins (no other wheel, nothing to build), quantizes at load in about a second
(nothing cached: the pulled directory stays the one source), and is measured against
bfloat16 and llama.cpp on the same GGUF by benchmarks/cpu_engines.py. CPU only: CUDA keeps
bfloat16. Tested by tests/test_quantize.py.
"""
from __future__ import annotations

from ..errors import GroundcodeError

SCHEMES = ("int8",)
SMALL_ROWS = 8          # up to this many rows per call: the int8 kernel (its time grows with the rows)
MID_ROWS = 64           # up to this many: the int8 weight cast, the product scaled per output
                        # column; more: the weight dequantized, then the product (a prefill)


def is_quantized(dtype: str | None) -> bool:
    return dtype in SCHEMES


def available() -> bool:
    """Whether this torch has the int8 weight kernel (`--dtype int8` can load)."""
    import torch
    return hasattr(torch, "_weight_int8pack_mm")


def _module():
    import torch

    class Int8Linear(torch.nn.Module):
        """A linear layer with int8 weights (one scale per output row)."""

        def __init__(self, lin: torch.nn.Linear, dtype):
            super().__init__()
            w = lin.weight.detach().float()
            scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
            self.in_features, self.out_features = lin.in_features, lin.out_features
            self.register_buffer("weight_int8", torch.round(w / scales[:, None]).clamp(-127, 127)
                                 .to(torch.int8).contiguous())
            self.register_buffer("scales", scales.to(dtype))
            self.bias = None if lin.bias is None else torch.nn.Parameter(lin.bias.detach().to(dtype),
                                                                         requires_grad=False)

        def forward(self, x):
            shape = x.shape
            x2 = x.reshape(-1, shape[-1]).to(self.scales.dtype)
            rows = x2.shape[0]
            if rows <= SMALL_ROWS:
                y = torch._weight_int8pack_mm(x2.contiguous(), self.weight_int8, self.scales)
            elif rows <= MID_ROWS:          # the scales on the output: one pass less over the weight
                y = (x2 @ self.weight_int8.to(x2.dtype).t()) * self.scales
            else:
                y = x2 @ (self.weight_int8.to(x2.dtype) * self.scales[:, None]).t()
            if self.bias is not None:
                y = y + self.bias
            return y.reshape(*shape[:-1], self.out_features).to(x.dtype)

        def extra_repr(self) -> str:
            return f"in_features={self.in_features}, out_features={self.out_features}, weights=int8"

    return Int8Linear


def quantize(model, scheme: str = "int8", device: str = "cpu", dtype=None):
    """`model` (eval mode) with its linear layers in int8 (quantized from its weights as loaded:
    bfloat16 or float32), the rest cast to `dtype` (the activations' dtype; default: the
    model's own); in place, returned."""
    import torch
    if scheme not in SCHEMES:
        raise GroundcodeError(f"unknown quantization {scheme!r}; use one of {', '.join(SCHEMES)}")
    if not str(device).startswith("cpu"):
        raise GroundcodeError(f"--dtype {scheme} runs on the CPU only (torch's int8 weight kernel); "
                              f"on {device} use bfloat16")
    if not available():
        raise GroundcodeError(f"--dtype {scheme}: torch {torch.__version__} has no int8 weight kernel "
                              "(torch._weight_int8pack_mm); use bfloat16")
    if dtype is None:                       # the dtype the model was loaded in (models/load.py
        dtype = next(model.parameters()).dtype   # picks bfloat16 where the CPU has it natively)
    Int8Linear = _module()
    targets = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    for name, lin in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, Int8Linear(lin, dtype))
    if hasattr(model, "config"):
        model.config.tie_word_embeddings = False      # the head is its own (int8) layer now
    model.to(dtype)
    _trim()
    return model


def _trim() -> None:
    """Give the replaced float weights' pages back to the system (glibc keeps freed memory
    otherwise: qwen2.5-coder-0.5b stayed 0.5 GB above bfloat16)."""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):      # not glibc: nothing to do
        pass
