"""Name narrowing over a candidate set: while a name that must be one of `names` is written,
which tokens may come next, and where the name ends. Shared by the guides that constrain a name
(the dereference monitor after `expr.`; a tool-token guide after `<COMP>`). Knows no analyzer
and no tensors; the vocabulary index does the token work.

    n = Narrowing(vocab, names)        # names: the complete names that may be written
    n = Narrowing(vocab, names, need="x.")   # text owed before the name starts (a resample
                                       # under a merged-dot token such as `x.app` owes "x.")
    n = Narrowing(vocab, names, hide=is_dunder)  # allowed, but never steered to (see below)
    n = Narrowing(vocab, specs, run=SPECIFIER)   # names of other characters (a module
                                       # specifier in its string: `@scope/pkg-x`), ended by a
                                       # character outside them, never by a token with no text
    n = Narrowing(vocab, {"client"}, no_follow=".")   # characters that may not come right
                                       # after the complete name (a module file: no `.sub`)
    n = Narrowing(vocab, specs, run=SPECIFIER, follow="'\"`")   # the only ones that may
                                       # (a specifier: its closing quote, never `\n` or a space)
    ids = n.allowed()                  # token ids that continue `need`, then extend `typed`
                                       # towards a candidate, or finish one and go on with a
                                       # non-identifier character (np.ndarray; empty = none fits)
    n.accepts(token_text)              # would that token be allowed (pure Python, no mask)
    end = n.feed(text)                 # accepted text: None while the name goes on, else the
                                       # offset in `text` right after the name (n.typed = it)
    n.fits(name, complete=True)        # is `name` a candidate (complete) / a candidate prefix
    n.resample_ids(head)               # ids for a resample that must start with `head` (a
                                       # merged-dot token's text up to its dot) then a name
    n.suggestions(limit=10)            # candidates extending `typed`, for display
    snap = n.snapshot(); n.restore(snap)   # exact rewind (the state is (need, typed))

`typed` is the part of the name written so far; `need` the owed text still unwritten. A
Narrowing is cheap: the vocab index caches the encoded candidate set per set of names.

Hidden names (`hide`, e.g. dunders) are legal but not suggested: `accepts` and `fits` admit
them, while `allowed(steer=True)` and `resample_ids` leave them out as long as a visible name
still extends `typed` (so a verify-then-resample host accepts `self.__class__` written freely,
yet never pushes a model that wrote a non-member towards `__getattribute__`).
Test: tests/test_narrowing.py.
"""
from __future__ import annotations

import re

import numpy as np

_NAME = re.compile(r"[A-Za-z0-9_$]*")
_NAME_START = re.compile(r"#?[A-Za-z0-9_$]*")
SPECIFIER = re.compile(r"[^\"'`\s\\]*")    # a module specifier runs to its closing quote


