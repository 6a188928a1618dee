"""A running `groundcode serve` as the CLI's back end: `groundcode complete` sends its request
to the server's structured endpoint instead of loading the model (a warm model, prefix cache
and analyzer answer in about a second instead of a cold start).

    url = find_server(url_or_None, path, model)   # the server to use, or None
    gen = complete_via(url, path, line, column, text, max_new_tokens=..., ...)   # api.Generation

A server is used when `--server URL` names one, or when one answers on the default address
(127.0.0.1:8012) and serves a workspace that holds the file and the model asked for (none, or
its own). Only options the server takes travel; the CLI uses the server only when the others are
at their defaults. Test: tests/test_cli_server.py.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import GroundcodeError

DEFAULT_URL = "http://127.0.0.1:8012"


def _headers() -> dict:
    key = os.environ.get("GROUNDCODE_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def find_server(url: str | None, path: Path, model: str | None) -> str | None:
    """The server to send `path`'s request to: `url` (must answer, else an error), else the
    default address when a server there serves the file and the model; None otherwise."""
    import httpx
    explicit = url is not None
    url = (url or DEFAULT_URL).rstrip("/")
    try:
        r = httpx.get(url + "/health", timeout=2.0 if explicit else 0.3, headers=_headers())
        h = r.json()
    except (httpx.HTTPError, ValueError):
        if explicit:
            raise GroundcodeError(f"--server {url}: no groundcode serve answers there") from None
        return None
    if h.get("status") != "ok":
        if explicit:
            raise GroundcodeError(f"--server {url}: not serving ({h.get('error') or h.get('status')})")
        return None
    roots = [Path(w) for w in h.get("workspaces", [])]
    real = Path(path).resolve()
    if not any(real == r or r in real.parents for r in roots):
        if explicit:
            raise GroundcodeError(f"--server {url} does not serve {path} (its workspaces: "
                                  f"{', '.join(map(str, roots)) or 'none'}; start it with --workspace)")
        return None
    if model is not None and h.get("model") not in (model, Path(str(model)).name):
        if explicit:
            raise GroundcodeError(f"--server {url} serves {h.get('model')}, not {model}")
        return None
    return url


def complete_via(url: str, path: Path, line: int | None, column: int | None, text: str, *,
                 max_new_tokens: int, temperature: float, top_p: float, seed: int, stop: str,
                 function: str | None = None, timeout: float = 120.0):
    """The structured endpoint's answer (a cursor, or `function`'s body) as an api.Generation."""
    import httpx

    from ..contract import Generation
    from ..decoding.guides.base import TriggerRecord
    body = {"path": str(Path(path).resolve()), "text": text, "max_tokens": max_new_tokens,
            "temperature": temperature, "top_p": top_p, "seed": seed, "until": stop}
    body.update({"function": function} if function else {"line": line, "column": column})
    try:
        r = httpx.post(url + "/v1/code/completions", json=body, timeout=timeout, headers=_headers())
    except httpx.HTTPError as exc:
        raise GroundcodeError(f"groundcode serve at {url}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    try:
        d = r.json()
    except ValueError:
        raise GroundcodeError(f"groundcode serve at {url}: HTTP {r.status_code}, not JSON") from None
    if r.status_code != 200:
        msg = (d.get("error") or {}).get("message", r.text) if isinstance(d, dict) else r.text
        raise GroundcodeError(f"groundcode serve at {url}: {msg}")
    known = set(TriggerRecord.__dataclass_fields__)
    triggers = [TriggerRecord(**{k: v for k, v in t.items() if k in known}) for t in d.get("triggers", [])]
    t = d.get("timings") or {}
    return Generation(d.get("completion", ""), int(d.get("tokens", 0)), float(t.get("total_ms") or 0) / 1e3,
                      d.get("finish_reason", ""), triggers, d.get("model", ""), bool(d.get("grounded", True)),
                      int(d.get("rollbacks", 0) or 0), prompt_tokens=int(d.get("prompt_tokens", 0) or 0),
                      tokens_cached=int(d.get("tokens_cached", 0) or 0), timings=t)
