"""Sets of token ids a call's monitors mask with, each computed once per vocabulary and cached
on it: tokens that start an identifier, that start with a character, that begin (after blanks)
with `)` or `,`, that do not hold a character. Used by decoding/guides/keyword_args.py and
call_arity.py.
Test: tests/test_call_signatures.py, tests/test_call_arity.py.
"""
from __future__ import annotations

import re

import numpy as np

from .base import on_vocab


def ident_start(vocab) -> np.ndarray:
    """Boolean array: does token i start with an identifier character? Cached on the vocab."""
    return on_vocab(vocab, "_kw_ident_start", lambda: np.array(
        [bool(s) and (s[0].isalnum() or s[0] == "_") for s in vocab.texts]))


def keyword_start(vocab) -> np.ndarray:
    """Ids of the tokens that may begin a keyword argument of any name: after blanks a name,
    then nothing, blanks, or `=` (not `==`) and anything (`x`, ` x=`, `x=1`; not `x)`, `1`):
    where `**kwargs` takes any keyword. Cached on the vocab."""
    pat = re.compile(r"[ \t]*[^\W\d]\w*[ \t]*(?:=(?!=)[\s\S]*)?")
    return on_vocab(vocab, "_kw_keyword_start", lambda: np.array(
        [i for i, s in enumerate(vocab.texts) if pat.fullmatch(s)], dtype=np.int64))


def starting(vocab, ch: str, every: bool = False) -> np.ndarray:
    """Ids of the tokens whose text starts with `ch` (`=` but not `==`, unless `every`), cached
    on the vocab."""
    cache = on_vocab(vocab, "_kw_starting", dict)
    ids = cache.get((ch, every))
    if ids is None:
        bad = ch * 2 if ch == "=" and not every else None
        ids = cache[(ch, every)] = np.array([i for i, s in enumerate(vocab.texts)
                                    if s.startswith(ch) and not (bad and s.startswith(bad))], dtype=np.int64)
    return ids


def equals(vocab) -> np.ndarray:
    """Ids of the tokens that may come between a keyword's name and its value: blanks on one
    line, then `=` (not `==`) and anything, or blanks alone (`=`, ` =`, ` = 1`, ` `). Cached."""
    pat = re.compile(r"[ \t]*=(?!=)[\s\S]*|[ \t]+")
    return on_vocab(vocab, "_kw_equals", lambda: np.array(
        [i for i, s in enumerate(vocab.texts) if pat.fullmatch(s)], dtype=np.int64))


def closing(vocab) -> np.ndarray:
    """Ids of the tokens that begin, after blanks, with `)`: what may come where no further
    argument may begin (a trailing comma may still close the call; a blank alone is not
    offered: a model held there writes blanks until its length limit). Cached."""
    return on_vocab(vocab, "_kw_closing", lambda: np.array(
        [i for i, s in enumerate(vocab.texts) if s.lstrip().startswith(")")], dtype=np.int64))


def commas(vocab, pre: str = "") -> np.ndarray:
    """Ids of the tokens that begin, after spaces, with `,` — or, given `pre` (the text a
    refused token wrote before its `)`: `"` of `")`), the token `pre` itself and those that
    begin with `pre`, then spaces and `,`. Cached."""
    cache = on_vocab(vocab, "_kw_commas", dict)
    ids = cache.get(pre)
    if ids is None:
        n = len(pre)
        ids = cache[pre] = np.array([i for i, s in enumerate(vocab.texts) if s.startswith(pre) and (
            s[n:].lstrip(" \t").startswith(",") or n and s == pre)], dtype=np.int64)
    return ids


def next_argument(vocab, pre: str = "") -> np.ndarray:
    """What redoes a `)` refused right after an argument: `commas(vocab, pre)`, or where no
    token writes `pre` and a comma, the tokens without `)` (it was: none, and the `)` went
    through)."""
    ids = commas(vocab, pre)
    return ids if len(ids) else without(vocab, ")")


def without(vocab, ch: str) -> np.ndarray:
    """Ids of the tokens whose text does not hold `ch`, cached on the vocab."""
    cache = on_vocab(vocab, "_kw_without", dict)
    ids = cache.get(ch)
    if ids is None:
        ids = cache[ch] = np.array([i for i, s in enumerate(vocab.texts) if ch not in s], dtype=np.int64)
    return ids


def opening(vocab, head: str, close: bool) -> np.ndarray:
    """Ids of the tokens that write `head` (the text up to and with a call's `(`) and nothing
    after it but blanks and line breaks — or, where `close` (no parameter is required), `)` and whatever
    follows it: what may open a call whose first argument the refused token began wrongly.
    Cached."""
    cache = on_vocab(vocab, "_kw_opening", dict)
    ids = cache.get((head, close))
    if ids is None:
        n = len(head)
        ids = cache[(head, close)] = np.array([i for i, s in enumerate(vocab.texts) if s.startswith(head) and (
            not s[n:].strip(" \t\r\n") or close and s[n:].lstrip(" \t").startswith(")"))], dtype=np.int64)
    return ids
