"""The dereference monitor (MGD for Python): after `expr.` in code, only members of `expr`.

States (one row):
    WAIT     free decoding; a sampled token that contains a dot is checked (merged-dot BPE
             tokens like `.append` or `)._x`), and a text that ends in a code dot triggers.
    NARROW   candidates known: the mask allows what `Narrowing` allows (text still owed, then
             a prefix of a remaining member, or a whole member followed by a non-identifier
             character). Back to WAIT when the name is complete.
    FREE     at a binding position (`self.` at the start of a statement) the model may write
             a new name: `self.size = size` creates a member. The name is left free; if it is
             not a member and what follows does not make it an assignment target, the row is
             rolled back to the trigger and redone under the mask (NARROW, no second chance).
    PENDING  FREE wrote a non-member; waiting for the text that decides (`=` or not).
    SPEC     the analysis has not answered yet (a cache miss): the step stays free and the
             name is tracked. Every accepted token polls the answer; when it lands, a name
             that is (the start of) a member goes on under the mask, one that is not is rolled
             back to the trigger and redone under the mask. An answer later than `horizon`
             tokens fails open ("late"). Analysis blocks the batch only for `grace_s` at a
             miss (a brief wait, one window a step shared by the rows: analysis/wait.py).
             (Hosts that cannot roll back, `rollback=False`, wait for the answer instead; so
             does a reproducible run, `reproducible=True`, see `__init__`.)

Analysis is asked once per trigger, through the analyzer's cache; likely questions are asked ahead
(prefetches: at reset the receivers of `_prefetch`, while decoding a local as soon as a line binds
it, `_prefetch_bound`), so that the answer is often in before the name after the dot. Keys survive
across calls of one session (an editor's keystrokes): (the file outside the function being written,
the enclosing scope, receiver, the lines of this function that rebind the receiver's root); the
members of `self`/`cls` are shared by a class's methods, completed with the attributes that the
class's text and the generated text assign (`self.x = ...`) and that the class's text reads. It fails open, counted with a reason
in the trigger record, where the answer cannot be trusted: empty answers, timeouts, classes with
dynamic attributes or unresolved bases (the analyzer says so), and receivers whose type Jedi would
only guess (an unannotated parameter, or a local bound to one). Dunders are always allowed.
With the member vocabulary (`vocabulary=True`: MonitorConfig.vocabulary, opt-in; verify-first
hosts only), a receiver whose type is unknown ("untyped", "empty") and that cannot be a library
object (provenance.py: not a parameter, a call's or subscript's result, a member of a member,
nor bound from a call, another name, a loop or an import) is checked against every name the
project writes (analysis/vocabulary.py) and, when a sample does not fit, steered towards the
names the project writes after the receiver's own name (or, where it writes none, the builtin
types' members). Every other unknown receiver fails open as before.

Analysis is asked through the analyzer interface (analysis/base.py: `ask` -> ticket, polled with
`result(0)`); the only blocking waits (a host that cannot roll back, the row's end) go through
the batch's `WaitPolicy` (analysis/wait.py). The analyzer sees `ctx.splice(text)`; prefetches
see `ctx.probe(receiver)` (context.py).
Checkpoints are the engine's: `snapshot()` is the monitor's state as one immutable tuple (the
same object while it waits, so free steps cost nothing), `restore` puts it back after a cut by
any guide, so a cut followed by the same tokens gives the same masks. A name that is not a
member is a proposal, `Rollback(checkpoint, "not a member", (candidates, record, owed text))`:
the monitor enters its redo state (NARROW under the mask, the record marked rolled back) only in
`rolled_back`, once the engine has chosen that cut. `final_upto` holds back the text from the
token that holds a trigger's dot while its name is still written (NARROW) or its answer is
still owed (SPEC, FREE, PENDING and the late answers); `end_at` ends a row cut from outside (a
deadline, a cancel, the length limit) before such a name, its record saying what was cut.
The monitor is split by noun: this file is its state machine (reset, mask/check/advance, the
trigger's analysis and narrowing); its key and prefetch policy is dereference_keys.py, the
member-vocabulary steering dereference_vocab.py, the speculation ledger (owed and late answers,
settle, rollbacks, final text, `end_at`) dereference_spec.py — mixins of one class, one state.
Not here: jedi (analysis/jedi_*.py), name narrowing (narrowing.py), the loop (decoding/engine.py).
"""
from __future__ import annotations

