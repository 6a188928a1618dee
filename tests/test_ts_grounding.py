"""TypeScript through the product (issue 32): a .ts file's context speaks TypeScript (its lexer,
receivers and scope from languages/typescript.py), the dereference monitor asks TypeScript's
server (chosen for the file even where the configured analyzer is Jedi), a member name after
`this.registry.` is one of Registry's (no Python dunders let through), and Python-only guides
(keyword arguments) are not built for it. Fixture: tests/fixtures/tsshop; the bundled tiny model."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.api import Generator
from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
from groundcode.context import cursor_context
from groundcode.languages import PYTHON, TYPESCRIPT, language_of
from groundcode.languages.typescript import enclosing_scope

REPO = Path(__file__).parent / "fixtures" / "tsshop"


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")


def test_a_ts_context_speaks_typescript():
    ctx = cursor_context(REPO / "src" / "cart.ts", 9, 25, REPO)
    assert ctx.language is TYPESCRIPT and language_of("a/b.py") is PYTHON
    assert ctx.lex_prefix == ctx.before                 # the lexer starts at the file's start
    assert enclosing_scope(ctx.before)[0] == "Cart.add"
    assert TYPESCRIPT.receiver_before(ctx.before, len(ctx.before) - 1) == "this.registry"
    assert not TYPESCRIPT.could_bind("    ")             # a member after a dot is never declared


def test_members_after_a_dot_come_from_typescripts_server(ts, tiny_lm):
    with Generator(tiny_lm, MonitorConfig(enabled=True)) as gen:     # configured: Jedi
        ctx = cursor_context(REPO / "src" / "cart.ts", 9, 25, REPO)
        assert gen.analyzer_for(ctx).name == "typescript"
        out = gen.run([ctx], SamplingConfig(max_new_tokens=6))[0][0]
        trig = [t for t in out.triggers if t.receiver == "this.registry"]
        assert trig and not trig[0].failed_open and trig[0].candidates == 3 + 7   # register, size, latestUpdate + Object.prototype's 7
        assert trig[0].chosen in ("register", "size", "latestUpdate")
        assert out.completion.startswith(trig[0].chosen)


def test_python_only_guides_are_not_built_for_typescript(tiny_lm, tmp_path):
    # Python's keyword monitor is Python's; a TypeScript file's calls get the arity monitor,
    # a JavaScript file's neither (the compiler takes its parameters as optional)
    from groundcode.decoding.guides.registry import FACTORIES, GuideSpec
    (tmp_path / "a.js").write_text("f(1);\n")
    with Generator(tiny_lm, MonitorConfig(enabled=True)) as gen:
        ts_ctx = cursor_context(REPO / "src" / "cart.ts", 9, 25, REPO)
        py_ctx = cursor_context(Path(__file__).parent / "fixtures" / "shop" / "shop" / "cart.py", 1, 0)
        js_ctx = cursor_context(tmp_path / "a.js", 1, 0, tmp_path)
        built = {c.path.suffix: FACTORIES["keywords"](GuideSpec(gen, c, None, None, ())) for c in (ts_ctx, py_ctx, js_ctx)}
        assert type(built[".ts"]).__name__ == "CallArityMonitor" and built[".js"] is None
        assert type(built[".py"]).__name__ == "KeywordArgMonitor"


def test_a_typescript_body_ends_at_the_brace_that_closes_it(tiny_lm):
    """A body written into Cart.add (a scripted model plants it): the row stops at the `}` that
    closes the body — not at one inside a string, a template's `${}` or a nested block — and
    the completion ends before it (the file's own brace follows the region)."""
    from groundcode.context import CodeContext
    from groundcode.decoding.vocab import VocabIndex
    from groundcode.models.load import LoadedModel

    from scripted import ScriptedLM, planted
    text = (REPO / "src" / "cart.ts").read_text()
    start = text.index("number {", text.index("add(")) + len("number {")
    end = text.index("\n  }\n}", start) + 3
    body = ' if (item) { this.registry.register(`${ {a: "}"}.a }`); } return 1; '
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    model = ScriptedLM(tiny_lm, vocab, planted(body + "}\n\n  more(): void {}\n}\n"))
    ctx = CodeContext(path=REPO / "src" / "cart.ts", repo=REPO, before=text[:start], after=text[end:],
                      scope="Cart.add", starts_at_line=False, kind="body")
    with Generator(LoadedModel(model, tiny_lm.tokenizer, "scripted", "cpu", "float32"),
                   MonitorConfig(enabled=False), prompt=PromptConfig(heal=False)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=80))[0][0]
        assert out.finish_reason == "stop" and out.completion == body
        # at a cursor inside the body (a block stop, the default): the cursor's block ends there too
        cur = CodeContext(path=REPO / "src" / "cart.ts", repo=REPO, before=text[:start], after=text[end:],
                          starts_at_line=False)
        out = gen.run([cur], SamplingConfig(max_new_tokens=80))[0][0]
        assert out.finish_reason == "stop" and out.completion == body
    # a cursor inside an object literal its line opened: closing it does not end the block
    rest = ' 1 };\n    return o.a;\n'
    model = ScriptedLM(tiny_lm, vocab, planted(rest + "  }\n\n  more(): void {}\n}\n"))
    lit = CodeContext(path=REPO / "src" / "cart.ts", repo=REPO, before=text[:start] + "\n    const o = { a:",
                      after=text[end:], starts_at_line=False)
    with Generator(LoadedModel(model, tiny_lm.tokenizer, "scripted", "cpu", "float32"),
                   MonitorConfig(enabled=False), prompt=PromptConfig(heal=False)) as gen:
        out = gen.run([lit], SamplingConfig(max_new_tokens=80))[0][0]
    assert out.finish_reason == "stop" and out.completion == rest + "  "     # cut before the method's `}`


