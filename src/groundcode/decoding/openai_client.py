"""The one HTTP client of the remote back end (the only module that imports httpx): an
OpenAI-compatible server's `/v1/completions` and `/v1/models`, one request at a time.

    c = CompletionsClient("http://127.0.0.1:8000/v1", model=None, api_key=None)
    c.served_models() -> ["name", ...]
    out = c.complete(prompt, max_tokens, temperature=0.0, top_p=1.0, seed=0, stop=("." ,),
                     logit_bias={id: 100.0}, allowed_token_ids=None)
    out.text, out.finish_reason, out.stop_reason     # stop_reason: MISSING when the server does
                                                      # not say (only vLLM and groundcode do)
    c.requests                                        # completions sent so far

`prompt` is a list of token ids (OpenAI's token prompts: vLLM, groundcode serve) or a string
(servers that take text only: llama-cpp-python). A 4xx answer raises `Refused` with the server's
message, so the caller can tell "this server does not take that option" from a failure; any
other failure is a GroundcodeError (one line).
Not here: what to ask (decoding/remote.py). Tested by tests/test_remote.py.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ..errors import GroundcodeError

MISSING = object()          # the answer has no `stop_reason` field (so EOS and a stop are alike)


class Refused(GroundcodeError):
    """The server answered 4xx: it does not take something in the request."""


@dataclass
class Completion:
    text: str
    finish_reason: str              # "stop" (a stop string or end of text) | "length"
    stop_reason: object = MISSING   # vLLM / groundcode: the stop string, or None for end of text


class CompletionsClient:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0):
        try:
            import httpx
        except ImportError:
            raise GroundcodeError("a remote model (--model http://…) needs httpx: "
                                  "pip install 'groundcode[remote]'") from None
        self.base = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # one connection pool for every row (keep-alive: a constrained step is a short request)
        self._http = httpx.Client(timeout=timeout_s, headers=headers,
                                  limits=httpx.Limits(max_connections=32, max_keepalive_connections=32))
        self._httpx = httpx
        self.model = model
        self.requests = 0
        self._lock = threading.Lock()

    def _post(self, path: str, body: dict) -> dict:
        with self._lock:
            self.requests += 1
        try:
            r = self._http.post(self.base + path, json=body)
        except self._httpx.HTTPError as exc:
            raise GroundcodeError(f"remote model at {self.base}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
        return self._answer(r)

    def _answer(self, r) -> dict:
        if 400 <= r.status_code < 500:
            raise Refused(f"remote model at {self.base} refused the request ({r.status_code}): "
                          f"{_message(r)}")
        if r.status_code >= 300:
            raise GroundcodeError(f"remote model at {self.base}: HTTP {r.status_code}: {_message(r)}")
        try:
            return r.json()
        except ValueError:
            raise GroundcodeError(f"remote model at {self.base}: the answer is not JSON") from None

    def served_models(self) -> list[str]:
        try:
            r = self._http.get(self.base + "/models")
        except self._httpx.HTTPError as exc:
            raise GroundcodeError(f"remote model at {self.base}: cannot connect ({type(exc).__name__}: "
                                  f"{exc})".splitlines()[0]) from None
        return [m.get("id", "") for m in self._answer(r).get("data", [])]

    def complete(self, prompt, max_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int | None = None, stop=(), logit_bias: dict | None = None,
                 allowed_token_ids=None) -> Completion:
        body = {"prompt": prompt, "max_tokens": int(max_tokens), "temperature": float(temperature),
                "top_p": float(top_p)}
        if self.model:
            body["model"] = self.model
        if seed is not None and temperature > 0:
            body["seed"] = int(seed)
        if stop:
            body["stop"] = list(stop)
        if logit_bias:
            body["logit_bias"] = {str(int(k)): float(v) for k, v in logit_bias.items()}
        if allowed_token_ids is not None:
            body["allowed_token_ids"] = [int(t) for t in allowed_token_ids]
        d = self._post("/completions", body)
        try:
            ch = d["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise GroundcodeError(f"remote model at {self.base}: an answer without choices") from None
        return Completion(ch.get("text") or "", ch.get("finish_reason") or "stop",
                          ch["stop_reason"] if "stop_reason" in ch else MISSING)

    def close(self) -> None:
        self._http.close()


def _message(r) -> str:
    try:
        d = r.json()
        m = d.get("error", d) if isinstance(d, dict) else d
        m = m.get("message", m) if isinstance(m, dict) else m
        m = m if isinstance(m, str) else str(m)
    except ValueError:
        m = r.text
    return (m.strip().splitlines() or [""])[0][:300]
