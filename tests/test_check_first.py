"""Check first, constrain what fails (check_first.py, checkers.py): a free body judged whole,
rewritten with the monitors on from its first failing line, never worse by the checker's count."""
from __future__ import annotations

import shutil

import pytest

from groundcode.check_first import Problem, check_first, cut_at
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.context import cursor_context

FREE = "    x = 1\n    total = totl + x\n    return total\n"   # the free write: `totl` invented
AGAIN = "    total = totl + x\n    return total\n"            # the script after a cut at its line


def _repo(tmp_path):
    (tmp_path / "app.py").write_text("LIMIT = 10\n\n\ndef run(items):\n    \n")
    return tmp_path


def _generator(tiny_lm, scripts: list[str]):
    """A scripted model that writes scripts[k] in its k-th generation (the rewrite starts anew)."""
    from scripted import planted, scripted_lm
    from groundcode.api import Generator
    calls = {"k": 0, "last": None}
    rules = [planted(s) for s in scripts]

    def pick(text: str):
        if text == "" and calls["last"] not in (None, ""):
            calls["k"] = min(calls["k"] + 1, len(rules) - 1)
        calls["last"] = text
        return rules[calls["k"]](text)
    return Generator(scripted_lm(tiny_lm, pick), MonitorConfig(enabled=True, names=True))


def _invented(ctx, completion: str) -> list:
    """A checker that flags every `totl` (what pylint would call undefined-variable)."""
    at = completion.find("totl")
    return [Problem(at, "undefined-variable", "totl")] if at >= 0 else []


def test_cut_keeps_the_whole_lines_before_the_problem():
    assert cut_at(FREE, Problem(FREE.index("totl"), "x")) == "    x = 1\n"
    assert cut_at(FREE, Problem(2, "x")) == ""


def test_a_failing_line_is_rewritten_with_the_monitors_on_and_the_lines_before_kept(tiny_lm, tmp_path):
    repo = _repo(tmp_path)
    ctx = cursor_context(repo / "app.py", 5, 0, repo)
    with _generator(tiny_lm, [FREE, AGAIN]) as gen:
        out = check_first(gen, ctx, SamplingConfig(max_new_tokens=40), _invented)
    assert out.problems[0] and out.writes == 2, out
    assert out.strategy == "rewritten" and out.problems[-1] == [], out
    text = out.generation.completion
    assert text.startswith("    x = 1\n    total = ") and "totl" not in text, text
    assert any(t.kind == "name" and t.rolled_back for t in out.generation.triggers), out.generation.triggers
    assert out.check_s >= 0 and out.total_s >= out.check_s + out.free_s and out.free_s > 0


def test_text_the_checker_accepts_is_the_free_text(tiny_lm, tmp_path):
    repo = _repo(tmp_path)
    ctx = cursor_context(repo / "app.py", 5, 0, repo)
    good = "    x = 1\n    total = LIMIT + x\n    return total\n"
    with _generator(tiny_lm, [good]) as gen:
        out = check_first(gen, ctx, SamplingConfig(max_new_tokens=40), _invented)
        free = gen.view(monitor=MonitorConfig(enabled=False)).run([ctx], SamplingConfig(max_new_tokens=40))[0][0]
    assert out.strategy == "free" and out.writes == 1 and out.generation.completion == free.completion


def test_a_rewrite_the_checker_finds_worse_is_dropped(tiny_lm, tmp_path):
    repo = _repo(tmp_path)
    ctx = cursor_context(repo / "app.py", 5, 0, repo)

    def fussy(ctx, completion):                 # the rewrite has more problems than the free text
        return [Problem(i, "x") for i, ch in enumerate(completion) if ch == "\n"][: 1 + (completion != free)]
    with _generator(tiny_lm, [FREE, AGAIN]) as gen:
        free = gen.view(monitor=MonitorConfig(enabled=False)).run([ctx], SamplingConfig(max_new_tokens=40))[0][0]
    free = free.completion
    with _generator(tiny_lm, [FREE, AGAIN]) as gen:
        out = check_first(gen, ctx, SamplingConfig(max_new_tokens=40), fussy)
    # the greedy rewrite is worse; the cut is then written again sampled, worse too (a text
    # written twice is judged once); the free text stays
    assert out.writes == 3 and out.strategy == "kept free" and out.generation.completion == free, out
    assert 2 <= len(out.problems) <= 3 and all(len(p) > len(out.problems[0]) for p in out.problems[1:])


