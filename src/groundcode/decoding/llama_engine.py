"""The engine on llama.cpp (`--dtype gguf`): the registry's GGUF file as shipped, its quantized
blocks run by llama.cpp's kernels (decoding/llama_cpp.py), under the same row step as the torch
engine: every guide, mask, verification, rollback and stop is step.py's, on logits this host
reads from llama.cpp one step at a time.

    engine = LlamaEngine(lm, vocab)             # api.Generator does this for lm.dtype == "gguf"
    batch = engine.batch()                      # LlamaBatch: engine.Batch's step, its own cache
    p = engine.new_prefill(ids); while not p.step(): ...   # a prompt into a sequence of its own
    batch.add(rows, p.logits, p.layers)         # layers: that sequence (n samples share its cells)

The KV cache is llama.cpp's, one numbered sequence per row; the torch engine's column surgery
becomes position arithmetic:
  - a row's next input goes at position `r.llama_pos` of its sequence;
  - a cut to `length` tokens forgets positions from prompt + length - 1 on and feeds token
    length - 1 again there (the torch engine masks the same inputs and re-feeds the same token);
  - rows of one prompt share its cells (llama_memory_seq_cp on a unified cache);
  - the prefix cache is sequence 0: the last prompt prefilled, whose longest common prefix a new
    prompt copies instead of computing (a keystroke's prompt is mostly the last one's).
What this host does not do: drafts (one token per row per forward), preempting a forward (a
lookahead row gives way between forwards), guides that need the model itself (DAG++'s
probabilities). Test: tests/test_llama_engine.py (against the torch engine, token for token).
"""
from __future__ import annotations

import threading
import time
import weakref

import torch

from ..analysis import working
from .detokenize import Detokenizer
from .engine import PREFILL_CHUNK, Batch, Engine
from .llama_cpp import BATCH
from .rows import Row
from .step import RowStep

KEPT = 0              # the sequence that keeps the last prompt (the prefix cache)
WIDE = 8              # a forward of this many tokens or more (a prefill) keeps every thread while an
                      # analyzer works: its operations are long, so a descheduled thread costs it
                      # little; on one thread fewer a line end's prefill took 37 against 27 ms a
                      # token (qwen, the editor; docs/EDITORS.md, session 38)


class _Seq:
    """A sequence of llama.cpp's cache owned by one prefill, then one row: released (its cells
    forgotten, its number free again) by `release()` or when nothing refers to it any more."""

    def __init__(self, engine: "LlamaEngine", sid: int, length: int = 0):
        self.id, self.length = sid, length
        self._fin = weakref.finalize(self, engine._release, sid)

    def release(self) -> None:
        self._fin()


