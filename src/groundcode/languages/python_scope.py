"""Which names a Python completion may read: the names monitor's reading of Python. Knows no
analyzer, no tokens and no tensors.

    names = file_names(before + after)   # every name the file may bind (a superset: any
                                         # identifier it writes outside a dot, a string, a
                                         # comment or a call's `key=`)
    why = opaque(code)                   # "star import", "globals()", ... : a name may exist
                                         # that no reading of the text can see (None: none)
    uses = line_uses(line)               # one logical line read by parso: the names it loads
                                         # (name, offset), the names it binds, its imports
    IMPLICIT                             # builtins and module/class implicit names

A superset errs on the side of letting a name through: a name bound anywhere in the file (a
function defined below its caller, a conditional import, a name shadowed in another scope) is
never blocked; what is blocked is a name the file never binds and the builtins do not hold. A
line parso cannot read without error (unfinished code, `match` statements: parso 0.8 predates
them) is not judged (`uses.ok` False): the monitor fails open there, never blocks.
Test: tests/test_names_monitor.py.
"""
from __future__ import annotations

import ast
import builtins
import keyword
import re
from dataclasses import dataclass, field
from functools import lru_cache

import parso

from ..pycode import indent_width, lex
from .python_bindings import module_names  # noqa: F401  (re-exported: python_modules reads it here)
from .python_inner_names import bound_inside, inner_only, leaves as _leaves, read_inside
from .. import pyparse

IMPLICIT = frozenset(dir(builtins)) | frozenset({
    "__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
    "__path__", "__annotations__", "__class__", "__qualname__", "__module__", "__dict__",
    "__cached__", "__debug__", "__all__", "__version__"})
# words that may stand where a name loads (`x = None`, `if not y`): written freely, never checked
EXPRESSION_WORDS = frozenset({"True", "False", "None", "not", "lambda", "await", "yield", "await"})
WORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)

_OPAQUE = (
    (re.compile(r"\bfrom[ \t]+\.*[\w.]*[ \t]+import[ \t]+\(?[ \t]*\*"), "star import"),
    (re.compile(r"\bglobals\s*\(\s*\)"), "globals()"),
    (re.compile(r"\b(?:exec|execfile)\s*\("), "exec()"),
    (re.compile(r"\b__builtins__\b|\bbuiltins\s*\.\s*\w+\s*=|setattr\s*\(\s*builtins\b"), "builtins written"),
)
_IMPORT_PARTS = frozenset({"dotted_name", "import_from", "import_name", "dotted_as_name",
                           "dotted_as_names", "import_as_name", "import_as_names"})
_UNPARSED_START = re.compile(r"(?:match|case)\b(?![ \t]*[=.,)\]:(\[])")
_HEADERS = {"elif": "if 1:\n pass\n", "else": "if 1:\n pass\n", "except": "try:\n pass\n",
            "finally": "try:\n pass\n"}


def opaque(code: str, skip: tuple[str, ...] = ()) -> str | None:
    """Why a name may exist that the text does not bind (star imports, `globals()`, exec,
    writes into builtins), or None; reasons in `skip` are not looked for. Read on the code
    outside strings and comments."""
    patterns = [(p, why) for p, why in _OPAQUE if why not in skip]
    if not any(pattern.search(code) for pattern, _ in patterns):
        return None                      # blanking strings and comments only removes matches
    plain = _code_only(code)
    for pattern, why in patterns:
        if pattern.search(plain):
            return why
    return None


def star_modules(code: str) -> list[str] | None:
    """The modules `code` star-imports (`from .x import *` gives ".x"), in order; None where
    Python's parser cannot read the code."""
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return ["." * n.level + (n.module or "") for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]


def _code_only(code: str) -> str:
    """`code` with its strings and comments blanked (offsets kept)."""
    parts, last = [], 0
    for kind, s, e in lex(code):
        if kind in ("string", "comment"):
            parts.append(code[last:s])
            parts.append(" " * (e - s))
            last = e
    parts.append(code[last:])
    return "".join(parts)


