"""The argument text of a call, read character by character (partial code): depth, strings,
comments, where the current argument began, the keywords passed, the positional arguments
complete, and whether the call is closed. Used by the keyword monitor (decoding/guides/
keyword_args.py) and the call retrieval (retrieval/invocation.py); `pycode` re-exports it.
Test: tests/test_sdk.py, tests/test_call_signatures.py.
"""
from __future__ import annotations

import re

_KW_EQ_DONE = re.compile(r"[ \t\r\n\\]*=[^=]")      # (inside brackets a line may break
_KW_EQ_SOFAR = re.compile(r"[ \t\r\n\\]*=?")        # between a keyword's name and its `=`)


class ArgScanner:
    """Character-level state of a call's argument text (what follows the `(`): depth, strings,
    comments, where the current argument began, the keywords passed so far, and whether the
    call is closed. Tolerant of partial code; `feed` may be called with more text later."""

    def __init__(self):
        self.pos = 0
        self.depth = 0
        self.quote = ""            # open string delimiter ('"', "'", '"""', "'''") or ""
        self.escape = False
        self.comment = False
        self.at_start = True       # after `(`/`,` at depth 0 with only whitespace since
        self.closed = False
        self.arg_at = 0            # offset where the current argument began (after `(`/`,`)
        self.name_at = -1          # offset of its leading identifier, -1 if none
        self.ident = ""            # that identifier
        self.reading = False       # the identifier may still go on
        self.used: list[str] = []  # keyword names passed so far
        self.positional = 0        # positional arguments complete (the last one counts once closed)
        self.unpacked = False      # a `*x` / `**x` argument: what binds cannot be told
        self._arg = 0              # the current argument: 0 empty, 1 positional, 2 keyword, 3 `*`
        self._after = ""           # text after a complete leading identifier (to spot `=`)
        self._tail = ""            # last characters inside a triple-quoted string
        self._word = ""            # the word being read at depth 0 (to see `lambda`)
        self.lambdas = 0           # `lambda`s at depth 0 whose `:` is still to come: their
                                   # parameters' commas and defaults are not the call's
        self._q, self._len, self._empty = "", 0, False

    def copy(self) -> "ArgScanner":
        """An independent scanner in this one's state (to try text without changing this one)."""
        other = ArgScanner.__new__(ArgScanner)
        other.__dict__.update({k: (list(v) if isinstance(v, list) else v) for k, v in self.__dict__.items()})
        return other

    def feed(self, s: str) -> "ArgScanner":
        for c in s:
            self.step(c)
            self.pos += 1
        return self

    def step(self, c: str) -> None:
        if self.closed:
            return
        if self.quote:
            if self.escape:
                self.escape = False
            elif c == "\\":
                self.escape = True
            elif len(self.quote) == 1:
                if c == self.quote:
                    self.quote, self._empty = "", self._len == 0   # `""` may open a triple
                else:
                    self._len += 1
            else:
                self._tail = (self._tail + c)[-3:]
                if self._tail == self.quote:
                    self.quote = ""
            return
        empty, self._empty = self._empty, False
        if self.comment:
            self.comment = c not in "\r\n"
            return
        if self.depth == 0 and (c.isalnum() or c == "_"):
            self._word += c
        else:
            if self._word == "lambda" and self.depth == 0:
                self.lambdas += 1
                self.ident, self.name_at, self.reading = "", -1, False
            self._word = ""
        if self.lambdas and self.depth == 0 and c in ":,=":
            self.lambdas -= c == ":"
            self.at_start = False
            return                     # (a lambda's parameter list: not the call's arguments)
        if self.reading:
            if c.isalnum() or c == "_":
                self.ident += c
                return
            self.reading = False
            self._after = ""
        if self.ident and self.depth == 0 and self.name_at >= 0:
            self._after += c
            if _KW_EQ_DONE.match(self._after):
                self.used.append(self.ident)
                self._arg = 2
                self.ident, self.name_at = "", -1
            elif not _KW_EQ_SOFAR.fullmatch(self._after):
                self.ident, self.name_at = "", -1
        if c == "#":
            self.comment = True
        elif c in "\"'":
            if empty and c == self._q:          # the third quote of `"""`
                self.quote, self._tail = c * 3, ""
            else:
                self.quote, self._q, self._len = c, c, 0
            self.at_start = False
        elif c in "([{":
            self.depth += 1
            self.at_start = False
        elif c in ")]}":
            if self.depth == 0:
                self.closed = True
                self._end_argument()
            else:
                self.depth -= 1
            self.at_start = False
        elif c == "," and self.depth == 0:
            self.at_start, self.arg_at, self.ident, self.name_at = True, self.pos + 1, "", -1
            self._end_argument()
        elif c in " \t\n\r\\":
            pass
        elif self.at_start and self.depth == 0 and (c.isalpha() or c == "_"):
            self.at_start, self.reading, self.ident, self.name_at = False, True, c, self.pos
            self._arg = self._arg or 1
        else:
            if self.at_start and self.depth == 0 and c == "*":
                self._arg, self.unpacked = 3, True
            self.at_start = False
            self._arg = self._arg or 1
        if c in "\"'([{" and not self._arg:
            self._arg = 1

    def _end_argument(self) -> None:
        if self._arg == 1:
            self.positional += 1
        self._arg = 0

    def keyword_pending(self) -> str:
        """The current argument's identifier where `=` and nothing else follows it yet (`(k=`:
        a keyword written, its value not begun); "" otherwise."""
        return self.ident if self.name_at >= 0 and self._after.strip(" \t") == "=" else ""

    def positional_begun(self) -> bool:
        """The current argument has begun and reads, so far, as a positional one (not `k=`)."""
        return self._arg == 1 and not self.keyword_pending()

    def argument_start(self) -> bool:
        return self.at_start and self.depth == 0 and not self.quote and not self.comment