class LlamaEngine:
    remote = False
    multi_token = False              # one token per row per forward:
    drafts = False                   # no drafts, so no lookahead rows (session.py)
    can_preempt = False
    device = "cpu"

    def __init__(self, lm, vocab, runner=None, max_rows: int = 16):
        self.lm, self.tokenizer, self.vocab = lm, lm.tokenizer, vocab
        self.detok = Detokenizer(self.tokenizer)
        ids = self.tokenizer.get_vocab()
        eos = {self.tokenizer.eos_token_id} | {ids.get(t) for t in lm.template.stop_tokens}
        self.eos = {e for e in eos if e is not None}
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else min(self.eos)
        self.width = vocab.size
        self.max_rows = max_rows
        # sequences: the kept prompt, and a few per row (sessions sharing this engine, a prefill
        # under way, lookahead rows); a unified cache costs nothing per sequence
        self.runner = runner if runner is not None else lm.model.runner(n_seq=min(256, 4 * max_rows + 1))
        self._lock = threading.RLock()       # one llama.cpp context: one call at a time
        self._free = list(range(self.runner.n_seq - 1, KEPT, -1))
        self._kept: list[int] = []           # the tokens sequence KEPT holds
        self._kept_from = None               # weakref to the sequence KEPT shares them with
        self.threads = self.runner.threads   # the follower's count (set_threads); the runner's
                                             # own `threads` is the count llama.cpp runs with now
        from ..models.threads import override
        self.steady = override() or self.runner.threads   # a reproducible prefill's count

    # -- the engine's shape: engine.Engine's own methods, over this engine's batch and prefill --
    row, prefill, stream, generate = Engine.row, Engine.prefill, Engine.stream, Engine.generate

    def preemptible(self, check) -> None:
        """llama.cpp's forward is not abandoned midway: idle work gives way between forwards."""

    def batch(self, drafter=None) -> "LlamaBatch":
        return LlamaBatch(self)

    def new_prefill(self, prompt: list[int], prefix_cache=None, chunk: int = PREFILL_CHUNK,
                    reuse: bool = True) -> "LlamaPrefill":
        """`reuse=False` (a reproducible request) makes a request's numbers its own, whatever
        ran before it:
        - the kept prompt is not reused: a position's numbers depend on how its prompt was cut
          into batches (the TypeScript benchmark, qwen2.5-coder-0.5b: 3 of 5 probed tasks
          decoded differently in two runs);
        - the cache starts empty when no other sequence is in use (`fresh`): where earlier
          requests left their cells changed the numbers too (qwen, the held-out TypeScript
          recipe: a task decoded `) {` after 13 others and `&&` alone, with nothing reused);
        - the prompt is computed on a fixed thread count (`steady`: GROUNDCODE_THREADS, else
          the count at load), not the follower's: a 700-token prefill on 2 threads and on 1
          differ by up to 0.5 in a logit (qwen; one-token steps were the same)."""
        if not reuse:
            self.fresh()
        return LlamaPrefill(self, prompt, chunk, reuse)

    @property
    def cells(self) -> int | None:
        """The cache's cells, shared by every sequence (the scheduler admits jobs to fit)."""
        return getattr(self.runner, "n_ctx", None)

    def kept_cells(self) -> int:
        """Cells the kept prompt holds on its own: none while the sequence it was kept from
        still holds them."""
        with self._lock:
            src = self._kept_from() if self._kept_from is not None else None
            return 0 if src is not None and src._fin.alive else len(self._kept)

    def fresh(self) -> bool:
        """Empty llama.cpp's cache (and the kept prompt) when no sequence but KEPT is in use;
        whether it did."""
        with self._lock:
            if len(self._free) < self.runner.n_seq - 1:
                return False                 # a row or prefill holds cells: they stay
            self.runner.clear()
            self._kept, self._kept_from = [], None
            return True

    def token_probabilities(self, prompt_ids: list[int], tokens: list[int]) -> list[float]:
        """probabilities.token_probabilities on llama.cpp: the model's own probability of each
        token (DAG++'s confidence), in a sequence of its own (the kept prompt's prefix reused)."""
        if not tokens:
            return []
        ids, first = list(prompt_ids) + list(tokens), len(prompt_ids) - 1
        seq = self.new_seq()
        try:
            start = min(self.reuse(seq, ids), first)      # position `first` must be computed
            self.cut(seq, start)
            parts = []
            for a in range(start, len(ids) - 1, BATCH):
                part = ids[a: min(a + BATCH, len(ids) - 1)]
                wanted = [a + i >= first for i in range(len(part))]
                parts.append(self.decode(part, range(a, a + len(part)), [seq.id] * len(part), wanted))
        finally:
            seq.release()
        probs = torch.softmax(torch.cat(parts).float(), dim=-1)
        return probs.gather(1, torch.tensor(tokens).unsqueeze(1)).squeeze(1).tolist()

    def close(self) -> None:
        with self._lock:
            self.runner.close()

    # -- sequences ------------------------------------------------------------------------------
    def set_threads(self, n: int) -> None:
        """llama.cpp's thread count (the scheduler's follower sets it: the cores other processes
        leave free, models/threads.py)."""
        with self._lock:
            self.threads = int(n)
            self.runner.set_threads(self.threads)

    def decode(self, tokens, positions, seqs, wanted, steady: bool = False) -> torch.Tensor:
        """One llama_decode; on one thread fewer while an analyzer works in another process
        (analysis/working.py: llama.cpp's threads wait for each other at every operation, and
        one of them descheduled stalls the forward), unless it feeds `WIDE` tokens or more.
        `steady`: on `self.steady` threads."""
        with self._lock:
            if steady and self.steady:
                if self.runner.threads != self.steady:
                    self.runner.set_threads(self.steady)
            elif self.threads:
                n = max(1, self.threads - 1) if working.now() and len(tokens) < WIDE else self.threads
                if n != self.runner.threads:
                    self.runner.set_threads(n)
            out = self.runner.decode(tokens, positions, seqs, wanted)
        return torch.from_numpy(out[:, : self.width])

    def new_seq(self, copy_of: _Seq | None = None) -> _Seq:
        from ..errors import GroundcodeError
        with self._lock:
            if not self._free:
                raise GroundcodeError(f"llama.cpp: all {self.runner.n_seq - 1} sequences are in use")
            s = _Seq(self, self._free.pop())
            if copy_of is not None:
                self.runner.seq_cp(copy_of.id, s.id, copy_of.length)
                s.length = copy_of.length
            return s

    def _release(self, sid: int) -> None:
        with self._lock:
            if self.runner.ctx is not None:
                self.runner.seq_rm(sid, -1)
            self._free.append(sid)

    def cut(self, seq: _Seq, p0: int) -> None:
        with self._lock:
            self.runner.seq_rm(seq.id, p0)

    def reuse(self, seq: _Seq, prompt: list[int]) -> int:
        """Copy the kept prompt's longest common prefix with `prompt` into `seq` (at most all
        but its last token, whose logits are needed); the number of tokens copied."""
        with self._lock:
            n, kept = 0, self._kept
            limit = min(len(kept), len(prompt) - 1)
            while n < limit and kept[n] == prompt[n]:
                n += 1
            if n:
                self.runner.seq_cp(KEPT, seq.id, n)
            return n

    def forget_prompt(self) -> None:
        """Drop the kept prompt: the next prefill computes every token (benchmarks measure cold
        prefills so)."""
        with self._lock:
            self.runner.seq_rm(KEPT, -1)
            self._kept, self._kept_from = [], None

    def keep(self, seq: _Seq, prompt: list[int]) -> None:
        """Sequence KEPT becomes this prompt (shared cells: nothing is copied)."""
        with self._lock:
            self.runner.seq_rm(KEPT, -1)
            self.runner.seq_cp(seq.id, KEPT, len(prompt))
            self._kept = list(prompt)
            self._kept_from = weakref.ref(seq)


