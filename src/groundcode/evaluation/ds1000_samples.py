"""Generate DS-1000 completions with a model, with or without retrieved snippets in the prompt.

One record per problem and configuration is appended to a samples JSONL:
{task_id, config, run: {...}, prompt_tokens, retrieved: [snippet ids], samples: [{completion, ...}]};
a rerun skips (task_id, config) pairs already written, so an interrupted run resumes.
The model writes after the problem's prompt (which ends with `<code>` or `# SOLUTION START`) and
stops at `</code>`, `# SOLUTION END`, `END SOLUTION` or a closing fence (guides/stop_strings.py).
No analyzer runs here (monitor off): DS-1000 has no repository to ground on.

Not here: executing samples (ds1000.py + execution.py), retrieval (retrieval/), the prompt
layout (retrieval/prompt.py). Test: tests/test_ds1000.py (tiny model).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import GroundcodeError
from .ds1000 import STOP_STRINGS, Problem
from ..jsonl import append_jsonl, read_jsonl


@dataclass
class DS1000RunConfig:
    name: str = "plain"             # the configuration's name in samples, results and the summary
    model: str | None = None        # registry name, HF id or local path; None = the default model
    samples: int = 1                # completions per problem (pass@5 needs >= 5)
    temperature: float = 0.0        # 0 = greedy (one sample); DS-1000 / the paper use 0.2
    top_p: float = 0.95             # nucleus top-p when temperature > 0
    seed: int = 0
    max_new_tokens: int = 256
    batch: int = 4                  # problems per engine call
    retriever: str = "none"         # none | bm25-desc | bm25-code | bm25 | dense | ensemble | rrf
    k: int = 0                      # snippets prepended (0 = none)
    budget: int | None = None       # prompt token budget (default: context length - max_new_tokens)


def done(out: Path, config: str) -> set[str]:
    if not Path(out).exists():
        return set()
    return {r["task_id"] for r in read_jsonl(out) if r.get("config") == config}


def query_text(problem: Problem) -> str:
    """What retrieval searches with: the problem's prose (the prompt before its `A:` code part),
    or the whole prompt when it has none (Matplotlib's are commented code)."""
    head = problem.prompt.split("\nA:\n")[0]
    return head.removeprefix("Problem:").strip() or problem.prompt


def retrieval_prompter(retriever, k: int, generator, max_new_tokens: int, budget: int | None = None):
    """A prompter that prepends the k best snippets (reverse rank order), trimmed to the budget:
    `budget` tokens for blocks + prompt (default: the model's window minus max_new_tokens)."""
    from ..retrieval.snippet_prompt import snippet_blocks
    window = max(16, generator.lm.context_length - max_new_tokens - 1)
    total = min(budget, window) if budget else window
    cap = min(generator.prompts.config.block_tokens, window // 2)

    def prompter(q: Problem):
        hits = retriever.search(query_text(q), k)
        blocks, prompt, _ = snippet_blocks(q.prompt, [s for s, _ in hits], generator.lm.tokenizer, total, cap)
        return prompt, blocks, [s.id for s, _ in hits]
    return prompter


def generate(problems: list[Problem], out: Path, cfg: DS1000RunConfig, *, generator=None,
             prompter=None, retriever=None, progress=None) -> int:
    """Append samples for every problem not yet in `out` under cfg.name; returns how many ran.

    `prompter(problem) -> (prompt_text, [PromptBlock], retrieved_ids)` gives the prompt and the
    blocks the engine's prompt builder prepends (default: the problem's prompt, no blocks; with a
    `retriever` and cfg.k > 0, `retrieval_prompter`)."""
    from ..api import Generator
    from ..config import MonitorConfig, SamplingConfig
    from ..context import CodeContext
    from ..decoding.guides.stop_strings import StopStrings
    if cfg.temperature <= 0 and cfg.samples > 1:
        raise GroundcodeError("--samples > 1 needs --temperature > 0 (greedy gives one answer)")
    todo = [q for q in problems if q.task_id not in done(out, cfg.name)]
    if not todo:
        return 0
    gen = generator or Generator(model=cfg.model, monitor=MonitorConfig(enabled=False))
    if prompter is None and retriever is not None and cfg.k > 0:
        prompter = retrieval_prompter(retriever, cfg.k, gen, cfg.max_new_tokens, cfg.budget)
    prompter = prompter or (lambda q: (q.prompt, [], []))
    sampling = SamplingConfig(temperature=cfg.temperature, top_p=cfg.top_p if cfg.temperature > 0 else 1.0,
                              seed=cfg.seed, max_new_tokens=cfg.max_new_tokens)
    meta = {"config": cfg.name, "run": asdict(cfg) | {"model_name": gen.lm.name}}
    for k in range(0, len(todo), cfg.batch):
        chunk = todo[k:k + cfg.batch]
        built = [prompter(q) for q in chunk]          # (text, blocks, retrieved ids)
        ctxs = [CodeContext(path=Path("ds1000") / q.task_id, repo=Path("ds1000"), before=text,
                            scope=q.task_id) for q, (text, _, _) in zip(chunk, built)]
        specs, row_ctxs = gen.specs(ctxs, sampling, cfg.samples, blocks=[b for _, b, _ in built])
        for spec in specs:              # (a stop string in what the prompt gave back does not count)
            ci = spec.id[0]
            spec.guides.append(StopStrings(STOP_STRINGS, skip=len(ctxs[ci].before) - len(row_ctxs[ci].before)))
        t0 = time.perf_counter()
        outs = {o.id: o for o in gen.engine.generate(specs, sampling)}
        dt = round(time.perf_counter() - t0, 3)
        for i, q in enumerate(chunk):
            rows = [outs[(i, j)] for j in range(cfg.samples)]
            append_jsonl(out, {"task_id": q.task_id, **meta,
                               "prompt_tokens": len(specs[i * cfg.samples].prompt_ids),
                               "retrieved": built[i][2], "batch_seconds": dt,
                               "samples": [{"completion": ctxs[i].insertion(row_ctxs[i], o.completion),
                                            "tokens": len(o.tokens), "finish_reason": o.finish_reason,
                                            "seed": cfg.seed + j}
                                           for j, o in enumerate(rows)]})
        if progress:
            progress(len(chunk))
    return len(todo)


def reference_samples(problems: list[Problem], out: Path, name: str = "reference") -> int:
    """Write each problem's reference solution as its only sample (the harness sanity check)."""
    todo = [q for q in problems if q.task_id not in done(out, name)]
    for q in todo:
        append_jsonl(out, {"task_id": q.task_id, "config": name, "run": {"reference": True},
                           "prompt_tokens": 0, "retrieved": [],
                           "samples": [{"completion": q.reference, "finish_reason": "reference"}]})
    return len(todo)


def completions(samples_path: Path, config: str) -> dict[str, list[str]]:
    """{task_id: [completion, ...]} of one configuration."""
    return {r["task_id"]: [s["completion"] for s in r["samples"]]
            for r in read_jsonl(samples_path) if r.get("config") == config}
