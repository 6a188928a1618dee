"""State-machine tests of the dereference monitor, driven token by token with a hand-made
vocabulary and a fake analyzer (no model): trigger, narrowing, merged-dot verification,
return to waiting, fail-open, binding speculation and rollback."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fake_analyzer import FakeBase
from groundcode.analysis.base import Analysis
from groundcode.api import CodeContext
from groundcode.decoding.checkpoints import Checkpoints
from groundcode.decoding.guides.base import RowView, as_rollback
from groundcode.decoding.guides.dereference import FREE, NARROW, PENDING, WAIT, DereferenceMonitor
from groundcode.decoding.vocab import VocabIndex

TOKENS = ["", "self", ".", "_", "reg", "registered", "_updates", "append", "(", ")", "\n",
          "        ", " ", "=", "[]", ".append", "._", "x", "return", "updates", "size",
          ").", "fo", "foo", "o", "'", "#", "1."]
T = {t: i for i, t in enumerate(TOKENS)}


class FakeAnalyzer(FakeBase):
    def __init__(self, members):
        self.members_by_receiver = members
        self.calls = []

    def members(self, code, path, line, column, *, receiver, cache_key):
        self.calls.append((receiver, line, column, code))
        names = frozenset(self.members_by_receiver.get(receiver, ()))
        return Analysis(receiver, names, 1.0, False, None if names else "empty")


def _row(before="class A:\n    def f(self, x: Items):\n"):
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after="",
                      lex_prefix=before[before.index("    def"):])
    return RowView(0, ctx, VocabIndex(TOKENS))


def _feed(mon, row, tok, sampled=True):
    """Engine order: mask (if constrained) / check (if free) → accept → advance."""
    tid = T[tok]
    m = mon.mask(row)
    if m is None and sampled:
        redo = mon.check(row, tid)
        if redo is not None:
            return ("resample", set(row.vocab.texts[i] for i in redo))
    elif m is not None:
        assert tid in set(m.tolist()), f"{tok!r} not allowed under the mask"
    ck = _ck(mon, row)
    ck.accept(tid)
    p = as_rollback(mon.advance(row, tid))
    ck.mark()
    if p is not None:              # the engine takes the cut and tells the monitor
        ck.cut(p.length, [(mon, p)])
    return ("rollback", None if p is None else p.length)


def _ck(mon, row):
    """The engine's checkpoints of this row (made on the first token, after reset)."""
    ck = getattr(row, "_ck", None)
    if ck is None:
        ck = row._ck = Checkpoints(row, [mon])
    return ck


MEMBERS = {"self": ["_registered_updates", "size", "register"], "x": ["append", "add"]}


def test_trigger_narrow_and_return_to_wait():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "return", " ", "self"]:
        _feed(mon, row, tok)
        assert mon.state == WAIT and mon.mask(row) is None
    _feed(mon, row, ".")
    assert mon.state == NARROW and fa.calls[-1][0] == "self"
    # the analyzer saw the partial code with the cursor right after the dot
    receiver, line, col, code = fa.calls[-1]
    assert code.splitlines()[line - 1][:col].endswith("return self.")
    allowed = {row.vocab.texts[i] for i in mon.mask(row)}
    assert {"_", "size", "_updates"} & allowed == {"_", "size"}
    assert "reg" in allowed and "registered" not in allowed  # `register` vs `registered`
    assert "foo" not in allowed and "(" not in allowed
    _feed(mon, row, "_")
    allowed = {row.vocab.texts[i] for i in mon.mask(row)}
    assert allowed == {"reg", "registered"}          # only `_registered_updates` remains
    _feed(mon, row, "registered")
    assert {row.vocab.texts[i] for i in mon.mask(row)} == {"_", "_updates"}
    _feed(mon, row, "_updates")
    assert mon.state == NARROW                       # complete, but an end symbol must follow
    allowed = {row.vocab.texts[i] for i in mon.mask(row)}
    assert "(" in allowed and "." in allowed and "x" not in allowed and "_" not in allowed
    _feed(mon, row, ".append")                       # ends the name and triggers again on `.`
    assert row.triggers[0].chosen == "_registered_updates"
    assert row.triggers[0].constrained


