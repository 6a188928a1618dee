"""Prompts for one model: plain or fill-in-the-middle, with prepended context blocks, capped to
the model's trained window, ending where token healing can take over. Knows no analyzer.

    builder = PromptBuilder(tokenizer, context_length, PromptConfig())
    p = builder.build(ctx, max_new_tokens, blocks=[PromptBlock("# from utils.py\\n...", "snippet")])
    p.ids          # prompt token ids for the engine
    p.owed         # text the completion must start with (the backed-up whitespace): Heal(p.owed)
    ctx.continued(p.owed)    # the context the engine's rows (and so the analyzer) see

Layout (PSM for FIM, with the tokenizer's own FIM tokens: StarCoder/SmolLM `<fim_prefix>`,
Qwen `<|fim_prefix|>`, CodeLlama `<PRE>`):
    plain   blocks + prefix
    fim     <prefix-token> blocks + prefix <suffix-token> suffix <middle-token>
The prefix is `before + lead` minus its trailing whitespace, line break included (token
healing: tokenizers merge a newline with the next line's indentation, or the indentation with
the next word — SmolLM2 writes "\n" + 7 spaces then " return"; a prompt ending in a bare
newline or in spaces makes the model continue from a split it never saw in training. The model
picks the tokens itself under a mask that keeps the removed text; one rule for every tokenizer).
A prefix that ends inside a word (the cursor mid-name, as at most keystrokes in an editor) gives
back its last token the same way: `return s` prompted as is makes the model write `s` as a
whole name (`s.latest_update()`); healed, it picks ` self` under the mask.
Budget: the window minus `max_new_tokens` (at most `max_prompt_tokens` if set); blocks get at most `block_tokens` (whole blocks, in
the order given), the FIM suffix at most `suffix_tokens` (cut at a line end), the prefix the
rest (its oldest lines dropped first). The analyzer never sees any of this: guides read the
`CodeContext`, the real file.
Not here: contexts (groundcode/context.py), the heal mask (guides/heal.py). Test:
tests/test_prompt.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import PromptConfig
from ..errors import GroundcodeError

FIM_STYLES = (("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
              ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
              ("<PRE>", "<SUF>", "<MID>"), ("▁<PRE>", "▁<SUF>", "▁<MID>"))
# Tokens that end a FIM middle besides eos (pad, file and repo separators, CodeLlama's EOT).
FIM_ENDS = ("<fim_pad>", "<|fim_pad|>", "<file_sep>", "<|file_sep|>", "<|repo_name|>",
            "<reponame>", "<filename>", "<EOT>", "▁<EOT>", "<|endoftext|>")


@dataclass(frozen=True)
class FimTokens:
    prefix: int
    suffix: int
    middle: int
    ends: frozenset            # ids that end the middle (besides eos)


def detect_fim(tokenizer) -> FimTokens | None:
    """The tokenizer's own FIM tokens, or None when it has none."""
    vocab = tokenizer.get_vocab()
    for p, s, m in FIM_STYLES:
        if p in vocab and s in vocab and m in vocab:
            ends = frozenset(vocab[t] for t in FIM_ENDS + (p, s, m) if t in vocab)
            return FimTokens(vocab[p], vocab[s], vocab[m], ends)
    return None


@dataclass
class PromptBlock:
    """Context prepended to the prompt (a retrieved snippet, API docs): model-only text."""
    text: str
    source: str = ""           # where it came from, for reports ("snippet:utils.py", "apidoc:...")


@dataclass
class Prompt:
    ids: list[int]
    owed: str = ""             # the completion must start with this (token healing)
    fim: bool = False
    blocks: list[PromptBlock] = field(default_factory=list)   # blocks that fit the budget
    dropped_blocks: int = 0
    stop_ids: frozenset = frozenset()
    truncated: bool = False    # the prefix lost its oldest lines to the window


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


