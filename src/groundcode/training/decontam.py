"""Decontamination: hashes of normalised function text, so benchmark functions stay out of training.

A function is normalised by parsing it and dumping its AST without the docstring, so formatting,
comments, quotes and docstring edits do not hide a copy. Benchmark tasks are read from JSONL(.gz)
files; every string field that parses to one or more functions contributes their hashes (and the
usual split fields - signature/prompt + body/reference - are joined first).
Not here: the corpus walk that drops files (training/corpus.py). Test: tests/test_training_corpus.py.
"""
from __future__ import annotations

import ast
import hashlib
import textwrap
from pathlib import Path

from ..jsonl import read_jsonl
from .. import pyparse

# Fields that hold a whole function, and (head, body) pairs that make one when joined.
WHOLE_FIELDS = ("function", "code", "reference_function", "solution", "canonical_solution", "reference")
SPLIT_FIELDS = (("signature", "body"), ("signature", "reference"), ("prompt", "canonical_solution"),
                ("prompt", "reference"), ("signature_docstring", "reference_body"),
                ("prompt", "reference_body"), ("signature", "reference_body"))


def _has_docstring(body: list) -> bool:
    return bool(body) and isinstance(body[0], ast.Expr) \
        and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str)


def function_hashes(tree: ast.AST) -> set[str]:
    """Hashes of every (nested) function in an already parsed module."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(hash_function(node))
    return out


def hash_function(node: ast.AST) -> str:
    """sha1 of the function's AST dump without its docstring (the name is part of it)."""
    body = node.body
    if _has_docstring(body):
        # Swap the body for the dump and put it back: cheaper than deep-copying every function.
        node.body = body[1:] or [ast.Pass()]
    try:
        dump = ast.dump(node, annotate_fields=False, include_attributes=False)
    finally:
        node.body = body
    return hashlib.sha1(dump.encode()).hexdigest()


def text_function_hashes(text: str) -> set[str]:
    """Hashes of the functions in a code string; empty when it does not parse as code."""
    for candidate in (text, textwrap.dedent(text)):
        try:
            return function_hashes(pyparse.parse(candidate))
        except (SyntaxError, ValueError):
            continue
    return set()


def _candidate_texts(record: dict) -> list[str]:
    texts = [record[f] for f in WHOLE_FIELDS if isinstance(record.get(f), str)]
    for head, body in SPLIT_FIELDS:
        if isinstance(record.get(head), str) and isinstance(record.get(body), str):
            texts.append(record[head].rstrip("\n") + "\n" + record[body])
    return texts


def read_task_hashes(paths: list[str | Path]) -> tuple[set[str], dict]:
    """All function hashes of the benchmark tasks in `paths`, plus counts (records, functions)."""
    hashes: set[str] = set()
    records = without = 0
    for path in paths:
        for record in read_jsonl(Path(path)):
            records += 1
            found = set()
            for text in _candidate_texts(record):
                found |= text_function_hashes(text)
            without += not found
            hashes |= found
    return hashes, {"task_records": records, "task_functions": len(hashes),
                    "task_records_without_function": without}
