"""groundcode: repository-aware code generation.

Static analysis (Jedi) guides a code LM token by token so that the names, members and API calls
it writes exist. The public facade is small; internals never import this module.

    from groundcode import load_model, complete_at, generate_function
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load_model", "complete_at", "generate_function", "SamplingConfig", "MonitorConfig"]


def __getattr__(name):  # lazy: `import groundcode` must not import torch
    if name == "load_model":
        from .models.load import load_model
        return load_model
    if name in ("complete_at", "generate_function"):
        from . import api
        return getattr(api, name)
    if name in ("SamplingConfig", "MonitorConfig"):
        from . import config
        return getattr(config, name)
    raise AttributeError(name)
