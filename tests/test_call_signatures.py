"""Signatures of any callee Jedi resolves (issue 41): what a call accepts, read at its `(`, and the
keyword monitor checking the keywords the model writes against it."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis.base import SignatureQuery
from groundcode.analysis.jedi_client import JediAnalyzer
from groundcode.api import Generator, cursor_context
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.context import Splice

CODE = ("import json\n\n\nclass Shop:\n    def scale(self, value, factor=2, /, mode='a=b', *rest, clamp, **kw):\n"
        "        pass\n\n    def total(self, price: 'dict[str, int]' = None, *, tax: float = 0.2):\n"
        "        return price\n\n\ndef plain(a, b=(1, 2)):\n    return a\n\n\n"
        "class Pool:\n    def __init__(self, hook=None):\n        self.hook = hook\n\n"
        "    def spawn(self, ident, func, *args, **kwargs):\n        return func(*args, **kwargs)\n\n\n"
        "def pair(a, b):\n    return a\n\n\ndef nothing():\n    return 1\n\n\n@deco\ndef wrapped():\n    return 1\n\n\n"
        "class Box:\n    def empty(self):\n        return 0\n\n\n"
        "class Hook:\n    def begin(self):\n        pass\n\n    def end(self):\n        \"\"\"Done.\"\"\"\n"
        "        raise NotImplementedError\n\n\nfrom typing import overload\n\n\n"
        "@overload\ndef conv(x: int) -> int: ...\n@overload\ndef conv(x: str, base: int = 10) -> str: ...\n"
        "def conv(x, base=10):\n    return x\n\n\n"
        "@overload\ndef odd(a: int) -> int: ...\n@overload\ndef odd(b: str) -> str: ...\ndef odd(a):\n    return a\n"
        "\n\nimport typing\n\n\nclass Loc(typing.NamedTuple):\n    line: int\n    text: str\n\n\n"
        "import functools\n\n\ndef api(f):\n    @functools.wraps(f)\n    def new_func(*args, **kwargs):\n"
        "        return f(*args, **kwargs)\n    return new_func\n\n\n"
        "class Node:\n    @api\n    def get(self, name, fast=False):\n        return self\n")


def _ask(a: JediAnalyzer, tail: str, receiver: str, name: str):
    code = CODE + tail
    lines = code.split("\n")
    sp = Splice(code + "\n", len(lines), len(lines[-1]), Path("/tmp/gc_sig/shop.py"), None)
    return a.ask(SignatureQuery(sp, receiver, name)).result(None)


def test_jedi_reads_kinds_defaults_and_star_parameters():
    with JediAnalyzer(None, workers="thread") as a:
        sig = _ask(a, "Shop().scale(", "Shop()", "scale").signature
        assert [(p.name, p.kind, p.required) for p in sig.params] == [
            ("value", "positional", True), ("factor", "positional", False), ("mode", "either", False),
            ("clamp", "keyword", True)]
        assert sig.var_positional and sig.var_keyword
        # a default inside brackets or a string, an annotation before it
        sig = _ask(a, "Shop().total(", "Shop()", "total").signature
        assert [(p.name, p.kind, p.required) for p in sig.params] == [("price", "either", False),
                                                                       ("tax", "keyword", False)]
        assert not sig.var_keyword and sig.keywords() == {"price", "tax"}
        sig = _ask(a, "plain(", "", "plain").signature
        assert [(p.name, p.required) for p in sig.params] == [("a", True), ("b", False)]
        again = _ask(a, "plain(", "", "plain")
        assert again.signature == sig and again.ms == 0.0            # cached
        # `*args, **kwargs` passed on to a callable Jedi cannot see: Jedi drops them, the
        # definition declares them (they were a false block of the call audit)
        sig = _ask(a, "Pool().spawn(", "Pool()", "spawn").signature
        assert [p.name for p in sig.params] == ["ident", "func"] and sig.var_positional and sig.var_keyword
        # an attribute whose default is None: Jedi answers `NoneType()`, a guess
        assert _ask(a, "Pool().hook(", "Pool()", "hook").failed == "no parameters"
        # ... but a `def` that declares none takes none (sitetree's `get_tree_item_model()`,
        # called with two arguments), a method none past `self`; a decorator may change that
        for tail, receiver, name in (("nothing(", "", "nothing"), ("Box().empty(", "Box()", "empty")):
            got = _ask(a, tail, receiver, name)
            assert got.signature is not None and got.signature.params == () \
                and not got.signature.var_positional and not got.signature.var_keyword, got
        assert _ask(a, "wrapped(", "", "wrapped").failed == "no parameters"
        # a method whose body is a stub is a hook its subclasses override with parameters
        # (pyrser's `DirectiveWrapper.begin(self): pass`, called `begin(parser, *args)`: 48
        # false blocks of the call token audit, session 38)
        for name in ("begin", "end"):
            assert _ask(a, f"Hook().{name}(", "Hook()", name).failed == "no parameters", name
        # overloads that agree by position are read as one (a parameter required where all
        # require it): `conv(x)` or `conv(x, base)`, print's two; those that name a position
        # differently stay unknown; no signature: unknown, and why
        sig = _ask(a, "conv(", "", "conv").signature
        assert [(p.name, p.kind, p.required) for p in sig.params] == [("x", "either", True), ("base", "either", False)]
        sig = _ask(a, "print(", "", "print").signature
        assert sig.var_positional and {"sep", "end", "file", "flush"} <= sig.keywords() and not sig.required
        assert _ask(a, "odd(", "", "odd").failed == "overloads"
        # a typing.NamedTuple subclass: Jedi reads typing's own constructor, `(typename, fields)`
        # (gin's `Location(None, 0, None, '')` refused at its `)`: 60 false blocks, session 40)
        assert _ask(a, "Loc(", "", "Loc").failed == "overloads: typing's constructor for its subclass"
        # a decorator's `*args, **kwargs` wrapper: Jedi shows the wrapped callable's parameters,
        # inferred — none of them required (pypet's `my_param.f_get()`, read as a Trajectory's
        # `f_get(name)`: 22 false blocks, session 40)
        sig = _ask(a, "Node().get(", "Node()", "get").signature
        assert sig.var_positional and sig.var_keyword and not sig.required, sig
        got = _ask(a, "nothing_here(", "", "nothing_here")
        assert got.signature is None and got.failed == "no signature"


def test_a_receiver_jedi_leaves_unbound_is_never_a_required_parameter():
    # pyopenssl: `_EllipticCurve._get_elliptic_curves(lib)` inside the class body, the call
    # still open, was read as (cls, lib): `)` after `lib` was refused (a harm on the call-kind
    # benchmark; this small class is bound right by Jedi, the rule is checked on its outcome). A
    # leading `cls` of a @classmethod is dropped; any other unbound receiver is unknown
    code = ("class Curve:\n    _all = None\n\n    @classmethod\n    def load(cls, lib):\n        x = Curve.get(\n"
            "        return x\n\n    @classmethod\n    def get(cls, lib):\n        return lib\n\n"
            "    def plain(self, a):\n        return a\n\n\nCurve.plain(\n")
    lines = code.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.endswith("Curve.get("))
    with JediAnalyzer(None, workers="thread") as a:
        sp = Splice(code, at + 1, len(lines[at]), Path("/tmp/gc_sig/curve.py"), None)
        sig = a.ask(SignatureQuery(sp, "Curve", "get")).result(None).signature
        assert [(p.name, p.required) for p in sig.params] == [("lib", True)]
        sp = Splice(code, len(lines) - 1, len(lines[-2]), Path("/tmp/gc_sig/curve.py"), None)
        got = a.ask(SignatureQuery(sp, "Curve", "plain")).result(None)   # `self` passed by hand
        assert got.signature is None or [p.name for p in got.signature.params][0] != "self", got


@pytest.fixture()
def shop(tmp_path):
    root = tmp_path / "shop"
    root.mkdir()
    (root / "shop.py").write_text(CODE + "\n\ndef run(items):\n    \n")
    return root


def test_a_keyword_the_callee_does_not_take_is_redone_as_one_it_takes(tiny_lm, shop):
    from scripted import planted, scripted_lm
    ctx = cursor_context(shop / "shop.py", len((CODE + "\n\ndef run(items):\n").split("\n")), 4, shop)
    target = "    return Shop().total(items, vat=0.1)\n"
    with Generator(scripted_lm(tiny_lm, planted(target)), MonitorConfig(enabled=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=60))[0][0]
    # (after `items,` every positional parameter is taken: the keyword is masked as it starts,
    # not rolled back; price is bound by position, so tax is the one name left)
    recs = [t for t in out.triggers if t.receiver == "Shop().total("]
    assert recs and recs[0].constrained and not recs[0].failed_open, (out.completion, out.triggers)
    assert "vat=" not in out.completion and recs[0].chosen == "tax", out.completion
    assert "tax=0.1)" in out.completion, out.completion


def _call(tiny_lm, shop, target):
    from scripted import planted, scripted_lm
    ctx = cursor_context(shop / "shop.py", len((CODE + "\n\ndef run(items):\n").split("\n")), 4, shop)
    with Generator(scripted_lm(tiny_lm, planted(target)), MonitorConfig(enabled=True, reproducible=True)) as gen:
        return gen.run([ctx], SamplingConfig(max_new_tokens=40))[0][0]


def test_no_close_while_a_required_parameter_is_unbound(tiny_lm, shop):
    out = _call(tiny_lm, shop, "    return plain()\n")
    rec = next((t for t in out.triggers if t.receiver == "plain("), None)
    assert rec is not None, (out.completion, out.triggers)
    assert rec.constrained and not out.completion.lstrip().startswith("return plain()"), out.completion
    out = _call(tiny_lm, shop, "    return plain(items)\n")          # a bound: free to close
    assert out.completion.lstrip().startswith("return plain(items)\n"), out.completion
    assert not next(t for t in out.triggers if t.receiver == "plain(").constrained


def test_a_close_refused_right_after_an_argument_is_redone_as_a_comma(tiny_lm, shop):
    # pair(a, b): after `items` the callee still needs `b`. With only `)` taken away the
    # model's next pick was free, and a line break there led pyuploadcare's call to `}`
    # (session 36): right after an argument, the next one begins
    out = _call(tiny_lm, shop, "    return pair(items)\n")
    assert out.completion.lstrip().startswith("return pair(items,"), out.completion
    rec = next(t for t in out.triggers if t.receiver == "pair(")
    assert rec.constrained, rec


def test_a_def_that_declares_no_parameters_takes_no_argument(tiny_lm, shop):
    out = _call(tiny_lm, shop, "    return nothing(items)\n")
    assert out.completion.lstrip().startswith("return nothing()"), out.completion
    assert next(t for t in out.triggers if t.receiver == "nothing(").constrained


def test_past_the_positional_parameters_only_keywords(tiny_lm, shop):
    # total(price=None, *, tax=0.2): a second positional argument is redone as a keyword
    out = _call(tiny_lm, shop, "    return Shop().total(items, 3)\n")
    assert "total(items, tax" in out.completion and "total(items, 3" not in out.completion, out.completion


def test_no_argument_past_the_last_parameter_of_a_callee_without_keywords_left(tiny_lm, shop):
    # plain(a, b=(1, 2)) takes two. On one line the comma after the second can only begin an
    # argument the callee does not take: it is refused, and the model closes the call or goes
    # on with its argument (its way out of a refused argument was `f(a, )`, then wrong code:
    # three harms of the call kind)
    out = _call(tiny_lm, shop, "    return plain(items, 2, items)\n")
    assert out.completion.lstrip().startswith("return plain(items, 2"), out.completion
    assert "plain(items, 2," not in out.completion, out.completion
    rec = next(t for t in out.triggers if t.receiver == "plain(")
    assert rec.constrained, rec
    # a call broken over lines keeps its trailing comma; a third argument, written ` items`
    # (a token that begins with a blank, which left the mask empty: kerncraft's
    # `self._explode(other, blend)` went through), may only be nothing more: `)`
    out = _call(tiny_lm, shop, "    return plain(\n        items,\n        2,\n        items)\n")
    assert "        2,\n" in out.completion and "2,\n        items" not in out.completion, out.completion
    rec = next(t for t in out.triggers if t.receiver == "plain(")
    assert rec.constrained, rec
    # keywords left to bind: the comma is free
    out = _call(tiny_lm, shop, "    return Shop().total(items, tax=1)\n")
    assert "total(items, tax=1)" in out.completion, out.completion


def test_the_argument_scanner_counts_positional_arguments():
    from groundcode.pycode import ArgScanner
    cases = {"a, b)": (2, [], False), "a, k=1)": (1, ["k"], False), '"s", (1, 2), [3])': (3, [], False),
             "*args, b)": (1, [], True), "f(1, 2), k=[1, 2])": (1, ["k"], False), ")": (0, [], False),
             "a,)": (1, [], False), "lambda x: x, -2)": (2, [], False), "# note\n a)": (1, [], False)}
    for text, want in cases.items():
        s = ArgScanner().feed(text)
        assert s.closed and (s.positional, s.used, s.unpacked) == want, text
    assert ArgScanner().feed("a, b").positional == 1          # the open one counts once closed
    # an argument in progress: a keyword whose value has not begun, or a positional one
    assert ArgScanner().feed("k=").keyword_pending() == "k"
    assert ArgScanner().feed("a, k =").keyword_pending() == "k"
    assert ArgScanner().feed("k").keyword_pending() == ""         # may still be `k=` or `k`
    assert ArgScanner().feed("k==").keyword_pending() == ""       # a comparison
    assert ArgScanner().feed("k=1").keyword_pending() == ""       # its value has begun
    assert ArgScanner().feed("tree").positional_begun() and not ArgScanner().feed("k=").positional_begun()
    assert not ArgScanner().feed("a, ").positional_begun()


def test_a_call_the_prompt_opens_is_checked_from_the_first_token(tiny_lm, shop):
    # the editor's cursor right after `plain(` (the call tasks): the row's first token is an
    # argument of that call (it was never checked: only a `(` the row wrote opened a call)
    from scripted import planted, scripted_lm
    text = CODE + "\n\ndef run(items):\n    return plain(\n"
    (shop / "shop.py").write_text(text)
    lines = text.split("\n")
    ctx = cursor_context(shop / "shop.py", len(lines) - 1, len(lines[-2]), shop)
    with Generator(scripted_lm(tiny_lm, planted(")\n")), MonitorConfig(enabled=True, reproducible=True)) as gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=12))[0][0]
    rec = next((t for t in out.triggers if t.receiver == "plain("), None)
    assert rec is not None and rec.constrained, (out.completion, out.triggers)
    assert not out.completion.startswith(")"), out.completion


def test_the_tokens_that_redo_a_refused_close_begin_the_next_argument():
    # `)` refused right after an argument: a comma, after spaces; where the refused token
    # wrote text before its `)` (`")` closing a string: pyuploadcare's `"remote_copy")`,
    # redone as `"\n` and `}` in session 36), that text alone or followed by a comma
    from types import SimpleNamespace

    from groundcode.decoding.guides.token_sets import commas
    vocab = SimpleNamespace(texts=[",", " ,", ", ", '"', '",', '")', '"\n', ")", "x", ",\n", "\t,x"])
    got = lambda pre="": [vocab.texts[i] for i in commas(vocab, pre)]  # noqa: E731
    assert got() == [",", " ,", ", ", ",\n", "\t,x"]
    assert got('"') == ['"', '",']
    # no token writes that text and a comma: the tokens without `)` (it was none: the `)` went
    # through)
    from groundcode.decoding.guides.token_sets import next_argument
    assert [vocab.texts[i] for i in next_argument(vocab, "'")] == [t for t in vocab.texts if ")" not in t]
    assert list(next_argument(vocab, '"')) == list(commas(vocab, '"'))


def test_an_argument_begun_in_the_token_that_opens_the_call_is_judged_before_it():
    # qwen's `(tree` opens sitetree's `get_tree_item_model()` and begins an argument in one
    # token: the call opened only once that token was accepted, and the argument it began was
    # never judged (session 37: `get_tree_item_model(tree_alias)`, a call error). Now a token
    # that opens a call is judged before it is accepted: `(` alone, or `()`, where nothing is
    # required; a keyword the callee does not take, merged the same way, likewise
    from groundcode.analysis.base import Answered, CallSignature, ParamSpec, SignatureAnswer
    from groundcode.api import CodeContext
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.keyword_args import KeywordArgMonitor
    from groundcode.decoding.vocab import VocabIndex

    sigs = {"nothing": CallSignature("nothing"),
            "pair": CallSignature("pair", (ParamSpec("a", "either", True), ParamSpec("b", "either", True))),
            "opt": CallSignature("opt", (ParamSpec("tree", "keyword"),))}

    class Sigs:
        def ask(self, q):
            return Answered(SignatureAnswer(sigs.get(q.name)))

        def deadline(self):
            return 1.0

    tokens = ["", "x", " =", " nothing", " pair", " opt", "(", "()", "():", "(tree", "(tr", "(\n",
              "(ok=", "(tree=", "( ", ")"]
    ids = {t: i for i, t in enumerate(tokens)}
    before = "def run(tree):\n    "
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="", lex_prefix=before,
                      starts_at_line=False)

    def judged(callee, tok):
        mon = KeywordArgMonitor(Sigs(), reproducible=True)
        row = RowView(0, ctx, VocabIndex(tokens))
        mon.reset(row)
        for t in ["x", " =", " " + callee]:
            assert mon.check(row, ids[t]) is None
            row.tokens.append(ids[t])
            row.text += t
            row.ends.append(len(row.text))
            mon.advance(row, ids[t])
        got = mon.check(row, ids[tok])
        return None if got is None else sorted(tokens[i] for i in got)

    assert judged("nothing", "(tree") == ["(", "(\n", "( ", "()", "():"]
    assert judged("nothing", "(tree=") == ["(", "(\n", "( ", "()", "():"]
    assert judged("nothing", "()") is None and judged("nothing", "(") is None
    assert judged("pair", "(tree") is None                       # a positional argument it takes
    assert judged("pair", "()") == sorted(t for t in tokens if ")" not in t)   # `()`: as before
    assert judged("pair", "(ok=") == ["(", "(\n", "( "]           # no such keyword; b required
    assert judged("opt", "(tr") is None and judged("opt", "(tree=") is None   # may become `tree=`
    assert judged("opt", "(ok=") == ["(", "(\n", "( ", "()", "():"]


def test_text_after_a_call_whose_signature_is_still_running_is_not_final():
    # the editor never waits: a call opened at the cursor (`pair(`) whose signature lands after
    # `ok=` was written rolls that keyword back to the argument's start; that text must not have
    # been declared final meanwhile (qwen in the editor, sitetree's `sitetree_tree(`: "a guide
    # cut below text it had declared final", session 38)
    from groundcode.analysis.base import CallSignature, ParamSpec, SignatureAnswer
    from groundcode.api import CodeContext
    from groundcode.decoding.guides.base import RowView, as_rollback
    from groundcode.decoding.guides.keyword_args import KeywordArgMonitor
    from groundcode.decoding.vocab import VocabIndex

    class Late:
        def __init__(self):
            self.landed = False

        def result(self, timeout=0):
            sig = CallSignature("pair", (ParamSpec("a", "either", True), ParamSpec("b", "either", True)))
            return SignatureAnswer(sig) if self.landed else None

    ticket = Late()

    class Sigs:
        def ask(self, q):
            return ticket

        def deadline(self):
            return 1.0

    tokens = ["", "ok", "=", "1", ",", " b", ")"]
    before = "def run(x):\n    return pair("
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="", lex_prefix=before,
                      starts_at_line=False)
    mon = KeywordArgMonitor(Sigs())
    row = RowView(0, ctx, VocabIndex(tokens))
    mon.reset(row)
    got = None
    for t in ["ok", "=", "1"]:
        ticket.landed = t == "1"
        row.tokens.append(tokens.index(t))
        row.text += t
        row.ends.append(len(row.text))
        got = as_rollback(mon.advance(row, tokens.index(t)))
        assert got is not None or mon.final_upto(row) == 0, (t, mon.final_upto(row))
    assert got is not None and got.length == 0 and got.reason == "wrong keyword"


class _Signatures:
    """An analyzer answering signatures from a table (callee name -> CallSignature; a name not
    in it: unknown), at once."""

    def __init__(self, table: dict):
        self.table = table

    def ask(self, q):
        from groundcode.analysis.base import Answered, SignatureAnswer
        return Answered(SignatureAnswer(self.table.get(q.name)))

    def deadline(self):
        return 1.0


def _monitor(table: dict, before: str, tokens: list[str]):
    """A reproducible keyword monitor reset on a row whose prompt is `before` (vocabulary:
    `tokens`): (monitor, row)."""
    from groundcode.api import CodeContext
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.keyword_args import KeywordArgMonitor
    from groundcode.decoding.vocab import VocabIndex
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="", lex_prefix=before,
                      starts_at_line=False)
    mon, row = KeywordArgMonitor(_Signatures(table), reproducible=True), RowView(0, ctx, VocabIndex(tokens))
    mon.reset(row)
    return mon, row


def _accept(mon, row, t: str):
    """The engine accepting token text `t`: the row grows, then `advance`; its rollback, if any."""
    from groundcode.decoding.guides.base import as_rollback
    i = row.vocab.texts.index(t)
    row.tokens.append(i)
    row.text += t
    row.ends.append(len(row.text))
    return as_rollback(mon.advance(row, i))


def _checked(mon, row, t: str):
    """What the monitor's check allows instead of token text `t`, sorted (None: `t` is fine)."""
    got = mon.check(row, row.vocab.texts.index(t))
    return None if got is None else sorted(row.vocab.texts[i] for i in got)


