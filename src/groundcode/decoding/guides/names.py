"""The names monitor (Python): every name the completion reads exists, and every module it
imports resolves, checked once the name is complete — a completion at a name's start lists
hundreds of names (issue #40), so a name is checked whole, not masked while it is written.

States (one row):
    WAIT     free decoding. Each logical line of generated code, once complete (a newline
             outside brackets; the row's last line when the row settles), is read by parso
             (languages/python_scope.py): the names it loads are looked up in what exists —
             builtins, the names visible at the cursor (what the module binds, and every name of
             the function around it: a superset that leaves out other functions' locals), the
             names the generated lines bind, and the line's own (not in the value that binds
             them: `for x in x:`); its imports are resolved on the file system
             (languages/python_modules.py: the repository, the standard library, the analyzer's
             site-packages), and each name `from m import` takes must be one the module's file
             binds (or a submodule). A name that does not exist is a proposal to roll back to the
             token holding its start: `Rollback(k, "unknown name", (candidates, record, owed
             text))`. A `from m import (` list still open is judged a name at a time, as each
             comma ends one (a list never closed would not be judged); nothing is judged twice.
    NARROW   (entered in `rolled_back`, once the engine took the cut) the name is redone under
             the mask of the names that exist there (`Narrowing`; dunders allowed, never steered
             to); back to WAIT when it is complete. A name is redone once (no second chance),
             and a row rolls back at most `max_rollbacks` times. A token the mask did not allow
             (a guide of more authority masked that step: masking.combine) fails it open.

Positions that bind are free (assignment, `for`/`with`/`except`/`as` targets, parameters, `def`
and `class` names, `global`, keyword-argument names); a name after a dot belongs to the
dereference monitor. Where no reading of the text can know, the monitor fails open and records
why (`TriggerRecord.failed_open`, `reason`): the file star-imports (the analyzer's own names at
the cursor are asked instead: Jedi reads star imports; no answer in time → "star import"), calls
`globals()`/`exec`, writes into builtins; a line parso cannot read ("does not parse", `match`);
a name read inside a function the completion itself defines ("nested function": it may be bound
later in the enclosing scope); a module the index cannot judge (an import hook, a namespace
package, a module that builds its submodules, an extension module's names).

Records: one TriggerRecord (kind "name" or "import") per name judged missing or left open;
`checked` counts every name and module looked up (the grounding audit's denominator).
Text from the start of the current logical line is held back (`final_upto`): it may be cut.
A row cut from outside (`end_at`: a deadline, a cancel) ends before the line of its first
missing name. Not here: the member after a dot (dereference.py), call arguments (keyword_args.py).
Test: tests/test_names_monitor.py.
"""
from __future__ import annotations

import keyword
import re

import numpy as np

from ...analysis.base import NamesQuery
from ...analysis.wait import PatientWait
from ...languages.python_modules import module_index
from ...languages.python_scope import EXPRESSION_WORDS, IMPLICIT, guarded_import, line_uses, opaque, visible_names
from ...pycode import Lexer, indent_width
from .base import Guide, Rollback, RowView, TriggerRecord
from .narrowing import Narrowing, is_dunder

WAIT, NARROW = "wait", "narrow"
_LAST = re.compile(r"\w+$")
_HARD = frozenset(keyword.kwlist)                 # never a name: never judged
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")   # a name not after a dot (strings too: a superset)
_DEF = re.compile(r"[ \t]*(?:async[ \t]+)?(?:def|class)\b")
_IMPORT_LINE = re.compile(r"[ \t]*(?:from|import)\b")
_FROM_WORD = re.compile(r"[ \t]*from[ \t]+(?:\.*[\w.]*\w|\.+)[ \t]+(\w+)(?=\W)")  # the word after `from m`
_OPEN_FROM = re.compile(r"[ \t]*from[ \t]+(?:\.*[\w.]*\w|\.+)[ \t]+import[ \t]*\(")   # `from m import (`
_OPEN_PATH = re.compile(r"[ \t]*(from|import)[ \t]+(\.*(?:\w+\.)*\w+)\.\w*")   # `from a.b.c`: a.b
_PROBE = "groundcode_probe"        # a module name that follows the dot being judged (never shown)