@lru_cache(maxsize=32)
def file_names(code: str) -> frozenset:
    """Every identifier `code` writes outside a dot (`x.name`), a string, a comment and a call's
    keyword (`f(name=...)`): a superset of the names the file binds (module, class and function
    scopes alike). Cached: an editor's rows of one file share it."""
    out: set[str] = set()
    toks = [(k, code[s:e]) for k, s, e in lex(code) if k not in ("ws", "comment")]
    stack: list[str] = []                 # the open brackets: "call", "def" (a def's parameters) or "group"
    for i, (kind, t) in enumerate(toks):
        prev = toks[i - 1][1] if i else ""
        if kind == "op":
            if t in "([{":
                if t == "(" and i >= 2 and toks[i - 2][1] in ("def", "class"):
                    stack.append("def")
                elif t == "(" and i and (toks[i - 1][0] == "name" and toks[i - 1][1] not in WORDS
                                          or prev in (")", "]")):
                    stack.append("call")
                else:
                    stack.append("group")
            elif t in ")]}" and stack:
                stack.pop()
            continue
        if kind != "name" or prev == ".":
            continue
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if stack and stack[-1] == "call" and nxt == "=" and prev in ("(", ","):
            continue                      # f(key=...): a parameter's name, not a name in scope
        out.add(t)
    return frozenset(out)


@dataclass
class LineUses:
    ok: bool = True                      # parso read the line without error
    loads: list = field(default_factory=list)      # (name, offset) read from scope, in order
    deferred: set = field(default_factory=set)     # offsets of loads inside a lambda's body: run
                                                   # later, they may read a name bound below
    binds: set = field(default_factory=set)        # names the line binds
    inner: set = field(default_factory=set)        # ... only as a lambda's parameter or a comprehension's
                                                   # target: not bound for the lines after it
    blind: list = field(default_factory=list)      # (name, start, end): a statement's target is not
                                                   # bound yet in its value (`for x in x:`, `y = y`)
    imports: list = field(default_factory=list)    # ImportUse, in order
    why: str | None = None               # why not ok

    outside: set = field(default_factory=set)      # offsets of loads of `inner` names outside their scope

    def unbound_at(self, off: int) -> set:
        """The line's bindings a load at offset `off` cannot read: targets not bound yet (it is
        in their statement's value), a lambda's or comprehension's own names outside it."""
        return {n for n, lo, hi in self.blind if lo <= off < hi} | (self.inner if off in self.outside else set())


@dataclass
class ImportUse:
    """One import statement: `module` as written (dots of a relative import included), at
    `offset`; `names` the (name, offset) it takes from the module (`from m import a, b`),
    empty for `import m`."""
    module: str
    offset: int
    names: list = field(default_factory=list)
    parts: list = field(default_factory=list)     # (part, offset) of the module's dotted name


def _wrap(line: str) -> tuple[str, str, str]:
    """(head, body, tail): what parso reads is head + body + tail; body is the line itself."""
    word = re.match(r"[A-Za-z_]\w*", line)
    head = _HEADERS.get(word.group(0), "") if word else ""
    code = _code_only(line).rstrip()
    tail = ""
    if code.endswith(":"):
        tail = "\n pass"
    elif code.startswith("@"):
        tail = "\ndef _(): pass"
    return head, line, tail


