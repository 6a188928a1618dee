"""The names monitor for TypeScript: the Python monitor's decisions (names.py: a name judged once
it is whole, a missing one rolled back to its start and redone under the names that exist, a
name redone once, `max_rollbacks` per row) over TypeScript's reading (languages/
typescript_scope.py, tree-sitter).

What exists: the language server's names at the cursor (a completion at a name start: locals,
parameters, the module's names, imports, the lib's and the ambient declarations' globals: asked
when the row starts, so it is in before the first line ends), every value identifier the file
writes where the cursor can see it (`visible_names`: a superset, less comments, strings, types —
an interface's members and their parameters — and the parameters and bodies of the functions
that do not hold the cursor), the bindings of the generated code, and a few implicit names
(`arguments`, ...).
Without the server's answer nothing is judged ("no answer": a global the file never names
cannot be told from an invented one; an answer without the lib's globals — `Object`, `globalThis` —
is no scope's list and counts as none: the line after the emptied one can make the server list
members). Judged at each line end: the identifiers of the lines
written so far whose statements tree-sitter reads whole; one in an unfinished statement waits
for it. Types are not judged.
Imports: the module string of each import, export-from, `import y = require("x")`,
`require("x")` and `import("x")` written must resolve (languages/typescript_modules.py: the
file system, nothing run); a specifier that does not is redone, from its first character,
as one that does (an installed package, Node's modules, a sibling file), or fails open where
the file system cannot tell (tsconfig paths, a declared dependency not installed, nothing
installed). The names `import { … }` and `export { … } from` take must be the module's exports,
as the language server lists them inside the braces (also once the module string was redone:
they were written for the module the model meant; a redone name is never one the braces already
take); once one is redone among them, the statement's module string is held to that module
(`_pin_check`), and an invented module after `{ a, b }` is redone among the specifiers whose
text holds a and b. A redone specifier ends only at the quote that opened it. At the row's end,
a statement the file finishes after the cursor is read with the file's rest.
Test: tests/test_names_typescript.py.
"""
from __future__ import annotations

import re

from ...analysis.base import NamesQuery
from ...context import Splice
from ...lines import end_position
from ...languages.typescript_modules import ts_module_index
from ...languages.typescript_scope import IMPLICIT, module_uses, read, visible_names
from .base import Rollback, RowView, TriggerRecord
from .names import NamesMonitor, _token_start
from .narrowing import SPECIFIER, Narrowing

_FROM_QUOTE = re.compile(r"\}\s*from\s*(['\"])")
_SCOPE_MARKS = frozenset({"Object", "globalThis", "undefined"})   # a scope's list holds the lib's globals
_QUOTES = "'\"`"     # a specifier redone ends at its closing quote, never at an escape
                     # (`"./context\n"`: a module named with a line break) or a space


class _NoLexer:
    def rewind(self, n: int) -> None:
        pass


