"""The arity monitor (TypeScript): inside `f(` whose signature the language server shows whole
(signatureHelp: one signature, every parameter read), a call takes no more arguments than the
callee has parameters (a rest parameter takes any number) and does not close while a required
parameter is unbound (issue 41: TS2554). Python's calls: keyword_args.py.

States (one row):
    WAIT   free; an accepted token holding a code `(` right after a callee (`obj.f(`, `f(`,
           `new C(`; never `if (`, `function f(`) asks the analyzer (SignatureQuery). Known →
           ARGS; unknown (overloads, no parameters — a generic rest parameter inferred from no
           arguments reads the same —, a parameter that does not read) → stay,
           recorded as failed open. A reproducible monitor waits for the answer; the editor's
           never waits: an answer that lands while the call is still open starts ARGS then, one
           that lands after it closed is recorded "late".
    ARGS   the argument text from the `(` on is scanned with the language's scanner (strings,
           templates, comments and regular expressions skipped; bracket depth; top-level
           commas). A top-level comma after a `<` that no `>` has closed (`=>`, `<=` neither
           open nor close) may lie in a type argument list (`new Map<string, number>()`,
           `g<A, B>(x)`) or follow a less-than (`a < b, c`): not told apart, it may separate
           arguments or not — the count is a range (Args.least..count). A token is resampled
           (`check`) when it would
             - close the call with fewer arguments than its last required parameter needs, by
               the most count (the mask: tokens without `)`; right after an argument, tokens
               that begin with `,`), or
             - write the sure comma that opens an argument past the last parameter of a callee
               without a rest parameter, in a call on one line so far (no line break from the
               `(` to that comma: such a call takes no trailing comma, the comma can only begin
               an argument; the mask: tokens without `,` — the model closes the call or goes on
               with its last argument, rather than writing `,)` and dropping the one it meant), or
             - begin an argument past the last parameter, by the least count (an unsure comma
               fails open): the comma was let through (a call broken over lines, where a
               trailing comma is the style: `f(\n  a,\n)`; or an answer not in yet at it);
               the mask: tokens that begin, after blanks, with `)`
             — each once the signature, asked again with the text cut right after that comma,
               still says so (a generic callee's rest parameter is inferred from the arguments
               written: at the `(` it may show none). The question is the same at the comma and
               where the argument begins (the argument's own text makes the server answer
               unknown), so it is asked at the comma; an answer not in yet there (the editor)
               fails open at the comma and is read again at the next token;
           and in WAIT a token that opens and closes a call at once (`()`) while its callee
           requires an argument is resampled without `)` (its signature asked before it is
           accepted: waited for where reproducible).
           A spread argument (`...xs`) ends the check (what it binds cannot be told). The `)`
           that closes the call goes back to WAIT; nested calls are not followed.
JavaScript files are left alone (their parameters are all optional to the compiler).
Test: tests/test_call_arity.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...languages.typescript_scan import _scan_code, _State
from ...lines import ECMASCRIPT as EOL
from .base import Guide, RowView, TriggerRecord
from .call_opener import WAIT, CallOpener, ask_signature
from .token_sets import closing as _closing, next_argument as _next_argument, without as _without

ARGS = "args"                # (WAIT: the call opener's, call_opener.py)
_NOT_CALLS = frozenset({"if", "for", "while", "switch", "catch", "with", "return", "function", "typeof",
                        "void", "delete", "await", "yield", "in", "of", "instanceof", "else", "do",
                        "case", "throw", "super", "import", "export", "constructor", "get", "set",
                        "async", "static"})
TYPED = (".ts", ".tsx", ".mts", ".cts")


@dataclass(frozen=True)
class Args:
    """A call's argument text read so far: `closed` the offset of the `)` that closes it (-1:
    open), `count` the arguments written (a trailing comma starts none), `spread` a `...x`,
    `last` where the last argument's text begins (after its comma). A top-level comma after a
    `<` no `>` has closed yet may be a type argument list's (`new Map<string, number>()`) or
    follow a less-than (`a < b, c`): the scanner cannot tell, so `count` counts it (at most so
    many arguments), `least` does not (at least so many); `commas` the sure commas' offsets."""
    closed: int
    count: int
    spread: bool
    last: int = 0
    least: int = 0
    commas: tuple[int, ...] = ()


