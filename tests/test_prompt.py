"""Prompts apart from contexts: FIM with the tokenizer's own tokens, context blocks under a
budget, the window cap, token healing, and the analyzer never seeing any of it; completion text
decoded by the tokenizer (non-ASCII)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from groundcode.analysis.base import Analysis
from groundcode.api import Generator, function_context
from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
from groundcode.context import CodeContext
from groundcode.decoding.engine import TOKEN, Engine, RowSpec
from groundcode.decoding.guides.base import Guide
from groundcode.decoding.guides.heal import agreeing
from groundcode.decoding.prompt import PromptBlock, PromptBuilder, detect_fim
from groundcode.decoding.vocab import VocabIndex
from groundcode.models.load import LoadedModel

from fake_analyzer import FakeBase
from scripted import ScriptedLM, planted


def _text(tok, ids):
    return tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _cursor_ctx(before, after):
    return CodeContext(path="x.py", repo=".", before=before, after=after, kind="cursor")


def test_fim_prompt_uses_the_tokenizers_own_tokens(tiny_lm):
    tok = tiny_lm.tokenizer
    b = PromptBuilder(tok, 1024)
    ctx = _cursor_ctx("def f(x):\n    return x + ", "\n\nprint(f(1))\n")
    p = b.build(ctx, 16)
    assert p.fim and p.owed == " "
    assert _text(tok, p.ids) == "<fim_prefix>def f(x):\n    return x +<fim_suffix>\n\nprint(f(1))\n<fim_middle>"
    assert tok.convert_tokens_to_ids("<fim_prefix>") in p.stop_ids
    # function bodies and `--fim off` stay plain
    assert not PromptBuilder(tok, 1024, PromptConfig(fim="off")).build(ctx, 16).fim


def test_fim_tokens_detected_per_tokenizer_family():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    specials = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>"]
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.train_from_iterator(["def f(x):\n    return x\n"] * 4,
                          trainers.BpeTrainer(vocab_size=300, special_tokens=specials, show_progress=False))
    qwen_like = PreTrainedTokenizerFast(tokenizer_object=t, eos_token="<|endoftext|>")
    f = detect_fim(qwen_like)
    vocab = qwen_like.get_vocab()
    assert (f.prefix, f.suffix, f.middle) == (vocab["<|fim_prefix|>"], vocab["<|fim_suffix|>"], vocab["<|fim_middle|>"])
    assert vocab["<|fim_pad|>"] in f.ends
    t2 = Tokenizer(models.BPE())
    t2.train_from_iterator(["x = 1\n"] * 4, trainers.BpeTrainer(vocab_size=100, special_tokens=["<eos>"],
                                                                 show_progress=False))
    assert detect_fim(PreTrainedTokenizerFast(tokenizer_object=t2, eos_token="<eos>")) is None


def test_window_cap_keeps_the_newest_whole_lines_and_blocks_fit_their_budget(tiny_lm):
    tok = tiny_lm.tokenizer
    before = "".join(f"value_{k} = compute({k})\n" for k in range(200))
    b = PromptBuilder(tok, 120, PromptConfig(block_tokens=30))
    blocks = [PromptBlock("# small block\n", "a"), PromptBlock("# " + "word " * 80 + "\n", "b"),
              PromptBlock("# another\n", "c")]
    p = b.build(_cursor_ctx(before, ""), 40, blocks)
    assert len(p.ids) <= 120 - 40 - 1 and p.truncated
    text = _text(tok, p.ids)
    assert [x.source for x in p.blocks] == ["a", "c"] and p.dropped_blocks == 1
    assert text.startswith("# small block\n# another\n")
    rest = text[len("# small block\n# another\n"):]
    assert before.rstrip().endswith(rest) and rest.startswith("value_")   # whole lines, newest kept
    capped = PromptBuilder(tok, 120, PromptConfig(max_prompt_tokens=30)).build(_cursor_ctx(before, ""), 40)
    assert len(capped.ids) <= 30 and before.rstrip().endswith(_text(tok, capped.ids))


def test_token_healing_backs_up_over_the_line_break_and_indentation(tiny_lm):
    # Tokenizers merge a newline with the next line's indentation (SmolLM2: "\n" + 7 spaces,
    # then " return"): a prompt ending in a bare newline token makes the model write nonsense,
    # so the prompt gives back all trailing whitespace and the heal mask re-writes it.
    tok = tiny_lm.tokenizer
    ctx = CodeContext(path="x.py", repo=".", before="class A:\n    def f(self):\n", lead="        ",
                      stop_indent=4, kind="body")
    p = PromptBuilder(tok, 1024).build(ctx, 16)
    assert p.owed == "\n        " and not p.fim
    assert _text(tok, p.ids) == "class A:\n    def f(self):"
    row = ctx.continued(p.owed)
    assert row.before == "class A:\n    def f(self):" and not row.starts_at_line
    assert ctx.insertion(row, "\n        return 1\n") == "        return 1\n"
    # without healing the prompt keeps the indentation and the rows start after it
    q = PromptBuilder(tok, 1024, PromptConfig(heal=False)).build(ctx, 16)
    assert q.owed == "" and _text(tok, q.ids).endswith("\n        ")
    row = ctx.continued(q.owed)
    assert row.before.endswith("\n        ") and not row.starts_at_line
    assert ctx.insertion(row, "return 1\n") == "        return 1\n"


def test_a_cursor_inside_a_word_gives_the_last_token_back(tiny_lm):
    # Most keystrokes in an editor end inside a name (`return s|`, `values.a|`): a prompt ending
    # in the token ` s` makes the model treat `s` as a whole name (SmolLM2 wrote
    # `s.latest_update()` there). The prompt gives the word's last token back instead and the
    # heal mask makes the row start with it, so the model picks ` self` (or `append`) itself.
    tok = tiny_lm.tokenizer
    b = PromptBuilder(tok, 1024)
    for before, prompt_end in (("class A:\n    def f(self):\n        return s", "        return"),
                               ("x = values.ap", "x = values."), ("print(undefined_na", None)):
        ctx = _cursor_ctx(before, "")
        p = b.build(ctx, 16)
        ids = tok(before, add_special_tokens=False)["input_ids"]
        last = _text(tok, ids[-1:])                            # the word's last token, and the
        assert p.owed.endswith(last) and not p.owed[: -len(last)].strip()   # space before it
        assert _text(tok, p.ids) == before[: len(before) - len(p.owed)]
        assert prompt_end is None or _text(tok, p.ids).endswith(prompt_end)
        row = ctx.continued(p.owed)
        assert row.before + p.owed == before
        assert ctx.insertion(row, p.owed + "xyz") == "xyz"      # what is shown starts at the cursor
    # after whitespace, or with healing off, the prompt is the text as is
    assert b.build(_cursor_ctx("return s ", ""), 16).owed == " "
    q = PromptBuilder(tok, 1024, PromptConfig(heal=False)).build(_cursor_ctx("return s", ""), 16)
    assert q.owed == "" and _text(tok, q.ids) == "return s"
    # a text that is one token is not given back (the prompt would be empty)
    assert b.build(_cursor_ctx("x", ""), 16).owed == ""


def test_heal_mask_allows_exactly_the_tokens_that_agree(tiny_lm):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    for rest in ("        ", "    ", " ", "\n    "):
        got = set(agreeing(vocab).ids(rest).tolist())
        # a prefix of the owed text, or all of it and then anything but more indentation
        want = {i for i, t in enumerate(vocab.texts) if t and (rest.startswith(t) or t.startswith(rest)
                and (len(t) == len(rest) or t[len(rest)] not in " \t"))}
        assert got == want, rest


def test_heal_never_over_indents():
    # Regression: a token that starts with the owed indentation and goes on with more spaces
    # (`"          x"` after 8 owed spaces) was allowed; the body then came out over-indented.
    texts = ["", "    ", "        ", "          x", "         ", "        return", "        \n",
             "\n", "\n    ", "\n        if", "x"]
    vocab = VocabIndex(texts)
    got = {texts[i] for i in agreeing(vocab).ids("        ").tolist()}
    assert got == {"    ", "        ", "        return", "        \n"}
    # owed text that ends in a line break leaves the next line's indentation to the model
    got = {texts[i] for i in agreeing(vocab).ids("\n").tolist()}
    assert got == {"\n", "\n    ", "\n        if"}


def test_generated_body_starts_with_its_indentation(tiny_lm, shop_repo):
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.last", shop_repo)
    gen = Generator(tiny_lm, MonitorConfig(enabled=False))
    out = gen.run([ctx], SamplingConfig(max_new_tokens=12))[0][0]
    assert out.completion.startswith(ctx.lead) and ctx.lead == "        "


class _Recorder(FakeBase):
    """An analyzer that records the code it is shown and knows Registry's members."""

    def __init__(self):
        self.codes = []

    def prewarm(self, at):
        self.codes.append(at.code)

    def members(self, code, path, line, column, *, receiver, cache_key):
        self.codes.append(code)
        return Analysis(receiver, frozenset({"latest_update", "register", "size", "registry", "owner"}))



