"""Typer sub-apps for the training pipeline, mounted by groundcode/cli.py as `corpus` and `train`.

    groundcode corpus build --out corpus/ [--root DIR ...] [--license MIT] [--decontaminate tasks.jsonl.gz]
    groundcode train tokenizer --corpus corpus/ --out tok/ [--vocab-size 16384]
    groundcode train pretrain --corpus corpus/ --tokenizer tok/ --out model/ [--preset cpu|gpu|smoke]
    groundcode train card --model model/ [--quality benchmarks/results/model_quality.json]
    groundcode train finetune --data aug.jsonl --variant base|toolgen --out adapters/X [--model M]
    groundcode augment SOURCE... --out aug.jsonl   (registered at the top level by groundcode/cli.py)

Each command maps its flags onto one config / one library call; user errors print one line.
Not here: the work itself (corpus.py, tokenizer.py, pretrain.py, card.py, augment.py, finetune.py).
Test: tests/test_training_cli.py.
"""
from __future__ import annotations

import contextlib

import json
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import GroundcodeError

corpus_app = typer.Typer(no_args_is_help=True, help="Build a training corpus of Python source.")
train_app = typer.Typer(no_args_is_help=True, help="Train the tokenizer and the model; write its card.")


@corpus_app.callback()
def _corpus():
    """Build a training corpus of Python source."""   # a callback keeps `build` a subcommand


@train_app.callback()
def _train():
    """Train the tokenizer and the model; write its card."""


@contextlib.contextmanager
def _one_line_errors():
    """User errors (GroundcodeError) print one line and exit 2."""
    try:
        yield
    except GroundcodeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)


EXECUTOR_HELP = "local | ray: shard the work by repository onto Ray actors (pip install 'groundcode[ray]')"
RAY_ADDRESS_HELP = "Ray cluster address for --executor ray (default: start a local Ray on this machine)"


def make_executor(kind: str, address: Optional[str], workers: int):
    """None for --executor local (the command's own worker processes), else the Ray executor."""
    from ..executor import make_executor as make
    return make(kind, address, workers)


def _fail(exc: GroundcodeError):
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(2)


@corpus_app.command("build")
def corpus_build(
    out: Path = typer.Option(Path("corpus"), "--out", "-o", help="output directory (shards + manifest.json)"),
    root: Optional[List[Path]] = typer.Option(None, "--root", help="source root; repeat; default: stdlib + site-packages"),
    license: Optional[str] = typer.Option(None, "--license", help="license of files no distribution claims (your own code)"),
    exclude: Optional[List[str]] = typer.Option(None, "--exclude", help="more distributions to leave out"),
    decontaminate: Optional[List[Path]] = typer.Option(None, "--decontaminate", help="benchmark task JSONL(.gz); repeat"),
    workers: int = typer.Option(2, help="processes that read and check files (--executor ray: Ray actors)"),
    max_bytes: int = typer.Option(300_000, help="drop bigger files"),
    executor: str = typer.Option("local", help=EXECUTOR_HELP.replace("repository", "package")),
    ray_address: Optional[str] = typer.Option(None, help=RAY_ADDRESS_HELP),
):
    """Collect permissively licensed Python files with provenance; dedup, filter, decontaminate."""
    from .corpus import CorpusConfig, build_corpus
    cfg = CorpusConfig(out_dir=str(out), roots=[str(r) for r in root or []], default_license=license,
                       exclude=list(exclude or []), decontaminate=[str(d) for d in decontaminate or []],
                       workers=workers, max_bytes=max_bytes)
    ex = None
    with _one_line_errors():
        try:
            ex = make_executor(executor, ray_address, workers)
            m = build_corpus(cfg, executor=ex)
        finally:
            if ex is not None:
                ex.close()
    typer.echo(f"{m['files']} files, {m['chars']:,} chars from {len(m['packages'])} packages "
               f"({m['files_seen']} seen; dropped: {json.dumps(m['dropped'])}) -> {out}")


