"""The FastAPI application of `groundcode serve` (the only module that imports fastapi).

    app = create_app(Service(ServeOptions(...)))      # uvicorn.run(app, ...) or TestClient(app)

Endpoints: POST /v1/completions (OpenAI legacy), POST /infill (llama.cpp), POST
/v1/code/completions (structured), GET /v1/models, GET /health; OpenAPI at /docs. Every error
is `{"error": {"message": one line, "type", "code"}}` with a 4xx status for the client's
mistakes (400 bad input, 401 no key, 403 outside the workspaces, 404, 413 too large, 429 busy).
A request's session stream is cancelled when its client goes away, streamed or not, and its
admission slot is released however the response ends.
Not here: checks and the session (service.py, guard.py), answer shapes (wire.py).
Tested by tests/test_server_http.py.
"""
from __future__ import annotations

import secrets
import threading
import time
import uuid
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import GroundcodeError
from . import wire
from .admission import Busy
from .discovery import IDENTITY_PATH, proof
from .guard import ClientError
from .schemas import CodeRequest, CompletionRequest, InfillRequest
from .service import Service

OPEN_PATHS = {"/health", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc", IDENTITY_PATH}

DESCRIPTION = """groundcode: a small code model whose identifiers are checked by static analysis
while it writes. `/v1/completions` speaks OpenAI's legacy completions (add
`"groundcode": {"path": "pkg/mod.py"}` to ground it on a served workspace), `/infill` speaks
llama.cpp's (llama.vim, llama.vscode), `/v1/code/completions` takes a path, an unsaved buffer
and a cursor and says which identifiers were grounded. See docs/EDITORS.md."""


def _error(status: int, message: str, kind: str | None = None, headers=None) -> JSONResponse:
    kind = kind or ("invalid_request_error" if status < 500 else "server_error")
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}},
                        status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    errs = exc.errors()
    if not errs:
        return "invalid request"
    e = errs[0]
    kind = e.get("type", "")
    loc = [str(x) for x in e.get("loc", ()) if x != "body"]
    where = ".".join(loc)
    if kind == "json_invalid":
        return f"malformed JSON: {(e.get('ctx') or {}).get('error', e.get('msg'))}"
    if kind == "extra_forbidden":
        return f"unknown field {where!r}"
    if kind == "missing":
        return f"{where}: field required" if where else "request body missing: send a JSON object"
    msg = f"{where}: {e.get('msg')}" if where else str(e.get("msg"))
    return msg + (f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else "")


def authorized(headers: dict, key: bytes | None, token: bytes | None = None) -> bool:
    """`Authorization: Bearer KEY` (the scheme case-insensitive, RFC 7235), or no key set; the
    discovery file's `token` (discovery.py) authenticates as the key does."""
    if key is None:
        return True
    scheme, _, given = headers.get(b"authorization", b"").strip().partition(b" ")
    given = given.strip()
    return scheme.lower() == b"bearer" and (secrets.compare_digest(given, key) or (
        token is not None and secrets.compare_digest(given, token)))


def host_of(value: bytes) -> str:
    """The host of a Host header, without its port (`[::1]:8012` → `::1`)."""
    h = value.decode("latin-1").strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class _Guard:
    """ASGI middleware: the Host allow-list (421 otherwise: a loopback server must not answer a
    page that DNS rebinding pointed at it), bearer auth (when a key is set) and the request size
    limit. Raising an HTTPException from `receive` lets FastAPI answer it (it re-raises
    HTTPExceptions that happen while it reads the body)."""

    def __init__(self, app, max_bytes: int, api_key: str | None, hosts=None, token: str | None = None):
        self.app, self.max_bytes = app, max_bytes
        self.key = api_key.encode() if api_key else None
        self.token = token.encode() if token else None
        self.hosts = None if hosts is None or "*" in hosts else {h.lower().strip("[]") for h in hosts}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        if self.hosts is not None and host_of(headers.get(b"host", b"")) not in self.hosts:
            return await _error(421, f"host {headers.get(b'host', b'').decode('latin-1')!r} is not "
                                     "served here (groundcode serve --allow-host NAME)",
                                "misdirected_request")(scope, receive, send)
        if self.key is not None and scope.get("path") not in OPEN_PATHS:
            if not authorized(headers, self.key, self.token):
                resp = _error(401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                              "authentication_error", {"WWW-Authenticate": "Bearer"})
                return await resp(scope, receive, send)
        try:
            declared = int(headers.get(b"content-length", b"0") or 0)
        except ValueError:
            declared = 0
        if declared > self.max_bytes:
            return await _error(413, f"request body of {declared} bytes is above the limit "
                                     f"({self.max_bytes} bytes)")(scope, receive, send)
        seen = 0
        limit = self.max_bytes

        async def limited():
            nonlocal seen
            msg = await receive()
            if msg.get("type") == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise StarletteHTTPException(413, f"request body is above the limit ({limit} bytes)")
            return msg
        return await self.app(scope, limited, send)


