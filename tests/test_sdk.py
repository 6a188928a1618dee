"""SDK-aware analysis: boto3 clients resolve to their service's operations (botocore models), and
the monitored run can only call a real operation with real keyword arguments."""
from __future__ import annotations

from pathlib import Path

import pytest

from fake_analyzer import FakeBase
from groundcode.analysis.base import Analysis, MembersQuery, SignatureQuery
from groundcode.context import Splice
from groundcode.analysis.sdk import (ChainAnalyzer, SdkAnalyzer, client_bindings, client_methods,
                                     operation_map)
from groundcode.api import Generator, cursor_context
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.pycode import ArgScanner
from groundcode.decoding.vocab import VocabIndex
from groundcode.models.load import LoadedModel

from scripted import ScriptedLM, planted

SNIPPET = '''import boto3

client = boto3.client("s3")
# list the objects in my bucket
response = client.'''


def test_client_bindings_variants():
    code = '''import boto3
client = boto3.client("s3")
session = boto3.Session(profile_name="dev")
q = session.client('sqs', region_name="eu-west-1")
iam = boto3.Session().client(service_name="iam")
    self.ec2 = boto3.client(
        "ec2")
client = boto3.client("dynamodb")
x == boto3.client("s3")
'''
    assert client_bindings(code) == {"client": "dynamodb", "q": "sqs", "iam": "iam", "self.ec2": "ec2"}


def test_a_file_without_client_bindings_is_not_lexed(monkeypatch):
    """Every prefetch query asks the SDK analyzer first; a file that binds no client answers
    "unknown receiver" without lexing the whole text (a 2,000-line module once cost ~20 ms a
    query, nine queries a request)."""
    from groundcode.analysis import sdk as sdk_mod
    lexed = []
    real = sdk_mod._code_only
    monkeypatch.setattr(sdk_mod, "_code_only", lambda code: lexed.append(1) or real(code))
    big = "class A:\n    def f(self):\n        return self.x\n" * 500 + "def g(client):\n    client."
    a = SdkAnalyzer().members(big, Path("x.py"), big.count("\n") + 1, len("    client."), receiver="client")
    assert a.failed == "unknown receiver" and lexed == []
    # a file that does bind one is still read in scope
    code = SNIPPET + "\n"
    assert SdkAnalyzer().members(code, Path("x.py"), 5, len("response = client."),
                                 receiver="client").names == client_methods("s3")
    assert lexed


def test_members_and_signature_from_models():
    sdk = SdkAnalyzer()
    code = SNIPPET + "\n"
    line, col = 5, len("response = client.")
    a = sdk.members(code, Path("x.py"), line, col, receiver="client")
    assert "list_objects_v2" in a.names and "get_paginator" in a.names and "upload_file" in a.names
    assert "list_object" not in a.names and a.failed is None
    assert a.names == client_methods("s3")
    # the binding *before* the cursor counts; an unknown receiver is left to the next analyzer
    assert sdk.members(code, Path("x.py"), 2, 0, receiver="client").failed == "unknown receiver"
    assert sdk.members(code, Path("x.py"), line, col, receiver="other").names == frozenset()
    sig = sdk.signature(code, Path("x.py"), line, col, receiver="client", name="put_object")
    assert sig.required == ["Bucket", "Key"] and "Body" in sig.optional
    sig.to_inspect().bind(Bucket="b", Key="k", Body=b"")
    with pytest.raises(TypeError):
        sig.to_inspect().bind("b", "k")          # boto3 client methods take keywords only
    assert sdk.signature(code, Path("x.py"), line, col, receiver="client", name="nope") is None
    assert operation_map("sqs")["delete_message"].required == ("QueueUrl", "ReceiptHandle")


class _Fixed(FakeBase):
    def __init__(self, names):
        self.names = frozenset(names)
        self.asked = 0

    def members(self, code, path, line, column, *, receiver, cache_key):
        self.asked += 1
        return Analysis(receiver, self.names, 1.0, False, None if self.names else "empty")


def test_chain_sdk_first_else_next():
    nxt = _Fixed({"append", "pop"})
    chain = ChainAnalyzer([SdkAnalyzer(), nxt])
    code = SNIPPET + "\nitems = []\nitems."
    at = Splice(code, 5, len("response = client."), Path("x.py"))
    a = chain.ask(MembersQuery(at, "client")).result(0)
    assert "list_buckets" in a.names and nxt.asked == 0
    b = chain.ask(MembersQuery(Splice(code, 7, 6, Path("x.py")), "items")).result(0)
    assert b.names == {"append", "pop"} and nxt.asked == 1
    sig = chain.ask(SignatureQuery(Splice(code, 5, 18, Path("x.py")), "client", "list_buckets")).result(0)
    assert sig.signature is not None
    assert chain.ask(SignatureQuery(at, "items", "append")).result(0).signature is None


def test_chain_passes_a_prefetch_on_to_the_next_analyzer_at_once():
    """A prefetch's ticket is never read: the SDK's empty answer must not stop it there."""
    class _Asked(FakeBase):
        def __init__(self):
            self.prefetches = []

        def prefetched(self, query):
            self.prefetches.append(query.receiver)

    nxt = _Asked()
    code = SNIPPET + "\nitems = []\nitems."
    ChainAnalyzer([SdkAnalyzer(), nxt]).ask(MembersQuery(Splice(code, 7, 6, Path("x.py")), "items",
                                                         prefetch=True))
    assert nxt.prefetches == ["items"]


