"""The API index on disk: entries in SQLite, BM25 over their keys.

    idx = ApiIndex.build(entries, directory, meta={...})   # writes <dir>/api.sqlite + <dir>/bm25/
    idx = ApiIndex.open(directory)
    idx.exists("list_objects_v2", "s3")                     # the index-lookup trigger's question
    idx.lookup("list_objects_v2")                           # entries with that short name
    idx.search("list object bucket", k=3, namespace="s3")  # [(ApiEntry, score)], best first

Keys and queries are made the same way (paper §3.1): words of the API name, its parameter names
and its namespace — never prose, so a query built from a generated call matches the right key.
A build goes to a temporary directory first and replaces the old index only when complete.
Not here: where entries come from (api_sources.py), the BM25 engine (bm25.py).
Test: tests/test_api_index.py; speed: benchmarks/api_index.py.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import GroundcodeError
from .api_entry import ApiEntry
from .bm25 import BM25, words

_SCHEMA = """
CREATE TABLE entries (id INTEGER PRIMARY KEY, qualname TEXT, name TEXT, kind TEXT, namespace TEXT,
                      params TEXT, var_positional INTEGER, var_keyword INTEGER, description TEXT,
                      documentation TEXT, source TEXT);
CREATE INDEX entries_name ON entries(name, namespace);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""
_COLS = "qualname, name, kind, namespace, params, var_positional, var_keyword, description, documentation, source"


def query_words(text: str) -> list[str]:
    """Query tokens for a generated call or keywords: the same words a key is made of, plus
    each whole identifier (keys hold the whole API name too)."""
    import re
    out = words(text)
    out += [w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text) if "_" in w]
    return out


class ApiIndex:
    def __init__(self, directory: Path, db: sqlite3.Connection, bm25: BM25, namespaces: np.ndarray):
        self.directory = Path(directory)
        self._db = db
        self._bm25 = bm25
        self._ns = namespaces                        # namespace of each row (row = id - 1)
        self._masks: dict[str, np.ndarray] = {}

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def build(cls, entries: Iterable[ApiEntry], directory: Path, meta: dict | None = None) -> "ApiIndex":
        from .index_dir import install, staging
        directory = Path(directory)
        tmp = staging(directory, "api.sqlite", "API")
        try:
            db = sqlite3.connect(tmp / "api.sqlite")
            db.executescript(_SCHEMA)
            keys: list[list[str]] = []
            rows = []
            for e in entries:
                keys.append(e.key())
                rows.append((e.qualname, e.name, e.kind, e.namespace, json.dumps(e.params),
                             int(e.var_positional), int(e.var_keyword), e.description,
                             e.documentation, e.source))
            db.executemany(f"INSERT INTO entries ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
            m = dict(meta or {}, entries=len(rows))
            db.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in m.items()])
            db.commit()
            db.close()
            BM25.build(keys).save(tmp / "bm25")
            install(tmp, directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls.open(directory)

    @classmethod
    def open(cls, directory: Path) -> "ApiIndex":
        directory = Path(directory)
        path = directory / "api.sqlite"
        if not path.is_file():
            raise GroundcodeError(f"no API index at {directory} (build one: groundcode index api)")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        ns = np.array([r[0] for r in db.execute("SELECT namespace FROM entries ORDER BY id")], dtype=object)
        return cls(directory, db, BM25.load(directory / "bm25", len(ns)), ns)

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._ns)

    def meta(self) -> dict:
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    @staticmethod
    def _entry(row) -> ApiEntry:
        q, n, k, ns, params, vp, vk, d, doc, src = row
        return ApiEntry(q, n, k, ns, json.loads(params), bool(vp), bool(vk), d, doc, src)

    def get(self, row: int) -> ApiEntry:
        r = self._db.execute(f"SELECT {_COLS} FROM entries WHERE id = ?", (row + 1,)).fetchone()
        if r is None:
            raise IndexError(row)
        return self._entry(r)

    def lookup(self, name: str, namespace: str | None = None) -> list[ApiEntry]:
        if namespace is None:
            rows = self._db.execute(f"SELECT {_COLS} FROM entries WHERE name = ?", (name,))
        else:
            rows = self._db.execute(f"SELECT {_COLS} FROM entries WHERE name = ? AND namespace = ?",
                                    (name, namespace))
        return [self._entry(r) for r in rows]

    def exists(self, name: str, namespace: str | None = None) -> bool:
        if namespace is None:
            r = self._db.execute("SELECT 1 FROM entries WHERE name = ? LIMIT 1", (name,))
        else:
            r = self._db.execute("SELECT 1 FROM entries WHERE name = ? AND namespace = ? LIMIT 1",
                                 (name, namespace))
        return r.fetchone() is not None

    def names(self, namespace: str) -> list[str]:
        return [r[0] for r in self._db.execute(
            "SELECT name FROM entries WHERE namespace = ? ORDER BY id", (namespace,))]

    def _mask(self, namespace: str) -> np.ndarray:
        m = self._masks.get(namespace)
        if m is None:
            m = self._masks[namespace] = self._ns == namespace
        return m

    def search_rows(self, query: str | list[str], k: int = 5,
                    namespace: str | None = None) -> list[tuple[int, float]]:
        toks = query_words(query) if isinstance(query, str) else query
        allowed = self._mask(namespace) if namespace is not None else None
        if allowed is not None and not allowed.any():
            return []
        return self._bm25.search(toks, k, allowed)

    def search(self, query: str | list[str], k: int = 5,
               namespace: str | None = None) -> list[tuple[ApiEntry, float]]:
        return [(self.get(i), s) for i, s in self.search_rows(query, k, namespace)]
