"""The tool-token guide (ToolGen, Algorithms 2-3): when the model writes `<COMP>`, ask the
autocompleter at the cursor and let the model pick one of its suggestions.

States (one row):
    WAIT     free decoding. The trigger is the accepted `<COMP>` token: the model's argmax (a
             fine-tuned TOOLGEN model), or — with `threshold` — any step where p(<COMP>) >=
             threshold (the guide then promotes <COMP> to the top before sampling). Zero-shot
             mode (`entropy` set; no <COMP> needed): the trigger is a step whose next-token
             entropy (nats) is >= `entropy` and whose top token starts a name that is not a
             keyword — at once, or after spaces or a code dot (` self`, `._x`), text the
             mask then owes before the name — in code (not a string or comment). A name that
             starts inside the token that ends the previous one (`self` then `._x`) is not seen.
    SELECT   the analyzer's suggestions are known: the mask is the suggestions' token trie —
             `Narrowing` over the vocab index, which admits exactly the tokens that continue a
             suggestion (any tokenization of it, the tokenizer's own included) — and the model
             selects greedily under it (or samples, at temperature > 0). Back to WAIT when the
             name is complete.

Where the text goes: the partial function (tool tokens removed: <COMP> is a special token whose
text is "", so neither the row's text nor the decoded completion ever holds it) is placed at the
cursor of the real file (before + text, then the rest of the file), and the analyzer completes
at the end of it. A cursor on a line that holds only indentation gets a filler statement after
it, so that Jedi places it inside the function (not in the next, dedented one).

Terminals. A suggestion that is complete may also be the start of another (`add`, `add_all`):
that node of the trie is terminal *and* has children. The model decides: the mask holds the
children (towards `add_all`) and every token that ends the name (a token starting with a
non-identifier character, e.g. `(`); the name is chosen when such a token comes. (ToolGen's
Algorithm 3 stops at the first terminal, which would make `add_all` unreachable.)
Empty suggestions (or a timeout / failed analysis): the call fails open — recorded in the
trigger with the reason — and the model writes the name freely. Keywords (`None`, `True`,
`return`, ...) are added to the suggestions: Jedi does not list them, and a name position may
be a keyword. After a failed call <COMP> is banned for one step (no loop of empty calls).

Composable with the dereference monitor: masks intersect, so right after a code dot (where the
monitor narrows to members) <COMP> is masked out and the monitor does the job; elsewhere this
guide does. Its state is one snapshot tuple per token for the engine's checkpoints (the records
of triggers are dropped by the engine on a cut, by their token index, never by this guide).
Triggers are recorded as TriggerRecord(receiver="<COMP>" or "<entropy>", ...).
The analyzer is asked through its interface (`NamesQuery` -> ticket); the tool call needs the
answer before the model writes on. A running one makes the state PENDING: a host that holds rows
(engine.Batch, remote.RemoteBatch: `holding`) keeps this row out of its steps while the others
decode, and the answer is taken when it lands or the analyzer's deadline passes (then the call
fails open); a host that does not (transformers' generate) waits for it in `mask` through the
batch's `WaitPolicy` (bounded by the deadline and the step's shared window).
Not here: jedi (analysis/jedi_*.py), narrowing (narrowing.py), the loop (decoding/engine.py).
Test: tests/test_toolcall.py.
"""
from __future__ import annotations

import hashlib
import keyword
import math
import re
import time

import numpy as np

from ...analysis.base import NamesQuery, empty_answer
from ...analysis.wait import WaitPolicy
from ...pycode import Lexer
from .base import Guide, RowView, TriggerRecord
from .narrowing import Narrowing, is_dunder

WAIT, PENDING, SELECT = "wait", "pending", "select"
COMP_RECEIVER, ENTROPY_RECEIVER = "<COMP>", "<entropy>"
_KEYWORDS = frozenset(keyword.kwlist)
_NAME_START = re.compile(r"([ \t]*\.?)[A-Za-z_]")


def _ident_char(c: str) -> bool:
    return c.isalnum() or c == "_"