def test_a_call_the_prompt_left_open_among_its_arguments_is_followed_from_the_first_token():
    # the cursor among a call's arguments (`pair(x, `: the editor mid-call, the keyword tasks
    # of the four-kind benchmark): the call is the row's from its first token, with what the
    # prompt passed counted — a keyword it does not take is refused, `)` while `b` is unbound
    # too; arguments before the cursor that do not fit the signature fail open, and the
    # innermost open bracket must be the call's
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.decoding.guides.keyword_args import ARGS
    from groundcode.pycode import open_paren

    pair = {"pair": CallSignature("pair", (ParamSpec("a", "either", True), ParamSpec("b", "either", True)))}
    tokens = ["", "ok", "k", "=", "1", ")", "b", " b", ",", "\n"]

    def monitor(head: str):
        return _monitor(pair, "def run(x, y):\n    return pair(" + head, tokens)

    mon, row = monitor("x,\n               ")
    assert mon.state == ARGS and mon.scan.positional == 1 and mon.final_upto(row) == 0
    assert _checked(mon, row, ")") == sorted(t for t in tokens if ")" not in t)
    assert _checked(mon, row, "b") is None
    assert _accept(mon, row, "ok") is None and _accept(mon, row, "=") is None and mon.final_upto(row) == 0
    back = _accept(mon, row, "1")                   # `ok=`: no such parameter, redone from the cursor
    assert back is not None and back.length == 0 and back.reason == "wrong keyword"

    mon, row = monitor("x, b=1")                    # every parameter bound: `)` is fine
    assert mon.state == ARGS and _checked(mon, row, ")") is None
    mon, row = monitor("x, o")                      # an argument begun before the cursor: not redone
    assert mon.state == ARGS and mon.final_upto(row) == 0
    assert [_accept(mon, row, t) for t in ("k", "=", "1")] == [None, None, None]
    assert mon.record.reason == "wrong keyword begun before the cursor: not redone"
    for misfit in ("x, y, 3, ", "x, c=2, "):        # the signature is not the one the code calls
        mon, row = monitor(misfit)
        assert mon.state != ARGS and row.triggers[-1].failed_open
        assert row.triggers[-1].reason == "the arguments before the cursor do not fit"
    mon, row = monitor("x, [1, ")                   # inside a list: the call is not opened
    assert mon.state != ARGS
    assert open_paren("f(a, '(', g(b), # (\n  ") == 1 and open_paren("f(a)") == -1 and open_paren("f({") == -1


