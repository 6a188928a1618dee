"""What a token would do to a Python call's arguments, judged against the callee's signature:
the rules the keyword monitor (keyword_args.py) applies, read from its state (`scan`, an
ArgScanner over the argument text so far; `sig`; `arity`; `keyword_only`) without changing it —
where an argument begins and with what (`_probe`), whether a `)` closes the call short of a
required parameter (`_closes_short`), a comma past the last parameter (`_comma_past_end`),
whether every argument from here on is a keyword (`_kw`). Test: tests/test_call_signatures.py.
"""
from __future__ import annotations

from ...pycode import ArgScanner, ident_run
from .base import RowView


def _bound(sig, positional: int, used) -> set:
    """The parameters of `sig` bound by `positional` positional arguments (the first ones that
    take a position) or by the keywords `used`."""
    return {p.name for p in sig.params[:positional] if p.kind != "keyword"} | set(used)


def _rebound(scan: ArgScanner, sig) -> list[str]:
    """The keywords `scan` read that bind a parameter of `sig` bound already — by position, or
    by the same keyword earlier (`f(x, x=1)`: a TypeError; `f(k=1, k=2)`: a SyntaxError)."""
    if scan.unpacked:
        return []
    by_position = _by_position(sig, scan.positional)
    return [u for i, u in enumerate(scan.used) if u in by_position or u in scan.used[:i]]


def _by_position(sig, positional: int) -> set:
    """The parameters of `sig` that `positional` positional arguments bind and a keyword could
    name too (a positional-only one's name may still go to `**kwargs`: `def f(a, /, **kw)`)."""
    return {p.name for p in sig.params[:positional] if p.kind == "either"}


class ArgumentRules:
    """The keyword monitor's judgments of a token (a mixin: KeywordArgMonitor holds the state)."""

    @staticmethod
    def _fits(scan: ArgScanner, sig) -> bool:
        """Do the arguments `scan` read fit `sig` (keywords it takes, positions within bounds)? A
        misfit before the cursor says the signature is not the one the code calls: fail open."""
        takes = sum(p.kind != "keyword" for p in sig.params)
        return (sig.var_keyword or all(u in sig.keywords() for u in scan.used)) and not _rebound(scan, sig) and (
            sig.var_positional or scan.unpacked or scan.positional + scan.positional_begun() <= takes)

    def _taken(self) -> set:
        """The names a keyword may no longer bind in the open call: passed as keywords, or bound
        by position (`f(x, x=1)`: a TypeError; `f(k=1, k=2)`: a SyntaxError, whatever `f`)."""
        return set(self.scan.used) | _by_position(self.sig, self.scan.positional)

    def _probe(self, t: str):
        """What token `t` would do at the call's top level, judged at its first telling
        character: ("name", head, name, complete) — an argument starts with a name;
        ("other", head, c) — an argument starts with something else; ("after", head, c) — the
        first character after a complete leading name; None — nothing to judge."""
        probe = self.scan.copy()
        for i, c in enumerate(t):
            if c not in " \t\r\n\\" and probe.depth == 0 and not probe.quote and not probe.comment:
                if probe.argument_start():
                    if c.isalpha() or c == "_":
                        name = ident_run(t, i)
                        return "name", t[:i], name, i + len(name) < len(t)
                    return "other", t[:i], t[i:i + 2]
                if probe.ident and probe.name_at >= 0 and not (probe.reading and (c.isalnum() or c == "_")):
                    # (a name begun in an earlier token ends at `c`: `self` then `.`, `x` then `)`)
                    return "after", t[:i], (probe._after + t[i:i + 2]).lstrip(" \t\r\n\\")
            probe.step(c)
            probe.pos += 1
            if probe.closed:
                return None
        return None

    def _missing(self, scan=None, pending: bool = False, sig=None) -> bool:
        """Is a required parameter of `sig` (default: the open call's) unbound, by position or
        by keyword? `pending`: the current argument, a positional one, is complete (the token
        closes the call)."""
        scan, sig = scan or self.scan, sig or self.sig
        if scan.unpacked:
            return False                  # `*x`, `**x`: what they bind cannot be told
        bound = _bound(sig, scan.positional + (pending and scan._arg == 1), scan.used)
        return any(r not in bound for r in sig.required)

    def _kw(self) -> bool:
        """Is every argument from here on a keyword? A keyword-only callable, a call that passed
        a keyword already (a positional argument may not follow one), or (arity) every
        positional parameter is taken and there is no `*args`."""
        if self.keyword_only or self.scan.used and not self.scan.unpacked:
            return True
        if not self.arity or self.sig.var_positional or self.scan.unpacked:
            return False
        return self.scan.positional >= sum(p.kind != "keyword" for p in self.sig.params)

    def _close_in(self, t: str):
        """Where token `t` closes the call: (offset in `t`, the argument state just before the
        `)`, the scanner after it), or None."""
        probe = self.scan.copy()
        for k, c in enumerate(t):
            arg = probe._arg
            probe.step(c)
            probe.pos += 1
            if probe.closed:
                return k, arg, probe
        return None

    def _closes_short(self, t: str) -> tuple | None:
        """Where token `t` closes the call while a required parameter is still unbound: (the
        `)`'s offset in `t`, the argument state just before it); None if it does not."""
        found = self._close_in(t) if self.arity and ")" in t else None
        if found is None:
            return None
        at, arg, probe = found
        probe._arg = arg                      # (closing counted it already: count it once)
        probe.positional -= arg == 1
        return (at, arg) if self._missing(probe, pending=True) else None

    @staticmethod
    def _after_argument(t: str, at: int, arg: int) -> str | None:
        """The text token `t` writes before the `)` at `at` (a short close, `_closes_short`)
        where that close comes right after an argument (its end in `t`, or written before it;
        blanks apart): another argument must follow — a comma. None if no argument is written."""
        if arg == 0:
            return None
        pre = t[:at]
        return "" if not pre.strip() else pre

    def _comma_past_end(self, row: RowView, t: str) -> bool:
        """Would token `t` write a top-level comma after which nothing is left to bind (every
        parameter bound by position or keyword, no `*args`), in a call on one line so far? On
        one line that comma can only begin an argument the callee does not take: the model
        writes `f(a, )` and goes on wrongly (three harms of the call-kind benchmark). Refused,
        the model closes the call or goes on with its last argument. A call broken over lines
        keeps its trailing comma (`f(\n    a,\n)`): there the next argument is checked."""
        if not self.arity or "," not in t or self.sig.var_positional or self.sig.var_keyword or self.scan.unpacked:
            return False
        args = self._args(row, self.call_start)
        if "\n" in args or "\r" in args:
            return False
        probe = self.scan.copy()
        for c in t:
            if c in "\r\n" or probe.closed:
                return False
            top = probe.depth == 0 and not probe.quote and not probe.comment
            probe.step(c)
            probe.pos += 1
            if top and c == "," and not probe.unpacked:
                bound = _bound(self.sig, probe.positional, probe.used)
                return all(p.name in bound for p in self.sig.params)
        return False
