"""The dereference monitor (MGD for Python): after `expr.` in code, only members of `expr`.

States (one row):
    WAIT     free decoding; a sampled token that contains a dot is checked (merged-dot BPE
             tokens like `.append` or `)._x`), and a text that ends in a code dot triggers.
    NARROW   candidates known: the mask allows tokens that continue `need` (text still owed
             before the name, e.g. `).` after a resample) and then a prefix of a remaining
             member, or a whole member followed by a non-identifier character. Narrowed as
             tokens arrive; back to WAIT when the name is complete.
    FREE     at a binding position (`self.` at the start of a statement) the model may write
             a new name: `self.size = size` creates a member. The name is left free; if it is
             not a member and what follows does not make it an assignment target, the row is
             rolled back to the trigger and redone under the mask (NARROW, no second chance).
    PENDING  FREE wrote a non-member; waiting for the text that decides (`=` or not).

Analysis is asked once per trigger, through the analyzer's cache (key: file version, scope,
receiver text, and the generated lines that rebind the receiver's root name). Empty answers and
timeouts fail open (no mask) and are counted in the trigger records.
Not here: jedi (analysis/jedi.py), tensors (decoding/masking.py), the loop (decoding/engine.py).
"""
from __future__ import annotations

import ast
import hashlib
import re
import textwrap

import numpy as np

from ...pycode import Lexer, binding_verdict, could_bind, ident_run, receiver_before
from .base import Guide, RowView, TriggerRecord, token_flags

WAIT, NARROW, FREE, PENDING = "wait", "narrow", "free", "pending"


