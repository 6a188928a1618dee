"""A test double with a planted preference: a real tiny Llama whose last-position logits get a
large bonus for the token that continues a scripted text.

`ScriptedLM(lm, prompt_len_text, rules)`: `rules(generated_text) -> preferred continuation`
(or None for no preference). The generated text is rebuilt from the columns the attention mask
keeps, so engine rollbacks are seen exactly as the model would see them. One request at a time
(its prompt prefilled in chunks, maybe from a cached prefix, then its n rows), as the tests
that use it run.
"""
from __future__ import annotations

import re

import torch


class ScriptedLM(torch.nn.Module):
    one_token_steps = True      # the bonus goes to the last column only: the engine drafts nothing

    def __init__(self, lm, vocab, rules, bonus: float = 50.0):
        super().__init__()
        self.inner = lm.model
        self.config = lm.model.config
        self.vocab = vocab
        self.rules = rules
        self.bonus = bonus
        self._hist: torch.Tensor | None = None
        self._prompt_cols = 0
        self.preferred: list[str | None] = []

    def forward(self, input_ids, attention_mask, position_ids, past_key_values=None, use_cache=True):
        out = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, past_key_values=past_key_values, use_cache=True)
        if past_key_values is None:
            self._hist = input_ids.clone()
            self._prompt_cols = input_ids.shape[1]
        elif input_ids.shape[0] == 1 and int(position_ids[0, 0]) < self._hist.shape[1] and \
                attention_mask.shape[1] == int(position_ids[0, -1]) + 1:
            # a prefill that starts from a cached prefix (the session's prefix cache): the
            # cached columns are the start of an earlier prompt
            self._hist = torch.cat([self._hist[:1, : int(position_ids[0, 0])], input_ids], dim=1)
            self._prompt_cols = self._hist.shape[1]
        elif input_ids.shape[1] > 1 and input_ids.shape[0] == 1 and \
                int(position_ids[0, 0]) == self._hist.shape[1]:     # the next chunk of a prefill
            self._hist = torch.cat([self._hist, input_ids], dim=1)
            self._prompt_cols = self._hist.shape[1]
        else:
            if self._hist.shape[0] != input_ids.shape[0]:           # n samples share the prompt
                self._hist = self._hist.expand(input_ids.shape[0], -1)
            self._hist = torch.cat([self._hist, input_ids], dim=1)
        logits = out.logits.clone()
        for i in range(input_ids.shape[0]):
            cols = attention_mask[i, self._prompt_cols:].nonzero().flatten() + self._prompt_cols
            gen_ids = self._hist[i, cols].tolist()
            raw = "".join(self.vocab.texts[t] for t in gen_ids)
            text = self.seen(raw)
            want = self.rules(text)
            self.preferred.append(want)
            if want:
                # Every token that starts the preferred text gets a bonus growing with its
                # length, so that under a mask the longest allowed piece of it still wins.
                # At the first step, a smaller bonus also for the text after a line break: a
                # prompt that ends at a line start gives its newline back (token healing), and
                # the heal mask then keeps only tokens that start with it.
                for t, s in enumerate(self.vocab.texts):
                    if s and want.startswith(s):
                        logits[i, -1, t] += self.bonus * (1 + len(s) / 100)
                    elif s and not raw and ("\n" + want).startswith(s):
                        logits[i, -1, t] += self.bonus * (0.5 + len(s) / 100)
        out.logits = logits
        return out

    @staticmethod
    def seen(raw: str) -> str:
        """The generated text as the rules see it: without the newline a prompt that ends at a
        line start gives back (token healing), so scripts are written from the line start."""
        return raw[1:] if raw.startswith("\n") else raw


def _runs(s: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9_]+|[^A-Za-z0-9_]", s)


def planted(target: str):
    """Rules that write `target`. When the text diverges from it only in identifiers (the
    monitor changed a name), the model goes on with the rest of `target` after that name."""

    def rules(text: str):
        if target.startswith(text):
            return target[len(text):] or None
        g, t = _runs(text), _runs(target)
        for k, run in enumerate(g):
            if k >= len(t):
                return None
            if run == t[k]:
                continue
            ident = run[0].isalnum() or run[0] == "_"
            if not (ident and (t[k][0].isalnum() or t[k][0] == "_")):
                return None
            if k == len(g) - 1:  # a name in progress: finish the planted name if it is the
                # start of it, else go on with what follows the planted name
                if t[k].startswith(run):
                    return t[k][len(run):] + "".join(t[k + 1:])
                return "".join(t[k + 1:]) or None
        return "".join(t[len(g):]) or None
    return rules


def scripted_generator(tiny_lm, target: str):
    """A Generator (monitor on) over a ScriptedLM of `tiny_lm` planted to write `target`."""
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    from groundcode.decoding.vocab import VocabIndex
    from groundcode.models.load import LoadedModel
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    lm = LoadedModel(ScriptedLM(tiny_lm, vocab, planted(target)), tiny_lm.tokenizer, "scripted", "cpu",
                     "float32")
    return Generator(lm, MonitorConfig(enabled=True))


class DeadlineAt:
    """Rules for a ScriptedLM that make a deadline fall at a chosen point, deterministically
    (no guess at speed): the row writes `written` at the cursor (after the text its prompt owes:
    token healing), then, in the forward that follows, the request's deadline is moved to now,
    so the scheduler's next sweep ends the row "deadline" with `written` in it; the model would
    go on with `rest`. `stall=True` instead blocks that forward until the request's deadline
    plus the server's grace second has passed (a stalled session: the server ends the request
    itself). `bind(gen)` once the Generator exists; `fired` counts the cuts, `tokens` is the
    row's token count at the last one."""

    def __init__(self, written: str, rest: str = "", stall: bool = False):
        self.written, self.rest, self.stall = written, rest, stall
        self.gen = None
        self.fired = 0
        self.tokens = None

    def bind(self, gen):
        self.gen = gen
        return gen

    def _jobs(self) -> list:
        sched = self.gen.session._sched
        jobs = {id(r.job): r.job for r in sched.batch.rows if r.live}
        if sched._prefilling is not None:
            jobs[id(sched._prefilling)] = sched._prefilling
        return list(jobs.values())

    def __call__(self, text: str):
        jobs = self._jobs()
        owed = next((j.prompt.owed for j in jobs if j.prompt is not None), "")
        want = ScriptedLM.seen(owed) + self.written
        if text == want:
            self._cut(jobs)
            return self.rest or None
        if len(text) < len(want):                 # `written` first, whatever tokens follow it
            return want[len(text):] if want.startswith(text) else None
        full = want + self.rest
        return full[len(text):] if full.startswith(text) and len(text) < len(full) else None

    def _cut(self, jobs) -> None:
        import time
        self.fired += 1
        for job in jobs:
            self.tokens = max((len(r.view.tokens) for r in job.rows), default=None)
            if self.stall:
                until = job.stream.submitted + (job.request.deadline_s or 0) + 1.5
                while time.perf_counter() < until:
                    time.sleep(0.05)
                continue
            now = time.perf_counter()
            job.deadline = now
            for r in job.rows:
                if hasattr(r.view.cancelled, "deadline"):
                    r.view.cancelled.deadline = now


def scripted_lm(tiny_lm, rules):
    """A LoadedModel over a ScriptedLM of `tiny_lm` that follows `rules`."""
    from groundcode.decoding.vocab import VocabIndex
    from groundcode.models.load import LoadedModel
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    return LoadedModel(ScriptedLM(tiny_lm, vocab, rules), tiny_lm.tokenizer, "scripted", "cpu", "float32")
