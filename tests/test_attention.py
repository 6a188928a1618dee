"""groundcode attention (decoding/attention.py): the fold path for narrow one-row forwards equals
sdpa's result — one row's steps with left padding, a cut and draft columns; the causal case without
a mask — a batch goes to sdpa, and the engine installs it on CPU models that use sdpa only."""
from __future__ import annotations

import copy

import pytest
import torch

from groundcode.decoding import attention


@pytest.fixture(scope="module")
def pair():
    """Two copies of one random tiny Llama (grouped-query: 4 heads over 2), sdpa and groundcode."""
    from transformers import LlamaForCausalLM

    from groundcode.models.tiny import tiny_config
    torch.manual_seed(3)
    ref = LlamaForCausalLM(tiny_config(300, attn_implementation="sdpa")).eval()
    ours = copy.deepcopy(ref)
    assert attention.install(ours)
    assert ours.config._attn_implementation == attention.NAME
    assert ref.config._attn_implementation == "sdpa"
    return ref, ours


def _run(model, ids, attn, steps):
    """Prefill `ids` with `attn`, then feed each [B, W] block of `steps` with ones appended
    to the mask (or the block's own mask columns); the logits of every forward."""
    out, logits = None, []
    with torch.inference_mode():
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True)
        logits.append(out.logits)
        past = out.past_key_values
        for block, cols in steps:
            attn = torch.cat([attn, cols], 1)
            pos = (attn.cumsum(-1)[:, -block.shape[1]:] - 1).clamp(min=0)
            out = model(input_ids=block, attention_mask=attn, position_ids=pos, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits.append(out.logits)
    return logits


def test_one_row_steps_with_padding_and_holes_match_sdpa(pair):
    ref, ours = pair
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 300, (1, 40), generator=g)
    attn = torch.ones(1, 40, dtype=torch.long)
    attn[0, :7] = 0                                   # left padding
    attn[0, 20:23] = 0                                # a cut: columns no one attends to
    steps = [(torch.randint(1, 300, (1, 1), generator=g), torch.ones(1, 1, dtype=torch.long)) for _ in range(3)]
    steps.append((torch.randint(1, 300, (1, 5), generator=g), torch.tensor([[1, 1, 1, 0, 0]])))  # drafts
    steps.append((torch.randint(1, 300, (1, 1), generator=g), torch.ones(1, 1, dtype=torch.long)))
    a, b = _run(ref, ids, attn, steps), _run(ours, ids, attn, steps)
    for k, (x, y) in enumerate(zip(a, b)):
        if k == 4:                                    # the draft forward: its used columns
            x, y = x[:, :3], y[:, :3]
        assert torch.allclose(x, y, atol=1e-4), (k, (x - y).abs().max())


def test_a_padded_batch_goes_to_sdpa_and_matches(pair, monkeypatch):
    ref, ours = pair
    seen = []
    real = attention._fold
    monkeypatch.setattr(attention, "_fold", lambda *a, **k: seen.append(tuple(a[1].shape[:3])) or real(*a, **k))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 300, (3, 12), generator=g)
    attn = torch.ones(3, 12, dtype=torch.long)
    attn[1, :4] = 0
    steps = [(torch.randint(1, 300, (3, 1), generator=g), torch.ones(3, 1, dtype=torch.long))]
    for x, y in zip(_run(ref, ids, attn, steps), _run(ours, ids, attn, steps)):
        assert torch.allclose(x, y, atol=1e-4)
    assert seen == []                                 # rows > 1: transformers' sdpa, not the fold path


def test_fold_path_without_a_mask_is_causal():
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 4, 3, 8), torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8)
    out, _ = attention._fold(None, q, k, v, None, scaling=8 ** -0.5)
    kr, vr = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    mask = torch.ones(3, 7, dtype=torch.bool).tril(4)      # query i sees keys ≤ 4 + i
    want = torch.nn.functional.scaled_dot_product_attention(q, kr, vr, attn_mask=mask).transpose(1, 2)
    assert torch.allclose(out, want, atol=1e-5)