class LlamaPrefill:
    """One prompt into a new sequence, a chunk per `step()`; then `logits` [1, V] of its last
    position, `layers` the sequence (a row takes it), `cached` the tokens copied from the kept
    prompt."""

    def __init__(self, engine: LlamaEngine, prompt: list[int], chunk: int = PREFILL_CHUNK,
                 reuse: bool = True):
        self.engine, self.prompt = engine, list(prompt)
        self.chunk = max(1, min(int(chunk), BATCH))
        self.seq = engine.new_seq()
        self.done = self.cached = engine.reuse(self.seq, self.prompt) if reuse else 0
        self.steady = not reuse              # a reproducible prompt: on the steady thread count
        self.logits = None
        self.layers = None

    def drop(self) -> None:
        """A failed or abandoned prefill: its sequence is free again."""
        self.seq.release()

    def step(self) -> bool:
        eng, done, n = self.engine, self.done, len(self.prompt)
        if done < n:
            part = self.prompt[done: done + self.chunk]
            end = done + len(part)
            wanted = [False] * (len(part) - 1) + [end == n]
            out = eng.decode(part, range(done, end), [self.seq.id] * len(part), wanted, self.steady)
            if end == n:
                self.logits = out
            self.done = end
        if self.done < n:
            return False
        if self.layers is None:
            self.seq.length = n
            eng.keep(self.seq, self.prompt)
            self.layers = self.seq
        return True


