"""Text rules of the LSP server, free of any LSP library: positions in the negotiated encoding,
where an inline completion ends, what it must not repeat, and what it says was grounded.

    index = to_index(line, character, "utf-16")    # an LSP column -> a Python str index
    character = from_index(line, index, "utf-16")  # and back
    stop = stop_for(line[:index])                  # SamplingConfig.stop for this cursor
    text = shape(completion, finish_reason, rest)  # what the editor inserts ("" = no item)
    info = grounded(generation)                    # the identifiers the analyzer chose

LSP counts columns in UTF-16 code units unless the client and server agreed on another
encoding (utf-8, utf-32); Python indexes code points. An emoji is 2 UTF-16 units and 4 UTF-8
bytes but 1 Python character, 'é' is 1, 1 and 2. Not here: the protocol (lsp.py), requests and
cancellation (lsp_completer.py). Tested by tests/test_lsp_text.py.
"""
from __future__ import annotations

import re

_ENCODINGS = {"utf-16": 2, "utf-8": 1, "utf-32": 4}


def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-32":
        return 1
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    return 2 if ord(ch) > 0xFFFF else 1


def to_index(line: str, character: int, encoding: str = "utf-16") -> int:
    """The Python index of LSP column `character` in `line` (no line break). A column past the
    line's end means its end (the LSP rule); one inside a character rounds up past it."""
    if encoding not in _ENCODINGS:
        raise ValueError(f"unknown position encoding {encoding!r}")
    units = 0
    for k, ch in enumerate(line):
        if units >= character:
            return k
        units += _units(ch, encoding)
    return len(line)


def from_index(line: str, index: int, encoding: str = "utf-16") -> int:
    """The LSP column of Python index `index` in `line`."""
    return sum(_units(ch, encoding) for ch in line[:index])


def stop_for(head: str) -> str:
    """Where an inline completion at the end of `head` (the line up to the cursor) ends: a block
    after a `:` that opens one (`def f():|`, `else:|`), else the statement (one line, or more
    while a bracket stays open)."""
    code = _strip_comment(head).rstrip()
    return "block" if code.endswith(":") and _opens_block(code) else "statement"


def _strip_comment(line: str) -> str:
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:k]
    return line


def _opens_block(code: str) -> bool:
    """`x[1:` or `lambda x:` end in a colon too; a block opener's colon is outside brackets."""
    depth = 0
    for ch in code:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return depth == 0 and not re.search(r"\blambda\b[^:]*:$", code)


def shape(completion: str, finish_reason: str, rest: str, chosen: list[str] | None = None,
          head: str = "") -> str:
    """The text to insert at the cursor (`head`: the line before it, `rest`: after it).

    - A row that ran into the token limit never reached its boundary: keep its whole lines,
      else cut after the last grounded name (chosen), else nothing (no half statements).
    - No trailing line break (the editor's line goes on after the cursor).
    - No suffix duplication: the model does not see the rest of the cursor's line, so when the
      completion's first line ends with that text (a `)` the editor closed, a `:`), the tail is
      dropped -- unless the line's brackets say the completion's own copy is needed
      (`print(self.|)` + `size()`: the `)` closes `size(`, the editor's one closes `print(`)."""
    text = completion
    if finish_reason == "length":
        nl = text.rfind("\n")
        if nl >= 0:
            text = text[: nl + 1]
        else:
            ends = [text.rfind(n) + len(n) for n in chosen or () if n and n in text]
            text = text[: max(ends)] if ends else ""
    text = text.rstrip("\n")
    if not text.strip():
        return ""
    tail = rest.strip()
    if tail:
        first, nl, more = text.partition("\n")
        body = first.rstrip()
        if body.endswith(tail):
            cut = body[: len(body) - len(tail)]
            if abs(_depth(head + cut + rest)) <= abs(_depth(head + first + rest)):
                text = cut + nl + more
    return text if text.strip() else ""


def _depth(line: str) -> int:
    """Open brackets minus closed ones, outside string literals."""
    depth, quote = 0, None
    for ch in _strip_comment(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth


def grounded(gen) -> list[dict]:
    """The triggers of a Generation as the editor sees them: each receiver, the name the
    analyzer's mask made the model write (constrained) or let it keep, how many members it
    offered, and why a trigger failed open."""
    out = []
    for t in gen.triggers or ():
        cut = getattr(t, "cut", None)
        if t.rolled_back and not t.chosen and cut is None:
            continue
        out.append({"receiver": t.receiver, "chosen": t.chosen, "candidates": t.candidates,
                    "constrained": bool(t.constrained), "failed_open": bool(t.failed_open),
                    "reason": t.reason, "analysis_ms": round(float(t.analysis_ms or 0.0), 1),
                    "trusted": bool(getattr(t, "trusted", False)),
                    "cut": cut})
    return out


def title(info: list[dict]) -> str:
    """One line for the editor: the names the analyzer confirmed or chose (`grounded
    self.registry`), the receivers it could not resolve (`unresolved self.owner: empty`), and
    the names a deadline, a cancel or the length limit cut before they were checked (`cut
    before self.disc`: not shown)."""
    cut = [g for g in info if g.get("cut") is not None]
    names = [f"{g['receiver']}.{g['chosen']}" for g in info
             if g["chosen"] and not g["failed_open"] and g.get("cut") is None]
    loose = [f"{g['receiver']}: {g['reason'] or 'left free'}" for g in info
             if g["failed_open"] and g.get("cut") is None]
    parts = (["grounded " + ", ".join(names)] if names else []) + \
            (["unresolved " + ", ".join(loose)] if loose else []) + \
            (["cut before " + ", ".join(f"{g['receiver']}.{g['cut']}" for g in cut)] if cut else [])
    return "groundcode: " + ("; ".join(parts) if parts else "no member access")