class TsNamesMonitor(NamesMonitor):
    def reset(self, row: RowView) -> None:
        ctx = self.ctx = row.context
        self._cancelled = row.cancelled
        self.prefix = ctx.before                 # offsets are into before + text
        self.lexer = _NoLexer()
        self.file_code = ctx.before + "\n" + ctx.after
        self._known = None
        self._why = None
        self._answer = None
        self._ticket = None
        if self.analyzer is not None:
            sp = _names_at(ctx)
            self._ticket = self.analyzer.ask(NamesQuery(sp, ("names", ctx.version, sp.line, sp.column), "<names>"))
        self._fresh(len(self.prefix))            # judged from the cursor on (before + text)
        self.pinned = None                       # (statement start, module): see _pin_check
        self._pins: dict = {}

    def snapshot(self) -> tuple:
        return (super().snapshot(), self.pinned)

    def restore(self, row: RowView, snap: tuple) -> None:
        base, self.pinned = snap
        super().restore(row, base)

    def rolled_back(self, row: RowView, proposal: Rollback) -> None:
        super().rolled_back(row, proposal)
        self.pinned = self._pins.pop(id(proposal.payload[1]), None)

    def advance(self, row: RowView, token: int):
        if self.state == "narrow":
            t = row.vocab.texts[token] if token < len(row.vocab.texts) else ""
            n = self.narrow
            if n.feed(t) is not None or (not t and not n.need):
                self.record.chosen = n.typed
                self.state, self.narrow = "wait", None
            else:
                return None
        if self.pinned is not None:
            p = self._pin_check(row)
            if p is not None:
                return p
        t = row.vocab.texts[token] if token < len(row.vocab.texts) else ""
        if "\n" not in t and "\r" not in t:
            return None
        full = self.prefix + row.text
        end = max(full.rfind("\n"), full.rfind("\r"))
        return self._judge(row, full, end)

    def settle(self, row: RowView):
        if self.state == "narrow":
            return None
        full = self.prefix + row.text
        return self._judge(row, full, len(full), last=True, tail=self.ctx.after)

    def end_at(self, row: RowView, reason: str) -> int:
        """Cut from outside: the text ends before the line where a missing name (or the name
        being redone) begins."""
        full = self.prefix + row.text
        if reason not in ("deadline", "cancelled"):   # the row's own end (settled; text past
            return len(row.text)           # a stop cut is not shown), or the length limit (its
                                           # last line is unfinished anyway: cutting it leaves
                                           # a dangling `if …:` header, seen on the benchmark)
        bad = self.state == "narrow"
        if bad and self.record is not None:
            self.record.cut = self.narrow.typed
        if not bad and len(full) > self.line_at and self._answer_names() is not None:
            uses = read(full, self.line_at, len(full))
            bad = any(self._ts_missing(name, uses.binds) for name, off in uses.loads
                      if off >= len(self.prefix) and off + len(name) < len(full))
        if not bad and len(full) > self.line_at and self.check_imports and self.ctx.repo is not None:
            index = ts_module_index(self.ctx.repo)     # an invented module is never shown
            bad = any(u.at >= len(self.prefix) and index.resolve(u.spec, self.ctx.path).kind == "missing"
                      for u in module_uses(full, self.line_at, len(full)))
        if not bad:
            return len(row.text)
        start = max(0, self.line_at - len(self.prefix))
        return row.text.rfind("\n", 0, start) + 1 if start else 0

    def final_upto(self, row: RowView) -> int:
        start = self.line_at - len(self.prefix)
        return 0 if start <= 0 else _token_start(row, start)

    # -- the judgement ------------------------------------------------------------------------
    def _answer_names(self):
        if self._answer is None and self._ticket is not None:
            self._answer = self._land()
        a = self._answer
        if a is None or a.failed or not a.names:
            return None
        if not _SCOPE_MARKS & a.names:      # not a scope's list: what follows the emptied line can
            return None                     # make the server answer members (`else` after it: Error's)
        return a.names

    def _ts_missing(self, name: str, binds) -> bool:
        if name in IMPLICIT or name in binds or name in self.binds:
            return False
        if self._known is None:
            self._known = visible_names(self.file_code, len(self.ctx.before))
        if name in self._known:
            return False
        names = self._answer_names()
        return names is not None and name not in names

    def _judge(self, row: RowView, full: str, end: int, last: bool = False, tail: str = ""):
        gen_from = len(self.prefix)
        if end <= self.line_at:
            return None
        uses = read(full, self.line_at, end)
        if tail and uses.open_at is not None:
            # the row's end inside a statement the file finishes after the cursor (a cursor in
            # a multi-line ternary): read with the file's rest, unless that reads worse
            whole = read(full + tail, self.line_at, end)
            if whole.open_at is None or whole.open_at > uses.open_at:
                uses = whole
        binds = self.binds | frozenset(uses.binds)
        upto = end if uses.open_at is None else uses.open_at
        names = self._answer_names()
        proposal = None
        for name, at in uses.loads:
            if at >= upto or at < gen_from or at in self.redone or last and at + len(name) >= end:
                continue
            self.checked += 1
            if name in IMPLICIT or name in binds:
                continue
            if self._known is None:
                self._known = visible_names(self.file_code, len(self.ctx.before))
            if name in self._known:
                continue
            if names is None:
                row.triggers.append(TriggerRecord(receiver="", candidates=0, chosen=name, failed_open=True,
                                                  reason="no answer", asked=True, analyzer="names", kind="name"))
                continue
            if name in names:
                continue
            cands = frozenset(n for n in (names | self._known | binds | IMPLICIT) if _ident(n))
            proposal = self._propose(row, name, at, "unknown name", cands, "name")
            if proposal is not None:
                upto = at
                break
        if proposal is None and self.check_imports:
            proposal = self._ts_imports(row, full, upto, gen_from)
            if proposal is not None:
                upto = min(upto, proposal.payload[3])
        self.binds = binds
        self.line_at = max(self.line_at, upto)
        return proposal

    def _ts_imports(self, row: RowView, full: str, upto: int, gen_from: int):
        region = full[max(self.line_at, gen_from):upto]
        if "import" not in region and "require" not in region and "from" not in region:
            return None
        index = None
        for use in module_uses(full, self.line_at, upto):
            spec, at = use.spec, use.at
            if at < gen_from:
                continue
            if index is None:
                repo = self.ctx.repo
                if repo is None:
                    return None
                index = ts_module_index(repo)
            redone = at in self.redone            # a module redone: the names before it are
            if not redone:                        # still judged against it (they were written
                self.checked += 1                 # for the module the model meant)
                self.checked_imports += 1
            res = index.resolve(spec, self.ctx.path)
            if res.kind == "ok":
                p = self._ts_exports(row, full, use, gen_from)
                if p is not None:
                    return p
                continue
            if redone:
                continue
            if res.kind == "unknown":
                row.triggers.append(TriggerRecord(receiver=spec, candidates=0, failed_open=True,
                                                  reason=res.why, asked=False, analyzer="modules", kind="import"))
                continue
            taken = [n for n, _ in use.names]     # `{ a, b }` came first: a module that has them
            p = self._propose(row, spec, at, "unknown module", index.candidates_for(self.ctx.path, taken),
                              "import", run=SPECIFIER, follow=_closing(full, at))
            if p is not None:
                return p
        return None


    def _pin_check(self, row: RowView):
        """A name of `import { … } from "x"` was redone among x's exports, so the statement's
        module stays x: once its string is written and is not x, the string is redone as x (it
        was: the names redone for ./utils, then `from 'undici-types'`)."""
        stmt, spec = self.pinned
        full = self.prefix + row.text
        if len(full) <= stmt:
            self.pinned = None
            return None
        m = _FROM_QUOTE.search(full, stmt)
        if m is None:
            return None
        start = m.end()
        written = full[start:]
        close = written.find(m.group(1))
        got = written if close < 0 else written[:close]
        if close < 0 and spec.startswith(got):
            return None                        # on its way
        self.pinned = None
        if got == spec or ("pin", start) in self.redone:
            return None
        return self._propose(row, spec, start, "module of the names taken", frozenset({spec}), "import",
                             receiver=spec, run=SPECIFIER, follow=m.group(1), key=("pin", start))

    def _ts_exports(self, row: RowView, full: str, use, gen_from: int):
        """The names `import { … } from "x"` takes must be exports of x: the language server's
        completion inside the braces of `import {  } from "x"` lists them (asked once per
        module; waited for where the monitor is reproducible, else for at most 0.25 s)."""
        names = [(n, off) for n, off in use.names if off >= gen_from and off not in self.redone]
        if not names or self.analyzer is None:
            return None
        head = full[:use.stmt] + "import { "
        ln, col = end_position(head)
        code = head + f' }} from "{use.spec}";\n' + self.ctx.after
        sp = Splice(code, ln, col, self.ctx.path, self.ctx.overlay)
        t = self.analyzer.ask(NamesQuery(sp, ("exports", use.spec, str(self.ctx.path)), "<exports>"))
        a = t.result(0)
        if a is None and self.waits is not None:
            self.waits.wait([t], self.analyzer.deadline(), self._cancelled)
            a = t.result(0)
        elif a is None:
            a = t.result(0.25)
        exports = frozenset(n for n in a.names if _ident(n)) if a is not None and not a.failed else frozenset()
        for name, off in names:
            self.checked += 1
            self.checked_imports += 1
            if not exports:
                row.triggers.append(TriggerRecord(receiver=use.spec, candidates=0, chosen=name, failed_open=True,
                                                  reason="exports unknown", asked=True, analyzer="names",
                                                  kind="import"))
                return None
            if name in exports:
                continue
            others = {n for n, o in use.names if o != off}     # never a name taken twice
            p = self._propose(row, name, off, "not exported", exports - others, "import", receiver=use.spec,
                              no_follow=".")          # `import { a.b }` never
            if p is not None:
                if full[use.at - 1: use.at] in ("'", '"'):     # its module stays (_pin_check)
                    self._pins[id(p.payload[1])] = (use.stmt, use.spec)
                return p
        return None


def _names_at(ctx) -> Splice:
    """Where the server is asked for the names in scope: a new line of the body (a body task),
    or the cursor's line emptied to its indentation (a cursor after `obj.` would get obj's
    members; the names of the line's own arrow parameters are the file's, read as text)."""
    if ctx.kind == "body":
        return ctx.splice("\n")
    before = ctx.before
    start = max(before.rfind("\n"), before.rfind("\r")) + 1
    line = before[start:]
    head = before[:start] + line[: len(line) - len(line.lstrip())]
    ln, col = end_position(head)
    return Splice(head + "\n" + ctx.after, ln, col, ctx.path, ctx.overlay)


def _closing(full: str, at: int) -> str:
    """What may end the specifier that starts at `at`: the quote that opened it."""
    q = full[at - 1: at]
    return q if q and q in _QUOTES else _QUOTES


def _ident(n: str) -> bool:
    return bool(n) and (n[0].isalpha() or n[0] in "_$") and all(c.isalnum() or c in "_$" for c in n)