def test_a_typescript_file_over_http(ts, tiny_model_dir):
    """`groundcode serve`'s structured endpoint on a .ts file of a workspace: read from disk
    (.ts is a source file the server reads), grounded by TypeScript's server."""
    from fastapi.testclient import TestClient

    from groundcode.server.app import create_app
    from groundcode.server.options import ServeOptions
    from groundcode.server.service import Service
    svc = Service(ServeOptions(model=str(tiny_model_dir), workspaces=[REPO]))
    with TestClient(create_app(svc), base_url="http://127.0.0.1") as c:
        r = c.post("/v1/code/completions", json={"path": "src/cart.ts", "line": 9, "column": 25,
                                                 "max_tokens": 8, "until": "line"})
    assert r.status_code == 200, r.text
    d = r.json()
    (t,) = [t for t in d["triggers"] if t["receiver"] == "this.registry"]
    assert d["grounded"] and t["analyzer"] == "typescript" and t["candidates"] == 3 + 7 and not t["failed_open"]
    assert d["completion"].startswith(t["chosen"]) and t["chosen"] in ("register", "size", "latestUpdate")


def test_a_class_with_private_hash_fields_is_narrowed_with_them(ts, tiny_lm):
    """`this.` in a class with an ES private field (`#items`): TypeScript lists `#items`, and the
    monitor narrows with it spelled as written (session 14 failed open there: 45 of the 1,057
    benchmark triggers); the name the model writes is one of the class's, `#items` included."""
    from groundcode.analysis.base import MembersQuery
    text = (REPO / "src" / "stack.ts").read_text()
    line = "  get depth(): number { return this."
    at_text = text.replace("  get depth(): number { return this.#items.length; }", line)
    ctx = cursor_context(REPO / "src" / "stack.ts", 4, len(line), REPO, text=at_text)
    with Generator(tiny_lm, MonitorConfig(enabled=True)) as gen:
        a = gen.analyzer_for(ctx).ask(MembersQuery(ctx.splice(""), "this", ("s",))).result(30)
        assert {"push", "depth", "#items"} <= a.names and a.failed is None, a
        out = gen.run([ctx], SamplingConfig(max_new_tokens=4))[0][0]
        (t,) = [t for t in out.triggers if t.receiver == "this"]
        assert not t.failed_open and t.candidates >= 3
        written = re.match(r"#?[\w$]*", out.completion).group(0)
        assert any(n.startswith(written) for n in a.names) and written, (t, out.completion)


def test_an_infill_chunk_is_headed_by_a_comment_in_its_language(tiny_lm, tmp_path):
    """llama.vim's input_extra chunks go into the prompt under their file's name, written as a
    comment of that file's language (`// src/a.ts`, `# b.py`): `#` starts no comment in TypeScript."""
    from groundcode.server.options import ServeOptions
    from groundcode.server.schemas import InfillRequest
    from groundcode.server.service import Service
    svc = Service(ServeOptions(workspaces=[tmp_path], prewarm=False, lookahead=0), generator=Generator(tiny_lm))
    p = svc.infill(InfillRequest(input_prefix="function f() {\n", input_suffix="}\n", prompt="  return ",
                                 input_extra=[{"text": "export const a = 1;\n", "filename": "src/a.ts"},
                                              {"text": "b = 2\n", "filename": "b.py"}], n_predict=4))
    assert [b.text.split("\n")[0] for b in p.request.blocks] == ["// src/a.ts", "# b.py"]
