"""The arity monitor (TypeScript, decoding/guides/call_arity.py): a call takes no more arguments
than its callee has parameters and does not close while a required one is unbound, by the
signature TypeScript's server shows; the argument text read by the language's scanner.
Fixture: tests/fixtures/tsshop (Registry.register(item: string))."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.context import cursor_context
from groundcode.decoding.guides.call_arity import Args, read_args

REPO = Path(__file__).parent / "fixtures" / "tsshop"


@pytest.mark.parametrize("text, want", [
    ("", Args(-1, 0, False)),
    ("a, b)", Args(4, 2, False)),
    ("a, ", Args(-1, 1, False)),
    ("f(x, y), [1, 2], {a: 1, b: 2}", Args(-1, 3, False)),
    ("'a,b', `x${f(1, 2)},`)", Args(21, 2, False)),
    ("a, // c, d\n  b,\n)", Args(16, 2, False)),             # a trailing comma starts none
    ("/,)/.test(s))", Args(12, 1, False)),                    # a regular expression's `,)`
    ("...xs)", Args(5, 1, True)),
])
def test_read_args_counts_top_level_arguments_in_code_only(text, want):
    got = read_args(text)
    assert (got.closed, got.count, got.spread) == (want.closed, want.count, want.spread)
    assert read_args("a, b").last == 2 and read_args("f(x, y)").last == 0


@pytest.mark.parametrize("text, count, least", [
    ("new Map<string, number>(), x)", 3, 2),         # a comma inside `<…>` may be a type argument's
    ("g<A, B>(x), y, z", 4, 3),                       # after the `>` that closes it: an argument's
    ("a < b, c)", 2, 1),                              # `<` as less-than: not told apart, not counted
    ("a <= b, c, (x) => x > 0, d", 4, 4),             # `<=`, `=>` and a `>` at no `<`: no type list
    ("f(a < b, c), [x<y, z], d", 3, 3),               # a `<` inside brackets: their commas do not count
    ("<T,>(v: T) => v, y", 3, 2),                     # a generic arrow: its `<T,>` closes
])
def test_commas_inside_a_possible_type_argument_list_are_not_sure(text, count, least):
    a = read_args(text)
    assert (a.count, a.least) == (count, least), a


@pytest.fixture(scope="module")
def ts():
    return lsp_servers.install("typescript")


def _run(tiny_lm, target, max_new=24, **kw):
    from scripted import planted, scripted_lm
    from groundcode.api import Generator
    ctx = cursor_context(REPO / "src" / "cart.ts", 9, 0, REPO)
    with Generator(scripted_lm(tiny_lm, planted(target)), MonitorConfig(enabled=True, reproducible=True, **kw)) as gen:
        return gen.run([ctx], SamplingConfig(max_new_tokens=max_new))[0][0]


def _calls(out):
    return [t for t in out.triggers if t.kind == "call"]


def test_a_call_that_fits_is_untouched(ts, tiny_lm):
    out = _run(tiny_lm, "    this.registry.register(item);\n")
    assert out.completion.startswith("    this.registry.register(item);"), out.completion
    (rec,) = _calls(out)
    assert rec.receiver == "this.registry.register(" and not rec.failed_open and not rec.constrained, rec
    assert rec.chosen == "1"


def test_a_call_does_not_close_while_a_required_parameter_is_unbound(ts, tiny_lm):
    out = _run(tiny_lm, "    this.registry.register();\n")
    assert "register()" not in out.completion, out.completion
    (rec,) = _calls(out)
    assert rec.constrained and not rec.failed_open, rec


def test_a_close_refused_right_after_an_argument_is_redone_as_a_comma(ts, tiny_lm):
    # Math.pow(x, y): after one argument the next must begin (with `)` alone taken away the
    # model's pick was free: a line break, then `}` in Python's pyuploadcare call, session 36)
    out = _run(tiny_lm, "    Math.pow(item.length);\n")
    assert out.completion.startswith("    Math.pow(item.length,"), out.completion
    (rec,) = _calls(out)
    assert rec.constrained and not rec.failed_open, rec


def test_no_argument_past_the_last_parameter_its_comma_is_resampled(ts, tiny_lm):
    # the comma itself: held only at the next argument, the model closed after the comma and
    # dropped the argument it meant (`this.appendMap(mapping._maps[i], pos,)`, prosemirror)
    out = _run(tiny_lm, "    this.registry.register(item, 2);\n")
    assert out.completion.startswith("    this.registry.register(item"), out.completion
    assert "register(item," not in out.completion, out.completion
    (rec,) = _calls(out)
    assert rec.constrained, rec


def test_a_call_broken_over_lines_keeps_its_trailing_comma(ts, tiny_lm):
    # `f(\n  a,\n)`: a trailing comma is the style there; the next argument is what is held
    out = _run(tiny_lm, "    this.registry.register(\n      item,\n      2,\n    );\n")
    assert out.completion.startswith("    this.registry.register(\n      item,\n"), out.completion
    assert "item,\n      2" not in out.completion, out.completion
    (rec,) = _calls(out)
    assert rec.constrained, rec


def test_type_arguments_are_no_arguments(ts, tiny_lm):
    # `new Map<string, number>()` is one argument: its comma was read as a second one (a false
    # block of ` number`)
    target = "    this.registry.register(new Map<string, number>().size + item);\n"
    out = _run(tiny_lm, target, max_new=40)
    assert out.completion.startswith(target), out.completion
    assert not [r for r in _calls(out) if r.constrained], _calls(out)


def test_a_rest_parameter_takes_any_count_and_unknowns_fail_open(ts, tiny_lm):
    out = _run(tiny_lm, "    const n = Math.max(1, 2, 3, 4) + parseInt(item, 10);\n", max_new=80)
    assert out.completion.startswith("    const n = Math.max(1, 2, 3, 4) + parseInt(item, 10);"), out.completion
    assert not [r for r in _calls(out) if r.constrained], _calls(out)


def test_off_with_no_keywords(ts, tiny_lm):
    out = _run(tiny_lm, "    this.registry.register();\n", keywords=False)
    assert out.completion.startswith("    this.registry.register();"), out.completion
    assert not _calls(out)


def test_a_signature_without_parameters_fails_open(ts, tiny_lm):
    # `latestUpdate(): string | undefined` reads as a generic rest parameter inferred from no
    # arguments does (`isAllOf(): …`, a false block on the held-out recipe): not known
    out = _run(tiny_lm, "    const u = this.registry.latestUpdate(item);\n", max_new=60)
    assert out.completion.startswith("    const u = this.registry.latestUpdate(item);"), out.completion
    (rec,) = _calls(out)
    assert rec.failed_open and not rec.constrained, rec


def test_a_call_the_prompt_opens_is_counted_from_the_first_token(ts, tiny_lm, tmp_path):
    import shutil
    from scripted import planted, scripted_lm
    from groundcode.api import Generator
    root = tmp_path / "tsshop"
    shutil.copytree(REPO, root)
    cart = root / "src" / "cart.ts"
    text = cart.read_text().replace("    this.registry.register(item);", "    this.registry.register(")
    cart.write_text(text)
    line = next(i for i, ln in enumerate(text.split("\n"), 1) if ln.endswith("register("))
    ctx = cursor_context(cart, line, len("    this.registry.register("), root)
    with Generator(scripted_lm(tiny_lm, planted(");\n")), MonitorConfig(enabled=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=12))[0][0]
    (rec,) = _calls(out)
    assert rec.receiver == "this.registry.register(" and rec.constrained, rec
    assert not out.completion.startswith(")"), out.completion



def test_an_answer_not_in_at_the_comma_fails_open_and_is_read_at_the_next_token():
    # the editor never waits: the signature asked again at the comma is still running, so the
    # comma passes; landed by the next token, the argument's beginning is held (the `)` mask)
    from fake_analyzer import FakeBase
    from groundcode.analysis.base import Answered, CallSignature, ParamSpec, SignatureAnswer
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.call_arity import CallArityMonitor
    from groundcode.decoding.vocab import VocabIndex

    answer = SignatureAnswer(CallSignature("register", (ParamSpec("item", "either", True),)))

    class Running:
        landed = False

        def result(self, timeout=0):
            return answer if self.landed else None

    class Server(FakeBase):
        def __init__(self):
            self.asked, self.running = [], Running()

        def ask(self, query):
            self.asked.append(query)
            return Answered(answer) if len(self.asked) == 1 else self.running

    texts = ["", "    this.registry.register(", "item", ",", " 2", ")", " )"]
    vocab, server = VocabIndex(texts), Server()
    row = RowView(0, cursor_context(REPO / "src" / "cart.ts", 9, 0, REPO), vocab)
    mon = CallArityMonitor(server)
    mon.reset(row)
    for tok in (1, 2):
        row.tokens.append(tok)
        row.text += texts[tok]
        mon.advance(row, tok)
    assert mon.check(row, 2) is None and mon.check(row, 3) is None, "the comma: not known yet"
    row.tokens.append(3)
    row.text += ","
    mon.advance(row, 3)
    server.running.landed = True
    assert sorted(mon.check(row, 4)) == [5, 6]       # ` 2` held: only what closes the call
    assert len(server.asked) == 2                     # the comma's question, not asked again