def test_after_a_keyword_every_argument_is_a_keyword_and_none_is_left_once_all_are_bound():
    # smollm2 on pyuploadcare's `self._build_url(\n "upload",\n base=…,\n suffix=…,\n
    # query_parameters=…,\n file_name=…`: every parameter bound, the wrong keyword rolled back
    # into a name mask with no name in it (free again), 30 times until the length limit. A
    # positional argument may not follow a keyword, so after one every argument is a keyword of
    # a parameter not bound yet — none left: the call may only close (`*x`/`**x` stay free)
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.decoding.guides.keyword_args import ARGS

    build = {"build": CallSignature("build", tuple(ParamSpec(n, "either", False)
                                                   for n in ("resource_uuid", "base", "suffix", "query_parameters")))}
    tokens = ["", " file", "file", "x", ")", "\n)", " **", "*", "su", " suffix", "#"]

    def refused(head: str, tok: str):
        mon, row = _monitor(build, "def run(self, x):\n    url = build(" + head, tokens)
        assert mon.state == ARGS
        return _checked(mon, row, tok)

    every = '\n    "upload",\n    base="file",\n    suffix="u",\n    query_parameters=True,\n    '
    assert refused(every, " file") == ["\n)", ")"] and refused(every, "x") == ["\n)", ")"]
    assert refused(every, ")") is None and refused(every, " **") is None and refused(every, "#") is None
    assert refused('"upload", base=1, ', "x") == ["\n)", ")", "su"]   # no positional after a keyword
    assert refused('"upload", base=1, ', "su") is None and refused('"upload", base=1, ', "*") is None
    assert refused('"upload", ', "x") is None                 # positional: any expression