class _ClosingStream(StreamingResponse):
    """A streamed answer that always runs `on_close` when it ends: finished, failed, or cut by
    a client that went away (Starlette then cancels the body iterator, possibly before it
    started, when a generator's own `finally` would never run)."""

    def __init__(self, content, on_close):
        super().__init__(content, media_type="text/event-stream",
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self._on_close = on_close

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


def create_app(service: Service, identity_token: str | None = None, on_shutdown=None) -> FastAPI:
    """The app; `identity_token`: the token of this server's discovery file (discovery.py), which
    it proves it holds at /v1/identity and accepts as the API key; `on_shutdown()` runs when the
    server stops (uvicorn re-raises SIGTERM after its shutdown: code after `run` never runs)."""
    @asynccontextmanager
    async def lifespan(app):
        if service.opts.prewarm:
            threading.Thread(target=service.prewarm, daemon=True, name="groundcode-prewarm").start()
        else:
            service.prewarmed.set()
        try:
            yield
        finally:
            if on_shutdown is not None:
                on_shutdown()
            await run_in_threadpool(service.close)

    app = FastAPI(title="groundcode", version=__version__, description=DESCRIPTION,
                  lifespan=lifespan)
    app.state.service = service
    app.add_middleware(_Guard, max_bytes=service.opts.max_body_bytes, api_key=service.opts.api_key,
                       hosts=service.opts.hosts(), token=identity_token)
    key = service.opts.api_key.encode() if service.opts.api_key else None
    token = identity_token.encode() if identity_token else None

    def refused(status: int) -> None:
        service.stats.refused[status] = service.stats.refused.get(status, 0) + 1

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request, exc):
        refused(400)
        return _error(400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request, exc):
        refused(exc.status_code)
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(ClientError)
    async def _client(request, exc):
        refused(exc.status)
        return _error(exc.status, str(exc))

    @app.exception_handler(GroundcodeError)
    async def _groundcode(request, exc):
        refused(400)
        return _error(400, str(exc))

    @app.exception_handler(Busy)
    async def _busy(request, exc):
        refused(429)
        return _error(429, str(exc), "rate_limit_error", {"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def _internal(request, exc):
        return _error(500, f"internal error: {type(exc).__name__}: {exc}".splitlines()[0])

    async def start(prep, t0):
        """Admission, then the session: (ticket, stream); the ticket is released on failure."""
        ticket = await service.admission.enter(max(0.0, service.remaining(t0)))
        try:
            return ticket, service.submit(prep, t0)
        except BaseException:
            ticket.release()
            raise

    def closer(stream, ticket, done: list):
        def close():
            if not done:              # the client left (or the stream failed) before the end
                stream.cancel()
                service.stats.cancelled += 1
            ticket.release()
        return close

    def server_timings(t0, ticket) -> dict:
        """What the server adds to the session's timings: the wait for an admission slot and
        the request's whole time in the server (parsing and checks included)."""
        return {"admission_ms": round(ticket.waited_s * 1e3, 2),
                "server_ms": round((time.perf_counter() - t0) * 1e3, 2)}

    def failed(out) -> JSONResponse | None:
        """A request the session could not serve: a 504 when its deadline passed before it
        wrote anything (or the session said nothing in time), a 503 when the session stopped,
        a 500 for another failure — answered here (an exception would make the server drop
        the connection, which a keep-alive client sees as a broken pipe)."""
        if out.timed_out or out.expired_empty():
            return _error(504, "the request's deadline passed before anything was written "
                               f"(--deadline {service.opts.deadline_s:g} s)", "timeout_error")
        if out.error and service.dead():
            return _error(503, f"the server cannot decode: {service.dead()}".splitlines()[0])
        if out.error:
            return _error(500, f"generation failed: {out.error}".splitlines()[0])
        return None

    # -- OpenAI legacy completions ---------------------------------------------------------------
    @app.post("/v1/completions", summary="OpenAI legacy completions (FIM with `suffix`)")
    async def completions(body: CompletionRequest, request: Request):
        t0 = time.perf_counter()
        prep = await run_in_threadpool(service.completion, body)
        ticket, stream = await start(prep, t0)
        rid, created, model = f"cmpl-{uuid.uuid4().hex[:24]}", int(time.time()), service.model_name
        if not body.stream:
            try:
                out = await service.collect(stream, prep, request.is_disconnected, t0)
            finally:
                ticket.release()
            if failed(out):
                return failed(out)
            return wire.openai_completion(out, prep, model, rid, created)
        done: list = []
        include_usage = bool((body.stream_options or {}).get("include_usage"))

        async def events():
            triggers = [[] for _ in range(prep.n)]
            gens = [None] * prep.n
            async for ev in service.updates(stream, t0):
                if ev.kind == "text" and ev.text:
                    yield wire.sse(wire.openai_chunk(rid, created, model, ev.sample, ev.text))
                elif ev.kind == "trigger":
                    triggers[ev.sample].append(ev.trigger)
                elif ev.kind == "done":
                    g = gens[ev.sample] = ev.result
                    yield wire.sse(wire.openai_chunk(
                        rid, created, model, ev.sample, "", wire.finish_reason(g.finish_reason),
                        wire.grounding(prep, g, triggers[ev.sample])))
                elif ev.kind == "error":
                    service.stats.errors += 1
                    yield wire.sse({"error": {"message": ev.error, "type": "server_error",
                                              "code": 500}})
            if include_usage:
                yield wire.sse({"id": rid, "object": "text_completion", "created": created,
                                "model": model, "choices": [], "usage": wire.usage(gens)})
            yield wire.sse("[DONE]")
            done.append(True)
            service.stats.served += 1
        return _ClosingStream(events(), closer(stream, ticket, done))

    # -- llama.cpp /infill -------------------------------------------------------------------------
    @app.post("/infill", summary="llama.cpp-compatible infill (llama.vim, llama.vscode)")
    async def infill(body: InfillRequest, request: Request):
        t0 = time.perf_counter()
        prep = await run_in_threadpool(service.infill, body)
        model = service.model_name
        if prep.request is None:                      # n_predict 0: warm the cache only
            ticket = await service.admission.enter(max(0.0, service.remaining(t0)))
            try:
                ms = await run_in_threadpool(service.warm, prep, t0)
            finally:
                ticket.release()
            return wire.infill_warm_answer(prep, model, ms)
        ticket, stream = await start(prep, t0)
        if not body.stream:
            try:
                out = await service.collect(stream, prep, request.is_disconnected, t0)
            finally:
                ticket.release()
            if failed(out):
                return failed(out)
            return wire.infill_answer(out.generations[0], prep, model, out.triggers[0])
        done: list = []

        async def events():
            triggers = []
            async for ev in service.updates(stream, t0):
                if ev.kind == "text" and ev.text:
                    yield wire.sse({"content": ev.text, "stop": False})
                elif ev.kind == "trigger":
                    triggers.append(ev.trigger)
                elif ev.kind == "done":
                    last = wire.infill_answer(ev.result, prep, model, triggers)
                    last["content"] = ""
                    yield wire.sse(last)
                elif ev.kind == "error":
                    service.stats.errors += 1
                    yield wire.sse({"error": {"message": ev.error, "type": "server_error",
                                              "code": 500}})
            done.append(True)
            service.stats.served += 1
        return _ClosingStream(events(), closer(stream, ticket, done))

    # -- structured ------------------------------------------------------------------------------
    @app.post("/v1/code/completions",
              summary="Complete at a cursor of a workspace file (unsaved buffer optional); "
                      "answers which identifiers were grounded")
    async def code_completions(body: CodeRequest, request: Request):
        t0 = time.perf_counter()
        prep = await run_in_threadpool(service.code, body)
        ticket, stream = await start(prep, t0)
        model = service.model_name
        if not body.stream:
            try:
                out = await service.collect(stream, prep, request.is_disconnected, t0)
            finally:
                ticket.release()
            if failed(out):
                return failed(out)
            d = wire.code_answer(out.generations[0], out.triggers[0], prep, model)
            d["timings"].update(server_timings(t0, ticket))
            return d
        done: list = []

        async def events():
            triggers = []
            async for ev in service.updates(stream, t0):
                if ev.kind == "text" and ev.text:
                    yield wire.sse({"type": "text", "text": ev.text})
                elif ev.kind == "trigger":
                    triggers.append(ev.trigger)
                    yield wire.sse({"type": "trigger", "trigger": wire.trigger_json(ev.trigger)})
                elif ev.kind == "done":
                    d = wire.code_answer(ev.result, triggers, prep, model)
                    d["timings"].update(server_timings(t0, ticket))
                    yield wire.sse({"type": "done", **d})
                elif ev.kind == "error":
                    service.stats.errors += 1
                    yield wire.sse({"type": "error", "error": {"message": ev.error,
                                                               "type": "server_error",
                                                               "code": 500}})
            yield wire.sse("[DONE]")
            done.append(True)
            service.stats.served += 1
        return _ClosingStream(events(), closer(stream, ticket, done))

    # -- facts -------------------------------------------------------------------------------------
    @app.get("/v1/models", summary="The one model this server serves")
    async def models():
        return {"object": "list", "data": [{"id": service.model_name, "object": "model",
                                            "created": int(service.started),
                                            "owned_by": "groundcode"}]}

    @app.get(IDENTITY_PATH, summary="This server's proof that it wrote the discovery file the "
             "CLI read: HMAC(token, challenge) (docs/EDITORS.md)")
    async def identity(challenge: str = ""):
        if not identity_token or not 16 <= len(challenge) <= 128:
            return _error(404, "no discovery identity here" if not identity_token
                          else "challenge: 16 to 128 characters")
        return {"proof": proof(identity_token, challenge)}

    @app.get("/health", summary="Liveness (never needs the API key); load and details with it")
    async def health(request: Request):
        adm, st = service.admission, service.stats
        dead = service.dead()
        status = {"status": "not ok" if dead else "ok"}
        if not authorized({k.encode("latin-1"): v.encode("latin-1") for k, v in request.headers.items()},
                          key, token):
            return JSONResponse(status, status_code=503 if dead else 200)
        if dead:
            return JSONResponse({**status, "error": dead}, status_code=503)
        return {"status": "ok", "model": service.model_name, "fim": service.has_fim,
                "workspaces": [str(r) for r in service.roots],
                "trusted": service.trusted_roots(),
                "prewarmed": service.prewarmed.is_set(),
                "prewarm_errors": service.prewarm_errors[:5],
                "locate": service.locate_facts(),          # text-only clients' index (locate.py)
                "active": adm.active, "queued": adm.waiting,
                "max_concurrency": adm.limit, "queue": adm.queue,
                "served": st.served, "cancelled": st.cancelled, "errors": st.errors,
                "refused": {str(k): v for k, v in sorted(st.refused.items())},
                "workers": len(service.analyzer_pids()),
                "analyzers": (analyzers := service.analyzers()),
                "analysis": service.analysis_status(analyzers),
                "lookahead": service.session.stats.get("lookahead"),
                "uptime_s": round(time.time() - service.started, 1)}

    return app