def test_argument_scanner():
    s = ArgScanner().feed('Bucket="a,)", Key=f(x=1), ')
    assert s.used == ["Bucket", "Key"] and s.argument_start() and not s.closed
    s = ArgScanner().feed('a == b, Max')
    assert s.used == [] and s.reading and s.ident == "Max"
    assert ArgScanner().feed('A="""x"),""", B=1)').closed


@pytest.fixture()
def snippet(tmp_path):
    f = tmp_path / "app.py"
    f.write_text(SNIPPET + "\n")
    return cursor_context(f, 5, len("response = client."), tmp_path)


def _gen(tiny_lm, rules, monitored: bool):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    lm = LoadedModel(ScriptedLM(tiny_lm, vocab, rules), tiny_lm.tokenizer, "scripted", "cpu", "float32")
    return Generator(lm, MonitorConfig(enabled=monitored))


def _first_line(gen, ctx):
    try:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=70))[0][0]
    finally:
        gen.close()
    return out, out.completion.split("\n")[0]


def test_monitored_run_calls_only_a_real_operation(tiny_lm, snippet):
    rules = planted('list_object(Bucket="b")\n')      # s3 has no `list_object`
    _, plain = _first_line(_gen(tiny_lm, rules, False), snippet)
    assert plain.startswith("list_object(")
    out, mon = _first_line(_gen(tiny_lm, rules, True), snippet)
    name = mon.split("(")[0]
    assert name in operation_map("s3") or name in client_methods("s3"), mon
    rec = out.triggers[0]
    assert rec.receiver == "client" and rec.chosen == name and rec.constrained
    assert rec.candidates == len(client_methods("s3"))


def test_monitored_run_passes_only_real_keywords(tiny_lm, snippet):
    rules = planted('list_objects_v2(Bucket="b", Prefx="p", Key="k")\n')
    _, plain = _first_line(_gen(tiny_lm, rules, False), snippet)
    assert plain == 'list_objects_v2(Bucket="b", Prefx="p", Key="k")'
    out, mon = _first_line(_gen(tiny_lm, rules, True), snippet)
    assert mon.startswith('list_objects_v2(Bucket="b", Prefix="p", '), mon
    sig = operation_map("s3")["list_objects_v2"].signature()
    used = ArgScanner().feed(mon[len("list_objects_v2("):]).used
    # `Key` is no parameter: redone as a real one, or the call closed (Bucket, the one
    # required parameter, was passed)
    assert used[:2] == ["Bucket", "Prefix"] and "Key" not in used and set(used) <= sig.keywords()
    kw = [t for t in out.triggers if t.receiver == "client.list_objects_v2("]
    assert kw and kw[0].constrained and kw[0].candidates == len(sig.params)


def test_keyword_only_call_gets_keywords_not_literals(tiny_lm, snippet):
    # the model wants positional literals and to close early; sqs.delete_message needs two
    # keywords: the monitored call binds
    f = snippet.path.parent / "q.py"
    f.write_text(SNIPPET.replace('"s3"', '"sqs"') + "\n")
    from groundcode.context import cursor_context as cc
    ctx = cc(f, 5, len("response = client."), f.parent)
    rules = planted('delete_message("url")\n')
    _, plain = _first_line(_gen(tiny_lm, rules, False), ctx)
    assert plain == 'delete_message("url")'
    out, mon = _first_line(_gen(tiny_lm, rules, True), ctx)
    from groundcode.evaluation.api_metric import judge
    ops = {n: op.signature() for n, op in operation_map("sqs").items()}
    assert mon.startswith("delete_message("), mon
    v = judge(mon + "\n", ["delete_message"], ops)
    assert v.category in ("valid", "no_invocation"), (mon, v)    # never invalid usage
    used = ArgScanner().feed(mon[len("delete_message("):]).used
    assert set(used) <= {"QueueUrl", "ReceiptHandle"} and used, mon


def test_a_client_is_followed_in_its_own_scope_only():
    # E11: the binding of the client variable is followed in the cursor's scope: a docstring's
    # example binds nothing, a function's client is not another function's, a parameter is not
    # followed, a module-level client is seen from functions that do not rebind it.
    from groundcode.analysis.sdk import scoped_service
    code = '''import boto3

def make():
    """Example:

        client = boto3.client("ec2")
    """
    client = boto3.client("s3")  # a comment: client = boto3.client("iam")
    return client.

def other(client):
    client.

def elsewhere():
    client.

def rebinds():
    client = boto3.client("s3")
    client = object()
    client.

queue = boto3.client("sqs")

def uses_global():
    queue.

class Store:
    def __init__(self):
        self.db = boto3.client("dynamodb")

    def get(self):
        self.db.
'''

    def at(marker, n=1):
        k = -1
        for _ in range(n):
            k = code.index(marker, k + 1)
        return k + len(marker)
    assert scoped_service(code, "client", at("return client.")) == "s3"
    assert scoped_service(code, "client", at("def other(client):\n    client.")) is None
    assert scoped_service(code, "client", at("def elsewhere():\n    client.")) is None
    assert scoped_service(code, "client", at("    client = object()\n    client.")) is None
    assert scoped_service(code, "queue", at("    queue.")) == "sqs"
    assert scoped_service(code, "self.db", at("        self.db.")) == "dynamodb"
    # and through the analyzer: an unrelated `client.` gets no SDK answer (the next one's turn)
    sdk = SdkAnalyzer()
    k = at("def elsewhere():\n    client.")
    line = code[:k].count("\n") + 1
    assert sdk.members(code, Path("x.py"), line, 11, receiver="client").failed == "unknown receiver"
