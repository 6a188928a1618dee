"""--stop line|statement: the StopAt guide ends a completion after its first line or statement."""
from __future__ import annotations

from pathlib import Path

from groundcode.context import CodeContext
from groundcode.decoding.guides.base import RowView
from groundcode.decoding.guides.stop_at import StopAt
from groundcode.decoding.vocab import VocabIndex

TOKENS = ["", "x", " =", " foo", "(", "a", ",", "\n", "    ", "b", ")", "\n    ", "y", " '", "'", "#"]
T = {t: i for i, t in enumerate(TOKENS)}


def _run(kind, toks, before="def f():\n    "):
    ctx = CodeContext(path=Path("a.py"), repo=Path("."), before=before, lex_prefix=before,
                      starts_at_line=False)
    row = RowView(0, ctx, VocabIndex(TOKENS))
    g = StopAt(kind)
    g.reset(row)
    for tok in toks:
        row.tokens.append(T[tok])
        row.text += tok
        row.ends.append(len(row.text))
        g.advance(row, T[tok])
        s = g.stop(row)
        if s is not None:
            return row.text[: s.cut], s.reason
    return row.text, None


def test_line_stops_at_the_first_newline():
    assert _run("line", ["x", " =", " foo", "(", "a", ",", "\n", "    ", "b", ")", "\n"]) == ("x = foo(a,\n", "line")


def test_statement_waits_for_the_brackets_to_close():
    toks = ["x", " =", " foo", "(", "a", ",", "\n", "    ", "b", ")", "\n    ", "y"]
    assert _run("statement", toks) == ("x = foo(a,\n    b)\n", "statement")


def test_comment_lines_and_strings_do_not_end_a_statement():
    toks = ["#", " foo", "\n    ", "x", " =", " '", "a", "'", "\n", "y"]
    text, why = _run("statement", toks)
    assert text == "# foo\n    x = 'a'\n" and why == "statement"


def _run_ts(kind, toks, before="function f() {\n  "):
    vocab = sorted(set(toks) | {""})
    ctx = CodeContext(path=Path("a.ts"), repo=Path("."), before=before, starts_at_line=False)
    row = RowView(0, ctx, VocabIndex(vocab))
    g = StopAt(kind)
    g.reset(row)
    snap = None
    for tok in toks:
        if tok == "<snap>":
            snap = (g.snapshot(), row.text, list(row.tokens), list(row.ends))
            continue
        if tok == "<back>":
            g.restore(row, snap[0])
            row.text, row.tokens, row.ends = snap[1], snap[2], snap[3]
            continue
        row.tokens.append(vocab.index(tok))
        row.text += tok
        row.ends.append(len(row.text))
        g.advance(row, vocab.index(tok))
        s = g.stop(row)
        if s is not None:
            return row.text[: s.cut], s.reason
    return row.text, None


def test_a_typescript_statement_ends_where_typescript_says():
    """A statement in a .ts file: brackets closed, not inside a string, template literal or
    comment, the line not continued by an operator — not Python's tokenizer (`//` is a comment,
    a template's newline is text, an `if` block ends at its `}`)."""
    assert _run_ts("statement", ["foo(a,", "\n", "  b);", "\n", "bar();\n"]) == ("foo(a,\n  b);\n", "statement")
    assert _run_ts("statement", ["// why\n", "x = `a", "\n", "b`;", "\n", "y;\n"]) == ("// why\nx = `a\nb`;\n", "statement")
    assert _run_ts("statement", ["if (x) {", "\n", "  y();", "\n", "}", "\n", "z;\n"]) == ("if (x) {\n  y();\n}\n", "statement")
    assert _run_ts("statement", ["const s = a +", "\n", "  b", "\n", "c\n"]) == ("const s = a +\n  b\n", "statement")
    assert _run_ts("statement", ["i++", "\n", "j\n"]) == ("i++\n", "statement")
    assert _run_ts("statement", ["\n", "  x = 1;", "\n"]) == ("\n  x = 1;\n", "statement")
    # a rollback restores the scanner: the text written after it is what counts
    assert _run_ts("statement", ["call(", "<snap>", "a", "<back>", "b)", "\n", "c\n"]) == ("call(b)\n", "statement")
    assert _run_ts("line", ["a.b(", "\n", "c)\n"]) == ("a.b(\n", "line")