class DereferenceMonitor(Guide):
    def __init__(self, analyzer, allow_bindings: bool = True, rollback: bool = True):
        self.analyzer = analyzer
        self.allow_bindings = allow_bindings
        self.rollback = rollback      # False (mask-only hosts): binding positions stay free

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, row: RowView) -> None:
        ctx = row.context
        self.ctx = ctx
        self._dot = token_flags(row.vocab)[0]
        self.prefix = getattr(ctx, "lex_prefix", "")
        self.lexer = Lexer(self.prefix)
        self.version = getattr(ctx, "version", "")
        self.state = WAIT
        self._clear()
        self._signature()
        self._prefetch()
        # The cursor may sit right after a dot (`obj.|`): trigger before the first token.
        p = self.prefix
        if p.endswith(".") and self.lexer.dot_is_code(p, len(p) - 1):
            if self._analyze(row, "") is not None:
                self._start(row, 0, ".", 0)

    def _clear(self) -> None:
        self.names: frozenset = frozenset()
        self.cs = None                            # the vocab index's encoded candidate set
        self.need = ""                            # text owed before the name (after a resample)
        self.typed = ""
        self.record: TriggerRecord | None = None
        self.checkpoint = 0                       # token count to roll back to
        self.name_end = 0                         # text offset where a FREE name ended
        self.speculate = True
        self.rollback_need = ""
        self._pending = None                      # (token, trigger) found by check()

    def rewind(self, row: RowView, length: int) -> None:
        self.lexer.rewind(len(self.prefix) + len(row.text))

    # -- analysis -----------------------------------------------------------------------------
    def _key(self, receiver: str, generated: str, full: str) -> tuple:
        """Cache key: (file version, scope, receiver, generated lines that rebind its root).
        `self`/`cls` are shared by the methods of a class; a root never bound in this function
        (an import, a module global, a builtin) is shared by the whole file."""
        ctx = self.ctx
        root = ident_run(receiver)
        scope = getattr(ctx, "scope", "")
        rebinds = ""
        literal = receiver.lstrip("bBrRfFuU")[:1]
        if literal in ("'", '"'):          # every str (bytes) literal has the same members
            kind = "bytes" if receiver[:1] in "bB" or receiver[1:2] in "bB" else "str"
            return ("<literal>", kind)
        if root in ("self", "cls"):
            scope = scope.rpartition(".")[0] or scope
        elif root:
            pat = re.compile(rf"\b(for|as)\s+{re.escape(root)}\b|\b{re.escape(root)}\s*(:[^=\n]*)?=(?!=)")
            rebinds = "\n".join(ln for ln in generated.splitlines() if pat.search(ln))
            if not rebinds and receiver == root and root in self._annotations:
                scope = ("<annotation>", self._annotations[root])   # `ctx: Context`: per type
            elif not rebinds and not re.search(rf"\b{re.escape(root)}\b", self.prefix):
                scope = "<module>"
        return (self.version, scope, receiver or full[-40:],
                hashlib.blake2s(rebinds.encode(), digest_size=8).hexdigest() if rebinds else "")

    def _where(self, upto_dot: str) -> tuple[str, int, int]:
        """The analyzer's view: the real file with the partial code at the cursor."""
        ctx = self.ctx
        code_before = ctx.before + upto_dot
        line = code_before.count("\n") + 1
        col = len(code_before) - (code_before.rfind("\n") + 1)
        return code_before + "\n" + ctx.after, line, col

    def _signature(self) -> None:
        """Parameters and annotations of the function being written (from the lexing prefix)."""
        self._params: list[str] = []
        self._annotations: dict[str, str] = {}
        self._body_indent = ""
        m = re.search(r"^([ \t]*)(async[ \t]+)?def[ \t]+\w+[ \t]*\(", self.prefix, re.M)
        if not m:
            return
        try:
            node = ast.parse(textwrap.dedent(self.prefix[m.start():]) + "\n    pass\n").body[0]
            args = node.args
        except (SyntaxError, IndexError, AttributeError):
            return
        every = args.posonlyargs + args.args + args.kwonlyargs
        self._params = [a.arg for a in every]
        self._annotations = {a.arg: ast.unparse(a.annotation) for a in every if a.annotation is not None}
        self._body_indent = m.group(1) + "    "

    def _prefetch(self) -> None:
        """A body is about to be written: ask in the background for the members of the
        function's parameters (`self`, `ctx`, ...), the receivers it most often dots into."""
        ctx = self.ctx
        prefetch = getattr(self.analyzer, "prefetch", None)
        if prefetch is None:
            return
        # Only receivers whose type is known up front: an unannotated parameter is often a
        # plain value, and every prefetch costs the worker time that a real trigger may wait for.
        likely = [p for p in self._params if p in ("self", "cls") or p in self._annotations]
        for p in likely[:4]:
            upto = self._body_indent + p + "."
            code, line, col = self._where(upto)
            prefetch(code, ctx.path, line, col, receiver=p, cache_key=self._key(p, "", upto))

    def _analyze(self, row: RowView, upto_dot: str) -> TriggerRecord | None:
        """Ask for the members after the dot that ends `upto_dot` (generated text)."""
        ctx = self.ctx
        full = self.prefix + upto_dot
        receiver = receiver_before(full, len(full) - 1)
        key = self._key(receiver, upto_dot, full)
        code, line, col = self._where(upto_dot)
        a = self.analyzer.members(code, ctx.path, line, col, receiver=receiver, cache_key=key)
        rec = TriggerRecord(receiver=receiver, candidates=len(a.names), analysis_ms=round(a.ms, 3),
                            cache_hit=a.cache_hit, failed_open=not a.names,
                            reason=a.failed if not a.names else None)
        row.triggers.append(rec)
        if not a.names:
            return None
        self.names = a.names
        self.cs = row.vocab.candidates(a.names)   # encoded once; steps narrow by range
        return rec

    def _binding_position(self, row: RowView, upto_dot: str) -> bool:
        if not (self.allow_bindings and self.speculate):
            return False
        full = self.prefix + upto_dot
        receiver = receiver_before(full, len(full) - 1)
        start = self.lexer.line_start()
        line_before = full[start: len(full) - 1 - len(receiver)]
        return could_bind(line_before)

    # -- the protocol -------------------------------------------------------------------------
    def mask(self, row: RowView) -> np.ndarray | None:
        if self.state != NARROW:
            return None
        ids = row.vocab.allowed_in(self.cs, self.typed, self.need)
        if not len(ids):
            return None                 # nothing in the vocabulary fits: fail open
        if self.record is not None:
            self.record.constrained = True
        return ids

    def check(self, row: RowView, token: int) -> np.ndarray | None:
        """A free token containing a dot: if the dot is code, analyse and verify the name."""
        if not self._dot[token] or self.state != WAIT:
            return None
        t = row.vocab.texts[token]
        found = self._find_trigger(row, row.text, t, 0)
        self._pending = (token, found)
        if found is None or found[1] is None:
            return None
        j = found[0]
        rest = t[j + 1:]
        name = ident_run(rest)
        complete = len(name) < len(rest)
        if self._binding_position(row, row.text + t[: j + 1]):
            return None                 # advance() starts FREE speculation
        lo, hi = self.cs.span(name)
        if (name in self.names) if complete else lo < hi:
            return None                 # consistent: advance() narrows or finishes
        return row.vocab.allowed_in(self.cs, "", t[: j + 1])

    def advance(self, row: RowView, token: int) -> int | None:
        if self.state is WAIT and self._pending is None and not self._dot[token]:
            return None                     # the common free step: nothing to do
        t = row.vocab.texts[token]
        if self.state in (NARROW, FREE):
            return self._consume(row, t, 0)
        if self.state == PENDING:
            return self._decide(row)
        pending, self._pending = self._pending, None
        base = row.text[: len(row.text) - len(t)]
        if pending is not None and pending[0] != token and pending[1] and pending[1][1] is not None:
            # Resampled under check()'s mask: the token continues (or stops inside) `p`.
            j = pending[1][0]
            p = row.vocab.texts[pending[0]][: j + 1]
            self.speculate = False
            if t.startswith(p):
                self._start(row, len(base) + j + 1, t, j)
                return self._consume(row, t, j + 1)
            self._start(row, len(base) + len(t), t, len(t) - 1)
            self.need = p[len(t):]
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
        self.speculate = True
        self._start(row, len(base) + j + 1, t, j)
        return self._consume(row, t, j + 1)

    def _start(self, row: RowView, dot_end: int, t: str, j: int) -> None:
        """Enter NARROW or FREE for the trigger whose dot ends at text offset dot_end, the dot
        being t[j] of the last token."""
        self.record = row.triggers[-1]
        self.typed = ""
        self.need = ""
        if j == len(t) - 1:          # the dot ends the token: keep it on rollback
            self.checkpoint, self.rollback_need = len(row.tokens), ""
        else:                        # merged token (`._x`): redo the token, owing its head
            self.checkpoint, self.rollback_need = len(row.tokens) - 1, t[: j + 1]
        if not self._binding_position(row, row.text[:dot_end]):
            self.state = NARROW
        elif self.rollback:
            self.state = FREE
        else:                        # cannot undo a speculation: leave the name free
            self.state = WAIT
            self.record.reason = "binding position left free (no rollback)"

    def _consume(self, row: RowView, t: str, i: int) -> int | None:
        """Feed t[i:] (text after the dot, or owed `need`) into NARROW/FREE."""
        s = t[i:]
        if self.need:
            k = min(len(self.need), len(s))
            self.need, s, i = self.need[k:], s[k:], i + k
            if self.need:
                return None
        name = ident_run(s)
        self.typed += name
        if len(name) == len(s):       # the name goes on in the next token
            return None
        end = i + len(name)           # t[end] is the first character after the name
        self.record.chosen = self.typed
        if self.state == FREE and self.typed not in self.names:
            self.state = PENDING
            self.name_end = len(row.text) - (len(t) - end)
            return self._decide(row)
        self.state = WAIT
        return self._scan(row, t, end)

    def _decide(self, row: RowView) -> int | None:
        verdict = binding_verdict(row.text[self.name_end:])
        if verdict is None:
            return None
        if verdict:
            self.record.binding = True
            self.state = WAIT
            return None
        # Not a binding: undo the free name and redo the trigger under the mask.
        self.record.rolled_back = True
        self.record.chosen = None
        self.need = self.rollback_need
        self.typed = ""
        self.speculate = False
        self.state = NARROW
        return self.checkpoint
