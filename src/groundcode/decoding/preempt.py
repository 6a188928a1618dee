"""Preempting idle work between layers: a lookahead forward (decoding/scheduler.py) that is under
way when a request arrives is abandoned at the next decoder layer instead of running to its end,
so a keystroke never pays for the idle work's forward.

    install(model, engine)     # a forward pre-hook on every decoder layer (Llama/Qwen layouts)
    engine.preemptible(check)  # on the scheduler's thread: check() -> True abandons the forward
    except Preempted: ...      # the caller drops what that forward was for (its KV is partial)

The check is per thread (one scheduler thread per session; a model shared by two sessions is
never preempted by the other's state); the hooks are installed once per model, however many
engines wrap it (each hook is a Python call per layer per forward). A model without the layer layout (a test double, a remote
engine) is never preempted: its forwards run to the end, as before.
Test: tests/test_drafts.py.
"""
from __future__ import annotations

import threading
import weakref


class Preempted(Exception):
    """The forward under way was abandoned between two layers (idle work gave way)."""


class _Local(threading.local):
    check = None                  # per thread: abandon the forward when check() is true


def _layers(model):
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    try:
        return list(layers) if layers is not None else []
    except TypeError:
        return []


_INSTALLED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()     # model -> its _Local


def install(model, engine) -> bool:
    """Hook every decoder layer of `model` (once per model: engines sharing a model share the
    hooks and the per-thread check); True when it has the layout."""
    layers = _layers(model)
    if not layers:
        return False
    local = _INSTALLED.get(model)
    if local is None:
        local = _Local()

        def hook(module, args):
            check = local.check
            if check is not None and check():
                raise Preempted("idle work gave way to a request")
        for layer in layers:
            layer.register_forward_pre_hook(hook)
        _INSTALLED[model] = local
    engine._preempt_local = local
    return True
