"""The project's member vocabulary (analysis/vocabulary.py) and the dereference monitor's use
of it where a receiver's type is unknown."""
from __future__ import annotations

from pathlib import Path

from fake_analyzer import FakeBase
from groundcode.analysis.base import Analysis
from groundcode.analysis.vocabulary import BUILTIN_MEMBERS, ProjectVocabulary, member_names
from groundcode.api import CodeContext
from groundcode.decoding.guides.base import RowView
from groundcode.decoding.guides.dereference import NARROW, WAIT, DereferenceMonitor
from groundcode.decoding.vocab import VocabIndex


def test_member_names_are_what_code_writes_after_dots_defines_and_assigns():
    text = ("import os\n"
            "class Cart:\n"
            "    size: int\n"
            "    limit = 3\n"
            "    def add(self, item, qty=1):\n"
            "        # self.in_a_comment\n"
            "        note = 'self.in_a_string'\n"
            "        self.items.append(os.path.join(item, sep='/'))\n"
            "        return self.total == qty\n")
    names = member_names(text)
    assert {"Cart", "size", "limit", "add", "qty", "note", "items", "append", "path", "join", "sep",
            "total"} <= names
    assert not {"in_a_comment", "in_a_string", "os", "item", "self", "return", "import"} & names


def test_member_names_keep_what_came_before_code_that_does_not_tokenize():
    names = member_names("def f(self):\n    self.first = 1\n    return self.second(\n")
    assert {"f", "first", "second"} <= names


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "registry.py").write_text(
        "class Registry:\n    def latest_update(self):\n        return self._updates[-1]\n")
    (tmp_path / "pkg" / "cart.py").write_text(
        "class Cart:\n    def last(self):\n        return self.owner.only_on_disk()\n")
    (tmp_path / "pkg" / "shop.py").write_text(
        "def use(owner, x):\n    owner.latest_update()\n    owner.rows[0].latest_update()\n"
        "    return x.latest_update\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "lib.py").write_text("x.from_a_virtualenv = 1\n")
    return tmp_path


def test_project_vocabulary_counts_other_files_the_buffer_and_builtins_not_the_files_disk_copy(tmp_path):
    repo = _repo(tmp_path)
    v = ProjectVocabulary(repo)
    assert v.wait(10)
    cart = repo / "pkg" / "cart.py"
    names = v.names(cart, "class Cart:\n    def last(self):\n        return self.owner.", block=True)
    assert {"latest_update", "_updates", "Registry"} <= names          # another file
    assert {"Cart", "last", "owner"} <= names                          # the buffer
    assert "only_on_disk" not in names                                 # the file's disk copy
    assert "from_a_virtualenv" not in names                            # virtualenvs are skipped
    assert {"append", "items", "startswith"} <= names and BUILTIN_MEMBERS <= names
    # a file saved later is seen by the next scan
    (repo / "pkg" / "new.py").write_text("def made_later(): pass\n")
    v.refresh(force=True)
    v.settle()
    assert "made_later" in v.names(cart, "", block=True)


class FakeAnalyzer(FakeBase):
    def __init__(self, answers):
        self.answers = answers            # receiver -> (names, failed)
        self.calls = []

    def members(self, code, path, line, column, *, receiver, cache_key):
        self.calls.append(receiver)
        names, failed = self.answers.get(receiver, ((), "untyped"))
        return Analysis(receiver, frozenset(names), 1.0, False, failed)


TOKENS = ["", "self", ".", "owner", "latest_update", "get_latest_item", "(", ")", "\n", "        ",
          " ", "return", "_updates", "x", "size"]


def _mon_row(repo: Path, answers, before):
    from groundcode.analysis.vocabulary import project_vocabulary
    project_vocabulary(repo).wait(10)
    fa = FakeAnalyzer(answers)
    mon = DereferenceMonitor(fa, vocabulary=True)              # verify-first, as on the engine
    ctx = CodeContext(path=repo / "pkg" / "cart.py", repo=repo, before=before, after="",
                      lex_prefix=before[before.index("    def"):])
    row = RowView(0, ctx, VocabIndex(TOKENS))
    mon.reset(row)
    mon._vocab.names(ctx.path, mon._buffer, block=True)       # the background read, done
    return fa, mon, row


def _write(mon, row, toks):
    """Engine order per token: check (verify-first) → accept (checkpoints) → advance."""
    from groundcode.decoding.checkpoints import Checkpoints
    ck = getattr(row, "_ck", None) or Checkpoints(row, [mon])
    row._ck = ck
    for tok in toks:
        assert mon.check(row, TOKENS.index(tok)) is None, f"{tok!r} refused"
        ck.accept(TOKENS.index(tok))
        assert mon.advance(row, TOKENS.index(tok)) is None
        ck.mark()


OWNER_LITERAL = "class Cart:\n    def __init__(self):\n        self.owner = {}\n\n    def last(self):\n"
OWNER_PARAM = "class Cart:\n    def __init__(self, owner):\n        self.owner = owner\n\n    def last(self):\n"


def test_an_untyped_receiver_is_held_to_the_vocabulary_not_left_free(tmp_path):
    # only where the class's text shows that its value is the project's own (here a literal)
    repo = _repo(tmp_path)
    fa, mon, row = _mon_row(repo, {"self": (("owner",), None), "self.owner": ((), "untyped")},
                            OWNER_LITERAL)
    _write(mon, row, ["        ", "return", " ", "self", ".", "owner", "."])
    assert fa.calls[-1] == "self.owner" and mon.state == NARROW
    rec = row.triggers[-1]
    assert not rec.failed_open and rec.vocabulary == "untyped"
    # any project name is accepted; a name written nowhere is resampled towards what the
    # project writes after `owner.`
    assert mon.check(row, TOKENS.index("_updates")) is None
    redo = mon.check(row, TOKENS.index("get_latest_item"))
    assert {row.vocab.texts[i] for i in redo} == {"latest_update"}


def test_a_receiver_that_may_be_a_library_object_is_never_held(tmp_path):
    """The README fixture's loop (issue 30): `self.owner = owner` is a constructor argument,
    anything a caller passes (a library object whose members the project never writes); held
    to the project's names, `self.owner.` was steered to `get(` over and over. A parameter, a
    member of a member and a call's result fail open too."""
    repo = _repo(tmp_path)
    fa, mon, row = _mon_row(repo, {"self": (("owner",), None), "self.owner": ((), "untyped")},
                            OWNER_PARAM)
    _write(mon, row, ["        ", "return", " ", "self", ".", "owner", "."])
    rec = row.triggers[-1]
    assert mon.state == WAIT and rec.failed_open and rec.reason == "untyped" and rec.vocabulary is None
    fa, mon, row = _mon_row(repo, {}, "class Cart:\n    def last(self, x):\n")
    _write(mon, row, ["        ", "return", " ", "x", "."])
    rec = row.triggers[-1]
    assert "x" not in fa.calls and mon.state == WAIT
    assert rec.failed_open and rec.reason == "inferred: unannotated parameter" and rec.vocabulary is None
    fa, mon, row = _mon_row(repo, {"self": (("owner",), None), "self.owner": (("x",), None),
                                   "self.owner.x": ((), "untyped")}, OWNER_LITERAL)
    _write(mon, row, ["        ", "return", " ", "self", ".", "owner", ".", "x", "."])
    assert row.triggers[-1].failed_open and row.triggers[-1].vocabulary is None


def test_provenance_says_which_receivers_may_be_library_objects():
    from groundcode.decoding.guides.provenance import foreign
    body = ("    m = re.match(p, s)\n    n = 3\n    items = []\n    for k in items:\n        pass\n"
            "    with open(f) as fh:\n        pass\n    alias = n\n")
    assert foreign("m", [], body) == "assigned a call's result or another name"
    assert foreign("alias", [], body) == "assigned a call's result or another name"
    assert foreign("k", [], body) and foreign("fh", [], body)
    assert foreign("items", [], body) is None and foreign("n", [], body) is None
    assert foreign("x", ["self", "x"], body) == "a parameter"
    assert foreign("never_bound", [], body) == "bound where the text does not show"
    assert foreign("f(x)", [], body) and foreign("d[k]", [], body) and foreign("a.b", [], body)
    assert foreign("self.owner", [], OWNER_PARAM) and foreign("self.owner", [], OWNER_LITERAL) is None
    assert foreign("self.owner.x", [], OWNER_LITERAL) == "a member of a member"
    assert foreign("self", [], "") is None


def test_dynamic_classes_and_the_vocabulary_off_still_fail_open(tmp_path):
    repo = _repo(tmp_path)
    fa, mon, row = _mon_row(repo, {"self": ((), "dynamic: __getattr__")}, "class Cart:\n    def last(self):\n")
    _write(mon, row, ["        ", "return", " ", "self", "."])
    assert mon.state == WAIT and row.triggers[-1].failed_open and row.triggers[-1].vocabulary is None
    fa, mon2, row = _mon_row(repo, {}, "class Cart:\n    def last(self, x):\n")
    mon2.vocabulary = False
    mon2.reset(row)
    _write(mon2, row, ["        ", "return", " ", "x", "."])
    assert mon2.state == WAIT and row.triggers[-1].reason == "inferred: unannotated parameter"


def test_a_receiver_from_an_unresolved_import_still_fails_open(tmp_path):
    # its members are a library's the analyzer cannot see: the project need not write them
    repo = _repo(tmp_path)
    fa, mon, row = _mon_row(repo, {"self": (("owner",), None),
                                   "self.owner": ((), "unresolved import: pandas")},
                            "class Cart:\n    def last(self):\n")
    _write(mon, row, ["        ", "return", " ", "self", ".", "owner", "."])
    rec = row.triggers[-1]
    assert mon.state == WAIT and rec.failed_open and rec.reason == "unresolved import: pandas"
    assert rec.vocabulary is None


class _SlowVocab:
    """A vocabulary whose scan has not ended until `ready` is set."""
    def __init__(self, names):
        self.ready, self._names = False, frozenset(names)

    def names(self, path, buffer="", block=False):
        return self._names if self.ready or block else None

    def wait_names(self, path, buffer, timeout):
        return self._names if self.ready else None

    def after(self, path, buffer, receiver):
        return self._names if self.ready else frozenset()


def test_a_fresh_process_speculates_until_the_vocabulary_is_ready_then_verifies(tmp_path):
    # the first trigger of a process may come before the repository's scan has ended: the name
    # is tracked (SPEC) and checked once the vocabulary lands, not left free for good
    from groundcode.decoding.checkpoints import Checkpoints
    from groundcode.decoding.guides.base import as_rollback
    from groundcode.decoding.guides.dereference import SPEC
    repo = _repo(tmp_path)
    fa = FakeAnalyzer({})
    mon = DereferenceMonitor(fa, vocabulary=True)              # verify-first, speculation on
    before = "class Cart:\n    def last(self):\n        x = {}\n"
    ctx = CodeContext(path=repo / "pkg" / "cart.py", repo=repo, before=before, after="",
                      lex_prefix=before[before.index("    def"):])
    row = RowView(0, ctx, VocabIndex(TOKENS))
    mon.reset(row)
    slow = mon._vocab = _SlowVocab({"latest_update", "_updates"})
    ck = Checkpoints(row, [mon])
    cut = None
    for tok in ["        ", "return", " ", "x", ".", "get_latest_item", "("]:
        assert mon.check(row, TOKENS.index(tok)) is None
        ck.accept(TOKENS.index(tok))
        if tok == "get_latest_item":
            assert mon.state == SPEC and row.triggers[-1].reason == "pending"
            slow.ready = True                                   # the scan ends
        cut = as_rollback(mon.advance(row, TOKENS.index(tok)))
        ck.mark()
        if cut is not None:
            break
    assert cut is not None and cut.length == 5                  # back to right after `x.`
    rec = row.triggers[-1]
    assert rec.vocabulary == "untyped" and rec.asked and not rec.failed_open


def test_a_receiver_the_project_never_dots_into_is_steered_to_builtin_members(tmp_path):
    # nothing says which project names fit: a plain name is steered towards the builtin types'
    # members (an untyped loop variable is mostly a str, list or dict); a call or subscript
    # receiver is never held (provenance.py: it may be a library object)
    repo = _repo(tmp_path)
    fa, mon, row = _mon_row(repo, {}, "class Cart:\n    def last(self):\n")
    assert mon._steer_for("self.owner") == {"latest_update", "rows"}
    assert mon._steer_for("never_dotted") == BUILTIN_MEMBERS
    assert mon._steer_for("f(x)") == frozenset() and mon._steer_for("d[k]") == frozenset()
    TOK = TOKENS + ["registry", "append", "d", "[", "k", "]"]
    for receiver_toks, reason in ((["self", ".", "registry", "."], None), (["d", "[", "k", "]", "."], "untyped")):
        fa, mon, row = _mon_row(repo, {"self": (("registry",), None), "self.registry": ((), "untyped")},
                                "class Cart:\n    def last(self, d):\n        self.registry = []\n        d = {}\n")
        row.vocab = VocabIndex(TOK)
        mon.reset(row)
        mon._vocab.names(row.context.path, mon._buffer, block=True)
        for tok in ["        ", "return", " "] + receiver_toks:
            assert mon.check(row, TOK.index(tok)) is None
            row.tokens.append(TOK.index(tok))
            row.text += tok
            row.ends.append(len(row.text))
            mon.advance(row, TOK.index(tok))
        rec = row.triggers[-1]
        if reason is None:            # steered to builtin members: `size` is none, `append` is
            assert rec.vocabulary == "untyped" and not rec.failed_open
            redo = {TOK[i] for i in mon.check(row, TOK.index("get_latest_item"))}
            assert "append" in redo and "latest_update" not in redo
        else:
            assert rec.failed_open and rec.reason == reason and mon.state == WAIT


def test_the_scan_reads_only_regular_files(tmp_path):
    """Issue 28: a FIFO named *.py blocked the scan forever."""
    import os
    repo = _repo(tmp_path)
    os.mkfifo(repo / "pkg" / "pipe.py")
    v = ProjectVocabulary(repo)
    assert v.wait(10)
    assert "latest_update" in v.names(repo / "pkg" / "cart.py", "", block=True)
