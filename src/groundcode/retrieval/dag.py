"""Documentation-augmented generation with selective retrieval (DAG, DAG++; paper §3-4).

    loop = DagLoop(generator, index, ApiRetriever(index, k=1, precision=0.5), DagConfig("dagpp"))
    results = loop.run([DagItem(ctx, namespace="s3", receiver="client", target=None, key="t1")])

For each item: (1) generate one statement (greedy; the engine stops at the statement's end);
(2) extract the API invocation on `receiver` (tolerant of partial code); (3) decide whether to
retrieve — the trigger:
    never       the base model
    always      DAG
    index       the invoked name is not in the API index (for the namespace)
    confidence  the API invocation confidence — the minimum probability the model gave the
                name's tokens (teacher-forced, unconstrained) — is below `threshold` (0.8)
    dagpp       index or confidence (DAG++)
(4) query the index with the API-relevant words only (name and keyword names, never the
prompt), (5) format the retrieved entries in one of the paper's designs as a docstring placed
before the prompt within `budget_tokens` (a PromptBlock: the model sees it, the analyzer never
does), (6) regenerate. The result says which trigger fired ("index", "confidence",
"index+confidence", "always" or None) and what was retrieved.
Not here: the index (api_index.py), the formats (augmentation.py), the metric (evaluation/).
Test: tests/test_dag.py.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from .augmentation import DESIGNS, augmentation, fit_budget
from .invocation import extract_invocation, query_text

TRIGGERS = ("never", "always", "index", "confidence", "dagpp")


@dataclass
class DagConfig:
    trigger: str = "dagpp"          # never | always | index | confidence | dagpp
    threshold: float = 0.8          # confidence trigger: retrieve when min name-token prob < this
    design: str = "desc+spec"       # name | desc | spec | desc+spec | full
    budget_tokens: int = 512        # the augmentation's share of the prompt
    max_new_tokens: int = 64        # per pass (one statement)

    def __post_init__(self):
        if self.trigger not in TRIGGERS:
            raise ValueError(f"unknown trigger {self.trigger!r} (one of {', '.join(TRIGGERS)})")
        if self.design not in DESIGNS:
            raise ValueError(f"unknown design {self.design!r} (one of {', '.join(DESIGNS)})")


@dataclass
class DagItem:
    context: object                 # CodeContext (what the analyzer sees)
    namespace: str | None = None    # where the API lives (the client's service)
    receiver: str = "client"        # whose invocation to extract
    target: str | None = None       # qualname of the right API (benchmarks: precision control)
    key: str = ""                   # seeds the retriever's coin (the task id)


@dataclass
class DagResult:
    completion: str                 # the final completion
    first: str                      # the first pass's completion
    fired: str | None               # which trigger fired; None: no retrieval
    name: str                       # the API name of the first pass ("" if none)
    in_index: bool
    confidence: float               # min probability over the name's tokens (0 without a name)
    retrieved: list = field(default_factory=list)   # qualnames
    augmentation_tokens: int = 0
    seconds: float = 0.0
    triggers: list = field(default_factory=list)    # monitor triggers of the final pass

    def to_json(self) -> dict:
        d = asdict(self)
        d["triggers"] = [t.to_json() if hasattr(t, "to_json") else t for t in self.triggers]
        return d


def decide(trigger: str, in_index: bool, confidence: float, threshold: float) -> str | None:
    """Which trigger fires (None = no retrieval). Pure."""
    if trigger == "never":
        return None
    if trigger == "always":
        return "always"
    missing = not in_index
    unsure = confidence < threshold
    if trigger == "index":
        return "index" if missing else None
    if trigger == "confidence":
        return "confidence" if unsure else None
    if missing and unsure:
        return "index+confidence"
    return "index" if missing else ("confidence" if unsure else None)


def name_confidence(vocab_texts, tokens: list[int], probs: list[float], owed: str, name: str) -> float:
    """Minimum probability over the tokens that overlap the name (which starts after `owed`)."""
    if not name:
        return 0.0
    lo, hi = len(owed), len(owed) + len(name)
    pos, best = 0, 1.0
    for t, p in zip(tokens, probs):
        end = pos + len(vocab_texts[t])
        if end > lo and pos < hi:
            best = min(best, p)
        if end >= hi:
            break
        pos = end
    return best


class DagLoop:
    def __init__(self, generator, index, retriever, config: DagConfig | None = None,
                 cache: dict | None = None):
        self.gen = generator
        self.index = index
        self.retriever = retriever
        self.cfg = config or DagConfig()
        # (item key, augmentation) -> pass output: greedy passes are deterministic, so loops
        # sharing a generator (base, DAG, DAG++ of one benchmark run) may share them
        self.cache = {} if cache is None else cache

    def _pass(self, items: list[DagItem], blocks=None):
        """One greedy statement per item: [(RowOutput, prompt ids, owed text)]."""
        from ..config import SamplingConfig
        # one statement: StopAt("statement") via the sampling config (its cut keeps the newline,
        # which the results drop)
        sampling = SamplingConfig(max_new_tokens=self.cfg.max_new_tokens, stop="statement")
        keys = [(it.key, self.cfg.max_new_tokens, blocks[i][0].text if blocks else "")
                for i, it in enumerate(items)]
        todo = [i for i, k in enumerate(keys) if not keys[i][0] or k not in self.cache]
        if todo:
            ctxs = [items[i].context for i in todo]
            specs, row_ctxs = self.gen.specs(ctxs, sampling, 1, [blocks[i] for i in todo] if blocks else None)
            outs = {o.id: o for o in self.gen.engine.generate(specs, sampling)}
        fresh = {}
        for j, (i, s) in enumerate(zip(todo, specs if todo else [])):
            c = items[i].context
            fresh[i] = (outs[(j, 0)], s.prompt_ids, (c.before + c.lead)[len(row_ctxs[j].before):])
            if keys[i][0]:
                self.cache[keys[i]] = fresh[i]
        return [fresh[i] if i in fresh else self.cache[k] for i, k in enumerate(keys)]

    def _room(self) -> int:
        """Tokens the augmentation may take: our budget, within the prompt builder's room for
        blocks (a block that does not fit there would be dropped whole)."""
        pb = self.gen.prompts
        budget = max(16, pb.context_length - self.cfg.max_new_tokens - 1)
        return max(0, min(self.cfg.budget_tokens, pb.config.block_tokens, budget // 2) - 1)

    def run(self, items: list[DagItem]) -> list[DagResult]:
        from ..decoding.prompt import PromptBlock
        t0 = time.perf_counter()
        first = self._pass(items)
        results: list[DagResult] = []
        again: list[int] = []
        blocks: list[list] = []
        texts = self.gen.vocab.texts
        for i, (it, (out, prompt_ids, owed)) in enumerate(zip(items, first)):
            text = out.completion[len(owed):].rstrip("\r\n")   # what follows the prompt
            code = it.receiver + "." + text if it.receiver else text
            inv = extract_invocation(code, receiver=it.receiver)
            name = inv.name if inv else ""
            in_index = bool(name) and self.index.exists(name, it.namespace)
            conf = 0.0
            if name and self.cfg.trigger in ("confidence", "dagpp"):
                probs = self.gen.engine.token_probabilities(prompt_ids, out.tokens)
                conf = name_confidence(texts, out.tokens, probs, owed, name)   # tokens hold owed
            fired = decide(self.cfg.trigger, in_index, conf, self.cfg.threshold)
            r = DagResult(text, text, fired, name, in_index, round(conf, 4), triggers=list(out.triggers))
            if fired:
                query = query_text(inv) if inv else ""
                entries = self.retriever.retrieve(query, it.namespace, it.target, it.key)
                block = fit_budget(augmentation(entries, self.cfg.design), self.gen.lm.tokenizer,
                                   self._room())
                r.retrieved = [e.qualname for e in entries]
                r.augmentation_tokens = len(self.gen.lm.tokenizer(block, add_special_tokens=False)["input_ids"]) \
                    if block else 0
                if block:
                    again.append(i)
                    blocks.append([PromptBlock(block, "apidoc:" + ",".join(r.retrieved))])
            results.append(r)
        if again:
            second = self._pass([items[i] for i in again], blocks)
            for i, (out, _, owed) in zip(again, second):
                results[i].completion = out.completion[len(owed):].rstrip("\r\n")
                results[i].triggers = list(out.triggers)
        dt = (time.perf_counter() - t0) / max(1, len(items))
        for r in results:
            r.seconds = round(dt, 4)
        return results