def test_overloads_merge_into_what_any_of_them_accepts():
    from groundcode.analysis.base import CallSignature as S, ParamSpec as P
    from groundcode.analysis.overloads import merge
    get = merge([S("get", (P("key", "positional", True), P("default", "positional", False))),
                 S("get", (P("key", "positional", True), P("default", "positional", True)))])
    assert get.params == (P("key", "positional", True), P("default", "positional", False))
    # keyword-only in one, positional in the other: by keyword anywhere; required only in all
    m = merge([S("f", (P("a", "either", True), P("t", "keyword", True))),
               S("f", (P("a", "positional", True), P("t", "either", False), P("u", "either", True)), True),
               S("f", (P("a", "either", True),), var_keyword=True)])
    assert m.params == (P("a", "either", True), P("t", "either", False), P("u", "either", False))
    assert m.var_positional and m.var_keyword
    assert merge([S("f", (P("a", "either", True),)), S("f", (P("b", "either", True),))]) is None
    assert merge([]) is None and merge([get]) is get


def test_with_kwargs_any_keyword_is_taken_and_positions_are_still_judged():
    # solvebio's `self.all(` — `def all(cls, **params)` — written by smollm2 with a list as its
    # argument (pylint: too many positional arguments). `**kwargs` used to leave the call free;
    # now any keyword name is taken while positions, `)` and a keyword's `=` are judged
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.decoding.guides.keyword_args import ARGS

    sigs = {"all": CallSignature("all", (), var_keyword=True),
            "get": CallSignature("get", (ParamSpec("a", "either", True),), var_keyword=True)}
    tokens = ["", "[", "1", "x", "x)", "x=", " y", ")", "\n)", " **", "#", "_z", ".", " =", "="]

    def judged(call: str, tok: str):
        mon, row = _monitor(sigs, "def run(self, x):\n    items = " + call, tokens)
        assert mon.state == ARGS and not row.triggers[-1].failed_open
        return _checked(mon, row, tok)

    keywords_or_close = sorted(["x", "x=", " y", "_z", ")", "\n)"])      # (never `x)` again)
    assert judged("self.all(", "[") == keywords_or_close == judged("self.all(", "1")
    assert judged("self.all(", "x=") is None and judged("self.all(", " **") is None   # any keyword
    assert judged("self.all(", "x)") is not None and judged("self.all(", ")") is None  # `x` positional: no
    assert judged("get(", "[") is None and judged("get(", ")") is not None           # `a` is required
    # a name begun in an earlier token, then `)` or `.`: a positional argument, where only
    # keywords may come (solvebio's `convert_to_solve_object(response, self` then `.`: session 40)
    mon, row = _monitor(sigs, "def run(self, x):\n    items = get(1, ", tokens)
    assert _checked(mon, row, "x") is None
    _accept(mon, row, "x")
    for tok in (")", "."):
        assert _checked(mon, row, tok) == [" =", "="], tok   # `x=` or `x =`
    assert _checked(mon, row, " =") is None and _checked(mon, row, "=") is None
    assert judged("get(1, ", "_z") is None and judged("get(1, ", "1") is not None


