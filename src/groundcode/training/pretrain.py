"""Pretraining: a Llama-architecture causal LM from scratch on a built corpus, one plain torch loop.

    groundcode train pretrain --corpus corpus/ --tokenizer tok/ --out model/ --preset cpu
    pretrain(PretrainConfig(...)) -> summary dict (also written to out/training.json)

Phases: (1) data - seeded split of corpus files into train / held-out (by content hash), a seeded
character budget of training files, fill-in-the-middle (PSM: <fim_prefix> p <fim_suffix> s
<fim_middle> m) on `fim_rate` of the documents, everything packed into one token stream with
<|endoftext|> between documents; (2) model - LlamaForCausalLM with SDPA attention, tied embeddings;
(3) loop - AdamW, warm-up then cosine decay over the run's progress (steps, or wall time when a time
budget is the binding limit), bf16 autocast and torch.compile on CUDA, float32 on CPU, gradient
clipping, held-out loss every `eval_every` steps on fixed batches; (4) save - weights as bf16
safetensors in shards <= 16 MB, the tokenizer, training.json, train_log.jsonl and loss_curve.png.
Not here: the corpus (training/corpus.py), the tokenizer (training/tokenizer.py), the plot
(training/curves.py). Test: tests/test_training_pretrain.py (tiny config, CPU, loss falls).
"""
from __future__ import annotations

import json
import math
import os
import platform
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..errors import GroundcodeError
from .corpus import iter_records


@dataclass
class ModelShape:
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    kv_heads: int = 4
    intermediate: int = 688
    context: int = 1024            # max_position_embeddings (RoPE); training may use shorter windows


# Presets. "gpu": ~31M parameters = ~62 MB in bf16, sized for one H100 and a 9-minute job;
# "cpu": what 2 shared CPU cores (AVX2, a few hundred tokens/s for this shape) train in about an
# hour; "smoke": the test's seconds-long run. The gpu budget leaves ~3 of the job's 9 minutes for
# data preparation, start-up and saving (not yet measured on a GPU).
PRESETS = {
    "smoke": dict(shape=ModelShape(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, context=1024),
                  seq_len=64, batch_size=8, max_steps=60, lr=3e-3, warmup_steps=5, eval_every=20,
                  eval_batches=2, max_train_chars=200_000),
    "cpu": dict(shape=ModelShape(hidden=256, layers=4, heads=4, kv_heads=4, intermediate=688, context=1024),
                seq_len=256, batch_size=8, max_steps=100_000, lr=2e-3, warmup_steps=50, eval_every=100,
                eval_batches=8, max_train_chars=15_000_000, time_budget_s=4000.0),
    "gpu": dict(shape=ModelShape(hidden=512, layers=8, heads=8, kv_heads=4, intermediate=1344, context=1024),
                seq_len=1024, batch_size=64, max_steps=100_000, lr=1.5e-3, warmup_steps=200, eval_every=250,
                eval_batches=16, max_train_chars=1_500_000_000, time_budget_s=360.0),
}


@dataclass
class PretrainConfig:
    corpus: str = "corpus"
    tokenizer: str = "tok"
    out: str = "model"
    shape: ModelShape = None        # None = the preset's
    preset: str = "cpu"
    seq_len: int = 256              # training window (tokens)
    batch_size: int = 16
    max_steps: int = 1000
    time_budget_s: float | None = None   # stop (and finish the cosine) when this much wall time is spent
    lr: float = 2e-3
    min_lr_ratio: float = 0.1       # cosine ends at lr * min_lr_ratio
    warmup_steps: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    fim_rate: float = 0.5           # share of documents turned into fill-in-the-middle samples
    heldout_permille: int = 10      # files (by content hash) kept out for the held-out loss
    max_train_chars: int | None = None   # seeded sample of training files up to this many chars
    eval_every: int = 100
    eval_batches: int = 8
    seed: int = 0
    device: str = "auto"
    threads: int | None = None      # torch CPU threads (None = torch's default)
    compile: str = "auto"           # auto = on CUDA only (compiling costs minutes on CPU)
    log_every: int = 10
    progress: bool = True

    @classmethod
    def from_preset(cls, preset: str, **overrides) -> "PretrainConfig":
        if preset not in PRESETS:
            raise GroundcodeError(f"unknown preset {preset!r}; use one of {sorted(PRESETS)}")
        kw = dict(PRESETS[preset])
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return cls(preset=preset, **kw)


# ---------------------------------------------------------------- (1) data
def fim_split(text: str, rng: random.Random) -> tuple[str, str, str]:
    """Two uniform cut points -> (prefix, middle, suffix)."""
    a, b = sorted((rng.randint(0, len(text)), rng.randint(0, len(text))))
    return text[:a], text[a:b], text[b:]


