"""A benchmark run survives a task whose generation fails (evaluation/harness.py): found when a
guide's error on one task of 300 ended the whole per-analyzer run after 72 tasks. The failing
task's samples record the error; every other task of its chunk keeps its generations."""
from __future__ import annotations

from types import SimpleNamespace

from groundcode.errors import GroundcodeError
from groundcode.evaluation.harness import _generations


class _Gen:
    def __init__(self):
        self.calls = 0

    def run(self, ctxs, sc, n=1):
        self.calls += 1
        if "bad" in ctxs:
            raise GroundcodeError("AttributeError: boom\nsecond line")
        return [[SimpleNamespace(ctx=c, j=j) for j in range(n)] for c in ctxs]


def test_one_failing_task_is_recorded_and_the_chunk_goes_on():
    gen = _Gen()
    out = _generations(gen, ["a", "bad", "c"], None, 2)
    assert [g.ctx for g in out[0]] == ["a", "a"] and [g.ctx for g in out[2]] == ["c", "c"]
    assert out[1] == ["AttributeError: boom", "AttributeError: boom"]
    assert gen.calls == 4                       # the chunk, then each task alone
    assert _generations(_Gen(), ["bad"], None, 1) == [["AttributeError: boom"]]
    assert [g.ctx for g in _generations(_Gen(), ["a"], None, 1)[0]] == ["a"]
