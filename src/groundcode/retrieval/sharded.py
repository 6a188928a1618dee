"""`groundcode index api|snippets --executor ray`: the sources read on an executor's workers.

    api_entries(services, packages, include_private, executor, progress)   # ApiEntry, local order
    snippets(infos, executor, progress, summaries)                         # Snippet, local order

The per-source work is sharded: one botocore service, or one package, per shard (they are the
"repositories" of an index). Results come back in the local path's order (services, then
packages; packages in the order named), so the index built from them is the local one. The index
build itself (ApiIndex.build, SnippetIndex.build: deduplication across sources, BM25 statistics over
all documents, the dense embeddings, one SQLite file) is one global step and stays in the driver.
Not here: the sources (api_sources.py, snippet_sources.py), Ray (groundcode/executor.py).
Test: tests/test_executor.py.
"""
from __future__ import annotations

from ..executor import in_order


class ApiSourceWorker:
    """The entries of one botocore service or one package."""

    def __init__(self, include_private: bool = False):
        self.include_private = include_private

    def __call__(self, shard: list[tuple[str, str]]) -> list:
        from .api_sources import botocore_entries, python_entries
        out = []
        for kind, name in shard:
            out += botocore_entries([name]) if kind == "botocore" else python_entries([name], self.include_private)
        return out


def api_entries(services: list[str] | None, packages: list[str], include_private: bool, executor,
                progress=None):
    """What botocore_entries(services) then python_entries(packages) yield, read on the executor.
    services None: every botocore service; [] or botocore off: pass services=[] and no botocore."""
    units = [("botocore", s) for s in services] + [("package", p) for p in packages]
    for unit, entries in zip(units, in_order(executor.map(ApiSourceWorker, {"include_private": include_private},
                                                          [[u] for u in units]))):
        yield from entries
        if progress:
            progress(unit)


class SnippetSourceWorker:
    """The docstring examples (and summaries) of one package."""

    def __call__(self, shard: list) -> list[tuple[list, dict]]:
        from .snippet_sources import package_snippets
        out = []
        for info in shard:
            summaries: dict = {}
            out.append((list(package_snippets(info, summaries=summaries)), summaries))
        return out


def snippets(infos: dict, executor, progress=None, summaries: dict | None = None):
    """(name, snippets) per package as package_snippets gives them, in the order of `infos`;
    `summaries` gets each package's summaries as the local path's setdefault would."""
    names = list(infos)
    got = in_order(executor.map(SnippetSourceWorker, {}, [[infos[n]] for n in names]))
    for name, [(found, summ)] in zip(names, got):
        if summaries is not None:
            for k, v in summ.items():
                summaries.setdefault(k, v)
        if progress:
            progress(name, len(found))
        yield name, found
