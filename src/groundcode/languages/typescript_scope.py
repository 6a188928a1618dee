"""Which names a TypeScript completion reads and binds: the names monitor's reading of TypeScript
(tree-sitter's grammar, as typescript_bodies.py uses it). Knows no analyzer and no tokens.

    names = file_names(code)                 # every identifier the file writes outside a member
                                             # access (a superset of what it binds)
    names = visible_names(code, at)          # the value identifiers outside comments, strings,
                                             # types and other functions' parameters and bodies
    mods = module_uses(code, start, end)     # ModuleUse(spec, at, names, stmt) of each import,
                                             # export-from, require("x") and import("x") whose
                                             # string lies in code[start:end], read whole
    uses = read(code, start, end)            # the identifiers of code[start:end] in a parse of
                                             # `code`: loads (name, offset), bindings, and the
                                             # offset of the first identifier whose statement
                                             # is unfinished (`open_at`: judged later)

A value identifier loads unless it stands where the grammar binds (declarators, parameters,
patterns, catch parameters, imports, function/class/enum names, labels); `x = 1` loads `x`
(TypeScript never declares by assignment). Types are not judged here (`type_identifier`):
completions at a value position never list type-only names. An identifier inside a statement
tree-sitter reads with an error (unfinished: a missing `}`) is not judged until the statement
is whole.
Test: tests/test_names_typescript.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

_BIND = frozenset({
    ("variable_declarator", "name"), ("function_declaration", "name"), ("function_expression", "name"),
    ("generator_function_declaration", "name"), ("generator_function", "name"), ("class_declaration", "name"),
    ("class", "name"), ("abstract_class_declaration", "name"), ("required_parameter", "pattern"),
    ("optional_parameter", "pattern"), ("arrow_function", "parameter"), ("catch_clause", "parameter"),
    ("for_in_statement", "left"), ("enum_declaration", "name"), ("import_specifier", "name"),
    ("import_specifier", "alias"), ("namespace_import", None), ("import_clause", None), ("rest_pattern", None),
    ("array_pattern", None), ("pair_pattern", "value"), ("assignment_pattern", "left"),
    ("object_assignment_pattern", "left"), ("internal_module", "name"), ("module", "name"),
    ("import_alias", None), ("function_signature", "name"), ("type_parameter", "name"),
    ("export_specifier", "alias"), ("method_signature", "name"), ("labeled_statement", "label"),
})
_LOADS = frozenset({"identifier", "shorthand_property_identifier"})
_PATTERN_BINDS = frozenset({"shorthand_property_identifier_pattern"})
IMPLICIT = frozenset({"arguments", "undefined", "globalThis", "NaN", "Infinity", "this", "super",
                      "true", "false", "null", "new", "await", "yield", "typeof", "void", "delete",
                      "async", "function", "class", "import", "require",
                      # the predefined types: a cut line reads `f<boolean` as a comparison, and
                      # they are no values to miss (written as one, tsc says TS2693, not TS2304)
                      "boolean", "number", "string", "symbol", "bigint", "object", "any", "unknown",
                      "never", "keyof"})
_IDENT = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*")


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter_typescript as tst
    from tree_sitter import Language, Parser
    return Parser(Language(tst.language_typescript()))


@lru_cache(maxsize=32)
def file_names(code: str) -> frozenset:
    """Every identifier `code` writes that no dot precedes (strings and comments included: a
    superset errs towards letting a name through)."""
    return frozenset(m.group(0) for m in _IDENT.finditer(code))


_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "function_expression",
                        "function", "generator_function", "arrow_function", "method_definition"})


# what never binds or reads a value: comments, strings, annotations, and the members of a type
# (an interface's, a type literal's) with their parameters, a function type's parameters
_NO_VALUES = frozenset({"comment", "string", "regex", "type_annotation", "function_type", "constructor_type",
                        "property_signature", "method_signature", "call_signature", "construct_signature",
                        "index_signature", "abstract_method_signature"})


@lru_cache(maxsize=32)
def visible_names(code: str, at: int) -> frozenset:
    """The identifiers the file writes where offset `at` can see them: every identifier read or
    bound and every type's name, outside comments, strings, annotations and the members of types
    (an interface's members and their parameters, a function type's parameters), less the
    parameters and bodies of every function that does not hold `at` (a closed one before it,
    any after it: another scope's). Still a superset (a block's `let` beside the cursor's, a
    name read before it is bound); a function left unfinished at `at` holds it; the loose words
    of what tree-sitter reads with an error count as names (whatever the grammar made of them).
    Where the file read whole has errors, its top-level statements are also read one by one
    (`_chunks`), and the reading with fewer bytes in error is taken: one construct the grammar
    cannot read (createSlice.ts: the whole file one error) then spoils its statement only."""
    data, tree = _best_parse(code, at)
    cursor = len(code[:at].encode("utf-8", "surrogatepass"))
    if not tree.root_node.has_error:
        return frozenset(_names_in(data, tree, cursor))
    whole_err = _error_bytes(tree.root_node)
    out, err = set(), 0
    for a, b in _chunks(code, at):
        if a <= at < b or at == b == len(code):
            d, t = _best_parse(code[a:b], at - a)
            c = len(code[a:at].encode("utf-8", "surrogatepass"))
        else:
            d = code[a:b].encode("utf-8", "surrogatepass")
            t, c = _parser().parse(d), -1           # holds no cursor: every function is another's
        err += _error_bytes(t.root_node)
        if err >= whole_err:
            return frozenset(_names_in(data, tree, cursor))
        out |= _names_in(d, t, c)
    return frozenset(out)


def _chunks(code: str, at: int = -1) -> list:
    """(start, end) of each top-level statement: split at the line starts at bracket depth 0, in
    code (not in a string, template or comment), whose line begins with neither a blank nor a
    closer. The brackets the cursor's line (offset `at`) leaves open are not counted: it is
    cut at the cursor."""
    from .typescript_scan import _scan_code, _State
    cuts, depth, line = [0], [0], [0, at >= 0]     # depth at the cursor line's start; not past it

    def on(k, c):
        if c == "\n":
            if line[1] and k >= at:
                depth[0], line[1] = line[0], False
            elif line[1]:
                line[0] = depth[0]
            nxt = code[k + 1:k + 2]
            if depth[0] == 0 and nxt and nxt not in " \t\r\n)]}":
                cuts.append(k + 1)
        else:
            depth[0] = max(0, depth[0] + (1 if c in "([{" else -1))
        return False
    _scan_code(_State(), code, 0, "()[]{}\n", on)
    cuts.append(len(code))
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _names_in(data: bytes, tree, cursor: int) -> set:
    """The names of one parse (see visible_names); `cursor` a byte offset (-1: none held)."""
    out: set = set()

    def holds(n) -> bool:
        if n.start_byte > cursor:
            return False
        if n.end_byte >= cursor:
            return True
        # ended before `at` on its line with nothing closing between: `(s) => s.` at a cursor
        # after the dot (the dot read as an error beside the arrow function)
        gap = data[n.end_byte:cursor]
        if not any(c in gap for c in b"\n,;)}]"):
            return True
        # ended before `at`: closed there, unless read with an error and left open
        return n.has_error and not data[n.start_byte:n.end_byte].rstrip().endswith(b"}")

    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        t = n.type
        if t in _NO_VALUES:
            continue
        if t in _LOADS or t in _PATTERN_BINDS or t == "type_identifier":   # a type's name too: a
            # broken parse reads `f<T>(x)` as comparisons, T a value
            if n.end_byte > n.start_byte != cursor:    # not missing, not _best_parse's stand-in
                out.add(data[n.start_byte:n.end_byte].decode("utf-8", "surrogatepass"))
            continue
        if t == "function_signature":                  # an overload: its name, not its parameters
            name = n.child_by_field_name("name")
            if name is not None:
                stack.append(name)
            continue
        if t == "formal_parameters" and n.parent.type == "ERROR" and n.start_byte > cursor:
            continue                                   # a broken function's after the cursor
        if t in _FUNCTIONS and not holds(n):
            keep = {"parameters", "parameter", "body"}
            stack.extend(c for i, c in enumerate(n.children) if n.field_name_for_child(i) not in keep)
            continue
        if t == "ERROR":                               # its loose words may be anything
            out.update(w for c in n.children if c.child_count == 0 and c.type not in _NO_VALUES
                       for w in _IDENT.findall(data[c.start_byte:c.end_byte].decode("utf-8", "replace")))
        stack.extend(n.children)
    return out


def _best_parse(code: str, at: int):
    """(bytes, tree) of `code`, or of `code` with a name and the closers of the brackets the
    cursor's line leaves open put at `at` (`this.f(a[` + `_])`), whichever tree-sitter reads
    with fewer bytes in error: a line cut at the cursor can break the parse of the rest of the
    file (whose functions' parameters then read as loose words), or the file's next lines close
    those brackets themselves (a call broken over lines)."""
    from .typescript_scan import CODE, _scan_code, _State
    start = max(code.rfind("\n", 0, at), code.rfind("\r", 0, at)) + 1
    opened: list = []

    def on(k, c):
        if c in "([{":
            opened.append(c)
        elif opened and "([{".index(opened[-1]) == ")]}".index(c):
            opened.pop()
        return False
    st = _State()
    _scan_code(st, code[:at], start, "()[]{}", on)
    data = code.encode("utf-8", "surrogatepass")
    tree = _parser().parse(data)
    if "{" in opened:                        # a `{` the line opens: its next lines close it and
        opened = opened[len(opened) - opened[::-1].index("{"):]     # what it is inside of
    if st.mode != CODE or not opened or not tree.root_node.has_error:
        return data, tree
    closed = (code[:at] + "_" + "".join(")]"["([".index(c)] for c in reversed(opened)) + code[at:]).encode(
        "utf-8", "surrogatepass")
    other = _parser().parse(closed)
    return (closed, other) if _error_bytes(other.root_node) < _error_bytes(tree.root_node) else (data, tree)


def _error_bytes(n) -> int:
    if n.type == "ERROR" or n.is_missing:
        return n.end_byte - n.start_byte
    return sum(_error_bytes(c) for c in n.children if c.has_error or c.is_missing)


@dataclass
class TsUses:
    loads: list = field(default_factory=list)      # (name, offset)
    binds: set = field(default_factory=set)
    open_at: int | None = None                     # first identifier in an unfinished statement


def _statement(node):
    """The innermost statement or declaration holding `node` (None: none below the program)."""
    p = node.parent
    while p is not None and p.type != "program":
        t = p.type
        if t.endswith("_statement") or t.endswith("_declaration") or t in ("statement_block",):
            return p
        p = p.parent
    return None


def _parse(code: str, start: int, end: int):
    """(utf-8 bytes, byte -> character offset, the byte span of code[start:end], the parse)."""
    data = code.encode("utf-8", "surrogatepass")
    ascii_ = len(data) == len(code)
    to_byte = (lambda i: i) if ascii_ else (lambda i: len(code[:i].encode("utf-8", "surrogatepass")))
    to_char = (lambda b: b) if ascii_ else (lambda b: len(data[:b].decode("utf-8", "surrogatepass")))
    return data, to_char, to_byte(start), to_byte(end), _parser().parse(data)


def read(code: str, start: int, end: int) -> TsUses:
    """The identifiers of code[start:end] (character offsets) in a parse of all of `code`."""
    data, to_char, b0, b1, tree = _parse(code, start, end)
    uses = TsUses()
    stack = [tree.root_node]
    found = []
    while stack:
        n = stack.pop()
        if n.end_byte <= b0 or n.start_byte >= b1:
            continue
        if n.type in _LOADS or n.type in _PATTERN_BINDS:
            if n.start_byte >= b0 and n.end_byte <= b1:
                found.append(n)
            continue
        stack.extend(reversed(n.children))
    found.sort(key=lambda n: n.start_byte)
    for n in found:
        name = data[n.start_byte:n.end_byte].decode("utf-8", "surrogatepass")
        off = to_char(n.start_byte)
        if _in_error(n):
            if uses.open_at is None:
                uses.open_at = off
            continue
        if n.type in _PATTERN_BINDS or _binds(n):
            uses.binds.add(name)
            continue
        uses.loads.append((name, off))
    return uses


@dataclass
class ModuleUse:
    spec: str                                      # the module specifier
    at: int                                        # offset of its first character
    names: list = field(default_factory=list)      # (name, offset) an import/export { … } takes
    stmt: int = 0                                  # offset where its statement starts


def module_uses(code: str, start: int, end: int) -> list:
    """The module strings of code[start:end] (ModuleUse: the specifier, its offset, the names
    `{ … }` takes from it, its statement's start):
    `import … from "x"`, `import "x"`, `import y = require("x")`, `export … from "x"`,
    `require("x")` and `import("x")` with a plain string (a template or an expression is not a
    specifier that can be read). A string in a statement tree-sitter reads with an error
    (unfinished) is left out."""
    data, to_char, b0, b1, tree = _parse(code, start, end)
    out = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.end_byte <= b0 or n.start_byte >= b1:
            continue
        if n.type == "string" and n.start_byte >= b0 and n.end_byte <= b1 and _is_source(n) \
                and not _in_error(n):
            frag = [c for c in n.children if c.type == "string_fragment"]
            if len(frag) <= 1 and n.child_count == len(frag) + 2:
                at = frag[0].start_byte if frag else n.start_byte + 1
                text = data[at: frag[0].end_byte].decode("utf-8", "surrogatepass") if frag else ""
                stmt = n.parent
                names = [(data[x.start_byte:x.end_byte].decode("utf-8", "surrogatepass"), to_char(x.start_byte))
                         for x in _taken(stmt)]
                out.append(ModuleUse(text, to_char(at), names, to_char(stmt.start_byte)))
            continue
        stack.extend(reversed(n.children))
    out.sort(key=lambda u: u.at)
    return out


def _taken(stmt) -> list:
    """The `name` nodes of an import's or export-from's `{ … }` specifiers."""
    out = []
    stack = list(stmt.children) if stmt.type in ("import_statement", "export_statement") else []
    while stack:
        n = stack.pop()
        if n.type in ("import_specifier", "export_specifier"):
            name = n.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                out.append(name)
        elif n.type in ("import_clause", "named_imports", "export_clause"):
            stack.extend(n.children)
    return sorted(out, key=lambda n: n.start_byte)


def _is_source(n) -> bool:
    par = n.parent
    if par is None:
        return False
    if par.type in ("import_statement", "export_statement", "import_require_clause"):
        for i, c in enumerate(par.children):
            if c.id == n.id:
                return par.field_name_for_child(i) == "source"
        return False
    if par.type == "arguments" and par.parent is not None and par.parent.type == "call_expression":
        args = [c for c in par.children if c.type not in ("(", ")", ",")]
        fn = par.parent.child_by_field_name("function")
        return args and args[0].id == n.id and fn is not None and (
            fn.type == "import" or fn.type == "identifier" and fn.text == b"require")
    return False


def _in_error(n) -> bool:
    p = n
    while p is not None:
        if p.type == "ERROR" or p.is_missing:
            return True
        if p.parent is not None and p.parent.type == "program":
            return p.has_error
        st = p.type
        if (st.endswith("_statement") or st.endswith("_declaration")) and p is not n:
            return p.has_error
        p = p.parent
    return False


def _binds(n) -> bool:
    par = n.parent
    if par is None:
        return False
    fld = None
    for i, c in enumerate(par.children):
        if c.id == n.id:
            fld = par.field_name_for_child(i)
            break
    return (par.type, fld) in _BIND or (par.type, None) in _BIND
