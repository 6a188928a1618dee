"""benchmarks/combine_paired.py: paired tables of disjoint task sets combined for the 0/1
metrics, against counts worked out by hand."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def cp():
    saved = list(sys.path)                         # (it puts benchmarks/ on the path for
    spec = importlib.util.spec_from_file_location("combine_paired", BENCH / "combine_paired.py")
    mod = importlib.util.module_from_spec(spec)    # paired_diff beside it: taken back after)
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path[:] = saved
    return mod


def _paired(n, rows):
    return {"a": "baseline", "b": "mon", "rows": [
        {"metric": m, "tasks": n, "baseline": a / n, "mon": b / n, "better": up, "worse": down}
        for m, a, b, up, down in rows]}


def test_counts_add_up_and_the_interval_is_over_every_task(cp):
    first = _paired(100, [("success_whole", 56, 76, 20, 0), ("call_error", 4, 2, 2, 0), ("edit_sim", 34.8, 34.2, 13, 24)])
    rest = _paired(107, [("success_whole", 60, 70, 12, 2), ("call_error", 5, 0, 5, 0), ("edit_sim", 30.1, 30.0, 3, 4)])
    doc = cp.combine([first, rest], resamples=2000)
    rows = {r["metric"]: r for r in doc["rows"]}
    assert set(rows) == {"success_whole", "call_error"}          # edit_sim is not 0/1 per task
    s = rows["success_whole"]
    assert (s["tasks"], s["baseline"], s["mon"], s["better"], s["worse"], s["equal"]) == (207, 116, 146, 32, 2, 173)
    assert s["diff"] == pytest.approx(30 / 207) and s["ci95"][0] < 30 / 207 < s["ci95"][1] and s["ci95"][0] > 0
    c = rows["call_error"]                                        # lower is better: its better are -1s
    assert (c["baseline"], c["mon"], c["better"], c["worse"]) == (9, 2, 7, 0)
    assert c["diff"] == pytest.approx(-7 / 207) and c["ci95"][1] <= 0 < -c["ci95"][0]


def test_hallucination_counts_and_mismatches(cp):
    h = {"a": "baseline", "b": "mon", "kinds": {"keyword": {"parameter": {"tasks": 100, "baseline": 3.0, "mon": 1.0, "better": 2, "worse": 0}}}}
    h2 = {"a": "baseline", "b": "mon", "kinds": {"keyword": {"parameter": {"tasks": 7, "baseline": 1.0, "mon": 1.0, "better": 1, "worse": 1}}}}
    (r,) = cp.combine([h, h2], resamples=500)["rows"]
    assert (r["tasks"], r["baseline"], r["mon"], r["better"], r["worse"], r["parts"]) == (107, 4, 2, 3, 1, [100, 7])
    with pytest.raises(SystemExit):                               # other configurations
        cp.combine([h, dict(h2, b="other", kinds={"keyword": {"parameter": dict(h2["kinds"]["keyword"]["parameter"], other=1.0)}})])
    with pytest.raises(SystemExit):                               # not a count of 0/1 tasks
        cp.combine([_paired(10, [("nim", 2.5, 3, 1, 0)])])
