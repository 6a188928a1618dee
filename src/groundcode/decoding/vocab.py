"""Vocab index: per-tokenizer structure that turns a set of allowed strings into token ids.

Built once per tokenizer (token texts cached on disk under ~/.cache/groundcode/vocab), it answers
the one question a constrained step asks: which tokens may come next if the text must continue
with `prefix` and then with one of the remaining `suffixes` (the untyped rest of each candidate
identifier), after which any non-identifier character may follow (`(`, `)`, `.`, space, ...).

Handles byte-level BPE (GPT-2 `Ġ`) and SentencePiece (`▁`, `<0xNN>`) vocabularies.
Not here: deciding *when* to constrain (guides/), applying masks to logits (masking.py).
"""
from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Iterable

import numpy as np

IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_IDENT_RUN = re.compile(r"[A-Za-z0-9_]*")
_EMPTY = np.zeros(0, dtype=np.int64)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable-char table (as in the byte-level pre-tokenizer)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


_BYTE_DECODER = {c: b for b, c in _bytes_to_unicode().items()}
_SP_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def _tokenizer_fingerprint(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    blob = backend.to_str() if backend is not None else json.dumps(tokenizer.get_vocab(), sort_keys=True)
    return hashlib.sha256(f"{len(tokenizer)}\0{blob}".encode()).hexdigest()[:24]


def _style(tokenizer, pieces: list[str]) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        decoder = json.loads(backend.to_str()).get("decoder") or {}
        text = json.dumps(decoder)
        if "ByteLevel" in text:
            return "bytelevel"
        if "Metaspace" in text or "\\u2581" in text or "▁" in text:
            return "sentencepiece"
    if any("▁" in p for p in pieces[:5000]):
        return "sentencepiece"
    if any(("Ġ" in p or "Ċ" in p) for p in pieces[:5000]):
        return "bytelevel"
    return "other"


def decode_token_texts(tokenizer) -> list[str]:
    """The text each token id contributes when it follows other text ("" for special tokens)."""
    n = len(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    special = set(tokenizer.all_special_ids)
    style = _style(tokenizer, [p or "" for p in pieces])
    texts: list[str] = []
    for i, piece in enumerate(pieces):
        if piece is None or i in special:
            texts.append("")
        elif style == "bytelevel":
            try:
                texts.append(bytes(_BYTE_DECODER[c] for c in piece).decode("utf-8", errors="replace"))
            except KeyError:  # an added token that is not byte-mapped
                texts.append(piece)
        elif style == "sentencepiece":
            m = _SP_BYTE.match(piece)
            if m:
                b = int(m.group(1), 16)
                texts.append(chr(b) if b < 0x80 else "\ufffd")
            else:
                texts.append(piece.replace("▁", " "))
        else:
            texts.append(tokenizer.decode([i]))
    return texts


class _SubIndex:
    """Tokens that start with a fixed lead string, keyed by what follows the lead."""

    def __init__(self, items: Iterable[tuple[str, int]]):
        ident: dict[str, list[int]] = {}
        ends: dict[str, list[int]] = {}
        for rest, tid in items:
            run = _IDENT_RUN.match(rest).group(0)
            if run == rest:
                if rest:
                    ident.setdefault(rest, []).append(tid)
            else:  # identifier part, then a non-identifier character
                ends.setdefault(run, []).append(tid)
        self.ident = {k: np.asarray(v, dtype=np.int64) for k, v in ident.items()}
        self.ident_keys = frozenset(self.ident)
        self.ends = {k: np.asarray(v, dtype=np.int64) for k, v in ends.items()}
        self.max_ident = max((len(k) for k in self.ident), default=0)


class VocabIndex:
    """Token texts plus lookup tables; see the module docstring for the question it answers."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.size = len(texts)
        self.has_dot = np.fromiter(("." in t for t in texts), dtype=bool, count=self.size)
        self.has_newline = np.fromiter(("\n" in t for t in texts), dtype=bool, count=self.size)
        self.by_text: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            if t:
                self.by_text.setdefault(t, []).append(i)
        order = sorted((t, i) for i, t in enumerate(texts) if t)
        self._sorted_texts = [t for t, _ in order]
        self._sorted_ids = [i for _, i in order]
        self._root = _SubIndex((t, i) for t, i in order)
        self._leads: dict[str, _SubIndex] = {}
        self._cache: OrderedDict = OrderedDict()
        self.cache_size = 4096

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def for_tokenizer(cls, tokenizer, cache_dir: str | Path | None = None) -> "VocabIndex":
        """Build (or load from the on-disk cache) the index of `tokenizer`."""
        root = Path(cache_dir or os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))
        path = root / "vocab" / f"{_tokenizer_fingerprint(tokenizer)}.json"
        texts = None
        if path.exists():
            try:
                texts = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                texts = None
        if texts is None or len(texts) != len(tokenizer):
            texts = decode_token_texts(tokenizer)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(texts), encoding="utf-8")
                tmp.replace(path)
            except OSError:
                pass  # a read-only home is fine: the index is rebuilt next time
        return cls(texts)

    def _lead(self, lead: str) -> _SubIndex:
        if not lead:
            return self._root
        sub = self._leads.get(lead)
        if sub is None:
            lo = bisect.bisect_left(self._sorted_texts, lead)
            hi = bisect.bisect_left(self._sorted_texts, lead + "\U0010ffff")
            sub = _SubIndex((self._sorted_texts[j][len(lead):], self._sorted_ids[j])
                            for j in range(lo, hi) if len(self._sorted_texts[j]) > len(lead))
            self._leads[lead] = sub
        return sub

    # -- the question -------------------------------------------------------------------------
    def allowed(self, suffixes: Iterable[str], prefix: str = "") -> np.ndarray:
        """Sorted unique ids of tokens t such that either t is a non-empty prefix of `prefix`,
        or t = prefix + r with r non-empty and, for some s in `suffixes`, r is a prefix of s or
        r = s + c + anything with c a non-identifier character. "" in `suffixes` means the
        identifier may end right after `prefix`."""
        key = (suffixes if isinstance(suffixes, frozenset) else frozenset(suffixes), prefix)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        out = self._compute(key[0], prefix)
        self._cache[key] = out
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out

    def _compute(self, suffixes: frozenset, prefix: str) -> np.ndarray:
        parts: list[np.ndarray] = []
        for k in range(1, len(prefix) + 1):  # tokens that stop inside (or at the end of) prefix
            ids = self.by_text.get(prefix[:k])
            if ids:
                parts.append(np.asarray(ids, dtype=np.int64))
        sub = self._lead(prefix)
        m = sub.max_ident
        prefs = {s[:k] for s in suffixes for k in range(1, min(len(s), m) + 1)}
        for p in prefs & sub.ident_keys:
            parts.append(sub.ident[p])
        for s in suffixes:
            ids = sub.ends.get(s)
            if ids is not None:
                parts.append(ids)
        if not parts:
            return _EMPTY
        return np.unique(np.concatenate(parts))

    def text_of(self, ids: Iterable[int]) -> str:
        return "".join(self.texts[i] for i in ids)
