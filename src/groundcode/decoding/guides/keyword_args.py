"""The keyword-argument monitor: inside `f(` whose signature the analyzer knows, keyword names
are the callable's parameters (the paper's "invalid usage of the target API").

States (one row):
    WAIT     free decoding; an accepted token holding a code `(` after a callee (`client.op(`,
             `f(`) asks the analyzer for the callee's signature (`SignatureQuery`); known →
             ARGS; unknown → ARGS with UNKNOWN (failed open: only what no call may do is
             judged, a keyword given twice or a positional argument after a keyword); no
             call where `def`/`class` comes before the name. An answer still running leaves
             decoding free; every accepted token polls it (no step waits); when it lands while
             the call is still open, ARGS starts from the text written so far (a wrong
             `name=` already written is rolled back as usual); a call closed first is "late".
             At reset, a call the prompt left open (the cursor after `f(` or among its
             arguments, `f(x, `) opens the same way, its arguments so far read from the prompt
             (where they do not fit the signature: fail open; one begun there is not redone).
    ARGS     inside the call's parentheses (a character scanner tracks depth, strings and
             comments). Where an argument starts (after `(` or `,` at depth 0) a free token that
             begins an identifier is verified:
               - keyword-only callables (boto3 client methods): the identifier must be a prefix
                 of a parameter not passed yet; otherwise the token is resampled under the mask
                 of such names (check), and NARROW follows; an argument that starts with
                 anything else (a positional literal, `*`/`**` unpacking) is resampled the same
                 way, `)` is allowed only once every required parameter was passed, and a
                 keyword's name must be followed by `=`;
               - other callables: a positional argument may be any expression, so only
                 `name=` is checked; a wrong keyword is rolled back to where the argument began
                 and redone under the mask;
               - arity (issue 41, `arity=True`): a comma after which nothing is left to bind
                 (every parameter bound, no `*args`) is resampled without `,` in a call on one
                 line so far (`f(a, )` was the model's way out of a refused argument); once
                 every positional parameter is taken (no `*args`) the call goes on as a
                 keyword-only one (a further argument must be `name=` of a parameter not
                 bound yet, by position or by keyword); a token that
                 would close the call while a required parameter is unbound is resampled
                 without `)` (right after an argument: among tokens that begin with `,`) —
                 also `()` in the very token that opens the call, and an argument that token
                 begins which the callee cannot take (`(tree` for `f()`: redone as `(` alone;
                 checked before it is accepted). `*x`/`**x` arguments end the arity check
                 (what they bind cannot be told).
             The closing `)` at depth 0 goes back to WAIT. With `**kwargs` any keyword name is
             taken; positions, `)` and the `=` after a keyword's name are judged as above.
             Where the monitor is reproducible, each signature is waited for (a run must not
             depend on the analyzer's speed); else an answer still running leaves decoding free.
             The argument text is rescanned from the `(` after every token (calls are short).
    NARROW   the mask allows tokens that continue the keyword name (vocab index, as the
             dereference monitor does); back to ARGS once the name is complete.

Checkpoints are the engine's (`snapshot`/`restore`); a wrong keyword is a proposal
(`Rollback(argument start, "wrong keyword", (owed text, the call))`) and NARROW is entered in
`rolled_back`, once the engine has taken that cut. Text from the current argument's start on
is held back (`final_upto`) where such a cut may come; from the `(` while its signature runs.
A call opened inside the arguments (`f(x, g(`) is followed where its signature is at hand
(waited for where reproducible, else a cached one), then the call around it again (`outer`, a
stack; the prompt's own outer calls are not followed); a keyword merged into
the same token as the `(` (`(Foo=`) is refused before that token where the signature is in
(reproducible: always); one that lands later sees it too late and only records it.
Not here: where signatures come from (analysis/sdk.py: boto3; jedi_worker.call_signature: any
callee Jedi resolves, overloads merged; lsp_messages.signature: the servers), tensors, the loop.
Test: tests/test_sdk.py, tests/test_call_signatures.py.
"""
from __future__ import annotations

import re

import numpy as np

from ...analysis.base import CallSignature
from ...pycode import ArgScanner, Lexer, ident_run, open_paren, receiver_before
from .base import Guide, Rollback, RowView, TriggerRecord
from .argument_rules import ArgumentRules, _rebound
from .call_opener import WAIT, CallOpener, ask_signature
from .token_sets import closing as _closing, equals as _equals, ident_start as _ident_start, \
    keyword_start as _keyword_start, next_argument as _next_argument, opening as _opening, \
    starting as _starting, without as _without