def test_a_keywords_name_may_be_followed_by_blanks_before_its_equals():
    # pysyncobj: `TcpServer(poller, host, port, onNewConnection = …,\n sendBufferSize = …`; after
    # a keyword the name is held to the parameters left, and once whole the mask took only
    # tokens that begin with `=`: ` =` was refused (27 false blocks, session 40)
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.decoding.guides.keyword_args import NARROW

    srv = {"Srv": CallSignature("Srv", (ParamSpec("poller", "either", True), ParamSpec("on", "either", True),
                                        ParamSpec("size", "either", False)))}
    tokens = ["", "size", " =", "=", " ", " = 2", "==", ")", "\n"]
    mon, row = _monitor(srv, "def run(p):\n    s = Srv(p, on = 1,\n            ", tokens)
    _accept(mon, row, "size")
    assert mon.state == NARROW
    assert sorted(tokens[i] for i in mon.mask(row)) == sorted([" =", "=", " ", " = 2"])


def test_a_call_inside_the_arguments_is_followed_then_the_one_around_it():
    # `pair(1, pair(2` — the inner call is followed (its `)` refused while `b` is unbound), then
    # the outer one again once the inner closes; an inner callee without a signature leaves the
    # outer one followed
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.decoding.guides.keyword_args import ARGS, UNKNOWN

    pair = {"pair": CallSignature("pair", (ParamSpec("a", "either", True), ParamSpec("b", "either", True)))}
    tokens = ["", "1", ",", " pair(", " foo(", "2", ")", " 3", "))", " ok=", " b"]

    def fresh():
        return _monitor(pair, "def run():\n    x = pair(", tokens)

    def write(mon, row, t):
        assert _checked(mon, row, t) is None, t
        return _accept(mon, row, t)

    mon, row = fresh()
    for t in ["1", ",", " pair(", "2"]:
        assert write(mon, row, t) is None
    assert mon.state == ARGS and len(mon.outer) == 1 and mon.scan.positional == 0
    assert _checked(mon, row, ")") is not None             # the inner pair(2) is short of `b`
    for t in [",", " 3", ")"]:
        assert write(mon, row, t) is None
    assert mon.outer == () and mon.scan.positional == 1 and _checked(mon, row, ")") is None
    assert [r.receiver for r in row.triggers] == ["pair(", "pair("]
    mon, row = fresh()
    for t in ["1", ",", " foo(", "2"]:                      # no signature: its syntax only
        assert write(mon, row, t) is None
    assert len(mon.outer) == 1 and mon.sig is UNKNOWN
    assert _checked(mon, row, ")") is None and _checked(mon, row, "))") is None
    mon, row = fresh()
    for t in ["1", ",", " pair(", "2", ","]:
        assert write(mon, row, t) is None
    assert _checked(mon, row, " ok=") == [" b"]             # the inner call's keywords: b left