class NamesMonitor(Guide):
    def __init__(self, analyzer=None, imports: bool = True, names: bool = True,
                 waits=None, reproducible: bool = False, max_rollbacks: int = 8):
        self.analyzer = analyzer
        self.check_imports = imports
        self.check_names = names
        self.waits = waits or (PatientWait() if reproducible else None)
        self.reproducible = reproducible
        self.max_rollbacks = max_rollbacks

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, row: RowView) -> None:
        ctx = self.ctx = row.context
        self._cancelled = row.cancelled
        self.prefix = ctx.lex_prefix
        self.lexer = Lexer(self.prefix)
        self.file_code = ctx.before + "\n" + ctx.after
        self._known = None                 # visible_names(before, after), read when first needed
        self._why = opaque(self.file_code) if self.check_names else None
        self._ticket = self._answer = None
        if self._why == "star import" and self.analyzer is not None:
            sp = ctx.splice("\n", filler="pass")        # a new module-level line: the star imports
            self._ticket = self.analyzer.ask(NamesQuery(sp, ("names", ctx.version, sp.line, sp.column), "<names>"))
        self._fresh(0)

    def _fresh(self, line_at: int) -> None:
        """The row's judging state at its start (both languages)."""
        self.checked = 0                   # names and modules looked up (the audit's triggers)
        self.checked_imports = 0           # ... of them modules and the names imports take
        self.state = WAIT
        self.narrow: Narrowing | None = None
        self.record: TriggerRecord | None = None
        self.line_at = line_at             # offset (prefix + text) of the unchecked line's start
        self.binds: frozenset = frozenset()    # names the checked generated lines bind
        self.defs: tuple = ()              # indentation of generated def/class lines still open
        self.opened = None                 # a generated star import / globals(): why
        self.redone: frozenset = frozenset()   # offsets of names redone under the mask
        self.seen: frozenset = frozenset()     # offsets of imports judged while their list was open
        self.fine: frozenset = frozenset()     # (line, dotted path) judged fine while written
        self.rollbacks = 0

    # -- checkpoints (the engine's) -----------------------------------------------------------
    def snapshot(self) -> tuple:
        return (self.state, self.narrow.snapshot() if self.narrow else None, self.narrow, self.record,
                self.line_at, self.binds, self.defs, self.opened, self.redone, self.rollbacks, self.seen)

    def restore(self, row: RowView, snap: tuple) -> None:
        (self.state, nsnap, self.narrow, self.record, self.line_at, self.binds, self.defs,
         self.opened, self.redone, self.rollbacks, self.seen) = snap
        if self.narrow is not None:
            self.narrow.restore(nsnap)
        self.lexer.rewind(len(self.prefix) + len(row.text))

    def rolled_back(self, row: RowView, proposal: Rollback) -> None:
        names, record, owed, at, how = proposal.payload
        if not any(t is record for t in row.triggers):
            row.triggers.append(record)
        record.rolled_back = record.constrained = True
        self.record = record
        self.narrow = Narrowing(row.vocab, names, need=owed, hide=is_dunder, **how)
        self.state = NARROW
        self.redone = self.redone | {at}
        self.rollbacks += 1

    def declined(self, row: RowView, proposal: Rollback) -> None:
        at = proposal.payload[3]
        self.redone = self.redone | {at}

    def final_upto(self, row: RowView) -> int:
        """Text from the unchecked line's start is held back only while that line writes a
        name that may be missing (every name it writes exists: the text is final)."""
        if self.state != NARROW and not self._suspect(row):
            return len(row.text)
        start = self.line_at - len(self.prefix)
        if start <= 0:
            return 0
        return _token_start(row, start)

    def _suspect(self, row: RowView) -> bool:
        """Might a proposal still cut inside the unchecked line? Yes while a name is being
        written (the text ends in one: `json` may become `jsonn`), on an import line (a module
        and the names it exports are judged apart from scope), or where a name is not known."""
        full = self.prefix + row.text
        tail = full[max(self.line_at, len(self.prefix)):]
        if "import" in tail or _IMPORT_LINE.match(full, self.line_at):
            return True                   # (the line's start may be the prompt's: `from ` at the cursor)
        last = _LAST.search(tail)
        if last is not None and tail[last.start() - 1: last.start()] != ".":
            return True                   # a name being written (a member's is not ours)
        for m in _NAME.finditer(tail):
            name = m.group(0)
            if name in IMPLICIT or name in EXPRESSION_WORDS or name in _HARD or name in self.binds:
                continue
            if self._known is None:
                self._known = visible_names(self.ctx.before, self.ctx.after)
            if name not in self._known:
                return True
        return False

    # -- decoding -----------------------------------------------------------------------------
    def mask(self, row: RowView) -> np.ndarray | None:
        if self.state == NARROW:
            return self.narrow.allowed()
        return None

    def advance(self, row: RowView, token: int) -> Rollback | None:
        if self.state == NARROW:
            t = row.vocab.texts[token] if token < len(row.vocab.texts) else ""
            n = self.narrow
            if t and not n.accepts(t):     # its mask was dropped (masking.combine): not judged
                self.record.failed_open, self.record.reason, self.state, self.narrow = True, "mask dropped", WAIT, None
            elif n.feed(t) is not None or (not t and not n.need):
                self.record.chosen = n.typed
                self.state, self.narrow = WAIT, None
        full = self.prefix + row.text
        self.lexer.scan(full, len(full))
        starts = self.lexer.line_starts()
        for a, b in zip(starts, starts[1:]):
            if b <= self.line_at:
                continue
            proposal = self._check_line(row, full, a, b)
            self.line_at = b
            if proposal is not None:
                return proposal
        if self.state == WAIT and self.check_imports:
            return self._check_open_list(row, full) or self._check_open_path(row, full)
        return None

    def _check_open_path(self, row: RowView, full: str) -> Rollback | None:
        """`from a.b.` (or `import a.b.c`) being written: the path before its last dot is judged
        now, not when the statement ends (a row that loops in a dotted path never ends it:
        `pycrc36` redone as `pyclbr`, then `pyclbr.cabr.cabr_utils.cabr_utils…`). A part that
        does not exist is redone; a module file (no package) is redone as itself with no dot
        after it. A path found fine is not looked up again on the line."""
        tail = full[self.line_at:]
        m = _OPEN_PATH.fullmatch(tail)
        if m is None or (self.line_at, m.group(2)) in self.fine:
            return None
        index = self._index()
        path = m.group(2)
        res = index.resolve(path, self.ctx.path)
        if res.kind == "found":                       # a module file: may anything follow its dot?
            if res.package is not None or index.resolve(f"{path}.{_PROBE}", self.ctx.path).kind != "missing":
                self.fine = self.fine | {(self.line_at, path)}
                return None
            path = f"{path}.{_PROBE}"
        elif res.kind != "missing":
            self.fine = self.fine | {(self.line_at, path)}
            return None
        line = tail[:m.start(2)] + path + (" import _" if m.group(1) == "from" else "")
        uses = line_uses(line)
        if not uses.ok or not uses.imports:
            return None
        return self._check_imports(row, uses, self.line_at, len(self.prefix))

    def _index(self):
        """The module index imports are judged by (the trusted root's interpreter, else ours)."""
        return module_index(self.ctx.repo, self.ctx.python if self.ctx.trust else None)

    def _check_open_list(self, row: RowView, full: str) -> Rollback | None:
        """`from m import (` with its list still open: the module and each name a comma ended
        are judged now, not when the `)` comes (a list the row loops in is never closed, so it
        was never judged: bidict's `from importlib import (import_module, import_none, ...`)."""
        tail = full[self.line_at:]
        if not tail.rstrip().endswith(",") or not _OPEN_FROM.match(tail):
            return None
        uses = line_uses(tail.rstrip() + ")")
        if not uses.ok or not uses.imports:
            return None
        return self._check_imports(row, uses, self.line_at, len(self.prefix))

    def settle(self, row: RowView) -> Rollback | None:
        full = self.prefix + row.text
        if self.state == NARROW or len(full) <= self.line_at:
            return None
        tail = full[self.line_at:]
        if not tail.strip():
            return None
        return self._check_line(row, full, self.line_at, len(full), last=True)

    def end_at(self, row: RowView, reason: str) -> int:
        """Cut from outside (a deadline, a cancel): the text ends before the
        line of the first missing name."""
        full = self.prefix + row.text
        if reason not in ("deadline", "cancelled"):   # the row's own end (settled; text past
            return len(row.text)           # a stop cut is not shown), or the length limit (its
                                           # last line is unfinished anyway: cutting it leaves
                                           # a dangling `if …:` header, seen on the benchmark)
        if self.state == NARROW and self.record is not None:
            self.record.cut = self.narrow.typed
            return max(0, self.line_at - len(self.prefix))
        if len(full) > self.line_at:
            uses = line_uses(full[self.line_at:])
            end = len(full) - self.line_at
            if uses.ok and any(self._missing(name, uses.binds) for name, off in uses.loads
                               if self.line_at + off >= len(self.prefix) and off + len(name) < end):
                return max(0, self.line_at - len(self.prefix))
        return len(row.text)

    # -- the check ----------------------------------------------------------------------------
    def _check_line(self, row: RowView, full: str, a: int, b: int, last: bool = False) -> Rollback | None:
        """Check the logical line full[a:b]; `last`: the row's unfinished last line (a name that
        runs to its end may have been cut by the length limit: not judged)."""
        line = full[a:b]
        gen_from = len(self.prefix)
        if b <= gen_from or not line.strip():
            return None
        if self.check_imports:
            m = _FROM_WORD.match(line)
            if m and m.group(1) != "import" and a + m.start(1) >= gen_from and a + m.start(1) not in self.redone:
                self.checked += 1          # `from py funceble import`: a module redone as a shorter
                self.checked_imports += 1  # one (`pyfunceble` → `py`), then the rest of the word
                p = self._propose(row, m.group(1), a + m.start(1), "not `import`", frozenset({"import"}),
                                  "import", follow=" \t(")
                if p is not None:
                    return p
        uses = line_uses(line)
        nested = self._nested(line, a >= gen_from)
        if not uses.ok:
            return None
        binds = self.binds | uses.binds
        proposal = None
        if self.check_names:
            for name, off in uses.loads:
                at = a + off
                if at < gen_from or at in self.redone or last and at + len(name) >= b:
                    continue
                self.checked += 1
                seen = binds - (uses.unbound_at(off) - self.binds)   # `for x in x:`: x not bound yet
                if not self._missing(name, seen):
                    continue
                why = self.opened or self._opaque_why() or ("nested function" if nested else None) \
                    or ("lambda" if at - a in uses.deferred else None)
                if why is not None:
                    row.triggers.append(TriggerRecord(receiver="", candidates=0, chosen=name, failed_open=True,
                                                      reason=why, asked=False, analyzer="names", kind="name"))
                    continue
                proposal = self._propose(row, name, at, "unknown name", self._candidates(seen), "name")
                if proposal is not None:
                    break
                continue
        if proposal is None and self.check_imports:
            proposal = self._check_imports(row, uses, a, gen_from)
        self.binds = self.binds | (uses.binds - uses.inner)    # a lambda's, a comprehension's: its own
        if self.opened is None:
            self.opened = opaque(line)       # a generated star import: names unseen from here on
        return proposal

    def _nested(self, line: str, generated: bool) -> bool:
        """Is `line` inside a def/class the completion wrote? (Updates the open defs.)"""
        if not generated:
            return False
        ind = indent_width(line)
        defs = tuple(d for d in self.defs if d < ind)
        nested = bool(defs)
        if _DEF.match(line):
            defs = defs + (ind,)
        self.defs = defs
        return nested

    def _missing(self, name: str, binds) -> bool:
        if name in IMPLICIT or name in EXPRESSION_WORDS or name in binds:
            return False
        if self._known is None:
            self._known = visible_names(self.ctx.before, self.ctx.after)
        if name in self._known:
            return False
        if self._answer is None and self._ticket is not None:
            self._answer = self._land()
        return not (self._answer is not None and name in self._answer.names)

    def _opaque_why(self) -> str | None:
        if self._why is None:
            return None
        if self._why == "star import" and self._answer is not None and not self._answer.failed \
                and self._answer.names:
            return None            # the analyzer read the star imports: its names count
        return self._why

    def _land(self):
        t = self._ticket
        a = t.result(0)
        if a is None and self.waits is not None:      # (only a star-importing file asks)
            self.waits.wait([t], self.analyzer.deadline(), self._cancelled)
            a = t.result(0)
        return a

    def _candidates(self, binds) -> frozenset:
        if self._known is None:
            self._known = visible_names(self.ctx.before, self.ctx.after)
        extra = self._answer.names if self._answer is not None and not self._answer.failed else frozenset()
        return frozenset(n for n in (IMPLICIT | EXPRESSION_WORDS | self._known | binds | extra)
                         if n.isidentifier())

    def _check_imports(self, row: RowView, uses, a: int, gen_from: int) -> Rollback | None:
        """The modules and imported names of `uses` (a logical line from offset `a`), each judged
        once: what was judged while its list was open (`seen`) is not counted again."""
        index = None
        for use in uses.imports:
            if a + use.offset < gen_from:
                continue
            if index is None:
                index = self._index()
            res = index.resolve(use.module, self.ctx.path)
            key = (a + use.offset, use.module)
            if key in self.seen:
                if res.kind != "found":
                    continue
            else:
                self.checked += 1
                self.checked_imports += 1
                if res.kind == "missing" and self._guarded(row, a + use.offset):
                    res = type(res)("unknown", why="conditional import")     # try: ... except ImportError
                if res.kind == "unknown":
                    row.triggers.append(TriggerRecord(receiver=use.module, candidates=0, failed_open=True,
                                                      reason=res.why, asked=False, analyzer="modules", kind="import"))
                    self.seen = self.seen | {key}
                    continue
                if res.kind == "missing":
                    part, names, no_dot = self._missing_part(index, use, res)
                    if part is None:               # no name could stand there: nothing to redo it with
                        row.triggers.append(TriggerRecord(
                            receiver=use.module, candidates=0, failed_open=True, reason="no candidate",
                            asked=False, analyzer="modules", kind="import"))
                        self.seen = self.seen | {key}
                        continue
                    rkey = (a + part[1], ".") if no_dot else a + part[1]   # a module name redone as a
                    if rkey in self.redone:                # name may still be redone without its dot
                        continue
                    p = self._propose(row, part[0], a + part[1],
                                      "submodule of a module file" if no_dot else "unknown module", names,
                                      "import", no_follow="." if no_dot else "", key=rkey)
                    if p is not None:
                        return p
                    continue
                self.seen = self.seen | {key}
            if (key, "exports unknown") in self.seen:
                continue
            exports = None
            for name, off in use.names:
                if a + off < gen_from or a + off in self.redone or (a + off, name) in self.seen:
                    continue
                self.seen = self.seen | {(a + off, name)}
                self.checked += 1
                self.checked_imports += 1
                if exports is None:
                    exports = index.exports(res) or False
                if exports is False:
                    row.triggers.append(TriggerRecord(receiver=use.module, candidates=0, chosen=name,
                                                      failed_open=True, reason="exports unknown",
                                                      asked=False, analyzer="modules", kind="import"))
                    self.seen = self.seen | {(key, "exports unknown")}   # one record a statement
                    break
                if name not in exports and self._guarded(row, a + off):
                    row.triggers.append(TriggerRecord(receiver=use.module, candidates=0, chosen=name,
                                                      failed_open=True, reason="conditional import",
                                                      asked=False, analyzer="modules", kind="import"))
                    continue
                if name not in exports:            # never a name the statement already takes
                    others = {n for n, o in use.names if o != off}      # (it was: `a, a, a,`)
                    p = self._propose(row, name, a + off, "not exported", exports - others, "import",
                                      receiver=use.module, no_follow=".")   # `import a.b` never
                    if p is not None:
                        return p
        return None

    def _guarded(self, row: RowView, at: int) -> bool:
        before = self.ctx.before
        if before.endswith(self.prefix):          # the prefix is the tail of the file before
            return guarded_import(before + row.text, len(before) - len(self.prefix) + at)
        return guarded_import(self.prefix + row.text, at)

    def _missing_part(self, index, use, res):
        """The (part, offset) of the module path to redo, the names that could stand there, and
        whether a dot may not follow it: a part that does not exist is redone among its
        package's modules; a part after a module file (`from pkg.mod.sub import`: mod.py is no
        package) is redone from the module file's name, which a dot may not follow."""
        missing = res.why.lstrip(".").split(".")
        k = len(missing) - 1
        if k >= len(use.parts):
            return None, None, False
        part = use.parts[k]
        level = len(use.module) - len(use.module.lstrip("."))
        if k == 0 and not level:
            names = index.top_level()
        else:
            parent = index.resolve("." * level + ".".join(p for p, _ in use.parts[:k]), self.ctx.path) \
                if (k or level) else None
            if parent is None or parent.kind != "found":
                return None, None, False
            if parent.package is None:
                if not k:                     # `from . import` names a module file's parent: fine
                    return None, None, False
                return use.parts[k - 1], frozenset({use.parts[k - 1][0]}), True
            names = index.submodules(parent.package)
        return part, frozenset(n for n in names if n.isidentifier()), False

    def _propose(self, row: RowView, name: str, at: int, why: str, names, kind: str,
                 receiver: str = "", run=None, no_follow: str = "", follow: str = "",
                 key=None) -> Rollback | None:
        """A missing name at `at` (offset in prefix + text): the rollback to redo it under the
        mask of `names` (`run`: their characters, narrowing.py; None: identifiers; `no_follow`:
        characters that may not come right after it; `follow`: the only characters that may;
        `key`: what `redone` remembers, `at` by
        default), or a failed-open record where that cannot be done."""
        rec = TriggerRecord(receiver=receiver, candidates=len(names), chosen=name, analyzer="names",
                            asked=False, kind=kind, reason=why)
        pos = at - len(self.prefix)
        if pos < 0:
            return None
        if self.rollbacks >= self.max_rollbacks:
            rec.failed_open, rec.reason = True, "rollback limit"
            row.triggers.append(rec)
            return None
        k = next(i for i, e in enumerate(row.ends) if e > pos)
        start = row.ends[k - 1] if k else 0
        owed = row.text[start:pos]
        how = {"run": run, "no_follow": no_follow, "follow": follow}
        if not names or not Narrowing(row.vocab, names, need=owed, **how).allowed().size:
            rec.failed_open, rec.reason = True, "no candidate"
            row.triggers.append(rec)
            return None
        row.triggers.append(rec)
        return Rollback(k, why, (frozenset(names), rec, owed, at if key is None else key, how))


def _token_start(row: RowView, offset: int) -> int:
    """The start of the token that holds text offset `offset`."""
    for k, e in enumerate(row.ends):
        if e > offset:
            return row.ends[k - 1] if k else 0
    return len(row.text)