def test_the_python_checker_finds_an_invented_name_in_the_completion_only(tmp_path):
    from groundcode.checkers import python_checker
    repo = _repo(tmp_path)
    ctx = cursor_context(repo / "app.py", 5, 0, repo)
    before = (repo / "app.py").read_bytes()
    found = python_checker(repo)(ctx, FREE)
    assert [(p.offset, p.code) for p in found] == [(FREE.index("    total"), "undefined-variable")], found
    assert python_checker(repo)(ctx, "    return LIMIT\n") == []
    assert (repo / "app.py").read_bytes() == before


def test_the_typescript_checker_finds_a_missing_member_in_the_completion_only(tmp_path):
    from pathlib import Path

    from groundcode.analysis import lsp_servers
    from groundcode.checkers import typescript_checker
    from groundcode.context import CodeContext
    lsp_servers.install("typescript")              # the pinned compiler (as tests/test_tsc_judge.py)
    pkg = tmp_path / "tsshop" / "package"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tsshop", pkg)
    text = (pkg / "src" / "cart.ts").read_text()
    good = "return this.registry.size;"
    at = text.index(good)
    ctx = CodeContext(path=pkg / "src" / "cart.ts", repo=pkg, before=text[:at], after=text[at + len(good):],
                      kind="body")
    check = typescript_checker(pkg)
    bad = "return this.registry.sizes;"
    found = check(ctx, bad)
    assert [(p.offset, p.code) for p in found] == [(bad.index("sizes"), "TS2551")], found
    assert check(ctx, good) == []
    # a body that leaves a brace open breaks the file past its end: the error counts, at its end
    cut = "if (this.registry.size > 0) {\n    return this.registry.size;"
    found = check(ctx, cut)
    assert found and all(p.offset == len(cut) for p in found), found
    assert "TS1005" in {p.code for p in found}, found
    assert (pkg / "src" / "cart.ts").read_text() == text


def test_checker_for_picks_the_language_and_says_what_is_missing(tmp_path):
    from groundcode.checkers import checker_for
    from groundcode.context import CodeContext
    from groundcode.errors import GroundcodeError
    (tmp_path / "a.ts").write_text("export const a = 1;\n")
    with pytest.raises(GroundcodeError, match="no tsconfig.json"):
        checker_for(CodeContext(path=tmp_path / "a.ts", repo=tmp_path, before=""))
    with pytest.raises(GroundcodeError, match="Python and TypeScript"):
        checker_for(CodeContext(path=tmp_path / "a.rs", repo=tmp_path, before=""))
    assert callable(checker_for(CodeContext(path=tmp_path / "a.py", repo=tmp_path, before="")))


def test_the_ty_checker_finds_what_the_completion_invents_and_not_what_the_file_had(tmp_path):
    from groundcode.analysis import lsp_servers
    from groundcode.checkers import ty_checker
    lsp_servers.install("ty")                         # the pinned checker (a user install)
    repo = _repo(tmp_path)
    (repo / "app.py").write_text("LIMIT = 10\nold = missing_before\n\n\ndef run(items):\n    \n")
    ctx = cursor_context(repo / "app.py", 6, 0, repo)
    check = ty_checker(repo)
    text = "    x = len(items, 2)\n    total = totl + x\n    return total.upper_bound\n"
    found = [(p.offset, p.code) for p in check(ctx, text)]
    assert found == [(text.index("2)"), "too-many-positional-arguments"),
                     (text.index("totl"), "unresolved-reference")], found   # `missing_before`: the file's
    assert check(ctx, "    return LIMIT + len(items)\n") == []
    assert (repo / "app.py").read_text().startswith("LIMIT = 10\nold = missing_before")