def read_args(text: str) -> Args:
    """The arguments of a call whose text after the `(` is `text` (partial code)."""
    st, depth, starts, closed, angles, sure = _State(), [0], [0], [-1], [0], []

    def on(k: int, c: str) -> bool:
        if c in "([{":
            depth[0] += 1
        elif c in ")]}":
            if depth[0] == 0:
                closed[0] = k
                return True
            depth[0] -= 1
        elif depth[0]:
            pass                            # inside brackets: neither commas nor `<…>` count
        elif c == "<":
            angles[0] += text[k + 1: k + 2] != "="          # `<=` opens none
        elif c == ">":
            if angles[0] and text[k - 1: k] != "=":         # `=>` closes none
                angles[0] -= 1
        else:                               # a top-level comma
            starts.append(k + 1)
            if not angles[0]:
                sure.append(k)
        return False
    _scan_code(st, text, 0, "()[]{},<>", on)
    end = closed[0] if closed[0] >= 0 else len(text)
    bounds = list(zip(starts, [*(s - 1 for s in starts[1:]), end]))
    args = [text[a:b].strip() for a, b in bounds]
    count = len(args) - (not args[-1])      # the last one counts once it is begun
    least = len(sure) + bool(text[sure[-1] + 1 if sure else 0: end].strip())
    return Args(closed[0], count, any(a.startswith("...") for a in args), starts[-1], least, tuple(sure))