def test_a_keyword_that_binds_a_parameter_bound_already_is_redone():
    # qwen at the keyword cursors: `np.fromfile(f, count=…, count=…)` (a SyntaxError) and
    # `_x_request_elements_filter(…, request_type, …, request_type=…)` (a TypeError): a keyword
    # for a parameter bound by position or by an earlier keyword is rolled back like one the
    # callee does not take; arguments before the cursor that do so fail open
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.decoding.guides.keyword_args import ARGS

    f = {"f": CallSignature("f", (ParamSpec("a", "either", True), ParamSpec("b", "either", False),
                                  ParamSpec("c", "either", False)), var_keyword=True)}
    tokens = ["", " a", " b", "=", "1", ","]

    def run(head: str, written: list[str]):
        mon, row = _monitor(f, "def run(x):\n    f(" + head, tokens)
        got = None
        for t in written:
            got = _accept(mon, row, t) or got
        return mon, row, got

    for head in ("x,", "x, b=2,"):                  # `a` by position; `b` by keyword
        name = " a" if head == "x," else " b"
        mon, row, got = run(head, [name, "=", "1"])
        assert got is not None and got.reason == "wrong keyword" and got.length == 0, head
    mon, row, got = run("x,", [" b", "=", "1"])      # `b` is free: no rollback
    assert got is None and mon.state == ARGS
    mon, row, got = run("x, a=1, ", [])              # the prompt binds `a` twice: fail open
    assert mon.state != ARGS and row.triggers[-1].failed_open


