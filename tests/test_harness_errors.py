"""A benchmark run survives a task whose generation fails (evaluation/harness.py): found when a
guide's error on one task of 300 ended the whole per-analyzer run after 72 tasks. The failing
task's samples record the error; every other task of its chunk keeps its generations. A sample
also says why its triggers failed open (kind: reason, counted)."""
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


def test_a_sample_says_why_its_triggers_failed_open():
    from groundcode.decoding.guides.base import TriggerRecord
    from groundcode.evaluation.harness import _trigger_summary
    recs = [TriggerRecord(receiver="m", candidates=0, failed_open=True, reason="exports unknown", kind="import"),
            TriggerRecord(receiver="m", candidates=0, failed_open=True, reason="exports unknown", kind="import"),
            TriggerRecord(receiver="", candidates=0, failed_open=True, reason="star import", kind="name"),
            TriggerRecord(receiver="self", candidates=4, chosen="x"),
            {"receiver": "o", "candidates": 0, "failed_open": True}]          # an old record: no kind, no reason
    s = _trigger_summary(recs)
    assert s["triggers"] == 5 and s["failed_open"] == 4
    assert s["failed_open_why"] == {"import: exports unknown": 2, "name: star import": 1, "member: unsaid": 1}
