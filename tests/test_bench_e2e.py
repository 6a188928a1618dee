"""`bench build -> run -> score -> report` end to end on the fixture repository with a tiny model."""
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundcode.evaluation.cli import app
from groundcode.jsonl import read_jsonl, write_jsonl

FIXTURE = Path(__file__).parent / "fixtures" / "bench_repo"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from groundcode.models.tiny import build_tiny_model
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def invoke(*args):
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output + repr(res.exception)
    return res.output


def test_build_run_score_report(tmp_path, tiny_model):
    before = {p: p.read_bytes() for p in FIXTURE.rglob("*.py")}
    out = tmp_path / "b"
    invoke("build", FIXTURE, "--out", out, "--functions-per-repo", 4, "--methods-per-repo", 2,
           "--points-per-method", 2)
    tasks = list(read_jsonl(out / "tasks.jsonl"))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == {"function": 4, "dereference": 4}
    assert len(tasks) == 8

    samples = tmp_path / "samples.jsonl"
    for name, flag in (("baseline", "--no-monitor"), ("monitored", "--monitor")):
        invoke("run", out / "tasks.jsonl", "--out", samples, "--config", name, "--model", tiny_model, flag,
               "--schedule", "0.8:2", "--max-new-tokens", 24, "--limit", 2)
    invoke("run", out / "tasks.jsonl", "--out", samples, "--config", "reference", "--oracle", "--limit", 2)
    recs = list(read_jsonl(samples))
    assert sorted({r["config"] for r in recs}) == ["baseline", "monitored", "reference"]
    assert all(len(r["samples"]) == 2 for r in recs if r["config"] != "reference")
    # a row a guide ended says which (a guard's cut is told from the model's own end by it)
    ended = [s for r in recs if r["config"] != "reference" for s in r["samples"] if "stopped_by" in s]
    assert all(s["finish_reason"] == "stop" and s["stopped_by"] in
               {"body_end", "repetition", "line", "statement", "stop_string"} for s in ended), ended
    # resumable: a second run generates nothing new
    again = invoke("run", out / "tasks.jsonl", "--out", samples, "--config", "baseline", "--model", tiny_model,
                   "--no-monitor", "--schedule", "0.8:2", "--max-new-tokens", 24, "--limit", 2)
    assert "0 tasks generated" in again
    assert len(list(read_jsonl(samples))) == len(recs)

    invoke("score", out / "tasks.jsonl", samples, "--results", tmp_path / "results.jsonl",
           "--summary", tmp_path / "summary.json")
    summary = json.loads((tmp_path / "summary.json").read_text())
    ref = summary["reference"]["kinds"]
    # the reference is its own perfect sample: every similarity metric 1, lint clean, DepCov 1
    assert ref["function"]["metrics"]["exact_match"] == [1.0]
    assert ref["function"]["metrics"]["dep_coverage"] == [1.0]
    assert ref["function"]["metrics"]["success"] == [1.0]
    assert ref["dereference"]["metrics"]["nim"] == [1.0]
    for cfg in ("baseline", "monitored"):
        f = summary[cfg]["kinds"]["function"]
        assert f["tasks"] == 2 and f["samples"] == 4
        assert len(f["metrics"]["success"]) == 2          # score@1 and score@2
        assert f["metrics"]["success"][1] >= f["metrics"]["success"][0]
        assert 0.0 <= f["metrics"]["codebleu"][0] <= 1.0

    # --whole-statements: a body the budget cut mid-call is linted up to its last whole statement
    # too (success_whole); the same text ended by the model itself is not
    fn = next(t for t in tasks if t["kind"] == "function")
    cut = fn["reference"].rstrip("\n") + "\n" + " " * (fn["indent"] + 4) + "value = str("
    write_jsonl(tmp_path / "cut.jsonl", [{"task_id": fn["task_id"], "config": reason, "samples": [
        {"completion": cut, "finish_reason": reason}]} for reason in ("length", "stop")])
    invoke("score", out / "tasks.jsonl", tmp_path / "cut.jsonl", "--results", tmp_path / "cut_results.jsonl",
           "--summary", tmp_path / "cut_summary.json", "--whole-statements", "--no-codebleu", "--no-depcov")
    rows = {r["config"]: r for r in read_jsonl(tmp_path / "cut_results.jsonl")}
    assert rows["length"]["metrics"]["success"] == [0.0] and rows["length"]["metrics"]["success_whole"] == [1.0]
    assert rows["length"]["whole"] == [fn["reference"].rstrip("\n") + "\n"]
    assert rows["stop"]["metrics"]["success"] == rows["stop"]["metrics"]["success_whole"] == [0.0]

    invoke("report", tmp_path / "summary.json", "--out", tmp_path / "rep", "--results", tmp_path / "results.jsonl",
           "--tasks", out / "tasks.jsonl", "--baseline", "baseline")
    md = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "SuccRate" in md and "| monitored |" in md and "bench_repo" in md
    assert "data:image/png;base64," in html and "<table>" in html
    assert {p: p.read_bytes() for p in FIXTURE.rglob("*.py")} == before   # the repository was never written


def test_run_check_first_records_what_it_did(tmp_path, tiny_model):
    out = tmp_path / "b"
    invoke("build", FIXTURE, "--out", out, "--functions-per-repo", 2, "--methods-per-repo", 1,
           "--points-per-method", 1)
    samples = tmp_path / "samples.jsonl"
    invoke("run", out / "tasks.jsonl", "--out", samples, "--config", "check-first", "--model", tiny_model,
           "--monitor", "--names", "--check-first", "--max-new-tokens", 16, "--limit", 2, "--kinds", "function")
    recs = list(read_jsonl(samples))
    assert len(recs) == 2 and all(r["run"]["check_first"] for r in recs)
    for r in recs:
        (s,) = r["samples"]
        assert s["strategy"] in ("free", "rewritten", "unchanged", "kept free", "budget"), s
        assert 1 <= s["writes"] <= 3 and len(s["problems"]) <= s["writes"] and s["total_s"] >= s["check_s"]
        assert (s["strategy"] == "free") == (s["problems"][0] == 0), s
    res = CliRunner().invoke(app, ["run", str(out / "tasks.jsonl"), "--out", str(tmp_path / "x.jsonl"), "--config", "x",
                                   "--model", str(tiny_model), "--no-monitor", "--check-first"])
    assert res.exit_code != 0 and "--check-first" in res.output
