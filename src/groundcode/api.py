"""The library's entry points: ground a model on a repository and generate code.

CONTRACT (stable; the CLI, the benchmark harness and the server call only these):

    gen = Generator(model=None | "hf-id-or-path" | LoadedModel, monitor=MonitorConfig())
    ctx = function_context(file, "Class.method", repo)      # body of a function from its signature+docstring
    ctx = cursor_context(file, line, col, repo)             # continue code at a cursor (1-based line, 0-based col)
    ctx = CodeContext(path, repo, before, after, stop_indent, scope)   # build one yourself
    outs: list[list[Generation]] = gen.run([ctx, ...], SamplingConfig(...), n=1)
    # outs[i][j] is sample j of context i; Generation has completion, tokens, seconds,
    # finish_reason, triggers (list[TriggerRecord]) and to_json().

Not here: the decoding loop (decoding/engine.py), analysis (analysis/), the CLI (cli.py).
"""
