"""Tokenizer training: a byte-level BPE over a built corpus, saved as a transformers fast tokenizer.

    train_tokenizer("corpus/", "tok/", vocab_size=16384)

Byte-level (GPT-2 style pre-tokenizer, no prefix space): every string, any script, round-trips,
and runs of spaces (indentation) become single tokens. Special tokens exist from the start, with
fixed ids 0..4: <|endoftext|> (eos/bos/pad), <fim_prefix>, <fim_suffix>, <fim_middle> (fill in the
middle, PSM order) and <COMP> (the tool token a later stage teaches). Vocabulary size: 16384, the
smallest the issue allows, because the default model must stay small (tied 16k x d embeddings are
already a quarter of a 64 MB budget at d=512) and on CPU the output softmax is a large part of every
step; code loses little from a small vocabulary (identifiers split into 2-3 pieces).
`count_tokens` fills in the corpus manifest's token counts with the trained tokenizer.
Not here: the corpus (training/corpus.py), the model (training/pretrain.py).
Test: tests/test_training_tokenizer.py.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from ..models.tiny import SPECIAL_TOKENS, wrap_fast
from .corpus import iter_records

DEFAULT_VOCAB = 16384


def _texts(corpus_dir, max_chars: int | None, seed: int):
    """Corpus texts, a seeded sample of files when max_chars caps the total."""
    records = [(r["text"]) for r in iter_records(corpus_dir)]
    if max_chars is None or sum(map(len, records)) <= max_chars:
        return records
    random.Random(seed).shuffle(records)
    out, total = [], 0
    for text in records:
        if total >= max_chars:
            break
        out.append(text)
        total += len(text)
    return out


def train_tokenizer(corpus_dir: str | Path, out_dir: str | Path, vocab_size: int = DEFAULT_VOCAB,
                    max_chars: int | None = 200_000_000, seed: int = 0, min_frequency: int = 2):
    """Train, save (tokenizer.json + config files) and return the fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_texts(corpus_dir, max_chars, seed), trainer=trainer)
    fast = wrap_fast(tok)
    fast.model_max_length = 1024
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    return fast


def count_tokens(corpus_dir: str | Path, tokenizer, batch: int = 256) -> int:
    """Tokenize the whole corpus; write per-package and total `tokens` into its manifest."""
    per_package: dict[str, int] = {}
    texts, owners = [], []

    def flush():
        for owner, ids in zip(owners, tokenizer(texts, add_special_tokens=False)["input_ids"]):
            per_package[owner] = per_package.get(owner, 0) + len(ids)
        texts.clear()
        owners.clear()

    for rec in iter_records(corpus_dir):
        texts.append(rec["text"])
        owners.append(rec["package"])
        if len(texts) >= batch:
            flush()
    flush()
    path = Path(corpus_dir) / "manifest.json"
    manifest = json.loads(path.read_text())
    for name, n in per_package.items():
        manifest["packages"][name]["tokens"] = n
    manifest["tokens"] = sum(per_package.values())
    manifest["tokenizer_vocab"] = len(tokenizer)
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest["tokens"]
