"""The dereference monitor's member-vocabulary steering (a mixin of DereferenceMonitor; opt-in,
MonitorConfig.vocabulary): where the receiver's type is unknown and it cannot be a library object
(provenance.py), the name must be one the project writes (analysis/vocabulary.py), steered towards
what it writes after the receiver's name. Test: tests/test_vocabulary.py.
"""
from __future__ import annotations

import time


from ...pycode import ident_run
from .base import RowView
from .provenance import foreign
from .dereference_keys import _DOTTED

# why an answer is no answer, where the type is unknown rather than open-ended: the project's
# member vocabulary constrains the name instead (MonitorConfig.vocabulary). Not an unresolved
# import or base class: those members are a library's that the analyzer cannot see, which the
# project's own code need not write anywhere (pandas' `to_dict` in pypet: a correct name that a
# first version of this rule rolled back); they fail open as before.
_VOCABULARY_FOR = ("empty", "untyped")


class _WithVocabulary:
    """A ticket whose answer, where it leaves the type unknown (`_VOCABULARY_FOR`), is held back
    until the project's member vocabulary is ready too (its first scan, the buffer's read): so a
    fresh process speculates on such a trigger and verifies it, instead of failing open."""
    __slots__ = ("inner", "mon")

    def __init__(self, inner, mon):
        self.inner, self.mon = inner, mon

    def result(self, timeout: float | None = 0):
        end = None if timeout is None else time.monotonic() + timeout
        a = self.inner.result(timeout)
        if a is None:
            return None
        why = a.failed or ("" if a.names else "empty")      # as _narrowing reads the answer
        if not why.startswith(_VOCABULARY_FOR):
            return a
        mon = self.mon
        if mon._vocab_names is None:
            left = None if end is None else max(0.0, end - time.monotonic())
            mon._vocab_names = mon._vocab.wait_names(mon.ctx.path, mon._buffer, left)
        return a if mon._vocab_names is not None else None


class VocabularySteering:
    def _vocabulary_for(self, why: str, row: RowView, receiver: str) -> frozenset | None:
        """The project's member vocabulary where `why` says the receiver's type is unknown
        (not where names are made up at run time, "dynamic", or the answer was not in time)
        and the receiver cannot be a library object (provenance.py: not a parameter, a call's
        result, a member of a member — never through a name the vocabulary held —, nor bound
        from outside); None: fail open (vocabulary off, its first scan still running, or a
        receiver that may be a library's)."""
        if self._vocab is None or not why.startswith(_VOCABULARY_FOR):
            return None
        text = self._class_text if ident_run(receiver) in ("self", "cls") else self.body_prefix + row.text
        if foreign(receiver, self._params, text) is not None:
            return None
        if self._vocab_names is None:      # a reproducible run waits: masks must not depend on timing
            self._vocab_names = self._vocab.names(self.ctx.path, self._buffer, block=self.reproducible)
        return self._vocab_names

    def _steer_for(self, receiver: str) -> frozenset:
        """Names the project writes right after the receiver's last name (`conf` of
        `self.conf`), or where it writes none, the builtin types' members (an untyped loop
        variable is most often a str, list or dict); for a call or subscript of a name, what the
        project writes after such a call or subscript (`encode()`, `_states[]`), else nothing."""
        receiver = receiver or ""
        if _DOTTED.fullmatch(receiver):
            from ...analysis.vocabulary import BUILTIN_MEMBERS
            last = receiver.rsplit(".", 1)[-1]
            return self._vocab.after(self.ctx.path, self._buffer, last) or BUILTIN_MEMBERS
        return frozenset()         # a call's or subscript's result: never held (provenance.py)
