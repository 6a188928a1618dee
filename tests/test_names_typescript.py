"""The names monitor in TypeScript (issue 40): tree-sitter's reading of loads and bindings, and
in decoding a name that no scope holds is redone as one the language server lists, while
globals, parameters, locals and the file's names pass. Fixture: tests/fixtures/tsshop."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.context import cursor_context
from groundcode.languages.typescript_scope import file_names, read

REPO = Path(__file__).parent / "fixtures" / "tsshop"


def test_read_tells_loads_from_bindings():
    code = ("function h(p: number, q = dflt, ...rest: R[]): void {\n"
            "  const {d, e: f, ...g} = obj;\n"
            "  for (const [i, j] of items) { console.log(i, j, unknownName); }\n"
            "  try {} catch (err) {}\n"
            "  const o = { key: val, short };\n"
            "  let fn = (a1, {b1}) => a1 + b1;\n"
            "  w = 5;\n"
            "  const inc = foo(\n")
    start = code.index("  const {d")
    u = read(code, start, len(code))
    loads = [n for n, _ in u.loads]
    assert loads == ["obj", "items", "console", "i", "j", "unknownName", "val", "short", "a1", "b1", "w"]
    assert {"d", "f", "g", "i", "j", "err", "o", "fn", "a1", "b1"} <= u.binds
    assert "key" not in loads and "log" not in loads                    # members and keys
    assert code[u.open_at:].startswith("inc")                           # unfinished: judged later
    for name, off in u.loads:
        assert code[off:off + len(name)] == name


def test_file_names_leaves_out_members():
    assert {"Registry", "item"} <= file_names("x.register(item); new Registry()")
    assert "register" not in file_names("x.register(item)")


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")


def _run(tiny_lm, target, max_new=40):
    from scripted import scripted_lm, planted
    from groundcode.api import Generator
    ctx = cursor_context(REPO / "src" / "cart.ts", 9, 0, REPO)
    with Generator(scripted_lm(tiny_lm, planted(target)), MonitorConfig(enabled=True, names=True,
                                                                        reproducible=True)) as gen:
        return gen.run([ctx], SamplingConfig(max_new_tokens=max_new))[0][0]


def test_an_invented_name_is_redone_as_one_in_scope(ts, tiny_lm):
    out = _run(tiny_lm, "    const n = itme;\n")
    recs = [t for t in out.triggers if t.kind == "name"]
    assert len(recs) == 1 and recs[0].rolled_back and not recs[0].failed_open, recs
    assert "itme" not in out.completion and recs[0].chosen != "itme", out.completion


def test_globals_parameters_and_the_files_names_pass(ts, tiny_lm):
    target = "    const n = Math.max(item.length, 2);\n    console.log(n, Registry, JSON);\n"
    out = _run(tiny_lm, target, max_new=60)
    assert out.completion.startswith(target.rstrip("\n")), out.completion
    assert not [t for t in out.triggers if t.kind == "name"], out.triggers     # none missing, none left open
