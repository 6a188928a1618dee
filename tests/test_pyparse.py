"""pyparse: Python's parser behind one lock, its spurious SystemError (CPython 3.11's shared
recursion counter, gh-106905) retried; every parse of groundcode goes through it."""
from __future__ import annotations

import ast
import re
import threading
import time
from pathlib import Path

import pytest

from groundcode import pyparse

SRC = Path(pyparse.__file__).parent
SPURIOUS = "AST constructor recursion depth mismatch (before=147, after=34)"


def test_the_race_s_error_is_retried_and_the_tree_returned(monkeypatch):
    calls, real = [], pyparse._parse

    def flaky(source, *args, **kwargs):
        calls.append(source)
        if len(calls) == 1:
            raise SystemError(SPURIOUS)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pyparse, "_parse", flaky)
    tree = pyparse.parse("x = f(1)\n")
    assert isinstance(tree, ast.Module) and isinstance(tree.body[0], ast.Assign)
    assert len(calls) == 2


def test_other_errors_are_raised_as_ast_parse_raises_them(monkeypatch):
    with pytest.raises(SyntaxError):
        pyparse.parse("def f(:\n")
    assert isinstance(pyparse.parse("a.b", mode="eval"), ast.Expression)

    def broken(*args, **kwargs):
        raise SystemError("something else")

    monkeypatch.setattr(pyparse, "_parse", broken)
    with pytest.raises(SystemError, match="something else"):
        pyparse.parse("x\n")

    def always(*args, **kwargs):
        raise SystemError(SPURIOUS)

    monkeypatch.setattr(pyparse, "_parse", always)      # not forever: the third try's error is raised
    with pytest.raises(SystemError, match="recursion depth mismatch"):
        pyparse.parse("x\n")


def test_parses_on_several_threads_run_one_at_a_time(monkeypatch):
    inside, most = [0], [0]
    guard = threading.Lock()

    def slow(source, *args, **kwargs):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)
        with guard:
            inside[0] -= 1
        return ast.Module(body=[], type_ignores=[])

    monkeypatch.setattr(pyparse, "_parse", slow)
    threads = [threading.Thread(target=lambda: [pyparse.parse("x\n") for _ in range(5)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_groundcode_parses_only_through_pyparse():
    direct = [f"{p.relative_to(SRC)}:{i}" for p in sorted(SRC.rglob("*.py")) if p.name != "pyparse.py"
              for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"\bast\.parse\(|PyCF_ONLY_AST|literal_eval\(", line)]
    assert direct == []
