"""The member monitor's TypeScript gaps found off the tuned set (issue 40, item 5), each on its
own fixture (tests/fixtures/tsgaps): after a member, the optional call `obj.f?.(…)` and index
`obj.a?.[k]` go through (`?.` then `(`/`[` writes no member); `Object.prototype`'s members
(`this.hasOwnProperty`), which TypeScript's completions never list, are legal on any object; a
cut inside an arrow function's return type (`(x): Ns.` without its `=>`) stays a type position,
so the answer lists the namespace's types; and the benchmark's packages give TypeScript's
server the configuration the compiler checks them with (ts_packages.server_config: Node-like
ambient types, paths). Needs the `typescript` analyzer (scripts/test installs it)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.analysis.base import MembersQuery
from groundcode.analysis.lsp_client import LspAnalyzer
from groundcode.analysis.lsp_messages import OBJECT_MEMBERS
from groundcode.context import CodeContext
from groundcode.languages.typescript_blocks import close_line

REPO = Path(__file__).parent / "fixtures" / "tsgaps"
HOOKS = REPO / "src" / "hooks.ts"


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")


def _cut(text: str, marker: str, path: Path = HOOKS, repo: Path = REPO) -> CodeContext:
    """The file cut right after `marker` (its first occurrence), the rest of that line gone."""
    k = text.index(marker) + len(marker)
    return CodeContext(path=path, repo=repo, before=text[:k], after=text[text.index("\n", k):],
                       scope="Hooks", starts_at_line=False)


def _written(tiny_lm, ctx: CodeContext, text: str):
    """What the monitored tiny model writes at `ctx` when a scripted preference plants `text`."""
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
    from groundcode.decoding.vocab import VocabIndex
    from groundcode.models.load import LoadedModel

    from scripted import ScriptedLM, planted
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    model = ScriptedLM(tiny_lm, vocab, planted(text + "\n"))
    with Generator(LoadedModel(model, tiny_lm.tokenizer, "scripted", "cpu", "float32"),
                   MonitorConfig(enabled=True), prompt=PromptConfig(heal=False)) as gen:
        return gen.run([ctx], SamplingConfig(max_new_tokens=24, stop="line"))[0][0]


def test_an_optional_call_or_index_after_a_member_is_written(ts, tiny_lm):
    """`this.onDone?.(n)` and `this.items?.[0]`: the member is complete at `?`, and the `?.`
    after it opens a call or an index, not a member — written as planted, nothing rolled
    back; the `?.` trigger is narrowed (not failed open) and records no member."""
    text = HOOKS.read_text()
    for marker, rest, receiver in (("    this.", "onDone?.(n);", "this.onDone"),
                                   ("    const first = this.", "items?.[0];", "this.items")):
        out = _written(tiny_lm, _cut(text, marker), rest)
        assert out.completion.strip() == rest, (marker, out.completion)
        (opt,) = [t for t in out.triggers if t.receiver == receiver]
        assert not opt.failed_open and not opt.rolled_back and opt.chosen == "", opt
        assert not any(t.rolled_back for t in out.triggers)
    # a name after `?.` is still a member: `this.items?.nope` is steered to one of the array's
    out = _written(tiny_lm, _cut(text, "    const first = this."), "items?.nope;")
    (opt,) = [t for t in out.triggers if t.receiver == "this.items"]
    assert opt.constrained and opt.chosen not in ("nope", "", None), opt


def test_object_prototype_members_are_legal_on_any_object(ts, tiny_lm):
    """TypeScript lists no `hasOwnProperty` after `this.` (nor after a function-typed member);
    the answer has Object.prototype's members all the same — hidden (never steered to), like
    Python's dunders — and `this.hasOwnProperty("count")` is written as planted."""
    text = HOOKS.read_text()
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        for marker, receiver in (("    if (this.", "this"), ("    this.onDone?.", "this.onDone")):
            r = a.ask(MembersQuery(_cut(text, marker).splice(""), receiver, (marker,))).result(30)
            assert r.failed is None and OBJECT_MEMBERS <= r.names and OBJECT_MEMBERS <= r.hidden, r
        assert "count" in r.names or "apply" in r.names
    out = _written(tiny_lm, _cut(text, "    if (this."), 'hasOwnProperty("count")) {')
    assert out.completion.strip().startswith('hasOwnProperty("count"))'), out.completion
    (t,) = [t for t in out.triggers if t.receiver == "this"]
    assert t.chosen == "hasOwnProperty" and not t.rolled_back and not t.failed_open


