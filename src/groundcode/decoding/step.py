"""One row's step, phases 1-4, whatever the token comes from: the one place that masks, verifies,
accepts, rolls back, stops and finalises. Every host calls it (no host re-implements a phase):

    engine.Batch          local logits: shape(r, logits) then take(r, sampled, ..., logits)
    drafts.verify         a draft position's logits: the same two calls, per draft token
    remote.RemoteBatch    a server's proposal: mask(r) and refusal(r, tok, allowed) decide whether
                          it stands or the server is asked again under a mask; take(r, tok, ...)
    hf.GuidesLogitsProcessor   transformers' scores row: mask_of / refusal_of on (view, guides)
    replay (a teacher)    RowSpec.choose substitutes the reference token inside take()

    step = RowStep(engine, cut_inputs)    # cut_inputs(r, length): what a host drops besides the
                                          # guides on a cut (cache columns; a pending proposal)
    constrained = step.shape(r, logits)   # 1. scores, 2. masks (None: a guide failed, row ended;
                                          #   r.held: a guide holds the row, no token this step)
    step.take(r, tok, constrained, events, logits)   # 3. choose/verify, 4. accept ... final
    step.finish(r, reason, events) / step.cancel(r) / step.fail(r, exc) / step.finished(r)

Every guide's verdict applies on every step: the combined mask of phase 2 is kept on the row
(`r.allowed`), and a sampled token is still checked by every guide (`refusal`), the refusal
intersected with that mask (a healed cursor inside a name: the heal mask lets `ister` in, the
monitor refuses it); when nothing is left in both, the token stands (that check fails open).
Text already final is never taken back: a cut below it is an error, a repetition found late
ends the row after the first of its copies that final text does not reach into. A row that ends without reaching a boundary of its own (a
deadline, a cancel, the length limit) ends where every guide's `end_at` allows: never inside a
name the dereference monitor has not finished checking.
Not here: sampling a batch, feeding the model (engine.py), drafts (drafts.py), the network
(remote.py). Test: tests/test_engine.py, tests/test_cursor_grounding.py, tests/test_remote.py.
"""
from __future__ import annotations

import bisect
import time
from dataclasses import replace

import numpy as np

from ..errors import GroundcodeError
from .checkpoints import Checkpoints, proposals_of
from .guides.base import Stop, as_rollback
from .masking import combine, keep_only
from .rows import FINAL, FINISHED, ROLLBACK, STOP, TOKEN, TRIGGER, Event, RowOutput
from .sampling import sample_rows


def mask_of(view, guides):
    """Phase 2: the guides' masks intersected (None: unconstrained)."""
    return combine(g.mask(view) for g in guides) if guides else None


def refusal_of(view, guides, tok: int, allowed=None):
    """Phase 3's verdict on `tok`: the mask of the first guide that refuses it (intersected with
    `allowed`, the step's mask, when there is one), or None: the token stands. A refusal with
    nothing in common with the step's mask is intersected with the masks of the guides above it
    alone — a mask of less authority yields (the names monitor redoing a name where the call
    monitor takes no further argument: sitetree's `get_tree_item_model(tree_alias)`) — and
    passes to the next guide only where those leave nothing either."""
    for i, g in enumerate(guides):
        m = g.check(view, tok)
        if m is None or not len(m):
            continue
        if allowed is None:
            return m
        both = np.intersect1d(np.asarray(m), np.asarray(allowed), assume_unique=False)
        if len(both):
            return both
        above = combine(h.mask(view) for h in guides[:i])
        both = np.asarray(m) if above is None else np.intersect1d(np.asarray(m), above)
        if len(both):
            return both
    return None


def advance_declining(view, guides, tok: int) -> None:
    """Phase 4 for a host that never rolls back (transformers' generate): every guide advances,
    a proposal to roll back is declined."""
    for g in guides:
        p = as_rollback(g.advance(view, tok))
        if p is not None:
            g.declined(view, p)


def settle_declining(view, guides) -> None:
    for g in guides:
        p = as_rollback(g.settle(view))
        if p is not None:
            g.declined(view, p)


