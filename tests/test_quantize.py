"""int8 weights on CPU (models/quantize.py): `--dtype int8` loads float32 and quantizes every
linear layer (the output head included); the engine and its monitors run unchanged on it."""
from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from groundcode.cli import app
from groundcode.errors import GroundcodeError
from groundcode.models.load import load_model

CART_MEMBERS = {"add", "last", "owner", "registry", "__init__"}


def test_int8_quantizes_every_linear_layer_and_predicts_as_float32_does():
    import torch
    fp = load_model("tiny", "cpu", "float32")
    q = load_model("tiny", "cpu", "int8")
    assert q.dtype == "int8" and fp.dtype == "float32" and q.model.lm_head.weight_int8.dtype == torch.int8
    plain = [n for n, m in q.model.named_modules() if type(m) is torch.nn.Linear]
    quantized = [n for n, m in q.model.named_modules() if type(m).__name__ == "Int8Linear"]
    assert plain == [] and "lm_head" in quantized and len(quantized) >= 8, (plain, quantized)
    text = "class Cart:\n    def add(self, item):\n        self.items.append(item)\n        return len(self.items)\n"
    ids = fp.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        a, b = fp.model(ids).logits[0], q.model(ids).logits[0]
    agree = (a.argmax(-1) == b.argmax(-1)).float().mean().item()
    assert agree >= 0.8, agree                       # the same predictions, nearly everywhere
    assert (a - b).abs().max().item() < 0.25 * a.abs().max().item()


def test_int8_completion_at_self_dot_is_grounded(tmp_path, shop_repo):
    repo = tmp_path / "shop"
    shutil.copytree(shop_repo, repo)
    r = CliRunner().invoke(app, ["complete", f"{repo}/shop/cart.py:11:13", "--repo", str(repo), "--json",
                                 "--model", "tiny", "--dtype", "int8", "--max-new-tokens", "8"])
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout.strip().splitlines()[-1])["triggers"][0]
    assert t["receiver"] == "self" and not t["failed_open"] and t["candidates"] >= len(CART_MEMBERS), t
    assert t["constrained"] or t["binding"] or t["chosen"] in CART_MEMBERS, t


def test_int8_says_where_it_cannot_run():
    with pytest.raises(GroundcodeError, match="CPU only"):
        from groundcode.models.quantize import quantize
        quantize(object(), "int8", "cuda")
    with pytest.raises(GroundcodeError, match="int8"):
        load_model("tiny", "cpu", "int4")