class LlamaBatch(Batch):
    """The running rows on llama.cpp: engine.Batch's step (phases 1-4, unchanged) over logits
    this batch reads from llama.cpp; its own add, evict, cut and feed."""

    def __init__(self, engine: LlamaEngine, drafter=None):
        self.engine, self.drafter = engine, None
        self.rows: list[Row] = []
        self.logits: torch.Tensor | None = None
        self.rowstep = RowStep(engine, self._cut_columns, polls=True)

    @property
    def nbytes(self) -> int:
        return 0                        # llama.cpp's cache is allocated once, at load

    def add(self, rows: list[Row], logits: torch.Tensor, layers: _Seq) -> None:
        seq = layers
        for j, r in enumerate(rows):
            r.llama_seq = seq if j == 0 else self.engine.new_seq(copy_of=seq)
            r.llama_pos = seq.length
            r.view.index = len(self.rows)
            self.rows.append(r)
        new = logits.expand(len(rows), -1)
        self.logits = new.clone() if self.logits is None else torch.cat([self.logits, new])

    def step(self) -> list:
        """engine.Batch's step with torch on one thread: its ops here are small, and torch's
        thread pool, spinning after a parallel op, would take the cores llama.cpp's next forward
        runs on (decode steps took twice as long on 2 cores)."""
        n = torch.get_num_threads()
        if n == 1:
            return super().step()
        torch.set_num_threads(1)
        try:
            return super().step()
        finally:
            torch.set_num_threads(n)

    def drop(self) -> None:
        """A failed batch (the scheduler starts a new one): every row's sequence is free again."""
        for r in self.rows:
            r.llama_seq.release()
        self.rows, self.logits = [], None

    def evict(self) -> list[Row]:
        gone = [r for r in self.rows if not r.live]
        if not gone:
            return gone
        for r in gone:
            r.llama_seq.release()
        keep = [i for i, r in enumerate(self.rows) if r.live]
        self.rows = [self.rows[i] for i in keep]
        self.logits = self.logits[keep] if keep else None
        for i, r in enumerate(self.rows):
            r.view.index = i
        return gone

    def _cut_columns(self, r: Row, length: int) -> None:
        """A cut: positions from prompt + length - 1 on are forgotten; token length - 1 (the
        prompt's last one when nothing stays) is fed again there."""
        p0 = len(r.spec.prompt_ids) + length - 1
        r.refeed = r.view.tokens[length - 1] if length else r.spec.prompt_ids[-1]
        if p0 < r.llama_pos:
            self.engine.cut(r.llama_seq, p0)
        r.llama_pos = p0

    def feed(self) -> None:
        """One input per row that goes on (its last token, or the one fed again after a cut),
        all rows in one llama_decode; a waiting row keeps its logits."""
        live = [(i, r) for i, r in enumerate(self.rows) if not r.waiting]
        if not live:
            time.sleep(0.002)               # every row waits on analysis: nothing to decode
            return
        toks, pos, seqs = [], [], []
        for _, r in live:
            if r.refeed is not None:
                toks.append(r.refeed)
                r.refeed = None
            else:
                toks.append(r.view.tokens[-1])
            pos.append(r.llama_pos)
            seqs.append(r.llama_seq.id)
            r.llama_pos += 1
        out = self.engine.decode(toks, pos, seqs, [True] * len(toks))
        if len(live) == len(self.rows):
            self.logits = out
        else:
            logits = self.logits.clone()
            logits[[i for i, _ in live]] = out
            self.logits = logits
