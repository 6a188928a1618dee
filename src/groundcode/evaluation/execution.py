"""The sandbox: run one untrusted Python program in a fresh, isolated, resource-limited process.

`run_program(source, SandboxConfig())` -> `ExecutionResult` (passed, timed_out, killed, exit_code,
stdout/stderr tails, seconds, reason). Generated code is never exec'd in the evaluating process.

Mode "bwrap" (the default) runs the program under bubblewrap (Debian package `bubblewrap`):
- a new root made of read-only binds: /usr, /etc, the Python installation (prefix, base prefix)
  and any `ro_paths` the caller names; /bin, /lib... as the host's symlinks. Nothing else of the
  host is visible (no home, no project, no /tmp of the host);
- a private writable /tmp (tmpfs of `tmp_mb`), the working directory, and /dev/shm (`shm_mb`);
  bwrap's /dev (an unsized tmpfs) is remounted read-only, its device nodes still work; the program
  is bound read-only at /job/main.py;
- new network, PID, IPC and UTS namespaces (no network at all: not even the host's loopback);
- memory capped over the whole process tree, the tmpfs mounts' contents included (memory_cap.py:
  a cgroup per run when one is writable here, else a watchdog thread summing the tree's resident
  memory); when it trips every process of the run is killed and `killed_by` is "memory";
- limits set inside the sandbox by a small shim before the program starts: CPU seconds, address
  space per process, file size, open files, no core dumps, and a process/thread count. When the
  caller is root the shim also drops to a fresh unprivileged uid (the kernel never enforces the
  process count for root, and the program gets no capabilities); otherwise bwrap's user namespace
  keeps the count per sandbox;
- a wall-clock timeout: the whole process group is SIGKILLed; because the program lives in its
  own PID namespace under `--die-with-parent`, every process it forked dies with it;
- stdout/stderr drained continuously, only their last `output_bytes` kept;
- with a `nonce` (new_nonce()), a run passes only if its output holds the nonce, which the test
  program prints after its tests (NONCE_EPILOGUE): exiting 0 early (`sys.exit(0)` in the code
  under test) fails. The nonce reaches the program on an inherited pipe, never in a file or the
  environment (only the pipe's fd number is). Code under test that runs in the test program's
  own process could still read that pipe and print it, so a test program built by
  `judged_program` runs it in a forked child (judge_harness.py): the harness process and the shim
  are non-dumpable (no /proc/PID/fd, /mem or ptrace from the same uid), the child closes every
  descriptor but its result pipe, and what it leaves comes back through an allow-listed
  unpickler; the verdict is the harness's, which the child cannot reach (DS-1000 runs so);
- /etc is not bound whole: only what an interpreter and its libraries read (ETC_FILES: the
  dynamic loader's cache, locale, timezone, name service basics, SSL certificates, mime types),
  never the host's configuration and credentials.

Default ceilings: 2 GiB of memory for the whole tree (tmpfs included), 32 processes + threads,
60 s of CPU and wall clock, 64 MB per file, a 256 MB /tmp and a 64 MB /dev/shm (both inside the
2 GiB). DS-1000 (ds1000.sandbox_config): 4 GiB for the tree, 8 GiB of address space per process
(torch and tensorflow map far more than they touch), 128 processes + threads (tensorflow's pools),
120 s. The tree cap, not procs x address space, is what bounds the host's memory now.

Mode "subprocess" is weaker (fresh process, the same rlimits, a temporary working directory,
process-group kill) and has NO network or filesystem isolation; it is used only when the caller
asks for it explicitly (`mode="subprocess"`, CLI `--unsafe-subprocess`). In mode "bwrap" a
missing or broken bubblewrap is an error, never a silent downgrade.

Not here: what a program means (ds1000.py builds DS-1000's test programs), parallelism beyond
`run_many`'s thread pool. Test: tests/test_sandbox.py (escape attempts: network, writes outside
/tmp, fork bomb, memory hog, a 4 x 600 MB tree under 1,024 MB, tmpfs and /dev fills, an early
`sys.exit(0)`, infinite loop, reading a host file; forged passes: the nonce's descriptor, fds
0-255, every /proc/PID/fd, the parent's memory, patched assertion helpers, a killed harness, a
pickle that runs code).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

from ..errors import GroundcodeError
from .memory_cap import TreeCap


@dataclass
class SandboxConfig:
    mode: str = "bwrap"            # bwrap | subprocess (weaker: no fs/network isolation; explicit opt-in)
    wall_s: float = 60.0           # wall-clock timeout; the whole process group is killed
    cpu_s: int = 60                # RLIMIT_CPU (SIGXCPU, then SIGKILL one second later)
    memory_mb: int = 2048          # resident memory of the whole process tree, its tmpfs mounts included
    address_mb: int | None = None  # RLIMIT_AS per process (None: memory_mb); virtual, so may exceed it
    memory_cap: str = "auto"       # auto (a cgroup when writable, else the watchdog) | cgroup | watchdog
    file_mb: int = 64              # RLIMIT_FSIZE: largest file the program may write
    tmp_mb: int = 256              # size of the private writable /tmp (bwrap)
    shm_mb: int = 64               # size of /dev/shm (bwrap); /dev itself is read-only
    procs: int = 32                # RLIMIT_NPROC: processes + threads of the sandbox's user
    open_files: int = 256          # RLIMIT_NOFILE
    output_bytes: int = 8192       # tail of stdout and of stderr kept in the result
    python: str | None = None      # interpreter inside the sandbox (default: this one)
    ro_paths: tuple = ()           # extra host paths visible read-only at the same place


@dataclass
class ExecutionResult:
    passed: bool                   # exited with status 0 within the limits (and printed the nonce, when given)
    timed_out: bool                # wall clock exceeded (then killed)
    killed: bool                   # ended by a signal (timeout kill, memory cap, CPU limit, ...)
    exit_code: int | None          # exit status; -N when killed by signal N; None if unknown
    stdout: str                    # last output_bytes of stdout
    stderr: str                    # last output_bytes of stderr
    seconds: float
    reason: str                    # one line: ok | exit 1: <last error line> | timeout | ...
    mode: str = "bwrap"
    truncated: bool = False        # some output was dropped
    killed_by: str = ""            # why it was killed: timeout | memory | cpu | file_size | signal | unknown; "" = not
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


# The shim runs inside the sandbox before the program: limits, (root) a fresh uid, then it forks
# the program and reports the raw wait status on a pipe, so a signal is told apart from an exit
# code. It is our code and gets the same limits as the program.
_SHIM = r"""
import os, resource, sys
fd, uid, cpu, mem, fsize, nproc, nofile = (int(x) for x in sys.argv[1:8])
cmd = sys.argv[9:]
def lim(r, soft, hard=None):
    hard = soft if hard is None else hard
    cur = resource.getrlimit(r)[1]
    if cur != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur), min(hard, cur)
    resource.setrlimit(r, (soft, hard))
