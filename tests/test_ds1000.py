"""DS-1000 harness: loading, the official test program, skipping, sandboxed execution, pass@k,
generation with the tiny model and the CLI. Problems are written here in DS-1000's record format
(numpy only), so no DS-1000 data is needed."""
from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from groundcode.evaluation import ds1000 as ds
from groundcode.evaluation import ds1000_samples as dss
from groundcode.evaluation.execution import SandboxConfig

CONTEXT = '''
import numpy as np
import copy


def generate_test_case(test_case_id):
    a = np.arange(6).reshape(2, 3)
    return a, a.sum(axis=0)


def exec_test(result, ans):
    np.testing.assert_array_equal(result, ans)
    return 1


exec_context = r"""
import numpy as np
a = test_input
[insert]
"""


def test_execution(solution: str):
    code = exec_context.replace("[insert]", solution)
    test_input, expected_result = generate_test_case(1)
    test_env = {"test_input": test_input}
    exec(code, test_env)
    assert exec_test(test_env["result"], expected_result)
'''

STRING_TEST = '''

def test_string(solution: str):
    import io, tokenize
    words = [t.string for t in tokenize.generate_tokens(io.StringIO(solution).readline)]
    assert "for" not in words
'''

PROMPT = "Problem:\nSum the columns of a.\nA:\n<code>\nimport numpy as np\na = np.arange(6).reshape(2, 3)\n</code>\nresult = ... # put solution in this variable\nBEGIN SOLUTION\n<code>\n"


def record(pid, library="Numpy", pert="Origin", ref="result = a.sum(axis=0)\n", context=CONTEXT):
    return {"prompt": PROMPT, "reference_code": ref, "code_context": context,
            "metadata": {"problem_id": pid, "library_problem_id": pid, "library": library,
                         "test_case_cnt": 1, "perturbation_type": pert, "perturbation_origin_id": pid}}


@pytest.fixture
def data(tmp_path):
    recs = [record(0), record(1, pert="Surface", context=CONTEXT + STRING_TEST),
            record(2, pert="Semantic", ref="result = sum(a[i] for i in range(2))\n", context=CONTEXT + STRING_TEST),
            record(3, library="Tensorflow", context="import tensorflow as tf\n" + CONTEXT)]
    path = tmp_path / "ds.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    return path


def test_load_reads_fields_and_the_modules_a_test_needs(data):
    ps = ds.load(data)
    assert [p.task_id for p in ps] == ["ds1000/0", "ds1000/1", "ds1000/2", "ds1000/3"]
    assert ps[1].perturbation == "Surface" and ps[0].library == "Numpy"
    assert ps[0].modules == ("copy", "numpy")
    assert "tensorflow" in ps[3].modules


def test_problems_whose_library_is_missing_are_skipped_and_counted(data):
    ps = ds.load(data)
    ps[0].modules += ("no_such_module_xyz",)
    run, skipped = ds.split_runnable(ps)
    assert skipped["ds1000/0"] == "missing: no_such_module_xyz"
    if "ds1000/3" in skipped:            # tensorflow is not installed here
        assert skipped["ds1000/3"] == "missing: tensorflow"
    assert {p.task_id for p in run} >= {"ds1000/1", "ds1000/2"}


def test_the_test_program_is_the_official_one(data):
    ps = ds.load(data)
    prog = ds.test_program(ps[0], "result = 1\n")
    assert prog == ps[0].code_context + "\ncode = 'result = 1\\n'\ntest_execution(code)\n\n"
    assert ds.test_program(ps[1], "x").endswith("test_execution(code)\ntest_string(code)\n")


@pytest.mark.parametrize("raw, code", [
    ("result = a.sum(0)\n</code>\nEND SOLUTION", "result = a.sum(0)\n"),
    ("result = 1\n```\ntext", "result = 1\n"),
    ("```python\nresult = 2\n```", "\nresult = 2\n"),
    ("x = 1\nEND SOLUTION\n", "x = 1"),
    ("plt.plot(x)\n# SOLUTION END\nplt.show()", "plt.plot(x)\n"),
])
def test_extract_code_cuts_like_the_official_postprocessing(raw, code):
    assert ds.extract_code(raw) == code


