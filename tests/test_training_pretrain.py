"""Pretraining end to end on CPU with the smoke preset: corpus -> tokenizer -> train -> load -> generate.

Runs the real code path (training/corpus.py, tokenizer.py, pretrain.py, curves.py) on a small
synthetic package and checks that the held-out loss falls and the saved model loads and generates.
"""
import json
import random

import pytest

from groundcode.models.load import load_model
from groundcode.training.corpus import CorpusConfig, build_corpus
from groundcode.training.pretrain import PretrainConfig, fim_split, lr_at, pretrain
from groundcode.training.tokenizer import count_tokens, train_tokenizer

NAMES = ["items", "values", "count", "total", "name", "path", "size", "result", "index", "data"]


def synthetic_file(rng: random.Random, k: int) -> str:
    lines = [f'"""Module {k}."""', "import os", ""]
    for f in range(6):
        a, b = rng.sample(NAMES, 2)
        lines += [f"def get_{a}_{f}(self, {b}):", f'    """Return the {a} of {b}."""',
                  f"    {a} = []", f"    for item in {b}:", f"        {a}.append(item)",
                  f"    return len({a}) + {rng.randint(0, 9)}", ""]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("mycode")
    src = root / "mycode"
    src.mkdir()
    rng = random.Random(0)
    for k in range(400):
        (src / f"mod_{k:03d}.py").write_text(synthetic_file(rng, k))
    corpus = root / "corpus"
    manifest = build_corpus(CorpusConfig(out_dir=str(corpus), roots=[str(src)], default_license="MIT",
                                         progress=False, workers=1, exclude_file=""))
    tok = train_tokenizer(corpus, root / "tok", vocab_size=400)
    count_tokens(corpus, tok)
    cfg = PretrainConfig.from_preset("smoke", corpus=str(corpus), tokenizer=str(root / "tok"),
                                     out=str(root / "model"), heldout_permille=50, progress=False, threads=1)
    return manifest, corpus, cfg, pretrain(cfg)


def test_tokenizer_has_special_tokens_first_and_roundtrips(trained):
    manifest, corpus, cfg, summary = trained
    assert manifest["files"] == 400 and manifest["packages"]["mycode"]["license"] == "MIT"
    tok = load_model(cfg.out).tokenizer
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["<|endoftext|>", "<fim_prefix>", "<fim_suffix>",
                                                          "<fim_middle>", "<COMP>"]
    text = "def f(x):\n    return x.count  # é ✓\n"
    assert tok.decode(tok(text)["input_ids"]) == text
    assert tok("a<COMP>b")["input_ids"].count(4) == 1
    written = json.loads((corpus / "manifest.json").read_text())
    assert written["tokens"] == written["packages"]["mycode"]["tokens"] > 0


def test_smoke_pretraining_loss_falls_and_model_generates(trained):
    manifest, corpus, cfg, summary = trained
    assert summary["steps"] == 60 and summary["tokens_seen"] == 60 * 8 * 64
    assert summary["final_eval_loss"] < 0.6 * summary["first_eval_loss"]
    assert summary["data"]["fim_documents"] > 0 and summary["data"]["heldout_files"] > 0
    out = cfg.out
    log = [json.loads(line) for line in open(f"{out}/train_log.jsonl")]
    assert log[-1]["final"] and any("eval_loss" in r for r in log[:-1])
    from pathlib import Path
    assert (Path(out) / "loss_curve.png").stat().st_size > 1000
    assert all(f.stat().st_size <= 16 * 2**20 for f in Path(out).glob("*.safetensors"))
    loaded = load_model(out)
    assert loaded.dtype == "float32" and loaded.context_length == 1024
    ids = loaded.tokenizer("def get_", return_tensors="pt")["input_ids"]
    gen = loaded.model.generate(ids, max_new_tokens=12, do_sample=False)
    assert gen.shape[1] == ids.shape[1] + 12 or loaded.tokenizer.eos_token_id in gen[0].tolist()


def test_fim_split_and_schedule():
    rng = random.Random(1)
    for _ in range(50):
        p, m, s = fim_split("abcdefghij", rng)
        assert p + m + s == "abcdefghij"
    cfg = PretrainConfig(lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(cfg, 0, 0.0) == pytest.approx(0.1)
    assert lr_at(cfg, 10, 0.0) == pytest.approx(1.0)
    assert lr_at(cfg, 500, 0.5) == pytest.approx(0.55)
    assert lr_at(cfg, 999, 1.0) == pytest.approx(0.1)


def test_card_command_writes_model_md_from_recorded_facts(trained, tmp_path):
    from typer.testing import CliRunner

    from groundcode.training.cli import train_app
    manifest, corpus, cfg, summary = trained
    notes = tmp_path / "limits.md"
    notes.write_text("- trained for seconds; a smoke model")
    res = CliRunner().invoke(train_app, ["card", "--model", cfg.out, "--corpus", str(corpus), "--notes", str(notes)])
    assert res.exit_code == 0, res.output
    from pathlib import Path
    card = (Path(cfg.out) / "MODEL.md").read_text()
    assert f"**{summary['tokens_seen']:,} tokens seen**" in card
    assert "## Known limits" in card and "a smoke model" in card and "MIT 1" in card
    slim = json.loads((Path(cfg.out) / "corpus_manifest.json").read_text())
    assert slim["packages"]["mycode"]["files"] == 400 and "shards" not in slim
    res = CliRunner().invoke(train_app, ["card", "--model", str(tmp_path), "--corpus", str(corpus)])
    assert res.exit_code == 2 and "training.json is missing" in res.output