def test_a_cut_arrow_return_type_stays_a_type_position(ts):
    """`xs.map((x): Shapes.` with the rest of the line cut: the analyzer's view completes the
    arrow (` => undefined`, and the type arguments' `>`), so the answer lists Shapes' types
    (Box, Pair), not its values (make, origin); a ternary's `(x) : obj.` is left an expression."""
    assert close_line("return xs.map((x): Shapes.", 0, "", "\n") == " => undefined)"
    assert close_line("const f = async <T>(a: T, b): Shapes.Box<Shapes.", 0, "", "\n") == "> => undefined"
    assert close_line("return ok ? (x) : Shapes.", 0, "", "\n") == ""
    assert close_line("return f(x): Shapes.", 0, "", "\n") == ""        # a call: no arrow there
    assert close_line("xs.map((x): Shapes.", 0, "", " => x);\n") == ""     # the user's line goes on
    text = HOOKS.read_text()
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        r = a.ask(MembersQuery(_cut(text, "(x): Shapes.").splice(""), "Shapes", ("t",))).result(30)
        assert r.failed is None and {"Box", "Pair"} <= r.names and not {"make", "origin"} & r.names, r
        nested = text.replace("Shapes.Box<number>", "Shapes.Box<Shapes.Pair>")
        r = a.ask(MembersQuery(_cut(nested, "(x): Shapes.Box<Shapes.").splice(""), "Shapes", ("u",))).result(30)
        assert r.failed is None and {"Box", "Pair"} <= r.names and not {"make", "origin"} & r.names, r


def test_the_server_reads_the_configuration_the_compiler_checks(ts, tmp_path):
    """A benchmark package is checked with `tsc -p tsconfig.recipe.json`; TypeScript's server
    reads only the nearest tsconfig.json. ts_packages.server_config writes the recipe's there
    too: the ambient `gcHost` its `types` names (as the recipe's `types: ["node"]` names Node's)
    is known to the server — without it the answer was empty. A recipe that extends the
    package's own tsconfig.json extends its kept copy (no configuration extends itself)."""
    from groundcode.evaluation.tsc_judge import compiler
    from groundcode.evaluation.ts_packages import server_config
    import subprocess
    pkg = tmp_path / "package"
    shutil.copytree(REPO, pkg)
    (pkg / "tsconfig.recipe.json").unlink()
    recipe = {"default_tsconfig": {"compilerOptions": json.loads((REPO / "tsconfig.json").read_text())["compilerOptions"]}}
    entry = {"tsconfig": None, "tsconfig_overrides": {"typeRoots": ["./types"], "types": ["gchost"]}, "include": ["src"]}
    text = (pkg / "src" / "hooks.ts").read_text()
    ctx = _cut(text, "this.count + gcHost.", pkg / "src" / "hooks.ts", pkg)
    with LspAnalyzer(pkg, "typescript", deadline_s=30, cold_deadline_s=30) as a:      # the package's own
        r = a.ask(MembersQuery(ctx.splice(""), "gcHost", ("own",))).result(30)
        assert r.failed == "empty", r
    server_config(pkg, entry, recipe)
    assert (pkg / "tsconfig.json").read_text() == (pkg / "tsconfig.recipe.json").read_text()
    with LspAnalyzer(pkg, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        r = a.ask(MembersQuery(ctx.splice(""), "gcHost", ("recipe",))).result(30)
        assert r.failed is None and {"uptime", "pid"} <= r.names, r
    # the recipe extends the package's own tsconfig.json: both extend its copy
    shutil.copyfile(REPO / "tsconfig.json", pkg / "tsconfig.json")
    server_config(pkg, dict(entry, tsconfig="tsconfig.json"), recipe)
    assert json.loads((pkg / "tsconfig.package.json").read_text()) == json.loads((REPO / "tsconfig.json").read_text())
    for name in ("tsconfig.json", "tsconfig.recipe.json"):
        assert json.loads((pkg / name).read_text())["extends"] == "./tsconfig.package.json"
    done = subprocess.run([str(compiler()), "--noEmit", "--pretty", "false", "-p", "tsconfig.recipe.json"],
                          cwd=pkg, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout


def test_a_call_cut_open_above_its_arguments_keeps_the_class_whole(ts):
    """`this.|setLimit(` with its arguments and `)` on the lines below, inside a callback
    (`on("x", () => {`): with the rest of the line cut, that `)` closed `on(` early and the class
    ended there for the parser, so the members declared after the method were not in the answer
    (pacer's `this.setOptions(` in the held-out audit: its one false block). The analyzer's view
    gives the cut call its `(`; a `)` of the next lines that closes the line's own call is left
    to it rather than closed twice."""
    assert close_line("class R {\n  m() {\n    on('x', () => {\n      this.", 0, "",
                      "\n        1,\n      );\n    });\n  }\n}\n") == "("
    assert close_line("class R {\n  m() {\n    f(this.", 0, "", "\n      y)\n  }\n}\n") == ""
    assert close_line("class R {\n  m() {\n    f(a, g(this.", 0, "", "\n      y)\n  }\n}\n") == ")"
    assert close_line("class R {\n  m() {\n    f(this.", 0, "", "\n  }\n}\n") == ")"
    wire = ('  wire(on: (e: string, f: () => void) => void): void {\n    on("x", () => {\n'
            '      this.setLimit(\n        1,\n      );\n    });\n  }\n\n'
            '  setLimit(n: number): void { this.count = n; }\n')
    text = HOOKS.read_text().replace("  host(): number {", wire + "\n  host(): number {")
    with LspAnalyzer(REPO, "typescript", deadline_s=30, cold_deadline_s=30) as a:
        r = a.ask(MembersQuery(_cut(text, "      this.").splice(""), "this", ("w",))).result(30)
        assert r.failed is None and {"setLimit", "host", "count"} <= r.names, r