def test_merged_dot_token_is_verified_and_resampled():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "return", " ", "self"]:
        _feed(mon, row, tok)
    # `._` is consistent with `_registered_updates`: accepted, narrowing continues after `_`
    kind, _ = _feed(mon, row, "._")
    assert kind == "rollback" and mon.state == NARROW
    assert {row.vocab.texts[i] for i in mon.mask(row)} == {"reg", "registered"}


def test_merged_dot_token_with_unknown_member_is_resampled_under_the_mask():
    fa = FakeAnalyzer({"x": ["add", "size"]})
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "return", " ", "x"]:
        _feed(mon, row, tok)
    kind, allowed = _feed(mon, row, ".append")     # `append` is not a member of x
    assert kind == "resample"
    assert ".append" not in allowed and "." in allowed and "._" not in allowed
    kind, _ = _feed(mon, row, ".", sampled=False)  # the engine resampled `.` under that mask
    assert mon.state == NARROW
    assert {row.vocab.texts[i] for i in mon.mask(row)} == {"size"}


def test_no_trigger_inside_strings_comments_and_numbers():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    for prefix in (["        ", "x", " ", "=", " ", "'", "self"], ["        ", "#", " ", "self"],
                   ["        ", "x", " ", "=", " ", "1."]):
        row = _row()
        mon.reset(row)
        for tok in prefix:
            _feed(mon, row, tok)
        if prefix[-1] != "1.":
            _feed(mon, row, ".")
        assert mon.state == WAIT and mon.mask(row) is None
    assert fa.calls == []


def test_empty_analysis_fails_open_and_is_counted():
    fa = FakeAnalyzer({})
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "return", " ", "x", "."]:
        _feed(mon, row, tok)
    assert mon.state == WAIT and mon.mask(row) is None
    assert row.triggers[-1].failed_open and row.triggers[-1].reason == "empty"


def test_binding_position_speculates_then_accepts_assignment():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == FREE and mon.mask(row) is None
    _feed(mon, row, "foo")
    _feed(mon, row, " ")
    assert mon.state == PENDING
    _feed(mon, row, "=")
    assert mon.state == WAIT and row.triggers[-1].binding and row.triggers[-1].chosen == "foo"


def test_binding_position_rolls_back_when_not_assigned():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "self", "."]:
        _feed(mon, row, tok)
    n_before = len(row.tokens)
    _feed(mon, row, "foo")
    kind, back = _feed(mon, row, ".append")
    assert back == n_before                          # keep `self.`, redo the name
    assert mon.state == NARROW and row.triggers[-1].rolled_back
    allowed = {row.vocab.texts[i] for i in mon.mask(row)}
    assert "foo" not in allowed and "size" in allowed


def _ctx_row(before, after="", tokens=TOKENS):
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, after=after,
                      lex_prefix=before[before.rindex("def") - before[:before.rindex("def")][::-1].index("\n"):])
    return RowView(0, ctx, VocabIndex(tokens))


def test_comment_line_above_does_not_hide_the_binding_position():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "#", " ", "x", "\n", "        ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == FREE                  # `self._base_url = ...` may be written