def test_execution_passes_references_and_fails_wrong_or_forbidden_code(data):
    ps = [p for p in ds.load(data) if p.library == "Numpy"]
    comps = {"ds1000/0": ["result = a.sum(axis=0)\n", "result = a.sum(axis=1)\n", "import time\ntime.sleep(30)\n"],
             "ds1000/1": ["result = a.sum(axis=0)\n</code>"],
             "ds1000/2": ["result = sum(a[i] for i in range(2))\n"]}      # test_string forbids `for`
    res = ds.execute(ps, comps, SandboxConfig(wall_s=4, cpu_s=4), workers=2)
    by = {r["task_id"]: r for r in res}
    assert by["ds1000/0"]["passed"] == [True, False, False]
    assert by["ds1000/0"]["timed_out"] == [False, False, True]
    assert by["ds1000/0"]["reasons"][1].startswith("exit 1: AssertionError")
    assert by["ds1000/1"]["passed"] == [True]
    assert by["ds1000/2"]["passed"] == [False]
    s = ds.summarize(res, {"ds1000/3": "missing: tensorflow"})
    assert s["by_library"]["Numpy"]["pass@1"] == pytest.approx((1 / 3 + 1 + 0) / 3, abs=1e-4)
    assert s["by_library"]["Numpy"]["pass@5"] is None          # no problem has 5 samples
    assert s["by_perturbation"]["Surface"]["pass@1"] == 1.0
    assert s["skipped"] == 1 and s["skipped_reasons"] == {"missing: tensorflow": 1}
    assert ds.failure_reasons(res)["Numpy"]["AssertionError"] == 2


def test_an_early_exit_inside_the_tests_exec_does_not_pass(data):
    ps = [p for p in ds.load(data) if p.task_id == "ds1000/0"]
    comps = {"ds1000/0": ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n", "result = a.sum(axis=0)\n"]}
    rec = ds.execute(ps, comps, SandboxConfig(wall_s=10, cpu_s=10), workers=2)[0]
    assert rec["passed"] == [False, False, True]
    assert rec["reasons"][:2] == ["exit 0 before the tests finished (no nonce in the output)"] * 2
    from groundcode.evaluation.execution import NONCE_EPILOGUE, judged_program
    prog = ds.test_program(ps[0], "x = 1\n", True)
    assert prog == judged_program(ds.test_program(ps[0], "x = 1\n"))     # judged, nonce last
    assert prog.endswith(NONCE_EPILOGUE)
    assert "groundcode-tests-done" not in prog                        # the nonce is in no file


def test_pass_at_5_uses_the_unbiased_estimator():
    rows = [{"library": "Numpy", "perturbation": "Origin", "passed": [True, False, False, False, False, False]},
            {"library": "Numpy", "perturbation": "Origin", "passed": [False] * 5}]
    s = ds.summarize(rows)
    assert s["overall"]["pass@1"] == pytest.approx((1 / 6 + 0) / 2, abs=1e-4)
    assert s["overall"]["pass@5"] == pytest.approx((5 / 6 + 0) / 2, abs=1e-4)


def test_select_is_seeded_and_per_library(data):
    ps = ds.load(data) * 1
    a = ds.select(ps, per_library=1, seed=3)
    assert a == ds.select(ps, per_library=1, seed=3)
    assert sorted(p.library for p in a) == ["Numpy", "Tensorflow"]
    assert [p.library for p in ds.select(ps, libraries=("numpy",))] == ["Numpy"] * 3


def test_generation_with_the_tiny_model_is_resumable_and_stops(tiny_lm, data, tmp_path):
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    gen = Generator(tiny_lm, MonitorConfig(enabled=False))
    ps = ds.load(data)[:2]
    out = tmp_path / "samples.jsonl"
    cfg = dss.DS1000RunConfig(name="plain", samples=2, temperature=0.8, max_new_tokens=12, batch=2)
    assert dss.generate(ps, out, cfg, generator=gen) == 2
    assert dss.generate(ps, out, cfg, generator=gen) == 0          # resumed: nothing left
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in recs] == ["ds1000/0", "ds1000/1"]
    assert all(len(r["samples"]) == 2 and r["prompt_tokens"] > 0 for r in recs)
    assert all(s["tokens"] <= 12 for r in recs for s in r["samples"])
    with pytest.raises(Exception, match="temperature"):
        dss.generate(ps, tmp_path / "x.jsonl", dss.DS1000RunConfig(samples=2), generator=gen)