def line_uses(line: str) -> LineUses:
    """Read one logical line (its first line's indentation stripped by the caller or not: it is
    stripped here, offsets stay offsets into `line`)."""
    stripped = line.lstrip(" \t")
    shift = len(line) - len(stripped)
    if not stripped.strip() or stripped.lstrip().startswith("#"):
        return LineUses()
    if _UNPARSED_START.match(stripped):
        return LineUses(ok=False, why="match statement")
    head, body, tail = _wrap(stripped.rstrip("\r\n"))
    src = head + body + tail
    module = parso.parse(src, error_recovery=True)
    starts = [0]
    for m in re.finditer(r"\r\n|\r|\n", src):
        starts.append(m.end())
    base = len(head)

    def offset(leaf, pos=None) -> int:
        ln, col = pos or leaf.start_pos
        return starts[ln - 1] + col - base + shift

    uses = LineUses()
    limit = len(body)
    scoped, plain = set(), set()
    for leaf in _leaves(module):
        if leaf.type in ("error_leaf", "error_node") or _in_error(leaf):
            if 0 <= offset(leaf) - shift < limit:
                return LineUses(ok=False, why="does not parse")
            continue
        if leaf.type != "name" or not (0 <= offset(leaf) - shift < limit):
            continue
        parent = leaf.parent
        nxt = leaf.get_next_leaf()
        if leaf.is_definition() or parent.type in ("global_stmt", "nonlocal_stmt") \
                or nxt is not None and nxt.type == "operator" and nxt.value == ":=":
            uses.binds.add(leaf.value)
            (scoped if bound_inside(leaf) else plain).add(leaf.value)
            value = _target_value(leaf)       # (a comprehension in it binding the name: not blind)
            if value is not None and not any(n.type == "name" and n.value == leaf.value and n.is_definition()
                                             for n in _leaves(value)):
                uses.blind.append((leaf.value, offset(value), offset(value, value.end_pos)))
            continue
        prev = leaf.get_previous_leaf()
        if prev is not None and prev.value == "." and parent.type not in _IMPORT_PARTS:
            continue                      # a member: the dereference monitor's
        if parent.type in _IMPORT_PARTS:
            continue                      # a module's name: read as an import below
        if parent.type == "argument" and parent.children[0] is leaf and len(parent.children) > 1 \
                and parent.children[1].type == "operator" and parent.children[1].value == "=":
            continue                      # f(key=...)
        if parent.type in ("fstring_conversion",):
            continue
        uses.loads.append((leaf.value, offset(leaf)))
        if not read_inside(leaf):
            uses.outside.add(offset(leaf))
        if _in_lambda_body(leaf):
            uses.deferred.add(offset(leaf))
    for node in _imports(module):
        for use in _import_uses(node, offset):
            if 0 <= use.offset - shift < limit:
                uses.imports.append(use)
    uses.inner = scoped - plain
    return uses


def _target_value(leaf):
    """The value a statement evaluates before `leaf`, its target, is bound: a `for`'s iterable,
    an assignment's right-hand side (None: any other binding)."""
    stmt = leaf.search_ancestor("for_stmt", "expr_stmt", "suite", "simple_stmt")
    if stmt is None or stmt.type in ("suite", "simple_stmt"):
        return None
    kids = stmt.children
    if stmt.type == "for_stmt":
        return kids[3] if len(kids) > 3 and leaf.end_pos <= kids[2].start_pos else None
    eqs = [k for k in kids if k.type == "operator" and k.value == "="]
    return kids[-1] if eqs and leaf.end_pos <= eqs[-1].start_pos else None


def _in_lambda_body(leaf) -> bool:
    p, child = leaf.parent, leaf
    while p is not None:
        if p.type in ("lambdef", "lambdef_nocond") and child is p.children[-1]:
            return True
        p, child = p.parent, p
    return False


def _in_error(leaf) -> bool:
    p = leaf.parent
    while p is not None:
        if p.type == "error_node":
            return True
        p = p.parent
    return False


def _imports(module):
    stack = [module]
    while stack:
        n = stack.pop()
        if n.type in ("import_name", "import_from"):
            yield n
            continue
        stack.extend(getattr(n, "children", ()))


def _import_uses(node, offset) -> list[ImportUse]:
    if node.type == "import_name":        # `import a.b as c, d`: one ImportUse per dotted name
        return [ImportUse(".".join(p.value for p in path), offset(path[0]),
                          parts=[(p.value, offset(p)) for p in path]) for path in node.get_paths()]
    paths = node.get_from_names()
    module = "." * node.level + ".".join(p.value for p in paths)
    names = [(name.value, offset(name)) for name, _alias in node._as_name_tuples() if name.value != "*"] \
        if not node.is_star_import() else []
    start = offset(paths[0]) if paths else offset(node.children[1])
    return [ImportUse(module, start, names=names, parts=[(p.value, offset(p)) for p in paths])]


# -- names visible at a cursor ----------------------------------------------------------------
_HEADER = re.compile(r"([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+\w")


