"""Load a causal LM and its tokenizer by HF id or local path (the only `from_pretrained` calls).

`load_model(None)` loads the model shipped inside the package (models/default/). Hub ids work
when the files are in the local HF cache; nothing is downloaded when HF_HUB_OFFLINE=1.
Not here: decoding (decoding/engine.py), training (training/).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import GroundcodeError

DEFAULT_DIR = Path(__file__).parent / "default"


@dataclass
class LoadedModel:
    model: object          # transformers PreTrainedModel (causal LM), in eval mode
    tokenizer: object      # transformers PreTrainedTokenizerBase
    name: str              # what the user asked for (id or path)
    device: str
    dtype: str

    @property
    def context_length(self) -> int:
        cfg = self.model.config
        return int(getattr(cfg, "max_position_embeddings", 2048) or 2048)


def default_model_path() -> Path:
    """The directory of the model shipped with groundcode."""
    return DEFAULT_DIR


def pick_device(device: str | None = None) -> str:
    import torch
    if device and device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(dtype: str | None, device: str) -> "object":
    import torch
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype and dtype != "auto":
        if dtype not in table:
            raise GroundcodeError(f"unknown dtype {dtype!r}; use one of {sorted(table)}")
        return table[dtype]
    # CPU kernels for bf16 matmuls are slow on many CPUs; float32 is the safe default there.
    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def load_model(name_or_path: str | Path | None = None, device: str | None = None,
               dtype: str | None = None) -> LoadedModel:
    """Load model + tokenizer; `None` means the shipped default model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name_or_path is None:
        path = default_model_path()
        if not (path / "config.json").exists():
            raise GroundcodeError(f"the shipped default model is missing at {path}; pass --model")
        name = "groundcode-default"
        name_or_path = path
    else:
        name = str(name_or_path)
    dev = pick_device(device)
    torch_dtype = pick_dtype(dtype, dev)
    try:
        tok = AutoTokenizer.from_pretrained(str(name_or_path))
        model = AutoModelForCausalLM.from_pretrained(str(name_or_path), dtype=torch_dtype)
    except OSError as exc:  # missing path / not in cache / offline
        raise GroundcodeError(f"cannot load model {name!r}: {str(exc).splitlines()[0]}") from None
    model.to(dev).eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return LoadedModel(model=model, tokenizer=tok, name=name, device=dev,
                       dtype=str(torch_dtype).replace("torch.", ""))
