"""The tool token and LoRA adapters (the only `peft` import).

    tok_id = add_tool_token(model, tokenizer)           # <COMP> as a special token (mean-initialised)
    model = wrap_lora(model, r=16, alpha=16, token_ids=[tok_id])   # LoRA + trainable <COMP> row
    model, tokenizer = load_adapter(adapter_dir, base_model, tokenizer)   # for generation (merged)

The <COMP> row of the (tied) embedding is trained through peft's `trainable_token_indices`, so an
adapter holds the LoRA matrices plus one embedding row, not a copy of the embedding matrix.
`is_adapter(path)` tells an adapter directory (adapter_config.json) from a model directory.
Not here: the training loop (training/finetune.py), which model a name means (models/load.py).
Test: tests/test_finetune.py (tiny model: train a few steps, save, reload, same logits).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import GroundcodeError

COMP = "<COMP>"


def is_adapter(path) -> bool:
    p = Path(str(path))
    return p.is_dir() and (p / "adapter_config.json").is_file()


def tool_token_id(tokenizer) -> int | None:
    """The id of <COMP> in `tokenizer`, or None when it has none (a single special token only)."""
    ids = tokenizer.convert_tokens_to_ids([COMP])
    tid = ids[0] if ids else None
    if tid is None or tid == tokenizer.unk_token_id:
        return None
    return int(tid)


def add_tool_token(model, tokenizer) -> int:
    """Make <COMP> one special token (if the tokenizer lacks it) and give it an embedding row:
    the mean of the existing rows (input and, when untied, output). Returns its id."""
    import torch
    tid = tool_token_id(tokenizer)
    if tid is not None and tid < model.get_input_embeddings().weight.shape[0]:
        return tid                          # the model already knows it (e.g. the shipped tiny model)
    if tid is None:
        tokenizer.add_special_tokens({"additional_special_tokens": [COMP]})
        tid = tool_token_id(tokenizer)
    if tid >= model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(tid + 1, mean_resizing=False)
    with torch.no_grad():
        w = model.get_input_embeddings().weight
        w[tid] = w[:tid].mean(0)
        out = model.get_output_embeddings()
        if out is not None and out.weight.data_ptr() != w.data_ptr():
            out.weight[tid] = out.weight[:tid].mean(0)
    return tid


def wrap_lora(model, r: int = 16, alpha: int = 16, dropout: float = 0.05,
              target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj"),
              token_ids: list[int] | None = None):
    """A peft model with LoRA on `target_modules` and the rows `token_ids` of the embedding
    trainable (peft's TrainableTokens; tied output embeddings follow)."""
    from peft import LoraConfig, get_peft_model
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [m for m in target_modules if m not in names]
    if missing:
        raise GroundcodeError(f"the model has no modules named {missing}; pass --target-modules "
                              f"(it has e.g. {sorted(n for n in names if 'proj' in n)[:8]})")
    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(target_modules),
                     task_type="CAUSAL_LM", trainable_token_indices=list(token_ids) if token_ids else None)
    return get_peft_model(model, cfg)


def load_adapter(adapter_dir, model, tokenizer, merge: bool = True):
    """Apply a saved adapter to a loaded base model (its tokenizer gains <COMP> when the adapter
    was trained with it). Returns (model, tokenizer); merged for plain-speed generation."""
    from peft import PeftModel
    from transformers import AutoTokenizer
    adapter_dir = Path(adapter_dir)
    if (adapter_dir / "tokenizer_config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(adapter_dir))
    if tool_token_id(tokenizer) is not None:
        add_tool_token(model, tokenizer)
    try:
        peft_model = PeftModel.from_pretrained(model, str(adapter_dir))
    except (OSError, ValueError, RuntimeError) as exc:
        raise GroundcodeError(f"cannot apply adapter {adapter_dir}: {str(exc).splitlines()[0]}") from None
    model = peft_model.merge_and_unload() if merge else peft_model
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.eval(), tokenizer
