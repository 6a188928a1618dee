"""The memory cap over a sandbox's whole process tree (execution.py's runs), tmpfs included.

Per-process rlimits (RLIMIT_AS) let N processes use N times the limit; this caps their sum:

- "cgroup": one memory cgroup per run, made under this process's own cgroup — v2 when its
  `memory` controller is delegated there (memory.max, no swap, memory.oom.group), else v1
  (memory.limit_in_bytes, memsw when present). The sandbox joins it before it execs (a one-line
  `sh` wrapper), so every descendant and every tmpfs page they write (shmem is charged to the
  writer's cgroup) counts. The kernel OOM-kills at the limit; a thread sees the oom_kill event
  and kills the whole tree, so a run never goes on with some of its processes missing.
- "watchdog" (no writable memory cgroup, e.g. an unprivileged CI user): a thread that every
  20 ms sums the tree's anonymous and shmem resident memory (/proc/PID/status RssAnon+RssShmem;
  the tree = descendants of the sandbox's first process by ppid, plus its process group) and the
  used bytes of the sandbox's tmpfs mounts (statvfs through /proc/PID/root), and SIGKILLs every
  process of the tree when the sum reaches the limit. Before killing it confirms with the
  proportional figures of /proc/PID/smaps_rollup (Pss_Anon+Pss_Shmem), so pages shared
  copy-on-write after a fork are not counted once per child. It samples, so a tree can overshoot
  by what it allocates within one interval (bounded per process by RLIMIT_AS as well).

`probe()` says which one works here (cached). Not here: the other limits and the namespaces
(execution.py). Test: tests/test_sandbox.py (fork-and-allocate, tmpfs fills, both kinds).
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

from ..errors import GroundcodeError

INTERVAL_S = 0.02            # watchdog sampling period
RESCAN_EVERY = 5             # full /proc scans for new processes every this many samples


def _cgroup_dirs() -> list[tuple[str, Path]]:
    """[(kind, this process's cgroup directory)] for the v2 and the v1 memory hierarchies mounted here."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            hid, ctrls, path = line.split(":", 2)
            if hid == "0" and ctrls == "":
                own["cgroup2"] = path
            elif "memory" in ctrls.split(","):
                own["cgroup1"] = path
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in mounts:
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 5 or len(r) < 3:
            continue
        root, point, fstype, opts = f[3], f[4], r[0], r[2].split(",")
        kind = "cgroup2" if fstype == "cgroup2" else ("cgroup1" if fstype == "cgroup" and "memory" in opts else None)
        if kind is None or kind not in own or any(k == kind for k, _ in out):
            continue
        path = own[kind]
        rel = path[len(root):] if root != "/" and path.startswith(root) else path
        out.append((kind, Path(point) / rel.lstrip("/")))
    return out


def _limit_file(kind: str) -> str:
    return "memory.max" if kind == "cgroup2" else "memory.limit_in_bytes"


@lru_cache(maxsize=1)
def probe() -> tuple[str, Path | None]:
    """("cgroup2" | "cgroup1", parent dir) when a child memory cgroup can be made and joined here,
    else ("watchdog", None). Tried once per process: a throwaway cgroup, a limit, a shell joining it."""
    dirs = dict(_cgroup_dirs())
    for kind in ("cgroup2", "cgroup1"):
        base = dirs.get(kind)
        if base is None:
            continue
        d = base / f"groundcode-probe-{os.getpid()}-{secrets.token_hex(3)}"
        try:
            d.mkdir()
        except OSError:
            continue
        try:
            (d / _limit_file(kind)).write_text(str(256 << 20))
            r = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0"', str(d / "cgroup.procs")],
                               capture_output=True, timeout=10)
            if r.returncode == 0:
                return kind, base
        except (OSError, subprocess.SubprocessError):
            pass
        finally:
            _rmdir(d)
    return "watchdog", None


def _rmdir(d: Path, wait_s: float = 5.0) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:              # EBUSY while the last processes are being reaped
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def _read(p: Path | str) -> str:
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ""


def _kv(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


class TreeCap:
    """One run's cap. `wrap(cmd)` before starting it, `watch(pid, kill)` once started, `close()`
    after it ended; then `exceeded`, `peak_bytes` and `kind` say what happened."""

    def __init__(self, limit_bytes: int, kind: str = "auto", tmpfs: tuple = ()):
        if kind not in ("auto", "cgroup", "watchdog"):
            raise GroundcodeError(f"unknown memory cap {kind!r} (auto, cgroup or watchdog)")
        found, base = probe() if kind != "watchdog" else ("watchdog", None)
        if kind == "cgroup" and base is None:
            raise GroundcodeError("no writable memory cgroup here (the watchdog cap works everywhere)")
        self.limit, self.kind, self.tmpfs = int(limit_bytes), found, tuple(tmpfs)
        self.exceeded, self.peak_bytes = False, 0
        self._stop, self._thread, self._pid, self._kill = threading.Event(), None, None, None
        self.dir: Path | None = None
        if base is not None:
            self.dir = base / f"groundcode-{os.getpid()}-{secrets.token_hex(6)}"
            self.dir.mkdir()
            self._write(_limit_file(self.kind), self.limit)
            if self.kind == "cgroup2":
                self._write("memory.swap.max", 0, optional=True)
                self._write("memory.oom.group", 1, optional=True)
            else:
                self._write("memory.memsw.limit_in_bytes", self.limit, optional=True)

    def _write(self, name: str, value: int, optional: bool = False) -> None:
        try:
            (self.dir / name).write_text(str(value))
        except OSError:
            if not optional:
                self.close()
                raise

    def wrap(self, cmd: list[str]) -> list[str]:
        """The command, made to join the run's cgroup before it execs (unchanged for the watchdog)."""
        if self.dir is None:
            return cmd
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.dir / "cgroup.procs"), *cmd]

    def watch(self, pid: int, kill: Callable[[], None]) -> None:
        self._pid, self._kill = pid, kill
        target = self._watch_cgroup if self.dir is not None else self._watch_tree
        self._thread = threading.Thread(target=target, daemon=True, name=f"memory-cap-{pid}")
        self._thread.start()

    def _trip(self, pids=()) -> None:
        self.exceeded = True
        for p in pids:                       # the tree as seen, then the group (kill() below)
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self._kill_cgroup()
        if self._kill:
            self._kill()

    # -- cgroup ---------------------------------------------------------------------------------
    def _oom_kills(self) -> int:
        if self.kind == "cgroup2":
            ev = _kv(_read(self.dir / "memory.events"))
            return ev.get("oom_kill", 0) + ev.get("oom_group_kill", 0)
        return _kv(_read(self.dir / "memory.oom_control")).get("oom_kill", 0)

    def _usage(self) -> int:
        name = "memory.current" if self.kind == "cgroup2" else "memory.usage_in_bytes"
        v = _read(self.dir / name).strip()
        return int(v) if v.isdigit() else 0

    def _watch_cgroup(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self.peak_bytes = max(self.peak_bytes, self._usage())
            if self._oom_kills():
                self._trip()
                return

    def _kill_cgroup(self) -> None:
        if self.dir is None:
            return
        if (self.dir / "cgroup.kill").exists():
            try:
                (self.dir / "cgroup.kill").write_text("1")
                return
            except OSError:
                pass
        for _ in range(3):                   # a process forking while we kill: go round again
            pids = [int(p) for p in _read(self.dir / "cgroup.procs").split()]
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass

    # -- watchdog -------------------------------------------------------------------------------
    def _tree(self) -> list[int]:
        """The sandbox's processes: descendants of its first process, and its process group."""
        root = self._pid
        children: dict[int, list[int]] = {}
        group = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            stat = _read(f"/proc/{d}/stat")
            rest = stat[stat.rfind(")") + 2:].split()
            if len(rest) < 3:
                continue
            pid, ppid, pgid = int(d), int(rest[1]), int(rest[2])
            children.setdefault(ppid, []).append(pid)
            if pgid == root:
                group.append(pid)
        seen, todo = set(), [root] + group
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo += children.get(p, [])
        return sorted(seen)

    def _tmpfs_used(self, pids: list[int]) -> int:
        """Bytes used on the sandbox's tmpfs mounts, seen through a process two levels down (bwrap's
        init has pivoted by then; the first process still sees the host's filesystems)."""
        if not self.tmpfs:
            return 0
        top = {self._pid}
        top |= {p for p in pids if _ppid(p) == self._pid}
        for p in pids:
            if p in top:
                continue
            total = 0
            try:
                for m in self.tmpfs:
                    st = os.statvfs(f"/proc/{p}/root{m}")
                    total += (st.f_blocks - st.f_bfree) * st.f_frsize
                return total
            except OSError:
                continue
        return 0

    def _watch_tree(self) -> None:
        pids, tick = [], 0
        while not self._stop.wait(INTERVAL_S):
            if tick % RESCAN_EVERY == 0:
                pids = self._tree()
            tick += 1
            total = sum(_rss(p) for p in pids) + self._tmpfs_used(pids)
            if total >= self.limit:          # confirm with proportional figures, fresh tree
                pids = self._tree()
                total = sum(_pss(p) for p in pids) + self._tmpfs_used(pids)
            self.peak_bytes = max(self.peak_bytes, total)
            if total >= self.limit:
                self._trip(pids)
                return

    def close(self) -> None:
        """Stop watching; kill what is left in the cgroup and remove it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.dir is not None:
            if not self.exceeded and self._oom_kills():
                self.exceeded = True         # OOM-killed between the last sample and the end
            name = "memory.peak" if self.kind == "cgroup2" else "memory.max_usage_in_bytes"
            v = _read(self.dir / name).strip()
            if v.isdigit():
                self.peak_bytes = max(self.peak_bytes, int(v))
            self._kill_cgroup()
            _rmdir(self.dir)


def _ppid(pid: int) -> int:
    stat = _read(f"/proc/{pid}/stat")
    rest = stat[stat.rfind(")") + 2:].split()
    return int(rest[1]) if len(rest) > 1 else -1


def _rss(pid: int) -> int:
    """Anonymous + shmem resident bytes (file-backed pages such as shared libraries are not counted)."""
    kv = _kv(_read(f"/proc/{pid}/status"))
    return (kv.get("RssAnon", 0) + kv.get("RssShmem", 0)) << 10


def _pss(pid: int) -> int:
    kv = _kv(_read(f"/proc/{pid}/smaps_rollup"))
    if "Pss_Anon" in kv:
        return (kv["Pss_Anon"] + kv.get("Pss_Shmem", 0)) << 10
    return _rss(pid)
