"""Shared fixtures: a tiny Llama + BPE tokenizer built once per session (seconds, no hub)."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from groundcode import pyparse

FIXTURES = Path(__file__).parent / "fixtures"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# idle work (lookahead) runs whatever else loads the machine: no test depends on the load
# (test_drafts checks the busy rule itself); subprocesses inherit it
os.environ["GROUNDCODE_BUSY_SHARE"] = "inf"
# the commands' default analyzer, `auto`, is ty+jedi where ty is installed (scripts/test installs
# it): tests name what they drive; test_second_opinion.py and test_lsp_analyzer.py drive `auto`
os.environ.setdefault("GROUNDCODE_ANALYZER", "jedi")
# pytest parses source files while it formats a failure, on the main thread, while a server under
# test may parse on its own threads: on CPython 3.11 the two can break each other's parse
# (groundcode/pyparse.py; a CI worker was lost to it). Its parses take groundcode's lock too.
ast.parse = pyparse.parse


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from groundcode.models.tiny import build_tiny_model
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_lm(tiny_model_dir):
    from groundcode.models.load import load_model
    return load_model(str(tiny_model_dir))


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    # language servers stay where `scripts/test` installed them (the user cache's analyzers/):
    # pinned, hash-checked, and a download each session otherwise
    from groundcode.analysis.lsp_servers import analyzers_dir
    os.environ.setdefault("GROUNDCODE_ANALYZERS", str(analyzers_dir()))
    os.environ["GROUNDCODE_CACHE"] = str(tmp_path_factory.mktemp("gc-cache"))


@pytest.fixture(scope="session")
def shop_repo() -> Path:
    return FIXTURES / "shop"
