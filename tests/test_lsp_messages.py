"""What goes to a language server and comes back (analysis/lsp_messages.py), without a server:
a ranged didChange that rebuilds the new text exactly, completion lists as names, signature help
as a CallSignature or unknown."""
from __future__ import annotations

import random

from lsprotocol import types as T

from groundcode.analysis.lsp_messages import edit, language_id, members, settings, signature


def _apply(old: str, change) -> str:
    """The server's side: a range in (line, UTF-16 column) applied to `old`."""
    lines = old.split("\n")

    def index(pos):
        i = sum(len(l) + 1 for l in lines[:pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        units = 0
        for k, ch in enumerate(line):
            if units >= pos.character:
                return i + k
            units += len(ch.encode("utf-16-le")) // 2
        return i + len(line)
    r = change.range
    return old[:index(r.start)] + change.text + old[index(r.end):]


def test_a_ranged_change_rebuilds_the_new_text_exactly():
    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\n", "\r\n", "é", "😀", "self.", "\t"]
    for _ in range(3000):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        cut = sorted(rng.randrange(0, len(old) + 1) for _ in range(2))
        new = old[:cut[0]] + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 8))) + old[cut[1]:]
        change = edit(old, new)
        if isinstance(change, T.TextDocumentContentChangeWholeDocument):   # a lone CR in old
            assert "\r" in old.replace("\r\n", "") and change.text == new
            continue
        assert _apply(old, change) == new, (old, new, change)
    big = "".join(f"line {i}\n" for i in range(5000))
    small = edit(big, big.replace("line 2500\n", "line 2500 self.x\n"))
    assert small.range.start.line == 2500 and len(small.text) < 40      # the changed line only


def test_completion_lists_and_their_openness():
    K = T.CompletionItemKind
    items = [T.CompletionItem("add", kind=K.Method), T.CompletionItem("owner", kind=K.Field),
             T.CompletionItem("if", kind=K.Keyword), T.CompletionItem("for-loop", kind=K.Snippet)]
    names, kinds, failed = members(T.CompletionList(False, items), True, False)
    assert {"add", "owner"} <= names and kinds == {"add": "function", "owner": "instance"} and failed is None
    assert {"__name__", "__class__", "__dict__"} <= names and not {"if", "for"} & names   # dunders let through
    assert members(T.CompletionList(False, items), False, False)[0] == {"add", "owner"}   # a name start: as listed
    assert members(T.CompletionList(True, items), True, False)[2].startswith("incomplete")
    assert members(T.CompletionList(True, items), True, True)[2] is None      # complete after a dot
    assert members(T.CompletionList(True, items), False, True)[2].startswith("incomplete")
    dunders = [T.CompletionItem("__class__", kind=K.Field), T.CompletionItem("__doc__", kind=K.Field)]
    assert members(dunders, True, False)[2].startswith("untyped")
    assert members(None, True, False)[2] == "empty"


def test_at_a_name_start_an_item_offered_with_its_import_is_not_in_scope():
    # TypeScript's auto-imports (`data` names the module): 1,826 of 2,902 items in one answer
    K = T.CompletionItemKind
    items = [T.CompletionItem("Object", kind=K.Variable, data={"fileName": "/p/a.ts", "position": 9, "name": "Object"}),
             T.CompletionItem("StatementSync", kind=K.Class, sort_text="16",
                              label_details=T.CompletionItemLabelDetails(description="node:sqlite"),
                              data={"fileName": "/p/a.ts", "position": 9, "source": "node:sqlite",
                                    "name": "StatementSync", "autoImport": {"moduleSpecifier": "node:sqlite"}})]
    assert members(T.CompletionList(False, items), False, False)[0] == {"Object"}
    assert "StatementSync" in members(T.CompletionList(False, items), True, False)[0]   # after a dot: as listed


def _help(*sigs):
    return T.SignatureHelp(signatures=list(sigs))