import re
import time

import numpy as np

from ...pycode import block_end, ident_run
from ...lines import end_position
from ...analysis.base import Analysis, Answered, MembersQuery
from ...analysis.guards import isinstance_guards
from ...analysis.wait import PatientWait, WaitPolicy
from .base import Guide, RowView, TriggerRecord, token_flags
from .narrowing import Narrowing, is_dunder, name_run
from .dereference_keys import _DOTTED, KeyPolicy, _digest  # noqa: F401
from .dereference_spec import FREE, NARROW, PENDING, SPEC, WAIT, SpeculationLedger  # noqa: F401
from .dereference_vocab import _VOCABULARY_FOR, VocabularySteering, _WithVocabulary  # noqa: F401
from .dereference_second import SecondOpinion


class DereferenceMonitor(KeyPolicy, VocabularySteering, SecondOpinion, SpeculationLedger, Guide):
    def __init__(self, analyzer, allow_bindings: bool = True, rollback: bool = True,
                 speculate: bool = True, horizon: int = 48, hide_dunder: bool = True,
                 verify_first: bool | None = None, waits: WaitPolicy | None = None,
                 reproducible: bool = False, call_sites: bool = False, vocabulary: bool = False,
                 grace_s: float = 0.08):
        self.analyzer = analyzer
        # call_sites: unannotated parameters are asked about (Jedi's types from the call sites)
        # instead of failing open as "inferred" (MonitorConfig.call_sites)
        self.call_sites = call_sites
        # Reproducible (bench run): no speculation, no prefetch, answers keyed by the exact
        # splice, waits that only a hung analyzer ends (PatientWait): the masks depend on the
        # code alone, not on when an answer landed or which row asked first.
        self.reproducible = reproducible
        self.waits = waits or (PatientWait() if reproducible else WaitPolicy())
        self.allow_bindings = allow_bindings
        self.rollback = rollback      # False (mask-only hosts): binding positions stay free
        # Hosts that verify every free sample (the engine) check NARROW steps too: a mask is
        # built only when the sampled token does not fit; dunders are then accepted when the
        # model writes them but never steered to. Mask-only hosts mask with every member.
        self.verify_first = rollback if verify_first is None else verify_first
        # vocabulary: where the receiver's type is unknown (see _VOCABULARY_FOR), the name must
        # still exist somewhere: the project's member vocabulary (analysis/vocabulary.py). Only
        # on verify-first hosts: a mask-first host would have to steer among all of it
        self.vocabulary = vocabulary and self.verify_first
        self.hide = is_dunder if hide_dunder else None
        # Speculate on cache misses (needs rollback); else wait up to the analyzer's deadline.
        self.speculate = speculate and rollback and not reproducible
        self.horizon = horizon        # tokens a speculation may run before it fails open
        # a miss waits this long before it speculates: an answer that close then masks the name
        # before it is written instead of verifying it after the fact (on a busy machine most
        # answers verified after the fact had landed within tens of ms; docs/ANALYZERS.md)
        self.grace_s = grace_s
        self.chunked = False          # a host that takes tokens a chunk at a time: hold, not wait
        self._asked_at = 0.0          # when the running answer was asked (a hold's deadline)

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, row: RowView) -> None:
        ctx = row.context
        self.ctx = ctx
        self.lang = lang = ctx.language           # lexical facts of the file's language
        self._dot, self._newline = token_flags(row.vocab)
        self.prefix = ctx.lex_prefix
        self.lexer = lang.Lexer(self.prefix)
        before, after = ctx.before, ctx.after
        # the file outside the function being written (its class's other methods included):
        # unchanged by edits inside the function, changed by a method written elsewhere
        self.version = ctx.outside_version()
        self.scope, cls_off, cls_indent = lang.enclosing_scope(before)
        self._class_text = self._class_read = ""
        self._class_attrs: dict[str, set] = {}
        if cls_off is not None:          # the enclosing class's text around the function
            end = block_end(after, cls_indent, comments=False)
            tail = "\n" + after[: len(after) if end is None else end]
            self._class_text = before[cls_off:] + tail
            # what the class's code reads: not the name the cursor sits in (`self.fo|`)
            self._class_read = re.sub(r"\.\w*$", ".", before[cls_off:]) + tail
        self._vocab = self._vocab_names = None
        self._buffer = ""
        if self.vocabulary and self.lang.heuristics and ctx.repo is not None:   # (a Python project's names)
            from ...analysis.vocabulary import buffer_of, project_vocabulary
            self._vocab = project_vocabulary(ctx.repo)
            self._buffer = buffer_of(ctx)         # the file as the row has it (not its disk copy)
        if self._vocab is not None and not self.reproducible:
            self._vocab.names(ctx.path, self._buffer)     # start reading the buffer (background)
        self.state = WAIT
        self._clear()
        self._snap_cache = None
        self._hold = 0                            # a cursor inside a name: its length
        self._signature()
        # The cursor may sit right after a dot (`obj.|`) or inside the name after one
        # (`obj.gre|`): trigger before the first token, the name written so far counting.
        # That question goes first; the prefetches follow (never under its key).
        p = self.prefix
        m = re.search(r"\.([A-Za-z_]\w*)?$", p)
        self._hold = len(m.group(1) or "") if m else 0
        self._cursor = (None, "")                 # (the cursor's trigger, the name typed before it)
        asked = None
        if m and self.lexer.dot_is_code(p, m.start()):
            asked = lang.receiver_before(p, m.start())
            if self._analyze(row, "", hold_ok=not m.group(1)) is not None:
                self._start(row, 0, ".", 0)
                self._cursor_name(row, m.group(1) or "")
                self._cursor = (self.record, m.group(1) or "")
        self._hold = 0
        if self.lang.heuristics:
            self._prefetch(asked, row.cancelled)
        self._snap_cache = None

    def _clear(self) -> None:
        self.nar: Narrowing | None = None       # the candidates and the name's progress
        self.ticket = None                        # a running analysis (SPEC)
        self.spec_typed = ""                      # SPEC: the name written so far
        self.spec_done = False                    # SPEC: the name is complete
        self.record: TriggerRecord | None = None
        self.checkpoint = 0                       # token count to roll back to
        self.dot_tokens = 0                       # token count when the trigger happened
        self.name_end = 0                         # text offset where a FREE name ended
        self.free_ok = True                       # a binding position may be left free
        self.rollback_need = ""
        self._extra_names: set = set()
        self.late: tuple = ()                     # answers still owed for names already written:
                                                  # (ticket, record, name, checkpoint, need, dot count, extra)
        self._pending = None                      # (token, trigger, triggers before, ids) of check()
        self.given_up: dict = {}                  # answers given up (id -> ticket): never revived

    # -- checkpoints (the engine's) ----------------------------------------------------------
    def _snap(self) -> tuple:
        nar = self.nar
        return (self.state, nar, nar.snapshot() if nar is not None else None, self.ticket,
                self.spec_typed, self.spec_done, self.record, self.checkpoint, self.dot_tokens,
                self.name_end, self.free_ok, self.rollback_need, self._extra_names, self.late)

    def snapshot(self) -> tuple:
        s = self._snap_cache
        if s is None:
            s = self._snap_cache = self._snap()
        return s

    def restore(self, row: RowView, s: tuple) -> None:
        (self.state, self.nar, ns, self.ticket, self.spec_typed, self.spec_done, self.record,
         self.checkpoint, self.dot_tokens, self.name_end, self.free_ok, self.rollback_need,
         self._extra_names, self.late) = s
        if self.nar is not None:
            self.nar.restore(ns)
        self._pending = None
        self._snap_cache = None if self._revive_none() else s
        self.lexer.rewind(len(self.prefix) + len(row.text))

    # -- analysis -----------------------------------------------------------------------------
    def _analyze(self, row: RowView, upto_dot: str, hold_ok: bool = True) -> TriggerRecord | None:
        """Ask for the members after the dot that ends `upto_dot` (generated text). Returns the
        trigger's record, or None when it failed open. On a cache miss with speculation on,
        the record is returned with the answer still running (`self.ticket`); so it is on a
        chunked host when nothing after the dot is written yet (`hold_ok`: the host holds the
        row, `holding`); else the answer is waited for."""
        ctx = self.ctx
        full = self.prefix[: len(self.prefix) - self._hold] + upto_dot
        receiver = self.lang.receiver_before(full, len(full) - 1)
        root = ident_run(receiver)
        rec = TriggerRecord(receiver=receiver, candidates=0, analyzer=self.analyzer.name,
                            trusted=bool(getattr(self.analyzer, "trusted", False)))
        row.triggers.append(rec)
        self.ticket, self.nar = None, None
        guess = self._guessed(root, upto_dot) if self.lang.heuristics else None
        if guess:                 # not asked: fails open, or the member vocabulary holds it
            rec.asked = False
            self._extra_names = self._extra(receiver, upto_dot)
            ticket = Answered(Analysis(receiver, frozenset(), 0.0, False, f"inferred: {guess}"))
        else:
            at = ctx.splice(upto_dot, drop=self._hold)
            if self.lang.heuristics:
                key = self._key(receiver, upto_dot, full)
                guards = isinstance_guards(full, *end_position(full), receiver)
                if guards:        # narrowed here: another answer than the receiver's elsewhere
                    key = (*key, tuple(guards))
                self._extra_names = self._extra(receiver, upto_dot)
            else:                 # another language: no reading of the text, one key per question
                key = (self.version, self.scope, receiver)
                self._extra_names = set()
            if full.endswith("?."):   # `obj.f?.(x)`, `obj.a?.[k]`: an optional call or index
                self._extra_names = self._extra_names | {""}   # writes no member (the name "")
            if self.reproducible or not self.lang.heuristics:   # reused only for the same question
                key = (*key, _digest(at.code), at.line, at.column)
            ticket = self.analyzer.ask(MembersQuery(at, receiver, key, ended=row.cancelled))
        if self._vocab is not None:   # an answer for an unknown type also waits for the vocabulary
            ticket = _WithVocabulary(ticket, self)
        a = ticket.result(0)
        if a is None and self.speculate and self.grace_s > 0:
            a = self.waits.brief([ticket], self.grace_s, row.cancelled)[0]
        if a is None and (self.speculate or self.chunked and hold_ok):   # running: speculate
            self.ticket = ticket                             # (SPEC), or a chunked host holds the row
            self._asked_at = time.perf_counter()
            rec.failed_open, rec.reason = True, "pending"
            return rec
        if a is None:                             # a host that cannot roll back: wait (bounded)
            a = self.waits.wait([ticket], self.analyzer.deadline(), row.cancelled)[0] or \
                Analysis(receiver, frozenset(), 0.0, False, "timeout")
        return rec if self._answered(row, rec, a) else None

    def _answered(self, row: RowView, rec: TriggerRecord, a) -> bool:
        """Fill the record from the analysis and set the candidates; True when a mask can be
        built from it."""
        self.nar = self._narrowing(row, rec, a, self._extra_names)
        if not self.verify_first:       # a mask-first host masks at once: by both opinions
            self.nar = self._second_now(row, rec, self.nar, self._extra_names)
        return self.nar is not None

    def _narrowing(self, row: RowView, rec: TriggerRecord, a, extra: set) -> Narrowing | None:
        rec.analysis_ms = round(a.ms, 3)
        rec.cache_hit = a.cache_hit
        rec.candidates = len(a.names)
        names, steer = a.names, None
        if a.failed is not None or not a.names:
            why = a.failed or "empty"
            names = self._vocabulary_for(why, row, a.receiver)
            # steered only towards names the project writes after this receiver's name (else
            # builtin members): a model steered among thousands of unrelated names loops
            # (docs/BENCHMARK.md)
            steer = self._steer_for(a.receiver) if names is not None else None
            if not steer:
                rec.failed_open, rec.reason = True, why
                return None
            rec.vocabulary = why
        rec.failed_open, rec.reason = False, None
        names = names | extra if extra - names else names
        rec.candidates = len(names)
        hide = self.hide
        if "" in names:                 # after `?.`: `(`/`[` accepted, never steered to
            hide = (lambda n, d=hide: not n or (d is not None and d(n)))
        if a.hidden:                    # --hide-private: legal when written, never steered to
            hide = (lambda n, h=a.hidden, d=hide: n in h or (d is not None and d(n)))
        if steer is not None:           # the vocabulary: any of it accepted, `steer` suggested
            steer = steer | extra
            hide = (lambda n, v=steer, d=hide: n not in v or (d is not None and d(n)))
        nar = Narrowing(row.vocab, names, hide=hide)
        nar.second = a.second if steer is None else None    # a careful analyzer's, owed
        return nar

    def _cursor_name(self, row: RowView, typed: str) -> None:
        """The user already wrote `typed` after the dot: it counts as the name's start."""
        if not typed:
            return
        if self.nar is None:
            self.spec_typed = typed
        elif self.nar.fits(typed, complete=False):
            self.nar.typed = typed
        else:                                     # the user's text is no member prefix
            self.record.failed_open, self.record.reason = True, "cursor name is no member prefix"
            self.state, self.nar = WAIT, None

    def _fits_token(self, t: str) -> bool:
        """NARROW: may a token with text `t` come next? One without text (EOS, a stop id) ends
        the row: only after a whole name (`return self.` + EOS is no code)."""
        nar = self.nar
        return bool(t or nar.fits(nar.typed)) and nar.accepts(t) and not self._no_name(t)

    def _no_name(self, t: str) -> bool:
        """`t` (text right after a dot, nothing of the name written) ends the name empty where
        only `?.(` / `?.[` may: the empty name ("") is a candidate only after `?.`."""
        nar = self.nar
        if nar.typed or "" not in nar.names or len(t) <= len(nar.need):
            return False
        t = t[len(nar.need):]                     # (the owed head, `?.`, checked by accepts)
        return not name_run(t) and t[0] not in "(["

    def _binding_position(self, row: RowView, upto_dot: str) -> bool:
        if not (self.allow_bindings and self.free_ok):
            return False
        full = self.prefix[: len(self.prefix) - self._hold] + upto_dot
        receiver = self.lang.receiver_before(full, len(full) - 1)
        start = self.lexer.line_start()
        line_before = full[start: len(full) - 1 - len(receiver)]
        return self.lang.could_bind(line_before)

    # -- the protocol -------------------------------------------------------------------------
    def mask(self, row: RowView) -> np.ndarray | None:
        if self.state != NARROW or self.verify_first:
            return None
        ids = self.nar.allowed(steer=False)
        if not len(ids):
            return None                 # nothing in the vocabulary fits: fail open
        if self.record is not None:
            self.record.constrained = True
        return ids

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        """NARROW (verify-first hosts): a token that does not fit is resampled under the mask.
        WAIT: a free token containing a dot: if the dot is code, analyse and verify the name."""
        if self.state == NARROW and self.verify_first:
            t = row.vocab.texts[token]
            if self._fits_token(t):
                return None
            if self.nar.second is not None and not self.nar.need:   # a fast answer lacks it:
                if self._ask_second(self.record, self.nar.typed):   # the careful one decides
                    self.state = SPEC
                    return None
                if not self._confirm(row) or self._fits_token(t):
                    return None
            ids = self.nar.allowed()
            if not len(ids):
                return None             # nothing in the vocabulary fits: fail open
            self.record.constrained = True
            return ids
        if not self._dot[token] or self.state != WAIT:
            return None
        t = row.vocab.texts[token]
        n_triggers = len(row.triggers)
        found = self._find_trigger(row, row.text, t, 0)
        self._pending = (token, found, n_triggers, None)
        if found is None or found[1] is None or self.nar is None:
            return None                 # no trigger, failed open, or speculating
        j = found[0]
        rest = t[j + 1:]
        name = name_run(rest)
        complete = len(name) < len(rest)
        if self._binding_position(row, row.text + t[: j + 1]):
            return None                 # advance() starts FREE speculation
        def fits() -> bool:
            return self.nar.fits(name, complete) and not (name == "" and self._no_name(rest))
        if fits():
            return None                 # consistent: advance() narrows or finishes
        if self.nar.second is not None:   # a fast answer lacks it: the careful one decides
            if self._ask_second(found[1], ""):
                return None             # advance() speculates on the name (SPEC)
            self.nar = self._second_now(row, found[1], self.nar, self._extra_names)
            if self.nar is None:        # failed open
                self._pending = (token, (j, None), n_triggers, None)
                return None
            if fits():
                return None
        ids = self.nar.resample_ids(t[: j + 1])
        self._pending = (token, found, n_triggers, ids)
        return ids

    def advance(self, row: RowView, token: int) -> int | None:
        if self.state is WAIT and self._pending is None and not self._dot[token] and not self.late:
            if self._newline[token] and self.speculate and self.lang.heuristics:
                self._prefetch_bound(row)
            return None                     # the common free step: nothing to do
        self._snap_cache = None
        back = self._poll_late(row) if self.late else None
        # the token is consumed either way: a host that declines the owed answer's cut (replay)
        # goes on with it; one that takes the cut restores an earlier checkpoint anyway
        own = self._advance(row, token)
        return back if back is not None else own

    def _advance(self, row: RowView, token: int) -> int | None:
        t = row.vocab.texts[token]
        if self.state in (NARROW, FREE, SPEC):
            return self._consume(row, t, 0)
        if self.state == PENDING:
            return self._decide(row)
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] != token and (
                pending[3] is None or not np.isin(token, pending[3])):
            # A host that samples after peeking at its top token (transformers' generate) took
            # another token than the one checked: that check never happened.
            del row.triggers[pending[2]:]
            self.nar, self.ticket, pending = None, None, None
        base = row.text[: len(row.text) - len(t)]
        if pending is not None and pending[0] != token and pending[1] and pending[1][1] is not None:
            # Resampled under check()'s mask: the token continues (or stops inside) `p`.
            j = pending[1][0]
            p = row.vocab.texts[pending[0]][: j + 1]
            self.free_ok = False
            if t.startswith(p):
                self._start(row, len(base) + j + 1, t, j)
                return self._consume(row, t, j + 1)
            self._start(row, len(base) + len(t), t, len(t) - 1)
            self.nar.need = p[len(t):]
            self.rollback_need = p
            self.checkpoint = len(row.tokens) - 1
            return None
        return self._scan(row, t, 0, pending[1] if pending is not None and pending[0] == token else False)

    # -- transitions --------------------------------------------------------------------------
    def _find_trigger(self, row: RowView, base: str, t: str, start: int):
        """(j, record) for the first code dot t[j] with j >= start; record None = failed open."""
        for j in range(start, len(t)):
            if t[j] != ".":
                continue
            full = self.prefix + base + t[: j + 1]
            if self.lexer.dot_is_code(full, len(full) - 1):
                return j, self._analyze(row, base + t[: j + 1], hold_ok=j == len(t) - 1)
        return None

    def _scan(self, row: RowView, t: str, start: int, found=False) -> int | None:
        """WAIT: look for a code dot in t[start:] (the last accepted token) and trigger on it."""
        if "." not in t[start:]:
            return None
        base = row.text[: len(row.text) - len(t)]
        if found is False:
            found = self._find_trigger(row, base, t, start)
        if found is None or found[1] is None:
            return None
        j = found[0]
        self.free_ok = True
        self._start(row, len(base) + j + 1, t, j)
        return self._consume(row, t, j + 1)

    def _start(self, row: RowView, dot_end: int, t: str, j: int) -> None:
        """Enter NARROW, FREE or SPEC for the trigger whose dot ends at text offset dot_end, the
        dot being t[j] of the last token."""
        self.record = row.triggers[-1]
        self.spec_typed, self.spec_done = "", False
        self.dot_tokens = len(row.tokens)
        if j == len(t) - 1:          # the dot ends the token: keep it on rollback
            self.checkpoint, self.rollback_need = len(row.tokens), ""
        else:                        # merged token (`._x`): redo the token, owing its head
            self.checkpoint, self.rollback_need = len(row.tokens) - 1, t[: j + 1]
        binding = self._binding_position(row, row.text[:dot_end])
        if binding and not self.rollback:
            self.state = WAIT        # cannot undo a speculation: leave the name free
            self.record.reason = "binding position left free (no rollback)"
        elif binding:
            self.state = FREE
        elif self.ticket is not None:
            self.state = SPEC
        else:
            self.state = NARROW

    def _consume(self, row: RowView, t: str, i: int) -> int | None:
        """Feed t[i:] (text after the dot, or owed text) into NARROW/FREE/SPEC."""
        if self.nar is None:                # SPEC, or FREE with the answer still running
            return self._spec_feed(row, t, i)
        end = self.nar.feed(t[i:])
        if end is None:
            return None                # the name goes on in the next token
        end += i                       # t[end] is the first character after the name
        self.record.chosen = self.nar.typed
        if self.state == FREE and not self.nar.fits(self.nar.typed):
            self.state = PENDING
            self.name_end = len(row.text) - (len(t) - end)
            return self._decide(row)
        self.state = WAIT
        return self._scan(row, t, end)

    # -- speculation (the answer is still running) ----------------------------------------------