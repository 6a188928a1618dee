"""Fine-tune a causal LM on docstring -> function pairs: ToolGen's BASE and TOOLGEN variants.

    groundcode train finetune --data aug.jsonl --variant toolgen --model smollm2-135m --out adapters/toolgen

Both variants read the same augmented JSONL (training/augment.py) and pick the same examples (a
seeded shuffle, cut at a token budget): BASE learns the `original` functions, TOOLGEN the
`augmented` ones (with <COMP> before the identifiers the autocompleter offers). An example is
the prompt the benchmark gives at generation time — the function's header and docstring, without
the whitespace after it (token healing gives the line break and the body's indentation back to
the model) — followed by that whitespace, the body and EOS; the loss is on the body only. Prompt and body are tokenized separately, as the
engine sees them.

Methods: `lora` (peft; r/alpha configurable, ToolGen used 16/16; attention projections) or
`full`. In both, TOOLGEN adds <COMP> as a special token (mean-initialised) and trains its
embedding row (LoRA: peft's trainable_token_indices, so the adapter holds one row, not the
matrix). BASE gets no new token. Any HF causal model from the registry or a path works.

Runs on CPU within a time budget (`time_budget_s`), checkpoints every `save_every` steps into
<out>/checkpoint (a rerun resumes from it), logs the loss per step, evaluates held-out loss and
<COMP> prediction (recall/precision of argmax at the body's positions) before and after, and
writes <out>/finetune.json beside the adapter (config, data, tokens, seconds, tokens/s, load).
Not here: the tool token and peft (models/lora.py), augmentation (augment.py).
Test: tests/test_finetune.py (tiny model).
"""
from __future__ import annotations

import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import GroundcodeError

VARIANTS = ("base", "toolgen")


@dataclass
class FinetuneConfig:
    data: str                            # augmented JSONL (training/augment.py)
    out: str                             # adapter (or model) directory
    variant: str = "toolgen"             # base (original functions) | toolgen (augmented)
    model: str | None = None             # registry name, path or HF id (None: the default)
    method: str = "lora"                 # lora | full
    lora_r: int = 16
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: str = "q_proj,k_proj,v_proj,o_proj"
    lr: float = 3e-4
    epochs: float = 1.0
    batch_size: int = 4
    max_len: int = 384                   # tokens per example (prompt + body)
    max_prompt: int = 160                # the prompt is cut from the left to this many tokens
    max_train_tokens: int | None = None  # take examples (seeded order) until this many tokens
    max_examples: int | None = None
    eval_examples: int = 24              # held out, same for both variants
    exclude_repos: list = field(default_factory=list)   # refuse data from these repositories
    time_budget_s: float | None = None   # stop training after this much wall time (then save)
    save_every: int = 20                 # steps between checkpoints
    seed: int = 42                       # ToolGen's seed
    threads: int | None = None           # torch CPU threads (default: all cores)
    device: str | None = None


def split_example(rec: dict, variant: str) -> tuple[str, str]:
    """(prompt, target): the header and docstring without the whitespace that follows, then
    that whitespace (the line break and the body's indentation) and the body. The engine's
    prompt ends the same way: token healing gives back the trailing whitespace and the model
    writes it (decoding/prompt.py)."""
    text = rec["augmented"] if variant == "toolgen" else rec["original"]
    prompt = text[: rec["body_offset"]].rstrip()
    return prompt, text[len(prompt):]


def load_examples(cfg: FinetuneConfig) -> tuple[list[dict], list[dict]]:
    """(train, held-out) records: seeded order, the held-out ones first, then train up to the
    budgets. Both variants get the same records."""
    from ..jsonl import read_jsonl
    path = Path(cfg.data)
    if not path.is_file():
        raise GroundcodeError(f"no augmented data at {path} (run `groundcode augment` first)")
    recs = [r for r in read_jsonl(path) if r.get("original", "").strip()]
    bad = sorted({r["repo"] for r in recs if _norm_repo(r["repo"]) in {_norm_repo(x) for x in cfg.exclude_repos}})
    if bad:
        raise GroundcodeError(f"training data comes from excluded (benchmark) repositories: {bad}")
    if not recs:
        raise GroundcodeError(f"{path} holds no functions")
    recs.sort(key=lambda r: r["task_id"])
    random.Random(cfg.seed).shuffle(recs)
    return recs[cfg.eval_examples:], recs[: cfg.eval_examples]


def _norm_repo(name: str) -> str:
    """`marshmallow-3.23.1` and `marshmallow` both -> `marshmallow`."""
    import re
    base = re.sub(r"-\d[\w.+!]*$", "", name.strip().lower())
    return re.sub(r"[-_.]+", "-", base)


