"""Token texts: the text each token id contributes when it follows other text, per tokenizer.

Byte-level BPE (GPT-2 `Ġ`) and SentencePiece (`▁`, `<0xNN>`) vocabularies; special tokens have
text "" (never allowed by a mask). What guides lex and masks are built from; the user-facing
completion text comes from the tokenizer itself (decoding/detokenize.py).
Not here: the tables built over these texts (trie.py, index.py). Test: tests/test_vocab.py.
"""
from __future__ import annotations

import hashlib
import json
import re

def bytes_to_unicode() -> dict[int, str]:
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


_BYTE_DECODER = {c: b for b, c in bytes_to_unicode().items()}
_SP_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def _backend(tokenizer):
    """The `tokenizers` object behind a fast tokenizer (None: a slow, Python one)."""
    from transformers import PreTrainedTokenizerFast
    return tokenizer.backend_tokenizer if isinstance(tokenizer, PreTrainedTokenizerFast) else None


def tokenizer_fingerprint(tokenizer, fmt: int) -> str:
    """A key for a tokenizer's cached tables (`fmt`: the cache layout's version)."""
    backend = _backend(tokenizer)
    blob = backend.to_str() if backend is not None else json.dumps(tokenizer.get_vocab(), sort_keys=True)
    special = sorted(tokenizer.all_special_ids)
    return hashlib.sha256(f"{fmt}\0{len(tokenizer)}\0{special}\0{blob}".encode()).hexdigest()[:24]


def _style(tokenizer, pieces: list[str]) -> str:
    backend = _backend(tokenizer)
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
    special = set(tokenizer.all_special_ids)
    literal: set[int] = set()
    for i, tok in tokenizer.added_tokens_decoder.items():     # {id: tokenizers.AddedToken}
        if _SP_BYTE.match(str(tok)):
            continue  # byte-fallback pieces are registered as added tokens, yet they are text
        if tok.special:
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
