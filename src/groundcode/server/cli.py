"""`groundcode serve`: the HTTP server's command (typer). fastapi and uvicorn are imported only
when it runs, so the rest of the CLI works without the `serve` extra.

    groundcode serve --workspace DIR [--workspace DIR2] [--model tiny] [--host 127.0.0.1]
                     [--port 8012] [--api-key KEY] [--max-concurrency 2] [--queue 8]
                     [--deadline 30]

Binds to loopback unless told otherwise; prints one line with the address when it is ready;
writes a discovery file for the CLI while it runs (discovery.py).
Not here: the app (app.py). Tested by tests/test_server_http.py (a real uvicorn subprocess).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import GroundcodeError
from ..console import analysis_deadline_option, analyzer_option


def serve_cmd(
    workspace: List[Path] = typer.Option([], "--workspace", "-w",
                                         help="a directory whose files requests may name (repeatable); "
                                              "its analyzer is prewarmed at start"),
    model: Optional[str] = typer.Option(None, "--model", "-m",
                                        help="registry name, tiny, a local path, an HF id, or "
                                             "http://HOST:PORT/v1 (another OpenAI-compatible server)"),
    remote_model: Optional[str] = typer.Option(None, "--remote-model",
                                               help="with --model http://…: the served model's name"),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer",
                                            help="with --model http://…: the served model's local "
                                                 "tokenizer (registry name, tiny or a path)"),
    remote_constraint: str = typer.Option("auto", "--remote-constraint",
                                          help="with --model http://…: auto, logit_bias, "
                                               "allowed_token_ids or none"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (loopback by default)"),
    port: int = typer.Option(8012, "--port", help="TCP port (llama.vim's default is 8012)"),
    allow_host: List[str] = typer.Option([], "--allow-host",
                                         help="also answer requests whose Host header names this "
                                              "(repeatable; loopback names and --host always are; "
                                              "'*': any). Others get 421 (DNS rebinding)"),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="GROUNDCODE_API_KEY",
                                          help="require 'Authorization: Bearer KEY' (also from "
                                               "$GROUNDCODE_API_KEY)"),
    max_concurrency: int = typer.Option(2, "--max-concurrency",
                                        help="requests decoding at once"),
    queue: int = typer.Option(8, "--queue", help="requests waiting for a slot; beyond: HTTP 429"),
    deadline: float = typer.Option(30.0, "--deadline",
                                   help="seconds per request, queue wait included (as `lsp "
                                        "--deadline`); the completion is cut there, before any "
                                        "name not yet checked (finish_reason deadline)"),
    analysis_deadline: float = analysis_deadline_option(),
    max_prompt_tokens: int = typer.Option(1024, "--max-prompt-tokens",
                                          help="cap prompts at this many tokens, as `groundcode "
                                               "complete` does (0: the model's window); a request "
                                               "of the CLI may send its own"),
    max_tokens: int = typer.Option(1024, "--max-tokens-limit",
                                   help="largest max_tokens / n_predict a request may ask"),
    max_body: int = typer.Option(2 << 20, "--max-body-bytes", help="largest request body"),
    device: Optional[str] = typer.Option(None, "--device", help="cpu, cuda, cuda:1 …"),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="float32, bfloat16, float16, int8 (CPU), gguf (CPU: llama.cpp) "
                                        "(default on a CPU: gguf where llama-cpp-python is installed and the model is a registry model, else int8 with AVX512-BF16/AMX, else float32; bfloat16 on CUDA)"),
    no_prewarm: bool = typer.Option(False, "--no-prewarm", help="do not prewarm the analyzers"),
    lookahead: int = typer.Option(2, "--lookahead", help="after a cursor suggestion, this many "
                                  "rows with other first characters run while the server is "
                                  "idle: drafts for the next keystroke (0: off)"),
    analyzer: str = analyzer_option(),
    trust: bool = typer.Option(False, "--trust", help="trust the --workspace roots given here "
                               "(no other): the analyzer may start their own .venv/venv "
                               "interpreter (untrusted: their "
                               "site-packages are read as files, nothing of theirs runs)"),
    python: Optional[Path] = typer.Option(None, "--python", help="the interpreter or virtual "
                                          "environment whose libraries the analyzer sees (and "
                                          "may start)"),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn's log level"),
) -> None:
    """Serve completions over HTTP: OpenAI /v1/completions, llama.cpp /infill and the
    structured /v1/code/completions (docs/EDITORS.md). Never writes into a workspace."""
    from ..console import _quiet_libraries, err
    _quiet_libraries()
    try:
        import uvicorn

        from .app import create_app
    except ImportError as exc:
        raise GroundcodeError(f"groundcode serve needs the serve extra ({exc.name} is missing): "
                              "pip install 'groundcode[serve]'") from None
    from .options import ServeOptions
    from .service import Service
    from ..analysis.lsp_servers import check_analyzer
    analyzer = check_analyzer(analyzer)       # not installed: one line now, not per request
    if python is not None and not python.expanduser().exists():
        raise GroundcodeError(f"--python: no such interpreter or environment: {python}")
    if not 0 < port < 65536:
        raise GroundcodeError(f"--port must be in 1..65535, got {port}")
    opts = ServeOptions(workspaces=list(workspace), model=model, api_key=api_key or None,
                        max_concurrency=max_concurrency, queue=queue, deadline_s=deadline,
                        max_body_bytes=max_body, max_tokens_cap=max_tokens, device=device,
                        dtype=dtype, analysis_deadline_s=analysis_deadline,
                        max_prompt_tokens=max_prompt_tokens,
                        prewarm=not no_prewarm, lookahead=lookahead, remote_model=remote_model,
                        tokenizer=tokenizer,
                        remote_constraint=remote_constraint, trust=trust, host=host, analyzer=analyzer,
                        allow_hosts=list(allow_host),
                        python=str(python.expanduser()) if python else None)
    with err.status("loading model…", spinner="dots"):
        service = Service(opts)
    from .discovery import advertise, new_token, withdraw
    token = new_token()                     # proves this server to the CLI (discovery.py)
    app = create_app(service, identity_token=token, on_shutdown=withdraw)
    if host not in ("127.0.0.1", "localhost", "::1") and not api_key:
        err.print(f"[yellow]warning:[/yellow] listening on {host} without --api-key")
    if host not in ("127.0.0.1", "localhost", "::1") and not allow_host:
        err.print(f"[yellow]note:[/yellow] requests must name {host} or a loopback name in their Host "
                  "header; add the names clients use with --allow-host NAME (others get 421)")
    err.print(f"groundcode serve: {service.model_name} on http://{host}:{port} "
              f"(workspaces: {', '.join(str(r) for r in service.roots) or 'none'}; pid {os.getpid()})",
              highlight=False, soft_wrap=True)
    reach = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    url = f"http://{'[' + reach + ']' if ':' in reach else reach}:{port}"
    with advertise(url, token, service.roots, service.model_name, analyzer):   # removed at shutdown
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False,
                    timeout_graceful_shutdown=5)
