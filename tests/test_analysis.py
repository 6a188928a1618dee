"""Jedi analyzer: repo-level members, cache, deadline and crash fail-open, dependencies."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from groundcode.analysis import working
from groundcode.analysis.base import MembersQuery
from groundcode.analysis.jedi_client import JediAnalyzer
from groundcode.analysis.jedi_oracle import repo_dependencies
from groundcode.analysis.jedi_worker import Job
from groundcode.context import Splice


def _members(a, code, f, line, col, *, receiver, cache_key, timeout=None):
    """Ask and wait up to `timeout` (None: the analyzer's deadline now); a late answer is a
    "timeout" (it is cached when it lands)."""
    t = a.ask(MembersQuery(Splice(code, line, col, Path(f)), receiver, cache_key))
    r = t.result(a.deadline() if timeout is None else timeout)
    if r is None:
        from groundcode.analysis.base import Analysis
        return Analysis(receiver, frozenset(), 0.0, False, "timeout")
    return r


def complete_members(root, code, path, line, column, hide_private=False):
    from groundcode.analysis.jedi_worker import complete_members as cm
    return cm(Job(root, code, path, line, column))


def _partial(shop_repo):
    f = shop_repo / "shop" / "cart.py"
    lines = f.read_text().splitlines()
    code = "\n".join(lines[:15]) + "\n        return self.registry.\n"
    return f, code, 16, len("        return self.registry.")


def test_members_resolve_across_files_and_cache(shop_repo):
    a = JediAnalyzer(shop_repo, deadline_s=30)
    f, code, line, col = _partial(shop_repo)
    r = _members(a, code, f, line, col, receiver="self.registry", cache_key=("v", "Cart.last", "self.registry"))
    assert {"register", "latest_update", "_registered_updates", "size"} <= r.names
    assert not r.cache_hit and r.failed is None
    r2 = _members(a, code, f, line, col, receiver="self.registry", cache_key=("v", "Cart.last", "self.registry"))
    assert r2.cache_hit and r2.names == r.names and a.calls == 1


def test_hide_private_hides_but_never_forbids(shop_repo):
    # Dunders and private names exist and are legal to write (`self.__class__`,
    # `self._registered_updates`): the analyzer always lists them; --hide-private marks the
    # private ones hidden (never suggested), as the narrowing hides dunders.
    with JediAnalyzer(shop_repo, deadline_s=30, hide_private=True, hide_dunder=True) as a:
        f, code, line, col = _partial(shop_repo)
        r = _members(a, code, f, line, col, receiver="self.registry", cache_key=("x",))
    assert "_registered_updates" in r.names and "_registered_updates" in r.hidden
    assert "__class__" in r.names and "__init__" in r.names and "__class__" not in r.hidden
    assert "register" in r.names and "register" not in r.hidden and r.failed is None


def slow_worker(job):
    time.sleep(3.0)
    return frozenset({"x"}), {}


def hung_worker(job):
    if "HANG" in job.code:
        time.sleep(3600)
    return frozenset({"y"}), {}


def crash_worker(job):
    raise RecursionError("jedi blew up")


def exit_worker(job):
    os._exit(3)   # the worker process dies mid-call


@pytest.mark.parametrize("workers", ["thread", "process"])
def test_deadline_fails_open_and_late_answer_is_cached(shop_repo, workers):
    a = JediAnalyzer(shop_repo, deadline_s=0.3, workers=workers, worker_fn=slow_worker)
    f, code, line, col = _partial(shop_repo)
    assert a.deadline() == 20.0                 # cold: the first answer pays the worker's start
    _members(a, code, f, line, col, receiver="w", cache_key=("warm",))
    assert a.deadline() == 0.3
    t0 = time.perf_counter()
    r = _members(a, code, f, line, col, receiver="self.registry", cache_key=("t",))
    assert time.perf_counter() - t0 < 2.5          # the 0.3 s deadline, not the 3 s answer
    assert r.names == frozenset() and r.failed == "timeout" and a.timeouts == 1
    assert working.now() == 1                       # the call runs on: an analyzer at work
    end = time.monotonic() + 60                     # the late answer lands in the cache for the
    while len(a._cache) < 2 and time.monotonic() < end:     # next trigger (an event, not a sleep)
        time.sleep(0.05)
    assert working.now() == 0
    r2 = _members(a, code, f, line, col, receiver="self.registry", cache_key=("t",))
    assert r2.cache_hit and r2.names == frozenset({"x"})
    a.close()


def test_hung_worker_process_is_killed_and_replaced(shop_repo):
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="process", worker_fn=hung_worker,
                     kill_after_s=1.0)
    f, code, line, col = _partial(shop_repo)
    assert _members(a, code, f, line, col, receiver="w", cache_key=("ok",)).names == {"y"}
    a.deadline_s = 0.3
    r = _members(a, "HANG" + code, f, line, col, receiver="h", cache_key=("hang",))
    assert r.failed == "timeout"
    h = a.health()                              # the call runs past the deadline: degraded, why
    assert h["status"] == "degraded" and "a call unanswered" in h["reason"], h
    time.sleep(1.1)
    a.deadline_s = 30
    r2 = _members(a, code, f, line, col, receiver="z", cache_key=("after",))
    assert a.restarts == 1 and r2.names == {"y"}
    h = a.health()                              # the kill was recorded, the answer after it ended
    assert a.health_state.total == 1 and h["status"] == "ok", h          # the degraded spell
    a.close()


@pytest.mark.parametrize("fn, reason", [(crash_worker, "error: RecursionError"),
                                        (exit_worker, "error: BrokenProcessPool")])
def test_crash_fails_open(shop_repo, fn, reason):
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="process", worker_fn=fn)
    f, code, line, col = _partial(shop_repo)
    r = _members(a, code, f, line, col, receiver="self.registry", cache_key=("c",))
    assert r.names == frozenset() and r.failed.startswith(reason) and a.errors == 1
    a.close()


def test_repo_dependencies(shop_repo):
    f = shop_repo / "shop" / "cart.py"
    deps = repo_dependencies(shop_repo, f, f.read_text(), 9, 16)
    assert "shop.registry.Registry.register" in deps
    assert "shop.registry.Registry.latest_update" in deps
    assert not any(d.startswith("builtins") for d in deps)


DYNAMIC = '''import argparse
import socket
class Proxy:
    def __getattr__(self, name):
        return 1
class Loose:
    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
class Base(NotImportedAnywhere):
    pass
class Mixed(Base):
    size = 1
class Plain:
    size = 1
class Wire(socket.socket):
    pass
def f(ns: argparse.Namespace, p: Proxy, lo: Loose, m: Mixed, pl: Plain, o: object,
      sock: socket.socket, w: Wire, path: argparse.ArgumentParser):
    RECV.
'''


@pytest.mark.parametrize("receiver,reason", [
    ("ns", "dynamic: argparse.Namespace.__getattr__"), ("p", "dynamic: dyn.Proxy.__getattr__"),
    ("lo", "dynamic: Loose sets attributes at run time"), ("m", "unresolved base: NotImportedAnywhere"),
    ("pl", None), ("o", "empty"),
    # Jedi reads typeshed's `class socket(_socket.socket)` base as socket.socket itself, so
    # `connect`, `recv`, `send` were missing: a false block (pyopenssl, the held-out audit)
    ("sock", "unresolved base: _socket.socket (read as socket itself)"),
    ("w", "unresolved base: _socket.socket (read as socket itself)"), ("path", None)])
def test_untrustworthy_member_lists_fail_open_with_a_reason(tmp_path, receiver, reason):
    code = DYNAMIC.replace("RECV", receiver)
    line = code.splitlines().index(f"    {receiver}.") + 1
    names, _, note = complete_members(str(tmp_path), code, str(tmp_path / "dyn.py"), line,
                                      len(receiver) + 5, False)
    assert note == reason
    if receiver == "pl":
        assert "size" in names and "__class__" in names
    if receiver == "path":                       # a stub class whose bases resolve: trusted
        assert "add_argument" in names


def test_worker_processes_end_with_the_analyzer_and_exit_is_clean(shop_repo):
    # `with JediAnalyzer(...)`: the worker process is gone after the block, and a script that
    # uses and closes analyzers exits without a traceback (once: "Bad file descriptor").
    import multiprocessing
    import subprocess
    import sys
    f, code, line, col = _partial(shop_repo)
    with JediAnalyzer(shop_repo, deadline_s=30) as a:
        _members(a, code, f, line, col, receiver="self.registry", cache_key=("leak",))
        procs = list(a._pool._processes.values())
        assert procs and all(p.is_alive() for p in procs)
    assert not any(p.is_alive() for p in procs)
    assert not [p for p in multiprocessing.active_children() if p in procs]
    script = (
        "import sys\nfrom pathlib import Path\nfrom groundcode.analysis.base import MembersQuery\n"
        "from groundcode.analysis.jedi_client import JediAnalyzer\nfrom groundcode.context import Splice\n"
        f"root = Path({str(shop_repo)!r})\n"
        "for k in range(2):\n"
        "    with JediAnalyzer(root, deadline_s=30) as a:\n"
        "        a.ask(MembersQuery(Splice('x = 1\\nx.', 2, 2, root / 'm.py'), 'x', (k,), prefetch=True))\n"
        "        a.ask(MembersQuery(Splice('import os\\nos.', 2, 3, root / 'm.py'), 'os', ('os', k))).result(60)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stderr and "Bad file descriptor" not in out.stderr, out.stderr


def test_a_methods_members_are_an_answer_but_nones_are_not(tmp_path):
    # `self.get_pages.append(` must not fail open: a method has only dunders, and that is known.
    code = ("class A:\n    def get_pages(self):\n        return []\n    def f(self):\n"
            "        self.get_pages.\n        x = None\n        x.\n")
    names, _, note = complete_members(str(tmp_path), code, str(tmp_path / "m.py"), 5, 23, False)
    assert note is None and "__call__" in names and "append" not in names
    names, _, note = complete_members(str(tmp_path), code, str(tmp_path / "m.py"), 7, 10, False)
    assert note == "empty"


def test_each_worker_has_its_own_parso_cache_directory(tmp_path, monkeypatch):
    # parso writes its pickles in place: two processes sharing a directory read torn files
    # (EOFError "Ran out of input"). A worker holds a directory slot with a lock for its life.
    import subprocess
    import sys
    monkeypatch.setenv("GROUNDCODE_CACHE", str(tmp_path))
    script = ("import time\nfrom groundcode.analysis import jedi_worker as w\n"
              "print(w.parso_cache_dir(), flush=True)\ntime.sleep(3)\n")
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    dirs = [p.stdout.readline().strip() for p in procs]
    for p in procs:
        p.wait(timeout=60)
    assert len(set(dirs)) == 2 and all(d.startswith(str(tmp_path)) for d in dirs), dirs


def test_a_dead_worker_is_replaced_once_and_thread_mode_fails_open(shop_repo):
    # JediAnalyzer._broken replaced whichever pool was current (every ticket of a dead worker
    # restarted it again) and raised AttributeError in thread mode (`cf.process` unimported).
    f, code, line, col = _partial(shop_repo)
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="process", worker_fn=exit_worker)
    t1 = a.ask(MembersQuery(Splice(code, line, col, f), "a", ("1",)))
    t2 = a.ask(MembersQuery(Splice(code, line, col, f), "b", ("2",)))
    r1, r2 = t1.result(60), t2.result(60)
    assert r1.failed.startswith("error") and r2.failed.startswith("error")
    assert a.restarts == 1
    a.close()
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="thread", worker_fn=crash_worker)
    r = _members(a, code, f, line, col, receiver="x", cache_key=("t",))
    assert r.failed.startswith("error: RecursionError") and a.restarts == 0
    a.close()


LITERAL_SETATTR = '''class Literal:
    def __init__(self):
        setattr(self, "size", 1)
        for name in ("alpha", "beta"):
            setattr(self, name, None)
class Unknown:
    def __init__(self, names):
        for name in names:
            setattr(self, name, None)
def f(a: Literal, u: Unknown):
    RECV.
'''


@pytest.mark.parametrize("receiver,reason", [("a", None), ("u", "dynamic: Unknown sets attributes at run time")])
def test_literal_setattr_names_are_members_and_only_unknowable_ones_fail_open(tmp_path, receiver, reason):
    code = LITERAL_SETATTR.replace("RECV", receiver)
    line = code.splitlines().index(f"    {receiver}.") + 1
    names, _, note = complete_members(str(tmp_path), code, str(tmp_path / "lit.py"), line, 6)
    assert note == reason
    if receiver == "a":
        assert {"size", "alpha", "beta"} <= names and "gamma" not in names


def test_the_project_environment_is_the_repositorys_venv(tmp_path):
    # --python / the repository's .venv: Jedi's project sees that interpreter's libraries (the
    # venv untrusted: its site-packages read as files; tests/test_trust.py)
    import subprocess
    import sys
    from groundcode.trust import find_venv as find_python
    assert find_python(tmp_path) is None
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True)
    site = next((tmp_path / ".venv").glob("lib/python*/site-packages"))
    (site / "onlyinvenv.py").write_text("def venv_function():\n    pass\n")
    assert find_python(tmp_path) == tmp_path / ".venv"
    code = "import onlyinvenv\nonlyinvenv.\n"
    with JediAnalyzer(tmp_path, deadline_s=30) as a:
        r = _members(a, code, tmp_path / "m.py", 2, len("onlyinvenv."), receiver="onlyinvenv", cache_key=("v",),
                     timeout=60)
    assert "venv_function" in r.names, r
    with JediAnalyzer(tmp_path, deadline_s=30, python=sys.executable) as a:
        r = _members(a, code, tmp_path / "m.py", 2, len("onlyinvenv."), receiver="onlyinvenv", cache_key=("v",),
                     timeout=60)
    assert "venv_function" not in r.names


def test_only_the_jedi_modules_import_jedi():
    import re
    src = Path(__file__).parent.parent / "src" / "groundcode"
    importers = {p.name for p in src.rglob("*.py")
                 if re.search(r"^\s*(import jedi|from jedi)", p.read_text(), re.M)}
    assert importers and all(n.startswith("jedi_") for n in importers), importers


def test_text_analysed_in_this_process_never_becomes_the_module_for_later_analyses(tmp_path):
    """A sample spliced into pricing.py with PriceBook cut short (scoring's DepCov), or a worker's
    partial code, is that call's text only: parso's in-memory cache kept such a parse under the
    file's path with the file's mtime, and every later import of `inventory.pricing` in the process
    got it — so `self.book.set_price` was no member in a process that had scored a sample before
    (test_executor: this process's augmentation differed from a fresh Ray worker's)."""
    import shutil

    from groundcode.analysis.jedi_oracle import completion_names, offered_in_file
    repo = tmp_path / "bench_repo"
    shutil.copytree(Path(__file__).parent / "fixtures" / "bench_repo", repo)
    models, pricing = repo / "inventory" / "models.py", repo / "inventory" / "pricing.py"
    code = models.read_text()
    lines = code.splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if "self.book.set_price" in ln)
    col = lines[line - 1].index("set_price")
    query = [(line, col, "set_price", line)]
    head = "\n".join(lines[:line - 1]) + "\n" + lines[line - 1][:col] + "\n"
    assert offered_in_file(str(repo), code, str(models), query) == [True]
    assert "set_price" in completion_names(str(repo), head, str(models), line, col)

    cut = pricing.read_text().split("    def set_price")[0] + "    def price_with_tax(self, name:\n"
    repo_dependencies(repo, pricing, cut, 1, 5)                        # the scorer's splice
    complete_members(str(repo), cut, str(pricing), cut.count("\n"), 0)   # a worker's partial code
    assert offered_in_file(str(repo), code, str(models), query) == [True]
    assert "set_price" in completion_names(str(repo), head, str(models), line, col)


def _logging_worker(job):
    time.sleep(0.15)
    return frozenset({job.code.split("#")[-1].strip()}), {}


def test_a_triggers_question_goes_before_the_prefetches_asked_earlier(shop_repo):
    # One worker: FIFO put a real trigger behind every prefetch asked at the row's start (the
    # answer then came long after the name was written). Prefetches now wait in their own line,
    # and a prefetch that a trigger joins is promoted.
    f, code, line, col = _partial(shop_repo)
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="thread", worker_fn=_logging_worker)
    done: list[str] = []

    def ask(tag, prefetch, key=None):
        t = a.ask(MembersQuery(Splice(code + "#" + tag, line, col, f), tag, (key or tag,), prefetch=prefetch))
        t._fut.add_done_callback(lambda _: done.append(tag))
        return t

    tickets = [ask(f"p{k}", True) for k in range(4)]        # p0 runs, p1..p3 wait
    real = ask("real", False)
    joined = ask("p3", False, key="p3")                      # the same question as p3: promoted
    assert real.result(30).names == {"real"} and joined.result(30).names == {"p3"}
    for t in tickets:
        t.result(30)
    assert done[:2] == ["p0", "real"], done                 # before p1..p3, asked earlier
    assert done.index("p3") < done.index("p1") < done.index("p2"), done
    a.close()


def test_a_guess_asked_soon_goes_before_the_guesses_asked_earlier(shop_repo):
    # A local bound by a line just generated (`soon`): its trigger is likely a line away, while
    # the prefetches asked at the row's start (or by a row that ended) may be needed much later.
    f, code, line, col = _partial(shop_repo)
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="thread", worker_fn=_logging_worker)
    done: list[str] = []

    def ask(tag, soon):
        t = a.ask(MembersQuery(Splice(code + "#" + tag, line, col, f), tag, (tag,), prefetch=True, soon=soon))
        t._fut.add_done_callback(lambda _: done.append(tag))
        return t

    tickets = [ask(f"p{k}", False) for k in range(3)]        # p0 runs, p1, p2 wait
    tickets.append(ask("bound", True))
    for t in tickets:
        t.result(30)
    assert done == ["p0", "bound", "p1", "p2"], done
    a.close()


def test_a_torn_parso_pickle_is_a_cache_miss(tmp_path):
    # A worker killed while parso wrote a pickle left it torn in its slot: every later worker
    # given the slot failed each call importing that module ("EOFError: Ran out of input").
    import parso
    import parso.cache as pc

    from groundcode.analysis import jedi_worker
    src, cache = tmp_path / "m.py", tmp_path / "parso"
    src.write_text("def f():\n    return 1\n")
    g = parso.load_grammar()
    g.parse(path=str(src), cache=True, cache_path=cache)
    pickles = [p for p in cache.rglob("*.pkl")]
    assert pickles
    for p in pickles:
        p.write_bytes(p.read_bytes()[:7])                  # torn mid-write
    pc.parser_cache.clear()
    jedi_worker._tolerate_torn_pickles()
    module = g.parse(path=str(src), cache=True, cache_path=cache)
    assert module.children[0].type == "funcdef"


NARROWED = '''from typing import Sequence
class Reader:
    source: Sequence[str]
class StringReader(Reader):
    source: str
class Node:
    def kids(self):
        return []
class Group(Node):
    parsers = []
    def __or__(self, other):
        pass
def f(reader: Reader, node: Node):
    if isinstance(reader, StringReader):
        reader.source.
    if isinstance(node, Group) and node.kids():
        node.
    reader.source.
'''


@pytest.mark.parametrize("line,receiver,present,absent", [
    (15, "reader.source", {"startswith", "count"}, set()),   # str's and Sequence's members
    (17, "node", {"parsers", "kids"}, set()),
    (18, "reader.source", {"count"}, {"startswith"}),        # outside the guard: declared type
])
def test_an_isinstance_guard_adds_the_guard_classes_members(tmp_path, line, receiver, present, absent):
    # Jedi keeps a typed receiver's declared type inside `if isinstance(x, C):`: correct code
    # there (`reader.source.startswith`) must not be rolled back.
    code = NARROWED
    col = len(code.splitlines()[line - 1])
    names, _, note = complete_members(str(tmp_path), code, str(tmp_path / "g.py"), line, col)
    assert note is None and present <= names and not (absent & names), (note, sorted(names)[:20])


EMPTY_SPLIT = '''from not_installed_anywhere import Config
import also_not_installed as ani
def f(x, path: str):
    cfg = Config(path)
    try:
        pass
    except ani.Error as e:
        e.
    cfg.
    ani.
    x.
    y = object()
    y.
class Holder:
    def __init__(self):
        self.cfg = None
    def load(self, path: str):
        self.cfg = Config(path)
    def use(self):
        self.cfg.
'''


@pytest.mark.parametrize("receiver,reason", [
    ("e", "unresolved import: also_not_installed"), ("cfg", "unresolved import: not_installed_anywhere"),
    ("ani", "unresolved import: also_not_installed"), ("x", "untyped"), ("y", "empty"),
    ("self.cfg", "unresolved import: not_installed_anywhere")])   # None first, then the import
def test_an_empty_answer_says_what_the_analyzer_knew(tmp_path, receiver, reason):
    code = EMPTY_SPLIT
    lines = code.splitlines()
    line = next(k for k, ln in enumerate(lines, 1) if ln.strip() == receiver + ".")
    names, _, note = complete_members(str(tmp_path), code, str(tmp_path / "e.py"), line, len(lines[line - 1]))
    assert note == reason


def test_questions_of_rows_that_ended_are_dropped_from_the_queue(shop_repo):
    """Issue 28: the queued questions of preempted lookahead rows stayed ahead of the new
    request's; a question every asker of which has ended is dropped, never run."""
    import threading
    f, code, line, col = _partial(shop_repo)
    a = JediAnalyzer(shop_repo, deadline_s=30, workers="thread", worker_fn=_logging_worker)
    ran: list[str] = []
    gone, alive = threading.Event(), threading.Event()

    def ask(tag, ended, prefetch=False):
        t = a.ask(MembersQuery(Splice(code + "#" + tag, line, col, f), tag, (tag,), prefetch=prefetch,
                               ended=ended))
        t._fut.add_done_callback(lambda fut: ran.append(tag) if not fut.cancelled() else None)
        return t
    first = ask("first", alive)                                # runs now
    stale = [ask(f"stale{k}", gone) for k in range(3)]        # a lookahead row's, queued
    shared = ask("shared", gone)
    ask("shared", None)                                        # joined by a row that goes on
    gone.set()                                                 # the lookahead row is preempted
    new = ask("new", alive)
    assert new.result(30).names == {"new"} and first.result(30).names == {"first"}
    assert list(dict.fromkeys(ran)) == ["first", "shared", "new"], ran   # "shared": two tickets, one call
    assert a.dropped == 3 and all(t.result(0) is not None for t in stale)   # they fail open
    a.close()


def test_a_completed_prewarm_makes_the_analyzer_warm(shop_repo):
    """Issue 28: the 20 s cold deadline outlived a completed prewarm."""
    a = JediAnalyzer(shop_repo, deadline_s=2.0, workers="thread")
    assert a.deadline() == a.cold_deadline_s
    code = (shop_repo / "shop" / "cart.py").read_text()
    a.prewarm(Splice(code, 1, 0, shop_repo / "shop" / "cart.py"))
    end = time.time() + 60
    while a.deadline() != 2.0 and time.time() < end:
        time.sleep(0.05)
    assert a.deadline() == 2.0
    a.close()
