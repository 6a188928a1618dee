"""Vocab index: per-tokenizer structure that turns a set of allowed strings into token ids.

Built once per tokenizer (token texts cached on disk under ~/.cache/groundcode/vocab), it answers
the one question a constrained step asks: which tokens may come next if the text must continue
with `prefix` and then with one of the remaining `suffixes` (the untyped rest of each candidate
identifier), after which any non-identifier character may follow (`(`, `)`, `.`, space, ...).

    index = VocabIndex.for_tokenizer(tokenizer)
    ids = index.allowed({"append", "extend"})            # sorted unique int64 token ids
    ids = index.allowed({"append"}, prefix=").")          # tokens that merged the dot: `).app`...
    mask = index.allowed_mask({"append"}, width=logits.shape[-1], device=logits.device)

The per-step form the monitor uses: encode the candidate names once per trigger, then narrow by
what has been typed of the name (the names starting with it are an index range of the sorted set):

    cs = index.candidates(member_names)                  # sorted + encoded once (LRU by frozenset)
    ids = index.allowed_in(cs)                           # == allowed(member_names)
    ids = index.allowed_in(cs, typed="app", prefix="")  # == allowed({n[3:] for n ... if n.startswith("app")})
    mask = index.allowed_mask_in(cs, "app", width=logits.shape[-1], device=logits.device)

Handles byte-level BPE (GPT-2 `Ġ`) and SentencePiece (`▁`, `<0xNN>`) vocabularies; special
tokens have text "" and are never allowed.

How a step is answered (and why it is fast): every token text t is split, per lead string (the
`prefix`, usually ""), into its leading identifier run and the rest; a token is an "ident" token
(rest empty: allowed when its run is a prefix of a suffix) or an "end" token (rest starts with a
non-identifier character: allowed when its run equals a suffix). The runs form a trie kept in flat
arrays; a step joins the suffixes into one NUL-separated byte buffer and a numba-compiled walk
follows each suffix down the trie, collecting ident tokens on the way and end tokens where the
suffix ends (numba is a dependency, imported lazily here and nowhere else; GROUNDCODE_NO_JIT=1 or
a missing numba falls back to a vectorised numpy path: 64-bit prefix hashes of all suffixes at
once, looked up in an open-addressing table). Suffixes that are not plain ASCII identifiers (rare)
take an exact pure-Python path. "" in suffixes adds a precomputed mask (tokens that start with a
non-identifier character). `allowed_in` answers without any per-name Python work: a second
layout of the same trie (one row per node; a child found by a bit mask and a popcount, no scan)
is walked by compiled code along the range of sorted encoded names, each name resuming below
the bytes it shares with the previous one, into a bitmap of the vocabulary that becomes sorted
ids (or, for `allowed_mask_in`, the boolean mask directly). Without numba, `allowed_in` builds
the rests and asks `allowed` (same answers; tests compare every path with a brute-force scan).
Answers are kept in an LRU keyed by (frozenset(suffixes), prefix) (`allowed_in`: by (names,
typed, prefix)); `allowed_mask`/`allowed_mask_in` keep boolean masks already on the logits'
device in a second LRU, so a repeated step copies nothing and never waits on the host.

Not here: deciding *when* to constrain (guides/), applying masks to logits (masking.py).
Tests: tests/test_vocab.py (exact sets against a brute-force reference). Speed:
benchmarks/mask_time.py.
"""
from __future__ import annotations

import bisect
import hashlib
import io
import json
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Iterable

import numpy as np

IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_IDENT_RUN = re.compile(r"[A-Za-z0-9_]*")
_IDENT_ALL = re.compile(r"[A-Za-z0-9_]*\Z")
_IDENT_NUL = re.compile(r"[A-Za-z0-9_\0]*\Z")
_EMPTY = np.zeros(0, dtype=np.int64)
_FORMAT = 2  # bump when the cached file layout or the decoding rules change

