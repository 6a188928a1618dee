"""Fine-tuning (training/finetune.py, models/lora.py) on a tiny model: BASE and TOOLGEN variants,
LoRA with a trainable <COMP> row, adapter save/reload, checkpoint resume, excluded repositories."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from groundcode.errors import GroundcodeError
from groundcode.models import lora
from groundcode.training.augment import augment_file
from groundcode.training.finetune import FinetuneConfig, encode, finetune, split_example

FIX = Path(__file__).parent / "fixtures" / "updates"
OPTS = {"max_file_bytes": 300_000, "min_doc_words": 3, "max_body_lines": 30, "exact": False}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    recs, _ = augment_file(str(FIX), "updates", "updates/registry.py", OPTS)
    path = tmp_path_factory.mktemp("ft") / "aug.jsonl"
    # a few copies under different ids: enough examples for a held-out split and 2+ steps
    with open(path, "w") as f:
        for k in range(6):
            for r in recs:
                f.write(json.dumps(r | {"task_id": f"{r['task_id']}#{k}"}) + "\n")
    return path


def test_split_example_prompt_ends_at_the_docstring_as_the_healed_engine_prompt(data):
    rec = json.loads(data.read_text().splitlines()[0])
    p, t = split_example(rec, "toolgen")
    assert p.endswith('"""Register every given update with this registry."""')
    assert t.startswith("\n        for update in <COMP>updates:")
    pb, tb = split_example(rec, "base")
    assert pb == p and "<COMP>" not in tb


def test_add_tool_token_to_a_tokenizer_without_it(tiny_model_dir):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.train_from_iterator(["def f(x):\n    return x.y\n"] * 4,
                          trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"], show_progress=False,
                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=t, eos_token="<eos>")
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    assert lora.tool_token_id(tok) is None
    tid = lora.add_tool_token(model, tok)
    assert tok("self.<COMP>y", add_special_tokens=False)["input_ids"].count(tid) == 1
    w = model.get_input_embeddings().weight
    assert w.shape[0] > tid and torch.allclose(w[tid], w[:tid].mean(0), atol=1e-5)


@pytest.mark.parametrize("variant", ["toolgen", "base"])
def test_finetune_lora_saves_small_adapter_that_reloads(variant, data, tiny_model_dir, tmp_path):
    out = tmp_path / variant
    rec = finetune(FinetuneConfig(data=str(data), out=str(out), variant=variant, model=str(tiny_model_dir),
                                  eval_examples=2, batch_size=2, max_examples=6, lr=1e-2, threads=1,
                                  save_every=1), log=lambda *_: None)
    assert rec["steps"] == 3 and rec["stopped"] == "done" and len(rec["losses"]) == 3
    assert (out / "adapter_model.safetensors").is_file() and not (out / "checkpoint").exists()
    assert rec["adapter_bytes"] < 2_000_000
    from safetensors import safe_open
    with safe_open(str(out / "adapter_model.safetensors"), "pt") as f:   # never the whole
        assert not [k for k in f.keys() if "base_layer" in k]               # embedding matrix
    from groundcode.models.load import load_model
    base = load_model(str(tiny_model_dir))
    model, tok = lora.load_adapter(out, base.model, base.tokenizer)
    cfg = json.loads((out / "adapter_config.json").read_text())
    assert cfg["r"] == 16 and cfg["lora_alpha"] == 16
    if variant == "toolgen":
        assert rec["comp_id"] == lora.tool_token_id(tok) and rec["eval_after"]["comp_gold"] > 0
    else:
        assert rec["comp_id"] is None and "comp_recall" not in rec["eval_after"]
    # the merged model differs from the base (the adapter did something) and is deterministic
    ids = torch.tensor([encode(tok, "def f(self):\n    ", "return self.x", 64, 32)[0]])
    fresh = load_model(str(tiny_model_dir)).model
    if variant == "toolgen":
        lora.add_tool_token(fresh, tok)
    with torch.no_grad():
        assert not torch.allclose(model(ids).logits, fresh(ids).logits)


def test_checkpoint_resume(data, tiny_model_dir, tmp_path):
    out = tmp_path / "resume"
    cfg = FinetuneConfig(data=str(data), out=str(out), variant="toolgen", model=str(tiny_model_dir),
                         eval_examples=2, batch_size=1, max_examples=4, threads=1, save_every=2,
                         time_budget_s=None)
    # simulate an interruption after step 2: a run that stops on a time budget keeps its checkpoint
    import groundcode.training.finetune as ft
    calls = {"n": 0}
    real = ft._checkpoint

    def boom(*a):
        real(*a)
        calls["n"] += 1
        raise KeyboardInterrupt
    ft._checkpoint = boom
    try:
        with pytest.raises(KeyboardInterrupt):
            finetune(cfg, log=lambda *_: None)
    finally:
        ft._checkpoint = real
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    assert state["step"] == 2
    msgs = []
    rec = finetune(cfg, log=msgs.append)
    assert any("resuming at step 2/4" in m for m in msgs)
    assert rec["steps"] == 4 and len(rec["losses"]) == 4


def test_excluded_repositories_are_refused(data, tiny_model_dir, tmp_path):
    with pytest.raises(GroundcodeError, match="excluded"):
        finetune(FinetuneConfig(data=str(data), out=str(tmp_path / "x"), model=str(tiny_model_dir),
                                exclude_repos=["updates"]), log=lambda *_: None)
