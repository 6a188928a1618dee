"""--executor ray gives the local path's records: bench run (greedy, tiny model) and bench score on two
fixture repositories (two shards) with ray.init(num_cpus=2), and augment, corpus build, index api and
index snippets; a rerun skips what is done. The sharded path without Ray (LocalExecutor): the task
order, resuming a stopped run from `<out>.pending`, reusing pending score rows. The executor's errors.
Ray starts once for the module (seconds on 2 cores)."""
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundcode.errors import GroundcodeError
from groundcode.evaluation.cli import app
from groundcode.executor import LocalExecutor, make_executor, shard_by
from groundcode.jsonl import append_jsonl, read_jsonl

FIXTURES = Path(__file__).parent / "fixtures"
RUN = ("--config", "greedy", "--model", "tiny", "--schedule", "greedy", "--max-new-tokens", "16")


def invoke(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output + repr(res.exception)
    return res.output


def same(rec: dict) -> dict:
    """A samples record without its timings and analyzer cache hits (they depend on what the process ran
    before: wall-clock seconds, a warm analysis cache)."""
    return rec | {"samples": [{k: v for k, v in s.items() if k not in ("seconds", "analysis_ms", "cache_hits")}
                              for s in rec["samples"]]}


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """Tasks of two repositories (bench_repo, shop), and the local executor's samples and results."""
    d = tmp_path_factory.mktemp("executor")
    invoke("build", FIXTURES / "bench_repo", FIXTURES / "shop", "--out", d / "b", "--functions-per-repo", 3,
           "--methods-per-repo", 2, "--points-per-method", 2)
    tasks = d / "b" / "tasks.jsonl"
    assert {t["repo"] for t in read_jsonl(tasks)} == {"bench_repo", "shop"}
    invoke("run", tasks, "--out", d / "local.jsonl", *RUN, "--executor", "local")
    invoke("score", tasks, d / "local.jsonl", "--results", d / "local_results.jsonl", "--summary",
           d / "local_summary.json", "--no-codebleu")
    return d, tasks


@pytest.fixture(scope="module")
def ray_session():
    """One in-process local Ray for the module (its start costs seconds); the executor uses it.
    Its workers run at the suite's own priority: Ray nices them to 15 by default, and beside one
    busy process per core they got a few percent of a core (each actor's imports took minutes)."""
    import ray      # the `ray` extra: scripts/test installs it
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_worker_niceness", "0")       # read by the raylet that ray.init starts
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
    mp.undo()


@pytest.fixture(scope="module")
def ray_runs(local, ray_session):
    """The same run and score on Ray (2 CPUs, 2 workers), and a rerun with nothing left to do."""
    d, tasks = local
    fresh = invoke("run", tasks, "--out", d / "ray.jsonl", *RUN, "--executor", "ray", "--workers", 2)
    again = invoke("run", tasks, "--out", d / "ray.jsonl", *RUN, "--executor", "ray", "--workers", 2)
    invoke("score", tasks, d / "local.jsonl", "--results", d / "ray_results.jsonl", "--summary",
           d / "ray_summary.json", "--no-codebleu", "--executor", "ray", "--workers", 2)
    return {"fresh": fresh, "again": again}


def test_ray_run_gives_the_local_samples(local, ray_runs):
    d, tasks = local
    loc = [same(r) for r in read_jsonl(d / "local.jsonl")]
    assert len(loc) == sum(1 for _ in read_jsonl(tasks))
    assert any(s["completion"].strip() for r in loc for s in r["samples"])
    # record for record, in the local order
    assert [same(r) for r in read_jsonl(d / "ray.jsonl")] == loc
    assert f"{len(loc)} tasks generated" in ray_runs["fresh"]
    assert not (d / "ray.jsonl.pending").exists()
    assert "0 tasks generated" in ray_runs["again"]
    assert len(list(read_jsonl(d / "ray.jsonl"))) == len(loc)


def test_ray_score_gives_the_local_results(local, ray_runs):
    d, _ = local
    assert list(read_jsonl(d / "ray_results.jsonl")) == list(read_jsonl(d / "local_results.jsonl"))
    a, b = (json.loads((d / f"{n}_summary.json").read_text()) for n in ("local", "ray"))
    assert {c: v["kinds"] for c, v in a.items()} == {c: v["kinds"] for c, v in b.items()}
    assert b["greedy"]["scoring"]["lint_jobs"] == a["greedy"]["scoring"]["lint_jobs"] > 0


def test_ray_augment_corpus_and_index_give_the_local_output(ray_session, tmp_path):
    """augment (one repository per shard), corpus build (one package per shard), index api (one service or
    package per shard) and index snippets on Ray write what the local paths write."""
    from groundcode.cli import app as main_app
    from groundcode.training.augment import AugmentConfig, augment

    def cli(*args):
        res = CliRunner().invoke(main_app, [str(a) for a in args])
        assert res.exit_code == 0, res.output + repr(res.exception)
        return res.output

    repos = [FIXTURES / "updates", FIXTURES / "shop", FIXTURES / "bench_repo"]
    # the local path's records (its worker function in this process: no process pool start here)
    s = augment(AugmentConfig(sources=[str(r) for r in repos], out=str(tmp_path / "aug.jsonl")), progress=False,
                executor=LocalExecutor())
    cli("augment", *repos, "--out", tmp_path / "aug_ray.jsonl", "--executor", "ray", "--no-progress")
    lines = sorted((tmp_path / "aug.jsonl").read_text().splitlines())
    assert len(lines) == s["functions"] > 2
    assert sorted((tmp_path / "aug_ray.jsonl").read_text().splitlines()) == lines
    assert sorted(Path(str(tmp_path / "aug.jsonl") + ".files").read_text().splitlines()) == \
        sorted(Path(str(tmp_path / "aug_ray.jsonl") + ".files").read_text().splitlines())
    again = cli("augment", *repos, "--out", tmp_path / "aug_ray.jsonl", "--executor", "ray", "--no-progress")
    assert again.startswith("0 functions")                                    # resumed: nothing left

    for ex in ("local", "ray"):
        cli("corpus", "build", "--out", tmp_path / f"c_{ex}", "--root", FIXTURES / "bench_repo", "--root",
            FIXTURES / "shop", "--license", "MIT", "--workers", 1, "--executor", ex)
        cli("index", "api", "--services", "sqs", "--package", "packaging", "-o", tmp_path / f"api_{ex}",
            "--executor", ex)
        cli("index", "snippets", "--no-libraries", "--package", "numpy", "--no-dense", "-o", tmp_path / f"sn_{ex}",
            "--executor", ex)
    shards = sorted(p.name for p in (tmp_path / "c_local").glob("shard-*"))
    assert shards and all((tmp_path / "c_local" / n).read_bytes() == (tmp_path / "c_ray" / n).read_bytes()
                          for n in shards)
    rows = [list(sqlite3.connect(tmp_path / f"api_{ex}" / "api.sqlite").execute("SELECT * FROM entries ORDER BY rowid"))
            for ex in ("local", "ray")]
    assert rows[0] == rows[1]
    assert {r[4].split(".")[0] for r in rows[0]} == {"sqs", "packaging"}      # namespaces of both sources
    for name in ("snippets.jsonl", "summaries.json"):
        assert (tmp_path / "sn_local" / name).read_bytes() == (tmp_path / "sn_ray" / name).read_bytes()


def test_sharded_path_without_ray(local, tmp_path):
    """LocalExecutor drives the same shard/merge code in-process: records in the task order, one progress
    tick per repository; a rerun of the sharded score reuses the rows a stopped run left pending."""
    from groundcode.evaluation import harness, sharded
    d, tasks = local
    picked = list(read_jsonl(tasks))[::-1]         # shop's tasks first: the shards follow the task order
    cfg = harness.RunConfig(name="oracle")
    ticks = []
    n = sharded.run_sharded(picked, tmp_path / "s.jsonl", cfg, LocalExecutor(), oracle=True, progress=ticks.append)
    assert n == len(picked) and sum(ticks) == n and len(ticks) == 2
    got = list(read_jsonl(tmp_path / "s.jsonl"))
    assert [r["task_id"] for r in got] == [t["task_id"] for t in picked]
    assert [r["samples"][0]["completion"] for r in got] == [t["reference"] for t in picked]

    # a stopped run: the first two records written, a later one finished out of order (pending); the
    # rerun generates only the missing tasks, with one Generator for both repositories
    loc = list(read_jsonl(d / "local.jsonl"))
    out = tmp_path / "resumed.jsonl"
    for r in loc[:2]:
        append_jsonl(out, r)
    append_jsonl(Path(str(out) + ".pending"), loc[-1])
    run = harness.RunConfig(name="greedy", model="tiny", max_new_tokens=16)
    assert sharded.run_sharded(list(read_jsonl(tasks)), out, run, LocalExecutor()) == len(loc) - 3
    assert not Path(str(out) + ".pending").exists()
    key = lambda r: r["task_id"]  # noqa: E731
    assert sorted(map(same, read_jsonl(out)), key=key) == sorted(map(same, loc), key=key)

    rows = list(read_jsonl(d / "local_results.jsonl"))
    recs = list(read_jsonl(d / "local.jsonl"))
    stale = rows[0] | {"metrics": {"bleu4": [-1.0]}}          # pending row of a stopped run: reused as is
    append_jsonl(tmp_path / "r.jsonl.pending", stale | {"_key": sharded._row_key(recs[0])})
    sharded.score_sharded(tasks, d / "local.jsonl", tmp_path / "r.jsonl", tmp_path / "sum.json",
                          LocalExecutor(), codebleu=False)
    got = list(read_jsonl(tmp_path / "r.jsonl"))
    assert got[0] == stale and got[1:] == rows[1:]
    assert not (tmp_path / "r.jsonl.pending").exists()


def test_executor_choice_and_errors(monkeypatch, tmp_path):
    assert make_executor("local") is None
    assert shard_by([("a", 1), ("b", 2), ("a", 3)], lambda x: x[0]) == [[("a", 1), ("a", 3)], [("b", 2)]]
    with pytest.raises(GroundcodeError, match="local or ray"):
        make_executor("dask")
    with pytest.raises(GroundcodeError, match="needs --executor ray"):
        make_executor("local", address="ray://head:10001")
    import socket
    with socket.socket() as free:                           # a port nobody listens on: fails in seconds
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(GroundcodeError, match="cannot reach Ray at 127.0.0.1"):
        make_executor("ray", address=f"127.0.0.1:{port}")
    monkeypatch.setitem(sys.modules, "ray", None)          # as if ray were not installed
    with pytest.raises(GroundcodeError, match=r"pip install 'groundcode\[ray\]'"):
        make_executor("ray")
    append_jsonl(tmp_path / "t.jsonl", {"task_id": "r/a.py::f", "kind": "function", "repo": "r"})
    res = CliRunner().invoke(app, ["run", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "s.jsonl"),
                                   "--config", "c", "--executor", "ray"])
    assert res.exit_code == 1 and "groundcode[ray]" in res.output