def name_run(text: str, start: int = 0, typed: str = "") -> str:
    """The characters of a member name at text[start:], `typed` of it already written: an
    identifier (TypeScript's may hold `$`), which a name not yet begun may open with `#`
    (TypeScript's private names, `this.#items`). Python writes neither after a code dot."""
    return (_NAME if typed else _NAME_START).match(text, start).group(0)


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class Narrowing:
    __slots__ = ("vocab", "names", "cs", "visible", "need", "typed", "run", "no_follow", "follow", "_kept", "second")

    def __init__(self, vocab, names, need: str = "", typed: str = "", hide=None, run=None,
                 no_follow: str = "", follow: str = ""):
        self.vocab = vocab
        self.names: frozenset = names if isinstance(names, frozenset) else frozenset(names)
        self.cs = vocab.candidates(self.names)        # sorted + encoded once (cached by the index)
        shown = frozenset(n for n in self.names if not hide(n)) if hide else self.names
        self.visible = vocab.candidates(shown) if shown and shown != self.names else self.cs
        self.need = need
        self.typed = typed
        self.run = run                            # the name's characters (None: an identifier)
        self.no_follow = no_follow
        self.follow = follow                      # "": any character may follow the name
        self._kept: dict = {}
        self.second = None                        # () -> ticket: a careful analyzer's opinion,
                                                  # asked before a name is forbidden (Analysis.second)

    # -- queries ------------------------------------------------------------------------------
    def _steer_cs(self, typed: str):
        lo, hi = self.visible.span(typed)
        return self.visible if lo < hi else self.cs

    def allowed(self, steer: bool = True) -> np.ndarray:
        """Token ids allowed next (see the module docstring); with `steer`, hidden names only
        once no visible one extends `typed`. Cached by the vocab index."""
        cs = self._steer_cs(self.typed) if steer else self.cs
        ids = self.vocab.allowed_in(cs, self.typed, self.need)
        if not self.no_follow and not self.follow and self.run is None:
            return ids
        key = (cs.key, self.typed, self.need)
        kept = self._kept.get(key)
        if kept is None:        # the index ends a name at any non-identifier character: a ban
            texts = self.vocab.texts      # after it, or a name of other characters, is read here
            kept = self._kept[key] = np.array([i for i in ids.tolist() if self.accepts(texts[i])],
                                              dtype=ids.dtype)
        return kept

    def accepts(self, text: str) -> bool:
        """Would a token with this text be allowed next (hidden names included)? A token with
        no text (end of text, `<COMP>`, other special tokens) only where the name is complete."""
        if not text:
            return not self.need and self.typed in self.names and self.run is None
        need = self.need
        if need:
            k = min(len(need), len(text))
            if text[:k] != need[:k]:
                return False
            if len(text) <= len(need):
                return True
            text = text[len(need):]
        name = self._run(text, 0)
        if len(name) < len(text) and (text[len(name)] in self.no_follow or
                                      self.follow and text[len(name)] not in self.follow):
            return False
        return self.fits(self.typed + name, complete=len(name) < len(text))

    def fits(self, name: str, complete: bool = True) -> bool:
        """`name` is a candidate (complete) or the start of one (not complete)."""
        if complete:
            return name in self.names
        lo, hi = self.cs.span(name)
        return lo < hi

    def resample_ids(self, head: str) -> np.ndarray:
        """Ids of tokens that start with `head` (text ending in the anchor, e.g. `x.`) or stop
        inside it, and then go on with a candidate prefix: a resample under a rejected token."""
        return self.vocab.allowed_in(self._steer_cs(""), "", head)

    def suggestions(self, limit: int = 10, hide_dunder: bool = True, hide_private: bool = False) -> list[str]:
        """Candidates that extend `typed`, sorted; dunders and `_private` names optionally hidden
        (hidden from display only: `allowed()` always admits them)."""
        lo, hi = self.cs.span(self.typed)
        out = []
        for n in self.cs.names[lo:hi]:
            if hide_dunder and is_dunder(n) or hide_private and n.startswith("_") and not is_dunder(n):
                continue
            out.append(n)
            if len(out) >= limit:
                break
        return out

    # -- updates ------------------------------------------------------------------------------
    def feed(self, text: str) -> int | None:
        """Consume accepted text. Returns None while the name goes on (or `need` is still owed),
        else the offset in `text` of the first character after the name."""
        i = 0
        if self.need:
            k = min(len(self.need), len(text))     # (the mask made the text match `need`)
            self.need, i = self.need[k:], k
            if self.need:
                return None
        name = self._run(text, i)
        self.typed += name
        end = i + len(name)
        return None if end == len(text) else end

    def _run(self, text: str, i: int) -> str:
        return name_run(text, i, self.typed) if self.run is None else self.run.match(text, i).group(0)

    def snapshot(self) -> tuple[str, str]:
        return self.need, self.typed

    def restore(self, snap: tuple[str, str]) -> None:
        self.need, self.typed = snap
