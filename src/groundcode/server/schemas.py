"""Request bodies of the HTTP API, as pydantic models: a field no model names is refused
(`extra="forbid"`), so a typo is a 400, not a silently ignored option.

    CompletionRequest   POST /v1/completions  (OpenAI legacy, plus the `groundcode` extension)
    InfillRequest       POST /infill          (llama.cpp; its /completion options are accepted)
    CodeRequest         POST /v1/code/completions (structured: path, buffer, cursor)

OpenAI and llama.cpp options that groundcode does not implement are still *named* here (clients
send them): the ones that change nothing are ignored (documented in docs/EDITORS.md), the ones
whose non-default value would change the answer are refused by service.py with a one-line 400.
Not here: checks that need the workspace or the model (guard.py, service.py).
Tested by tests/test_server_http.py.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field


SEED = dict(ge=-1, lt=2 ** 63)         # a seed the sampler's generator takes (else 400); -1:
                                       # llama.cpp's "any seed" (0 here)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GroundcodeField(_Strict):
    """`"groundcode": {"path": ...}` on /v1/completions and /infill: the file the prompt is the
    text of (relative to a served workspace, or absolute inside one). The analyzer then reads
    prompt + suffix as that file's text with the cursor between them, so the completion is
    grounded; without it decoding is plain and the answer says `grounded: false`."""
    path: str


class CompletionRequest(_Strict):
    model: Optional[str] = None                     # accepted, ignored: one model is served
    prompt: Union[str, list[str], list[int], list[list[int]]] = ""   # text, or token ids
    suffix: Optional[str] = None
    max_tokens: int = Field(16, ge=1)
    temperature: float = Field(0.0, ge=0, le=2)     # 0 (greedy) unless asked: code, not prose
    top_p: float = Field(1.0, gt=0, le=1)
    n: int = Field(1, ge=1)
    stop: Union[str, list[str], None] = None
    seed: Optional[int] = Field(None, **SEED)
    stream: bool = False
    stream_options: Optional[dict[str, Any]] = None  # {"include_usage": true}
    logit_bias: Optional[dict[str, float]] = None   # token id -> bias added to its logit
    # named by the OpenAI API; only their neutral values are served (service.py)
    logprobs: Optional[int] = None
    echo: bool = False
    best_of: Optional[int] = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    user: Optional[str] = None
    groundcode: Optional[GroundcodeField] = None


class ExtraChunk(BaseModel):
    """One of llama.vim's ring-buffer chunks: model-only context (a prompt block)."""
    model_config = ConfigDict(extra="ignore")       # clients add bookkeeping (`time`)
    filename: str = ""
    text: str = ""


class InfillRequest(_Strict):
    input_prefix: str = ""
    input_suffix: str = ""
    input_extra: list[ExtraChunk] = Field(default_factory=list)
    prompt: str = ""                                # the current line up to the cursor
    n_predict: int = Field(-1, ge=-1)               # -1: the server's default; 0: warm only
    temperature: float = Field(0.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    stream: bool = False
    cache_prompt: bool = True                       # always true here (the session's prefix cache)
    stop: list[str] = Field(default_factory=list)
    seed: Optional[int] = Field(None, **SEED)
    response_fields: Optional[list[str]] = None     # llama.cpp: keep only these ("timings/prompt_n")
    # llama.cpp sampling and scheduling options clients send; accepted and ignored
    top_k: Optional[int] = None
    min_p: Optional[float] = None
    samplers: Optional[list[str]] = None
    n_indent: Optional[int] = None
    t_max_prompt_ms: Optional[int] = None
    t_max_predict_ms: Optional[int] = None
    id_slot: Optional[int] = None
    n_cmpl: Optional[int] = None
    penalty_last_n: Optional[int] = None
    lora: Optional[list[Any]] = None
    model: Optional[str] = None
    groundcode: Optional[GroundcodeField] = None


class CodeRequest(_Strict):
    path: str                                       # relative to a workspace or absolute inside one
    text: Optional[str] = None                      # the unsaved buffer; else the file on disk
    line: Optional[int] = Field(None, ge=1)         # 1-based
    column: Optional[int] = Field(None, ge=0)       # 0-based, in characters
    function: Optional[str] = None                  # instead of line/column: write this function's
                                                    # body ("Class.method"), as `groundcode generate`
    max_tokens: int = Field(64, ge=1)
    temperature: float = Field(0.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int = Field(0, **SEED)
    until: Literal["block", "statement", "line"] = "block"   # where the completion ends
    stream: bool = False
    # what `groundcode complete` sends so that its answer through a server is its answer alone
    # (None: the server's own setting; a model or analyzer other than the server's: 400)
    max_prompt_tokens: Optional[int] = Field(None, ge=0)   # the prompt cap (0: the window)
    analysis_deadline: Optional[float] = Field(None, gt=0, le=600)   # seconds per analysis call
    model: Optional[str] = None
    analyzer: Optional[str] = None
