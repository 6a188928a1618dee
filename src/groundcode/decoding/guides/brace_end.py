"""Stop when the generated code closes the block it is written in: the `}` that ends a function
body or the cursor's block in a language whose blocks are braces (its Language's `Braces`:
TypeScript's and JavaScript's skip strings, comments, regular expressions and template literals). The completion is cut before that brace (the file's
own `}` follows the region). Python's blocks end by indentation: body_end.py.
Test: tests/test_ts_grounding.py."""
from __future__ import annotations

from .base import Guide, RowView, Stop


class BraceEnd(Guide):
    def __init__(self, owed: str = "", inline: int = 0):
        # text the row re-writes first (token healing gives back the prompt's last characters,
        # often the body's `{`): its braces are the block's, not new ones
        self.owed = owed
        # braces the cursor's line opened before the cursor in an expression (`foo({ a: `):
        # closing them does not leave the block (Language.inline_braces)
        self.inline = inline

    def reset(self, row: RowView) -> None:
        Braces = row.context.language.Braces
        b = Braces()
        b.feed(self.owed)
        self._braces = Braces(depth=self.inline - b.depth)
        self._cut: int | None = None

    def snapshot(self) -> tuple:
        return self._braces.snapshot(), self._cut

    def restore(self, row: RowView, snap: tuple) -> None:
        b, self._cut = snap
        self._braces.restore(b)

    def advance(self, row: RowView, token: int) -> None:
        if self._cut is None:
            self._cut = self._braces.feed(row.text)
        return None

    def stop(self, row: RowView):
        return Stop("body_end", cut=self._cut) if self._cut is not None else None
