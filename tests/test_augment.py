"""Corpus augmentation (training/augment.py): ToolGen's Figure 4 on a fixture class; resume."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundcode.training.augment import AugmentConfig, augment, augment_file, candidates, insert_marks

FIX = Path(__file__).parent / "fixtures" / "updates"
OPTS = {"max_file_bytes": 300_000, "min_doc_words": 3, "max_body_lines": 30, "exact": False}


def _by_scope(records):
    return {r["scope"]: r for r in records}


def test_candidates_skip_keywords_builtins_dunders_and_receiver():
    body = "    for u in self.items:\n        print(len(u), u.__class__, True)\n"
    names = [n for _, _, n in candidates(body, 10, receiver="self")]
    assert names == ["u", "items", "u", "u"]


def test_insert_marks_at_columns():
    assert insert_marks("ab cd\nef\n", [(1, 3), (2, 0)]) == "ab <COMP>cd\n<COMP>ef\n"


@pytest.mark.parametrize("exact", [False, True])
def test_figure4(exact):
    records, counts = augment_file(str(FIX), "updates", "updates/registry.py", OPTS | {"exact": exact})
    recs = _by_scope(records)
    assert set(recs) == {"UpdateRegistry.register_updates", "UpdateRegistry.count"}  # docstring filter
    r = recs["UpdateRegistry.register_updates"]
    body = r["augmented"][r["body_offset"]:]
    assert body == ("        for update in <COMP>updates:\n"
                    "            self.<COMP>_registered_updates.<COMP>add(<COMP>update)\n")
    assert [p[2] for p in r["positions"]] == ["updates", "_registered_updates", "add", "update"]
    assert r["original"] == r["augmented"].replace("<COMP>", "")
    assert r["signature"] == "    def register_updates(self, *updates):"
    assert r["docstring"] == "Register every given update with this registry."
    # `total` is defined at this point of the function, never before it: not marked; `len` is a builtin
    c = recs["UpdateRegistry.count"]
    assert [p[2] for p in c["positions"]] == ["_registered_updates", "total"]
    assert counts["marked"] == 6 and counts["functions"] == 2


def test_augment_writes_stats_and_resumes(tmp_path):
    out = tmp_path / "aug.jsonl"
    cfg = AugmentConfig(sources=[str(FIX)], out=str(out), workers=1)
    s1 = augment(cfg, progress=False)
    assert s1["functions"] == 2 and s1["marked"] == 6 and s1["hit_rate"] > 0
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["repo"] == "updates"
    stats = json.loads(Path(str(out) + ".stats.json").read_text())
    assert stats["functions_per_s"] > 0 and "loadavg" in stats
    s2 = augment(cfg, progress=False)            # everything already done: nothing appended
    assert s2["functions"] == 0 and s2["files_skipped_resume"] >= 1
    assert len(out.read_text().splitlines()) == 2


def test_cli_augment(tmp_path):
    from typer.testing import CliRunner
    from groundcode.cli import app
    out = tmp_path / "a.jsonl"
    res = CliRunner().invoke(app, ["augment", str(FIX), "--out", str(out), "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "2 functions" in res.output and "6 <COMP>" in res.output
    bad = CliRunner().invoke(app, ["augment", str(tmp_path / "missing"), "--out", str(out)])
    assert bad.exit_code == 2 and "not found" in bad.output