def encode(tokenizer, prompt: str, target: str, max_len: int, max_prompt: int) -> tuple[list[int], int]:
    """Token ids of prompt + target + EOS and the index where the target starts."""
    p = tokenizer(prompt, add_special_tokens=False)["input_ids"][-max_prompt:]
    t = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = (p + t)[:max_len]
    return ids, len(p)


def _batches(examples: list, batch_size: int, rng: random.Random) -> list[list]:
    """Length-bucketed batches in a seeded random order (less padding on CPU)."""
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i][0]), i))
    chunks = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
    rng.shuffle(chunks)
    return chunks


def _collate(batch, pad_id: int):
    import torch
    L = max(len(ids) for ids, _ in batch)
    ids = torch.full((len(batch), L), pad_id, dtype=torch.long)
    attn = torch.zeros((len(batch), L), dtype=torch.long)
    labels = torch.full((len(batch), L), -100, dtype=torch.long)
    for i, (x, start) in enumerate(batch):
        ids[i, :len(x)] = torch.tensor(x)
        attn[i, :len(x)] = 1
        labels[i, start:len(x)] = torch.tensor(x[start:])
    return ids, attn, labels


def evaluate(model, examples: list, pad_id: int, comp_id: int | None, batch_size: int = 4) -> dict:
    """Held-out mean loss over body tokens; with <COMP>: argmax recall/precision of <COMP>."""
    import torch
    model.eval()
    tot, n, tp, fp, fn = 0.0, 0, 0, 0, 0
    with torch.no_grad():
        for k in range(0, len(examples), batch_size):
            ids, attn, labels = _collate(examples[k:k + batch_size], pad_id)
            logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
            gold = labels[:, 1:]
            mask = gold != -100
            loss = torch.nn.functional.cross_entropy(logits[mask], gold[mask], reduction="sum")
            tot += float(loss)
            n += int(mask.sum())
            if comp_id is not None:
                pred = logits.argmax(-1)
                g, p = (gold == comp_id) & mask, (pred == comp_id) & mask
                tp += int((g & p).sum())
                fp += int((~g & p).sum())
                fn += int((g & ~p).sum())
    model.train()
    out = {"loss": round(tot / max(n, 1), 4), "tokens": n}
    if comp_id is not None:
        out["comp_recall"] = round(tp / (tp + fn), 4) if tp + fn else None
        out["comp_precision"] = round(tp / (tp + fp), 4) if tp + fp else None
        out["comp_gold"] = tp + fn
    return out