def test_a_call_whose_signature_is_unknown_has_its_syntax_judged():
    # qwen at the keyword cursors: `np.fromfile(f, count=…, count=…)` — numpy's overloads name
    # their positions differently (unknown), so the repeated keyword went through. What no call
    # may do is judged whatever the callee: a keyword given twice is rolled back, a positional
    # argument after a keyword refused; `*x`/`**x` and new keywords are free; the trigger says
    # it failed open, and why
    from groundcode.decoding.guides.keyword_args import ARGS, UNKNOWN

    tokens = ["", " count", "=", "2", ",", " x", " x)", ")", "\n", " order", "*", "**kw", " = 3"]

    def fresh(head="count=1, "):
        return _monitor({}, "def run(f):\n    a = np.fromfile(f, " + head, tokens)

    mon, row = fresh()
    assert mon.state == ARGS and mon.sig is UNKNOWN and row.triggers[-1].failed_open
    assert row.triggers[-1].reason == "signature unknown: only the call's syntax is judged"
    assert mon.final_upto(row) == len(row.text)                # nothing begun that may be cut
    assert _accept(mon, row, " count") is None and mon.final_upto(row) == 0
    assert _checked(mon, row, "=") == ["2"]                    # `count` given: the name goes on
    _accept(mon, row, "=")
    back = _accept(mon, row, "2")
    assert back is not None and back.reason == "wrong keyword" and back.length == 0
    mon, row = fresh()
    assert _checked(mon, row, " x)") == [" count", " order", " x", ")"]   # a keyword, or the end
    for t in (" order", "*", "**kw"):
        assert _checked(mon, row, t) is None, t
    assert [_accept(mon, row, t) for t in (" order", " = 3")] == [None, None]
    # a name, a line break, then `)`: still a positional argument after a keyword
    mon, row = fresh()
    assert _accept(mon, row, " x") is None and _checked(mon, row, "\n") is None
    _accept(mon, row, "\n")
    assert _checked(mon, row, ")") is not None
    mon, row = fresh("")                                       # no keyword yet: positions are free
    assert _checked(mon, row, " x)") is None and _checked(mon, row, ")") is None
    # and a name being read cannot repeat one: its text is not held back from the editor's stream
    assert _accept(mon, row, " count") is None and mon.final_upto(row) == len(row.text)
    # a definition's parameters are no call
    for before in ("def run(a=1, ", "class A(Base, metaclass=M, ", "async def run(\n    a=1,\n    "):
        mon, row = _monitor({}, before, tokens)
        assert mon.state != ARGS and not row.triggers, before
        assert _checked(mon, row, " x)") is None