class CallArityMonitor(CallOpener, Guide):
    def __init__(self, analyzer, reproducible: bool = False):
        from ...analysis.wait import PatientWait
        self.analyzer = analyzer
        self.waits = PatientWait() if reproducible else None

    def reset(self, row: RowView) -> None:
        self.ctx = row.context
        self._cancelled = row.cancelled
        self.prefix = self.ctx.lex_prefix
        self.lexer = self.ctx.language.Lexer(self.prefix)
        self.off = self.ctx.path.suffix not in TYPED
        self.state, self.sig, self.record, self.call_start, self.pending = WAIT, None, None, 0, None
        self.callee, self.widened = "", {}
        if not self.off and self.prefix.endswith("("):   # the cursor right after `f(`: the row's call
            self._call_at(row, 0)

    def snapshot(self) -> tuple:
        return (self.state, self.sig, self.record, self.call_start, self.pending, self.callee)

    def restore(self, row: RowView, snap: tuple) -> None:
        self.state, self.sig, self.record, self.call_start, self.pending, self.callee = snap
        self.lexer.rewind(len(self.prefix) + len(row.text))

    # -- the call ---------------------------------------------------------------------------
    def _callee(self, full: str, k: int) -> str:
        """The callee whose call opens at full[k] == "(" ("" where it is none)."""
        if self.lexer.state_at(full, k) != "code":
            return ""
        callee = self.ctx.language.receiver_before(full, k)
        if not callee or not (callee[-1].isalnum() or callee[-1] in "_$") or callee in _NOT_CALLS:
            return ""
        head = full[: k - len(callee)].rstrip()
        if head.endswith(("function", "function*")):
            return ""                       # a declaration
        return callee

    def _opened(self, row: RowView, ans, callee: str, call_start: int) -> None:
        self._open(row, ans.signature, callee, call_start, ans.failed)

    def _open(self, row: RowView, sig, callee: str, call_start: int, why) -> None:
        rec = TriggerRecord(receiver=callee + "(", candidates=len(sig.params) if sig else 0, kind="call",
                            failed_open=sig is None, reason=(why or "unknown") if sig is None else None)
        row.triggers.append(rec)
        if sig is None:
            return
        self.sig, self.record, self.call_start, self.state, self.callee = sig, rec, call_start, ARGS, callee
        self._settle(row)

    def _settle(self, row: RowView) -> None:
        a = read_args(row.text[self.call_start:])
        if a.spread:
            self.record.reason = "spread argument"
        if a.closed >= 0 or a.spread:
            self.state = WAIT
            self.record.chosen = str(a.count)

    # -- the protocol -------------------------------------------------------------------------
    def _bounds_of(self, sig) -> tuple[int, float]:
        need = max((i + 1 for i, p in enumerate(sig.params) if p.required), default=0)
        return need, float("inf") if sig.var_positional else len(sig.params)

    def _opens_short(self, row: RowView, t: str) -> bool:
        """WAIT: does token `t` open a call and close it at once (`()`) while its callee
        requires an argument? (Seen only here: the call opens and ends inside the token.)"""
        j = t.find("(")
        if j < 0 or ")" not in t[j:] or "\n" in t[:j] or "\r" in t[:j] or self.pending is not None:
            return False
        full = self.prefix + row.text + t[: j + 1]
        callee = self._callee(full, len(full) - 1)
        a = read_args(t[j + 1:])
        if not callee or a.closed < 0:
            return False
        ans = ask_signature(self, callee, row.text + t[: j + 1]).result(0)
        if ans is None or ans.signature is None:
            return False
        return a.count < self._bounds_of(ans.signature)[0]

    def _still_too_many(self, row: RowView, t: str, at: int, slot: int) -> bool:
        """Does argument `slot` (1-based), beginning at offset `at` of the call's text, lie past
        the last parameter by the signature asked again there? A generic callee's signature at
        the `(` is inferred from no arguments (`f<A extends any[]>(v, ...args: A)` shows `f(v)`);
        with the arguments written it may take more. Not known yet (the editor): not blocked
        now; the ticket is kept and read again at the next token."""
        upto = (row.text + t)[: self.call_start + at]
        ticket = self.widened.get(upto)
        if ticket is None:
            ticket = self.widened[upto] = ask_signature(self, self.callee, upto)
        ans = ticket.result(0)
        sig = None if ans is None else ans.signature
        if sig is not None and slot <= self._bounds_of(sig)[1]:
            self.sig = sig
        return sig is not None and slot > self._bounds_of(sig)[1]

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        if self.off:
            return None
        if self.state == WAIT:
            if self._opens_short(row, row.vocab.texts[token]):
                ids = _without(row.vocab, ")")
                return ids if len(ids) else None
            return None
        t = row.vocab.texts[token]
        call = row.text[self.call_start:] + t
        a = read_args(call)
        if a.spread:
            return None
        need, most = self._bounds_of(self.sig)
        # the sure comma that opens the first argument past the last parameter; this token's,
        # in a call on one line so far (no trailing comma there: it can only begin one)
        k = a.commas[most - 1] if 0 < most <= len(a.commas) else -1
        at_comma = k >= len(call) - len(t) and not any(c in call[:k] for c in EOL)
        if (at_comma or a.least > most) and self._still_too_many(row, t, k + 1, most + 1):
            ids = _without(row.vocab, ",") if at_comma else _closing(row.vocab)
        elif a.closed >= 0 and a.count < need:   # closes with a required parameter unbound:
            pre = t[:max(0, a.closed - (len(call) - len(t)))]   # right after an argument, a comma
            pre = "" if not pre.strip() else pre                 # (after what the token wrote first)
            ids = _next_argument(row.vocab, pre) if call[a.last:a.closed].strip() else _without(row.vocab, ")")
        else:
            return None
        self.record.constrained = True
        return ids if len(ids) else None

    def advance(self, row: RowView, token: int) -> None:
        if self.off:
            return None
        t = row.vocab.texts[token]
        if self.state == ARGS:
            self._settle(row)
            return None
        if self.pending is not None:
            ticket, callee, start = self.pending
            ans = ticket.result(0)
            if ans is not None:
                self.pending = None
                if read_args(row.text[start:]).closed >= 0:
                    row.triggers.append(TriggerRecord(receiver=callee + "(", candidates=0, kind="call",
                                                      failed_open=True, reason="late"))
                else:
                    self._open(row, ans.signature, callee, start, ans.failed)
            return None
        if "(" in t:
            self._try_call(row, t)
        return None