class PromptBuilder:
    def __init__(self, tokenizer, context_length: int, config: PromptConfig | None = None,
                 fim_trained: bool | None = None):
        """`fim_trained`: the model registry's word on FIM (False: its tokens exist but the
        model was not trained for it, so `auto` stays plain); None: unknown, trust the tokens."""
        self.tokenizer = tokenizer
        self.context_length = int(context_length)
        self.config = config or PromptConfig()
        self.fim_tokens = detect_fim(tokenizer)
        self.fim_trained = fim_trained
        if self.config.fim not in ("auto", "on", "off"):
            raise GroundcodeError(f"--fim must be auto, on or off (got {self.config.fim!r})")
        if self.config.fim == "on" and self.fim_tokens is None:
            raise GroundcodeError("--fim on: this model's tokenizer has no fill-in-the-middle tokens")

    def use_fim(self, ctx) -> bool:
        mode = self.config.fim
        if self.fim_tokens is None or mode == "off" or (mode == "auto" and self.fim_trained is False):
            return False
        return mode == "on" or (ctx.kind == "cursor" and bool(ctx.after.strip()))

    def _enc(self, text: str) -> tuple[list[int], list | None]:
        if not text:
            return [], []
        try:
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            return list(enc["input_ids"]), list(enc["offset_mapping"])
        except (NotImplementedError, ValueError):   # slow tokenizers have no offsets
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]), None

    def _last_token_start(self, text: str) -> int:
        """Where the token that ends `text` starts (the end of the one before it), tokenized as
        the prompt is: a cursor inside a word gives that token back, so the model picks how
        the word goes on (`return s` → ` self`, not `s` then `.`). Only the last line is
        encoded (a token never spans a line and the text before it); len(text): unknown (a
        slow tokenizer without offsets), and no more than that line is given back."""
        j = text.rfind("\n") + 1
        ids, offs = self._enc(text[j:])
        if not offs or (len(offs) < 2 and j == 0):
            return len(text)
        return j + offs[-2][1] if len(offs) >= 2 else j

    TAIL_STEP = 128     # the prefix's start moves in steps of this many tokens (see _tail)

    def _tail(self, text: str, budget: int) -> tuple[list[int], bool]:
        """Token ids of the end of `text` within `budget`, starting at a line start if possible.

        The cut is rounded up to a multiple of TAIL_STEP tokens of overflow, so that a text that
        grows by a few tokens at its end (the next keystroke) keeps the same first line — and
        the session's prefix cache can reuse the whole earlier prompt — until the overflow
        crosses the next step (then the prompt is up to TAIL_STEP tokens shorter than the
        budget allows)."""
        ids, offs = self._enc(text)
        if len(ids) <= budget:
            return ids, False
        if offs:
            over = len(ids) - budget
            step = self.TAIL_STEP if budget > 2 * self.TAIL_STEP else 1
            c = offs[min(len(ids) - 1, -(-over // step) * step)][0]
            nl = text.find("\n", c)
            if nl >= 0:
                ids = self._enc(text[nl + 1:])[0]
        return ids[max(0, len(ids) - budget):] if budget > 0 else [], True

    def _head(self, text: str, budget: int) -> list[int]:
        """Token ids of the start of `text` within `budget`, ending at a line end if possible."""
        ids, offs = self._enc(text)
        if len(ids) <= budget:
            return ids
        if offs and budget > 0:
            nl = text.rfind("\n", 0, offs[budget][0])
            if nl >= 0:
                ids = self._enc(text[: nl + 1])[0]
        return ids[:budget] if budget > 0 else []

    def build(self, ctx, max_new_tokens: int, blocks=()) -> Prompt:
        cfg = self.config
        budget = max(16, self.context_length - max_new_tokens - 1)
        if cfg.max_prompt_tokens > 0:
            budget = min(budget, max(16, cfg.max_prompt_tokens))
        text = ctx.before + ctx.lead
        prefix = text.rstrip() if cfg.heal else text
        if cfg.heal and prefix == text and text and _word_char(text[-1]):
            prefix = text[: self._last_token_start(text)].rstrip()   # never ending in a space either
        owed = text[len(prefix):]
        fim = self.use_fim(ctx)
        used = 3 if fim else 0
        suffix_ids: list[int] = []
        if fim:
            suffix_ids = self._head(ctx.after, min(cfg.suffix_tokens, budget // 4))
            used += len(suffix_ids)
        kept, dropped, block_ids = [], 0, []
        room = min(cfg.block_tokens, budget // 2)
        for b in blocks:
            t = b.text if b.text.endswith("\n") else b.text + "\n"
            ids = self._enc(t)[0]
            if len(block_ids) + len(ids) <= room:
                block_ids += ids
                kept.append(b)
            else:
                dropped += 1
        used += len(block_ids)
        prefix_ids, truncated = self._tail(prefix, budget - used)
        stop: frozenset = frozenset()
        if fim:
            f = self.fim_tokens
            ids = [f.prefix] + block_ids + prefix_ids + [f.suffix] + suffix_ids + [f.middle]
            stop = f.ends
        else:
            ids = block_ids + prefix_ids
        if not ids:
            start = self.tokenizer.bos_token_id
            ids = [start if start is not None else self.tokenizer.eos_token_id]
        return Prompt(ids, owed, fim, kept, dropped, stop, truncated)