def test_a_lambdas_parameters_are_not_the_calls_arguments():
    # `sorted(items, key=lambda a, b: …)`: the comma and the defaults of a lambda's parameters
    # are not the call's (`b` read as a positional argument after a keyword was refused)
    from groundcode.analysis.base import CallSignature, ParamSpec
    from groundcode.pycode import ArgScanner

    s = ArgScanner().feed("items, key=lambda a, b=(1, 2): a + b, c=lambda: 0, reverse=True")
    assert s.used == ["key", "c", "reverse"] and s.positional == 1 and s.lambdas == 0
    s = ArgScanner().feed("lambda a=1, b: a, x")
    assert s.used == [] and s.positional == 1
    assert ArgScanner().feed("mylambda, k=1").used == ["k"]
    sig = {"f": CallSignature("f", (ParamSpec("items", "either", True), ParamSpec("key", "either", False)))}
    tokens = ["", " b", " b:", ")", " c"]
    mon, row = _monitor(sig, "def run(xs):\n    f(xs, key=lambda a,", tokens)
    assert _checked(mon, row, " b:") is None and _accept(mon, row, " b:") is None
    assert _checked(mon, row, " c") is None and _accept(mon, row, " c") is None
    assert _checked(mon, row, ")") is None


def test_a_positional_only_parameters_name_may_go_to_kwargs():
    # `def f(a, /, **kw)`: `f(1, a=2)` passes `a=2` into `kw` — not a parameter bound twice
    from groundcode.analysis.base import CallSignature, ParamSpec

    f = {"f": CallSignature("f", (ParamSpec("a", "positional", True), ParamSpec("b", "either", False)),
                            var_keyword=True)}
    tokens = ["", " a", " b", "=", "2"]
    mon, row = _monitor(f, "def run():\n    f(1, ", tokens)
    assert [_accept(mon, row, t) for t in (" a", "=", "2")] == [None, None, None]
    mon, row = _monitor(f, "def run():\n    f(1, b=1, ", tokens)
    _accept(mon, row, " b")
    assert "=" not in _checked(mon, row, "=")                # `b` is bound: the name goes on


def test_an_unknown_signature_that_lands_after_the_call_closed_is_late():
    # not reproducible: the answer runs while decoding goes on; it lands (no signature) once the
    # call was closed — recorded as late, as a known one is (its record read `signature.params`)
    from groundcode.analysis.base import SignatureAnswer
    from groundcode.api import CodeContext
    from groundcode.decoding.guides.base import RowView
    from groundcode.decoding.guides.keyword_args import KeywordArgMonitor, WAIT
    from groundcode.decoding.vocab import VocabIndex

    class Later:
        done = False

        def result(self, timeout=0):
            return SignatureAnswer(None, failed="no signature") if self.done else None

    ticket = Later()

    class Slow:
        def ask(self, q):
            return ticket

        def deadline(self):
            return 1.0

    before = "def run():\n    x = foo("
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="", lex_prefix=before,
                      starts_at_line=False)
    mon, row = KeywordArgMonitor(Slow()), RowView(0, ctx, VocabIndex(["", ")", "\n"]))
    mon.reset(row)
    assert mon.pending is not None and _accept(mon, row, ")") is None
    ticket.done = True
    assert _accept(mon, row, "\n") is None and mon.state == WAIT
    assert [(r.receiver, r.failed_open, r.reason) for r in row.triggers] == [("foo(", True, "late")]