@train_app.command("tokenizer")
def train_tokenizer_cmd(
    corpus: Path = typer.Option(Path("corpus"), help="a built corpus"),
    out: Path = typer.Option(Path("tok"), "--out", "-o"),
    vocab_size: int = typer.Option(16384, help="BPE vocabulary incl. the 5 special tokens"),
    max_chars: int = typer.Option(60_000_000, help="train on a seeded sample of this many characters"),
    count: bool = typer.Option(True, help="write token counts into the corpus manifest"),
):
    """Train the byte-level BPE tokenizer (special tokens: eos, FIM, <COMP>)."""
    from .tokenizer import count_tokens, train_tokenizer
    with _one_line_errors():
        tok = train_tokenizer(corpus, out, vocab_size=vocab_size, max_chars=max_chars)
        total = count_tokens(corpus, tok) if count else None
    typer.echo(f"vocab {len(tok)} -> {out}" + (f"; corpus = {total:,} tokens" if total else ""))


@train_app.command("pretrain")
def pretrain_cmd(
    corpus: Path = typer.Option(Path("corpus")),
    tokenizer: Path = typer.Option(Path("tok")),
    out: Path = typer.Option(Path("model"), "--out", "-o"),
    preset: str = typer.Option("cpu", help="smoke | cpu | gpu: model shape and run length"),
    max_steps: Optional[int] = typer.Option(None),
    time_budget_s: Optional[float] = typer.Option(None, help="stop after this much training wall time"),
    seq_len: Optional[int] = typer.Option(None),
    batch_size: Optional[int] = typer.Option(None),
    lr: Optional[float] = typer.Option(None),
    max_train_chars: Optional[int] = typer.Option(None),
    fim_rate: float = typer.Option(0.5),
    seed: int = typer.Option(0),
    device: str = typer.Option("auto"),
    threads: Optional[int] = typer.Option(None, help="torch CPU threads"),
):
    """Pretrain a Llama-architecture model from scratch; saves bf16 weights + tokenizer + curves."""
    from .pretrain import PretrainConfig, pretrain
    with _one_line_errors():
        cfg = PretrainConfig.from_preset(preset, corpus=str(corpus), tokenizer=str(tokenizer), out=str(out),
                                         max_steps=max_steps, time_budget_s=time_budget_s, seq_len=seq_len,
                                         batch_size=batch_size, lr=lr, max_train_chars=max_train_chars,
                                         fim_rate=fim_rate, seed=seed, device=device, threads=threads)
        s = pretrain(cfg)
    typer.echo(f"{s['parameters']:,} parameters, {s['tokens_seen']:,} tokens in {s['train_s']:.0f}s; "
               f"held-out loss {s['first_eval_loss']:.3f} -> {s['final_eval_loss']:.3f} -> {out}")


@train_app.command("card")
def card_cmd(
    model: Path = typer.Option(..., help="a model directory written by `train pretrain`"),
    corpus: Path = typer.Option(Path("corpus"), help="its corpus (for the manifest summary)"),
    quality: Optional[Path] = typer.Option(None, help="benchmarks/results/model_quality.json"),
    notes: Optional[Path] = typer.Option(None, help="markdown appended as 'Known limits'"),
):
    """Write MODEL.md (the model card) beside the weights from the recorded facts."""
    from .card import write_card
    with _one_line_errors():
        path = write_card(model, corpus, quality, notes)
    typer.echo(f"wrote {path}")