def test_prompt_additions_never_reach_the_analyzer(tiny_lm, shop_repo):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    rules = planted("        return self.registry.latest()\n    def other(self):\n")
    lm = LoadedModel(ScriptedLM(tiny_lm, vocab, rules), tiny_lm.tokenizer, "scripted", "cpu", "float32")
    gen = Generator(lm, MonitorConfig(enabled=True), prompt=PromptConfig(fim="on"))
    rec = _Recorder()
    gen.set_analyzer(shop_repo, rec)
    gen.block_sources.append(lambda ctx: [PromptBlock("# SECRET_SNIPPET = helper()\n", "snippet")])
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.last", shop_repo)
    p = gen.prompt(ctx, 60)
    assert p.fim and p.blocks and "SECRET_SNIPPET" in _text(tiny_lm.tokenizer, p.ids)
    out = gen.run([ctx], SamplingConfig(max_new_tokens=60))[0][0]
    assert out.completion == "        return self.registry.latest_update()\n", out
    real = (shop_repo / "shop" / "cart.py").read_text()
    assert rec.codes and len(rec.codes) >= 2
    for code in rec.codes:
        assert "SECRET" not in code and "<fim" not in code
    # what the analyzer saw at the trigger is the real file with the partial body spliced in
    assert ctx.before + "        return self.registry." + "\n" + ctx.after in rec.codes
    assert real.startswith(ctx.before)


