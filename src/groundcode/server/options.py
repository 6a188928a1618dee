"""The options of `groundcode serve` in one dataclass (the CLI fills it, tests build it).

Not here: the flags themselves (cli.py). Tested through tests/test_server_http.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ServeOptions:
    workspaces: list[Path] = field(default_factory=list)   # analyzer roots; files only in these
    model: str | None = None         # registry name, tiny, path or HF id (None: the default)
    api_key: str | None = None       # bearer token required on every endpoint but /health
    max_concurrency: int = 2         # requests decoding in the session at once
    queue: int = 8                   # requests waiting for a slot; beyond them: 429
    deadline_s: float = 30.0         # wall-clock budget per request (queue wait included)
    max_body_bytes: int = 2 << 20    # larger request bodies: 413
    max_tokens_cap: int = 1024       # max_tokens / n_predict above this: 400
    max_file_bytes: int = 2 << 20    # a workspace file read from disk (no `text`) above this: 413
    max_n: int = 8                   # samples per request
    device: str | None = None
    dtype: str | None = None
    analysis_deadline_s: float = 2.0 # per analysis call (MonitorConfig.deadline_s)
    max_prompt_tokens: int = 1024    # prompt cap, as `groundcode complete` (0: the model's window)
    prewarm: bool = True             # prewarm each workspace's analyzer at start
    lookahead: int = 2               # idle-time rows per cursor suggestion (session.Session)
    analyzer: str = "jedi"           # jedi or an installed language server (ty)
    trust: bool = False              # the workspaces are trusted: their own venvs may run (trust.py)
    python: str | None = None        # the interpreter the analyzer sees and may start
    # model = "http://HOST:PORT/v1": this server sits in front of another one (decoding/remote.py)
    remote_model: str | None = None  # the served model's name there (when it serves several)
    tokenizer: str | None = None     # the local tokenizer that matches it
    remote_constraint: str = "auto"  # logit_bias, allowed_token_ids or none
    host: str = "127.0.0.1"          # the bound address (always an allowed Host)
    allow_hosts: list[str] = field(default_factory=list)   # more Host names to answer ("*": any)

    def hosts(self) -> list[str]:
        """The Host header values answered (others: 421): loopback names, the bound address,
        and --allow-host."""
        return ["127.0.0.1", "localhost", "::1", self.host, *self.allow_hosts]
