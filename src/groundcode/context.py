"""`CodeContext`: where code is written, as the analyzer sees it — the real file around the
generated region, never the prompt (no retrieved snippets, no API docs, no FIM tokens).

    ctx = function_context(file, "Class.method", repo)   # a function body after its docstring
                                                         # (.ts/.js: between the body's braces)
    ctx = cursor_context(file, line, col, repo)          # continue at a cursor (line 1-based)
    ctx = cursor_context(file, line, col, repo, text=buffer)   # ... in unsaved text
    ctx = region_context(path, repo, text, line, col, end_line, indent, scope, def_line)
    row_ctx = ctx.continued(owed)        # what the engine's rows see when the completion must
                                         # start by re-writing `owed` (token healing)
    ctx.insertion(row_ctx, row_text)     # the text to insert at the cursor
    ctx.splice(generated)                # the analyzer's view: the file with `generated` at the cursor
    ctx.probe("self")                    # ... with `self.` as a new statement of the body (prewarm)

`before` ends where the completion is inserted; `lead` is text the completion is expected to
start with (a body's indentation): the prompt builder puts it in the prompt and backs up over
it (token healing) so the model re-writes it itself. Guides read `before + generated text +
"\\n" + after`, which is always the real file with the completion spliced in.
`splice` and `probe` are the one place where generated text meets the file for the analyzer: every
guide asks through them (never by concatenating text itself).
Not here: prompts (decoding/prompt.py), reading files (repo.py). Test: tests/test_prompt.py,
tests/test_splice.py.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, replace
from pathlib import Path

from .errors import GroundcodeError
from .languages import language_of
from .lines import end_position, ends_line, split_lines
from .pycode import Lexer, function_header, indentation
from .repo import find_function, find_repo_root, read_source, text_version


@dataclass
class CodeContext:
    path: Path                      # the file the code goes into
    repo: Path                      # the analyzer's project root
    before: str                     # file text before the generated region
    after: str = ""                 # file text after it (analyzer; FIM suffix)
    stop_indent: int | None = None  # stop at a line indented <= this; None: never
    scope: str = ""                 # cache scope (qualified function name, or the cursor)
    lex_prefix: str = ""            # tail of `before` from a statement start (lexing only)
    starts_at_line: bool = True     # generation starts at the beginning of a line
    reference: str | None = None    # the original code of the region, when known
    lead: str = ""                  # text the completion starts with (a body's indentation)
    version: str = ""               # content hash of the file
    kind: str = "cursor"            # "body" (a function body) or "cursor" (anywhere)
    overlay: object = None          # analysis.base.Overlay: the workspace's other open buffers
    python: Path | None = None      # the interpreter whose libraries the analyzer sees
    trust: bool = False             # the workspace is trusted: its own venv may run (trust.py)

    def __post_init__(self):
        self.path, self.repo = Path(self.path), Path(self.repo)
        if not self.version:
            self.version = text_version(self.before + "\0" + self.after)
        if not self.lex_prefix:
            self.lex_prefix = self.language.lex_prefix(self.before)

    @property
    def language(self):
        """The language layer's facts for this file (languages/: by its extension)."""
        from .languages import language_of
        return language_of(self.path)

    def continued(self, owed: str) -> "CodeContext":
        """The context the engine's rows see when the prompt ends at before + lead minus its
        last len(owed) characters (which the completion then re-writes)."""
        full, lex = self.before + self.lead, self.lex_prefix + self.lead
        head = full[: len(full) - len(owed)]
        return replace(self, before=head, lead="", lex_prefix=lex[: len(lex) - len(owed)],
                       starts_at_line=ends_line(head))

    def insertion(self, row_ctx: "CodeContext", row_text: str) -> str:
        """What to insert at `before`'s end, given the text a row of `row_ctx` generated."""
        return (row_ctx.before + row_text)[len(self.before):]

    # -- the analyzer's view ------------------------------------------------------------------
    def splice(self, generated: str, drop: int = 0, filler: str = "") -> "Splice":
        """The real file with `generated` written at the cursor (after dropping the last `drop`
        characters of `before`: a name the cursor sits in), and the cursor at its end (line
        1-based, column 0-based). `filler` is appended when the cursor's line holds only
        indentation (the tool guide's `pass`: Jedi then places the line inside the function). A language
        that cuts structure at the cursor adds its closers after it (languages: `close_line`)."""
        head = self.before[: len(self.before) - drop] + generated
        line, col = end_position(head)           # lines.py: a lone \r is a line break too
        tail = filler if filler and not head[len(head) - col:].strip() else ""
        close = self.language.close_line
        if close is not None:                    # TypeScript: the brackets the cut left open
            tail += close(self.before, drop, generated, self.after)
        # the cursor's line ends with "\n", never joined to a \r before it into one break (a cursor
        # at the start of a line after a lone \r would move up a line)
        sep = "\r\n" if (head + tail).endswith("\r") else "\n"
        return Splice(head + tail + sep + self.after, line, col, self.path, self.overlay)

    def probe(self, receiver: str) -> "Splice | None":
        """The analyzer's view for asking, before anything is generated, about `receiver.` as
        a new statement of the body of the function the cursor is in: the line that holds the
        cursor is replaced by `<body indent>receiver.` (so a cursor context that ends in
        `self.` is not asked about `self.self.`); a cursor on the function's header line gets
        the statement after it. None outside a function with a complete header (the answer
        would not be the one the real question gets)."""
        head, lex = self.before + self.lead, self.lex_prefix + self.lead
        fn, start = _header_and_line(lex)       # start: the cursor's logical line, in `lex`
        if fn is None:
            return None
        base = len(head) - len(lex)
        if start >= fn.body:
            code_before = head[: base + start]
        else:                                    # the cursor is on the header: after it
            code_before = head + ("" if ends_line(head) else "\n")
        code_before += fn.indent + receiver + "."
        line, col = end_position(code_before)    # lines.py: a lone \r is a line break too
        return Splice(code_before + "\n" + self.after, line, col, self.path, self.overlay)

    def outside_version(self) -> str:
        """Content hash of the file outside the function the cursor is in (its other functions
        and classes included): what a member answer of `self.` depends on besides the code
        written in the function itself. At module level: the file outside the statement."""
        head, lex = self.before + self.lead, self.lex_prefix + self.lead
        fn = function_header(lex)
        cut = len(head) - len(lex) + (fn.start if fn is not None else 0)
        return text_version(head[:cut] + "\0" + self.after)


