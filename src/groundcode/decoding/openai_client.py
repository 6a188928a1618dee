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
(servers that take text only: llama-cpp-python). Errors by class, as OpenAI's own client:
- busy (429, 408, 5xx, a reset or refused connection, a timeout): retried with exponential
  backoff and full jitter, honouring `Retry-After`, until `stop()` says the row is over or the
  retry budget (`retry_s`) is spent; then `Busy` (a GroundcodeError with the status);
- `Refused` (any other 4xx): the server refuses something in this request; its message says
  what, so the caller can tell "this server does not know that option" from a bad request;
- anything else (an answer that is not JSON, no choices): a GroundcodeError (one line).
Concurrency adapts to the upstream (AIMD): at most `limit` requests are in flight; a 429 halves
it, `limit` answers in a row without one raise it by one, up to `max_concurrency`.
Not here: what to ask (decoding/remote.py). Tested by tests/test_remote.py.
"""
from __future__ import annotations

import email.utils
import random
import threading
import time
from dataclasses import dataclass

from ..errors import GroundcodeError

MISSING = object()          # the answer has no `stop_reason` field (so EOS and a stop are alike)


class Refused(GroundcodeError):
    """The server answered 4xx (not 408/429): it does not take something in the request."""

    def __init__(self, message: str, status: int = 400, detail: str = ""):
        super().__init__(message)
        self.status, self.detail = status, detail

    def names(self, option: str) -> bool:
        """The refusal is about `option` (e.g. "logit_bias"): its message names it."""
        text = self.detail.lower()
        return option.lower() in text or option.lower().replace("_", " ") in text


class Busy(GroundcodeError):
    """The server was busy or unreachable (429, 408, 5xx, a connection error) past the retries."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


RETRY_S = 30.0             # retry budget of one request when the caller gives no stop
BACKOFF_S = (0.05, 2.0)    # first backoff, largest backoff (doubling, full jitter)


class AdaptiveLimit:
    """How many requests may be in flight: additive increase, multiplicative decrease."""

    def __init__(self, most: int):
        self.most = self.limit = max(1, most)
        self.active = 0
        self._ok = 0
        self._cv = threading.Condition()

    def acquire(self, stop=None, until: float | None = None) -> bool:
        with self._cv:
            while self.active >= self.limit:
                if (stop is not None and stop()) or (until is not None and time.monotonic() >= until):
                    return False
                self._cv.wait(0.05)
            self.active += 1
            return True

    def release(self, busy: bool) -> None:
        with self._cv:
            self.active -= 1
            if busy:
                self.limit, self._ok = max(1, self.limit // 2), 0
            elif self.active + 1 >= self.limit:     # the limit was what held requests back
                self._ok += 1
                if self._ok >= self.limit and self.limit < self.most:
                    self.limit, self._ok = self.limit + 1, 0
            self._cv.notify_all()


@dataclass
class Completion:
    text: str
    finish_reason: str              # "stop" (a stop string or end of text) | "length"
    stop_reason: object = MISSING   # vLLM / groundcode: the stop string, or None for end of text


class CompletionsClient:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, max_concurrency: int = 16, retry_s: float = RETRY_S):
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
        self.retries = 0                  # busy answers retried
        self.retry_s = retry_s
        self.gate = AdaptiveLimit(max_concurrency)
        self._lock = threading.Lock()

    def _post(self, path: str, body: dict, stop=None) -> dict:
        """POST with the busy answers retried (see the module docstring)."""
        until = time.monotonic() + self.retry_s
        attempt = 0
        while True:
            if not self.gate.acquire(stop, until):
                raise Busy(f"remote model at {self.base}: no request slot before the deadline "
                           f"(the server admits {self.gate.limit} at once)")
            busy = None
            try:
                with self._lock:
                    self.requests += 1
                try:
                    r = self._http.post(self.base + path, json=body)
                except self._httpx.HTTPError as exc:
                    busy = Busy(f"remote model at {self.base}: {type(exc).__name__}: {exc}".splitlines()[0])
                else:
                    try:
                        return self._answer(r)
                    except Busy as exc:
                        busy = exc
            finally:
                self.gate.release(busy is not None and busy.status == 429)
            wait = min(BACKOFF_S[1], BACKOFF_S[0] * 2 ** attempt) * random.random()
            if busy.retry_after is not None:
                wait = max(wait, busy.retry_after)
            attempt += 1
            if (stop is not None and stop()) or time.monotonic() + wait >= until:
                raise busy
            with self._lock:
                self.retries += 1
            time.sleep(wait)

    def _answer(self, r) -> dict:
        code = r.status_code
        if code in (408, 429) or code >= 500:
            raise Busy(f"remote model at {self.base}: HTTP {code}: {_message(r)}", code,
                       _retry_after(r.headers.get("retry-after")))
        if 400 <= code < 500:
            msg = _message(r)
            raise Refused(f"remote model at {self.base} refused the request ({code}): {msg}", code, msg)
        if code >= 300:
            raise GroundcodeError(f"remote model at {self.base}: HTTP {code}: {_message(r)}")
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
                 allowed_token_ids=None, until=None) -> Completion:
        """One completion; `until()` True ends the retries (the row was cancelled or its
        deadline passed)."""
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
        d = self._post("/completions", body, until)
        try:
            ch = d["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise GroundcodeError(f"remote model at {self.base}: an answer without choices") from None
        return Completion(ch.get("text") or "", ch.get("finish_reason") or "stop",
                          ch["stop_reason"] if "stop_reason" in ch else MISSING)

    def close(self) -> None:
        self._http.close()


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (delta-seconds or an HTTP date), capped at a minute."""
    if not value:
        return None
    try:
        return min(60.0, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return min(60.0, max(0.0, when - time.time()))


def _message(r) -> str:
    try:
        d = r.json()
        m = d.get("error", d) if isinstance(d, dict) else d
        m = m.get("message", m) if isinstance(m, dict) else m
        m = m if isinstance(m, str) else str(m)
    except ValueError:
        m = r.text
    return (m.strip().splitlines() or [""])[0][:300]
