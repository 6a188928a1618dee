"""API index: botocore operations and statically read packages, stored in SQLite, found by BM25."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from groundcode.retrieval.api_entry import first_sentence, strip_html
from groundcode.retrieval.api_index import ApiIndex
from groundcode.retrieval.api_sources import botocore_entries, python_entries

PKG = '''\
"""A package that must never be imported by the indexer."""
raise RuntimeError("imported!")
'''
MOD = '''\
def send(message, *attachments, retries=3, **headers):
    """Send a message to the queue. More text here."""


class Mailbox:
    """A mailbox holding messages."""

    def __init__(self, owner, capacity=10):
        self.owner = owner

    def drain(self, limit, /, *, dry_run=False):
        """Remove up to limit messages."""

    @staticmethod
    def parse(raw):
        """Parse a raw message."""

    def _private(self):
        pass
'''


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("pkgs")
    (root / "mailpkg").mkdir()
    (root / "mailpkg" / "__init__.py").write_text(PKG)
    (root / "mailpkg" / "core.py").write_text(MOD)
    import sys
    sys.path.insert(0, str(root))
    try:
        entries = list(botocore_entries(["s3", "sqs"])) + list(python_entries(["mailpkg"]))
    finally:
        sys.path.remove(str(root))
    assert "mailpkg" not in sys.modules
    return ApiIndex.build(entries, tmp_path_factory.mktemp("idx") / "api", {"test": True})


def test_botocore_operations_are_client_methods(index):
    (e,) = index.lookup("list_objects_v2", "s3")
    assert e.qualname == "s3.list_objects_v2" and e.kind == "operation"
    assert e.required == ["Bucket"] and "Prefix" in e.optional and "ContinuationToken" in e.optional
    assert e.source.startswith("botocore==")
    assert "<" not in e.documentation and "Parameters:" in e.documentation
    assert e.description and not e.description.lower().startswith("this operation is not supported")
    (d,) = index.lookup("delete_message", "sqs")
    assert d.required == ["QueueUrl", "ReceiptHandle"]
    assert index.exists("send_message", "sqs") and not index.exists("send_message", "s3")
    assert not index.exists("list_buckets_v3")
    assert index.meta()["test"] is True


def test_python_entries_statically(index):
    (f,) = index.lookup("send", "mailpkg.core")
    assert f.kind == "function" and f.var_positional and f.var_keyword
    assert f.params == [["message", "either", True], ["retries", "keyword", False]]
    assert f.description == "Send a message to the queue."
    (c,) = index.lookup("Mailbox")
    assert c.kind == "class" and c.params == [["owner", "either", True], ["capacity", "either", False]]
    (m,) = index.lookup("drain")
    assert m.qualname == "mailpkg.core.Mailbox.drain"
    assert m.params == [["limit", "positional", True], ["dry_run", "keyword", False]]
    (p,) = index.lookup("parse")                      # staticmethod keeps its first parameter
    assert p.params == [["raw", "either", True]]
    assert not index.lookup("_private")
    sig = m.signature().to_inspect()
    sig.bind(5, dry_run=True)
    with pytest.raises(TypeError):
        sig.bind(limit=5)                              # positional-only


def test_bm25_finds_the_api_from_a_near_miss(index):
    hits = index.search("list_object Bucket", k=3, namespace="s3")
    assert [e.name for e, _ in hits][:1] in (["list_objects"], ["list_objects_v2"])
    assert all(e.namespace == "s3" for e, _ in hits)
    sqs = index.search(["receive", "message"], k=1)
    assert sqs[0][0].qualname == "sqs.receive_message"
    assert index.search("zzzz qqqq") == []


def test_reopen_and_cli(index, tmp_path):
    again = ApiIndex.open(index.directory)
    assert len(again) == len(index) > 100
    from groundcode.cli import app
    r = CliRunner().invoke(app, ["index", "api", "--services", "sqs", "-o", str(tmp_path / "i")])
    assert r.exit_code == 0, r.output
    assert "entries ->" in r.output
    r = CliRunner().invoke(app, ["index", "api-search", "delete message queue", "--index",
                                 str(tmp_path / "i"), "-k", "1", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.splitlines()[0])["name"] in ("delete_message", "delete_message_batch")
    r = CliRunner().invoke(app, ["index", "api", "--services", "nosuchsvc", "-o", str(tmp_path / "j")])
    assert r.exit_code == 2 and "unknown botocore service" in r.output


def test_text_helpers():
    assert strip_html("<p>Deletes a <code>Queue</code> &amp; more.</p><ul><li>a</li></ul>") == \
        "Deletes a Queue & more.\n\n- a"
    assert first_sentence("This operation is not supported for directory buckets. Returns objects. "
                          "More.") == "Returns objects."


def test_index_out_never_replaces_a_directory_that_is_not_an_index(tmp_path):
    """Issue 28: `index api|snippets --out DIR` deleted DIR whatever it held."""
    from groundcode.cli import app
    src = tmp_path / "project"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "mod.py").write_text("x = 1\n")
    for cmd in (["index", "api", "--services", "sqs"], ["index", "snippets", "--no-dense"]):
        r = CliRunner().invoke(app, [*cmd, "-o", str(src)])
        assert r.exit_code != 0 and "holds no" in r.output, r.output
        assert (src / "pkg" / "mod.py").read_text() == "x = 1\n"
    # an index of ours is replaced, and the old one stays until the new one is complete
    out = tmp_path / "idx"
    assert CliRunner().invoke(app, ["index", "api", "--services", "sqs", "-o", str(out)]).exit_code == 0
    from groundcode.retrieval import api_index

    def broken(keys):
        raise RuntimeError("injected: the build fails half way")
    real = api_index.BM25.build
    api_index.BM25.build = broken
    try:
        r = CliRunner().invoke(app, ["index", "api", "--services", "sqs", "-o", str(out)])
    finally:
        api_index.BM25.build = real
    assert r.exit_code != 0
    assert len(ApiIndex.open(out)) > 10                                  # the old index is intact
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".idx.")]   # nothing left over