def test_signature_help_read_whole_or_unknown():
    label = "(a, b: int = 1, /, c=2, *args, d, e: str = 'x', **kw) -> None"
    params = [T.ParameterInformation(label=p) for p in
              ["a", "b: int = 1", "/", "c=2", "*args", "d", "e: str = 'x'", "**kw"]]
    sig = signature(_help(T.SignatureInformation(label=label, parameters=params)))
    assert [(p.name, p.kind, p.required) for p in sig.params] == [
        ("a", "positional", True), ("b", "positional", False), ("c", "either", False),
        ("d", "keyword", True), ("e", "keyword", False)]
    assert sig.var_positional and sig.var_keyword and sig.keywords() == {"c", "d", "e"}
    lab = "put(self, key: str, *, ttl: int = 0)"
    offs = [T.ParameterInformation(label=(lab.index(x), lab.index(x) + len(x)))
            for x in ["self", "key: str", "*", "ttl: int = 0"]]
    sig = signature(_help(T.SignatureInformation(label=lab, parameters=offs)))
    assert sig.name == "put" and [p.name for p in sig.params] == ["key", "ttl"]
    assert sig.params[1].kind == "keyword" and not sig.var_keyword
    assert signature(_help(T.SignatureInformation("(x)"), T.SignatureInformation("(x, y)"))) is None  # no lists
    def info(label, *ps):
        return T.SignatureInformation(label, parameters=[T.ParameterInformation(p) for p in ps])
    sig = signature(_help(info("(x, y=1)", "x", "y=1"), info("(x, z)", "x", "z")))      # overloads
    assert sig is None                                  # that name a position differently
    sig = signature(_help(info("(x, y=1)", "x", "y=1"), info("(x, y, *, k)", "x", "y", "*", "k")))
    assert [(p.name, p.kind, p.required) for p in sig.params] == [("x", "either", True), ("y", "either", False),
                                                                   ("k", "keyword", False)]
    assert signature(_help(T.SignatureInformation("(…)", parameters=[T.ParameterInformation("…")]))) is None
    for unresolved in ("() -> Any", "(...) -> Unknown", "Unknown"):     # zuban, ty, pyrefly
        assert signature(_help(T.SignatureInformation(unresolved))) is None
    assert signature(None) is None
    lab = "(a, b, /, c, *, d=1)"           # marks a server left out of its parameter list
    sig = signature(_help(T.SignatureInformation(lab, parameters=[T.ParameterInformation(x) for x in "abcd"])))
    assert [(p.name, p.kind) for p in sig.params] == [("a", "positional"), ("b", "positional"),
                                                      ("c", "either"), ("d", "keyword")]
    sig = signature(_help(T.SignatureInformation("(a, /) -> int", parameters=[T.ParameterInformation("a")])))
    assert sig.params[0].kind == "positional"
    # TypeScript: `p?:` is optional, `...rest` takes any count; `name(): T` has no parameters,
    # known only where the caller says so (TypeScript's server shows it for a resolved callee)
    lab = "slice(start?: number, ...ends: number[]): string"
    sig = signature(_help(T.SignatureInformation(lab, parameters=[T.ParameterInformation("start?: number"),
                                                                  T.ParameterInformation("...ends: number[]")])))
    assert [(p.name, p.required) for p in sig.params] == [("start", False)] and sig.var_positional
    lab = "parse(value: number | (() => number), fn: (a: string) => void): number"
    sig = signature(_help(T.SignatureInformation(lab, parameters=[T.ParameterInformation("value: number | (() => number)"),
                                                                  T.ParameterInformation("fn: (a: string) => void")])))
    assert [(p.name, p.required) for p in sig.params] == [("value", True), ("fn", True)]   # `=>` is no default
    # no parameters is unknown for TypeScript too: `isAllOf(...matchers: M)` with M inferred
    # from no arguments is shown `isAllOf(): …` (the call audit's false blocks)
    assert signature(_help(T.SignatureInformation("isAllOf(): (action: any) => boolean")), typescript=True) is None
    lab = "push(cls: typeof A, to: number): void"          # a TypeScript parameter named cls
    sig = signature(_help(T.SignatureInformation(lab, parameters=[T.ParameterInformation("cls: typeof A"),
                                                                  T.ParameterInformation("to: number")])), typescript=True)
    assert [p.name for p in sig.params] == ["cls", "to"]
    lab = "resolve(value: void | PromiseLike<void>): void"   # `resolve()` of a Promise<void>
    sig = signature(_help(T.SignatureInformation(lab, parameters=[T.ParameterInformation(
        "value: void | PromiseLike<void>")])), typescript=True)
    assert not sig.params[0].required and not sig.required


def test_languages_and_settings():
    assert language_id("a/b.py") == "python" and language_id("x.tsx") == "typescriptreact"
    assert language_id("x.mjs") == "javascript"
    import sys
    assert settings("python") == {"pythonPath": sys.executable} and settings("other") is None