def _open_scopes(before: str) -> list[tuple[int, str, int]]:
    """(indent, "def" | "class", offset of its line) of the def/class blocks still open at the
    end of `before`, outermost first, read from indentation (lines inside triple-quoted strings,
    blank lines and comments are skipped; a string's text at column 0 may close too much: the
    caller's superset then grows, never shrinks)."""
    stack: list[tuple[int, str, int]] = []
    in_str, quote = False, ""
    depth = 0                              # brackets open from earlier lines (continuations)
    off = 0
    for line in before.splitlines(keepends=True):
        start, off = off, off + len(line)
        body = line.strip()
        if in_str:
            if quote in line:
                in_str = line.count(quote) % 2 == 0
                if not in_str:            # closed here: what follows it counts (`"""),`)
                    depth = max(0, depth + _bracket_delta(line[line.rindex(quote) + 3:]))
            continue
        if not body or body.startswith("#"):
            continue
        if depth <= 0:
            ind = len(line) - len(line.lstrip(" \t"))
            while stack and stack[-1][0] >= ind:
                stack.pop()
            m = _HEADER.match(line)
            if m:
                stack.append((ind, m.group(2), start))
        depth = max(0, depth + _bracket_delta(_before_open_string(line)))
        for q in ('"""', "'''"):
            if line.count(q) % 2 == 1:
                in_str, quote = True, q
                break
    return stack


def _before_open_string(line: str) -> str:
    """The line up to a triple-quoted string it opens and leaves open (its text is no code)."""
    for q in ('"""', "'''"):
        if line.count(q) % 2 == 1:
            return line[: line.rindex(q)]
    return line


_PLAIN = re.compile(r"""'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|#.*""")


def _bracket_delta(line: str) -> int:
    code = _PLAIN.sub("", line)
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def _block_end(after: str, indent: int) -> int:
    """Where the block opened at `indent` ends in `after`: the first code line indented at or
    left of it (len(after) if none)."""
    off = 0
    in_str, quote = False, ""
    depth = 0
    for line in after.splitlines(keepends=True):
        start, off = off, off + len(line)
        if in_str:
            if quote in line:
                in_str = line.count(quote) % 2 == 0
                if not in_str:
                    depth = max(0, depth + _bracket_delta(line[line.rindex(quote) + 3:]))
            continue
        body = line.strip()
        if depth <= 0 and body and not body.startswith("#") \
                and len(line) - len(line.lstrip(" \t")) <= indent and start > 0:
            return start
        depth = max(0, depth + _bracket_delta(_before_open_string(line)))
        for q in ('"""', "'''"):
            if line.count(q) % 2 == 1:
                in_str, quote = True, q
                break
    return len(after)


@lru_cache(maxsize=16)
def visible_names(before: str, after: str) -> frozenset:
    """A superset of the names a load at the end of `before` may read (builtins apart): what the
    module binds (parso, on the file outside the outermost function around the cursor) and every
    identifier of that function (its parameters, its locals, its closures' and nested scopes'),
    or of the class body the cursor is in. Names local to *other* functions are not visible —
    the hallucination a whole-file superset lets through (a local of the function next door) —
    and neither is a method's own name (a class attribute: sitetree's `response_add` read bare
    inside `def response_add`)."""
    scopes = _open_scopes(before)
    outer = next((s for s in scopes if s[1] == "def"), None)
    if outer is None and scopes:
        outer = scopes[-1]                # directly in a class body: its names are in scope
    if outer is None:
        return module_names(before + "\n" + after)
    ind, _, start = outer
    end = _block_end(after, ind)
    head = before[start:]
    if outer is not scopes[0] and scopes[0][1] == "class":   # a method's own name is the class's,
        head = _METHOD_NAME.sub(r"\1_", head, count=1)      # not a name its body can read
    region = head + "\n" + after[:end]
    return module_names(before[:start] + "\n" + after[end:]) \
        | (file_names(region) - inner_only(region, len(head)))


_METHOD_NAME = re.compile(r"^([ \t]*(?:async[ \t]+)?def[ \t]+)\w+")


def guarded_import(code: str, at: int) -> bool:
    """Is the import at `at` inside a `try:` block or its `except` clause, or under an `if` or
    `else` (an import that may fail on purpose, a fallback for one, one for another version)?"""
    line_start = code.rfind("\n", 0, at) + 1
    ind = indent_width(code[line_start:at])
    for line in reversed(code[:line_start].splitlines()):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        w = indent_width(line)
        if w < ind:       # in a try block or its handler, or under an if/else (a version test)
            head = re.sub(r"\s+#.*$", "", line.strip())
            return head.endswith(":") and re.match(r"(try|except|if|elif|else)\b", head) is not None
    return False
