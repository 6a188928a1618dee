"""Name narrowing over a candidate set (decoding/guides/narrowing.py): allowed tokens, feeding
text, owed text, hidden names, exact snapshots."""
from __future__ import annotations

from groundcode.decoding.guides.narrowing import Narrowing, is_dunder
from groundcode.decoding.vocab import VocabIndex

TOKENS = ["", "x", ".", "_", "reg", "registered", "_updates", "size", "(", "si", "ze", "__",
          "class", "__class__", ").", "foo", "size(", " "]
V = VocabIndex(TOKENS)


def _texts(ids):
    return {TOKENS[i] for i in ids}


def test_allowed_narrows_as_text_is_fed():
    n = Narrowing(V, {"size", "_registered_updates", "register"})
    first = _texts(n.allowed())
    assert {"size", "si", "_", "size(", "reg"} <= first and "foo" not in first and "(" not in first
    assert n.feed("si") is None and n.typed == "si"
    assert _texts(n.allowed()) == {"ze"}
    assert n.feed("ze(") == 2 and n.typed == "size"          # the name ended before `(`


def test_owed_text_comes_first():
    n = Narrowing(V, {"size"}, need=").")
    assert _texts(n.allowed()) == {")."}
    assert n.accepts(").") and not n.accepts("size")
    assert n.feed(").") is None and n.need == "" and n.accepts("size(")


def test_hidden_names_are_accepted_but_not_steered_to():
    n = Narrowing(V, {"size", "__class__"}, hide=is_dunder)
    assert n.accepts("__class__") and n.accepts("__") and n.fits("__class__")
    assert not any(t.startswith("__") for t in _texts(n.allowed()))
    assert "__class__" in _texts(n.allowed(steer=False))
    n.feed("__")                                             # written freely: now it may go on
    assert _texts(n.allowed()) == {"class"}
    assert n.suggestions() == [] and Narrowing(V, {"size", "__class__"}).suggestions() == ["size"]


def test_snapshot_restores_exactly():
    n = Narrowing(V, {"size"}, need=".")
    snap = n.snapshot()
    n.feed(".si")
    assert (n.need, n.typed) == ("", "si")
    n.restore(snap)
    assert (n.need, n.typed) == (".", "") and _texts(n.allowed()) == _texts(Narrowing(V, {"size"}, need=".").allowed())


def test_end_of_text_only_where_the_name_is_complete():
    # Regression: a token with no text (eos, <COMP>) was accepted in the middle of a member name.
    from groundcode.decoding.guides.narrowing import Narrowing
    from groundcode.decoding.vocab import VocabIndex
    vocab = VocabIndex(["", "app", "end", ".", "x"])
    n = Narrowing(vocab, {"append", "add"})
    assert not n.accepts("")                   # nothing written yet
    n.feed("app")
    assert not n.accepts("")                   # `app` is no member
    n.feed("end")
    assert n.accepts("") and n.typed == "append"
    owed = Narrowing(vocab, {"add"}, need="x.")
    assert not owed.accepts("")                # text still owed


def test_typescripts_private_and_dollar_names_are_spelled():
    """`this.#items` (a `#` opens a private name) and `this.value$` (`$` is an identifier
    character): narrowed like any name, neither cut short at the `#` or the `$`."""
    toks = ["", "#", "#items", "items", "it", "ems", "value", "$", "value$", ".", "(", "push", "x"]
    v = VocabIndex(toks)
    n = Narrowing(v, {"#items", "value$", "push"})
    first = {toks[i] for i in n.allowed()}
    assert {"#", "#items", "value", "value$", "push"} <= first and not {"items", "it", "x", "$"} & first
    assert n.accepts("#") and n.accepts("#items") and n.accepts("value$") and not n.accepts("items")
    assert n.feed("#") is None and n.typed == "#" and {toks[i] for i in n.allowed()} >= {"items", "it"}
    assert n.feed("items.") == 5 and n.typed == "#items"
    m = Narrowing(v, {"value$"})
    assert m.feed("value") is None and {toks[i] for i in m.allowed()} == {"$"}
    assert m.feed("$(") == 1 and m.typed == "value$"
    assert not Narrowing(v, {"value"}).accepts("value$")    # `value$` is another name


def test_no_follow_bans_a_character_right_after_the_complete_name():
    vocab = VocabIndex(["", "core", "co", "re", ".", ".x", "core.", " import", "(", "\n"])
    n = Narrowing(vocab, {"core"}, no_follow=".")
    ids = {vocab.texts[i] for i in n.allowed()}
    assert {"core", "co"} <= ids and "core." not in ids
    assert not n.accepts("core.") and n.accepts("core") and n.accepts("co")
    n.feed("core")
    after = {vocab.texts[i] for i in n.allowed()}
    assert {" import", "(", "\n"} <= after and not after & {".", ".x"}
    assert not n.accepts(".x") and n.accepts(" import")
    free = Narrowing(vocab, {"core"})                 # without it a dot may end the name
    free.feed("core")
    assert "." in {vocab.texts[i] for i in free.allowed()}


def test_a_specifier_ends_at_a_character_never_at_a_token_with_no_text():
    from groundcode.decoding.guides.narrowing import SPECIFIER
    vocab = VocabIndex(["", "./", "node", '"', '";', ".ts"])
    n = Narrowing(vocab, {"./node"}, run=SPECIFIER)
    n.feed("./")
    n.feed("node")
    after = {vocab.texts[i] for i in n.allowed()}
    assert {'"', '";'} <= after and "" not in after and ".ts" not in after
    assert not n.accepts("") and n.accepts('";')
    ident = Narrowing(vocab, {"node"})                  # a member name may end at end of text
    ident.feed("node")
    assert ident.accepts("")
