"""Scoring's text handling: where a completion ends, how it is spliced, how results aggregate."""
from groundcode.evaluation import scoring

TEXT = "class A:\n    def f(self):\n        \"\"\"Doc.\"\"\"\n        return self.x\n\n    def g(self):\n        pass\n"
FUNC = {"kind": "function", "line": 4, "col": 0, "indent": 4, "def_line": 2, "end_line": 4}
DEREF = {"kind": "dereference", "line": 4, "col": 20, "indent": 4, "def_line": 2, "end_line": 4}


def test_trim_stops_at_the_next_definition():
    comp = "        y = 1\n\n        return y\n    def other(self):\n        pass\n"
    assert scoring.trim_completion(FUNC, comp) == "        y = 1\n\n        return y\n"
    assert scoring.trim_completion(FUNC, "    def other(self):\n") == ""
    assert scoring.trim_completion(FUNC, "\n\n") == ""
    # a dereference completion starts mid-line: its first line is never a dedent
    assert scoring.trim_completion(DEREF, "x\n    def h(self):\n") == "x\n"


def test_splice_replaces_the_function_body_only():
    new, first, last = scoring.splice(FUNC, TEXT, "        return 42\n        # done\n")
    assert new == ("class A:\n    def f(self):\n        \"\"\"Doc.\"\"\"\n        return 42\n        # done\n"
                   "\n    def g(self):\n        pass\n")
    assert (first, last) == (2, 5)
    new, first, last = scoring.splice(DEREF, TEXT, "y + 1\n")
    assert new.splitlines()[3] == "        return self.y + 1"
    assert (first, last) == (2, 4)


def test_summarize_scores_at_k_and_counts():
    rows = [
        {"task_id": "a", "config": "c", "kind": "function", "repo": "r", "completions": ["x", "", "y"],
         "metrics": {"success": [1.0, 0.0, 0.0], "bleu4": [0.5, 0.0, 0.25]}},
        {"task_id": "b", "config": "c", "kind": "function", "repo": "r", "completions": ["x", "y", "z"],
         "metrics": {"success": [0.0, 0.0, 0.0], "bleu4": [0.1, 0.2, 0.3]}},
    ]
    s = scoring.summarize(rows)["c"]
    f = s["kinds"]["function"]
    assert f["tasks"] == 2 and f["samples"] == 6 and f["empty_completions"] == 1
    # success: task a pass@k = 1/3, 2/3, 1; task b 0 -> means 1/6, 1/3, 1/2
    assert [round(v, 6) for v in f["metrics"]["success"]] == [round(1 / 6, 6), round(1 / 3, 6), 0.5]
    assert f["counts"]["success"] == {"correct": 1, "samples": 6}
    # bleu4 score@3 = mean of the maxima 0.5 and 0.3
    assert abs(f["metrics"]["bleu4"][2] - 0.4) < 1e-9
    assert abs(s["repos"]["r"]["function"]["bleu4"] - (0.75 + 0.6) / 6) < 1e-9


def test_jsonl_resume_after_a_torn_line(tmp_path):
    from groundcode.evaluation.jsonl import append_jsonl, read_jsonl
    p = tmp_path / "s.jsonl"
    append_jsonl(p, {"task_id": "a"})
    with open(p, "a") as f:
        f.write('{"task_id": "b", "samp')          # a writer killed mid-line
    append_jsonl(p, {"task_id": "c"})
    assert [r["task_id"] for r in read_jsonl(p)] == ["a", "c"]