class ToolCallGuide(Guide):
    def __init__(self, analyzer, comp_id: int | None, threshold: float | None = None,
                 entropy: float | None = None, hide_dunder: bool = True,
                 waits: WaitPolicy | None = None):
        if comp_id is None and entropy is None:
            raise ValueError("ToolCallGuide needs the <COMP> token id or an entropy threshold")
        self.analyzer = analyzer
        self.comp_id = comp_id
        self.threshold = threshold
        self.entropy = entropy
        self.hide = is_dunder if hide_dunder else None
        self.waits = waits or WaitPolicy()

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, row: RowView) -> None:
        self.ctx = row.context
        self.state = WAIT
        self.nar: Narrowing | None = None
        self.record: TriggerRecord | None = None
        self.ban = False                   # <COMP> banned for the next step (after a failed call)
        self.lexer = Lexer(self.ctx.lex_prefix)
        self.call = None                   # PENDING: (ticket, query, lead, asked_at)

    def snapshot(self) -> tuple:
        nar = self.nar
        return (self.state, nar, nar.snapshot() if nar is not None else None, self.record, self.ban, self.call)

    def restore(self, row: RowView, snap: tuple) -> None:
        self.state, self.nar, ns, self.record, self.ban, self.call = snap
        if self.nar is not None:
            self.nar.restore(ns)
        self.lexer.rewind(len(self.ctx.lex_prefix) + len(row.text))

    # -- the engine's hooks -------------------------------------------------------------------
    def logits(self, row: RowView, scores) -> None:
        """Before the masks: ban <COMP> after a failed call; promote it over `threshold`; in
        zero-shot mode trigger at a high-entropy name start."""
        if self.state != WAIT:
            return
        cid = self.comp_id
        if cid is not None:
            if self.ban:
                scores[cid] = -math.inf
            elif self.threshold is not None:
                p = float(scores.float().softmax(-1)[cid])
                if p >= self.threshold:
                    scores[cid] = float(scores.max()) + 1.0
            return
        probs = scores.float().softmax(-1)
        ent = float(-(probs * probs.clamp_min(1e-12).log()).sum())
        if ent < self.entropy:
            return
        top = row.vocab.texts[int(scores.argmax())]
        m = _NAME_START.match(top)       # the top token starts a name (after spaces or a dot)
        if m is None or self._keyword_start(top[m.end(1):]):
            return
        lead = m.group(1)
        text = self.ctx.lex_prefix + row.text + lead
        ok = self.lexer.dot_is_code(text, len(text) - 1) if lead.endswith(".") else self._at_name_start(text)
        if ok:
            self._trigger(row, ENTROPY_RECEIVER, lead)

    def holding(self, row: RowView) -> bool:
        """PENDING on a host that holds rows: True while the answer runs (within the deadline)."""
        if self.state != PENDING:
            return False
        ticket, query, lead, asked_at = self.call
        a = ticket.result(0)
        if a is None and time.perf_counter() - asked_at < (self.analyzer.deadline() or 2.0) \
                and not (row.cancelled is not None and row.cancelled.is_set()):
            return True
        self._land(row, a or empty_answer(query, "timeout"), lead)
        return False

    def mask(self, row: RowView) -> np.ndarray | None:
        if self.state == PENDING:          # a host that does not hold rows: wait here (bounded)
            ticket, query, lead, _ = self.call
            a = ticket.result(0) or self.waits.wait([ticket], self.analyzer.deadline(), row.cancelled)[0]
            self._land(row, a or empty_answer(query, "timeout"), lead)
        if self.state != SELECT:
            return None
        ids = self.nar.allowed()
        if len(ids) == 0:                  # nothing fits any more: fail open
            self.record.failed_open, self.record.reason = True, "no token fits"
            self.state, self.nar = WAIT, None
            return None
        return ids

    def advance(self, row: RowView, token: int) -> int | None:
        if self.state == WAIT:
            self.ban = False
            if self.comp_id is not None and token == self.comp_id:
                self._trigger(row, COMP_RECEIVER)
        else:
            end = self.nar.feed(row.vocab.texts[token])
            if end is not None:
                self.record.chosen = self.nar.typed
                self.state, self.nar = WAIT, None
        return None

    # -- the tool call ------------------------------------------------------------------------
    def _keyword_start(self, text: str) -> bool:
        w = text.split(None, 1)[0] if text.strip() else text
        w = "".join(c for c in w if _ident_char(c))
        return any(k.startswith(w) for k in _KEYWORDS)

    def _at_name_start(self, text: str) -> bool:
        """`text` (the lexing prefix + generated text) ends where a name may start, in code
        (not in a string or comment)."""
        if not text or _ident_char(text[-1]) or text[-1] in "'\"":
            return False
        toks = self.lexer.scan(text, len(text))
        # the last token runs to the end: a comment, or a string (its last character is not a
        # quote, so it is unterminated) means we are not in code
        return not toks or toks[-1][0] not in ("comment", "string")

    def _trigger(self, row: RowView, receiver: str, lead: str = "") -> None:
        # The analyzer's view: the real file with the partial code (tool tokens removed, and
        # `lead`, text about to be written before the name) at the cursor; a line that holds
        # only indentation gets `pass` so that Jedi places it inside the function.
        sp = self.ctx.splice(row.text + lead, filler="pass")
        rec = TriggerRecord(receiver=receiver, candidates=0)
        row.triggers.append(rec)
        self.record = rec
        key = ("tool", self.ctx.version, hashlib.blake2s(
            sp.code.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest(), sp.line, sp.column)
        query = NamesQuery(sp, key, receiver)
        ticket = self.analyzer.ask(query)
        a = ticket.result(0)
        if a is None:                      # running: the row waits for it (`holding`, `mask`)
            self.state, self.call = PENDING, (ticket, query, lead, time.perf_counter())
            return
        self._land(row, a, lead)

    def _land(self, row: RowView, a, lead: str) -> None:
        """The analyzer's answer (or a failed one): SELECT under the suggestions, or fail open."""
        rec = self.record
        self.state, self.call = WAIT, None
        rec.analysis_ms = round(a.ms, 3)
        rec.cache_hit = a.cache_hit
        rec.candidates = len(a.names)
        names = frozenset(n for n in a.names if n.isidentifier())
        # The analyzer's notes about a receiver ("dynamic: ...", "unresolved base: ...") matter
        # right after a dot (the members are incomplete); at a bare name they are about whatever
        # precedes the cursor and do not limit the names in scope.
        after_dot = (self.ctx.before + row.text + lead).endswith(".")
        failed = a.failed
        if failed is not None and not (failed in ("timeout", "empty") or failed.startswith("error")
                                       or after_dot):
            failed = None
        if not names or failed is not None:
            rec.failed_open, rec.reason = True, failed or "empty"
            self.ban = True
            return
        hide = self.hide
        if a.hidden:                    # --hide-private: legal when written, never steered to
            hide = (lambda n, h=a.hidden, d=self.hide: n in h or (d is not None and d(n)))
        self.nar = Narrowing(row.vocab, names | _KEYWORDS, need=lead, hide=hide)
        rec.constrained = True
        self.state = SELECT