# Queries whose suffixes hold fewer characters than this take the pure-Python path: below it,
# a dozen dict lookups beat the fixed cost of ~25 numpy calls (measured in benchmarks/mask_time.py).
PY_PATH_MAX_CHARS = 300


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
    special = sorted(getattr(tokenizer, "all_special_ids", []))
    return hashlib.sha256(f"{_FORMAT}\0{len(tokenizer)}\0{special}\0{blob}".encode()).hexdigest()[:24]


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
    """The text each token id contributes when it follows other text ("" for special tokens).

    Byte-level pieces are mapped back to bytes; a piece that is only part of a UTF-8 character
    becomes U+FFFD (a non-identifier character, which is what the real next character is too).
    SentencePiece `▁` becomes a space and `<0xNN>` the byte (U+FFFD above 0x7F). Added tokens that
    are not special are literal text (they are not byte-mapped)."""
    n = len(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    special = set(getattr(tokenizer, "all_special_ids", []))
    literal: set[int] = set()
    for i, tok in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
        if _SP_BYTE.match(str(tok)):
            continue  # byte-fallback pieces are registered as added tokens, yet they are text
        if getattr(tok, "special", False):
            special.add(i)
        else:
            literal.add(i)
    style = _style(tokenizer, [p or "" for p in pieces])
    texts: list[str] = []
    for i, piece in enumerate(pieces):
        if piece is None or i in special:
            texts.append("")
        elif i in literal:
            texts.append(piece)
        elif style == "bytelevel":
            try:
                texts.append(bytes(_BYTE_DECODER[c] for c in piece).decode("utf-8", errors="replace"))
            except KeyError:  # not byte-mapped: take it literally
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


# -- hashing of ASCII identifier strings, vectorised -------------------------------------------
# h(s) = sum_i s[i] * P**i  mod 2**64, P a fixed odd constant. Runs are at most a few hundred
# characters, far below the lengths at which polynomial hashes mod 2**64 have known collisions;
# the tests compare every result with a brute-force scan of the vocabulary.
_P = 0x9E3779B97F4A7C15 | 1
_POW = np.ones(1, dtype=np.uint64)


def _powers(n: int) -> np.ndarray:
    """P**i mod 2**64 for i < n (grown on demand, shared by all indexes)."""
    global _POW
    if len(_POW) < n:
        m = max(n, 2 * len(_POW), 4096)
        pw = [1] * m
        for i in range(1, m):
            pw[i] = pw[i - 1] * _P % 2 ** 64
        _POW = np.array(pw, dtype=np.uint64)
    return _POW


def _prefix_hashes(joined: str) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every non-empty prefix of each NUL-separated ASCII string in `joined`, as one
    flat array, and a flag per entry: is this the hash of a whole string?

    The strings are joined with NUL separators into one byte buffer so that the work is a fixed
    number of numpy calls, whatever the number of strings (no per-string Python loop). A NUL adds
    nothing to the hash, so the entry at each separator is the whole preceding string's hash (the
    flag marks those; the empty string hashes to 0, which no run has in practice)."""
    buf = np.frombuffer((joined + "\0").encode("ascii"), dtype=np.uint8)
    n = len(buf)
    sep = buf == 0
    ends = np.flatnonzero(sep)
    heads = np.empty(len(ends), dtype=np.int64)  # where each string starts
    heads[0] = 0
    heads[1:] = ends[:-1] + 1
    start = np.repeat(heads, ends - heads + 1)
    g = np.empty(n + 1, dtype=np.uint64)
    g[0] = 0
    with np.errstate(over="ignore"):
        np.cumsum(buf * _powers(n + 1)[np.arange(n) - start], out=g[1:])
        h = g[1:] - g[start]
    return h, sep


def _hash_strings(strings: list[str]) -> np.ndarray:
    """One hash per (non-empty ASCII) string, equal to its full-length prefix hash."""
    if not strings:
        return np.zeros(0, dtype=np.uint64)
    h, full = _prefix_hashes("\0".join(strings))
    return h[full]


class _Table:
    """Hash table from 64-bit hashes to small ints: linear probing, every key within WINDOW slots
    of its home slot (the table grows until that holds), so a lookup is one fixed-size gather."""

    WINDOW = 8

    def __init__(self, hashes: np.ndarray):
        bits = max(4, int(len(hashes)).bit_length() + 2)  # load factor <= 1/4: short probes
        while not self._build(hashes, bits):
            bits += 1

    def _build(self, hashes: np.ndarray, bits: int) -> bool:
        self.shift = np.uint64(64 - bits)
        size = (1 << bits) + self.WINDOW  # no wrap-around: probes run into the tail
        self.keys = np.zeros(size, dtype=np.uint64)
        self.vals = np.full(size, -1, dtype=np.int32)
        home = self._home(hashes)
        slot = home.copy()
        todo = np.arange(len(hashes))
        while len(todo):  # place in rounds: one winner per free slot, the rest move on
            s = slot[todo]
            free = self.vals[s] < 0
            _, first = np.unique(s[free], return_index=True)
            win = todo[free][first]
            self.keys[slot[win]] = hashes[win]
            self.vals[slot[win]] = win
            placed = np.zeros(len(hashes), dtype=bool)
            placed[win] = True
            todo = todo[~placed[todo]]
            slot[todo] += 1
            if len(todo) and (slot[todo] - home[todo]).max() >= self.WINDOW:
                return False
        self._offsets = np.arange(self.WINDOW, dtype=np.int64)
        return True

    def _home(self, h: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((h * np.uint64(0xFF51AFD7ED558CCD)) >> self.shift).astype(np.int64)

    def find(self, h: np.ndarray) -> np.ndarray:
        """Value of each hash, -1 where absent. Most lookups end at the home slot (a hit, or an
        empty slot: absent); the rest are resolved with one gather over the probe window."""
        home = self._home(h)
        v = self.vals[home]
        hit = self.keys[home] == h
        out = np.where(hit, v, -1)
        rest = np.flatnonzero(~hit & (v >= 0))
        if len(rest):
            at = home[rest, None] + self._offsets[1:]
            eq = self.keys[at] == h[rest, None]
            col = eq.argmax(axis=1)
            rows = np.arange(len(rest))
            vals = self.vals[at[rows, col]]
            vals[~eq[rows, col]] = -1
            out[rest] = vals
        return out


# -- the compiled walk (numba, optional) -------------------------------------------------------
# numba is imported here and nowhere else, lazily: without it the numpy path answers (same sets).
# Layout, for few cache misses per step: one int32 row per node (first child, end of children,
# first ident token, end of ident tokens) and one int32 row per child (byte, node); nodes are
# numbered in depth-first order of the sorted runs, so a walk down a path stays in nearby rows.
def _split_keys(buf, m):
    """Start, length and sort key (the first 8 bytes, big-endian, zero-padded) of each of the
    `m` NUL-terminated strings in `buf`. Shared by `_walk` and `_sort_names`."""
    starts = np.empty(m, dtype=np.int64)
    lens = np.empty(m, dtype=np.int64)
    keys = np.zeros(m, dtype=np.uint64)
    k = 0
    s = 0
    for i in range(buf.shape[0]):
        if buf[i] == 0:
            starts[k] = s
            lens[k] = i - s
            key = np.uint64(0)
            for j in range(8):
                key = key << np.uint64(8)
                if j < i - s:
                    key = key | np.uint64(buf[s + j])
            keys[k] = key
            k += 1
            s = i + 1
    return starts, lens, keys


def _walk(buf, ident_ok, root, nodes, children, ident_ids, ends_off, ends_ids, seen, out):
    """Walk the trie of identifier runs along each NUL-terminated suffix in `buf`; collect the
    ident tokens of every node passed and the end tokens of the node where a suffix ends.
    Suffixes are visited in order of their first 8 bytes, and each walk resumes below the part
    it shares with the previous one (no repeated walks of common prefixes, trie rows touched in
    depth-first order). Returns (sorted unique ids, ok); ok is False if `buf` holds a byte that
    is not an identifier character. `seen` is all False before and after."""
    m = 0
    for i in range(buf.shape[0]):
        if buf[i] == 0:
            m += 1
        elif not ident_ok[buf[i]]:
            return out[:0].copy(), False
    starts, lens, keys = _split_keys(buf, m)
    longest = lens.max() if m else 0
    order = np.argsort(keys)
    stack = np.zeros(longest + 1, dtype=np.int64)  # stack[d]: node after d characters
    n = 0
    prev_st = 0
    prev_depth = 0
    for q in range(m):
        idx = order[q]
        st = starts[idx]
        ln = lens[idx]
        if ln == 0:
            continue
        d = 0
        lim = min(ln, prev_depth)
        while d < lim and buf[st + d] == buf[prev_st + d]:
            d += 1
        node = stack[d]
        alive = True
        while d < ln:
            c = buf[st + d]
            if node == 0:
                nxt = root[c]
            else:
                nxt = -1
                for j in range(nodes[node, 0], nodes[node, 1]):
                    cc = children[j, 0]
                    if cc >= c:
                        if cc == c:
                            nxt = children[j, 1]
                        break
            if nxt < 0:
                alive = False
                break
            node = nxt
            d += 1
            stack[d] = node
            for j in range(nodes[node, 2], nodes[node, 3]):
                t = ident_ids[j]
                if not seen[t]:
                    seen[t] = True
                    out[n] = t
                    n += 1
        if alive:
            for j in range(ends_off[node], ends_off[node + 1]):
                t = ends_ids[j]
                if not seen[t]:
                    seen[t] = True
                    out[n] = t
                    n += 1
        prev_st = st
        prev_depth = d
    res = np.sort(out[:n])
    for j in range(n):
        seen[res[j]] = False
    return res, True


_JIT: dict = {}
_IDENT_OK = np.zeros(256, dtype=np.bool_)
_IDENT_OK[[ord(c) for c in IDENT_CHARS]] = True


def jit_walk():
    """The compiled `_walk`, or None where numba is not installed (GROUNDCODE_NO_JIT=1 also off)."""
    if "walk" not in _JIT:
        fn = None
        if os.environ.get("GROUNDCODE_NO_JIT", "") in ("", "0"):
            try:
                import numba
            except ImportError:
                numba = None
            if numba is not None:
                # the shared helper first, in place of the Python one, so the kernels that
                # call it (`_walk` here, `_sort_names` in jit_range) compile against it
                g = globals()
                if not hasattr(g["_split_keys"], "py_func"):
                    g["_split_keys"] = numba.njit(cache=True, nogil=True)(g["_split_keys"])
                fn = numba.njit(cache=True, nogil=True)(_walk)
        _JIT["walk"] = fn
    return _JIT["walk"]


# -- the compiled range walk: candidate names encoded once, narrowed by index ranges ------------
# A second layout of the same trie, for walks that must touch as little memory as possible: one
# row of four int64 per trie node (the root gets the last row), reached from its parent row
# without a scan: bit c of a row's `mask` says the node has a child for identifier character c
# (63 of them: they fit one word) and that child's row is `first child row + popcount(mask below
# c)`. Row: [mask, first child row | ident token << 32 (-1: none), end tokens (lo | hi << 32),
# ident tokens (lo | hi << 32)]; a row read gives the next step and the node's tokens at once.
IDENT_CODES = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
_CODE = np.full(256, -1, dtype=np.int64)
_CODE[[ord(c) for c in IDENT_CODES]] = np.arange(len(IDENT_CODES))


def _range_ids(buf, start, end, lcp, lo, hi, k, root, rows, ident_ids, ends_ids, extra, empty_bits, nbits):
    """`_range_bits` as sorted ids, in one compiled call."""
    return _bits_ids(_range_bits(buf, start, end, lcp, lo, hi, k, root, rows, ident_ids, ends_ids, extra,
                                 empty_bits, nbits))


def _range_bits(buf, start, end, lcp, lo, hi, k, root, rows, ident_ids, ends_ids, extra, empty_bits,
                nbits):
    """Allowed tokens, as a bitmap of `nbits` bits, for the suffixes name[k:] of the sorted,
    encoded candidate names lo..hi-1 (name i = buf[start[i]:end[i]], lcp[i] = bytes
    shared with name i-1). Names are visited in sorted order, so each walk resumes below the part
    it shares with the previous name: every trie node on the way is read once. A name that falls
    off the trie (no token continues it, or a byte that is not an identifier character) adds only
    the ident tokens passed; the next names sharing the fallen prefix are skipped. Ids in `extra`
    are set too, and `empty_bits` is or-ed in if some name equals its first k bytes (suffix "")."""
    bits = np.zeros((nbits + 63) >> 6, dtype=np.uint64)
    one = np.uint64(1)
    longest = 0
    for i in range(lo, hi):
        longest = max(longest, end[i] - start[i] - k)
    stack = np.empty(longest + 1, dtype=np.int64)  # stack[d]: row after d bytes
    stack[0] = root
    prev_depth = 0
    dead = -1  # depth at which the previous name fell off, -1 if it did not
    empty = False
    for i in range(lo, hi):
        st = start[i] + k
        ln = end[i] - st
        if ln <= 0:
            empty = True
            prev_depth = 0
            dead = -1
            continue
        d = 0
        if i > lo:
            d = max(lcp[i] - k, 0)
        if dead >= 0 and d > dead:
            continue  # shares the prefix that fell off: same fate, nothing new
        d = min(d, prev_depth)
        row = stack[d]
        dead = -1
        while d < ln:
            cc = _CODE[buf[st + d]]
            m = np.uint64(rows[row, 0])
            b = one << np.uint64(cc & 63)
            if cc < 0 or not (m & b):
                dead = d
                break
            x = m & (b - one)  # popcount: the child's rank among its siblings
            x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
            x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
            x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
            row = (rows[row, 1] & 0xFFFFFFFF) + np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))
            d += 1
            stack[d] = row
            t = rows[row, 1] >> 32
            if t >= 0:
                bits[t >> 6] |= one << np.uint64(t & 63)
                w = rows[row, 3]
                for j in range((w & 0xFFFFFFFF) + 1, w >> 32):  # more tokens with this text (rare)
                    t = ident_ids[j]
                    bits[t >> 6] |= one << np.uint64(t & 63)
        prev_depth = d
        if dead < 0:
            w = rows[row, 2]
            for j in range(w & 0xFFFFFFFF, w >> 32):
                t = ends_ids[j]
                bits[t >> 6] |= one << np.uint64(t & 63)
    for j in range(extra.shape[0]):
        t = extra[j]
        bits[t >> 6] |= one << np.uint64(t & 63)
    if empty:
        for j in range(bits.shape[0]):
            bits[j] |= empty_bits[j]
    return bits


def _bits_ids(bits):
    """Sorted ids of the set bits."""
    n = 0
    for w in range(bits.shape[0]):
        x = bits[w]
        if not x:
            continue
        x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
        x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
        x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        n += np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))
    out = np.empty(n, dtype=np.int64)
    n = 0
    for w in range(bits.shape[0]):
        x = bits[w]
        while x:
            low = x & (np.uint64(0) - x)  # lowest set bit; its index = popcount(low - 1)
            y = low - np.uint64(1)
            y = y - ((y >> np.uint64(1)) & np.uint64(0x5555555555555555))
            y = (y & np.uint64(0x3333333333333333)) + ((y >> np.uint64(2)) & np.uint64(0x3333333333333333))
            y = (y + (y >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
            out[n] = (w << 6) + np.int64((y * np.uint64(0x0101010101010101)) >> np.uint64(56))
            n += 1
            x ^= low
    return out


def _sort_names(raw):
    """Sort NUL-terminated ASCII names (`raw`, no NUL inside a name) in byte order, which is
    Python's string order: by their first 8 bytes (one integer sort), then runs sharing those
    bytes by insertion sort on the rest. Returns (order, start and end of each name in `raw` in
    sorted order, lcps, number of bytes that are not identifier characters)."""
    n = 0
    bad = 0
    for i in range(raw.shape[0]):
        if raw[i] == 0:
            n += 1
        elif _CODE[raw[i]] < 0:
            bad += 1
    starts, lens, keys = _split_keys(raw, n)
    order = np.argsort(keys)
    a = 0
    while a < n:  # runs with equal keys: insertion sort on the full bytes
        b = a + 1
        while b < n and keys[order[b]] == keys[order[a]]:
            b += 1
        for i in range(a + 1, b):
            x = order[i]
            j = i - 1
            while j >= a:
                y = order[j]
                m = min(lens[x], lens[y])
                c = 0
                while c < m and raw[starts[x] + c] == raw[starts[y] + c]:
                    c += 1
                less = raw[starts[x] + c] < raw[starts[y] + c] if c < m else lens[x] < lens[y]
                if not less:
                    break
                order[j + 1] = y
                j -= 1
            order[j + 1] = x
        a = b
    start = starts[order]
    end = start + lens[order]
    return order, start, end, _lcps(raw, start, end), bad


def _lcps(buf, start, end):
    """lcp[i]: bytes name i (buf[start[i]:end[i]]) shares with name i-1 (lcp[0] = 0)."""
    n = start.shape[0]
    lcp = np.zeros(n, dtype=np.int64)
    for i in range(1, n):
        a = start[i - 1]
        b = start[i]
        m = min(end[i - 1] - a, end[i] - b)
        j = 0
        while j < m and buf[a + j] == buf[b + j]:
            j += 1
        lcp[i] = j
    return lcp


def jit_range():
    """The compiled (`_range_ids`, `_range_bits`, `_lcps`, `_sort_names`), or None where the
    compiled walk is off.
    The helpers are compiled first and put in place of the module's Python ones, so that
    `_range_ids` (which calls them) compiles against them."""
    if jit_walk() is None:
        return None
    if "range" not in _JIT:
        import numba
        g = globals()
        for name in ("_range_bits", "_bits_ids", "_lcps"):
            if not hasattr(g[name], "py_func"):
                g[name] = numba.njit(cache=True, nogil=True)(g[name])
        _JIT["range"] = (numba.njit(cache=True, nogil=True)(_range_ids), g["_range_bits"], g["_lcps"],
                         numba.njit(cache=True, nogil=True)(_sort_names))
    return _JIT["range"]


class _Trie:
    """Identifier runs of one lead as a trie in flat arrays (see the layout note above), with the
    ident and end tokens of each node, for the compiled walk."""

    def __init__(self, ident: dict[str, list[int]], ends: dict[str, list[int]], size: int):
        runs = sorted((set(ident) | set(ends)) - {""})
        node_of = {"": 0}
        parent, char = [-1], [0]
        for r in runs:  # sorted: most prefixes exist already; add the missing tail
            k = len(r)
            while r[:k] not in node_of:
                k -= 1
            for m in range(k + 1, len(r) + 1):
                node_of[r[:m]] = len(parent)
                parent.append(node_of[r[:m - 1]])
                char.append(ord(r[m - 1]))
        nn = len(parent)
        par = np.asarray(parent[1:], dtype=np.int64)
        ch = np.asarray(char[1:], dtype=np.int64)
        order = np.lexsort((ch, par))
        self.children = np.stack([ch[order], np.arange(1, nn)[order]], axis=1).astype(np.int32)
        child_off = np.searchsorted(par[order], np.arange(nn + 1))
        self.root = np.full(256, -1, dtype=np.int32)
        top = par == 0
        self.root[ch[top]] = np.arange(1, nn, dtype=np.int32)[top]
        ident_off, self.ident_ids = self._csr(ident, node_of, nn)
        self.ends_off, self.ends_ids = self._csr(ends, node_of, nn)
        self.nodes = np.stack([child_off[:-1], child_off[1:], ident_off[:-1], ident_off[1:]],
                              axis=1).astype(np.int32)
        self.seen = np.zeros(size, dtype=np.bool_)
        self.out = np.empty(size, dtype=np.int64)
        self.lock = threading.Lock()

    _ARRAYS = ("root", "nodes", "children", "ident_ids", "ends_off", "ends_ids")

    def arrays(self) -> dict[str, np.ndarray]:
        return {f"trie_{k}": getattr(self, k) for k in self._ARRAYS}

    @classmethod
    def from_arrays(cls, arrays, size: int) -> "_Trie":
        trie = cls.__new__(cls)
        for k in cls._ARRAYS:
            setattr(trie, k, np.ascontiguousarray(arrays[f"trie_{k}"]))
        trie.seen = np.zeros(size, dtype=np.bool_)
        trie.out = np.empty(size, dtype=np.int64)
        trie.lock = threading.Lock()
        return trie

    @staticmethod
    def _csr(groups: dict[str, list[int]], node_of: dict[str, int], nn: int):
        cnt = np.zeros(nn + 1, dtype=np.int64)
        rows = sorted((node_of[r], ids) for r, ids in groups.items() if r)
        for node, ids in rows:
            cnt[node + 1] = len(ids)
        off = np.cumsum(cnt)
        flat = np.fromiter((i for _, ids in rows for i in ids), dtype=np.int32, count=int(off[-1]))
        return off, flat

    def range_rows(self) -> np.ndarray:
        """The row layout of the range walk (see the note above `_range_bits`), built from the
        trie arrays on first use (vectorised; tens of ms at 150k tokens). The root is the last row."""
        rows = getattr(self, "_rows", None)
        if rows is None:
            nodes = self.nodes.astype(np.int64)
            nn = len(nodes)
            node_of_row = np.append(self.children[:, 1].astype(np.int64), 0)
            code = _CODE[self.children[:, 0]]
            if len(code) and code.min() < 0:
                raise ValueError("trie holds a byte that is not an identifier character")
            parent = np.repeat(np.arange(nn), nodes[:, 1] - nodes[:, 0])
            mask = np.zeros(nn, dtype=np.uint64)
            np.bitwise_or.at(mask, parent, np.left_shift(np.uint64(1), code.astype(np.uint64)))
            v = node_of_row
            i0, i1 = nodes[v, 2], nodes[v, 3]
            ident = np.full(len(v), -1, dtype=np.int64)
            has = i1 > i0
            ident[has] = self.ident_ids[i0[has]]
            ends_off = np.asarray(self.ends_off, dtype=np.int64)
            rows = np.empty((len(v), 4), dtype=np.int64)
            rows[:, 0] = mask[v].view(np.int64)
            rows[:, 1] = nodes[v, 0] | (ident << 32)
            rows[:, 2] = ends_off[v] | (ends_off[v + 1] << 32)
            rows[:, 3] = i0 | (i1 << 32)
            self._rows = rows
        return rows

    def walk(self, fn, buf: np.ndarray) -> np.ndarray | None:
        """Sorted unique ids, or None when a suffix is not an ASCII identifier."""
        with self.lock:  # `seen`/`out` are per-trie scratch
            ids, ok = fn(buf, _IDENT_OK, self.root, self.nodes, self.children, self.ident_ids,
                      self.ends_off, self.ends_ids, self.seen, self.out)
        return ids if ok else None


class _Lead:
    """Tokens that start with a fixed lead string, keyed by what follows the lead.

    A token's rest (text after the lead) is its identifier run plus the remainder, which is empty
    ("ident" token: allowed when the run is a prefix of a suffix) or starts with a non-identifier
    character ("end" token: allowed when the run equals a suffix). Holds the trie (compiled path),
    the hash table (numpy path) and dicts (pure-Python path), each built when first needed."""

    def __init__(self, items: list[tuple[str, int]], size: int, trie: "_Trie | None" = None,
                 empty_mask: np.ndarray | None = None):
        self.size = size
        self._items = items
        self._by_rest: dict[str, list[int]] | None = None  # pure-Python path only: built lazily
        self._sorted_rests: list[str] | None = None
        self._split: tuple[dict, dict] | None = None  # (ident, ends) by run: built lazily
        self._trie = trie  # compiled path; built on first use (see prepare) or loaded from disk
        self._table: _Table | None = None  # numpy path; built on first use
        if empty_mask is None:
            empty_mask = np.zeros(size, dtype=bool)
            empty_mask[self.ends.get("", [])] = True
        self.empty_mask = empty_mask

    def empty_bits(self) -> np.ndarray:
        """`empty_mask` packed into uint64 words, bit i of word i // 64 (for the range walk)."""
        bits = getattr(self, "_empty_bits", None)
        if bits is None:
            packed = np.packbits(self.empty_mask, bitorder="little")
            words = np.zeros((self.size + 63) // 64 * 8, dtype=np.uint8)
            words[:len(packed)] = packed
            bits = self._empty_bits = words.view("<u8").astype(np.uint64)
        return bits

    def _runs(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        if self._split is None:
            ident: dict[str, list[int]] = {}
            ends: dict[str, list[int]] = {}
            match = _IDENT_RUN.match
            for rest, tid in self._items:
                run = match(rest).group(0)
                if run == rest:
                    ident.setdefault(run, []).append(tid)
                else:
                    ends.setdefault(run, []).append(tid)
            self._split = (ident, ends)
        return self._split

    @property
    def _ident(self) -> dict[str, list[int]]:
        return self._runs()[0]

    @property
    def ends(self) -> dict[str, list[int]]:
        return self._runs()[1]

    @property
    def max_rest(self) -> int:
        if not hasattr(self, "_max_rest"):
            self._max_rest = max((len(r) for r, _ in self._items), default=0)
        return self._max_rest

    def prepare(self, jit: bool) -> None:
        """Build the tables of the path that will answer (the other is built if ever asked)."""
        if jit and self._trie is None:
            self._trie = _Trie(self._ident, self.ends, self.size)
        if not jit and self._table is None:
            self._build_table()

    def _build_table(self) -> None:
        # the hash table over non-empty runs; its values index the per-run arrays
        ident = self._ident
        self.runs = sorted((set(ident) | set(self.ends)) - {""})
        self.ident_one = np.array([ident[r][0] if r in ident else -1 for r in self.runs], dtype=np.int64)
        multi = [i for i, r in enumerate(self.runs) if len(ident.get(r, ())) > 1]
        self.multi = np.zeros(len(self.runs), dtype=bool)
        self.multi[multi] = True
        self.ident_rest = {i: ident[self.runs[i]][1:] for i in multi}
        self.has_ends = np.array([r in self.ends for r in self.runs], dtype=bool)
        self.ends_arr = [np.asarray(self.ends.get(r, ()), dtype=np.int64) for r in self.runs]
        self._table = _Table(_hash_strings(self.runs))

    @property
    def by_rest(self) -> dict[str, list[int]]:
        if self._by_rest is None:
            by_rest: dict[str, list[int]] = {}
            for rest, tid in self._items:
                by_rest.setdefault(rest, []).append(tid)
            self._by_rest = by_rest
        return self._by_rest

    @property
    def sorted_rests(self) -> list[str]:
        if self._sorted_rests is None:
            self._sorted_rests = sorted(self.by_rest)
        return self._sorted_rests

    # exact for any suffix; used for small queries and for suffixes that are not ASCII identifiers
    def py_one(self, s: str, parts: list) -> None:
        by_rest = self.by_rest
        for k in range(1, min(len(s), self.max_rest) + 1):
            ids = by_rest.get(s[:k])
            if ids:
                parts.extend(ids)
        if _IDENT_ALL.match(s):
            ids = self.ends.get(s)
            if ids:
                parts.extend(ids)
        else:  # tokens continuing s with a non-identifier character
            lo = bisect.bisect_left(self.sorted_rests, s)
            hi = bisect.bisect_left(self.sorted_rests, s + "\U0010ffff")
            n = len(s)
            for r in self.sorted_rests[lo:hi]:
                if len(r) > n and r[n] not in IDENT_CHARS:
                    parts.extend(by_rest[r])

    def jit_ids(self, fn, joined: str) -> np.ndarray | None:
        """Sorted unique ids allowed for the NUL-joined ASCII suffixes (compiled walk), or None if
        one of them is not an identifier."""
        self.prepare(jit=True)
        return self._trie.walk(fn, np.frombuffer((joined + "\0").encode("ascii"), dtype=np.uint8))

    def np_ids(self, joined: str) -> list[np.ndarray]:
        """Ids (with repeats) allowed for the NUL-joined ASCII identifier suffixes (numpy path)."""
        self.prepare(jit=False)
        h, full = _prefix_hashes(joined)
        found = self._table.find(h)
        hit = found >= 0
        runs = found[hit]
        ident = self.ident_one[runs]
        out = [ident[ident >= 0]]
        if self.ident_rest:
            more = runs[self.multi[runs]]
            out.extend(np.asarray(self.ident_rest[int(r)], dtype=np.int64) for r in np.unique(more))
        whole = found[full & hit]
        whole = whole[self.has_ends[whole]]
        out.extend(self.ends_arr[r] for r in whole.tolist())
        return out


# LRU helpers: each OrderedDict call is atomic under the GIL; another thread may evict the key
# between two calls, which only costs a recomputation.
def _touch(lru: OrderedDict, key) -> None:
    try:
        lru.move_to_end(key)
    except KeyError:
        pass


def _insert(lru: OrderedDict, key, value, cap: int) -> None:
    lru[key] = value
    while len(lru) > cap:
        try:
            lru.popitem(last=False)
        except KeyError:
            break


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        pass  # a read-only home is fine: the index is rebuilt next time


class CandidateSet:
    """Candidate names (e.g. the members of one dereferenced expression), sorted and UTF-8
    encoded once, so that every later step narrows them by an index range instead of touching
    one Python string per name. Made by `VocabIndex.candidates` (which caches them); treat as
    immutable. Names that start with a typed text are the contiguous range `span(typed)` of the
    sorted list (UTF-8 byte order is code point order, which is Python's string order)."""

    __slots__ = ("names", "key", "buf", "start", "end", "odd", "_lcp")

    def __init__(self, names: Iterable[str]):
        self.key = names if isinstance(names, frozenset) else frozenset(names)
        fns = jit_range()
        listed = list(self.key)
        joined = "\0".join(listed)
        if fns is not None and listed and joined.isascii() and joined.count("\0") == len(listed) - 1:
            # the usual case (no NUL inside a name): sorted and encoded by compiled code
            self.buf = np.frombuffer((joined + "\0").encode("ascii"), dtype=np.uint8)
            order, self.start, self.end, self._lcp, bad = fns[3](self.buf)
            self.names: list[str] = np.array(listed, dtype=object)[order].tolist()
        else:  # names with NUL or non-ASCII characters; or no numba
            self.names = sorted(listed)
            enc = [n.encode("utf-8", "surrogatepass") for n in self.names]
            raw = b"".join(enc)
            self.buf = np.frombuffer(raw, dtype=np.uint8) if raw else np.zeros(0, dtype=np.uint8)
            off = np.zeros(len(enc) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, enc), dtype=np.int64, count=len(enc)), out=off[1:])
            self.start, self.end = off[:-1].copy(), off[1:].copy()
            self._lcp = fns[2](self.buf, self.start, self.end) if fns is not None else None
            bad = 1
        # names holding a non-identifier character: their rests may need the exact path (rare)
        self.odd = [i for i, n in enumerate(self.names) if not (n.isascii() and _IDENT_ALL.match(n))] \
            if bad else []

    def __len__(self) -> int:
        return len(self.names)

    def lcp(self, fn) -> np.ndarray:
        """Bytes each name shares with the one before it (compiled `_lcps`, computed once)."""
        if self._lcp is None:
            self._lcp = fn(self.buf, self.start, self.end)
        return self._lcp

    def span(self, typed: str = "") -> tuple[int, int]:
        """[lo, hi): the names that start with `typed` (binary search, no per-name work)."""
        if not typed:
            return 0, len(self.names)
        lo = bisect.bisect_left(self.names, typed)
        # the names starting with `typed` are those below its successor (last character + 1)
        end = typed.rstrip("\U0010ffff")
        if not end:
            return lo, len(self.names)
        return lo, bisect.bisect_left(self.names, end[:-1] + chr(ord(end[-1]) + 1), lo)

    def rests(self, typed: str = "") -> frozenset:
        """The suffix set `allowed` would be given: rest of each name after `typed`."""
        lo, hi = self.span(typed)
        m = len(typed)
        return frozenset(n[m:] for n in self.names[lo:hi])