def augment_cmd(
    sources: List[str] = typer.Argument(..., help="directories or pypi:NAME==VERSION (downloaded, never installed)"),
    out: Path = typer.Option(..., "--out", "-o", help="JSONL of augmented functions (appended; reruns resume)"),
    workers: int = typer.Option(2, help="processes, one Jedi each (--executor ray: Ray actors)"),
    min_doc_words: int = typer.Option(3, help="words in the docstring's first paragraph"),
    max_body_lines: int = typer.Option(30, help="skip functions whose body (after the docstring) is longer"),
    max_file_bytes: int = typer.Option(300_000, help="skip bigger files"),
    max_files_per_repo: Optional[int] = typer.Option(None, help="at most this many files per repository"),
    exact: bool = typer.Option(False, help="a full Jedi completion per identifier on the truncated file (slow)"),
    dynamic_inference: bool = typer.Option(False, help="Jedi's call-site search for parameter types (slower)"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    executor: str = typer.Option("local", help=EXECUTOR_HELP),
    ray_address: Optional[str] = typer.Option(None, help=RAY_ADDRESS_HELP),
):
    """Mark with <COMP> the identifiers Jedi would have offered (ToolGen, Algorithm 1)."""
    from .augment import AugmentConfig, augment
    cfg = AugmentConfig(sources=list(sources), out=str(out), workers=workers, min_doc_words=min_doc_words,
                        max_body_lines=max_body_lines, max_file_bytes=max_file_bytes,
                        max_files_per_repo=max_files_per_repo, exact=exact,
                        dynamic_inference=dynamic_inference)
    ex = None
    try:
        ex = make_executor(executor, ray_address, workers)
        s = augment(cfg, progress=progress, executor=ex)
    except GroundcodeError as exc:
        _fail(exc)
    finally:
        if ex is not None:
            ex.close()
    typer.echo(f"{s['functions']} functions ({s['files']} files, {s['files_skipped_resume']} already done), "
               f"{s['marked']} <COMP> = {s['comp_per_function']}/function, hit rate {s['hit_rate']}, "
               f"{s['seconds']}s = {s['functions_per_s']} functions/s (load {s['loadavg'][0]}) -> {out}")


@train_app.command("finetune")
def finetune_cmd(
    data: Path = typer.Option(..., help="augmented JSONL from `groundcode augment`"),
    out: Path = typer.Option(..., "--out", "-o", help="adapter (or model) directory"),
    variant: str = typer.Option("toolgen", help="base (original functions) | toolgen (with <COMP>)"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="registry name, path or HF id (default model if omitted)"),
    method: str = typer.Option("lora", help="lora | full"),
    lora_r: int = typer.Option(16), lora_alpha: int = typer.Option(16), lora_dropout: float = typer.Option(0.05),
    target_modules: str = typer.Option("q_proj,k_proj,v_proj,o_proj", help="LoRA targets, comma-separated"),
    lr: float = typer.Option(3e-4), epochs: float = typer.Option(1.0), batch_size: int = typer.Option(4),
    max_len: int = typer.Option(384, help="tokens per example"), max_prompt: int = typer.Option(160),
    max_train_tokens: Optional[int] = typer.Option(None, help="take examples until this many tokens"),
    max_examples: Optional[int] = typer.Option(None), eval_examples: int = typer.Option(24),
    exclude_repo: Optional[List[str]] = typer.Option(None, "--exclude-repo", help="refuse data from this repository; repeat"),
    exclude_recipe: Optional[str] = typer.Option("standing", help="refuse data from this benchmark recipe's packages ('' = none)"),
    time_budget_s: Optional[float] = typer.Option(None, help="stop training after this much wall time"),
    save_every: int = typer.Option(20, help="steps between checkpoints (a rerun resumes)"),
    seed: int = typer.Option(42), threads: Optional[int] = typer.Option(None), device: Optional[str] = typer.Option(None),
):
    """Fine-tune BASE or TOOLGEN (docstring -> function) as a LoRA adapter or a full model."""
    from .finetune import FinetuneConfig, finetune
    try:
        excluded = list(exclude_repo or [])
        if exclude_recipe:
            from ..evaluation.cli import load_recipe
            excluded += [p["source"].split(":", 1)[1].split("==")[0] for p in load_recipe(exclude_recipe)["packages"]]
        cfg = FinetuneConfig(data=str(data), out=str(out), variant=variant, model=model, method=method,
                             lora_r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                             target_modules=target_modules, lr=lr, epochs=epochs, batch_size=batch_size,
                             max_len=max_len, max_prompt=max_prompt, max_train_tokens=max_train_tokens,
                             max_examples=max_examples, eval_examples=eval_examples, exclude_repos=excluded,
                             time_budget_s=time_budget_s, save_every=save_every, seed=seed, threads=threads,
                             device=device)
        r = finetune(cfg, log=typer.echo)
    except GroundcodeError as exc:
        _fail(exc)
    typer.echo(f"{r['variant']}: {r['examples']} examples, {r['steps']} steps, {r['tokens_per_s']} tok/s; "
               f"held-out loss {r['eval_before']['loss']} -> {r['eval_after']['loss']}; "
               f"{r['adapter_bytes'] / 1e6:.1f} MB -> {out}")
