"""How the CLI finds the user's own running `groundcode serve`: by a file, never by a port.

    token = new_token()
    with advertise(url, token, workspaces, model):    # groundcode serve, while it listens
        uvicorn.run(create_app(..., on_shutdown=withdraw))
    found = discover(path, model, analyzer)           # the CLI: a verified Server, or None

`groundcode serve` writes `server-<pid>.json` (url, pid, model, analyzer, workspaces, a token) with
mode 0600 into the user's runtime directory — `$XDG_RUNTIME_DIR/groundcode/` when that
directory is the user's own and closed to others, else `<user cache>/run/` — created 0700, and
removes it at shutdown. The CLI reads only files of a directory and files owned by its own uid
and closed to group and others; a file whose pid is gone (a killed server) is removed. Before it
sends anything, it asks the address for proof: a fresh random challenge, answered with
HMAC-SHA256(token, challenge); an impostor on the port (any user's process) sees only the
challenge and cannot answer. The verified server is then authenticated with the file's token,
never with `$GROUNDCODE_API_KEY` (a key goes only to a server the user named: `--server URL`).

Not here: the requests themselves (reuse.py), the token check in the server (app.py).
Test: tests/test_cli_server.py.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

IDENTITY_PATH = "/v1/identity"          # GET ?challenge=HEX -> {"proof": HMAC(token, challenge)}
_PREFIX = "server-"


def new_token() -> str:
    return secrets.token_hex(32)


def proof(token: str, challenge: str) -> str:
    """What the real server answers to `challenge`: only a holder of the file's token can."""
    return hmac.new(token.encode(), b"groundcode-identity:" + challenge.encode(), hashlib.sha256).hexdigest()


def _private(path: Path, want_dir: bool) -> bool:
    """`path` is the user's own (same uid), of the kind asked, not a link, closed to others."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    return kind and st.st_uid == os.getuid() and not st.st_mode & 0o077


def runtime_dir(create: bool = False) -> Path | None:
    """The directory discovery files live in (created 0700 when `create`); None when it is not
    the user's own or is open to others (then nothing is advertised or read)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _private(Path(xdg), True):
        d = Path(xdg) / "groundcode"
    else:
        from ..cache import cache_dir
        d = cache_dir() / "run"
    if create and not d.exists():
        d.parent.mkdir(parents=True, exist_ok=True)
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            pass
    return d if _private(d, True) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # another user's process took the pid: not our server
        return False
    return True


_advertised: list[Path] = []


def withdraw() -> None:
    """Remove this process's discovery files (at shutdown; again at exit does no harm)."""
    while _advertised:
        try:
            _advertised.pop().unlink()
        except FileNotFoundError:
            pass


@contextmanager
def advertise(url: str, token: str, workspaces, model: str, analyzer: str = "jedi"):
    """Write this process's discovery file (0600) for as long as the block runs."""
    d = runtime_dir(create=True)
    path = None
    if d is not None:
        path = d / f"{_PREFIX}{os.getpid()}.json"
        tmp = d / f".{_PREFIX}{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"url": url, "pid": os.getpid(), "token": token, "model": model, "analyzer": analyzer,
                       "workspaces": [str(w) for w in workspaces]}, f)
        os.replace(tmp, path)
        _advertised.append(path)
    try:
        yield path
    finally:
        withdraw()


@dataclass
class Server:
    """A server to send a request to: its URL and the headers that authenticate to it."""
    url: str
    headers: dict = field(default_factory=dict)
    discovered: bool = False            # found through a discovery file (the token, no key)


def candidates() -> list[dict]:
    """The live servers advertised to this user (their files checked; stale ones removed)."""
    d = runtime_dir()
    if d is None:
        return []
    out = []
    for f in sorted(d.glob(f"{_PREFIX}*.json")):
        if not _private(f, False):
            continue
        try:
            info = json.loads(f.read_text())
            pid = int(info["pid"])
            url, token = str(info["url"]).rstrip("/"), str(info["token"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            try:
                f.unlink()
            except OSError:
                pass
            continue
        if url.startswith(("http://", "https://")) and len(token) >= 32:
            out.append(dict(info, url=url, token=token))
    return out


def verified(url: str, token: str, timeout: float = 1.0) -> bool:
    """The server at `url` proves it holds `token` (nothing else is sent to it first)."""
    import httpx
    challenge = secrets.token_hex(16)
    try:
        r = httpx.get(url + IDENTITY_PATH, params={"challenge": challenge}, timeout=timeout)
        got = r.json().get("proof", "") if r.status_code == 200 else ""
    except (httpx.HTTPError, ValueError, AttributeError):
        return False
    return isinstance(got, str) and hmac.compare_digest(got, proof(token, challenge))


def discover(path: Path, model: str | None, analyzer: str = "jedi") -> Server | None:
    """The user's own running server that serves `path` (and `model`, when one is named) with
    `analyzer` and proves its identity; None when there is none."""
    real = Path(path).resolve()
    for info in candidates():
        roots = [Path(w) for w in info.get("workspaces", [])]
        if not any(real == r or r in real.parents for r in roots):
            continue
        if model is not None and info.get("model") not in (model, Path(str(model)).name):
            continue
        if info.get("analyzer", "jedi") != analyzer:
            continue
        if verified(info["url"], info["token"]):
            return Server(info["url"], {"Authorization": f"Bearer {info['token']}"}, True)
    return None