class VocabIndex:
    """Token texts plus lookup tables; see the module docstring for the question it answers."""

    def __init__(self, texts: list[str], arrays=None):
        """`arrays`: what `arrays()` returned for these same texts (the disk cache), or None."""
        self.texts = texts
        self.size = len(texts)
        if arrays is not None:
            self.has_dot = np.asarray(arrays["has_dot"], dtype=bool)
            self.has_newline = np.asarray(arrays["has_newline"], dtype=bool)
        else:
            self.has_dot = np.fromiter(("." in t for t in texts), dtype=bool, count=self.size)
            self.has_newline = np.fromiter(("\n" in t for t in texts), dtype=bool, count=self.size)
        self.by_text: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            if t:
                self.by_text.setdefault(t, []).append(i)
        self.max_text = max(map(len, self.by_text), default=0)
        self._sorted: list[str] | None = None  # for leads (merged-dot prefixes): built lazily
        items = [(t, i) for i, t in enumerate(texts) if t]
        if arrays is not None:
            self._root = _Lead(items, self.size, trie=_Trie.from_arrays(arrays, self.size),
                               empty_mask=np.asarray(arrays["empty_mask"], dtype=bool))
        else:
            self._root = _Lead(items, self.size)
        self._root.prepare(jit=jit_walk() is not None)
        self._leads: dict[str, _Lead] = {}
        self._cache: OrderedDict = OrderedDict()
        self._mask_cache: OrderedDict = OrderedDict()
        self.cache_size = 4096
        self.mask_cache_size = 256
        self._cands: OrderedDict = OrderedDict()
        self._range_args: dict[str, tuple] = {}  # per lead: what the range walk reads
        self.candidates_cache_size = 64
        self.py_path_max_chars = PY_PATH_MAX_CHARS

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def for_tokenizer(cls, tokenizer, cache_dir: str | Path | None = None) -> "VocabIndex":
        """Build (or load from the on-disk cache) the index of `tokenizer`."""
        root = Path(cache_dir or os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))
        path = root / "vocab" / f"{_tokenizer_fingerprint(tokenizer)}.json"
        npz = path.with_suffix(".npz")
        texts = None
        if path.exists():
            try:
                texts = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                texts = None
        if not isinstance(texts, list) or len(texts) != len(tokenizer):
            texts = decode_token_texts(tokenizer)
            _write_atomic(path, json.dumps(texts).encode("utf-8"))
            npz.unlink(missing_ok=True)  # tables of other texts, if any, are stale
        arrays = None
        if npz.exists():
            try:
                with np.load(npz) as z:
                    arrays = {k: z[k] for k in z.files}
                if len(arrays["has_dot"]) != len(texts) or len(arrays["empty_mask"]) != len(texts):
                    arrays = None
            except (OSError, ValueError, KeyError):
                arrays = None
        index = cls(texts, arrays)
        if arrays is None and index._root._trie is not None:
            buf = io.BytesIO()
            np.savez(buf, **index.arrays())
            _write_atomic(npz, buf.getvalue())
        return index

    def arrays(self) -> dict[str, np.ndarray]:
        """The precomputed arrays of the root tables (what the disk cache stores next to the texts)."""
        out = {"has_dot": self.has_dot, "has_newline": self.has_newline,
               "empty_mask": self._root.empty_mask}
        self._root.prepare(jit=True)
        out.update(self._root._trie.arrays())
        return out

    def _lead(self, lead: str) -> _Lead:
        if not lead:
            return self._root
        sub = self._leads.get(lead)
        if sub is None:
            if self._sorted is None:
                self._sorted = sorted(self.by_text)
            lo = bisect.bisect_left(self._sorted, lead)
            hi = bisect.bisect_left(self._sorted, lead + "\U0010ffff")
            n = len(lead)
            sub = _Lead([(t[n:], i) for t in self._sorted[lo:hi] if len(t) > n
                         for i in self.by_text[t]], self.size)
            self._leads[lead] = sub
        return sub

    # -- the question -------------------------------------------------------------------------
    def allowed(self, suffixes: Iterable[str], prefix: str = "") -> np.ndarray:
        """Sorted unique ids of tokens t such that either t is a non-empty prefix of `prefix`,
        or t = prefix + r with r non-empty and, for some s in `suffixes`, r is a prefix of s or
        r = s + c + anything with c a non-identifier character. "" in `suffixes` means the
        identifier may end right after `prefix`. The returned array is cached and shared: do not
        modify it in place. Safe to call from several threads."""
        key = (suffixes if isinstance(suffixes, frozenset) else frozenset(suffixes), prefix)
        hit = self._cache.get(key)
        if hit is not None:
            _touch(self._cache, key)
            return hit
        out = self._compute(key[0], prefix)
        _insert(self._cache, key, out, self.cache_size)
        return out

    def allowed_mask(self, suffixes: Iterable[str], prefix: str = "", width: int | None = None,
                     device=None):
        """`allowed` as a torch.bool tensor of length `width` (default: vocab size; model heads are
        often wider than the tokenizer, the extra ids are never allowed) on `device`.

        Cached per (suffixes, prefix, width, device): a repeated step reuses the tensor already on
        the device, so nothing is copied and nothing waits on the host. Do not modify it."""
        import torch
        fs = suffixes if isinstance(suffixes, frozenset) else frozenset(suffixes)
        width = self.size if width is None else int(width)
        key = (fs, prefix, width, str(device) if device is not None else "cpu")
        hit = self._mask_cache.get(key)
        if hit is not None:
            _touch(self._mask_cache, key)
            return hit
        ids = self.allowed(fs, prefix)
        mask = np.zeros(width, dtype=bool)
        mask[ids[ids < width]] = True
        t = torch.from_numpy(mask)
        if device is not None and torch.device(device).type != "cpu":
            t = t.pin_memory().to(device, non_blocking=True)
        _insert(self._mask_cache, key, t, self.mask_cache_size)
        return t

    # -- the same question over an encoded candidate set ----------------------------------------
    def candidates(self, names: Iterable[str]) -> CandidateSet:
        """The candidate names sorted and encoded once (cached per frozenset of names, LRU): build
        it when a member list becomes known, then ask `allowed_in` at every step."""
        key = names if isinstance(names, frozenset) else frozenset(names)
        hit = self._cands.get(key)
        if hit is not None:
            _touch(self._cands, key)
            return hit
        cs = CandidateSet(key)
        _insert(self._cands, key, cs, self.candidates_cache_size)
        return cs

    def allowed_in(self, cs: CandidateSet, typed: str = "", prefix: str = "") -> np.ndarray:
        """`allowed({n[len(typed):] for n in cs.names if n.startswith(typed)}, prefix)`, without
        building that set: the names starting with `typed` are an index range of `cs`, walked
        against the trie by compiled code (no per-name Python work; names with non-identifier
        characters after `typed` add an exact pure-Python pass). Cached; do not modify the array."""
        key = (cs.key, typed, prefix)  # 3-tuples: never equal to allowed()'s 2-tuple keys
        hit = self._cache.get(key)
        if hit is not None:
            _touch(self._cache, key)
            return hit
        out = self._compute_in(cs, typed, prefix)
        _insert(self._cache, key, out, self.cache_size)
        return out

    def allowed_mask_in(self, cs: CandidateSet, typed: str = "", prefix: str = "",
                        width: int | None = None, device=None):
        """`allowed_in` as a torch.bool tensor of length `width` (default: vocab size) on `device`,
        cached like `allowed_mask` (a repeated step copies nothing). Do not modify it."""
        import torch
        width = self.size if width is None else int(width)
        key = (cs.key, typed, prefix, width, str(device) if device is not None else "cpu", "in")
        hit = self._mask_cache.get(key)
        if hit is not None:
            _touch(self._mask_cache, key)
            return hit
        ids = self._cache.get((cs.key, typed, prefix))
        if ids is None and jit_range() is not None:  # straight from the walk's bitmap
            bits = self._compute_in(cs, typed, prefix, as_bits=True)
            n = min(width, self.size)
            mask = np.unpackbits(bits.view(np.uint8), count=n, bitorder="little").view(np.bool_)
            if width > n:
                mask = np.concatenate([mask, np.zeros(width - n, dtype=np.bool_)])
        else:
            ids = self.allowed_in(cs, typed, prefix) if ids is None else ids
            mask = np.zeros(width, dtype=bool)
            mask[ids[ids < width]] = True
        t = torch.from_numpy(mask)
        if device is not None and torch.device(device).type != "cpu":
            t = t.pin_memory().to(device, non_blocking=True)
        _insert(self._mask_cache, key, t, self.mask_cache_size)
        return t

    def _compute_in(self, cs: CandidateSet, typed: str, prefix: str, path: str | None = None,
                    as_bits: bool = False):
        """`path`: None (compiled range walk where numba is on, else `_compute` on the rests),
        "jit", or "py"/"np" (`_compute`'s paths on the rests; tests compare all of them).
        `as_bits`: return the compiled walk's bitmap instead of ids (jit only)."""
        fns = jit_range() if path in (None, "jit") else None
        if path == "jit" and fns is None:
            raise RuntimeError("the compiled path needs numba")
        if fns is None:
            return self._compute(cs.rests(typed), prefix, path)
        lo, hi = cs.span(typed)
        args = self._range_args.get(prefix)
        if args is None:  # per lead: the trie arrays the walk reads, looked up once
            sub = self._lead(prefix)
            sub.prepare(jit=True)
            rows = sub._trie.range_rows()
            parts = []
            for k in range(1, min(len(prefix), self.max_text) + 1):  # tokens ending inside prefix
                parts.extend(self.by_text.get(prefix[:k], ()))
            args = self._range_args[prefix] = (sub, len(rows) - 1, rows, sub._trie.ident_ids,
                                               sub._trie.ends_ids, sub.empty_bits(),
                                               np.asarray(parts, dtype=np.int64))
        sub, root, rows, ident_ids, ends_ids, empty_bits, extra = args
        if cs.odd:  # names with odd characters: exact pass where the rest after `typed` holds one
            parts = extra.tolist()
            m = len(typed)
            for i in cs.odd:
                if lo <= i < hi:
                    r = cs.names[i][m:]
                    if not (r.isascii() and _IDENT_ALL.match(r)):
                        sub.py_one(r, parts)
            extra = np.asarray(parts, dtype=np.int64)
        k = len(typed) if typed.isascii() else len(typed.encode("utf-8", "surrogatepass"))
        return (fns[1] if as_bits else fns[0])(
            cs.buf, cs.start, cs.end, cs.lcp(fns[2]), lo, hi, k, root, rows, ident_ids, ends_ids, extra,
            empty_bits, self.size)

    def clear_cache(self) -> None:
        """Forget cached answers (the precomputed tables stay); benchmarks use it for cold steps."""
        self._cache.clear()
        self._mask_cache.clear()

    def _compute(self, suffixes: frozenset, prefix: str, path: str | None = None) -> np.ndarray:
        """`path` forces "py", "np" or "jit" (tests compare each with the reference); None picks:
        py for small queries, else the compiled walk where numba is installed, else numpy."""
        parts: list[int] = []
        for k in range(1, min(len(prefix), self.max_text) + 1):  # tokens ending inside prefix
            ids = self.by_text.get(prefix[:k])
            if ids:
                parts.extend(ids)
        sub = self._lead(prefix)
        if path is None and (jit_walk() is None and sum(map(len, suffixes)) < self.py_path_max_chars):
            path = "py"
        if path == "py":
            for s in suffixes:
                sub.py_one(s, parts)
            # sorted(set()) beats np.unique at these sizes (numpy 2.x's unique hashes: slow here)
            return np.array(sorted(set(parts)), dtype=np.int64) if parts else _EMPTY
        joined = "\0".join(suffixes)
        fn = jit_walk() if path in (None, "jit") else None
        if path == "jit" and fn is None:
            raise RuntimeError("the compiled path needs numba")
        chunks = None
        if fn is not None and joined.isascii():  # the walk itself rejects non-identifier bytes
            got = sub.jit_ids(fn, joined)
            chunks = [got] if got is not None else None
        if chunks is None:
            if not (joined.isascii() and _IDENT_NUL.match(joined)):
                # rare: names with non-ASCII or non-identifier characters go the exact slow way
                fast = [s for s in suffixes if s.isascii() and _IDENT_ALL.match(s)]
                for s in suffixes:
                    if not (s.isascii() and _IDENT_ALL.match(s)):
                        sub.py_one(s, parts)
                joined = "\0".join(fast)
            chunks = [sub.jit_ids(fn, joined)] if fn is not None else sub.np_ids(joined)
        if "" in suffixes:  # a large, precomputed set: union through a boolean mask
            mask = sub.empty_mask.copy()
            if parts:
                mask[parts] = True
            for ids in chunks:
                mask[ids] = True
            return np.flatnonzero(mask).astype(np.int64, copy=False)
        if parts:
            chunks.append(np.asarray(parts, dtype=np.int64))
        if fn is not None and len(chunks) == 1:
            return chunks[0]  # already sorted and unique
        ids = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        if len(ids) < 2:
            return ids.astype(np.int64, copy=False)
        ids = np.sort(ids)
        keep = np.empty(len(ids), dtype=bool)
        keep[0] = True
        np.not_equal(ids[1:], ids[:-1], out=keep[1:])
        return ids[keep]

    def text_of(self, ids: Iterable[int]) -> str:
        return "".join(self.texts[i] for i in ids)
