"""Draft tokens for greedy rows, verified in one forward pass: the next keystroke types what the
last suggestion showed, so the rest of that suggestion is most likely what the model writes
again — checking it costs one forward instead of one per token.

    drafter = Drafter(max_tokens=16, budget=32)       # the scheduler's (Batch(engine, drafter))
    ids = drafter.propose(row, width)                 # Batch.feed: tokens proposed to follow the
                                                      #   row's last token (fed with it, one forward)
    verify(batch, row, i, events)                     # Batch.step: one ordinary step per draft token
    memory = Suggestions()                            # the scheduler's: recent rows' suggestions
    memory.add(row_ctx, tokens, text)                 #   a row ended (any reason but error)
    ref = memory.reference(row_ctx, prompt.owed)      #   a new row: RowSpec(draft=ref) or None

Where drafts come from, per row (greedy rows only: temperature 0, no replay policy):
  1. `RowSpec.draft`, a `Reference`: the previous suggestion at this place when the user typed
     its start (`Suggestions.reference`: the new row's start plus the text it owes extends the
     old row's start by characters the old suggestion began with). Proposed wherever the row's text so
     far is a start of the reference's text ending at one of its token boundaries: the model may
     write the typed part's remainder with other tokens (`et` after the typed `g` of `get`), and
     the reference's own tokens resume at the next shared boundary.
  2. Prompt lookup (`lookup=True`): the last `ngram` tokens of prompt + row found earlier in
     them; the tokens that followed there (code repeats its names and lines).

Exactness. `verify` runs, for each draft position in turn, exactly the step a row takes without
drafts (engine.Batch: scores → masks → argmax → check → accept → advance → proposals → stop →
final) on the logits the forward computed after that position; it goes on to the next position
only while the token that step accepted is the draft token there (so the cache and the logits
of the next position are those of the accepted text). The first step that accepts another
token (the model's own, guided choice), cuts the row, or ends it stops verification; the
unused draft columns are masked out of the cache (as a rollback does). The tokens are the ones
one-token steps would give, up to the floating-point order of a multi-token forward (an exact
tie between two tokens may break the other way, as it may between a prefix-cached and a cold
prefill). Sampled rows (temperature > 0) are never drafted: their random stream stays one draw
per step.

Cost: a drafted feed is one forward over `1 + k` new columns per row (rows without a draft pad
with masked columns); `budget` caps rows × columns of a drafted forward, so a full batch drafts
little or nothing.
Not here: the loop (engine.py), where suggestions are kept (scheduler.py).
Test: tests/test_drafts.py.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass

import numpy as np

from .sampling import greedy


@dataclass(frozen=True)
class Reference:
    """A continuation the row probably writes: `text` (relative to the row's start), the token
    ids `ids` whose texts make it up and `ends[k]` = offset in `text` after ids[k] (offsets ≤ 0:
    tokens that lie wholly in what was typed)."""
    text: str
    ids: tuple
    ends: tuple

    def after(self, written: str, k: int) -> list[int]:
        """Up to k ids that follow `written` if it is a start of the text ending at a boundary."""
        n = len(written)
        if n == 0 or not self.text.startswith(written):
            return []
        j = bisect_left(self.ends, n)
        if j >= len(self.ends) or self.ends[j] != n:
            return []
        return list(self.ids[j + 1: j + 1 + k])


class Suggestions:
    """The last suggestions rows wrote (their raw tokens, whatever ended them but an error),
    newest first, bounded in count. Thread-unsafe: the scheduler thread owns it."""

    def __init__(self, size: int = 32):
        self._items: deque = deque(maxlen=size)

    def add(self, ctx, tokens: list[int], text: str, ends: list[int], typed_from: int = 0) -> None:
        """`typed_from` > 0: answer only a keystroke whose text reaches that long (a lookahead
        row's suggestion is for one that typed past the cursor, not for the same place again)."""
        if tokens and text:
            self._items.appendleft((str(ctx.path), ctx.before, tuple(tokens), text, tuple(ends), typed_from))

    def reference(self, ctx, owed: str = "") -> Reference | None:
        """The newest suggestion that the new row runs into: the old row's start + suggestion
        (same file) starts with the new row's start + what it owes (`owed`: the text its prompt
        gave back, which the row writes first — a cursor inside a word heals its last token), and
        goes on beyond it. The rows may start at different places (a healed word starts its row
        before the old row's start): the reference is the old text from the new row's start,
        with the old tokens' ends shifted to match. The text after the cursor is not compared:
        a draft is only a guess."""
        new = ctx.before + owed
        for path, before, ids, text, ends, typed_from in self._items:
            if path != str(ctx.path) or len(new) < typed_from:
                continue
            old = before + text
            if len(new) < len(old) and old.startswith(new):
                d = len(ctx.before) - len(before)      # < 0: the new row starts earlier
                return Reference(old[len(ctx.before):], ids, tuple(e - d for e in ends))
        return None


class Drafter:
    """Which tokens a greedy row proposes to follow its last one (see the module docstring)."""

    def __init__(self, max_tokens: int = 16, budget: int = 32, lookup: bool = True, ngram: int = 3):
        self.max_tokens, self.budget, self.lookup, self.ngram = max_tokens, budget, lookup, ngram

    def width(self, rows: int) -> int:
        """The most draft tokens a row may get in a forward over `rows` rows."""
        return max(0, min(self.max_tokens, self.budget // max(rows, 1) - 1))

    def propose(self, r, k: int) -> list[int]:
        if k <= 0 or r.sampling.temperature > 0 or r.spec.choose is not None or not r.view.tokens:
            return []
        k = min(k, r.sampling.max_new_tokens - len(r.view.tokens) - 1)   # the last token is never fed
        if k <= 0:
            return []
        ref = r.spec.draft
        if ref is not None:
            out = ref.after(r.view.text, k)
            if out:
                return out
        return self._lookup(r, k) if self.lookup else []

    def _lookup(self, r, k: int) -> list[int]:
        """Prompt lookup: the tokens that followed the latest earlier occurrence of the last
        `ngram` tokens of prompt + row."""
        seq = r.lookup_seq()
        g = self.ngram
        if len(seq) <= g:
            return []
        tail = seq[-g:]
        hits = np.flatnonzero(seq[: len(seq) - g] == tail[0])
        for h in hits[::-1]:                       # the latest occurrence first
            if h + g < len(seq) and np.array_equal(seq[h: h + g], tail):
                return seq[h + g: h + g + k].tolist()
        return []


def verify(batch, r, i: int, events: list) -> None:
    """The draft fed after row r's last token: one ordinary step (step.py) per draft position,
    on that position's logits, while the step accepts the draft token; the unused draft
    columns are masked out of the cache."""
    draft, cols, logits = r.draft, r.draft_cols, r.draft_logits
    r.draft, r.draft_cols, r.draft_logits = [], [], None
    r.drafted += len(draft)
    rs = batch.rowstep
    j = 0
    while j < len(draft) and r.live and r.settling is None and r.refeed is None and r.view.tokens \
            and r.view.tokens[-1] == draft[j]:
        r.fed_cols.append(cols[j])               # its column holds the accepted token now
        r.draft_accepted += 1
        n = len(r.view.tokens)
        row_logits = batch.logits[i]
        row_logits.copy_(logits[j])              # the next position's logits
        constrained = rs.shape(r, row_logits)    # 1. scores, 2. masks
        if r.held:                               # a guide's answer runs: the row waits on
            j += 1                               # this position's logits; the rest is masked
            break
        if constrained is None:                  # a guide failed: the row ended
            events.append(rs.finished(r))
            j += 1
            break
        try:                                     # 3. choose (greedy), 4. accept ...
            rs.take(r, int(greedy(row_logits)), constrained, events, row_logits)
        except Exception as exc:
            rs.fail(r, exc)
            events.append(rs.finished(r))
        j += 1
        if len(r.view.tokens) != n + 1:          # cut, ended before accepting, or forced away
            break
    if j < len(cols):
        batch.mask_columns(i, cols[j:])
