"""The tool-token guide (decoding/guides/toolcall.py): <COMP> -> analyzer -> the model picks a
suggestion under the trie mask; terminals with children; empty suggestions; the p(<COMP>)
threshold; the zero-shot entropy trigger; composition with the dereference monitor."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis.base import Analysis
from groundcode.api import Generator, function_context
from groundcode.config import MonitorConfig, SamplingConfig, ToolConfig
from groundcode.decoding.vocab import VocabIndex
from groundcode.errors import GroundcodeError
from groundcode.models.load import LoadedModel
from groundcode.models.lora import tool_token_id

from fake_analyzer import FakeBase
from scripted import ScriptedLM, planted

FIX = Path(__file__).parent / "fixtures" / "updates"
TAIL = "\n    def other(self):\n"


def comp_rules(marked: str):
    """Rules for `planted(text)` where `marked` holds <COMP> marks: up to a mark the model writes
    only what comes before it (no token crosses it), so that <COMP> can come exactly there."""
    plain = marked.replace("<COMP>", "")
    marks, k = [], 0
    for part in marked.split("<COMP>")[:-1]:
        k += len(part)
        marks.append(k)
    base = planted(plain)

    def rules(text: str):
        if plain.startswith(text):
            ahead = [m for m in marks if m > len(text)]
            if ahead:
                return plain[len(text):ahead[0]]
        return base(text)
    return rules, plain, frozenset(marks)


class CompLM(ScriptedLM):
    """A scripted model that writes <COMP> at the marks of its planted text (once each)."""

    def __init__(self, lm, vocab, marked: str, comp_id: int, comp_bonus: float = 200.0):
        rules, self.plain, self.marks = comp_rules(marked)
        super().__init__(lm, vocab, rules)
        self.comp_id, self.comp_bonus = comp_id, comp_bonus

    def forward(self, input_ids, attention_mask, position_ids, past_key_values=None, use_cache=True):
        out = super().forward(input_ids, attention_mask, position_ids, past_key_values, use_cache)
        for i in range(input_ids.shape[0]):
            cols = attention_mask[i, self._prompt_cols:].nonzero().flatten() + self._prompt_cols
            ids = self._hist[i, cols].tolist()
            text = self.seen("".join(self.vocab.texts[t] for t in ids))
            if len(text) in self.marks and self.plain.startswith(text) and (not ids or ids[-1] != self.comp_id):
                out.logits[i, -1, self.comp_id] += self.comp_bonus
        return out


class FakeAnalyzer(FakeBase):
    """Answers every call with the same names; records where it was asked."""

    def __init__(self, names):
        self.names = frozenset(names)
        self.calls = []

    def members(self, code, path, line, column, *, receiver, cache_key):
        self.calls.append((code, line, column))
        return Analysis(receiver, self.names, 1.0, False, None if self.names else "empty")



def _gen(tiny_lm, marked, tools: ToolConfig, monitored=False, analyzer=None, bonus=200.0):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    model = CompLM(tiny_lm, vocab, marked, tool_token_id(tiny_lm.tokenizer), bonus)
    gen = Generator(LoadedModel(model, tiny_lm.tokenizer, "scripted", "cpu", "float32"),
                    MonitorConfig(enabled=monitored, deadline_s=60.0), tools=tools)  # never late here
    if analyzer is not None:
        gen.set_analyzer(FIX, analyzer)
    return gen


def _run(gen, n=60):
    ctx = function_context(FIX / "updates" / "registry.py", "UpdateRegistry.register_updates", FIX)
    try:
        return gen.run([ctx], SamplingConfig(max_new_tokens=n))[0][0]
    finally:
        gen.close()


def _tool(out):
    return [t for t in out.triggers if t.receiver in ("<COMP>", "<entropy>")]


FOR = "        for update in updates:\n"
GOOD = FOR + "            self._registered_updates.add(update)"


def test_comp_then_nonexistent_name_becomes_a_real_suggestion(tiny_lm):
    # The model writes <COMP> after `self.` and then prefers `_updates`, which UpdateRegistry
    # does not have: Jedi's suggestions (real analysis of the fixture) form the trie, the model
    # picks `_registered_updates` under its mask and goes on with `.add(update)`.
    plain = _run(_gen(tiny_lm, FOR + "            self._updates.add(update)\n" + TAIL, ToolConfig(enabled=True)))
    assert plain.completion.rstrip() == FOR + "            self._updates.add(update)" and _tool(plain) == []
    out = _run(_gen(tiny_lm, FOR + "            self.<COMP>_updates.add(update)\n" + TAIL, ToolConfig(enabled=True)))
    assert out.completion.rstrip() == GOOD
    assert "<COMP>" not in out.completion
    (t,) = _tool(out)
    assert t.receiver == "<COMP>" and t.chosen == "_registered_updates" and not t.failed_open
    assert t.candidates >= 4 and t.constrained


def test_terminal_with_children_lets_the_model_choose(tiny_lm):
    for want in ("add", "add_all"):
        fake = FakeAnalyzer({"add", "add_all", "update"})
        marked = FOR + f"            self._registered_updates.<COMP>{want}(update)\n" + TAIL
        out = _run(_gen(tiny_lm, marked, ToolConfig(enabled=True), analyzer=fake))
        assert out.completion.rstrip() == FOR + f"            self._registered_updates.{want}(update)"
        (t,) = _tool(out)
        assert t.chosen == want
        code, line, col = fake.calls[0]     # the real file, partial body at the cursor, no <COMP>
        assert code.splitlines()[line - 1][:col] == "            self._registered_updates."
        assert "<COMP>" not in code and "def count(self):" in code


def test_empty_suggestions_fail_open(tiny_lm):
    fake = FakeAnalyzer(set())
    out = _run(_gen(tiny_lm, FOR + "            self.<COMP>_updates.add(update)\n" + TAIL,
                    ToolConfig(enabled=True), analyzer=fake))
    assert out.completion.rstrip() == FOR + "            self._updates.add(update)"
    (t,) = _tool(out)
    assert t.failed_open and t.reason == "empty" and t.chosen is None


def test_line_start_cursor_gets_a_filler_so_jedi_sees_the_function(tiny_lm):
    fake = FakeAnalyzer({"self", "updates", "update"})
    out = _run(_gen(tiny_lm, FOR + "            <COMP>self._registered_updates.add(update)\n" + TAIL,
                    ToolConfig(enabled=True), analyzer=fake))
    code, line, col = fake.calls[0]
    assert code.splitlines()[line - 1] == "            pass" and col == 12
    assert _tool(out)[0].chosen == "self" and out.completion.rstrip() == GOOD


def test_threshold_triggers_below_argmax(tiny_lm):
    marked = FOR + "            self.<COMP>_updates.add(update)\n" + TAIL
    fake = FakeAnalyzer({"_registered_updates", "count"})
    weak = 40.0                       # <COMP> gets a bonus, but the planted token stays on top
    off = _run(_gen(tiny_lm, marked, ToolConfig(enabled=True), analyzer=fake, bonus=weak))
    assert _tool(off) == [] and "self._updates" in off.completion
    on = _run(_gen(tiny_lm, marked, ToolConfig(enabled=True, threshold=1e-6), analyzer=fake, bonus=weak))
    assert [t.chosen for t in _tool(on)] == ["_registered_updates"] and on.completion.rstrip() == GOOD


def test_zero_shot_entropy_trigger(tiny_lm):
    marked = FOR + "            self._updates.add(update)\n" + TAIL
    names = {"self", "updates", "update", "_registered_updates", "add"}
    fake = FakeAnalyzer(names)
    never = _run(_gen(tiny_lm, marked, ToolConfig(enabled=True, entropy=1e9), analyzer=fake))
    assert _tool(never) == [] and fake.calls == []
    always = _run(_gen(tiny_lm, marked, ToolConfig(enabled=True, entropy=0.0), analyzer=fake))
    tools = _tool(always)
    # every bare name start is a call (keywords like `for`, `in` are not: they stay writable);
    # `_updates` starts inside the token `._` that ends `self`, so it is not a trigger here
    assert [t.chosen for t in tools] == ["update", "updates", "self", "add", "update"]
    assert all(t.receiver == "<entropy>" and not t.failed_open for t in tools)
    assert always.completion.rstrip() == FOR + "            self._updates.add(update)"


def test_composes_with_the_dereference_monitor(tiny_lm):
    # After `self.` the monitor narrows to members and masks <COMP> out; before `updates` (a
    # bare name) the tool guide calls Jedi. Both are real analyses of the fixture.
    marked = "        for update in <COMP>updates:\n            self.<COMP>_updates.add(update)\n" + TAIL
    out = _run(_gen(tiny_lm, marked, ToolConfig(enabled=True), monitored=True))
    assert out.completion.rstrip() == GOOD
    # the monitor narrows after `self.`; while its analysis is still running (speculation: the
    # step is free) the model may write <COMP> there too: both end in the real member
    assert [t.chosen for t in _tool(out)][0] == "updates"
    assert {t.chosen for t in _tool(out)} <= {"updates", "_registered_updates"}
    assert any(t.receiver == "self" and t.chosen == "_registered_updates" for t in out.triggers)


def test_tool_tokens_need_comp_or_entropy(tiny_lm):
    assert tool_token_id(tiny_lm.tokenizer) is not None        # the tiny tokenizer has <COMP>
    gen = Generator(tiny_lm, MonitorConfig(enabled=False), tools=ToolConfig(enabled=True))
    gen.lm = LoadedModel(tiny_lm.model, type("NoComp", (), {"convert_tokens_to_ids": lambda self, t: [None],
                                                            "unk_token_id": 0})(), "nocomp", "cpu", "float32")
    ctx = function_context(FIX / "updates" / "registry.py", "UpdateRegistry.count", FIX)
    with pytest.raises(GroundcodeError, match="no <COMP> token"):
        gen.tool_guide(ctx)
    gen.tools = ToolConfig(enabled=True, entropy=2.0)          # zero-shot needs no <COMP>
    assert gen.tool_guide(ctx).comp_id is None
    gen.close()


def test_name_start_only_in_code_not_in_strings_or_comments():
    from groundcode.decoding.guides.toolcall import ToolCallGuide
    from groundcode.pycode import Lexer
    g = ToolCallGuide(analyzer=None, comp_id=None, entropy=1.0)

    def at(text):
        g.lexer = Lexer("")          # a fresh lexer per text (the guide rewinds it per row)
        return g._at_name_start(text)
    assert at("x = ")
    assert at("def f():\n    # a comment\n    ")
    assert not at("x = 1  # see ")
    assert not at("s = 'an open string ")
    assert not at('"""doc\n    still the docstring ')
    assert at("s = 'closed' + ")
    assert not at("x = foo")          # inside a name