class RowStep:
    def __init__(self, engine, cut_inputs, polls: bool = False):
        self.engine = engine                 # eos ids, the detokenizer
        self.cut_inputs = cut_inputs
        # polls: the host keeps a row whose guides owe answers at its end out of its steps and
        # calls `poll` each step (nothing blocks the batch); else `finish` waits in `settle`
        self.polls = polls

    # -- 1. scores, 2. masks --------------------------------------------------------------------
    def shape(self, r, logits) -> bool | None:
        """Phases 1-2 on this row's logits (a [V] tensor, changed in place): True if a mask was
        applied; None if a guide failed (the row ended)."""
        v = r.view
        r.allowed = r.raw_logits = None
        r.held = False
        if not r.live or v.forced or r.settling is not None:
            return False
        try:
            for g in r.scorers:
                g.logits(v, logits)
            if any(g.holding(v) for g in r.guides):   # an answer it needs first is running:
                r.held = True                          # no token this step (the host keeps
                return False                           # the row's logits), the others go on
            allowed = mask_of(v, r.guides)
        except Exception as exc:                # a failing guide ends its own row only
            self.fail(r, exc)
            return None
        if allowed is None:
            return False
        r.raw_logits = logits.clone()           # (a refusal of more authority may need them)
        keep_only(logits, allowed)
        r.allowed = allowed
        r.constrained += 1
        return True

    def mask(self, r):
        """Phase 2 alone (a host whose token source is not logits: the mask is sent with the
        next request)."""
        r.allowed = mask_of(r.view, r.guides)
        return r.allowed

    def refusal(self, r, tok: int, allowed=None):
        return refusal_of(r.view, r.guides, tok, allowed)

    # -- 3. choose, 4. accept -----------------------------------------------------------------
    def take(self, r, tok: int | None, constrained: bool, events: list, logits=None) -> None:
        """Phases 3-4 for token `tok` of any source. `logits`: this row's (masked) logits, to
        resample under a guide's refusal; None: the host verified the token already."""
        v = r.view
        r.steps += 1
        if v.forced:                              # queued by a guide: no sampling, no check
            tok = v.forced.popleft()
        elif r.spec.choose is not None:           # teacher forcing (replay.py)
            tok = r.spec.choose(r, tok, constrained)
            if tok is None:    # the reference is written: the row ends as generation's would,
                return self.finish(r, "stop", events)   # settling the answers still owed
        elif logits is not None:
            tok = self._verify(r, tok, logits)
        r.allowed = None
        r.ck.accept(tok)
        eng = self.engine
        if tok in eng.eos or tok in r.spec.stop_ids:
            return self.finish(r, "eos", events)
        events.append(Event(TOKEN, r.id, token=tok, text=r.text_stream.push(tok)))
        proposals = proposals_of(r.guides, lambda g: g.advance(v, tok))
        r.ck.mark()
        self._new_triggers(r, events)
        if proposals and self._resolve(r, proposals, events):
            return self._final(r, events)
        for g in r.guides:
            s = g.stop(v)
            if s is not None:
                r.stop = s if isinstance(s, Stop) else Stop("stop", cut=int(s))
                if r.stop.reason == "repetition" and r.stop.cut is not None and r.final_k \
                        and r.stop.cut < v.ends[r.final_k - 1]:
                    # text already streamed as final is never taken back: a repetition found
                    # late ends the row after the first copy final text does not reach into
                    # (the runs' boundaries are the stop's payload), never inside a run; what
                    # a guide still owes is cut by `finished` (end_at)
                    f = v.ends[r.final_k - 1]
                    later = [b for b in r.stop.payload or () if b >= f]
                    r.stop = replace(r.stop, cut=min(later, default=f))
                return self.finish(r, "stop", events)
        sampling = r.sampling
        if len(v.tokens) >= sampling.max_new_tokens or r.steps >= 2 * sampling.max_new_tokens + 16:
            return self.finish(r, "length", events)   # rollbacks re-do steps: bounded
        self._final(r, events)

    def _verify(self, r, tok: int, logits) -> int:
        """The sample, verified: a refusal is resampled under (the step's mask ∩ the refusal),
        and the resample is verified again under what the refusals left — the dereference
        monitor's member is still the call monitor's to check (`stream.read` resampled as
        `read` + `()` with a required parameter unbound was never asked); at most one resample
        per guide, then the last stands."""
        allowed = r.allowed
        s = r.sampling
        sub = [r.gen] if r.gen is not None else None
        for _ in range(max(1, len(r.guides))):
            m = self.refusal(r, tok, allowed)
            if m is None:
                return tok
            raw = r.raw_logits
            if allowed is not None and raw is not None and not len(np.intersect1d(m, allowed)):
                logits.copy_(raw)                 # a mask of less authority yielded (refusal_of)
            keep_only(logits, m)
            allowed = m
            r.constrained += 1
            tok = int(sample_rows(logits.unsqueeze(0), s.temperature, s.top_p, sub)[0])
        return tok

    # -- rollbacks ----------------------------------------------------------------------------
    def _resolve(self, r, proposals: list, events: list) -> bool:
        """Proposals to roll back: the shortest cut wins (True: the row was cut). A host that
        does not roll back (replay) declines them."""
        choose = r.spec.choose
        if choose is not None and not choose.rollbacks:
            for g, p in proposals:
                g.declined(r.view, p)
            r.ck.mark()                           # the guides' state after declining
            return False
        length, winners = Checkpoints.resolve(proposals)
        if length < r.final_k:
            who = ", ".join(sorted({f"{type(g).__name__} ({p.reason})" for g, p in proposals if p.length == length}))
            raise RuntimeError(f"a guide cut below text it had declared final ({length} < {r.final_k} tokens: {who})")
        self.cut(r, length, winners)
        events.append(Event(ROLLBACK, r.id, length=length, text=r.text_stream.reset(r.view.tokens)))
        self._new_triggers(r, events)
        return True

    def cut(self, r, length: int, winners: list) -> None:
        """Cut row r back to `length` tokens: guides restored (checkpoints.py), then the host's
        inputs (`cut_inputs`)."""
        length = min(length, len(r.view.tokens))
        r.ck.cut(length, winners)
        r.seen_triggers = min(r.seen_triggers, len(r.view.triggers))
        r.final_triggers = min(r.final_triggers, len(r.view.triggers))
        self.cut_inputs(r, length)
        r.rollbacks += 1

    # -- the end ------------------------------------------------------------------------------
    def finish(self, r, reason: str, events: list, settle: bool = True) -> None:
        """The row ends — unless a guide still owed an answer settles it now and proposes a cut.
        On a host that polls, a row whose guides owe answers still running waits for them first
        (`r.settling`: no token, no column of its own; `poll` each step)."""
        if settle and self.polls and not r.view.polled:
            owed = [o for o in (g.owes(r.view) for g in r.guides) if o is not None]
            if owed:
                r.settling = (reason, owed)
                return
        if settle:
            proposals = proposals_of(r.guides, lambda g: g.settle(r.view))
            if proposals and self._resolve(r, proposals, events):
                if r.view.tokens and (r.view.tokens[-1] in self.engine.eos
                                      or r.view.tokens[-1] in r.spec.stop_ids):
                    self.cut(r, len(r.view.tokens) - 1, [])   # never continue after end-of-text
                r.stop = None
                return self._final(r, events)
            self._new_triggers(r, events)
        if r.stop is not None:
            events.append(Event(STOP, r.id, stop=r.stop))
        r.finish = reason
        events.append(self.finished(r))

    def poll(self, r, events: list) -> bool:
        """A settling row (see `finish`): once every owed answer landed, the last instant passed
        or the row was cancelled, it settles with what landed (and ends, or goes on after a
        cut); True then. False: still waiting."""
        reason, owed = r.settling
        v = r.view
        if not (all(t.result(0) is not None for tickets, _ in owed for t in tickets)
                or time.perf_counter() >= max(until for _, until in owed)
                or (v.cancelled is not None and v.cancelled.is_set())):
            return False
        r.settling = None
        v.polled = True
        try:
            self.finish(r, reason, events)
        finally:
            v.polled = False
        return True

    def fail(self, r, exc: Exception) -> None:
        """A guide (or the token source) failed: this row ends with the error."""
        r.finish = "error"
        if isinstance(exc, GroundcodeError):    # groundcode's own words (a server's answer)
            r.error = (str(exc).splitlines() or [""])[0]
        else:
            r.error = f"{type(exc).__name__}: {exc}".splitlines()[0]

    def cancel(self, r, reason: str = "cancelled") -> Event:
        """End a row now (cancel, deadline): no settle, its text is what was final."""
        r.finish = reason
        return self.finished(r)

    # -- text out -----------------------------------------------------------------------------
    def _new_triggers(self, r, events: list) -> None:
        trig = r.view.triggers
        while r.seen_triggers < len(trig):
            events.append(Event(TRIGGER, r.id, trigger=trig[r.seen_triggers]))
            r.seen_triggers += 1

    def _final(self, r, events: list) -> None:
        """Text no guide will take back: every token whose text ends at or before the smallest
        `final_upto`, and the triggers recorded up to it."""
        v = r.view
        f = min((g.final_upto(v) for g in r.finals), default=len(v.text))
        k = len(v.tokens) if f >= len(v.text) else bisect.bisect_right(v.ends, f)
        if k <= r.final_k:
            return
        text = "".join(r.final_stream.push(t) for t in v.tokens[r.final_k:k])
        r.final_k = k
        at = r.ck.trigger_at
        n = r.final_triggers
        while n < len(at) and at[n] <= k:
            n += 1
        new = tuple(v.triggers[r.final_triggers:n])
        r.final_triggers = n
        if text or new:
            events.append(Event(FINAL, r.id, text=text, triggers=new))

    def finished(self, r) -> Event:
        v = r.view
        cut = r.stop.cut if r.stop is not None else None
        detok = self.engine.detok
        end = None                                # a cut inside a token's text
        if r.finish in ("cancelled", "deadline", "error"):
            k = r.final_k                         # what was verified
        elif cut is None:
            k = len(v.tokens)
        else:   # whole tokens before the cut, then the (ASCII: a line start) piece up to it
            k, end = bisect.bisect_right(v.ends, cut), cut
        if r.finish != "error" and r.enders and r.spec.choose is None:   # (a teacher's text stays)
            # a row ended from outside (deadline, cancel, length) or by another guide's stop
            # ends where every guide can stand by its text: never inside a name the monitor
            # has not finished checking; text already streamed as final stays
            b = min(g.end_at(v, r.finish or "length") for g in r.enders)
            b = max(b, v.ends[r.final_k - 1] if r.final_k else 0)
            if b < (end if end is not None else (v.ends[k - 1] if k else 0)):
                k, end = bisect.bisect_right(v.ends, b), None
        text = detok.decode(v.tokens[:k])
        if end is not None:
            text += v.text[(v.ends[k - 1] if k else 0): end]
        r.output = RowOutput(text, list(v.tokens), r.finish or "length", v.triggers, r.rollbacks,
                             r.constrained, r.stop, r.id, r.error, r.drafted, r.draft_accepted)
        return Event(FINISHED, r.id, output=r.output)
