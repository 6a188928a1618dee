"""Source files of a repository, read safely, and the places code is written into them.

Positions: `Cursor(line, column)` — line is 1-based, column 0-based (characters), as in Jedi.
The user's files are only ever read; every edit happens on in-memory text.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GroundcodeError
from .lines import split_lines
from . import pyparse


@dataclass(frozen=True)
class Cursor:
    line: int     # 1-based
    column: int   # 0-based


def read_source(path: str | Path) -> str:
    """A source file's text in the encoding its language reads it in: Python's by PEP 263 (a
    `# -*- coding: latin-1 -*-` line, else UTF-8; tokenize.detect_encoding), every other
    language UTF-8; a UTF-8 byte order mark is not part of the text (as editors show it)."""
    p = Path(path)
    if not p.exists():
        raise GroundcodeError(f"file not found: {p}")
    if not p.is_file():
        raise GroundcodeError(f"not a file: {p}")
    return decode_source(p.read_bytes(), p)


def decode_source(data: bytes, path: Path) -> str:
    """`read_source`'s decoding of a file's bytes (one-line errors)."""
    encoding = "utf-8-sig"
    if path.suffix.lower() in (".py", ".pyi"):
        import io
        import tokenize
        try:
            encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        except SyntaxError as exc:             # an unknown codec, or a cookie that contradicts a BOM
            raise GroundcodeError(f"{path}: {exc}") from None
        if encoding == "utf-8":
            encoding = "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding == "utf-8-sig" else encoding
        how = "declare its encoding on its first two lines (PEP 263) or save it as UTF-8" \
            if path.suffix.lower() in (".py", ".pyi") else "save it as UTF-8"
        raise GroundcodeError(f"{path} is not {name} text (byte {exc.start}); {how}") from None


_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", ".hg")
_JS_MARKERS = ("package.json", "tsconfig.json", "jsconfig.json")


def find_repo_root(path: Path) -> Path:
    """The nearest ancestor with a VCS or packaging marker (a TypeScript or JavaScript file's also
    package.json, tsconfig.json, jsconfig.json); else the directory that holds the file's
    top-level package (so `import pkg.mod` resolves); else the file's directory."""
    from .languages import PYTHON, language_of
    markers = _MARKERS if language_of(path) is PYTHON else _MARKERS + _JS_MARKERS
    p = path.resolve().parent
    for d in [p, *p.parents]:
        if any((d / m).exists() for m in markers):
            return d
    while (p / "__init__.py").exists() and p.parent != p:
        p = p.parent
    return p


def text_version(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def parse_file_position(spec: str) -> tuple[Path, Cursor]:
    """'FILE:LINE:COL' -> (path, Cursor)."""
    m = re.match(r"^(.*):(\d+):(\d+)$", spec)
    if not m:
        raise GroundcodeError(f"expected FILE:LINE:COL (line 1-based, column 0-based), got {spec!r}")
    return Path(m.group(1)), Cursor(int(m.group(2)), int(m.group(3)))


def parse_file_function(spec: str) -> tuple[Path, str]:
    """'FILE:Class.method' -> (path, qualified name); FILE is a source file of a supported
    language (.py, .ts, .js, …: languages.SOURCE_SUFFIXES)."""
    from .languages import SOURCE_SUFFIXES
    m = re.match(r"^(.*):([A-Za-z_$#][\w$#.]*)$", spec)
    if not m or Path(m.group(1)).suffix.lower() not in SOURCE_SUFFIXES:
        raise GroundcodeError("expected FILE:FUNCTION with FILE a source file ("
                              f"{', '.join(SOURCE_SUFFIXES)}; e.g. pkg/mod.py:Class.method or "
                              f"src/cart.ts:Cart.add), got {spec!r}")
    return Path(m.group(1)), m.group(2)


@dataclass
class FunctionSite:
    """Where a function's body is written: the one function-site extraction (the CLI's
    FILE:FUNCTION, the benchmark's candidates). Lines 1-based, columns in characters."""
    scope: str            # "Class.method" or "function" (nested classes: "Outer.Inner.method")
    def_line: int         # line of `def` (decorators excluded)
    first_line: int       # first line of the decorators / def
    body_line: int        # first line after the docstring: where generation starts (column 0)
    end_line: int         # last line of the function
    indent: int           # column of `def`
    header_end: int       # last line of the `def ...:` header
    docstring: str        # cleaned docstring ("" if none)
    is_method: bool
    statements: int       # top-level statements after the docstring
    points: list[tuple[int, int]] = field(default_factory=list)   # (line, col) right after a `.`

    @property
    def qualname(self) -> str:
        return self.scope


def char_col(line_text: str, byte_col: int) -> int:
    """ast's UTF-8 byte column as a character column."""
    return len(line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def site_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: str, in_class: bool,
            lines: list[str]) -> FunctionSite:
    """The site of one function node of a module parsed from `lines` (no filtering)."""
    doc = ast.get_docstring(fn, clean=True)
    body_line = fn.body[0].end_lineno + 1 if doc is not None else fn.body[0].lineno
    rest = fn.body[1:] if doc is not None else fn.body
    first_line = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    return FunctionSite(scope=scope, def_line=fn.lineno, first_line=first_line, body_line=body_line,
                        end_line=fn.end_lineno, indent=char_col(lines[fn.lineno - 1], fn.col_offset),
                        header_end=fn.body[0].lineno - 1, docstring=doc or "", is_method=in_class,
                        statements=len(rest))


def _qualnames(tree) -> list[str]:
    out, stack = [], [(n, "") for n in tree.body]
    while stack:
        node, prefix = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            q = prefix + node.name
            out.append(q)
            if isinstance(node, ast.ClassDef):
                stack.extend((c, q + ".") for c in node.body)
    return sorted(out)


def _did_you_mean(tree, part: str, scope: str) -> str:
    """'; did you mean Class.method?' for a method named without its class (or a near miss)."""
    import difflib
    names = _qualnames(tree)
    same = [q for q in names if q.rsplit(".", 1)[-1] == part]
    near = difflib.get_close_matches(f"{scope}.{part}" if scope else part, names, n=3, cutoff=0.75)
    picks = list(dict.fromkeys(same + near))[:3]
    return f"; did you mean {' or '.join(picks)}?" if picks else ""


def find_function(text: str, qualname: str, path: Path | None = None) -> FunctionSite:
    """Locate `qualname` (e.g. 'Cart.add') in `text`."""
    try:
        tree = pyparse.parse(text)
    except SyntaxError as exc:
        raise GroundcodeError(f"{path or 'source'}: cannot parse (line {exc.lineno}: {exc.msg}); "
                              "fix the syntax error or use `groundcode complete` at a position") from None
    parts = qualname.split(".")
    body = tree.body
    node = None
    for k, part in enumerate(parts):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            where = ".".join(parts[:k]) or "module level"
            hint = _did_you_mean(tree, part, ".".join(parts[:k]))
            raise GroundcodeError(f"{path or 'source'}: no function or class {part!r} at {where}{hint}")
        body = node.body
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise GroundcodeError(f"{qualname!r} is a class, not a function")
    site = site_of(node, qualname, len(parts) > 1, split_lines(text))
    if site.body_line <= site.def_line and not site.docstring:
        raise GroundcodeError(f"{qualname!r} is a one-line function; nothing to generate")
    return site
