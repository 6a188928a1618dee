"""Answers in the shape each client reads. Pure functions from session results to JSON-ready
dicts; no HTTP.

    openai_completion(out, prep, model, rid, created)   OpenAI `text_completion`
    openai_chunk(rid, created, model, index, text, finish_reason=None, extra=None)
    infill_answer(gen, prep, model) / infill_chunk(text)   llama.cpp /infill
    code_answer(gen, triggers, prep, model)             the structured endpoint
    sse(obj) -> bytes                                   one server-sent event

Every answer says whether it was grounded (`groundcode.grounded`) and, when it was, which
identifiers the analyzer chose (`triggers`, as `groundcode complete --json` prints them).
Tested by tests/test_server_http.py.
"""
from __future__ import annotations

import json

# Session finish reasons -> OpenAI's (a deadline says so: it is not the token limit; a request
# whose deadline passed before it wrote anything is a 504, never a 200).
_FINISH = {"eos": "stop", "stop": "stop", "length": "length", "deadline": "deadline",
           "cancelled": "stop"}


def finish_reason(reason: str | None) -> str:
    return _FINISH.get(reason or "", "stop")


def stop_reason(gen) -> str | None:
    """vLLM's `stop_reason`: the stop string that ended the text (None: end of text or the
    length limit), so a client can tell a stop string from the end of text."""
    st = gen.stop
    if st is not None and st.reason == "stop_string" and isinstance(st.payload, str):
        return st.payload
    return None


def trigger_json(t) -> dict:
    return dict(t) if isinstance(t, dict) else t.to_json()


def final_triggers(gen, streamed) -> list:
    """The sample's trigger records: the Generation's (final: `chosen` filled in) when it has
    them, else those streamed as "trigger" updates."""
    return list(gen.triggers or streamed or [])


def timings_json(gen) -> dict:
    t = dict(gen.timings or {})     # a phase that did not happen: None
    return {k: round(float(v), 2) if isinstance(v, (int, float)) else v for k, v in t.items()}


def grounding(prep, gen=None, triggers=None) -> dict:
    d = {"grounded": prep.grounded, "fim": prep.fim}
    if prep.path:
        d["path"] = prep.path
    if prep.note:
        d["note"] = prep.note
    if getattr(prep, "locate", None) is not None:     # a text-only request: where it went, or why not
        d["locate"] = prep.locate
    if gen is not None:
        d["finish_reason"] = gen.finish_reason
        d["triggers"] = [trigger_json(t) for t in final_triggers(gen, triggers)]
        d["timings"] = timings_json(gen)
    return d


def usage(gens) -> dict:
    gens = [g for g in gens if g is not None]
    p = int(gens[0].prompt_tokens or 0) if gens else 0
    c = sum(int(g.tokens) for g in gens)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def openai_completion(out, prep, model: str, rid: str, created: int) -> dict:
    choices = []
    for i, g in enumerate(out.generations):
        choices.append({"text": g.completion if g else "", "index": i, "logprobs": None,
                        "finish_reason": finish_reason(g.finish_reason if g else None),
                        "stop_reason": stop_reason(g),
                        "groundcode": grounding(prep, g, out.triggers[i]) if g else None})
    return {"id": rid, "object": "text_completion", "created": created, "model": model,
            "choices": choices, "usage": usage(out.generations),
            "groundcode": grounding(prep)}


def openai_chunk(rid: str, created: int, model: str, index: int, text: str,
                 finish: str | None = None, extra: dict | None = None) -> dict:
    choice = {"text": text, "index": index, "logprobs": None, "finish_reason": finish}
    if extra is not None:
        choice["groundcode"] = extra
    return {"id": rid, "object": "text_completion", "created": created, "model": model,
            "choices": [choice]}


def _infill_timings(gen) -> dict:
    t = gen.timings or {}
    prompt_n = max(0, int(gen.prompt_tokens or 0) - int(gen.tokens_cached or 0))
    prompt_ms = float(t.get("prefill_ms") or 0.0)
    predicted_n = int(gen.tokens)
    predicted_ms = float(t.get("decode_ms") or 0.0)
    return {"prompt_n": prompt_n, "prompt_ms": round(prompt_ms, 3),
            "prompt_per_token_ms": round(prompt_ms / prompt_n, 3) if prompt_n else 0.0,
            "prompt_per_second": round(1e3 * prompt_n / prompt_ms, 3) if prompt_ms else 0.0,
            "predicted_n": predicted_n, "predicted_ms": round(predicted_ms, 3),
            "predicted_per_token_ms": round(predicted_ms / predicted_n, 3) if predicted_n else 0.0,
            "predicted_per_second": (round(1e3 * predicted_n / predicted_ms, 3)
                                     if predicted_ms else 0.0)}


def pick_fields(d: dict, fields: list | None) -> dict:
    """llama.cpp's `response_fields`: only these, a nested one under its slash path as the key
    (`"timings/prompt_n"`: that is what llama.vim reads)."""
    if not fields:
        return d
    out = {}
    for f in fields:
        node, ok = d, True
        for part in f.split("/"):
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                ok = False
                break
        if ok and f:
            out[f] = node
    return out


def infill_answer(gen, prep, model: str, triggers=None) -> dict:
    d = {"content": gen.completion, "stop": True, "model": model,
         "stop_type": {"length": "limit", "deadline": "deadline"}.get(gen.finish_reason, "eos"),
         "tokens_predicted": int(gen.tokens),
         "tokens_evaluated": int(gen.prompt_tokens or 0),
         "timings": _infill_timings(gen),
         "tokens_cached": int(gen.tokens_cached or 0),
         "truncated": bool(gen.truncated),
         "groundcode": grounding(prep, gen, triggers)}
    return pick_fields(d, prep.response_fields)


def infill_warm_answer(prep, model: str, warm_ms: float) -> dict:
    d = {"content": "", "stop": True, "model": model, "stop_type": "limit",
         "tokens_predicted": 0, "tokens_evaluated": 0,
         "timings": {"prompt_n": 0, "prompt_ms": round(warm_ms, 3), "predicted_n": 0,
                     "predicted_ms": 0.0},
         "tokens_cached": 0, "truncated": False, "groundcode": grounding(prep)}
    return pick_fields(d, prep.response_fields)


def code_answer(gen, triggers, prep, model: str) -> dict:
    d = {"completion": gen.completion, "finish_reason": gen.finish_reason,
         "triggers": [trigger_json(t) for t in final_triggers(gen, triggers)],
         "timings": timings_json(gen), "tokens": int(gen.tokens),
         "prompt_tokens": int(gen.prompt_tokens or 0),
         "tokens_cached": int(gen.tokens_cached or 0),
         "path": prep.path, "grounded": True, "model": model}
    if gen.remote_requests is not None:    # a server in front of another one
        d["remote_requests"] = int(gen.remote_requests)
    return d


def sse(obj) -> bytes:
    return b"data: " + (obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n\n"