class SlowAnalyzer(FakeAnalyzer):
    """FakeAnalyzer whose answers land `delay` seconds after the question (a running ticket)."""

    def __init__(self, names, delay):
        super().__init__(names)
        self.delay = delay

    def ask(self, query):
        import threading
        answer = super().ask(query)
        done = threading.Event()
        threading.Timer(self.delay, done.set).start()

        class Ticket:
            def result(self, timeout=0):
                return answer.result(0) if done.wait(timeout or 0) else None
        return Ticket()

    def deadline(self) -> float:
        return 5.0


def test_a_running_tool_call_holds_its_row_instead_of_blocking_the_step(tiny_lm):
    """The answer lands 0.3 s after <COMP>: the row is held (no token; its logits kept) until it
    does, then picks the suggestion as with an answer at once; the call is not failed open."""
    import time
    fake = SlowAnalyzer({"_registered_updates", "count", "add"}, delay=0.3)
    gen = _gen(tiny_lm, FOR + "            self.<COMP>_updates.add(update)\n" + TAIL, ToolConfig(enabled=True),
               analyzer=fake)
    t0 = time.perf_counter()
    out = _run(gen)
    assert time.perf_counter() - t0 >= 0.3
    assert out.completion.rstrip() == GOOD
    (t,) = _tool(out)
    assert t.chosen == "_registered_updates" and not t.failed_open


def test_a_tool_call_past_its_deadline_fails_open(tiny_lm):
    fake = SlowAnalyzer({"_registered_updates"}, delay=30.0)
    fake.deadline = lambda: 0.2
    out = _run(_gen(tiny_lm, FOR + "            self.<COMP>_updates.add(update)\n" + TAIL, ToolConfig(enabled=True),
                    analyzer=fake))
    (t,) = _tool(out)
    assert t.failed_open and t.reason == "timeout"
    assert out.completion.rstrip() == FOR + "            self._updates.add(update)"