def test_stop_strings_cut_the_completion():
    from types import SimpleNamespace
    from groundcode.decoding.guides.stop_strings import StopStrings
    g = StopStrings(ds.STOP_STRINGS)
    row = SimpleNamespace(text="")
    g.reset(row)
    for piece in ["result = 1\n</co", "de>\nmore"]:
        row.text += piece
        g.advance(row, 0)
    assert g.stop(row).cut == len("result = 1\n")


def test_cli_reference_run_reports_pass_at_1(data, tmp_path):
    from groundcode.cli import app
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["bench", "ds1000", str(data), "--reference", "--out", str(out),
                                 "--python", ds.sys.executable, "--libraries", "Numpy", "--wall-s", "20"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())["reference"]
    # problem 2's reference uses `for`, which its own test_string forbids: a real failure, reported
    assert summary["overall"]["problems"] == 3 and summary["overall"]["solved_any"] == 2
    assert "| Numpy | 3 | 0.667 | - |" in r.output
    again = CliRunner().invoke(app, ["bench", "ds1000", str(data), "--reference", "--out", str(out),
                                     "--python", ds.sys.executable, "--libraries", "Numpy"])
    assert again.exit_code == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 3     # nothing re-run


def test_generation_with_retrieval_prepends_snippets(tiny_lm, data, tmp_path):
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    from groundcode.retrieval.snippet import Snippet
    from groundcode.retrieval.snippet_index import SnippetIndex
    from groundcode.retrieval.snippet_retriever import RetrieverConfig, SnippetRetriever
    idx = SnippetIndex.build([Snippet("Sum the columns of an array", "a.sum(axis=0)\n", "t:1"),
                              Snippet("Read a csv file", "pd.read_csv(p)\n", "t:2")], tmp_path / "idx", dense=False)
    gen = Generator(tiny_lm, MonitorConfig(enabled=False))
    ps = ds.load(data)[:1]
    assert dss.query_text(ps[0]) == "Sum the columns of a."
    prompter = dss.retrieval_prompter(SnippetRetriever(idx, RetrieverConfig("bm25-desc")), 2, gen, 8)
    text, blocks, ids = prompter(ps[0])
    assert text == ps[0].prompt and ids[0] == idx.snippets[0].id
    assert blocks[-1].text == "# Sum the columns of an array\na.sum(axis=0)\n\n"      # the best one last
    out = tmp_path / "s.jsonl"
    cfg = dss.DS1000RunConfig(name="bm25-desc-k1", max_new_tokens=8, k=1, retriever="bm25-desc")
    dss.generate(ps, out, cfg, generator=gen, retriever=SnippetRetriever(idx, RetrieverConfig("bm25-desc")))
    plain = tmp_path / "p.jsonl"
    dss.generate(ps, plain, dss.DS1000RunConfig(max_new_tokens=8), generator=gen)
    rag_rec, plain_rec = (json.loads(p.read_text().splitlines()[0]) for p in (out, plain))
    assert rag_rec["retrieved"] == [idx.snippets[0].id] and plain_rec["retrieved"] == []
    assert rag_rec["prompt_tokens"] > plain_rec["prompt_tokens"]
