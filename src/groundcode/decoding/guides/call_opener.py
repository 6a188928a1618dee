"""The opening of a call, shared by the call monitors (keyword_args.py: Python; call_arity.py:
TypeScript): a `(` the row writes (or the prompt's own) after a callee has its signature asked
of the analyzer (`ask_signature`); the answer opens the call, or the call stays pending while
the analyzer runs (decoding goes on; every token polls). Not here: what a monitor does inside
the call. Test: tests/test_call_signatures.py, tests/test_call_arity.py.
"""
from __future__ import annotations

from ...analysis.base import SignatureQuery
from .base import RowView

WAIT = "wait"                # a call monitor's state outside any call it follows


def ask_signature(monitor, callee: str, upto_paren: str):
    """The ticket for the signature of `callee` whose `(` ends `upto_paren` in `monitor`'s row
    (keyword_args' and call_arity's monitors: their analyzer, context, waits and cancel flag);
    waited for where the monitor is reproducible: a run must not depend on how fast the
    analyzer answered."""
    receiver, _, name = callee.rpartition(".")
    ticket = monitor.analyzer.ask(SignatureQuery(monitor.ctx.splice(upto_paren), receiver, name))
    if monitor.waits is not None and ticket.result(0) is None:
        monitor.waits.wait([ticket], monitor.analyzer.deadline(), monitor._cancelled)
    return ticket


class CallOpener:
    """The call monitors' opening of a call (keyword_args' and call_arity's): a `(` in the
    accepted token (or the prompt's own, at reset) whose callee the monitor recognizes
    (`_callee(full, k)`: "" where it is no call) has its signature asked; the answer opens the
    call (`_opened(row, answer, callee, call_start)`), or the call is left pending while the
    analyzer runs (decode on, poll with every token)."""

    def _try_call(self, row: RowView, t: str) -> None:
        """WAIT: does the accepted token `t` (ending row.text) open a call?"""
        base = len(row.text) - len(t)
        for j, c in enumerate(t):
            if c == "(":
                self._call_at(row, base + j + 1)
                if self.pending or self.state != WAIT:   # running, or open (no rollback into it)
                    return

    def _ask_at(self, row: RowView, upto: int, paren: int | None = None) -> tuple | None:
        """(callee, signature ticket) for the `(` that ends row.text[:upto] (`paren`: the
        prompt's `(` at that offset instead); None where it opens no call."""
        full = self.prefix + row.text[:upto]
        callee = self._callee(full, len(full) - 1 if paren is None else paren)
        return (callee, ask_signature(self, callee, row.text[:upto])) if callee else None

    def _call_at(self, row: RowView, upto: int, paren: int | None = None) -> None:
        """The `(` that ends row.text[:upto] (the prompt's own where upto == 0); `paren`: the
        prompt's `(` at that offset instead, its arguments begun before the cursor."""
        asked = self._ask_at(row, upto, paren)
        if asked is None:
            return
        callee, ticket = asked
        ans = ticket.result(0)
        if ans is None:
            self.pending = (ticket, callee, upto)
        else:
            self._opened(row, ans, callee, upto)
