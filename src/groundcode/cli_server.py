"""The CLI's path through a running `groundcode serve` (`complete` and `generate` without a
model load): which options keep the CLI local, whether to look for a server, and the request
with every option that shapes the answer (the server refuses one it cannot honour). Finding the
server is server/reuse.py's (a discovery file, never a port).
Test: tests/test_cli_server.py.
"""
from __future__ import annotations

import json
import sys
import time

import typer

from .console import err, error
from .errors import GroundcodeError


def _local_only(**options) -> list[str]:
    """The options set that a server cannot take (they keep the CLI local), as flags."""
    return ["--" + k.replace("_", "-") for k, v in options.items() if v not in (None, False, "", 0)]


def _use_server(no_server: bool, server, local: list[str]) -> bool:
    """Whether to look for a server: never with --no-server; --server with options a server
    cannot take is an error (they would be dropped), a discovered one is skipped."""
    if no_server:
        return False
    if server is not None and local:
        error(f"--server: {', '.join(local)} cannot be sent to a server (drop --server to run "
              "here, or the option)")
        raise typer.Exit(2)
    return not local


def _via_server(target, server, model, temperature, top_p, seed, max_new_tokens, stop, as_json,
                function: bool = False, max_prompt_tokens: int | None = None,
                deadline: float | None = None, analyzer: str = "jedi", *, stop_for, show) -> bool:
    """`complete` (FILE:LINE:COL) or `generate` (FILE:FUNCTION, `function`) through a running
    groundcode serve (server/reuse.py) with every option that shapes the answer (the server
    refuses one it cannot honour); False: none to use. `stop_for(stop, ctx)` is the CLI's stop
    rule, `show(generation, seconds)` its trigger table."""
    from .repo import parse_file_function, parse_file_position, read_source
    from .server.reuse import complete_via, find_server
    if isinstance(model, str) and model.startswith(("http://", "https://")):
        return False          # a remote model: the request goes there (no torch import here)
    t0 = time.perf_counter()
    try:
        if function:
            path, name = parse_file_function(target)
        else:
            path, cur = parse_file_position(target)
        from .analysis.lsp_servers import resolve_analyzer
        analyzer = resolve_analyzer(analyzer)     # `auto`: what a server started here resolved
        found = find_server(server, path, model, analyzer)
        if found is None:
            return False
        url = found.url
        same = dict(max_prompt_tokens=max_prompt_tokens, analysis_deadline=deadline, model=model,
                    analyzer=analyzer)
        from .context import cursor_context, function_context
        text = read_source(path)
        if function:                                      # checks the function exists
            ctx = function_context(path, name, path.parent, text=text)
            out = complete_via(found, path, None, None, text, max_new_tokens=max_new_tokens, temperature=temperature,
                               top_p=top_p, seed=seed, stop=stop_for(stop, ctx), function=name, **same)
        else:                                             # checks the position
            ctx = cursor_context(path, cur.line, cur.column, path.parent, text=text)
            out = complete_via(found, path, cur.line, cur.column, text, max_new_tokens=max_new_tokens,
                               temperature=temperature, top_p=top_p, seed=seed, stop=stop_for(stop, ctx),
                               **same)
    except GroundcodeError as exc:
        error(str(exc))
        raise typer.Exit(2)
    seconds = time.perf_counter() - t0
    if as_json:
        d = out.to_json()
        d.update(seconds=round(seconds, 4), file=str(path), server=url)
        sys.stdout.write(json.dumps(d) + "\n")
        return True
    err.print(f"via groundcode serve at {url}", highlight=False)
    sys.stdout.write(out.completion if out.completion.endswith("\n") else out.completion + "\n")
    sys.stdout.flush()
    show(out, seconds)
    return True
