"""Functions and methods with a block body in a complete TypeScript file, through tree-sitter's
TypeScript grammar (the only tree_sitter_typescript import): what the TypeScript benchmark blanks
out and what a model rewrites from its signature and doc comment.

    for b in bodies(source, tsx=False):
        b.qualname        # "Cart.add", "helper"
        source[b.header_start:b.body_start]    # doc comment excluded: `add(item: string): number {`
        source[b.body_start:b.body_end]        # the body between its braces (the task's reference)
        b.doc             # the comment right above it (/** … */ or // lines), or ""

    find_body(source, "Cart.add", path)        # one by name (generate, the structured endpoint)

Offsets are str indices (tree-sitter counts UTF-8 bytes: converted). Overloads and abstract
methods (no body) and bodies of one line are left out; arrow functions are not functions here.
Test: tests/test_languages_typescript.py.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_KINDS = {"function_declaration": "function", "generator_function_declaration": "function",
          "method_definition": "method"}
_SCOPES = ("class_declaration", "abstract_class_declaration", "class", "interface_declaration",
           "function_declaration", "method_definition", "module", "internal_module")


_DIRECTIVE = re.compile(r"//\s*(eslint|@ts-|prettier-|istanbul|tslint|#region|#endregion|c8 )")


@dataclass(frozen=True)
class Body:
    name: str
    qualname: str
    kind: str                 # function | method
    header_start: int         # the declaration's first character (modifiers, `export` excluded)
    body_start: int           # right after the opening `{`
    body_end: int             # the closing `}`
    line: int                 # 1-based line of the header
    doc: str = ""             # the comment right above: /** … */, or a run of // lines


def _doc(node) -> str:
    """The comment right above a declaration: a /** … */ block, or a run of // (or ///) lines."""
    if node.parent is not None and node.parent.type == "export_statement":
        node = node.parent                        # `/** … */ export function f() {…}`
    prev, lines, line = node.prev_named_sibling, [], node.start_point[0]
    while prev is not None and prev.type == "comment" and line - prev.end_point[0] <= 1:
        text = prev.text.decode("utf-8", errors="replace")
        if text.startswith("/**"):
            return text if not lines else ""
        if not text.startswith("//"):
            break
        if not _DIRECTIVE.match(text):            # a linter's or compiler's directive is no doc
            lines.insert(0, text)
        line, prev = prev.start_point[0], prev.prev_named_sibling
    return "\n".join(lines)


@functools.lru_cache(maxsize=2)
def _parser(tsx: bool):
    import tree_sitter_typescript as ts
    from tree_sitter import Language, Parser
    return Parser(Language(ts.language_tsx() if tsx else ts.language_typescript()))


def bodies(source: str, tsx: bool = False, one_line: bool = False) -> list[Body]:
    """Every function and method with a block body, in file order; `one_line`: bodies on one
    line (`f() {}`) too (`groundcode generate` writes into an empty stub; the benchmark does not)."""
    data = source.encode("utf-8")
    tree = _parser(tsx).parse(data)
    ascii_only = len(data) == len(source)

    def at(byte: int) -> int:
        return byte if ascii_only else len(data[:byte].decode("utf-8", errors="replace"))

    out: list[Body] = []

    def walk(node, scope: tuple) -> None:
        kind = _KINDS.get(node.type)
        name_node = node.child_by_field_name("name")
        name = name_node.text.decode("utf-8", errors="replace") if name_node is not None else ""
        if kind is not None:
            block = node.child_by_field_name("body")
            if block is not None and block.type == "statement_block" \
                    and (one_line or block.end_point[0] > block.start_point[0]):
                doc = _doc(node)
                out.append(Body(name, ".".join(scope + (name,)), kind, at(node.start_byte),
                                at(block.start_byte) + 1, at(block.end_byte) - 1,
                                node.start_point[0] + 1, doc))
        inner = scope + (name,) if node.type in _SCOPES and name else scope
        for child in node.children:
            walk(child, inner)

    walk(tree.root_node, ())
    return out


def uses_tsx(path) -> bool:
    """The grammar a file is parsed with: tsx for .tsx and JavaScript (JSX), TypeScript's else."""
    from pathlib import Path
    return Path(path).suffix.lower() in (".tsx", ".js", ".jsx", ".mjs", ".cjs")


def find_body(source: str, qualname: str, path=None) -> Body:
    """The body of `qualname` ("Cart.add", "helper") in a complete file: the one
    `groundcode generate FILE.ts:FUNCTION` and the structured endpoint's function mode write.
    A name given twice (a getter and its setter, overloads' implementation) is its first body."""
    import difflib

    from ..errors import GroundcodeError
    found = bodies(source, tsx=uses_tsx(path or "x.ts"), one_line=True)
    match = next((b for b in found if b.qualname == qualname), None)
    if match is not None:
        return match
    names = list(dict.fromkeys(b.qualname for b in found))
    same = [q for q in names if q.rsplit(".", 1)[-1] == qualname.rsplit(".", 1)[-1]]
    picks = list(dict.fromkeys(same + difflib.get_close_matches(qualname, names, n=3, cutoff=0.75)))[:3]
    hint = f"; did you mean {' or '.join(picks)}?" if picks else ""
    raise GroundcodeError(f"{path or 'source'}: no function or method {qualname!r} with a body "
                          f"(arrow functions are not functions here){hint}")
