"""The decoding engine: one loop over a batch of rows with per-row guides, as a stream of events.
Knows no analyzer and no prompt format.

    engine = Engine(model, tokenizer, vocab)
    run = engine.stream([RowSpec(prompt_ids, context, guides, seed, id=...), ...], SamplingConfig())
    for ev in run:                  # Event(kind, row=<RowSpec.id>, ...)
        if ev.kind == TOKEN: print(ev.text, end="")       # newly final text, tokenizer-decoded
        if ev.kind == STOP: ev.stop.reason, ev.stop.payload
        if ev.kind == FINISHED: ev.output                 # RowOutput
        run.cancel(row_id)          # any time: that row finishes as "cancelled" at the next step
    outs = engine.generate(specs, sampling)             # the same, consumed: [RowOutput, ...]

Events: TOKEN (a token was accepted), TRIGGER (a guide recorded a trigger), ROLLBACK (the row
was cut back to `length` tokens; `text` is the text that stays), STOP (a guide ended the row:
`Stop(reason, cut, payload)`), FINISHED (always last for a row; `output.finish_reason` is eos,
length, stop or cancelled). Rows are named by `RowSpec.id` (default: their index).

Phases of the loop:
  1. prefill   distinct prompts once (rows with the same prompt, e.g. `n` samples, share it: the
               KV cache is expanded to them), left-padded, logits of the last position
  2. step      per row: a token queued by a guide (`row.force`) is taken as is; otherwise the
               scores shown to guides that read them (`logits`), the guides' masks (only
               constrained rows pay), all rows sampled at once, free samples
               that contain a dot verified (guide.check; resample that row under the returned
               mask); accept, advance guides, roll back or stop; events out
  3. feed      one new column per step for every row (finished rows feed a masked pad)

Rollback without copying the cache: a row cut back to L tokens gets the attention-mask columns
of its discarded inputs set to 0 and re-feeds token L-1; position ids are the running count of
unmasked columns, so the re-fed token lands at the right position. Other rows are untouched.
Not here: guides (guides/), prompts (prompt.py), masks from strings (vocab index), tensors for
masks (masking.py), output text (detokenize.py). Test: tests/test_engine.py.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import torch

from ..config import SamplingConfig
from .detokenize import Detokenizer
from .guides.base import Guide, RowView, Stop, TriggerRecord
from .masking import combine, keep_only
from .sampling import make_generators, sample_rows

TOKEN, TRIGGER, ROLLBACK, STOP, FINISHED = "token", "trigger", "rollback", "stop", "finished"


@dataclass
class RowSpec:
    prompt_ids: list[int]
    context: object = None              # what guides read (CodeContext); never the prompt
    guides: list[Guide] = field(default_factory=list)
    seed: int = 0
    id: object = None                   # the row's name in events (default: its index)
    stop_ids: frozenset = frozenset()   # extra end-of-text ids (e.g. FIM's pad / file separator)
    replay: list[int] | None = None     # teacher-force these tokens (guides still run, masks are
                                        # still built and applied; rollbacks ignored)


@dataclass
class RowOutput:
    completion: str
    tokens: list[int]
    finish_reason: str                  # "eos" | "length" | "stop" | "cancelled"
    triggers: list[TriggerRecord]
    rollbacks: int = 0
    constrained_steps: int = 0
    stop: Stop | None = None            # the guide's stop (reason, payload) when "stop"
    id: object = None


@dataclass
class Event:
    kind: str                           # TOKEN | TRIGGER | ROLLBACK | STOP | FINISHED
    row: object                         # RowSpec.id
    token: int | None = None            # TOKEN
    text: str = ""                      # TOKEN: newly final text; ROLLBACK: the text that stays
    length: int | None = None           # ROLLBACK: tokens kept
    trigger: TriggerRecord | None = None
    stop: Stop | None = None
    output: RowOutput | None = None     # FINISHED


class _Row:
    """Engine-side state of one row (the guides see `view`)."""

    def __init__(self, i: int, spec: RowSpec, vocab, detok: Detokenizer, last_prompt_col: int):
        self.spec = spec
        self.id = i if spec.id is None else spec.id
        self.view = RowView(index=i, context=spec.context, vocab=vocab)
        self.stream = detok.stream()
        self.fed_cols: list[int] = []   # fed_cols[k] = cache column where tokens[k] was fed
        self.last_prompt_col = last_prompt_col
        self.refeed: int | None = None  # token to feed again after a rollback
        self.finish: str | None = None
        self.stop: Stop | None = None
        self.rollbacks = 0
        self.constrained = 0
        self.seen_triggers = 0
        self.output: RowOutput | None = None
        self.scorers = [g for g in spec.guides if type(g).logits is not Guide.logits]


class Engine:
    def __init__(self, model, tokenizer, vocab):
        self.model = model
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.detok = Detokenizer(tokenizer)
        eos = {tokenizer.eos_token_id}
        cfg_eos = getattr(model.config, "eos_token_id", None)
        eos |= set(cfg_eos if isinstance(cfg_eos, (list, tuple)) else [cfg_eos])
        self.eos = {e for e in eos if e is not None}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)

    @property
    def device(self):
        return next(self.model.parameters()).device

    def stream(self, specs: list[RowSpec], sampling: SamplingConfig) -> "Decoding":
        return Decoding(self, specs, sampling)

    def generate(self, specs: list[RowSpec], sampling: SamplingConfig, on_event=None) -> list[RowOutput]:
        run = self.stream(specs, sampling)
        for ev in run:
            if on_event is not None:
                on_event(ev)
        return run.outputs

    def _forward(self, ids, attn, past):
        pos = (attn.sum(-1, keepdim=True) - 1).clamp(min=0) if past is not None else \
            (attn.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos,
                         past_key_values=past, use_cache=True)
        return out.logits[:, -1, :].float(), out.past_key_values

    def _prefill(self, prompts: list[list[int]]):
        """One forward over the distinct prompts; rows sharing a prompt get copies of its cache."""
        dev = self.device
        slot: dict[tuple, int] = {}
        which = [slot.setdefault(tuple(p), len(slot)) for p in prompts]
        distinct = list(slot)
        P = max(len(p) for p in distinct)
        ids = torch.full((len(distinct), P), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(distinct), P), dtype=torch.long)
        for i, p in enumerate(distinct):
            ids[i, P - len(p):] = torch.tensor(p, dtype=torch.long)
            attn[i, P - len(p):] = 1
        attn = attn.to(dev)
        logits, past = self._forward(ids.to(dev), attn, None)
        if len(distinct) < len(prompts):
            sel = torch.tensor(which, device=dev)
            logits, attn = logits.index_select(0, sel), attn.index_select(0, sel)
            past.batch_select_indices(sel)
        return logits, past, attn, len(distinct)


class Decoding:
    """One `Engine.stream` call in progress: an iterator of events; `cancel(row_id)` any time;
    `outputs` (RowOutput per spec, in order) once it is exhausted."""

    def __init__(self, engine: Engine, specs: list[RowSpec], sampling: SamplingConfig):
        self.engine, self.specs, self.sampling = engine, specs, sampling
        self.outputs: list[RowOutput] = []
        self.prefilled_rows = 0          # distinct prompts prefilled (rows sharing one count once)
        self._cancelled: set = set()
        self._events = self._loop()

    def __iter__(self):
        return self._events

    def __next__(self) -> Event:
        return next(self._events)

    def cancel(self, row_id) -> None:
        self._cancelled.add(row_id)

    @torch.inference_mode()
    def _loop(self):
        eng, sampling = self.engine, self.sampling
        dev, B, vocab = eng.device, len(self.specs), eng.vocab
        rows = [_Row(i, s, vocab, eng.detok, 0) for i, s in enumerate(self.specs)]
        for r in rows:                  # before the prefill: guides may start analyses now
            for g in r.spec.guides:
                g.reset(r.view)
        # -- 1. prefill -------------------------------------------------------------------------
        logits, past, attn, self.prefilled_rows = eng._prefill([s.prompt_ids for s in self.specs])
        for r in rows:
            r.last_prompt_col = attn.shape[1] - 1
        gens = make_generators([s.seed for s in self.specs], dev) if sampling.temperature > 0 else None
        T, top_p = sampling.temperature, sampling.top_p
        max_steps = 2 * sampling.max_new_tokens + 16   # rollbacks re-do steps; bound them
        for _ in range(max_steps):
            for r in rows:
                if r.finish is None and r.id in self._cancelled:
                    r.finish = "cancelled"
                    yield self._finished(r)
            if all(r.finish is not None for r in rows):
                break
            # -- 2. step ------------------------------------------------------------------------
            constrained = [False] * B
            for r in rows:
                if r.finish is None and r.scorers and not r.view.forced:
                    for g in r.scorers:             # guides that read the scores (tool tokens)
                        g.logits(r.view, logits[r.view.index])
                if r.finish is None and r.spec.guides and not r.view.forced:
                    allowed = combine(g.mask(r.view) for g in r.spec.guides)
                    if allowed is not None:
                        keep_only(logits[r.view.index], allowed)
                        constrained[r.view.index] = True
                        r.constrained += 1
            toks = sample_rows(logits, T, top_p, gens).tolist()   # the one host sync per step
            for r in rows:
                if r.finish is not None:
                    continue
                i, v, replay = r.view.index, r.view, r.spec.replay
                tok = toks[i]
                if v.forced:                        # queued by a guide: no sampling, no check
                    tok = v.forced.popleft()
                elif replay is not None:
                    if len(v.tokens) >= len(replay):
                        r.finish = "stop"
                        yield self._finished(r)
                        continue
                    tok = replay[len(v.tokens)]
                    if not constrained[i]:          # guides see the checks of generation (an
                        for g in r.spec.guides:     # audit counts them); the replay token stays
                            if g.check(v, tok) is not None:
                                break
                elif not constrained[i]:
                    for g in r.spec.guides:
                        m = g.check(v, tok)
                        if m is not None and len(m):
                            keep_only(logits[i], m)
                            r.constrained += 1
                            sub = [gens[i]] if gens else None
                            tok = int(sample_rows(logits[i:i + 1], T, top_p, sub)[0])
                            break
                # accept
                v.tokens.append(tok)
                v.text += vocab.texts[tok]
                v.ends.append(len(v.text))
                if tok in eng.eos or tok in r.spec.stop_ids:
                    back = self._settle(r)
                    if back is not None:         # an owed analysis undid a name: go on
                        yield from self._rolled_back(r, back, attn)
                        continue
                    r.finish = "eos"
                    yield from self._new_triggers(r)
                    yield self._finished(r)
                    continue
                yield Event(TOKEN, r.id, token=tok, text=r.stream.push(tok))
                back = None
                for g in r.spec.guides:
                    b = g.advance(v, tok)
                    if b is not None and back is None:
                        back = b
                yield from self._new_triggers(r)
                if back is not None and replay is None:
                    self._rollback(r, back, attn)
                    yield Event(ROLLBACK, r.id, length=back, text=r.stream.reset(v.tokens))
                else:
                    for g in r.spec.guides:
                        s = g.stop(v)
                        if s is not None:
                            back = self._settle(r)
                            if back is not None:
                                yield from self._rolled_back(r, back, attn)
                                break
                            r.stop = s if isinstance(s, Stop) else Stop("stop", cut=int(s))
                            r.finish = "stop"
                            yield Event(STOP, r.id, stop=r.stop)
                            break
                if r.finish is None and len(v.tokens) >= sampling.max_new_tokens:
                    back = self._settle(r)
                    if back is not None:
                        yield from self._rolled_back(r, back, attn)
                    else:
                        r.finish = "length"
                if r.finish is not None:
                    yield self._finished(r)
            if all(r.finish is not None for r in rows):
                break
            # -- 3. feed ------------------------------------------------------------------------
            col = attn.shape[1]
            nxt = torch.full((B, 1), eng.pad_id, dtype=torch.long)
            new = torch.zeros((B, 1), dtype=torch.long)
            for r in rows:
                if r.finish is not None:
                    continue
                i, v = r.view.index, r.view
                if r.refeed is not None:          # after a rollback to L: token L-1 again
                    nxt[i, 0] = r.refeed
                    r.refeed = None
                    if v.tokens:
                        r.fed_cols.append(col)
                    else:
                        r.last_prompt_col = col
                else:
                    nxt[i, 0] = v.tokens[-1]
                    r.fed_cols.append(col)
                new[i, 0] = 1
            attn = torch.cat([attn, new.to(dev)], dim=1)
            logits, past = eng._forward(nxt.to(dev), attn, past)
        for r in rows:
            if r.finish is None:
                r.finish = "length"
                yield self._finished(r)
        self.outputs = [r.output for r in rows]

    def _new_triggers(self, r: _Row):
        while r.seen_triggers < len(r.view.triggers):
            yield Event(TRIGGER, r.id, trigger=r.view.triggers[r.seen_triggers])
            r.seen_triggers += 1

    def _finished(self, r: _Row) -> Event:
        v = r.view
        cut = r.stop.cut if r.stop is not None else None
        if cut is None:
            text = self.engine.detok.decode(v.tokens)
        else:   # whole tokens before the cut, then the (ASCII: a line start) piece up to it
            k = bisect.bisect_right(v.ends, cut)
            text = self.engine.detok.decode(v.tokens[:k]) + v.text[(v.ends[k - 1] if k else 0): cut]
        r.output = RowOutput(text, list(v.tokens), r.finish or "length", v.triggers, r.rollbacks,
                             r.constrained, r.stop, r.id)
        return Event(FINISHED, r.id, output=r.output)

    def _settle(self, r: _Row) -> int | None:
        """The row is about to finish: a guide still owed an answer (speculative analysis)
        verifies the text now (Guide.settle) and may ask for a rollback (the row goes on).
        Replayed rows ask too (the answer is recorded) but are never rolled back."""
        for g in r.spec.guides:
            back = g.settle(r.view)
            if back is not None and r.spec.replay is None:
                return back
        return None

    def _rolled_back(self, r: _Row, back: int, attn: torch.Tensor):
        self._rollback(r, back, attn)
        yield from self._new_triggers(r)
        yield Event(ROLLBACK, r.id, length=back, text=r.stream.reset(r.view.tokens))

    def _rollback(self, r: _Row, length: int, attn: torch.Tensor) -> None:
        """Cut row r back to `length` tokens (see the module docstring)."""
        v = r.view
        i = v.index
        cols = r.fed_cols[max(length - 1, 0):]
        if length == 0:
            cols = cols + [r.last_prompt_col]
            r.refeed = r.spec.prompt_ids[-1]
        else:
            r.refeed = v.tokens[length - 1]
        if cols:
            attn[i, torch.tensor(cols, device=attn.device)] = 0
        del v.tokens[length:]
        del v.ends[length:]
        del r.fed_cols[max(length - 1, 0):]
        v.text = v.text[: v.ends[-1]] if v.ends else ""
        v.forced.clear()
        r.rollbacks += 1
        for g in r.spec.guides:
            g.rewind(v, length)
