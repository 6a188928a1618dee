"""The dtype `groundcode serve` and `groundcode lsp` load without --dtype (models/load.py's
serving_dtype): int8 weights (bfloat16 activations) on a CPU with native bfloat16, the loader's
default elsewhere, an explicit --dtype always; and that both servers actually pass it to the Generator."""
from __future__ import annotations

import pytest

from groundcode.errors import GroundcodeError
from groundcode.models import load

ZEN4 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n"
OLD = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n"
SPR = "processor\t: 0\nflags\t\t: fpu avx512f amx_bf16 amx_tile\n"


def test_cpu_flags_are_read():
    assert load.cpu_has_bf16(ZEN4) and load.cpu_has_bf16(SPR)
    assert not load.cpu_has_bf16(OLD) and not load.cpu_has_bf16("")


def test_default_is_gguf_where_llama_cpp_loads_and_the_model_is_a_registry_model(monkeypatch):
    monkeypatch.setattr(load, "cpu_has_bf16", lambda cpuinfo=None: True)
    monkeypatch.setattr(load, "gguf_available", lambda: True)
    assert load.serving_dtype(None, "cpu") == load.GGUF                       # the default model
    assert load.serving_dtype(None, "cpu", "qwen2.5-coder-0.5b") == load.GGUF
    assert load.serving_dtype(None, "cpu", "tiny") == "int8"                  # no GGUF file
    assert load.serving_dtype(None, "cpu", "/models/mine") == "int8"
    assert load.serving_dtype("bfloat16", "cpu") == "bfloat16"                # explicit wins
    monkeypatch.setattr(load, "gguf_available", lambda: False)                # not installed
    assert load.serving_dtype(None, "cpu") == "int8"


def test_default_is_int8_on_a_bf16_cpu_and_float32_elsewhere(monkeypatch):
    import torch
    from groundcode.models import quantize
    monkeypatch.setattr(load, "gguf_available", lambda: False)
    monkeypatch.setattr(load, "cpu_has_bf16", lambda cpuinfo=None: True)
    assert load.serving_dtype(None, "cpu") == "int8"
    assert load.serving_dtype("auto", "cpu") == "int8"
    assert load.serving_dtype("bfloat16", "cpu") == "bfloat16"
    monkeypatch.setattr(quantize, "available", lambda: False)     # a torch without the kernel
    assert load.serving_dtype(None, "cpu") == "bfloat16"
    monkeypatch.setattr(quantize, "available", lambda: True)
    assert load.serving_dtype("float32", "cpu") == "float32"      # explicit wins
    monkeypatch.setattr(load, "cpu_has_bf16", lambda cpuinfo=None: False)
    assert load.serving_dtype(None, "cpu") is None                 # the loader's default:
    assert load.pick_dtype(None, "cpu") == torch.float32           # float32 on that CPU
    assert load.serving_dtype("bfloat16", "cpu") == "bfloat16"


def test_the_default_loads_and_generates(monkeypatch):
    from groundcode.api import Generator
    from groundcode.config import SamplingConfig
    from groundcode.session import Request
    monkeypatch.setattr(load, "cpu_has_bf16", lambda cpuinfo=None: True)
    with Generator("tiny", device="cpu", dtype=load.serving_dtype(None, "cpu", "tiny")) as gen:
        assert gen.lm.dtype == "int8"
        g = gen.session.submit(Request(prompt_text="def add(a, b):\n    return",
                                       sampling=SamplingConfig(max_new_tokens=4))).result(timeout=120)[0]
        assert g.tokens >= 1 and g.finish_reason != "error"


class _Seen(Exception):
    pass


def _capture(monkeypatch):
    seen = {}

    def fake(model=None, monitor=None, device=None, dtype=None, **kw):
        seen.update(model=model, device=device, dtype=dtype, prompt=kw.get("prompt"))
        raise _Seen()
    import groundcode.api
    monkeypatch.setattr(groundcode.api, "Generator", fake)
    return seen


def test_serve_passes_the_default(monkeypatch, tmp_path):
    from groundcode.server.options import ServeOptions
    from groundcode.server.service import Service
    monkeypatch.setattr(load, "cpu_has_bf16", lambda cpuinfo=None: True)
    seen = _capture(monkeypatch)
    with pytest.raises(_Seen):
        Service(ServeOptions(workspaces=[tmp_path], model="tiny", device="cpu"))
    assert seen["dtype"] == "int8"
    with pytest.raises(_Seen):
        Service(ServeOptions(workspaces=[tmp_path], model="tiny", device="cpu", dtype="float32"))
    assert seen["dtype"] == "float32"
    monkeypatch.setattr(load, "gguf_available", lambda: True)      # the registry model's file
    with pytest.raises(_Seen):
        Service(ServeOptions(workspaces=[tmp_path], model="smollm2-135m", device="cpu"))
    assert seen["dtype"] == load.GGUF


def test_lsp_passes_the_default(monkeypatch, tmp_path):
    from groundcode.server.lsp_cli import _prepare
    monkeypatch.setattr(load, "cpu_has_bf16", lambda cpuinfo=None: True)
    seen = _capture(monkeypatch)
    completer, _ = _prepare("tiny", [tmp_path], "cpu", None, 16, "auto", 0.0, 5.0, None, False)
    with pytest.raises(GroundcodeError):        # the fake Generator "failed" after recording
        completer.generator(timeout=30)
    assert seen["dtype"] == "int8"
    # the suffix a FIM model re-reads at every keystroke: none (docs/EDITORS.md, session 38:
    # qwen's lines faster and no worse without it)
    assert seen["prompt"].suffix_tokens == 0


def test_gguf_runs_the_file_requantized_once_where_the_registry_says(monkeypatch, tmp_path):
    from groundcode.decoding import llama_cpp
    shipped = tmp_path / "model.gguf"
    shipped.write_bytes(b"GGUF q4_1")
    monkeypatch.setattr(load, "gguf_file", lambda name: shipped)
    made = []

    def requantize(src, dst, kind):
        made.append(kind)
        dst.write_bytes(src.read_bytes() + b" as " + kind.encode())

    monkeypatch.setattr(llama_cpp, "requantize", requantize)
    monkeypatch.setattr(llama_cpp, "version", lambda: "0.3.36")
    assert load.REGISTRY["smollm2-135m"].run_as == "q8_0"
    out = load.engine_gguf("smollm2-135m")
    assert out == tmp_path / "model.q8_0.gguf" and out.read_bytes() == b"GGUF q4_1 as q8_0"
    assert load.engine_gguf("smollm2-135m") == out and made == ["q8_0"]           # kept
    monkeypatch.setattr(llama_cpp, "version", lambda: "0.3.37")                   # a new llama.cpp
    assert load.engine_gguf("smollm2-135m") == out and made == ["q8_0", "q8_0"]   # writes it again
    assert not list(tmp_path.glob("*.part"))
    assert load.engine_gguf("qwen2.5-coder-0.5b") == shipped                      # as shipped