@dataclass(frozen=True)
class Splice:
    """What the analyzer reads: `code` (the file with partial code in it) saved at `path`, the
    cursor at (line 1-based, column 0-based), and the workspace's other open buffers."""
    code: str
    line: int
    column: int
    path: Path
    overlay: object = None


def region_context(path: str | Path, repo: str | Path, text: str, line: int, col: int,
                   end_line: int, indent: int, scope: str, def_line: int,
                   reference: str | None = None) -> CodeContext:
    """Write inside the function whose `def` (at column `indent`, line `def_line`) ends at
    `end_line`, from (line, col) on: col 0 is a body after its docstring (the completion starts
    with the body's indentation); col > 0 continues a statement. Stops when the function ends."""
    lines = split_lines(text, keepends=True)
    cur = lines[line - 1] if line <= len(lines) else ""
    before = "".join(lines[: line - 1]) + cur[:col]
    if col == 0 and before and not before.endswith("\n"):
        before += "\n"
    lead = ""
    if col == 0:
        body = reference if reference is not None else "".join(lines[line - 1: end_line])
        first = next((ln for ln in split_lines(body) if ln.strip()), "")
        lead = indentation(first) or " " * (indent + 4)
    return CodeContext(path=Path(path), repo=Path(repo), before=before,
                       after="".join(lines[end_line:]), stop_indent=indent, scope=scope,
                       lex_prefix="".join(lines[def_line - 1: line - 1]) + cur[:col],
                       starts_at_line=not cur[:col].strip(), reference=reference, lead=lead,
                       version=text_version(text), kind="body" if col == 0 else "cursor")


def function_context(file: str | Path, qualname: str, repo: str | Path | None = None,
                     text: str | None = None) -> CodeContext:
    """Context for writing the body of `qualname` from its signature and docstring; `text`:
    the file's unsaved text (an editor buffer) instead of the disk's."""
    path = Path(file)
    text = read_source(path) if text is None else text
    root = Path(repo) if repo else find_repo_root(path)
    if language_of(path).Braces is not None:     # TypeScript, JavaScript: between the body's braces
        return _brace_body_context(path, root, text, qualname)
    site = find_function(text, qualname, path)
    lines = split_lines(text, keepends=True)
    reference = "".join(lines[site.body_line - 1: site.end_line])
    return region_context(path, root, text, site.body_line,
                          0, site.end_line, site.indent, qualname, site.def_line, reference)


def _brace_body_context(path: Path, repo: Path, text: str, qualname: str) -> CodeContext:
    """A TypeScript/JavaScript body, as the TypeScript benchmark's function tasks write it
    (languages/typescript_bodies.py): from right after the opening `{` up to the closing `}`,
    which BraceEnd stops at; the header and its doc comment stay in `before`."""
    from .languages.typescript_bodies import find_body
    b = find_body(text, qualname, path)
    return CodeContext(path=path, repo=repo, before=text[: b.body_start], after=text[b.body_end:],
                       scope=qualname, starts_at_line=False, reference=text[b.body_start: b.body_end],
                       version=text_version(text), kind="body")


def cursor_context(file: str | Path, line: int, column: int, repo: str | Path | None = None,
                   text: str | None = None) -> CodeContext:
    """Context for continuing code at (line, column); the rest of that line is replaced.
    `text`: the file's unsaved text (an editor buffer) instead of the disk's."""
    path = Path(file)
    text = read_source(path) if text is None else text
    lines = split_lines(text, keepends=True) or [""]
    if not 1 <= line <= len(lines) + 1:
        raise GroundcodeError(f"{path}: line {line} is outside the file (1..{len(lines)})")
    cur = lines[line - 1].rstrip("\r\n") if line <= len(lines) else ""
    if not 0 <= column <= len(cur):
        raise GroundcodeError(f"{path}:{line}: column {column} is outside the line (0..{len(cur)})")
    before = "".join(lines[: line - 1]) + cur[:column]
    after = "".join(lines[line:])
    head = cur[:column]
    ind = len(indentation(head if not head.strip() else cur))
    return CodeContext(path=path, repo=Path(repo) if repo else find_repo_root(path), before=before,
                       after=after, stop_indent=ind - 1 if ind > 0 else None,
                       scope=f"{line}:{column}", starts_at_line=not head.strip(),
                       version=text_version(text))


@functools.lru_cache(maxsize=4)
def _header_and_line(lex: str):
    """(the function header `lex` ends in, where its last logical line starts): the same for
    every probe of one context (a request prefetches several receivers). Read only."""
    fn = function_header(lex)
    return (fn, Lexer(lex).line_start()) if fn is not None else (None, 0)


# The context of a row with no file around it (a plain text prompt): guides read the same fields
# of every row's context (guides/base.RowView puts this in place of None).
PLAIN = CodeContext(path=Path("<prompt>"), repo=Path("."), before="", scope="<prompt>", kind="plain")
