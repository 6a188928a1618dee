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


def test_trim_uses_the_engines_body_end_rule_lines_inside_strings_do_not_end_the_body():
    """Regression: scoring had its own rule and cut at a dedented line inside a string."""
    from groundcode.context import CodeContext
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.body_end import BodyEnd
    prefix = '    def f(self):\n        """Doc."""\n'
    comp = "        s = '''\nflush left\n'''\n        return s\n    def other(self):\n        pass\n"
    want = "        s = '''\nflush left\n'''\n        return s\n"
    assert scoring.trim_completion(FUNC, comp, prefix) == want
    # the engine's guide stops at the same place, character by character
    ctx = CodeContext(path="x.py", repo=".", before=prefix, lex_prefix=prefix, stop_indent=4)

    import numpy as np

    class _Vocab:
        texts, has_dot, has_newline = [""], np.array([False]), np.array([True])
    row = RowView(0, ctx, _Vocab())
    guide = BodyEnd(4)
    guide.reset(row)
    cut = None
    for ch in comp:
        row.text += ch
        guide.advance(row, 0)
        if guide.stop(row) is not None:
            cut = guide.stop(row).cut
            break
    assert comp[:cut] == want


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


def test_a_body_the_budget_cut_short_is_kept_up_to_its_last_whole_statement():
    """whole_statements (the `--whole-statements` metric): the line the budget left open is
    dropped, and a block header it would leave empty with it; a body that compiles, or whose
    error was written before the cut, stays as it is; nothing whole left is an empty body."""
    w = scoring.whole_statements
    prefix = "    def f(self):\n"
    assert w(FUNC, TEXT, "        y = 1\n        return y\n", prefix) == "        y = 1\n        return y\n"
    assert w(FUNC, TEXT, "        y = g(1,\n              2)\n        z = h(y, ", prefix) == \
        "        y = g(1,\n              2)\n"                          # a call over two lines stays whole
    assert w(FUNC, TEXT, "        y = 1\n        if y:\n            return fo(", prefix) == "        y = 1\n"
    assert w(FUNC, TEXT, "        y = 1\n        s = 'unterminat", prefix) == "        y = 1\n"
    assert w(FUNC, TEXT, "        y = = 1\n        z = 2\n        s = (", prefix) == \
        "        y = = 1\n        z = 2\n        s = ("                  # the model's own error stays
    assert w(FUNC, TEXT, "        return self.x(", prefix) == ""
    # a cursor inside a line: its first logical line starts before the completion
    assert w(DEREF, TEXT, "x\n        y = (", "    def f(self):\n        \"\"\"Doc.\"\"\"\n        return self.") \
        == "x\n"


def test_a_name_the_budget_cut_in_two_is_not_judged_a_hallucination():
    """cut_name / judged_messages: a length- or deadline-cut completion that ends right after an
    identifier (`num_bytes_` of `num_bytes_read`) may have been cut inside it; pylint's
    undefined-variable or no-member about that name on that line is not counted (the standing
    call cursors' three 'undefined names' of session 35 were such cuts). A name the model ended,
    a row it ended itself, or the same name on another line still counts."""
    body = "        y = num_bytes_\n"
    comp = "        y = num_bytes_"
    cut = scoring.cut_name(FUNC, TEXT, comp, body, "length")
    assert cut == [4, "num_bytes_"]                 # the body's last line in the spliced file
    msgs = ["4: undefined-variable: Undefined variable 'num_bytes_'",
            "3: undefined-variable: Undefined variable 'num_bytes_'",
            "4: undefined-variable: Undefined variable 'y2'",
            "4: no-name-in-module: No name 'num_bytes_' in module 'x'"]
    assert scoring.judged_messages(msgs, cut) == msgs[1:]
    assert scoring.cut_name(FUNC, TEXT, comp, body, "deadline") == cut
    assert scoring.cut_name(FUNC, TEXT, comp, body, "stop") is None         # the model ended it
    assert scoring.cut_name(FUNC, TEXT, comp + "\n", body, "length") is None   # ended by a newline
    assert scoring.cut_name(FUNC, TEXT, "        y = f(", "        y = f(\n", "length") is None
    # the completion went past the function's end: the cut was not at the body's last text
    assert scoring.cut_name(FUNC, TEXT, comp + "\n    def g(self):\n        retu", body, "length") is None
    # a member the cut ends in: the no-member message about it is dropped too
    mcut = scoring.cut_name(DEREF, TEXT, "x.upd", "x.upd\n", "length")
    assert mcut == [4, "upd"]
    assert scoring.judged_messages(["4: no-member: Instance of 'A' has no 'upd' member"], mcut) == []
    assert scoring.judged_messages(msgs, None) == msgs