def heldout(record: dict, permille: int) -> bool:
    return int(record["sha256"][:8], 16) % 1000 < permille


def prepare_tokens(cfg: PretrainConfig, tokenizer) -> tuple:
    """(train ids, held-out ids, stats): int32 token streams with eos between documents."""
    import numpy as np
    train, held = [], []
    for rec in iter_records(cfg.corpus):
        (held if heldout(rec, cfg.heldout_permille) else train).append(rec["text"])
    if not train or not held:
        raise GroundcodeError(f"corpus {cfg.corpus} is too small for a train/held-out split "
                              f"({len(train)} train, {len(held)} held-out files)")
    rng = random.Random(cfg.seed)
    rng.shuffle(train)
    if cfg.max_train_chars:
        kept, total = [], 0
        for t in train:
            if total >= cfg.max_train_chars:
                break
            kept.append(t)
            total += len(t)
        train = kept
    ids = tokenizer.convert_tokens_to_ids
    eos, pre, suf, mid = (ids(t) for t in ("<|endoftext|>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>"))

    def encode(texts):
        return tokenizer(texts, add_special_tokens=False)["input_ids"]

    def stream(texts, fim_rate):
        arrays, n_fim = [], 0
        for start in range(0, len(texts), 512):
            out = []      # one chunk's ids as Python ints; numpy holds the rest (4 bytes a token)
            chunk = texts[start:start + 512]
            fims = [rng.random() < fim_rate for _ in chunk]
            pieces = []
            for t, f in zip(chunk, fims):
                pieces.extend(fim_split(t, rng) if f else (t,))
            enc = iter(encode(pieces))
            for f in fims:
                if f:   # PSM order: the model reads prefix and suffix, then writes the middle
                    p, m, s = next(enc), next(enc), next(enc)
                    out.extend([pre, *p, suf, *s, mid, *m, eos])
                    n_fim += 1
                else:
                    out.extend(next(enc))
                    out.append(eos)
            arrays.append(np.asarray(out, dtype=np.int32))
        return np.concatenate(arrays), n_fim

    train_ids, n_fim = stream(train, cfg.fim_rate)
    held_ids, _ = stream(held, 0.0)       # held-out loss is plain left-to-right
    stats = {"train_files": len(train), "train_chars": sum(map(len, train)), "fim_documents": n_fim,
             "train_tokens": int(train_ids.size), "heldout_files": len(held),
             "heldout_chars": sum(map(len, held)), "heldout_tokens": int(held_ids.size)}
    return train_ids, held_ids, stats


def sample_batch(stream, batch_size: int, seq_len: int, gen):
    """Random windows of seq_len+1 tokens -> (inputs, targets), both [batch, seq_len] int64."""
    import torch
    n = stream.shape[0] - seq_len - 1
    if n <= 0:
        raise GroundcodeError(f"token stream of {stream.shape[0]} tokens is shorter than seq_len={seq_len}")
    starts = torch.randint(0, n, (batch_size,), generator=gen)
    rows = torch.stack([torch.from_numpy(stream[s:s + seq_len + 1]) for s in starts.tolist()]).long()
    return rows[:, :-1], rows[:, 1:]


# ---------------------------------------------------------------- (2) model
def build_config(shape: ModelShape, tokenizer):
    from transformers import LlamaConfig
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    return LlamaConfig(vocab_size=len(tokenizer), hidden_size=shape.hidden,
                       intermediate_size=shape.intermediate, num_hidden_layers=shape.layers,
                       num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
                       max_position_embeddings=shape.context, rope_theta=10000.0, rms_norm_eps=1e-5,
                       tie_word_embeddings=True, bos_token_id=eos, eos_token_id=eos, pad_token_id=eos,
                       attn_implementation="sdpa", initializer_range=0.02)


# ---------------------------------------------------------------- (3) loop
def lr_at(cfg: PretrainConfig, step: int, progress: float) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1 + math.cos(math.pi * min(1.0, progress)))


def _heldout_loss(model, batches, autocast) -> float:
    import torch
    model.eval()
    total = 0.0
    with torch.no_grad(), autocast():
        for x, y in batches:
            total += float(_loss(model, x, y))
    model.train()
    return total / len(batches)


def _loss(model, x, y):
    import torch.nn.functional as F
    logits = model(input_ids=x).logits          # [batch, seq, vocab]
    return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))