class _Force(Guide):
    stateless = True     # a test double: what it records or latches survives cuts
    def __init__(self, ids):
        self.ids = ids

    def reset(self, row):
        row.force(self.ids)


def test_completion_text_is_decoded_by_the_tokenizer(tiny_lm):
    tok = tiny_lm.tokenizer
    vocab = VocabIndex.for_tokenizer(tok)
    text = 's = "héllo wörld ✓ 日本"  # ça va, naïve\n'
    ids = tok(text, add_special_tokens=False)["input_ids"]
    joined = "".join(vocab.texts[i] for i in ids)
    assert joined != text                      # per-token texts cannot spell it
    eng = Engine(tiny_lm.model, tok, vocab)
    events = []
    out = eng.generate([RowSpec(tok("x = 1\n", add_special_tokens=False)["input_ids"], guides=[_Force(ids)])],
                       SamplingConfig(max_new_tokens=len(ids)), on_event=events.append)[0]
    assert out.tokens == ids and out.completion == text
    assert "".join(e.text for e in events if e.kind == TOKEN) == text   # streamed: same text
    assert np.all([e.text != "\ufffd" for e in events if e.kind == TOKEN])


def test_a_truncated_prefix_keeps_its_first_line_while_the_text_grows_a_little(tiny_lm):
    # the next keystroke must find the earlier prompt as its prefix (the session's prefix cache)
    from groundcode.config import PromptConfig
    from groundcode.context import CodeContext
    from groundcode.decoding.prompt import PromptBuilder
    b = PromptBuilder(tiny_lm.tokenizer, 4096, PromptConfig(heal=False, max_prompt_tokens=400))
    body = "".join(f"    value_{k} = compute(value_{k - 1}, {k})\n" for k in range(1, 200))
    base = "def f():\n" + body + "    total = value_1"
    prompts = [b.build(CodeContext(path="m.py", repo=".", before=base + "9" * k), 16).ids
               for k in range(0, 12)]
    assert all(len(p) <= 400 - 16 for p in prompts)
    firsts = {tiny_lm.tokenizer.decode(p[:8]) for p in prompts}
    assert len(firsts) <= 2                           # the start moved at most once
    same = sum(q[: len(p) - 3] == p[: len(p) - 3] for p, q in zip(prompts, prompts[1:]))
    assert same >= len(prompts) - 2                   # consecutive prompts share all but the end
