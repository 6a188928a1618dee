"""The dereference monitor's key and prefetch policy (a mixin of DereferenceMonitor): what an
answer depends on (its cache key: the text outside the function, the scope, the receiver, the
lines that rebind its root), which receivers Jedi could only guess (unannotated parameters), the
attributes the class's text assigns, and which questions are asked ahead of their triggers
(prefetches at a row's start, a local just bound). Test: tests/test_prefetch.py,
tests/test_monitor.py.
"""
from __future__ import annotations

import hashlib
import re


from ...pycode import (assigned_attributes, docstring_types, function_header, ident_run, imported_names, used_attributes)
from ...analysis.base import MembersQuery
from .base import RowView

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

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _digest(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class KeyPolicy:
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
        methods, or already written here, before the statement the dot is in): members once
        that code has run. For `self`/`cls`
        also those the class's own code reads (`self.value` in another method: set by a
        subclass or the host of a mixin, it exists when the class's code runs)."""
        if not _DOTTED.match(receiver):
            return set()
        # not the statement the dot is in (its right side runs first): the monitor's lexer has
        # read up to this dot, so its last line start is that statement's (in prefix + text)
        start = self.lexer.line_start() - (len(self.prefix) - len(self.body_prefix))
        found = assigned_attributes((self.body_prefix + upto_dot)[: max(0, start)], receiver)
        if ident_run(receiver) in ("self", "cls"):
            known = self._class_attrs.get(receiver)
            if known is None:                     # the class's text is fixed: scan it once
                known = self._class_attrs[receiver] = (assigned_attributes(self._class_text, receiver)
                                                       | used_attributes(self._class_read, receiver))
            found |= known
        return found
