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
             tokens fails open ("late"). Analysis never blocks the batch or the model.
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
`rolled_back`, once the engine has chosen that cut. `final_upto` holds back the text after a
trigger whose answer is still owed (SPEC, FREE, PENDING and the late answers).
Not here: jedi (analysis/jedi_*.py), name narrowing (narrowing.py), the loop (decoding/engine.py).
"""
from __future__ import annotations

import hashlib
import re
import time

import numpy as np

from ...pycode import (Lexer, assigned_attributes, binding_verdict, block_end, could_bind,
                       docstring_types, enclosing_scope, function_header, ident_run,
                       imported_names, receiver_before, used_attributes)
from ...analysis.base import Analysis, Answered, MembersQuery
from ...analysis.guards import isinstance_guards
from ...analysis.wait import PatientWait, WaitPolicy
from .base import Guide, Rollback, RowView, TriggerRecord, token_flags
from .narrowing import Narrowing, is_dunder
from .provenance import foreign

WAIT, NARROW, FREE, PENDING, SPEC = "wait", "narrow", "free", "pending", "spec"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# a line that binds a local (`x = ...`, `x: T = ...`, `for x in ...:`, `with ... as x:`)
_BINDS = re.compile(r"([ \t]*)(?:([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)|for\s+([A-Za-z_]\w*)\s+in\b"
                    r"|(?:async\s+)?with\b.*\bas\s+([A-Za-z_]\w*)\s*:\s*$)")
_USED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.[A-Za-z_]")
# a dotted chain `a.b.c` (each of its proper prefixes is a receiver the text dots into)
_CHAIN = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# a module-level name: assigned at column 0, or a top-level class
_TOP_BINDS = re.compile(r"^(?:class\s+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=))", re.M)
# prefetches at a row's start: at most this many (one worker answers them in turn, and a local
# bound while decoding waits behind them), of which at most _FILE_PREFETCHES from `_often_dotted`
_PREFETCHES, _FILE_PREFETCHES = 8, 5
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


def _digest(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class DereferenceMonitor(Guide):
    def __init__(self, analyzer, allow_bindings: bool = True, rollback: bool = True,
                 speculate: bool = True, horizon: int = 48, hide_dunder: bool = True,
                 verify_first: bool | None = None, waits: WaitPolicy | None = None,
                 reproducible: bool = False, call_sites: bool = False, vocabulary: bool = False):
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

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, row: RowView) -> None:
        ctx = row.context
        self.ctx = ctx
        self._dot, self._newline = token_flags(row.vocab)
        self.prefix = getattr(ctx, "lex_prefix", "")
        self.lexer = Lexer(self.prefix)
        before, after = getattr(ctx, "before", ""), getattr(ctx, "after", "")
        # the file outside the function being written (its class's other methods included):
        # unchanged by edits inside the function, changed by a method written elsewhere
        self.version = ctx.outside_version()
        self.scope, cls_off, cls_indent = enclosing_scope(before)
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
        if self.vocabulary and getattr(ctx, "repo", None) is not None:
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
            asked = receiver_before(p, m.start())
            if self._analyze(row, "") is not None:
                self._start(row, 0, ".", 0)
                self._cursor_name(row, m.group(1) or "")
                self._cursor = (self.record, m.group(1) or "")
        self._hold = 0
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
        self._snap_cache = s
        self.lexer.rewind(len(self.prefix) + len(row.text))

    def rolled_back(self, row: RowView, proposal: Rollback) -> None:
        """Our proposal won: redo the trigger under the mask, no second chance to write freely."""
        nar, rec, need = proposal.payload
        if not any(t is rec for t in row.triggers):
            row.triggers.append(rec)              # a merged-dot trigger: its token is redone
        rec.rolled_back = True
        rec.chosen = None
        # a redo at the cursor's trigger keeps what the user typed of the name (`self.re|`)
        nar.need, nar.typed = need, self._cursor[1] if rec is self._cursor[0] else ""
        self.nar, self.record = nar, rec
        self.checkpoint, self.rollback_need = proposal.length, need
        self.late = tuple(e for e in self.late if e[3] < proposal.length)
        self.ticket = None
        self.free_ok = False
        self.spec_typed, self.spec_done = "", False
        self.state = NARROW
        self._snap_cache = None

    def declined(self, row: RowView, proposal: Rollback) -> None:
        """A host that does not roll back (replay): the name stays; carry on as after a binding."""
        rec = proposal.payload[1]
        rec.rolled_back = True
        rec.chosen = None
        if rec is self.record:       # an owed answer's proposal leaves the current trigger alone
            self.ticket, self.nar = None, None
            self.state = WAIT
        self._snap_cache = None

    def final_upto(self, row: RowView) -> int:
        """Text after a trigger whose answer is still owed may be cut: held back."""
        if self.state is WAIT and not self.late:
            return len(row.text)
        cps = [e[3] for e in self.late]
        if self.state in (SPEC, FREE, PENDING):
            cps.append(self.checkpoint)
        if not cps:
            return len(row.text)
        c = min(cps)
        return row.ends[c - 1] if 0 < c <= len(row.ends) else (0 if c <= 0 else len(row.text))

    # -- analysis -----------------------------------------------------------------------------
    def _rebinds(self, root: str, generated: str) -> str:
        pat = re.compile(rf"\b(for|as)\s+{re.escape(root)}\b|\b{re.escape(root)}\s*(:[^=\n]*)?=(?!=)")
        return "\n".join(ln for ln in (self.body_prefix + generated).splitlines() if pat.search(ln))

    def _unannotated(self, name: str) -> bool:
        return name not in ("self", "cls") and name in self._params and name not in self._annotations

    def _guessed(self, root: str, generated: str) -> str | None:
        """Why Jedi could only guess the type of `root` (from the call sites it finds): an
        unannotated parameter, or a local that some line binds to one (`x = param`)."""
        if self.call_sites:
            return None
        rebinds = self._rebinds(root, generated) if root else ""
        if self._unannotated(root) and not rebinds:
            return "unannotated parameter"
        for m in re.finditer(rf"(?<![\w.]){re.escape(root)}\s*=\s*([A-Za-z_]\w*)\s*(?:#.*)?$", rebinds, re.M):
            if m.group(1) != root and self._unannotated(m.group(1)):
                return f"alias of the unannotated parameter {m.group(1)}"
        return None

    def _key(self, receiver: str, generated: str, full: str) -> tuple:
        """Cache key: (text outside the function, scope, receiver, this function's lines that
        rebind its root). `self`/`cls` are shared by the methods of a class; a root never bound
        in this function (an import, a module global, a builtin) by the whole file."""
        root = ident_run(receiver)
        scope = self.scope
        rebinds = ""
        literal = receiver.lstrip("bBrRfFuU")[:1]
        if literal in ("'", '"'):          # every str (bytes) literal has the same members
            kind = "bytes" if receiver[:1] in "bB" or receiver[1:2] in "bB" else "str"
            return ("<literal>", kind)
        if root in ("self", "cls"):
            scope = scope.rpartition(".")[0] or scope
            if receiver != root and _DOTTED.match(receiver):
                # `self.x.`: shared by the class's methods (a prefetch asks it at the body's
                # start), unless this function assigns `self.x` (Jedi infers from that too)
                rebinds = self._rebinds(receiver, generated)
        elif root:
            rebinds = self._rebinds(root, generated)
            if not rebinds and receiver == root and root in self._annotations:
                scope = ("<annotation>", self._annotations[root])   # `ctx: Context`: per type
            elif not rebinds and root not in self._params and \
                    not re.search(rf"\b{re.escape(root)}\b", self.body_prefix):
                scope = "<module>"
        return (self.version, scope, receiver or full[-40:], _digest(rebinds) if rebinds else "")

    def _signature(self) -> None:
        """Parameters and annotations of the function being written (from the lexing prefix),
        its body's indentation (any width) and the prefix's text from the body on."""
        fn = function_header(self.prefix)
        self._params: list[str] = fn.params if fn else []
        self._annotations: dict[str, str] = dict(fn.annotations) if fn else {}
        self._body_indent = fn.indent if fn else ""
        self.body_prefix = self.prefix[fn.body:] if fn else self.prefix
        if fn:          # a docstring's `:type p: T` types `p` for Jedi as an annotation does
            undeclared = [p for p in self._params if p not in self._annotations and p not in ("self", "cls")]
            self._annotations.update(docstring_types(self.body_prefix, undeclared))

    def _prefetch(self, asked: str | None = None, ended=None) -> None:
        """A body is about to be written: ask in the background for the members of the
        receivers it most often dots into: the function's parameters whose type is known
        (`self`, `cls`, annotated ones) and the module's imported names that the file dots
        into, each as a new statement of the body (`ctx.probe`), never at the cursor's text.
        `asked`: the receiver the cursor's own trigger asked about already."""
        if self.reproducible:
            return              # a prefetch's answer (another splice) would serve the real question
        # Only receivers whose type is known up front: an unannotated parameter fails open.
        likely = [p for p in self._params if p in ("self", "cls") or p in self._annotations][:4]
        # the names this function dots into already (a cursor context), most recent first
        # (unannotated parameters excluded: they fail open without asking)
        imported = imported_names(self.ctx.before + "\n" + self.ctx.after)
        known = set(imported) | set(self._annotations) | {
            next(n for n in m.groups()[1:] if n) for m in map(_BINDS.match, self.body_prefix.splitlines())
            if m is not None}
        likely += [n for n in dict.fromkeys(reversed(_USED.findall(self.body_prefix))) if n in known][:4]
        likely += self._often_dotted(imported)
        for p in list(dict.fromkeys(likely))[:_PREFETCHES]:
            sp = self.ctx.probe(p) if p != asked else None
            if sp is not None:
                self.analyzer.ask(MembersQuery(sp, p, self._key(p, "", p + "."), prefetch=True, ended=ended))

    def _often_dotted(self, imported: list[str]) -> list[str]:
        """The receivers the file dots into most, most used first: chains rooted at a module
        name (an import, a top-level assignment or class: `os`, `os.path`, `logger`) in the
        whole file, and `self.x` / `cls.x` in the enclosing class's text (`self.registry.`),
        when this function has that parameter. Names this function binds or takes as a
        parameter are left to the other prefetches (their answers depend on its text)."""
        text = self.ctx.before + "\n" + self.ctx.after
        roots = (set(imported) | {a or b for a, b in _TOP_BINDS.findall(text)}) - set(self._params)
        roots -= {next(n for n in m.groups()[1:] if n) for m in map(_BINDS.match, self.body_prefix.splitlines())
                  if m is not None}
        counts: dict[str, int] = {}
        for src, keep in ((text, lambda r: r.partition(".")[0] in roots),
                          (self._class_text, lambda r: "." in r and r.partition(".")[0] in self._params[:1]
                           and r.partition(".")[0] in ("self", "cls"))):
            for chain in _CHAIN.findall(src):
                parts = chain.split(".")
                for k in range(1, min(len(parts), 3)):       # `a.b.c`: receivers `a`, `a.b`
                    r = ".".join(parts[:k])
                    if keep(r):
                        counts[r] = counts.get(r, 0) + 1
        ranked = sorted(counts, key=lambda r: -counts[r])     # stable: the file's order on ties
        return ranked[:_FILE_PREFETCHES]

    def _prefetch_bound(self, row: RowView) -> None:
        """A line just ended that binds a local (`x = make()`): ask in the background for its
        members, as a statement of the next line, under the key the trigger `x.` will have —
        the answer is then often in before the name after that dot is written."""
        text = row.text
        end = text.rfind("\n")
        full = self.prefix + text[:end]           # the line may start before the row's text
        line = full[full.rfind("\n") + 1:]
        m = _BINDS.match(line)
        if m is None or line.rstrip().endswith(("\\", ",", "(", "[", "{")) or \
                sum(line.count(c) for c in "([{") != sum(line.count(c) for c in ")]}"):
            return                          # no binding, or a statement still open
        name = m.group(2) or m.group(3) or m.group(4)
        if name in ("self", "cls", "_"):
            return
        indent = m.group(1) + ("    " if line.rstrip().endswith(":") else "")
        upto = text[: end + 1] + indent + name + "."
        at = self.ctx.splice(upto, drop=self._hold)
        self.analyzer.ask(MembersQuery(at, name, self._key(name, upto, name + "."), prefetch=True, soon=True,
                                       ended=row.cancelled))

    def _extra(self, receiver: str, upto_dot: str) -> set[str]:
        """Attributes the text assigns to `receiver` (`self.x = ...` in the class's other
        methods, or already written here): members once that code has run. For `self`/`cls`
        also those the class's own code reads (`self.value` in another method: set by a
        subclass or the host of a mixin, it exists when the class's code runs)."""
        if not _DOTTED.match(receiver):
            return set()
        found = assigned_attributes(self.body_prefix + upto_dot, receiver)
        if ident_run(receiver) in ("self", "cls"):
            known = self._class_attrs.get(receiver)
            if known is None:                     # the class's text is fixed: scan it once
                known = self._class_attrs[receiver] = (assigned_attributes(self._class_text, receiver)
                                                       | used_attributes(self._class_read, receiver))
            found |= known
        return found

    def _analyze(self, row: RowView, upto_dot: str) -> TriggerRecord | None:
        """Ask for the members after the dot that ends `upto_dot` (generated text). Returns the
        trigger's record, or None when it failed open. On a cache miss with speculation on,
        the record is returned with the answer still running (`self.ticket`)."""
        ctx = self.ctx
        full = self.prefix[: len(self.prefix) - self._hold] + upto_dot
        receiver = receiver_before(full, len(full) - 1)
        root = ident_run(receiver)
        rec = TriggerRecord(receiver=receiver, candidates=0, analyzer=getattr(self.analyzer, "name", ""))
        row.triggers.append(rec)
        self.ticket, self.nar = None, None
        guess = self._guessed(root, upto_dot)
        if guess:                 # not asked: fails open, or the member vocabulary holds it
            rec.asked = False
            self._extra_names = self._extra(receiver, upto_dot)
            ticket = Answered(Analysis(receiver, frozenset(), 0.0, False, f"inferred: {guess}"))
        else:
            key = self._key(receiver, upto_dot, full)
            guards = isinstance_guards(full, full.count("\n") + 1, len(full) - full.rfind("\n") - 1, receiver)
            if guards:            # narrowed here: another answer than the receiver's elsewhere
                key = (*key, tuple(guards))
            at = ctx.splice(upto_dot, drop=self._hold)
            if self.reproducible:  # reused only for the same question (samples sharing a prefix)
                key = (*key, _digest(at.code), at.line, at.column)
            self._extra_names = self._extra(receiver, upto_dot)
            ticket = self.analyzer.ask(MembersQuery(at, receiver, key, ended=row.cancelled))
        if self._vocab is not None:   # an answer for an unknown type also waits for the vocabulary
            ticket = _WithVocabulary(ticket, self)
        a = ticket.result(0)
        if a is None and self.speculate:          # running: speculate (see SPEC)
            self.ticket = ticket
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
        if a.hidden:                    # --hide-private: legal when written, never steered to
            hide = (lambda n, h=a.hidden, d=self.hide: n in h or (d is not None and d(n)))
        if steer is not None:           # the vocabulary: any of it accepted, `steer` suggested
            steer = steer | extra
            hide = (lambda n, v=steer, d=hide: n not in v or (d is not None and d(n)))
        return Narrowing(row.vocab, names, hide=hide)

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

    def _binding_position(self, row: RowView, upto_dot: str) -> bool:
        if not (self.allow_bindings and self.free_ok):
            return False
        full = self.prefix[: len(self.prefix) - self._hold] + upto_dot
        receiver = receiver_before(full, len(full) - 1)
        start = self.lexer.line_start()
        line_before = full[start: len(full) - 1 - len(receiver)]
        return could_bind(line_before)

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
            # A token without text (EOS, a stop id) ends the row: only after a whole name
            # (`accepts("")` holds for any prefix, and `return self.` + EOS is no code).
            if (t or self.nar.fits(self.nar.typed)) and self.nar.accepts(t):
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
        name = ident_run(rest)
        complete = len(name) < len(rest)
        if self._binding_position(row, row.text + t[: j + 1]):
            return None                 # advance() starts FREE speculation
        if self.nar.fits(name, complete):
            return None                 # consistent: advance() narrows or finishes
        ids = self.nar.resample_ids(t[: j + 1])
        self._pending = (token, found, n_triggers, ids)
        return ids

    def advance(self, row: RowView, token: int) -> int | None:
        if self.state is WAIT and self._pending is None and not self._dot[token] and not self.late:
            if self._newline[token] and self.speculate:
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
                return j, self._analyze(row, base + t[: j + 1])
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
    def _spec_feed(self, row: RowView, t: str, i: int) -> int | None:
        s = t[i:]
        name = ident_run(s)
        self.spec_typed += name
        if len(name) == len(s):
            return self._poll_spec(row)        # the name goes on
        end = i + len(name)
        self.record.chosen = self.spec_typed
        self.name_end = len(row.text) - (len(t) - end)
        a = self.ticket.result(0)
        if a is not None:                      # landed just now: settle as without speculation
            self.ticket = None
            if self._answered(row, self.record, a) and not self.nar.fits(self.spec_typed):
                if self.state == FREE:
                    self.state = PENDING
                    return self._decide(row)
                return self._redo_under_mask(row)
            self.state = WAIT
            return self._scan(row, t, end)
        if self.state == FREE:
            self.state = PENDING               # a binding needs no answer: see what follows
            return self._decide(row)
        self._owe_answer(row)
        return self._scan(row, t, end)

    def _poll_spec(self, row: RowView) -> int | None:
        """Mid-name: has the answer landed? A name that cannot become a member is redone."""
        a = self.ticket.result(0)
        if a is None:
            if len(row.tokens) - self.dot_tokens > self.horizon:
                self.record.reason = "late"
                self.ticket = None
                self.state = WAIT
            return None
        self.ticket = None
        if not self._answered(row, self.record, a):
            self.state = WAIT                  # failed open after all
            return None
        self.nar.typed = self.spec_typed
        if self.nar.fits(self.spec_typed, complete=False):
            self.state = NARROW if self.state == SPEC else FREE
            return None
        if self.state == FREE:
            return None                        # FREE with candidates known: may be a binding
        return self._redo_under_mask(row)

    def _owe_answer(self, row: RowView) -> None:
        """The name is written before its answer came: verify it when the answer lands."""
        self.late = self.late + ((self.ticket, self.record, self.spec_typed, self.checkpoint,
                                  self.rollback_need, self.dot_tokens, self._extra_names),)
        self.ticket = None
        self.state = WAIT

    def _poll_late(self, row: RowView, settling: bool = False) -> int | None:
        """Settle the owed answers that have landed (`settling`: those not landed by now time
        out); roll back to the first name that is not a member (everything written after it
        goes too)."""
        keep = []
        for k, entry in enumerate(self.late):
            ticket, rec, name, checkpoint, need, dot_tokens, extra = entry
            a = ticket.result(0)
            if a is None:
                if settling:
                    rec.reason = "timeout"
                elif len(row.tokens) - dot_tokens > self.horizon:
                    rec.reason = "late"
                else:
                    keep.append(entry)
                continue
            nar = self._narrowing(row, rec, a, extra)
            if nar is None or nar.fits(name):
                continue
            self.late = tuple(keep)
            return Rollback(checkpoint, "not a member", (nar, rec, need))
        self.late = tuple(keep)
        return None

    def settle(self, row: RowView) -> int | None:
        """The row is about to finish: wait for the answers still owed — all together, up to
        the analyzer's deadline and the batch's shared window (WaitPolicy) — and roll back to a
        name that is not a member."""
        self._snap_cache = None
        owed = [e[0] for e in self.late]
        if self.ticket is not None and self.state in (SPEC, FREE, PENDING):
            owed.append(self.ticket)
        if owed:
            self.waits.wait(owed, self.analyzer.deadline() or 2.0, row.cancelled)
        if self.ticket is not None and self.state in (SPEC, FREE, PENDING):
            a = self.ticket.result(0)
            self.ticket = None
            if a is None:
                self.record.reason = "timeout"
            # the row ends here, so the name is as long as it gets: it must be a whole member
            # (`return self.` + EOS, or a name cut short, is rolled back and redone)
            elif self._answered(row, self.record, a) and not (
                    self.record.binding or self.nar.fits(self.spec_typed, complete=True)):
                return self._redo_under_mask(row)
            self.state = WAIT
        if self.late:
            return self._poll_late(row, settling=True)
        return None

    def _decide(self, row: RowView) -> int | None:
        verdict = binding_verdict(row.text[self.name_end:])
        if verdict is None:
            return None
        if verdict:
            self.record.binding = True
            self.ticket = None
            self.state = WAIT
            return None
        if self.nar is None:             # not a binding, the answer still running: owe it
            self._owe_answer(row)
            t = row.vocab.texts[row.tokens[-1]]
            return self._scan(row, t, max(0, self.name_end - (len(row.text) - len(t))))
        return self._redo_under_mask(row)

    def _redo_under_mask(self, row: RowView) -> Rollback:
        """Not a member and not a binding: propose to undo the name and redo the trigger under
        the mask (the state changes in `rolled_back`, if the engine takes this cut)."""
        return Rollback(self.checkpoint, "not a member", (self.nar, self.record, self.rollback_need))
