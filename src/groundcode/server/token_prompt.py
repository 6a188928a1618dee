"""OpenAI-style requests the server takes as token ids, free of HTTP: `logit_bias` (token ids
of this model's vocabulary with a bias each) and `prompt: [token ids]` (decoded as is, with no
prompt building and no grounding). Used by service.py's `completion`.
Test: tests/test_remote.py (logit_bias, a prompt of token ids), tests/test_server_http.py.
"""
from __future__ import annotations

from .guard import ClientError

MAX_STOP = 32                     # OpenAI allows 4; Continue sends its template's and its own


def logit_bias(width: int, bias) -> tuple:
    """OpenAI's logit_bias: token ids (as strings) of a vocabulary of `width` tokens, biases in
    [-100, 100]; ((id, bias), ...)."""
    if not bias:
        return ()
    out = []
    for k, v in bias.items():
        if not str(k).isdigit() or not int(k) < width:
            raise ClientError(f"logit_bias: {k!r} is not a token id of this model (0..{width - 1})")
        if not -100 <= v <= 100:
            raise ClientError(f"logit_bias[{k}]: {v} is outside [-100, 100]")
        out.append((int(k), float(v)))
    return tuple(out)


def token_prompt(svc, b, ids: list, bias: tuple):
    """`prompt: [token ids]` of a CompletionRequest `b` checked against the service's model: the
    session Request (decoded plain)."""
    width = int(svc.gen.vocab.size)
    if not ids or any(not isinstance(t, int) or not 0 <= t < width for t in ids):
        raise ClientError(f"prompt: token ids must be integers in 0..{width - 1}")
    if len(ids) + b.max_tokens > svc.context_length:
        raise ClientError(f"prompt: {len(ids)} tokens + max_tokens {b.max_tokens} exceed the "
                          f"model's window ({svc.context_length})")
    if b.suffix or b.groundcode is not None:
        raise ClientError("a prompt of token ids takes no suffix and no groundcode.path")
    stop = [b.stop] if isinstance(b.stop, str) else list(b.stop or [])
    if len(stop) > MAX_STOP or any(not s for s in stop):
        raise ClientError(f"stop: at most {MAX_STOP} non-empty strings")
    sampling = svc._sampling(b.max_tokens, b.temperature, b.top_p, b.seed, n=b.n)
    return svc._request(prompt_ids=tuple(ids), sampling=sampling, n=b.n, stop=tuple(stop),
                        logit_bias=bias)
