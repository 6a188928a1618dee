"""Tiny models built in seconds, for tests and smoke runs (no hub, no download).

`build_tiny_model(dir)` trains a small byte-level BPE on a few code strings and saves it with a
randomly initialised Llama next to it, both loadable with the Auto classes.
`build_sentencepiece_tokenizer()` makes a Metaspace (`▁`) tokenizer, the SentencePiece convention.
Not here: real training (training/pretrain.py).
"""
from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<COMP>"]

SAMPLE_CODE = [
    "class Registry:\n    def __init__(self):\n        self._registered_updates = []\n        self.size = 0\n",
    "    def register(self, update):\n        self._registered_updates.append(update)\n        return self\n",
    "import os\nfrom pathlib import Path\n\ndef read(path):\n    with open(path) as fh:\n        return fh.read()\n",
    "for item in items:\n    if item.name == 'x':\n        print(item.value, item.size)\n",
    "self.items.append(value); self.items.extend(values); self.count += 1\n",
    "def get_latest(client, name):\n    return client.get_item(name=name).result()\n",
]


def _train_bpe(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts * 4, trainer=trainer)
    return tok


def wrap_fast(tok):
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   unk_token=None,
                                   additional_special_tokens=SPECIAL_TOKENS[1:])


def build_tiny_tokenizer(texts: list[str] | None = None, vocab_size: int = 600):
    """A byte-level BPE fast tokenizer trained on `texts` (default: SAMPLE_CODE)."""
    return wrap_fast(_train_bpe(texts or SAMPLE_CODE, vocab_size))


def build_sentencepiece_tokenizer(texts: list[str] | None = None, vocab_size: int = 600):
    """A BPE tokenizer with SentencePiece conventions (`▁` for spaces, <0xNN> byte fallback)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split("\n", behavior="isolated")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    bytes_ = [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + 256,
                                  special_tokens=["<unk>"] + SPECIAL_TOKENS + bytes_,
                                  show_progress=False)
    tok.train_from_iterator((texts or SAMPLE_CODE) * 4, trainer=trainer)
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>", unk_token="<unk>")


def tiny_config(vocab_size: int, **overrides):
    from transformers import LlamaConfig
    kw = dict(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
              rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
              pad_token_id=0)
    kw.update(overrides)
    return LlamaConfig(**kw)


def build_tiny_model(out_dir: str | Path, texts: list[str] | None = None, seed: int = 0,
                     vocab_size: int = 600, **config_overrides) -> Path:
    """Save a tiny random Llama + BPE tokenizer into `out_dir`; returns the directory."""
    import torch
    from transformers import LlamaForCausalLM
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tiny_tokenizer(texts, vocab_size)
    torch.manual_seed(seed)
    cfg = tiny_config(len(tok), eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, **config_overrides)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