lim(resource.RLIMIT_CPU, cpu, cpu + 1)
lim(resource.RLIMIT_AS, mem)
lim(resource.RLIMIT_FSIZE, fsize)
lim(resource.RLIMIT_NOFILE, nofile)
lim(resource.RLIMIT_CORE, 0)
if uid >= 0:
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
lim(resource.RLIMIT_NPROC, nproc)
try:                     # the program may not read this process's descriptors (/proc/PID/fd)
    import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execv(cmd[0], cmd)
while True:
    try:
        _, st = os.waitpid(pid, 0)
        break
    except InterruptedError:
        continue
os.write(fd, b"%d\n" % st)
os._exit(os.waitstatus_to_exitcode(st) & 0xFF if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
"""

# The parts of /etc an interpreter and its libraries read; nothing else of the host's /etc.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
             "/etc/timezone", "/etc/locale.alias", "/etc/locale.gen", "/etc/nsswitch.conf",
             "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/host.conf", "/etc/mime.types",
             "/etc/ssl/certs", "/etc/ca-certificates", "/etc/alternatives", "/etc/matplotlibrc",
             "/etc/fonts", "/etc/protocols", "/etc/services")

_BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp/.mpl",
}


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@lru_cache(maxsize=8)
def _python_paths(python: str) -> tuple:
    """The installation directories an interpreter needs (prefixes, its real binary's prefix)."""
    # Always asked, never inferred from this process: venvs share one real binary.
    out = subprocess.run([python, "-I", "-c",
                          "import sys,json;print(json.dumps([sys.prefix,sys.base_prefix,"
                          "sys.exec_prefix,sys.base_exec_prefix]))"],
                         capture_output=True, text=True, timeout=30)
    if out.returncode:
        raise GroundcodeError(f"cannot run the sandbox interpreter {python}: {out.stderr.strip()[-200:]}")
    paths = set(json.loads(out.stdout))
    real = os.path.dirname(os.path.dirname(os.path.realpath(python)))
    paths.add(real)
    return tuple(sorted(p for p in paths if p and os.path.isdir(p)))


def _view(config: SandboxConfig, python: str) -> list[str]:
    """bwrap arguments for the read-only view: system dirs, the Python installation, ro_paths.

    The private /tmp and /dev/shm are mounted first, so an interpreter or ro_path that lives under
    /tmp (a venv in a clone under /tmp, as CI's may be) is bound on top of them, not hidden."""
    # /dev is bwrap's own tmpfs (unsized: half the host's RAM), so it is remounted read-only at the
    # end (_command); /tmp and /dev/shm are sized, and what is written there counts as memory.
    args = ["--tmpfs", "/", "--perms", "1777", "--size", str(config.tmp_mb << 20), "--tmpfs", "/tmp",
            "--dev", "/dev", "--perms", "1777", "--size", str(config.shm_mb << 20), "--tmpfs", "/dev/shm"]
    for d in ("bin", "lib", "lib32", "lib64", "sbin"):
        p = Path("/") / d
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
    binds = ["/usr"] + [e for e in ETC_FILES if os.path.exists(e)] + \
        [d for d in ("/bin", "/lib", "/lib32", "/lib64", "/sbin") if os.path.isdir(d) and not os.path.islink(d)]
    binds += list(_python_paths(python)) + [str(Path(p).resolve()) for p in config.ro_paths]
    made: set[str] = {"/tmp", "/dev", "/dev/shm"}   # mounted above, keep their modes
    done: list[str] = []
    for b in sorted(set(binds), key=lambda s: (s.count("/"), s)):
        if not os.path.exists(b) or any(b == d or b.startswith(d.rstrip("/") + "/") for d in done):
            continue                     # already visible through a parent bind
        parts = Path(b).parts[1:-1]
        for i in range(len(parts)):      # parents bwrap would otherwise create with mode 0700
            anc = "/" + "/".join(parts[: i + 1])
            if anc not in made:
                args += ["--perms", "0755", "--dir", anc]
                made.add(anc)
        args += ["--ro-bind", b, b]
        done.append(b)
    return args


def _sandbox_uid() -> int:
    """A fresh unprivileged uid for one run (root only): its process count starts at zero."""
    return 1_000_000_000 + secrets.randbelow(1 << 29)


@lru_cache(maxsize=1)
def check_bwrap() -> str:
    """bwrap's path if it can build a sandbox here; a GroundcodeError saying why not otherwise."""
    exe = bwrap_path()
    if not exe:
        raise GroundcodeError("bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` "
                              "(or run with --unsafe-subprocess for a weaker sandbox)")
    cmd = [exe, *_namespaces(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise GroundcodeError(f"bubblewrap cannot create a sandbox here ({r.stderr.strip()[-200:]}); "
                              "user namespaces may be disabled (or use --unsafe-subprocess)")
    return exe


def _namespaces() -> list[str]:
    ns = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
          "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:                # the shim needs these to drop to a fresh uid
        return ns + ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return ["--unshare-user"] + ns


class _Tail:
    """Drains a pipe in a thread, keeping only the last `limit` bytes."""

    def __init__(self, stream, limit: int):
        self.buf, self.limit, self.total = bytearray(), limit, 0
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                self.buf += chunk
                if len(self.buf) > 2 * self.limit:
                    del self.buf[: len(self.buf) - self.limit]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        self.thread.join(timeout=2)
        return bytes(self.buf[-self.limit:]).decode("utf-8", "replace") if self.limit else ""

    @property
    def truncated(self) -> bool:
        return self.total > self.limit


def _error_line(stderr: str) -> str:
    """The exception line of the last traceback (`ValueError: ...`), else the last non-blank line."""
    lines = stderr.splitlines()
    frames = [i for i, ln in enumerate(lines) if ln.startswith("  File ")]
    if frames:
        for ln in lines[frames[-1] + 1:]:
            if ln.strip() and not ln[:1].isspace():
                return ln.strip()
    return next((ln.strip() for ln in reversed(lines) if ln.strip()), "")


def new_nonce() -> str:
    """A fresh per-run token: a test program prints it after its tests (run_program's `nonce`)."""
    return "groundcode-tests-done-" + secrets.token_hex(12)


NONCE_FD_ENV = "GC_NONCE_FD"
# What a test program ends with: it reads the nonce from an inherited pipe (the fd number is in
# the environment; the nonce is in no file and no variable the code under test can read before
# this line runs) and prints it.
NONCE_EPILOGUE = ("import os as _gc_os\n"
                  f"print(_gc_os.read(int(_gc_os.environ[{NONCE_FD_ENV!r}]), 256).decode(), flush=True)\n")


def judged_program(program: str, shadow_exec: bool = True) -> str:
    """A test program whose code under test runs out of the verdict's reach: judge_harness.py's
    source first (the harness process made private, `_gc_untrusted_exec(code, env)` running the
    code in a child that holds no descriptor of the harness's), then `program` (with
    `shadow_exec`, its `exec(code, env)` calls are that), then NONCE_EPILOGUE. Pass the run a
    nonce; only the harness, after its tests, can print it."""
    head = (Path(__file__).with_name("judge_harness.py").read_text(encoding="utf-8")
            + ("\nexec = _gc_untrusted_exec\n" if shadow_exec else "\n"))
    return head + program + ("" if program.endswith("\n") else "\n") + NONCE_EPILOGUE


def _killed_by(timed_out: bool, memory: bool, code: int | None) -> str:
    if memory:
        return "memory"
    if timed_out:
        return "timeout"
    if code is None:
        return "unknown"
    if code >= 0:
        return ""
    return {signal.SIGXCPU: "cpu", signal.SIGXFSZ: "file_size"}.get(-code, "signal")


def _reason(passed: bool, timed_out: bool, code: int | None, stderr: str, config: SandboxConfig,
            cap: TreeCap | None = None, nonce_missing: bool = False) -> str:
    if cap is not None and cap.exceeded:
        return (f"memory limit ({config.memory_mb} MB): the sandbox's processes and tmpfs reached "
                f"{cap.peak_bytes >> 20} MB ({cap.kind})")
    if timed_out:
        return f"timeout (wall {config.wall_s:g} s)"
    if passed:
        return "ok"
    if nonce_missing:
        return "exit 0 before the tests finished (no nonce in the output)"
    last = _error_line(stderr)
    if code is not None and code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        why = {"SIGXCPU": f"CPU limit ({config.cpu_s} s)", "SIGKILL": "killed (SIGKILL: CPU or memory limit)",
               "SIGXFSZ": f"file size limit ({config.file_mb} MB)"}.get(name, f"killed by {name}")
        return why
    if "MemoryError" in last or "Cannot allocate memory" in stderr[-2000:]:
        return f"memory limit ({config.address_mb or config.memory_mb} MB): {last[:200]}"
    if code is None:
        return f"killed (no exit status){': ' + last[:200] if last else ''}"
    return f"exit {code}: {last[:200]}" if last else f"exit {code}"


def run_program(source: str, config: SandboxConfig | None = None, env: dict | None = None,
                stdin: str | None = None, nonce: str | None = None) -> ExecutionResult:
    """Run `source` as a Python program in a fresh sandboxed process and report how it ended.

    With `nonce` (new_nonce()), the run passes only if a line of its stdout is the nonce: the
    program prints it after its tests, so an early `sys.exit(0)` / `os._exit(0)` does not pass."""
    config = config or SandboxConfig()
    python = config.python or sys.executable
    if config.mode not in ("bwrap", "subprocess"):
        raise GroundcodeError(f"unknown sandbox mode {config.mode!r} (bwrap or subprocess)")
    bwrap = check_bwrap() if config.mode == "bwrap" else None
    job = Path(tempfile.mkdtemp(prefix="gc-sandbox-"))
    cap = None
    try:
        os.chmod(job, 0o755)
        prog = job / "main.py"
        prog.write_text(source, encoding="utf-8")
        os.chmod(prog, 0o644)
        status_r, status_w = os.pipe()
        fds = [status_w]
        if nonce is not None:                 # the nonce travels on a pipe (see NONCE_EPILOGUE)
            nonce_r, nonce_w = os.pipe()
            os.write(nonce_w, nonce.encode() + b"\n")
            os.close(nonce_w)
            fds.append(nonce_r)
        uid = _sandbox_uid() if (bwrap and os.geteuid() == 0) else -1
        shim_args = [str(status_w), str(uid), str(int(config.cpu_s)), str((config.address_mb or config.memory_mb) << 20),
                     str(config.file_mb << 20), str(config.procs), str(config.open_files), "--"]
        run_env = dict(_BASE_ENV)
        run_env.update(env or {})
        if nonce is not None:
            run_env[NONCE_FD_ENV] = str(nonce_r)
        if bwrap:
            inner = [python, "-I", "-S", "-c", _SHIM, *shim_args, python, "/job/main.py"]
            cmd = [bwrap, *_namespaces(), *_view(config, python),
                   "--proc", "/proc",
                   "--ro-bind", str(job), "/job", "--remount-ro", "/dev", "--remount-ro", "/",
                   "--chdir", "/tmp", *inner]
            cwd = "/"
        else:
            work = job / "tmp"
            work.mkdir()
            run_env.update({"HOME": str(work), "TMPDIR": str(work), "MPLCONFIGDIR": str(work / ".mpl")})
            cmd = [python, "-I", "-S", "-c", _SHIM, *shim_args, python, str(prog)]
            cwd = str(work)
        cap = TreeCap(config.memory_mb << 20, config.memory_cap,
                      tmpfs=("/tmp", "/dev/shm", "/dev") if bwrap else ())
        cmd = cap.wrap(cmd)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=run_env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=tuple(fds),
                                start_new_session=True)
        for fd in fds:
            os.close(fd)
        cap.watch(proc.pid, lambda: _kill_group(proc, wait=False))
        out, err = _Tail(proc.stdout, config.output_bytes), _Tail(proc.stderr, config.output_bytes)
        if stdin:
            try:
                proc.stdin.write(stdin.encode())
                proc.stdin.close()
            except OSError:
                pass
        timed_out = False
        try:
            proc.wait(timeout=config.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(proc)
        seconds = time.perf_counter() - t0
        cap.close()
        with os.fdopen(status_r, "rb") as f:
            status = f.read().strip()
        stdout, stderr = out.text(), err.text()
        if status:
            code = os.waitstatus_to_exitcode(int(status))
        elif timed_out:
            code = -signal.SIGKILL
        else:
            code = None                  # the shim itself was killed (by the program or a limit)
        nonce_missing = (code == 0 and nonce is not None
                         and nonce not in (ln.strip() for ln in stdout.splitlines()))
        passed = (code == 0) and not timed_out and not cap.exceeded and not nonce_missing
        killed_by = _killed_by(timed_out, cap.exceeded, code)
        return ExecutionResult(passed=passed, timed_out=timed_out, killed=bool(killed_by), exit_code=code,
                               stdout=stdout, stderr=stderr, seconds=round(seconds, 3),
                               reason=_reason(passed, timed_out, code, stderr, config, cap, nonce_missing),
                               mode=config.mode, truncated=out.truncated or err.truncated, killed_by=killed_by,
                               extra={"memory_cap": cap.kind, "peak_mb": cap.peak_bytes >> 20})
    finally:
        if cap is not None:
            cap.close()
        shutil.rmtree(job, ignore_errors=True)


def _kill_group(proc: subprocess.Popen, wait: bool = True) -> None:
    """SIGKILL the process group (bwrap and, through its PID namespace, everything inside)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if not wait:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_many(sources: Iterable[str], config: SandboxConfig | None = None, workers: int = 2,
             env: dict | None = None, progress: Callable[[int], None] | None = None,
             nonces: Iterable[str | None] | None = None) -> list[ExecutionResult]:
    """Run programs in parallel (each in its own sandbox), results in input order; `nonces`, one per
    program, as run_program's."""
    sources = list(sources)
    nonces = list(nonces) if nonces is not None else [None] * len(sources)
    results: list[ExecutionResult | None] = [None] * len(sources)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futs = {pool.submit(run_program, s, config, env, None, n): i for i, (s, n) in enumerate(zip(sources, nonces))}
        for fut in as_completed(futs):
            results[futs[fut]] = fut.result()
            if progress:
                progress(1)
    return results  # type: ignore[return-value]