def test_wide_forwards_go_to_sdpa(pair, monkeypatch):
    ref, ours = pair
    seen = []
    real = attention._fold
    monkeypatch.setattr(attention, "_fold", lambda *a, **k: seen.append(a[1].shape[2]) or real(*a, **k))
    ids = torch.randint(1, 300, (1, attention.NARROW + 8))
    with torch.inference_mode():
        a = ref(input_ids=ids).logits
        b = ours(input_ids=ids).logits
        ours(input_ids=ids[:, :5])
    assert torch.allclose(a, b, atol=1e-4)
    assert seen and set(seen) == {5}          # only the narrow forward took the fold path


def test_install_leaves_other_models_alone(monkeypatch):
    from transformers import LlamaForCausalLM

    from groundcode.models.tiny import tiny_config
    monkeypatch.setenv("GROUNDCODE_ATTENTION", "sdpa")
    kept = LlamaForCausalLM(tiny_config(50, attn_implementation="sdpa"))
    assert not attention.install(kept)
    assert kept.config._attn_implementation == "sdpa"
    monkeypatch.delenv("GROUNDCODE_ATTENTION")
    eager = LlamaForCausalLM(tiny_config(50, attn_implementation="eager"))
    assert not attention.install(eager)
    assert eager.config._attn_implementation == "eager"
    assert not attention.install(object())


def test_the_engine_installs_it(tiny_model_dir):
    from groundcode.decoding.engine import Engine
    from groundcode.decoding.vocab.index import VocabIndex
    from groundcode.models.load import load_model
    if not attention.supported():                   # an explicit capability check, not a failure
        pytest.skip("this transformers has no AttentionInterface/AttentionMaskInterface")
    # a copy of its own (installing changes the config), on the CPU: the path is the CPU's
    lm = load_model(str(tiny_model_dir), device="cpu")
    assert lm.model.config._attn_implementation == "sdpa"
    eng = Engine(lm.model, lm.tokenizer, VocabIndex.for_tokenizer(lm.tokenizer))
    assert eng.attention == attention.NAME


def test_gpu_forwards_exclude_cudnn_attention(monkeypatch):
    """On CUDA the engine's forwards run without cuDNN's sdpa backend (a graph built per new
    cache length: benchmarks/engine_overhead.py (a)); the flags come back afterwards; on a CPU,
    or with GROUNDCODE_CUDNN_ATTENTION=1, nothing is touched. (PyTorch's backend flags are
    plain switches: no GPU is needed to read them.)"""
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with attention.kernels(torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
        assert torch.backends.cuda.math_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with attention.kernels("cpu"):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
    monkeypatch.setenv("GROUNDCODE_CUDNN_ATTENTION", "1")
    with attention.kernels(torch.device("cuda")):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before


def test_engines_sharing_a_model_share_one_preemption_hook(tiny_model_dir):
    """Every Engine over the same model (a Generator per configuration, benchmarks' plain and
    monitored) leaves one pre-hook per decoder layer, not one each."""
    from groundcode.decoding import preempt
    from groundcode.decoding.engine import Engine
    from groundcode.decoding.vocab.index import VocabIndex
    from groundcode.models.load import load_model
    lm = load_model(str(tiny_model_dir), device="cpu")
    vocab = VocabIndex.for_tokenizer(lm.tokenizer)
    a, b = Engine(lm.model, lm.tokenizer, vocab), Engine(lm.model, lm.tokenizer, vocab)
    layers = preempt._layers(lm.model)
    assert layers and all(len(layer._forward_pre_hooks) == 1 for layer in layers)
    assert a._preempt_local is b._preempt_local
    a.preemptible(lambda: True)                        # set on this thread, seen through either
    with pytest.raises(preempt.Preempted):
        b.prefill(lm.tokenizer("x = 1", add_special_tokens=False)["input_ids"])
    a.preemptible(None)
