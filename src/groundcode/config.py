"""Flat, typed configuration for generation. CLI flags map 1:1 onto these fields.

Not here: model loading options (models/load.py) and benchmark recipes (evaluation/).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SamplingConfig:
    temperature: float = 0.0      # 0 = greedy (deterministic)
    top_p: float = 1.0            # nucleus sampling; 1.0 keeps the whole distribution
    seed: int = 0                 # per-row generators are seeded from this
    max_new_tokens: int = 128     # hard cap on generated tokens per row
    stop: str = "block"           # block (the body / cursor's block ends) | statement | line

    def __post_init__(self):
        from .errors import GroundcodeError
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0):
            raise GroundcodeError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise GroundcodeError(f"top-p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise GroundcodeError(f"max-new-tokens must be >= 1, got {self.max_new_tokens}")
        if self.stop not in ("block", "statement", "line"):
            raise GroundcodeError(f"stop must be block, statement or line, got {self.stop!r}")


@dataclass
class MonitorConfig:
    enabled: bool = True           # False = plain decoding (the baseline)
    deadline_s: float = 2.0        # per analysis call; on timeout the monitor fails open
    hide_private: bool = False     # never steer to `_name` members (they stay allowed when written)
    hide_dunder: bool = True       # never steer to `__name__` members (they stay allowed when written)
    allow_bindings: bool = True    # leave `self.new_attr = ...` free (verified, rolled back otherwise)
    speculate: bool = True         # on a cache miss decode on and verify when the answer lands
    reproducible: bool = False     # every trigger waits for its own answer (no speculation, no
                                   # deadline or shared-window cut, no prefetch, answers reused
                                   # only for the same code): the output depends on the code,
                                   # not on timing, load or what the process ran before
    sdk: bool = True               # boto3 clients: botocore's models answer before Jedi (needs botocore)
    keywords: bool = True          # keyword arguments of calls with a known signature are constrained
    names: bool = False            # opt-in (Python): every name a line reads exists and every
                                   # import resolves, checked once the line is complete; a
                                   # missing one is redone under the names that exist
                                   # (decoding/guides/names.py)
    call_sites: bool = False       # an unannotated parameter is asked about: Jedi types it from the
                                   # function's call sites in the repository (off: it fails open as
                                   # "inferred", since a caller the repository lacks may pass another type;
                                   # measured on the standing functions: no net fewer fail-opens and one
                                   # rollback of correct code, docs/BENCHMARKS.md (d))
    vocabulary: bool = False       # opt-in: where the receiver's type is unknown ("untyped",
                                   # "empty") and it cannot be a library object (not a parameter,
                                   # a call's result, a member of a member, nor bound from
                                   # outside: decoding/guides/provenance.py), the name must exist
                                   # somewhere in the project or the builtin types
                                   # (analysis/vocabulary.py), steered towards what the project
                                   # writes after the receiver's name. Off by default: on 10
                                   # packages outside the standing recipe its earlier, wider form
                                   # forbade library members the project never writes (issue 30)
    python: str | None = None      # interpreter/venv whose libraries Jedi sees and which it may
                                   # start (None: groundcode's own, with the repository venv's
                                   # site-packages read as files; trust.py)
    analyzer: str = "jedi"         # jedi (in-process worker) or a language server installed with
                                   # `groundcode analyzers install NAME` (ty): analysis/lsp_client.py
    trust: bool = False            # the workspace is trusted: its .venv/venv/env interpreter may
                                   # run (also: the user's trusted list, `groundcode trust PATH`)


@dataclass
class ToolConfig:
    enabled: bool = False          # tool tokens (ToolGen): <COMP> calls the autocompleter
    threshold: float | None = None # also call when p(<COMP>) >= this (None: only when it is the pick)
    entropy: float | None = None   # zero-shot (no <COMP> needed): call at a name start whose
                                   # next-token entropy is >= this many nats


@dataclass
class PromptConfig:
    fim: str = "auto"              # auto | on | off: fill-in-the-middle with the model's FIM tokens
                                   # (auto: cursor completions when the tokenizer has them)
    heal: bool = True              # back up over the prompt's trailing whitespace; the model
                                   # re-writes it under a mask (token healing)
    block_tokens: int = 1024       # budget for prepended context blocks (snippets, API docs)
    suffix_tokens: int = 512       # budget for the FIM suffix (code after the cursor)
    max_prompt_tokens: int = 0     # cap below the model's window (0: the window); on a CPU a
                                   # shorter prompt prefills faster
    declarations: bool = False     # prepend what an IDE knows at the cursor: the enclosing class,
                                   # the repository classes/functions it uses (retrieval/declarations.py)
    declaration_tokens: int = 384  # budget for those blocks (inside block_tokens)