def finetune(cfg: FinetuneConfig, log=print) -> dict:
    """Train one variant; returns the run record (also <out>/finetune.json)."""
    import torch
    from ..models.load import load_model
    from ..models import lora
    if cfg.variant not in VARIANTS:
        raise GroundcodeError(f"unknown variant {cfg.variant!r}; use one of {VARIANTS}")
    if cfg.method not in ("lora", "full"):
        raise GroundcodeError(f"unknown method {cfg.method!r}; use lora or full")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(cfg.model, cfg.device, "float32")
    model, tok = lm.model, lm.tokenizer
    comp_id = lora.add_tool_token(model, tok) if cfg.variant == "toolgen" else None
    train_recs, eval_recs = load_examples(cfg)

    def enc(recs):
        return [encode(tok, *split_example(r, cfg.variant), cfg.max_len, cfg.max_prompt) for r in recs]
    held = enc(eval_recs)
    train, used, tokens = [], [], 0
    for r in train_recs:
        if cfg.max_examples is not None and len(train) >= cfg.max_examples:
            break
        e = encode(tok, *split_example(r, cfg.variant), cfg.max_len, cfg.max_prompt)
        if cfg.max_train_tokens is not None and tokens + len(e[0]) > cfg.max_train_tokens:
            break
        train.append(e)
        used.append(r["task_id"])
        tokens += len(e[0])
    if not train:
        raise GroundcodeError("no training examples within the budgets")
    if cfg.method == "lora":
        model = lora.wrap_lora(model, cfg.lora_r, cfg.lora_alpha, cfg.lora_dropout,
                               tuple(m.strip() for m in cfg.target_modules.split(",") if m.strip()),
                               [comp_id] if comp_id is not None else None)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in params)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    rng = random.Random(cfg.seed)
    epochs = max(1, math.ceil(cfg.epochs))
    plan = []
    for e in range(epochs):
        bs = _batches(train, cfg.batch_size, rng)
        if e == epochs - 1 and cfg.epochs < epochs:
            bs = bs[: max(1, int(len(bs) * (cfg.epochs - (epochs - 1))))]
        plan += bs
    total = len(plan)
    warm = max(1, min(10, total // 10))

    def lr_at(step):
        if step < warm:
            return cfg.lr * (step + 1) / warm
        return cfg.lr * max(0.05, 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm))))

    ck = out / "checkpoint"
    state = {"step": 0, "losses": [], "train_s": 0.0, "tokens_seen": 0}
    if (ck / "state.json").is_file():
        state = json.loads((ck / "state.json").read_text())
        _load_trainable(model, ck / "trainable.pt")
        opt.load_state_dict(torch.load(ck / "optim.pt"))
        log(f"resuming at step {state['step']}/{total}")
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    before = evaluate(model, held, pad, comp_id) if state["step"] == 0 else state.get("eval_before")
    state["eval_before"] = before
    log(f"{cfg.variant}: {len(train)} examples, {tokens} tokens, {total} steps, "
        f"{n_trainable:,} trainable parameters; held-out before: {before}")
    load0 = os.getloadavg()
    t0 = time.perf_counter() - state["train_s"]
    stopped = "done"
    for step in range(state["step"], total):
        if cfg.time_budget_s is not None and time.perf_counter() - t0 > cfg.time_budget_s:
            stopped = "time budget"
            break
        ids, attn, labels = _collate([train[i] for i in plan[step]], pad)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        state["step"] = step + 1
        state["tokens_seen"] += int(attn.sum())
        state["losses"].append(round(loss.item(), 4))
        state["train_s"] = time.perf_counter() - t0
        if (step + 1) % 10 == 0 or step + 1 == total:
            log(f"step {step + 1}/{total} loss {sum(state['losses'][-10:]) / len(state['losses'][-10:]):.3f} "
                f"{state['tokens_seen'] / state['train_s']:.0f} tok/s")
        if cfg.save_every and (step + 1) % cfg.save_every == 0:
            _checkpoint(model, opt, state, ck)
    train_s = time.perf_counter() - t0
    after = evaluate(model, held, pad, comp_id)
    _save(model, tok, out, cfg.method)
    record = {"config": asdict(cfg), "variant": cfg.variant, "base_model": lm.name,
              "examples": len(train), "example_tokens": tokens, "eval_examples": len(held),
              "steps": state["step"], "planned_steps": total, "stopped": stopped,
              "tokens_seen": state["tokens_seen"], "train_s": round(train_s, 1),
              "tokens_per_s": round(state["tokens_seen"] / train_s, 1) if train_s else None,
              "trainable_parameters": n_trainable, "comp_id": comp_id,
              "eval_before": before, "eval_after": after, "losses": state["losses"],
              "loadavg_start": [round(x, 2) for x in load0],
              "loadavg_end": [round(x, 2) for x in os.getloadavg()],
              "threads": torch.get_num_threads(), "train_task_ids_sha256": _sha(used),
              "adapter_bytes": _dir_bytes(out)}
    (out / "finetune.json").write_text(json.dumps(record, indent=1) + "\n")
    if ck.exists():
        import shutil
        shutil.rmtree(ck)
    log(f"held-out after: {after}; {record['steps']} steps in {record['train_s']}s -> {out}")
    return record


def _sha(items: list[str]) -> str:
    import hashlib
    return hashlib.sha256("\n".join(items).encode()).hexdigest()


def _dir_bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.iterdir() if f.is_file())


def _trainable_state(model) -> dict:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def _load_trainable(model, path: Path) -> None:
    import torch
    saved = torch.load(path)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in saved:
                p.copy_(saved[n])


def _checkpoint(model, opt, state: dict, ck: Path) -> None:
    import torch
    ck.mkdir(parents=True, exist_ok=True)
    torch.save(_trainable_state(model), ck / "trainable.pt.tmp")
    torch.save(opt.state_dict(), ck / "optim.pt.tmp")
    (ck / "trainable.pt.tmp").replace(ck / "trainable.pt")
    (ck / "optim.pt.tmp").replace(ck / "optim.pt")
    (ck / "state.json").write_text(json.dumps(state))


def _save(model, tok, out: Path, method: str) -> None:
    """LoRA: the adapter (fp16 weights) + the tokenizer; full: the whole model + tokenizer."""
    import torch
    if method == "lora":
        # never the embedding matrices: peft would save them whole (120 MB for smollm2's
        # 49k x 576, twice when tied) because the vocabulary grew by <COMP>; the adapter keeps
        # only the trained <COMP> row (trainable_tokens_delta) and load_adapter re-adds the token
        model.save_pretrained(str(out), save_embedding_layers=False)
        # halve the file: adapters are small deltas, fp16 keeps them well
        from safetensors.torch import load_file, save_file
        f = out / "adapter_model.safetensors"
        sd = load_file(str(f))
        save_file({k: v.to(torch.float16) if v.is_floating_point() else v for k, v in sd.items()}, str(f))
    else:
        model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
