"""The dereference monitor changes outcomes: planted hallucinations become real members, new
attributes created by assignment are left alone."""
from __future__ import annotations

import pytest

from groundcode.api import Generator, function_context
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.decoding.vocab import VocabIndex
from groundcode.models.load import LoadedModel

from scripted import ScriptedLM, planted  # the model writes the body's indentation itself


def _gen(tiny_lm, rules, monitored: bool):
    vocab = VocabIndex.for_tokenizer(tiny_lm.tokenizer)
    lm = LoadedModel(ScriptedLM(tiny_lm, vocab, rules), tiny_lm.tokenizer, "scripted", "cpu", "float32")
    # (a generous analysis deadline: these tests judge what the monitor does with an answer; on a
    # loaded machine Jedi's answer once passed the 2 s default and the trigger failed open)
    return Generator(lm, MonitorConfig(enabled=monitored, deadline_s=60.0))


def _run(gen, ctx, n_tokens=60):
    return gen.run([ctx], SamplingConfig(max_new_tokens=n_tokens))[0][0]


def test_hallucinated_member_of_class_in_other_file_is_replaced(tiny_lm, shop_repo):
    # Cart.last: the planted model prefers `self.registry.latest()`; Registry (registry.py,
    # another file) has `latest_update`.
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.last", shop_repo)
    rules = planted("        return self.registry.latest()\n    def other(self):\n")
    plain = _run(_gen(tiny_lm, rules, False), ctx)
    assert plain.completion == "        return self.registry.latest()\n"
    assert plain.triggers == []
    mon = _run(_gen(tiny_lm, rules, True), ctx)
    assert mon.completion == "        return self.registry.latest_update()\n", mon
    reg = [t for t in mon.triggers if t.receiver == "self.registry"]
    assert reg and reg[0].chosen == "latest_update" and reg[0].constrained
    assert reg[0].candidates >= 3 and not reg[0].failed_open
    assert mon.finish_reason == "stop"


def test_statement_start_hallucination_is_rolled_back(tiny_lm, shop_repo):
    # Registry.register: planted `self._updates.append(update)`; `_updates` is not a member and
    # what follows (`.append`) is no assignment, so the monitor rolls back and constrains.
    ctx = function_context(shop_repo / "shop" / "registry.py", "Registry.register", shop_repo)
    target = "        self._updates.append(update)\n        return self\n    def other(self):\n"
    rules = planted(target)
    plain = _run(_gen(tiny_lm, rules, False), ctx)
    assert plain.completion.startswith("        self._updates.append(update)\n")
    mon = _run(_gen(tiny_lm, rules, True), ctx)
    assert mon.completion.startswith("        self._registered_updates.append(update)\n"), mon
    first = mon.triggers[0]
    assert first.receiver == "self" and first.rolled_back and first.chosen == "_registered_updates"
    assert mon.rollbacks == 1


def test_new_attribute_in_init_is_left_alone(tiny_lm, shop_repo):
    # Cart.__init__ body written from scratch: `self.discount = 0` creates a new member.
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.__init__", shop_repo)
    target = ("        self.owner = owner\n        self.discount = 0\n"
              "        self.registry = Registry()\n    def other(self):\n")
    rules = planted(target)
    plain = _run(_gen(tiny_lm, rules, False), ctx)
    mon = _run(_gen(tiny_lm, rules, True), ctx)
    assert mon.completion == plain.completion == target[: target.index("    def other")]
    disc = [t for t in mon.triggers if t.chosen == "discount"]
    assert disc and disc[0].binding and not disc[0].rolled_back
    assert mon.rollbacks == 0


def test_augmented_assignment_is_not_a_binding(tiny_lm, shop_repo):
    # `self.count += 1` needs an existing member: rolled back to a real one (`size`).
    ctx = function_context(shop_repo / "shop" / "registry.py", "Registry.register", shop_repo)
    target = "        self.count += 1\n    def other(self):\n"
    rules = planted(target)
    mon = _run(_gen(tiny_lm, rules, True), ctx)
    first = mon.triggers[0]
    assert first.rolled_back and not first.binding
    assert first.chosen in {"size", "_registered_updates", "register", "latest_update"}
    assert mon.completion.startswith(f"        self.{first.chosen}")


def test_plain_and_monitored_identical_without_triggers(tiny_lm, shop_repo):
    ctx = function_context(shop_repo / "shop" / "cart.py", "Cart.add", shop_repo)
    rules = planted("        x = 1 + 2\n        return x\n    def other(self):\n")
    a = _run(_gen(tiny_lm, rules, False), ctx)
    b = _run(_gen(tiny_lm, rules, True), ctx)
    assert a.completion == b.completion == "        x = 1 + 2\n        return x\n"


@pytest.mark.parametrize("speculate", [False, True])
def test_a_cursor_inside_a_line_after_self_dot_is_constrained(tiny_lm, shop_repo, speculate):
    # An editor's cursor sits inside a line (`return self.|`). The monitor's background
    # prefetch of `self`'s members once put its probe on that same line (`return self.
    # self.`), Jedi answered nothing, and the empty answer was cached under the key the real
    # trigger reads: the trigger failed open. The probe now gets a line of its own.
    # This model writes EOS right after the dot: waiting for the answer (speculate=False) the
    # mask refuses it; speculating, the owed answer rolls the empty name back when the row ends.
    from groundcode.api import cursor_context
    ctx = cursor_context(shop_repo / "shop" / "cart.py", 12, len("        return self."), shop_repo)
    gen = Generator(tiny_lm, MonitorConfig(deadline_s=60, speculate=speculate))
    with gen:
        out = gen.run([ctx], SamplingConfig(max_new_tokens=6, stop="line"))[0][0]
    first = out.triggers[0]
    assert first.receiver == "self" and first.constrained and not first.failed_open, (out, first)
    assert first.chosen in {"owner", "registry", "add", "last"}
    assert out.completion.startswith(first.chosen)
