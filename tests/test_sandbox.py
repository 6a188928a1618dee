"""The sandbox (evaluation/execution.py) under escape attempts: each must be contained and reported.

These run real programs under bubblewrap (scripts/test installs it where missing); each takes
about a second or less, the slowest a few seconds of wall clock. The memory cap over the whole
tree is tested with the watchdog everywhere and with a cgroup where one is writable.
"""
from __future__ import annotations

import json
import os
import socket
import textwrap
import time

import pytest

from groundcode.errors import GroundcodeError
from groundcode.evaluation import execution, memory_cap
from groundcode.evaluation.execution import SandboxConfig, new_nonce, run_program

CAPS = ["watchdog", pytest.param("cgroup", marks=pytest.mark.skipif(
    memory_cap.probe()[0] == "watchdog", reason="no writable memory cgroup on this machine"))]


def _run(src: str, env: dict | None = None, **kw) -> execution.ExecutionResult:
    kw.setdefault("wall_s", 10)
    return run_program(textwrap.dedent(src), SandboxConfig(**kw), env=env)


def _survivors(marker: str) -> list[int]:
    """Host processes whose command line or environment carries `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(pid))
                        break
            except OSError:
                continue
    return found


def _no_survivors(marker: str, wait_s: float = 3.0) -> bool:
    deadline = time.time() + wait_s
    while time.time() < deadline:
        if not _survivors(marker):
            return True
        time.sleep(0.05)
    return not _survivors(marker)


def test_a_plain_program_runs_and_reports():
    r = _run("import sys; print('out'); print('err', file=sys.stderr)")
    assert r.passed and not r.timed_out and not r.killed and r.exit_code == 0
    assert r.stdout == "out\n" and r.stderr == "err\n" and r.reason == "ok" and r.mode == "bwrap"
    assert r.seconds > 0
    bad = _run("raise ValueError('nope')")
    assert not bad.passed and bad.exit_code == 1 and bad.reason == "exit 1: ValueError: nope"


def test_network_is_unreachable_even_the_host_loopback():
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(1)
    host.setblocking(False)
    port = host.getsockname()[1]
    r = _run(f"""
        import json, socket
        out = {{"interfaces": [n for _, n in socket.if_nameindex()]}}
        for name, addr in [("host_loopback", ("127.0.0.1", {port})), ("internet", ("151.101.0.223", 443))]:
            try:
                socket.create_connection(addr, timeout=2).close()
                out[name] = "connected"
            except OSError as e:
                out[name] = e.strerror or str(e)
        try:
            socket.getaddrinfo("pypi.org", 443)
            out["dns"] = "resolved"
        except OSError as e:
            out["dns"] = str(e)
        print(json.dumps(out))
    """)
    got = json.loads(r.stdout)
    assert r.passed, r.stderr
    assert got["interfaces"] == ["lo"]
    assert got["host_loopback"] != "connected" and got["internet"] != "connected"
    assert got["dns"] != "resolved"
    with pytest.raises(BlockingIOError):          # nothing ever reached the host's listener
        host.accept()
    host.close()


def test_writes_outside_the_private_tmp_fail_and_leave_the_host_untouched(tmp_path):
    target = tmp_path / "escaped.txt"
    r = _run(f"""
        import json
        out = {{}}
        for p in ["/escaped.txt", "/usr/escaped.txt", "/etc/escaped.txt", "/job/escaped.txt",
                  {str(target)!r}, {str(execution.sys.prefix + '/escaped.txt')!r}, "/tmp/fine.txt"]:
            try:
                with open(p, "w") as f:
                    f.write("x")
                out[p] = "written"
            except OSError as e:
                out[p] = e.strerror
        print(json.dumps(out))
    """)
    got = json.loads(r.stdout)
    assert got.pop("/tmp/fine.txt") == "written"          # the private temp dir is writable
    assert all(v != "written" for v in got.values()), got
    assert not target.exists() and not os.path.exists("/escaped.txt")
    assert not os.path.exists(execution.sys.prefix + "/escaped.txt")


def test_host_files_outside_the_view_are_invisible(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-42")
    home = os.path.expanduser("~")
    r = _run(f"""
        import json, os
        out = {{}}
        for p in [{str(secret)!r}, {home + '/.bash_history'!r}, "/proc/1/environ"]:
            try:
                out[p] = open(p).read()[:40]
            except OSError as e:
                out[p] = "denied: " + (e.strerror or "")
        out["visible_pids"] = len([d for d in os.listdir("/proc") if d.isdigit()])
        out["home_listing"] = os.path.isdir({home!r}) and os.listdir({home!r})
        out["etc_readable"] = os.path.exists("/etc/passwd")
        print(json.dumps(out))
    """)
    assert "TOP-SECRET-42" not in r.stdout + r.stderr
    got = json.loads(r.stdout)
    assert got[str(secret)].startswith("denied") and got["/proc/1/environ"].startswith("denied")
    assert got["visible_pids"] <= 4                    # its own PID namespace: bwrap, shim, program
    # the home directory is not in the view, beyond the way to a Python installation that lives there
    needed = {os.path.relpath(p, home).split(os.sep)[0] for p in execution._python_paths(execution.sys.executable)
              if p.startswith(home + os.sep)}
    assert set(got["home_listing"] or []) <= needed
    assert got["etc_readable"]                         # the read-only system view is


def test_fork_bomb_is_capped_and_every_process_dies():
    marker = "forkbomb-" + os.urandom(4).hex()
    r = _run(f"""
        import os, time
        # {marker}
        n = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                n += 1
        except OSError as e:
            print(n, e.errno)
    """, env={"GC_TEST_MARKER": marker}, procs=16, wall_s=60)    # it ends by itself; load must not time it out
    assert r.passed, r.reason
    n, errno = map(int, r.stdout.split())
    assert r.passed and n < 16 and errno == 11        # EAGAIN: the process limit, not the host's
    bomb = _run(f"""
        import os
        # {marker}
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """, env={"GC_TEST_MARKER": marker}, procs=16, wall_s=2)
    assert bomb.timed_out and bomb.killed and not bomb.passed and bomb.reason == "timeout (wall 2 s)"
    assert _no_survivors(marker, wait_s=15), "processes outlived the sandbox"   # reaping 16 can be slow under load


def test_memory_hog_hits_the_memory_limit():
    r = _run("""
        chunks = []
        while True:
            chunks.append(bytearray(32 << 20))
    """, memory_mb=512)
    assert not r.passed and r.reason.startswith("memory limit (512 MB)")
    assert "MemoryError" in r.stderr


def test_infinite_loops_end_at_the_cpu_limit_or_the_wall_clock():
    cpu = _run("while True: pass", cpu_s=1, wall_s=20)
    assert cpu.killed and not cpu.timed_out and cpu.exit_code == -24 and cpu.reason == "CPU limit (1 s)"
    t0 = time.perf_counter()
    sleeper = _run("import time\ntime.sleep(600)", wall_s=1)
    assert sleeper.timed_out and sleeper.killed and time.perf_counter() - t0 < 5


def test_a_detached_child_does_not_outlive_the_timeout():
    marker = "detached-" + os.urandom(4).hex()
    r = _run(f"""
        import os, subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # {marker}"],
                         start_new_session=True)
        time.sleep(60)
    """, wall_s=1.5)
    assert r.timed_out
    assert _no_survivors(marker)


def test_output_is_truncated_to_its_tail_and_file_size_is_limited():
    r = _run("""
        import sys
        sys.stdout.write("x" * 1_000_000 + "END")
        try:
            open("/tmp/big", "wb").write(b"0" * (3 << 20))
        except OSError as e:
            print("", e.strerror, file=sys.stderr)
    """, output_bytes=1000, file_mb=1)
    assert r.truncated and len(r.stdout) == 1000 and r.stdout.endswith("END")
    assert "File too large" in r.stderr


def test_the_program_runs_unprivileged():
    r = _run("""
        import os
        print(os.getuid() != 0 or open("/proc/self/uid_map").read().split()[1] != "0")
        print(open("/proc/self/status").read().split("CapEff:")[1].split()[0])
        try:
            os.setuid(0); print("became root")
        except PermissionError:
            print("no root")
    """)
    assert r.stdout.splitlines() == ["True", "0000000000000000", "no root"]


def test_without_bubblewrap_it_refuses_unless_the_weaker_mode_is_chosen(monkeypatch):
    monkeypatch.setattr(execution, "bwrap_path", lambda: None)
    execution.check_bwrap.cache_clear()
    try:
        with pytest.raises(GroundcodeError, match="bubblewrap"):
            run_program("print(1)")
        r = run_program("import os; print(os.getcwd() != '/')", SandboxConfig(mode="subprocess", wall_s=10))
        assert r.passed and r.mode == "subprocess" and r.stdout == "True\n"
        hog = run_program("while True: pass", SandboxConfig(mode="subprocess", cpu_s=1, wall_s=20))
        assert hog.killed and hog.reason == "CPU limit (1 s)"
    finally:
        execution.check_bwrap.cache_clear()


def test_run_many_keeps_the_input_order():
    rs = execution.run_many([f"print({i})" for i in range(4)], SandboxConfig(wall_s=10), workers=2)
    assert [r.stdout for r in rs] == [f"{i}\n" for i in range(4)]


def test_a_virtual_environment_interpreter_sees_its_own_prefix(tmp_path):
    import subprocess
    import sys
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    r = run_program("import sys; print(sys.prefix)", SandboxConfig(python=str(env / "bin" / "python"), wall_s=10))
    assert r.passed, r.reason
    assert r.stdout.strip() == str(env)


@pytest.mark.parametrize("cap", CAPS)
def test_a_tree_of_processes_is_capped_as_a_whole(cap):
    # 4 children x 600 MB, each under its own 1,024 MB address-space limit: per-process limits let
    # this run to the end; the cap on the tree's total must kill all of it, and say so.
    marker = "tree-" + os.urandom(4).hex()
    r = _run(f"""
        import os, time
        # {marker}
        kids = []
        for i in range(4):
            pid = os.fork()
            if pid == 0:
                block = bytearray(600 << 20)
                for j in range(0, len(block), 4096):     # touch every page: resident, not just reserved
                    block[j] = 1
                time.sleep(5)
                os._exit(0)
            kids.append(pid)
        for k in kids:
            os.waitpid(k, 0)
        print("ran to the end")
    """, env={"GC_TEST_MARKER": marker}, memory_mb=1024, memory_cap=cap, wall_s=30)
    assert "ran to the end" not in r.stdout
    assert not r.passed and r.killed and r.killed_by == "memory" and not r.timed_out
    assert r.reason.startswith("memory limit (1024 MB): the sandbox's processes and tmpfs reached")
    assert r.extra["memory_cap"] == (cap if cap == "watchdog" else memory_cap.probe()[0])
    assert 900 <= r.extra["peak_mb"] < 1024 + 600           # killed near the limit, not at 2,400 MB
    assert r.seconds < 5                                     # well before the children's 5 s sleep ends
    assert _no_survivors(marker, wait_s=10)


@pytest.mark.parametrize("cap", CAPS)
def test_files_in_tmpfs_count_as_memory_and_dev_is_read_only(cap):
    r = _run("""
        import sys
        try:
            open("/dev/escape", "wb").write(b"x")
            print("dev writable", flush=True)
        except OSError as e:
            print("dev:", e.strerror, flush=True)
        open("/dev/null", "wb").write(b"x")                 # the device nodes still work
        print("null ok", flush=True)
        for path in ("/dev/shm/fill", "/tmp/fill"):           # 300 + 300 MB of files, memory-backed
            try:
                with open(path, "wb") as f:
                    for _ in range(300):
                        f.write(b"0" * (1 << 20))
            except OSError as e:
                print(path, e.strerror, flush=True)
        print("wrote everything", flush=True)
        import time
        time.sleep(20)                 # the files stay: a watchdog starved by a busy machine
    """, memory_mb=512, tmp_mb=400, shm_mb=400, file_mb=1024, memory_cap=cap, wall_s=30)
    lines = r.stdout.splitlines()
    assert lines[:2] == ["dev: Read-only file system", "null ok"]
    if cap == "cgroup":                # the kernel stops the write itself; the watchdog samples
        assert "wrote everything" not in r.stdout   # (memory_cap.py: it may overshoot by what
    # is written within one interval, and an interval stretches on a loaded machine)
    assert r.killed_by == "memory" and not r.passed and 400 <= r.extra["peak_mb"] < 512 + 200


def test_a_run_with_a_nonce_passes_only_if_the_nonce_is_printed_after_the_tests():
    from groundcode.evaluation.execution import NONCE_EPILOGUE
    nonce = new_nonce()
    tests = "assert sorted([3, 1, 2]) == [1, 2, 3]\n"
    ok = run_program(tests + NONCE_EPILOGUE, SandboxConfig(wall_s=10), nonce=nonce)
    assert ok.passed and ok.reason == "ok", ok
    for early in ("import sys; sys.exit(0)\n", "import os; os._exit(0)\n"):
        r = run_program(early + tests + NONCE_EPILOGUE, SandboxConfig(wall_s=10), nonce=nonce)
        assert r.exit_code == 0 and not r.passed and not r.killed
        assert r.reason == "exit 0 before the tests finished (no nonce in the output)"
    failed = run_program("assert 1 == 2\n" + NONCE_EPILOGUE, SandboxConfig(wall_s=10), nonce=nonce)
    assert not failed.passed and failed.reason == "exit 1: AssertionError"
    other = run_program(f"print({new_nonce()!r})\n", SandboxConfig(wall_s=10), nonce=nonce)
    assert not other.passed                                 # another run's nonce does not count


def test_the_code_under_test_cannot_read_the_nonce_from_a_file_or_the_environment():
    """Issue 28: the nonce was a literal in /job/main.py; code under test could read it, print
    it and exit 0 before its tests."""
    from groundcode.evaluation.execution import NONCE_EPILOGUE
    nonce = new_nonce()
    cheat = ("import os, re, sys\n"
             "seen = open(__file__).read() + repr(dict(os.environ))\n"
             "for d, _, fs in os.walk('/job'):\n"
             "    for f in fs: seen += open(os.path.join(d, f)).read()\n"
             "m = re.search(r'groundcode-tests-done-[0-9a-f]+', seen)\n"
             "print(m.group(0) if m else 'not found'); sys.exit(0)\n")
    r = run_program(cheat + "assert False\n" + NONCE_EPILOGUE, SandboxConfig(wall_s=10), nonce=nonce)
    assert "not found" in r.stdout and not r.passed, r


# -- the verdict (issue 39 item 5): the code under test runs in a child out of its reach ---------

_HARNESS = """
import numpy as np
env = {"a": np.array([3, 1, 2])}
exec(CODE, env)
np.testing.assert_array_equal(env["result"], np.array([1, 2, 3]))
assert sorted([2, 1]) == [1, 2]
"""

_FORGERIES = {
    # issue 39's forgery: the nonce's pipe named in the environment, then exit 0
    "environ fd": "import os\nprint(os.read(int(os.environ['GC_NONCE_FD']), 256).decode(), flush=True)\n"
                  "os._exit(0)\n",
    "fds 0-255": "import os\nfor fd in range(256):\n    try: print(os.read(fd, 256).decode(), flush=True)\n"
                 "    except Exception: pass\nos._exit(0)\n",
    "/proc/*/fd": "import os\nfor p in os.listdir('/proc'):\n    if not p.isdigit(): continue\n"
                  "    try: fds = os.listdir(f'/proc/{p}/fd')\n    except OSError: continue\n"
                  "    for fd in fds:\n        try:\n"
                  "            f = os.open(f'/proc/{p}/fd/{fd}', os.O_RDONLY | os.O_NONBLOCK)\n"
                  "            print(os.read(f, 256).decode('latin-1'), flush=True)\n"
                  "        except OSError: pass\nos._exit(0)\n",
    "parent's memory": "import os\ntry: print(open(f'/proc/{os.getppid()}/mem', 'rb').read(64), flush=True)\n"
                       "except OSError as e: print(e, flush=True)\nos._exit(0)\n",
    "early os._exit(0)": "import os\nos._exit(0)\n",
    "early sys.exit(0)": "import sys\nsys.exit(0)\n",
    "patched helpers": "import numpy, builtins\nnumpy.testing.assert_array_equal = lambda *a, **k: None\n"
                       "builtins.sorted = lambda x: [1, 2]\nresult = a\n",
    "killed harness": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "pickle that runs code": "import os\nclass R:\n    def __reduce__(self):\n"
                             "        return (exec, ('import os; os._exit(0)',))\nresult = R()\n",
    "pickle that calls a method": "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                                  "class R:\n    def __reduce__(self):\n"
                                  "        return (plt.gcf().savefig, ('/tmp/forged.png',))\nresult = R()\n",
}


@pytest.mark.parametrize("name", list(_FORGERIES))
def test_a_forged_pass_is_scored_a_failure(name):
    from groundcode.evaluation.execution import judged_program
    nonce = new_nonce()
    prog = judged_program(f"CODE = {_FORGERIES[name]!r}\n" + _HARNESS)
    r = run_program(prog, SandboxConfig(wall_s=30), nonce=nonce)
    assert not r.passed and nonce not in r.stdout, (name, r)


def test_a_real_pass_still_passes_and_a_failure_says_why():
    from groundcode.evaluation.execution import judged_program

    def run(code):
        return run_program(judged_program(f"CODE = {code!r}\n" + _HARNESS), SandboxConfig(wall_s=30),
                           nonce=new_nonce())
    ok = run("import numpy as np\nresult = np.sort(a)\n")
    assert ok.passed and ok.reason == "ok", ok
    wrong = run("result = a\n")
    assert not wrong.passed and wrong.reason.startswith("exit 1: AssertionError"), wrong
    raised = run("raise ValueError('no such column')\n")
    assert not raised.passed and raised.reason == "exit 1: ValueError: no such column", raised
    # what the code draws is the harness's current figure again (DS-1000's Matplotlib checks)
    plot = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "import numpy as np\nplt.plot([1, 2], label='x-y')\nplt.legend()\nresult = np.array([1, 2, 3])\n")
    drawn = run_program(judged_program(f"CODE = {plot!r}\n" + _HARNESS + (
        "import matplotlib.pyplot as plt\n"
        "assert plt.gca().get_legend().get_texts()[0].get_text() == 'x-y'\n")),
        SandboxConfig(wall_s=60), nonce=new_nonce())
    assert drawn.passed, drawn


def test_a_torch_result_reaches_the_harness_as_a_tensor():
    """Tensors travel as numpy arrays (their own pickles load through torch.load, which the
    harness does not allow back); DS-1000's PyTorch checks compare tensors."""
    from groundcode.evaluation.execution import judged_program
    code = "import torch\nresult = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True) * 2\nshape = result.shape\n"
    harness = ("import torch\nenv = {}\nexec(CODE, env)\nr = env['result']\n"
               "assert torch.equal(r.detach(), torch.tensor([[2., 4.], [6., 8.]])), r\n"
               "assert env['shape'] == torch.Size([2, 2])\n")
    r = run_program(judged_program(f"CODE = {code!r}\n" + harness),
                    SandboxConfig(wall_s=120, memory_mb=4096, address_mb=8192, procs=128), nonce=new_nonce())
    assert r.passed, r


def test_the_hosts_etc_is_not_visible_only_what_an_interpreter_needs():
    probe = ("import os\n"
             "print(sorted(os.listdir('/etc')))\n"
             "print(os.path.exists('/etc/ld.so.cache'), os.path.exists('/etc/shadow'), os.path.exists('/etc/apt'))\n")
    r = run_program(probe, SandboxConfig(wall_s=10))
    assert r.passed, r
    last = r.stdout.strip().splitlines()[-1]
    assert last == "True False False", r.stdout


def test_why_a_run_was_killed_is_recorded():
    assert _run("import time; time.sleep(60)", wall_s=1).killed_by == "timeout"
    assert _run("while True: pass", cpu_s=1, wall_s=20).killed_by == "cpu"
    assert _run("import os, signal; os.kill(os.getpid(), signal.SIGTERM)").killed_by == "signal"
    assert _run("print(1)").killed_by == ""
