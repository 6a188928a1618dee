"""A running `groundcode serve` as the CLI's back end: `groundcode complete` sends its request
to the server's structured endpoint instead of loading the model (a warm model, prefix cache
and analyzer answer in about a second instead of a cold start).

    server = find_server(url_or_None, path, model, analyzer)   # a discovery.Server, or None
    gen = complete_via(server, path, line, column, text, max_new_tokens=..., ...)   # api.Generation

A server is used when `--server URL` names one (then `$GROUNDCODE_API_KEY` is sent: the user
chose that address), or when the user's own server is found through its discovery file and
proves it wrote it (discovery.py: no port is probed, no key is sent; the file's token
authenticates) and serves the file, the model and the analyzer asked for. Every option that
shapes the answer travels (sampling, stop, the prompt cap, the analysis deadline, the model and
the analyzer, which the server refuses when they are not its own); options a server cannot take
keep the CLI local (or, with `--server`, are an error). Test: tests/test_cli_server.py.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import GroundcodeError
from .discovery import Server, discover


def _key_headers() -> dict:
    key = os.environ.get("GROUNDCODE_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def find_server(url: str | None, path: Path, model: str | None, analyzer: str = "jedi") -> Server | None:
    """The server to send `path`'s request to: `url` (must answer, else an error), else the
    user's own discovered server when it serves the file, the model and the analyzer; None
    otherwise."""
    import httpx
    explicit = url is not None
    if explicit:
        server = Server(url.rstrip("/"), _key_headers())
    else:
        server = discover(path, model, analyzer)
        if server is None:
            return None
    url = server.url
    try:
        r = httpx.get(url + "/health", timeout=2.0, headers=server.headers)
        h = r.json()
    except (httpx.HTTPError, ValueError):
        if explicit:
            raise GroundcodeError(f"--server {url}: no groundcode serve answers there") from None
        return None
    if not isinstance(h, dict) or h.get("status") != "ok":
        if explicit:
            why = (h.get("error") or h.get("status")) if isinstance(h, dict) else "not JSON"
            raise GroundcodeError(f"--server {url}: not serving ({why})")
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
    return server


def complete_via(server: Server, path: Path, line: int | None, column: int | None, text: str, *,
                 max_new_tokens: int, temperature: float, top_p: float, seed: int, stop: str,
                 function: str | None = None, max_prompt_tokens: int | None = None,
                 analysis_deadline: float | None = None, model: str | None = None,
                 analyzer: str | None = None, timeout: float = 120.0):
    """The structured endpoint's answer (a cursor, or `function`'s body) as an api.Generation;
    every option given travels (the server refuses one it cannot honour: a GroundcodeError)."""
    import httpx

    from ..contract import Generation
    from ..decoding.guides.base import TriggerRecord
    url = server.url
    body = {"path": str(Path(path).resolve()), "text": text, "max_tokens": max_new_tokens,
            "temperature": temperature, "top_p": top_p, "seed": seed, "until": stop}
    body.update({"function": function} if function else {"line": line, "column": column})
    body.update({k: v for k, v in (("max_prompt_tokens", max_prompt_tokens),
                                    ("analysis_deadline", analysis_deadline),
                                    ("model", model), ("analyzer", analyzer)) if v is not None})
    try:
        r = httpx.post(url + "/v1/code/completions", json=body, timeout=timeout, headers=server.headers)
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
