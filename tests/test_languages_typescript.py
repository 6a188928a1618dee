"""Lexical facts about partial TypeScript (languages/typescript.py): which dots are member
accesses, with strings, template literals (nested `${…}`), comments, regular expressions and
numbers told apart; receivers before a dot; the scanner's checkpoints after a cut."""
from __future__ import annotations

from groundcode.languages.typescript import Lexer, receiver_before


def _dots(text: str) -> list[bool]:
    lx = Lexer("")
    return [lx.dot_is_code(text, k) for k, c in enumerate(text) if c == "."]


def test_which_dots_are_member_accesses():
    cases = {
        "this.registry.size": [True, True],
        "a?.b.c": [True, True],
        "obj!.x": [True],
        "const s = 'a.b'; s.length": [False, True],
        'x = "a.b" + y.z': [False, True],
        "// note.x\nfoo.bar": [False, True],
        "/* a.b\n c.d */ e.f": [False, False, True],
        "const n = 1.5 + .5 + x.y": [False, False, True],
        "[...items].map": [False, False, False, True],
        "const r = /a.b/g.test(s)": [False, True],
        "const q = a / b.c": [True],
        "return /x./.source": [False, True],
        "`${a.b} and c.d ${e.f}`.trim": [True, False, True, True],
        "`outer ${`inner ${x.y}`.length} z.w`": [True, True, False],
        "if (ok) /re.x/.test(v)": [False, True],
        "const big = 10n; big.toString": [True],
        "0x1f.toString": [True],
    }
    for text, want in cases.items():
        assert _dots(text) == want, (text, _dots(text))


def test_an_unterminated_string_or_comment_ends_where_partial_code_says():
    assert _dots("const s = 'it.s\nfoo.bar") == [False, True]      # a string ends with its line
    assert _dots("/* open comment a.b") == [False]                   # a comment runs to the end
    assert _dots("const t = `open ${a.b") == [True]                  # inside `${`: code


def test_growing_text_and_a_cut_back_use_the_checkpoints():
    lx = Lexer("class Cart {\n  add(item: string) {\n")
    text = "class Cart {\n  add(item: string) {\n    const s = `x ${this.registry"
    assert lx.dot_is_code(text, text.index("this.") + 4)
    cut = len("class Cart {\n  add(item: string) {\n")
    lx.rewind(cut)
    text2 = text[:cut] + "    return this.registry."
    assert lx.dot_is_code(text2, len(text2) - 1)
    assert lx.line_start() <= cut


def test_receivers():
    cases = {
        "return this.registry.": "this.registry",
        "foo(x)[0].": "foo(x)[0]",
        "const n = obj!.": "obj!",
        "a?.b?.": "a?.b",
        "'a,b'.": "'a,b'",
        "new Map<string, number>().": "Map<string, number>()",
        "this.#client.": "this.#client",
        "if (!UUID.": "UUID",
        "return !!this.a!.": "this.a!",
    }
    for text, want in cases.items():
        assert receiver_before(text, len(text) - 1) == want, text


def test_incremental_answers_equal_a_fresh_scan_and_nothing_raises():
    import random
    rng = random.Random(5)
    pieces = ["a", ".", "b", " ", "\n", "'", '"', "`", "${", "}", "{", "/", "*", "//", "/*", "*/",
              "1", "0x", "(", ")", "if", "return", "\\", "[", "]", "?.", "...", "=", ";"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 40)))
        grown = Lexer("")
        for k in range(len(text)):
            fresh = Lexer("").state_at(text, k)
            assert grown.state_at(text, k) == fresh, (text, k)
        cut = rng.randrange(0, len(text) + 1)
        grown.rewind(cut)
        for k in range(len(text)):
            assert grown.state_at(text, k) == Lexer("").state_at(text, k), (text, k, cut)


def test_bodies_of_functions_and_methods():
    from groundcode.languages.typescript_bodies import bodies
    src = '''import { Registry } from "./registry";

/** A cart — of ünïcode things. */
export class Cart {
  private registry = new Registry();
  constructor(public owner: string) {}

  /** Add an item and record it. */
  add(item: string): number {
    this.registry.register(item);
    return this.registry.size;
  }

  abstract?(): void;
}

/// The total of a cart,
/// in items.
export function total(c: Cart): number {
  const n = c.add("x");
  return n;
}

const arrow = (x: number) => {
  return x + 1;
};
'''
    got = {b.qualname: b for b in bodies(src)}
    assert set(got) == {"Cart.add", "total"}               # one-line and bodiless ones left out
    add = got["Cart.add"]
    assert add.kind == "method" and add.doc == "/** Add an item and record it. */"
    assert src[add.header_start:add.body_start].startswith("add(item: string): number {")
    assert src[add.body_start:add.body_end].strip() == "this.registry.register(item);\n    return this.registry.size;"
    assert src[add.body_end] == "}" and add.line == 9
    assert got["total"].kind == "function" and got["total"].doc == "/// The total of a cart,\n/// in items."