ARGS, NARROW = "args", "narrow"           # (WAIT: the call opener's, call_opener.py)


_KW_EQ = re.compile(r"[ \t]*=(?!=)")
_DEFINED = re.compile(r"(?:^|[^\w.])(?:def|class)[ \t]+$")      # `def f(`, `class A(`: no call
# a callee whose signature the analyzer does not know: any arguments, so only what no call may
# do is judged — a keyword given twice, a positional argument after a keyword (SyntaxErrors)
UNKNOWN = CallSignature("", (), var_positional=True, var_keyword=True)


class KeywordArgMonitor(CallOpener, ArgumentRules, Guide):
    def __init__(self, analyzer, rollback: bool = True, arity: bool = True, reproducible: bool = False):
        from ...analysis.wait import PatientWait
        self.analyzer = analyzer
        self.rollback = rollback
        self.arity = arity
        # reproducible: every signature waited for; else never (a step must not wait: the
        # call is opened when the answer lands, `()` in one token is not judged without it)
        self.waits = PatientWait() if reproducible else None

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, row: RowView) -> None:
        self.ctx = row.context
        self._cancelled = row.cancelled
        self.prefix = self.ctx.lex_prefix
        self.lexer = Lexer(self.prefix)
        self.state = WAIT
        self.sig = None
        self.keyword_only = False
        self.record: TriggerRecord | None = None
        self.call_start = 0          # offset in the generated text right after the `(`
        self.scan = ArgScanner()
        self.cs = None
        self.allowed: frozenset = frozenset()
        self.typed = ""
        self.need = ""
        self.pending = None          # (ticket, callee, call_start): a signature still running
        self.outer: tuple = ()       # the calls this one is an argument of: (sig, keyword_only,
        self._open_at_cursor(row)    # record, call_start) each, innermost last

    def _open_at_cursor(self, row: RowView) -> None:
        """The prompt ends with a call's `(` (the editor's cursor right after `f(`, the call
        tasks), or inside its arguments (`f(x, `: the keyword tasks; `head` is what the prompt
        wrote of them): that call is the row's from its first token (it was never checked: only
        a `(` the row writes opened one). Only the innermost open bracket, where it is a call's."""
        self.head = ""                # (the prompt's call: the one whose call_start is 0)
        if self.prefix.endswith("("):
            self._call_at(row, 0)
            return
        k = open_paren(self.prefix, self.lexer.line_start())
        if k >= 0 and self._callee(self.prefix, k):
            self.head = self.prefix[k + 1:]
            self._call_at(row, 0, paren=k)

    def _args(self, row: RowView, call_start: int) -> str:
        """The argument text of the call opened at `call_start` so far (the prompt's part too)."""
        return (self.head if call_start == 0 else "") + row.text[call_start:]

    def _rescan(self, row: RowView) -> None:
        """The argument text of the open call read again from its `(` (calls are short)."""
        self.scan = ArgScanner().feed(self._args(row, self.call_start))

    def _arg_start(self) -> int | None:
        """Where the current argument began in the row's text (blanks before the cursor apart);
        None where the prompt wrote part of it: it cannot be redone."""
        lead = len(self.head) if self.call_start == 0 else 0
        if self.scan.arg_at >= lead or not self.head[self.scan.arg_at:].strip():
            return self.call_start + max(self.scan.arg_at - lead, 0)
        return None

    # -- checkpoints (the engine's) ----------------------------------------------------------
    def snapshot(self) -> tuple:
        return (self.state, self.sig, self.keyword_only, self.record, self.call_start, self.scan,
                self.cs, self.allowed, self.typed, self.need, self.pending, self.outer)

    def restore(self, row: RowView, snap: tuple) -> None:
        (self.state, self.sig, self.keyword_only, self.record, self.call_start, self.scan,
         self.cs, self.allowed, self.typed, self.need, self.pending, self.outer) = snap
        self.lexer.rewind(len(self.prefix) + len(row.text))

    def rolled_back(self, row: RowView, proposal: Rollback) -> None:
        """Our `wrong=` proposal won: the argument is redone with its name under the mask (the
        call as the proposal saw it: the restored state may predate its opening)."""
        self.need, self.record, self.sig, self.keyword_only, self.call_start, self.outer = proposal.payload
        if not any(t is self.record for t in row.triggers):
            row.triggers.append(self.record)      # recorded after the cut's point: put back
        self.record.rolled_back = True
        self.pending = None                       # the signature is known now
        self.state, self.typed = NARROW, ""
        self._rescan(row)
        self.cs = None
        if self._candidates(row) is None:         # no parameter left to name: not a keyword
            self.state, self.need = ARGS, ""     # again (NARROW would leave it free: a loop)

    def final_upto(self, row: RowView) -> int:
        """A wrong keyword cuts back to where its argument began: text from there is held (from
        the `(` on while the call's signature is still running: it may land and cut there)."""
        if self.state == WAIT:
            return min(len(row.text), self.pending[2]) if self.pending and self.rollback else len(row.text)
        at = self._arg_start()
        if self.keyword_only or not self.rollback or at is None or \
                self.sig is UNKNOWN and (self.scan.name_at < 0 or not self.scan.used):
            return len(row.text)       # (UNKNOWN: only a keyword begun, and given before, may be cut)
        return min(len(row.text), at)

    # -- analysis -----------------------------------------------------------------------------
    def _paren_is_code(self, full: str, k: int) -> bool:
        """Is full[k] == "(" an operator (not inside a string or comment)?"""
        if k < self.lexer.line_start():
            return False
        for kind, s, e in self.lexer.scan(full, k + 1):
            if s <= k < e:
                return kind == "op" and e - s == 1
        return False

    def _callee(self, full: str, k: int) -> str:
        """The callee whose call opens at full[k] == "(" ("" where it is none)."""
        callee = receiver_before(full, k)
        if not callee or not (callee[-1].isalnum() or callee[-1] == "_") or not self._paren_is_code(full, k):
            return ""
        if _DEFINED.search(full, max(0, k - len(callee) - 80), k - len(callee)):
            return ""                  # a definition's parameter list
        return callee

    def _opened(self, row: RowView, ans, callee: str, call_start: int) -> None:
        self._open_call(row, ans.signature, callee, call_start)

    def _opens_wrong(self, row: RowView, t: str) -> np.ndarray | None:
        """WAIT: the tokens to redo token `t` among where it opens a call and, inside itself,
        closes it while the callee requires an argument (`()`: without `)`), or begins an
        argument the callee cannot take — past its positional parameters, no keyword left
        that the name may become, or a keyword it does not take (qwen's `(tree` for sitetree's
        `get_tree_item_model()`: the call opened only after the token, its argument was never
        judged): tokens that write the `(` alone. None: `t` is fine, or cannot be judged."""
        j = t.find("(")
        if not self.arity or j < 0 or not t[j + 1:].strip(" \t\r\n") or "\n" in t[:j] or "\r" in t[:j]:
            return None                # (a line break before it: the lexer would learn a line
                                       # start from text that may be refused)
        full = self.prefix + row.text + t[: j + 1]
        callee = self._callee(full, len(full) - 1)
        if not callee:
            return None
        scan = ArgScanner().feed(t[j + 1:])
        ans = ask_signature(self, callee, row.text + t[: j + 1]).result(0)
        sig = ans.signature if ans is not None else None
        if sig is None or sig.var_keyword and not sig.required:
            return None
        if scan.closed:
            ids = _without(row.vocab, ")") if self._missing(scan, sig=sig) else None
        elif sig.var_keyword or sig.var_positional or scan.unpacked:
            return None
        else:
            takes = sum(p.kind != "keyword" for p in sig.params)
            eq = [k for k in [scan.keyword_pending()] if k]
            past = scan.positional + scan.positional_begun() > takes and not (  # (`(k=` ends it)
                scan.reading and any(k.startswith(scan.ident) for k in sig.keywords()))
            if not past and all(u in sig.keywords() for u in scan.used + eq):
                return None
            ids = _opening(row.vocab, t[: j + 1], not sig.required)
        return ids if ids is not None and len(ids) else None

    def _poll(self, row: RowView) -> int | None:
        """WAIT with a signature owed: has it landed? Open the call if it is still open (and
        maybe roll back a wrong `name=` written meanwhile)."""
        ticket, callee, call_start = self.pending
        ans = ticket.result(0)
        if ans is None:
            return None
        self.pending = None
        if ArgScanner().feed(self._args(row, call_start)).closed:
            row.triggers.append(TriggerRecord(receiver=callee + "(", candidates=len((ans.signature or UNKNOWN).params),
                                              failed_open=True, reason="late"))
            return None
        return self._open_call(row, ans.signature, callee, call_start)

    def _open_call(self, row: RowView, sig, callee: str, call_start: int) -> int | None:
        """A call with signature `sig` (None: unknown) opened at `call_start`: go to ARGS. With
        `**kwargs` any keyword is taken; its positions, `)` and a keyword's `=` are still
        judged. Unknown: the signature fails open, the call's syntax is still judged (UNKNOWN:
        a keyword given twice, a positional argument after a keyword)."""
        rec = TriggerRecord(receiver=callee + "(", candidates=len(sig.params) if sig else 0)
        if sig is None:
            if not self.arity:
                return None
            sig, rec.failed_open, rec.reason = UNKNOWN, True, "signature unknown: only the call's syntax is judged"
        row.triggers.append(rec)
        if call_start == 0 and self.head and not self._fits(ArgScanner().feed(self.head), sig):
            rec.failed_open, rec.reason = True, "the arguments before the cursor do not fit"
            return None
        self.sig, self.record = sig, rec
        self.keyword_only = not sig.var_positional and not sig.var_keyword and all(
            p.kind == "keyword" for p in sig.params)
        self.call_start = call_start
        self.state, self.cs, self.allowed = ARGS, None, frozenset()
        self._rescan(row)
        if not sig.var_keyword and any(u not in sig.keywords() for u in self.scan.used):
            rec.reason = "keyword merged into the `(` token: not redone"
        return self._settle(row)

    def _candidates(self, row: RowView):
        names = self.sig.keywords() - self._taken()     # never bound twice
        if names != self.allowed or self.cs is None:
            self.allowed = names
            self.cs = row.vocab.candidates(names) if names else None
        return self.cs

    # -- the protocol -------------------------------------------------------------------------
    def mask(self, row: RowView) -> np.ndarray | None:
        if self.state != NARROW or self.cs is None:
            return None
        ids = row.vocab.allowed_in(self.cs, self.typed, self.need)
        if self._kw() and not self.need and self.typed in self.allowed:
            # a complete name: go on to a longer name, or `=` (never `name)` / `name,`)
            ids = np.union1d(ids[_ident_start(row.vocab)[ids]], _equals(row.vocab))   # (`k =` too)
        if not len(ids):
            return None                 # nothing in the vocabulary fits: fail open
        self.record.constrained = True
        return ids

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        if self.state == WAIT and self.pending is None:
            return self._opens_wrong(row, row.vocab.texts[token])
        if self.state != ARGS:
            return None
        t = row.vocab.texts[token]
        short = self._closes_short(t)        # `)` while a required parameter is unbound
        if short is not None:
            self.record.constrained = True   # (right after an argument: the next one begins;
            pre = self._after_argument(t, *short)
            ids = _next_argument(row.vocab, pre) if pre is not None else _without(row.vocab, ")")
            return ids if len(ids) else None  # a line break there led to `}`: pyuploadcare)
        if self._comma_past_end(row, t):     # `, ` with nothing left to bind, on one line
            self.record.constrained = True
            ids = _without(row.vocab, ",")
            return ids if len(ids) else None
        found = self._probe(t)
        if found is None:
            return None
        cs = self._candidates(row)
        kw = self._kw()
        what, head = found[0], found[1]
        if what == "name":
            name, complete = found[2], found[3]
            rest = t[len(head) + len(name):]
            if kw and complete and rest.strip(" \t") and not _KW_EQ.match(rest):
                ok = False              # a whole name, then not `=`: a positional argument
            elif self.sig.var_keyword:  # any keyword not bound yet (`**kwargs`); a positional one
                ok = not (complete and _KW_EQ.match(rest) and name in self._taken())   # shows at its end
            elif cs is None:
                ok = not kw
            elif kw:
                lo, hi = cs.span(name)
                ok = (name in self.allowed) if complete else lo < hi
            else:   # a positional argument may be any name: only `name=` in this token is judged
                ok = not (complete and _KW_EQ.match(t[len(head) + len(name):]) and name not in self.allowed)
        elif not kw:
            return None
        elif what == "other":
            # keyword-only: an argument is `name=`; `)` only once every required one is passed;
            # `*`/`**` unpacking cannot be checked; a comment is fine
            c = found[2]                # (`*x`/`**x` may follow a keyword: free where not keyword-only)
            ok = c.startswith("#") or c.startswith("*") and not self.keyword_only or (
                c.startswith(")") and not self._missing())
        else:                           # after a keyword's name comes `=`
            c = found[2]                # what follows the name so far, then this token
            ok = c.startswith("=") and not c.startswith("==")
            if ok and self.sig.var_keyword and self.scan.ident in self._taken():
                self.record.constrained = True    # `k=` again (`**kwargs`: any name but a bound
                ids = np.flatnonzero(_ident_start(row.vocab))     # one): the name goes on
                return ids if len(ids) else None
            if not ok:
                self.record.constrained = True
                if c.startswith("=="):      # `=` is written: anything but a second one
                    ids = np.setdiff1d(np.arange(len(row.vocab.texts)), _starting(row.vocab, "=", True))
                else:
                    ids = _equals(row.vocab)
                return ids if len(ids) else None
        if ok:
            return None
        self.record.constrained = True
        allowed = row.vocab.allowed_in(cs, "", head) if cs is not None else np.zeros(0, dtype=np.int64)
        if self.sig.var_keyword:          # any keyword: a token that begins a name
            allowed = np.union1d(allowed, _keyword_start(row.vocab))
        if kw and not self._missing():    # no further positional argument: a keyword, or the end
            allowed = np.union1d(allowed, _closing(row.vocab))   # (it was: nothing when the
        elif not head and not self._missing():                          # token began with a blank)
            allowed = np.union1d(allowed, _starting(row.vocab, ")"))
        return allowed if len(allowed) else None

    def advance(self, row: RowView, token: int) -> int | None:
        t = row.vocab.texts[token]
        if self.state == WAIT:
            if self.pending is not None:
                return self._poll(row)
            if "(" in t:
                self._try_call(row, t)
            return None
        self._rescan(row)
        if self.state == NARROW:
            s = t
            if self.need:
                k = min(len(self.need), len(s))
                self.need, s = self.need[k:], s[k:]
                if self.need:
                    return None
            name = ident_run(s)
            self.typed += name
            if len(name) == len(s):
                return None             # the name goes on in the next token
            self.state, self.typed = ARGS, ""
        got = self._settle(row)
        if got is None and self.state == ARGS and "(" in t:
            return self._inner_call(row, t)
        return got

    def _inner_call(self, row: RowView, t: str) -> int | None:
        """Token `t`, inside the call's arguments, opens another call (`f(x, g(`): where its
        signature is at hand (waited for where reproducible; else only a cached one) that call
        is followed, and the one around it again once it closes."""
        base = len(row.text) - len(t)
        for j, c in enumerate(t):
            upto = base + j + 1
            if c != "(" or ArgScanner().feed(row.text[upto:]).closed:
                continue               # (no `(`, or a call closed in this token: not followed)
            asked = self._ask_at(row, upto)
            ans = asked[1].result(0) if asked else None
            if ans is not None:
                self.outer += ((self.sig, self.keyword_only, self.record, self.call_start),)
                return self._open_call(row, ans.signature, asked[0], upto)
        return None

    def _settle(self, row: RowView) -> int | None:
        """After a token in ARGS: a closed call ends; a name in progress at an argument start
        narrows (keyword-only); a wrong `name=` rolls back (other callables)."""
        s = self.scan
        if s.closed:
            self.record.chosen = ",".join(s.used)
            if self.outer:             # back to the call this one was an argument of
                (self.sig, self.keyword_only, self.record, self.call_start), self.outer = \
                    self.outer[-1], self.outer[:-1]
                self._rescan(row)
                self.cs, self.allowed = None, frozenset()
                return self._settle(row)
            self.state = WAIT
            return None
        if s.reading and self._kw() and not self.sig.var_keyword and self._candidates(row) is not None:
            self.state, self.typed, self.need = NARROW, s.ident, ""
            return None
        bad = [u for u in s.used if u not in self.sig.keywords() and not self.sig.var_keyword]
        bad += _rebound(s, self.sig)          # (a parameter bound twice: by position, or again)
        if bad and not self.keyword_only and self.rollback:
            # `wrong=`: cut back to the token where this argument began, redo under the mask
            arg_text = self._arg_start()
            if arg_text is None:
                self.record.reason = "wrong keyword begun before the cursor: not redone"
                return None
            back = next((k for k, e in enumerate(row.ends) if e > arg_text), len(row.ends))
            keep = row.ends[back - 1] if back > 0 else 0
            name_at = row.text.find(bad[-1], arg_text)
            if keep < self.call_start or name_at < 0:
                self.record.reason = "wrong keyword merged with the `(` token: not redone"
                return None
            # the payload carries the call: the cut may go back to before it opened (a
            # signature that landed late), where the restored state knows nothing of it
            return Rollback(back, "wrong keyword", (row.text[keep:name_at], self.record, self.sig,
                                                    self.keyword_only, self.call_start, self.outer))
        return None
