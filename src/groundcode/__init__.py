"""groundcode: repository-aware code generation.

Static analysis (Jedi) guides a code LM token by token so that the names, members and API calls
it writes exist. The public facade is small; internals never import this module.

    from groundcode import Generator, function_context, cursor_context, SamplingConfig
    with Generator(model=None) as gen:                  # None = the default model
        ctx = function_context("src/pkg/mod.py", "Cart.add", repo="src")
        print(gen.run([ctx], SamplingConfig(max_new_tokens=200))[0][0].completion)

Names load lazily: `import groundcode` imports neither torch nor jedi.
Test: tests/test_public_api.py.
"""

__version__ = "0.1.0"

_HOME = {
    "Generator": "api", "Generation": "api",
    "CodeContext": "context", "function_context": "context", "cursor_context": "context",
    "SamplingConfig": "config", "MonitorConfig": "config", "PromptConfig": "config",
    "load_model": "models.load", "LoadedModel": "models.load",
    "GroundcodeError": "errors", "Session": "session", "Request": "session",
}

__all__ = ["__version__", *_HOME]


def __getattr__(name):  # lazy: `import groundcode` must not import torch
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'groundcode' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f".{home}", __name__), name)


def __dir__():
    return sorted(__all__)