def test_the_analyzers_view_closes_what_the_cut_left_open():
    """A line written up to `obj.` (its rest not yet written) leaves its `(` open and lost the `{`
    whose `}` follows: the splice closes the one and adds the other, so the class does not end
    early for TypeScript's parser (bson's `if (!UUID.` lost every static member declared later)."""
    from groundcode.context import CodeContext
    from groundcode.languages.typescript_blocks import close_line
    before = "class U {\n  static a(s: string) {\n    if (!U."
    after = "\n      throw new Error(`${s}`);\n    }\n    return s;\n  }\n  static isValid(s: string) { return !!s; }\n}\n"
    assert close_line(before, 0, "", after) == ") {"
    ctx = CodeContext(path="u.ts", repo=".", before=before, after=after)
    sp = ctx.splice("")
    assert sp.code.startswith(before + ") {\n") and (sp.line, sp.column) == (3, len("    if (!U."))
    # written text counts: its own brackets are closed where it opened them (`{ k: U.` in a call)
    assert close_line("class U {\n  m() {\n", 0, "    f({ k: U.", "\n  }\n}\n") == "})"
    # a block the written text opened and `after` does not close: closed on the next line
    assert close_line("class U {\n  m() {\n", 0, "    if (x) {\n      U.", "\n  }\n}\n") == "\n}"
    # a name the cursor sits in is dropped; brackets are counted as before
    assert close_line(before + "isV", 3, "", after) == ") {"
    # the rest of the user's line is theirs: its brackets are not closed again
    assert close_line(before, 0, "", "isValid(s)) {\n throw 1;\n }\n }\n}\n") == ""
    # a body being written (its `after` starts with the method's own `}`): a block the written
    # text left open is closed, so the class keeps the members declared after the method (mobx's
    # spliceWithArray_ was missing from `this.` inside updateArrayLength_)
    body_after = "}\n\n  later() { return 1; }\n}\n"
    assert close_line("class U {\n  m() {", 0, "\n    if (x) {\n      this.", body_after) == "\n}"
    assert close_line("class U {\n  m() {", 0, "\n    f(this.", body_after) == ")"
    # balanced already: nothing (a template's `${…}` and a string's braces are not code)
    assert close_line("function f() {\n  const t = `${a}` + '{';\n  ", 0, "a.", "\n}\n") == ""
    # cut inside a template's `${`: the substitution and the literal are closed, inner brackets
    # first, else the rest of the file is the template's text (lumino's `${this.min}`: the
    # members declared after the method were lost)
    assert close_line("class V {\n  m() {\n", 0, "    log(`a ${f(this.", "\n  }\n  min = 1\n}\n") == ")}`)"
    assert close_line("class V {\n  m() {\n", 0, "    x = `n: ${this.", "\n  }\n  min = 1\n}\n") == "}`"
    # a member cut before a line that starts a statement: `this.` + `if (…) {` reads as the call
    # `this.if(…)` and a block that breaks the class (lumino's DataGrid lost its private members)
    assert close_line("class V {\n  m() {\n", 0, "    let s = this.", "\n\n    // c\n    if (s) {}\n  }\n}\n") == ";"
    assert close_line("class V {\n  m() {\n", 0, "    let s = this.", "\n      .chain()\n  }\n}\n") == ""
    assert CodeContext(path="u.py", repo=".", before="x = (a.", after="\n").splice("").code == "x = (a.\n\n"


def test_braces_the_cursors_line_opened_in_an_expression():
    """A cursor after `foo({ a: 1, b: ` may close that `{` (and the call) without leaving its block;
    after `if (x) {` the brace opens the cursor's block. The bracket scan resumes from checkpoints
    for a text that grows or changes at its end, with the answer a fresh scan gives."""
    from groundcode.languages.typescript_blocks import _brackets_at_end, inline_braces
    assert inline_braces("class A {\n  m() {\n    foo({ a: 1, b: ") == 1
    assert inline_braces("class A {\n  m() {\n    if (x) {   ") == 0
    assert inline_braces("class A {\n  m() {\n    if (x) { return a.") == 1
    assert inline_braces("class A {\n  m() {\n    foo(", "{ a: ") == 1       # the prompt's healed tail
    assert inline_braces("const t = `${\n  x}` + { a: ") == 1                # a template's `${` is not one
    from groundcode.languages import typescript_blocks as typescript
    big = "class A {\n" + "  m() { return { a: [1, 2], b: `x${y}` }; }\n" * 400 + "  n() {\n    f({ k: `${"
    answers = {}
    for cut in (len(big), len(big) - 7, 9000, 9001, 17000, 20, len(big)):   # checkpoints reused
        answers[cut] = _brackets_at_end(big[:cut])[1]
    typescript._scans.clear()
    for cut, opened in answers.items():
        typescript._scans.clear()                   # a fresh scan each
        assert _brackets_at_end(big[:cut])[1] == opened, cut
    assert [c for _, c in answers[len(big)]] == ["{", "{", "(", "{"]