def test_attributes_assigned_in_the_class_and_the_generated_text_are_members():
    # Jedi's answer was computed while __init__'s body was absent (a shared class entry):
    # the class's text and the text already written still make `known`/`foo` members.
    fa = FakeAnalyzer({"self": ["size"]})
    before = "class A:\n    def f(self, x: Items):\n"
    after = "    def __init__(self):\n        self.known = {}\n\nclass B:\n    def g(self):\n        self.other = 1\n"
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _ctx_row(before, after)
    mon.reset(row)
    for tok in ["        ", "self", ".", "foo", " ", "=", " ", "x", "\n", "        ", "return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == NARROW
    assert mon.nar.names == {"size", "known", "foo"}          # not B's `other`


def test_unannotated_parameter_fails_open_with_a_reason():
    fa = FakeAnalyzer({"foo": ["a"]})
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row("class A:\n    def f(self, foo, z: int = 0):\n")
    mon.reset(row)
    for tok in ["        ", "return", " ", "foo", "."]:
        _feed(mon, row, tok)
    assert mon.state == WAIT and fa.calls == []
    assert row.triggers[-1].failed_open and row.triggers[-1].reason == "inferred: unannotated parameter"


def test_two_space_indented_code():
    fa = FakeAnalyzer({"x": ["append"], "self": ["size"]})
    before = "class A:\n  def f(self, x: Items,\n        y):\n    '''Doc.'''\n    "
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _ctx_row(before)
    mon.reset(row)
    assert mon._params == ["self", "x", "y"] and mon._annotations == {"x": "Items"}
    assert mon._body_indent == "    "
    for tok in ["self", ".", "foo", " ", "=", " ", "x", "\n", " ", " ", " ", " ", "return", " ", "x", "."]:
        _feed(mon, row, tok)
    assert row.triggers[0].binding and mon.state == NARROW
    assert {row.vocab.texts[i] for i in mon.mask(row)} >= {"append"}


def test_dunders_are_accepted_when_written_but_never_steered_to():
    fa = FakeAnalyzer({"self": ["size", "__class__", "__init__"]})
    mon = DereferenceMonitor(fa)                               # verify-first (the engine)
    toks = TOKENS + ["__", "class", "__class__"]
    row = _ctx_row("class A:\n    def f(self, x: Items):\n", tokens=toks)
    mon.reset(row)
    for tok in ["        ", "return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.check(row, toks.index("__class__")) is None    # written freely: accepted
    redo = mon.check(row, toks.index("foo"))                  # a non-member: resampled ...
    allowed = {toks[i] for i in redo}
    assert "size" in allowed and not any(t.startswith("__") for t in allowed)   # ... not to dunders


def test_a_cursor_inside_a_name_triggers_with_the_name_so_far():
    fa = FakeAnalyzer(MEMBERS)
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row("class A:\n    def f(self, x: Items):\n        return self._")
    mon.reset(row)
    assert mon.state == NARROW and fa.calls and fa.calls[-1][0] == "self"
    receiver, line, col, code = fa.calls[-1]
    assert code.splitlines()[line - 1][:col].endswith("return self.")
    assert mon.nar.typed == "_"
    assert {row.vocab.texts[i] for i in mon.mask(row)} == {"reg", "registered"}   # _registered_updates


def test_hidden_private_members_are_accepted_when_written_but_never_steered_to():
    # --hide-private hides `_name` members from suggestions; it must not forbid them (it did).
    class Hiding(FakeAnalyzer):
        def members(self, code, path, line, column, *, receiver, cache_key):
            names = frozenset({"size", "_registered_updates"})
            return Analysis(receiver, names, 1.0, False, None, {}, frozenset({"_registered_updates"}))
    mon = DereferenceMonitor(Hiding({}))                        # verify-first (the engine)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.check(row, T["_"]) is None                     # written freely: accepted
    allowed = {row.vocab.texts[i] for i in mon.check(row, T["foo"])}
    assert "size" in allowed and "_" not in allowed           # never steered to


def test_attributes_the_classs_code_reads_are_members():
    # A mixin reads `self.value` in another method (its host sets it): writing it is correct code,
    # never blocked, though no line of the class assigns it. Strings and comments do not count.
    fa = FakeAnalyzer({"self": ["size"]})
    before = "class A:\n    def f(self, x: Items):\n"
    after = ("    def g(self):\n        return self.fo + 1  # self.registered\n"
             "    def h(self):\n        return 'self.append'\n")
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _ctx_row(before, after)
    mon.reset(row)
    for tok in ["        ", "return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == NARROW
    assert mon.nar.names == {"size", "fo"}


def test_a_local_bound_to_an_unannotated_parameter_fails_open_as_inferred():
    # `updates = foo` (foo unannotated): Jedi would guess its type from call sites as it
    # would `foo`'s; a correct `updates.name` must not be rolled back
    fa = FakeAnalyzer({"updates": ["a"], "x": ["append"]})
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row("class A:\n    def f(self, foo, x: Items):\n        updates = foo\n")
    mon.reset(row)
    for tok in ["        ", "return", " ", "updates", "."]:
        _feed(mon, row, tok)
    assert mon.state == WAIT and not [c for c in fa.calls if c[0] == "updates"]
    assert row.triggers[-1].reason == "inferred: alias of the unannotated parameter foo"


def test_a_parameter_typed_in_its_docstring_is_asked_about_not_guessed():
    # Jedi infers `:type foo: Registry` as it would an annotation (not from call sites): the
    # monitor asks and narrows instead of failing open as "inferred"
    fa = FakeAnalyzer({"foo": ["size", "append"]})
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row('class A:\n    def f(self, foo, x):\n        """Do it.\n\n        :type foo: shop.Registry\n'
               '        :param x: no type given\n        """\n')
    mon.reset(row)
    assert mon._annotations == {"foo": "shop.Registry"}
    for tok in ["        ", "return", " ", "foo", "."]:
        _feed(mon, row, tok)
    assert fa.calls and mon.state == NARROW and mon.nar.names == {"size", "append"}
    for tok in ["size", "\n", "        ", "x", "."]:
        _feed(mon, row, tok)
    assert row.triggers[-1].reason == "inferred: unannotated parameter"


def test_docstring_types_reads_the_forms_jedi_reads():
    from groundcode.pycode import docstring_types
    body = ('    """Sum.\n\n    :type a: numpy.ndarray\n    :param int b: count\n    @type c: list of str\n'
            '    d : float\n    """\n    return a\n')
    assert docstring_types(body, ["a", "b", "c", "d"]) == {"a": "numpy.ndarray", "b": "int", "c": "list of str"}
    assert docstring_types('    """Unclosed\n    :type a: int\n', ["a"]) == {}
    assert docstring_types("    return a  # :type a: int\n", ["a"]) == {}


def test_call_sites_ask_about_an_unannotated_parameter():
    # MonitorConfig.call_sites: Jedi's call-site types answer for `foo` instead of failing open
    fa = FakeAnalyzer({"foo": ["size", "append"]})
    mon = DereferenceMonitor(fa, verify_first=False, call_sites=True)
    row = _row("class A:\n    def f(self, foo, z: int = 0):\n")
    mon.reset(row)
    for tok in ["        ", "return", " ", "foo", "."]:
        _feed(mon, row, tok)
    assert fa.calls and mon.state == NARROW and mon.nar.names == {"size", "append"}


def test_a_member_the_same_statement_assigns_is_not_one_on_its_right():
    # `self.foo = self.foo ...`: the right side runs before the assignment, so a member that
    # only this statement assigns does not exist there (pyuploadcare's
    # `self._request_limit = self._request_limit - value`, session 36: let through). Once the
    # statement is complete, it does.
    fa = FakeAnalyzer({"self": ["size"]})
    mon = DereferenceMonitor(fa, verify_first=False)
    row = _row()
    mon.reset(row)
    for tok in ["        ", "self", ".", "foo", " ", "=", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == NARROW and mon.nar.names == {"size"}
    for tok in ["size", "\n", "        ", "return", " ", "self", "."]:
        _feed(mon, row, tok)
    assert mon.state == NARROW and mon.nar.names == {"size", "foo"}
