"""Retrieved snippets as prompt blocks, trimmed to a token budget the way the paper does.

    blocks, prompt, report = snippet_blocks(prompt, ranked, tokenizer, budget)
    generator.prompt(ctx, max_new_tokens, blocks)     # the engine's PromptBuilder prepends them

Each snippet becomes one block: its description as `#` comment lines (its name when it has no
prose), then its code, then a blank line. Blocks come in reverse rank order: the best example
last, right before the prompt. When blocks + prompt exceed `budget` tokens the paper's order of
cuts applies: first descriptions (the lowest-ranked example's first, from its end), then code
(lowest-ranked first, whole lines from the end; a block with no code left is dropped), and
only then, minimally, the prompt itself (its oldest lines). `block_cap` is the most the
engine's PromptBuilder will take for blocks (PromptConfig.block_tokens, half its window).

Not here: choosing snippets (snippet_retriever.py), the prompt's assembly (decoding/prompt.py).
Test: tests/test_retrievers.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..decoding.prompt import PromptBlock
from .snippet import Snippet


@dataclass
class _Part:
    snippet: Snippet
    desc: list[str]        # description lines (comment text, without "# ")
    code: list[str]        # code lines

    def text(self) -> str:
        head = "".join(f"# {d}\n" for d in self.desc if d)
        body = "".join(ln + "\n" for ln in self.code)
        return head + body + "\n"


def _wrap(text: str, width: int = 96) -> list[str]:
    out, line = [], ""
    for w in text.split():
        if line and len(line) + 1 + len(w) > width:
            out.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return out + ([line] if line else [])


def snippet_blocks(prompt: str, ranked: list[Snippet], tokenizer, budget: int,
                   block_cap: int | None = None) -> tuple[list[PromptBlock], str, dict]:
    """(blocks in prompt order, the prompt — cut only if it alone exceeds `budget`, a report of
    the tokens cut from descriptions, code and the prompt)."""
    def n(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else 0

    parts = [_Part(s, _wrap(s.title()), s.code.rstrip("\n").splitlines()) for s in reversed(ranked)]
    report = {"retrieved": len(ranked), "description_tokens_cut": 0, "code_tokens_cut": 0,
              "prompt_tokens_cut": 0, "blocks_dropped": 0}
    p_tokens = n(prompt)
    room = budget - p_tokens
    if block_cap is not None:
        room = min(room, block_cap)
    sizes = [n(p.text()) for p in parts]

    def over() -> int:
        return sum(sizes) - max(room, 0)
    # 1. descriptions, lowest-ranked example (first in prompt order) first, words from the end
    for i, p in enumerate(parts):
        while over() > 0 and p.desc:
            before = sizes[i]
            words = " ".join(p.desc).split()
            cut = max(1, min(len(words), over()))          # at least one word per round
            p.desc = _wrap(" ".join(words[:-cut])) if cut < len(words) else []
            sizes[i] = n(p.text())
            report["description_tokens_cut"] += before - sizes[i]
    # 2. code, lowest-ranked first, whole lines from the end
    for i, p in enumerate(parts):
        while over() > 0 and p.code:
            before = sizes[i]
            p.code = p.code[:-1]
            sizes[i] = n(p.text()) if p.code else 0
            report["code_tokens_cut"] += before - sizes[i]
    kept = [p for p, sz in zip(parts, sizes) if p.code]
    report["blocks_dropped"] = len(parts) - len(kept)
    blocks = [PromptBlock(p.text(), source=f"snippet:{p.snippet.id}") for p in kept]
    # 3. the prompt, minimally: its oldest lines, only when it alone is over the budget
    if p_tokens > budget:
        lines = prompt.splitlines(keepends=True)
        while lines and n("".join(lines)) > budget:
            lines = lines[1:]
        report["prompt_tokens_cut"] = p_tokens - n("".join(lines))
        prompt = "".join(lines)
    report["blocks"] = len(blocks)
    report["block_tokens"] = sum(n(b.text) for b in blocks)
    return blocks, prompt, report