def pretrain(cfg: PretrainConfig) -> dict:
    """Train, save into cfg.out, return the summary (also out/training.json)."""
    import contextlib

    import numpy as np
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from ..models.load import pick_device
    t_start = time.time()
    if cfg.shape is None:
        cfg = replace(cfg, shape=PRESETS.get(cfg.preset, PRESETS["cpu"])["shape"])
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = pick_device(cfg.device)
    cuda = device.startswith("cuda")
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(cfg.tokenizer)

    train_ids, held_ids, data_stats = prepare_tokens(cfg, tokenizer)
    t_data = time.time() - t_start
    gen = torch.Generator().manual_seed(cfg.seed)
    eval_gen = torch.Generator().manual_seed(cfg.seed + 1)
    eval_len = min(cfg.seq_len, max(8, held_ids.size // 2 - 1))
    eval_batches = [tuple(t.to(device) for t in sample_batch(held_ids, cfg.batch_size, eval_len, eval_gen))
                    for _ in range(cfg.eval_batches)]

    model = LlamaForCausalLM(build_config(cfg.shape, tokenizer)).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.95), eps=1e-8, fused=cuda)
    step_model = model
    if cfg.compile == "on" or (cfg.compile == "auto" and cuda):
        step_model = torch.compile(model)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if cuda else contextlib.nullcontext

    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "train_log.jsonl"
    log = log_path.open("w")
    progress_bar = _progress(cfg)
    t_loop = time.time()
    step = tokens = 0
    loss_ema = None
    first_eval = last_eval = None
    while True:
        elapsed = time.time() - t_loop
        progress = step / cfg.max_steps
        if cfg.time_budget_s:
            progress = max(progress, elapsed / cfg.time_budget_s)
        if progress >= 1.0:
            break
        lr = lr_at(cfg, step, progress)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = (t.to(device, non_blocking=True) for t in sample_batch(train_ids, cfg.batch_size, cfg.seq_len, gen))
        with autocast():
            loss = _loss(step_model, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens += x.numel()
        row = None
        if step % cfg.log_every == 0 or step == 1:
            value = float(loss.detach())   # the only host sync of a training step, every log_every steps
            loss_ema = value if loss_ema is None else 0.9 * loss_ema + 0.1 * value
            row = {"step": step, "tokens": tokens, "loss": round(value, 4), "lr": lr,
                   "elapsed_s": round(time.time() - t_loop, 2)}
        if step % cfg.eval_every == 0 or step == 1:
            last_eval = _heldout_loss(model, eval_batches, autocast)
            first_eval = first_eval if first_eval is not None else last_eval
            row = (row or {"step": step, "tokens": tokens, "lr": lr,
                           "elapsed_s": round(time.time() - t_loop, 2)}) | {"eval_loss": round(last_eval, 4)}
        if row:
            log.write(json.dumps(row) + "\n")
            log.flush()
            progress_bar(step, progress, loss_ema, last_eval)
    train_s = time.time() - t_loop
    last_eval = _heldout_loss(model, eval_batches, autocast)
    log.write(json.dumps({"step": step, "tokens": tokens, "eval_loss": round(last_eval, 4),
                          "elapsed_s": round(train_s, 2), "final": True}) + "\n")
    log.close()

    # (4) save: bf16 halves the size; shards stay <= 16 MB so each file is small enough to ship.
    model.to("cpu", dtype=torch.bfloat16).save_pretrained(out, max_shard_size="16MB")
    tokenizer.save_pretrained(out)
    chars_per_token = data_stats["heldout_chars"] / max(1, data_stats["heldout_tokens"])
    summary = {
        "config": asdict(cfg),
        "parameters": n_params,
        "weights_bytes": sum(f.stat().st_size for f in out.glob("*.safetensors")),
        "steps": step,
        "tokens_seen": tokens,
        "epochs_over_train_tokens": round(tokens / max(1, data_stats["train_tokens"]), 3),
        "data": data_stats,
        "first_eval_loss": first_eval,
        "final_eval_loss": last_eval,
        # Held-out files of the corpus's own packages, random windows: an approximation of
        # bits/char; benchmarks/model_quality.py measures unseen packages exactly.
        "final_heldout_bits_per_char": last_eval / math.log(2) / chars_per_token,
        "final_train_loss_ema": loss_ema,
        "data_prep_s": round(t_data, 1),
        "train_s": round(train_s, 1),
        "total_s": round(time.time() - t_start, 1),
        "hardware": _hardware(device),
        "torch": torch.__version__,
    }
    (out / "training.json").write_text(json.dumps(summary, indent=1) + "\n")
    from .curves import plot_loss_curve
    plot_loss_curve(log_path, out / "loss_curve.png")
    return summary


def _progress(cfg: PretrainConfig):
    if not cfg.progress:
        return lambda *a: None

    def show(step, progress, loss, eval_loss):
        ev = f" held-out {eval_loss:.3f}" if eval_loss is not None else ""
        print(f"step {step:6d} {progress * 100:5.1f}% loss {loss:.3f}{ev}", flush=True)
    return show


def _hardware(device: str) -> str:
    import torch
    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name()} (1 GPU), {os.cpu_count()} CPU cores"
    return f"CPU only: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, " \
           f"{os.cpu_count()} cores visible"
