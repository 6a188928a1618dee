"""Lexical questions answered by the one Python lexer (pycode.lex)."""
from groundcode.pycode import Lexer, binding_verdict, could_bind, receiver_before

HEAD = "def f(self):\n    x = 1\n"


def _code_dot(text):
    return Lexer(HEAD).dot_is_code(HEAD + text, len(HEAD + text) - 1)


def test_dot_is_code():
    assert _code_dot("    return self.")
    assert _code_dot("    foo(a,\n        b).")
    assert _code_dot("    y = [x for x in z].")
    assert not _code_dot("    s = 'abc.")
    assert not _code_dot('    s = """doc\n  more self.')
    assert not _code_dot("    # self.")
    assert not _code_dot("    y = 1.")
    assert _code_dot("    y = 'a' + s.")
    # a relative import's dots are no member access: after them comes a module or ` import`
    # (`from . import Manifest` was rolled back on a held-out package: the answer listed modules)
    assert not _code_dot("    from .")
    assert not _code_dot("    from ...")
    assert _code_dot("    from .pkg.")
    assert _code_dot("    import os.")


def test_lexer_survives_rewind():
    lx = Lexer(HEAD)
    text = HEAD + "    a = 1\n    b = 2\n    c."
    assert lx.dot_is_code(text, len(text) - 1)
    lx.rewind(len(HEAD) + 4)
    text2 = HEAD + "    s = 'x."
    assert not lx.dot_is_code(text2, len(text2) - 1)


def test_receiver_before():
    t = "    return self.items[0].name."
    assert receiver_before(t, len(t) - 1) == "self.items[0].name"
    t = "x = foo(a, b)."
    assert receiver_before(t, len(t) - 1) == "foo(a, b)"


def test_binding():
    assert could_bind("        ") and could_bind("a, ") and not could_bind("return ")
    assert not could_bind("x = ")
    assert binding_verdict(" = 1") and binding_verdict(": int = 1")
    assert binding_verdict(" == 1") is False and binding_verdict(" += 1") is False
    assert binding_verdict(".append(x)") is False and binding_verdict("[0] = 1") is False
    assert binding_verdict(", self.b = 1, 2\n") is True
    assert binding_verdict(", b)\n") is False
    assert binding_verdict(", ") is None and binding_verdict("  ") is None


def test_receiver_string_literal():
    t = '    return ", ".'
    assert receiver_before(t, len(t) - 1) == '", "'
    t = "    x = b'ab'."
    assert receiver_before(t, len(t) - 1) == "b'ab'"


def test_dot_after_inconsistent_dedent_is_still_code():
    head = "def f(self):\n    \"\"\"Doc.\"\"\"\n"
    lx = Lexer(head)
    t = head + "     (self.a, 1)\n    self."
    assert lx.dot_is_code(t, len(t) - 1)


def test_used_attributes_are_the_names_code_dots_into_not_strings_or_comments():
    from groundcode.pycode import used_attributes
    text = ('class A:\n    def f(self):\n        x = self.value + self.info.x  # self.nope\n'
            '        s = "self.notme"\n        return other.self.zzz, self.parent.kid\n')
    assert used_attributes(text, "self") == {"value", "info", "parent"}
    assert used_attributes(text, "self.parent") == {"kid"}


def test_a_backslash_newline_continues_a_single_quoted_string():
    # datasketch's HyperLogLog.merge: the dot of `precisions.` is inside the string, not a
    # trigger (it was, and a speculated name was rolled back)
    from groundcode.pycode import Lexer, code_tokens
    text = 'raise ValueError(\n    "different\\\n        precisions."\n)\nx = self.'
    assert code_tokens(text)[3] == '"different\\\n        precisions."'
    lexer = Lexer("")
    assert not lexer.dot_is_code(text, text.index("precisions.") + len("precisions"))
    assert lexer.dot_is_code(text, len(text) - 1)


def test_line_starts_are_the_same_token_by_token_as_in_one_scan():
    """Found by test_guides_property (a seed from the string hash it used): blank lines written
    one token at a time were each a line start, in one whitespace run only the first was, so a
    cut and rescan moved the names monitor's checked-line offset (final text differed)."""
    text = "x = f(\n  1)\n\n\n\n    y = 2 \\\n\n  z\n"
    whole = Lexer("")
    whole.scan(text, len(text))
    step = Lexer("")
    for k in range(1, len(text) + 1):
        step.scan(text, k)
    assert whole.line_starts() == step.line_starts()
    assert whole.line_starts() == [0, 12, 13, 14, 15, 28, 32]   # not inside ( ), nor after \
