"""The `groundcode` command line: a thin typer app. Each command parses flags into configs and
calls one library function; user errors print one line (exit 2), never a traceback.

    groundcode complete FILE:LINE:COL [--repo DIR] [--model ID|PATH] [--no-monitor] [--json]
                   [--model http://HOST:PORT/v1 [--remote-model NAME] [--tokenizer NAME|PATH]]
    groundcode generate FILE:FUNCTION [--repo DIR] [--tool-tokens] [...]
    groundcode serve --workspace DIR [--model ID]      (HTTP server: server/cli.py)
    groundcode models list|pull|path                   (sub-app of models/)
    groundcode augment SOURCE... --out aug.jsonl       (ToolGen's <COMP> augmentation, training/)
    groundcode corpus ... / train ... / bench ... / index ...  (sub-apps of training/,
                                                      evaluation/, retrieval/)
    groundcode lsp [--model ID] [--workspace DIR]      (language server on stdio: server/lsp_cli.py)
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .config import MonitorConfig, PromptConfig, SamplingConfig
from .errors import GroundcodeError
from .cli_server import _local_only, _use_server, _via_server  # noqa: E402 (the path through a running serve)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Repository-aware code generation: static analysis guides the model.")


from .console import (_console, _quiet_libraries, analysis_deadline, analysis_deadline_option,  # noqa: E402,F401
                      analyzer_option, err, error, old_deadline_option)  # noqa: E402,F401 (the CLI's console)


def _mount_subapps() -> None:
    """Sub-apps live with their modules; a missing optional one just isn't offered."""
    for mod, attr, name in [("groundcode.training.cli", "corpus_app", "corpus"),
                            ("groundcode.training.cli", "train_app", "train"),
                            ("groundcode.evaluation.cli", "app", "bench"),
                            ("groundcode.models.cli", "app", "models"),
                            ("groundcode.retrieval.cli", "app", "index"),
                            ("groundcode.analysis.cli", "app", "analyzers")]:
        try:
            module = __import__(mod, fromlist=[attr])
            app.add_typer(getattr(module, attr), name=name)
        except (ImportError, AttributeError):
            pass
    try:
        from .training.cli import augment_cmd
        app.command("augment")(augment_cmd)
    except ImportError:
        pass
    from .server.cli import serve_cmd       # imports fastapi/uvicorn only when it runs
    app.command("serve")(serve_cmd)


def _print_triggers(gen, seconds: float) -> None:
    t = Table(title=f"{len(gen.triggers)} trigger(s) · {gen.tokens} tokens · {seconds:.2f}s · "
                    f"{gen.finish_reason}", title_justify="left")
    for col in ("receiver", "candidates", "chosen", "analysis ms", "cache", "note"):
        t.add_column(col)
    for tr in gen.triggers:
        note = []
        if tr.failed_open:
            note.append(f"failed open ({tr.reason})")
        if tr.binding:
            note.append("new attribute (left free)")
        if tr.rolled_back:
            note.append("rolled back")
        if tr.constrained and not tr.rolled_back:
            note.append("constrained")
        if tr.analyzer and tr.analyzer not in ("jedi", "botocore+jedi"):
            note.append(f"by {tr.analyzer}")
        if tr.vocabulary and not tr.failed_open:
            note.append(f"project names ({tr.vocabulary.split(':')[0]})")
        kind = getattr(tr, "kind", "member")
        if kind != "member":                  # the names monitor: a name read, an import
            note.append(f"{kind} missing" if not tr.failed_open and tr.rolled_back else kind)
        if getattr(tr, "cut", None) is not None:
            where = f"{tr.receiver}.{tr.cut}" if kind == "member" else tr.cut
            note.append(f"cut at {where} ({gen.finish_reason}): not shown")
        t.add_row(tr.receiver or ("(scope)" if kind == "name" else ""), str(tr.candidates), tr.chosen or "-", f"{tr.analysis_ms:.1f}",
                  "hit" if tr.cache_hit else "miss", ", ".join(note))
    err.print(t)


def _run(ctx_factory, model, device, dtype, temperature, top_p, seed, max_new_tokens, no_monitor,
         deadline, hide_private, as_json, fim="auto", heal=True, stop="block", stream=None, tools=None,
         sdk=True, keywords=True, python=None, declarations=False, remote=None, vocabulary=False,
         trust=False, names=False, max_prompt_tokens: int = 0, analyzer: str = "jedi",
         check_first: bool = False) -> None:
    _quiet_libraries()
    from .analysis.lsp_servers import check_analyzer
    from .api import Generator
    t0 = time.perf_counter()
    live = None
    try:
        ctx = ctx_factory()
        sampling = SamplingConfig(temperature=temperature, top_p=top_p, seed=seed,
                                  max_new_tokens=max_new_tokens, stop=_stop_for(stop, ctx))
        if deadline <= 0:
            raise GroundcodeError(f"--analysis-deadline must be > 0 seconds, got {deadline}")
        if python is not None and not Path(python).expanduser().exists():
            raise GroundcodeError(f"--python: no such interpreter or environment: {python}")
        monitor = MonitorConfig(enabled=not no_monitor, deadline_s=deadline, hide_private=hide_private,
                                sdk=sdk, keywords=keywords, vocabulary=vocabulary, names=names,
                                python=str(Path(python).expanduser()) if python else None,
                                trust=trust, analyzer=check_analyzer(analyzer))
        prompt = PromptConfig(fim=fim, heal=heal, declarations=declarations,
                              max_prompt_tokens=max(0, int(max_prompt_tokens)))
        from .decoding.remote import is_remote
        if getattr(ctx, "kind", "") == "cursor" and not is_remote(model):
            # a cursor completion loads the dtype the editor server loads; a function body
            # (`generate`) keeps the loader's (float32 on a CPU): with bfloat16 the README's
            # main job picked `self.owner.latest_update()` instead of `self.registry.…`
            from .models.load import serving_dtype
            dtype = serving_dtype(dtype, device, model)
        if stream is None:      # stream to a terminal, print at the end into a pipe
            stream = not as_json and sys.stdout.isatty()
        with err.status("loading model…", spinner="dots") if not as_json else _null():
            gen = Generator(model, monitor, device=device, dtype=dtype, prompt=prompt, tools=tools,
                            **_remote_kw(model, remote))
        checked = None
        with gen:
            if check_first:
                from .check_first import check_first as run_checked
                from .checkers import checker_for
                checker = checker_for(ctx)
                with err.status("writing freely, then checking…", spinner="dots") if not as_json else _null():
                    checked = run_checked(gen, ctx, sampling, checker)
                out = checked.generation
            elif stream and not as_json:
                live = _Stream(ctx)
                out = gen.run([ctx], sampling, on_event=live.on_event)[0][0]
                live.finish(out.completion)
            else:
                with err.status("generating…", spinner="dots") if not as_json else _null() as status:
                    count = [0]

                    def on_event(u):      # the session's updates: a live count of final text
                        if u.kind == "text" and status is not None:
                            count[0] += len(u.text)
                            status.update(f"generating… {count[0]} characters")
                    out = gen.run([ctx], sampling, on_event=on_event)[0][0]
    except GroundcodeError as exc:
        if live is not None:
            live.finish("")
        error(str(exc))
        raise typer.Exit(2)
    seconds = time.perf_counter() - t0
    if as_json:
        d = out.to_json()
        d["seconds"] = round(seconds, 4)
        d["generate_seconds"] = out.seconds
        d["file"] = str(ctx.path)
        d["scope"] = ctx.scope
        if checked is not None:
            d["check_first"] = checked.to_json()
        sys.stdout.write(json.dumps(d) + "\n")
        return
    if live is None:
        sys.stdout.write(out.completion if out.completion.endswith("\n") else out.completion + "\n")
        sys.stdout.flush()
    _print_triggers(out, seconds)
    if checked is not None:
        c = checked.to_json()
        left = c["problems"][-1]
        err.print(f"check first: {c['strategy']}; problems per write {[len(p) for p in c['problems']]} "
                  f"({c['check_s']} s checking)" + (f"; left: {', '.join(p['code'] for p in left)}" if left else ""))
    failed = sum(t.failed_open for t in out.triggers)
    if failed:
        err.print(f"[yellow]warning:[/yellow] {failed} analysis call(s) failed open (no constraint)")


def _stop_for(stop: str, ctx) -> str:
    """--stop auto: the editor server's rule (a body, or a block the cursor's line opens, ends
    with its block; anything else with its statement)."""
    if stop != "auto":
        return stop
    if getattr(ctx, "kind", "cursor") == "body":
        return "block"
    from .server.lsp_text import stop_for
    from .lines import last_line                 # the cursor's line (lines.py: \r\n, \r, \n)
    return stop_for(last_line(ctx.before))


class _Stream:
    """The completion as it is written, on the terminal: the session streams only final text
    (text after an unresolved trigger waits until it is settled), so it is only appended."""

    def __init__(self, ctx):
        from rich.live import Live
        from rich.text import Text
        self._Text = Text
        self.text = ""
        self.live = Live(Text(""), console=_console(stderr=False), auto_refresh=True,
                         refresh_per_second=15, vertical_overflow="visible", transient=False)
        self.live.start()

    def on_event(self, u) -> None:
        if u.kind != "text":
            return
        self.text += u.text or ""
        self.live.update(self._Text(self.text))

    def finish(self, completion: str) -> None:
        self.live.update(self._Text(completion.rstrip("\n")))
        self.live.stop()


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


_MODEL = typer.Option(None, "--model", "-m",
                      help="registry name (groundcode models list), tiny, a local path or an HF id "
                           "(default: smollm2-135m once pulled)")
_DEVICE = typer.Option(None, help="cpu, cuda, cuda:1 … (default: CUDA when present)")
_DTYPE = typer.Option(None, help="float32, bfloat16, float16, int8 (CPU: int8 linear layers), gguf "
                      "(CPU: the registry model's GGUF file on llama.cpp; pip install 'groundcode[gguf]') "
                      "(default: bfloat16 on CUDA; on a CPU, "
                      "complete loads what groundcode serve does — gguf where llama-cpp-python is "
                      "installed, else int8 with AVX512-BF16/AMX — and generate float32)")
_TEMP = typer.Option(0.0, "--temperature", "-t", help="0 = greedy; > 0 samples")
_TOPP = typer.Option(1.0, "--top-p", help="nucleus sampling, in (0, 1]")
_SEED = typer.Option(0, "--seed")
_MAXN = typer.Option(128, "--max-new-tokens", "-n", help="cap on generated tokens (>= 1)")
_STOP = typer.Option("auto", "--stop", help="auto (as the editor server: a body or a block opened by "
                     "the cursor's line ends with its block, anything else after its statement); block: "
                     "until the code leaves the cursor's block (or the body ends); statement: after the "
                     "first statement; line: after the first line")
_SERVER = typer.Option(None, "--server", help="send the request to this running `groundcode serve` "
                       "(e.g. http://127.0.0.1:8012; $GROUNDCODE_API_KEY is sent) instead of loading "
                       "the model; by default your own server that serves the file is found through "
                       "its discovery file (never by port; no key is sent to it)")
_NOSERVER = typer.Option(False, "--no-server", help="never use a running groundcode serve")
_PROMPT_CAP = typer.Option(1024, "--max-prompt-tokens", help="cap the prompt at this many tokens, as "
                           "editors do (0: the model's window); a shorter prompt prefills faster")
_STREAM = typer.Option(None, "--stream/--no-stream", help="show the completion as it is written "
                       "(default: when stdout is a terminal)")
_NOMON = typer.Option(False, "--no-monitor", help="plain decoding (the baseline)")
_DEADLINE = analysis_deadline_option()
_OLD_DEADLINE = old_deadline_option()
_PRIV = typer.Option(False, "--hide-private", help="never suggest _private members")
_NOSDK = typer.Option(False, "--no-sdk", help="boto3 clients: do not answer from botocore's service models (Jedi only)")
_NOKW = typer.Option(False, "--no-keywords", help="leave calls free (the keyword monitor checks keyword "
                     "names and the count of arguments against the callee's signature: boto3 clients from "
                     "botocore's models, any other callee Jedi reads one whole signature of; Python)")
_VOCAB = typer.Option(False, "--vocabulary/--no-vocabulary", help="where a receiver's type is unknown "
                      "and it cannot be a library object, hold the name to the names the project and "
                      "the builtin types have (off by default: such a name is left free)")
_NAMES = typer.Option(False, "--names/--no-names", help="check that every name the completion reads "
                      "exists and every module it imports resolves (Python; off by default)")
_PYTHON = typer.Option(None, "--python", help="the interpreter or virtual environment whose installed "
                       "libraries the analyzer sees and may start (default: this interpreter, with the "
                       "repository venv's site-packages read as files)")
_ANALYZER = analyzer_option()
_TRUST = typer.Option(False, "--trust", help="trust the repository: the analyzer may start its own "
                      ".venv/venv interpreter (untrusted, nothing the repository ships runs; "
                      "`groundcode trust PATH` trusts it for good)")
_JSON = typer.Option(False, "--json", help="print one JSON object instead of text + summary")
_REPO = typer.Option(None, "--repo", "-r", help="repository root (default: found from the file)")
_FIM = typer.Option("auto", "--fim", help="fill-in-the-middle with the model's FIM tokens: auto (cursor completions), on, off")
_HEAL = typer.Option(True, "--heal/--no-heal", help="token healing: the model re-writes the prompt's trailing whitespace")
_DECL = typer.Option(False, "--declarations/--no-declarations",
                     help="prepend what an IDE knows at the cursor: the enclosing class and the repository classes it uses")
_TOOLS = typer.Option(False, "--tool-tokens", help="tool tokens (ToolGen): <COMP> calls the autocompleter (a TOOLGEN adapter as --model)")
_TOOL_P = typer.Option(None, "--tool-threshold", help="also call when p(<COMP>) >= this")
_TOOL_H = typer.Option(None, "--tool-entropy", help="zero-shot tool calls (any model): at name starts whose next-token entropy >= this many nats")


_REMOTE_MODEL = typer.Option(None, "--remote-model", help="with --model http://HOST:PORT/v1: the served "
                             "model's name (when the server serves several)")
_TOKENIZER = typer.Option(None, "--tokenizer", help="with --model http://…: the local tokenizer of the "
                          "served model (registry name, tiny or a path; default: the served name when it is "
                          "one, else the registry default's)")
_CONSTRAINT = typer.Option("auto", "--remote-constraint", help="with --model http://…: how constrained "
                           "steps are sent: auto, logit_bias, allowed_token_ids (vLLM) or none")


def _remote_kw(model, remote) -> dict:
    """Generator keywords of a remote model (--model http://…): {} for a local one; the remote
    flags without a URL are an error."""
    from .decoding.remote import is_remote
    remote_model, tokenizer, constraint = remote or (None, None, "auto")
    if not is_remote(model):
        if remote_model or tokenizer or constraint != "auto":
            raise GroundcodeError("--remote-model, --tokenizer and --remote-constraint go with "
                                  "--model http://HOST:PORT/v1")
        return {}
    return {"remote_model": remote_model, "tokenizer": tokenizer, "remote_constraint": constraint,
            "api_key": os.environ.get("GROUNDCODE_REMOTE_API_KEY")}


def _tools(tool_tokens: bool, threshold, entropy):
    from .config import ToolConfig
    return ToolConfig(enabled=tool_tokens or entropy is not None, threshold=threshold, entropy=entropy)


@app.command()
def complete(position: str = typer.Argument(..., metavar="FILE:LINE:COL",
                                            help="line 1-based, column 0-based"),
             repo: Optional[str] = _REPO, model: Optional[str] = _MODEL,
             device: Optional[str] = _DEVICE, dtype: Optional[str] = _DTYPE,
             temperature: float = _TEMP, top_p: float = _TOPP, seed: int = _SEED,
             max_new_tokens: int = _MAXN, no_monitor: bool = _NOMON, deadline: float = _DEADLINE,
             hide_private: bool = _PRIV, as_json: bool = _JSON, fim: str = _FIM, heal: bool = _HEAL,
             stop: str = _STOP, stream: Optional[bool] = _STREAM,
             tool_tokens: bool = _TOOLS, tool_threshold: Optional[float] = _TOOL_P,
             tool_entropy: Optional[float] = _TOOL_H, no_sdk: bool = _NOSDK,
             no_keywords: bool = _NOKW, vocabulary: bool = _VOCAB, names: bool = _NAMES,
             python: Optional[str] = _PYTHON,
             trust: bool = _TRUST, analyzer: str = _ANALYZER, declarations: bool = _DECL, remote_model: Optional[str] = _REMOTE_MODEL,
             tokenizer: Optional[str] = _TOKENIZER, remote_constraint: str = _CONSTRAINT,
             server: Optional[str] = _SERVER, no_server: bool = _NOSERVER,
             max_prompt_tokens: int = _PROMPT_CAP, old_deadline: Optional[float] = _OLD_DEADLINE) -> None:
    """Continue the code at a cursor (the rest of that line is replaced). Prints, never writes."""
    deadline = analysis_deadline(deadline, old_deadline)
    from .api import cursor_context
    from .repo import parse_file_position

    def ctx():
        path, cur = parse_file_position(position)
        return cursor_context(path, cur.line, cur.column, _check_repo(repo, path))
    # a running `groundcode serve` answers unless an option it cannot take is set
    local = _local_only(no_monitor=no_monitor, tool_tokens=tool_tokens, tool_threshold=tool_threshold is not None,
                        tool_entropy=tool_entropy is not None, no_sdk=no_sdk, no_keywords=no_keywords,
                        vocabulary=vocabulary, names=names, python=python, trust=trust,
                        declarations=declarations,
                        repo=repo, remote_model=remote_model, tokenizer=tokenizer,
                        remote_constraint=remote_constraint != "auto", fim=fim != "auto", heal=not heal,
                        hide_private=hide_private, device=device, dtype=dtype, stream=stream)
    if _use_server(no_server, server, local):
        if _via_server(position, server, model, temperature, top_p, seed, max_new_tokens, stop, as_json,
                       max_prompt_tokens=max_prompt_tokens, deadline=deadline, analyzer=analyzer,
                       stop_for=_stop_for, show=_print_triggers):
            return
    _run(ctx, model, device, dtype, temperature, top_p, seed, max_new_tokens, no_monitor,
         deadline, hide_private, as_json, fim, heal, stop, stream,
         _tools(tool_tokens, tool_threshold, tool_entropy), not no_sdk, not no_keywords, python,
         declarations=declarations, remote=(remote_model, tokenizer, remote_constraint),
         vocabulary=vocabulary, trust=trust, max_prompt_tokens=max_prompt_tokens, analyzer=analyzer,
         names=names)


@app.command()
def generate(target: str = typer.Argument(..., metavar="FILE:FUNCTION",
                                          help="e.g. src/pkg/mod.py:Class.method, src/cart.ts:Cart.add"),
             repo: Optional[str] = _REPO, model: Optional[str] = _MODEL,
             device: Optional[str] = _DEVICE, dtype: Optional[str] = _DTYPE,
             temperature: float = _TEMP, top_p: float = _TOPP, seed: int = _SEED,
             max_new_tokens: int = typer.Option(256, "--max-new-tokens", "-n"),
             no_monitor: bool = _NOMON, deadline: float = _DEADLINE, hide_private: bool = _PRIV,
             as_json: bool = _JSON, fim: str = _FIM, heal: bool = _HEAL, stop: str = _STOP,
             stream: Optional[bool] = _STREAM,
             tool_tokens: bool = _TOOLS, tool_threshold: Optional[float] = _TOOL_P,
             tool_entropy: Optional[float] = _TOOL_H, no_sdk: bool = _NOSDK,
             no_keywords: bool = _NOKW, vocabulary: bool = _VOCAB, names: bool = _NAMES,
             python: Optional[str] = _PYTHON,
             trust: bool = _TRUST, analyzer: str = _ANALYZER, declarations: bool = _DECL, remote_model: Optional[str] = _REMOTE_MODEL,
             tokenizer: Optional[str] = _TOKENIZER, remote_constraint: str = _CONSTRAINT,
             max_prompt_tokens: int = typer.Option(0, "--max-prompt-tokens",
                                                   help="cap the prompt at this many tokens (0: the "
                                                        "model's window)"),
             server: Optional[str] = _SERVER, no_server: bool = _NOSERVER,
             check_first: bool = typer.Option(False, "--check-first", help="write the body freely, check it "
                                              "whole (ty if installed, else pylint, for Python; the package's "
                                              "compiler on its tsconfig.json for TypeScript), and write it again with the "
                                              "monitors on from its first failing line (never worse by the "
                                              "checker's count); default: the monitors on from the start"),
             old_deadline: Optional[float] = _OLD_DEADLINE) -> None:
    """Write a function's body from its signature and docstring or doc comment (Python,
    TypeScript, JavaScript; printed, not written back)."""
    deadline = analysis_deadline(deadline, old_deadline)
    if check_first and no_monitor:
        error("--check-first writes again with the monitors on: drop --no-monitor (or --check-first)")
        raise typer.Exit(2)
    from .api import function_context
    from .repo import parse_file_function

    def ctx():
        path, name = parse_file_function(target)
        return function_context(path, name, _check_repo(repo, path))
    local = _local_only(no_monitor=no_monitor, tool_tokens=tool_tokens, tool_threshold=tool_threshold is not None,
                        tool_entropy=tool_entropy is not None, no_sdk=no_sdk, no_keywords=no_keywords,
                        vocabulary=vocabulary, names=names, python=python, trust=trust,
                        declarations=declarations,
                        repo=repo, remote_model=remote_model, tokenizer=tokenizer,
                        remote_constraint=remote_constraint != "auto", fim=fim != "auto", heal=not heal,
                        hide_private=hide_private, device=device, dtype=dtype, stream=stream,
                        check_first=check_first)
    if _use_server(no_server, server, local):
        if _via_server(target, server, model, temperature, top_p, seed, max_new_tokens, stop, as_json,
                       function=True, max_prompt_tokens=max_prompt_tokens, deadline=deadline,
                       analyzer=analyzer, stop_for=_stop_for, show=_print_triggers):
            return
    _run(ctx, model, device, dtype, temperature, top_p, seed, max_new_tokens, no_monitor,
         deadline, hide_private, as_json, fim, heal, stop, stream,
         _tools(tool_tokens, tool_threshold, tool_entropy), not no_sdk, not no_keywords, python,
         declarations=declarations, remote=(remote_model, tokenizer, remote_constraint),
         vocabulary=vocabulary, trust=trust, max_prompt_tokens=max_prompt_tokens, analyzer=analyzer,
         names=names, check_first=check_first)


def _check_repo(repo: Optional[str], file: Path) -> Optional[Path]:
    """--repo must name a directory holding the file; an empty value is an error, not `.`."""
    if repo is None:
        return None
    if not repo.strip():
        raise GroundcodeError("--repo is empty: name the repository's root directory (or leave it out)")
    if not Path(repo).is_dir():
        raise GroundcodeError(f"repository not found: {repo}")
    try:
        Path(file).resolve().relative_to(Path(repo).resolve())
    except ValueError:
        raise GroundcodeError(f"{file} is not inside --repo {repo}") from None
    from .languages import SOURCE_SUFFIXES
    if not any(f.suffix.lower() in SOURCE_SUFFIXES for f in Path(repo).rglob("*")):
        raise GroundcodeError(f"--repo {repo} holds no source files ({', '.join(SOURCE_SUFFIXES)})")
    return Path(repo)


@app.command("trust")
def trust_cmd(path: Optional[Path] = typer.Argument(None, help="a workspace root to trust"),
              list_: bool = typer.Option(False, "--list", help="print the trusted roots"),
              remove: bool = typer.Option(False, "--remove", help="stop trusting PATH")) -> None:
    """Trust a workspace for good: the analyzer may start its own .venv/venv interpreter
    (kept in the user config, never in the repository; `--trust` does it for one run)."""
    from . import trust as trust_mod
    if list_ or path is None:
        for r in trust_mod.roots():
            typer.echo(str(r))
        return
    if remove:
        typer.echo(f"{'no longer trusted' if trust_mod.remove(path) else 'was not trusted'}: "
                   f"{path.expanduser().resolve()}")
        return
    typer.echo(f"trusted: {trust_mod.add(path)}")


def _version(value: bool) -> None:
    if value:
        from . import __version__
        typer.echo(f"groundcode {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """Repository-aware code generation: static analysis guides the model."""


_mount_subapps()
from .server.lsp_cli import lsp_cmd  # noqa: E402  (typer only; pygls is imported when it runs)
app.command("lsp")(lsp_cmd)


def main() -> None:
    try:
        app()
    except GroundcodeError as exc:
        error(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        _interrupted()
    except SystemExit as exc:
        if exc.code == 130:              # typer turns a KeyboardInterrupt into a silent Exit(130)
            _interrupted()
        raise


def _interrupted() -> None:
    """Ctrl-C: one line, exit status 130; analysis workers stopped, not waited for."""
    jedi = sys.modules.get("groundcode.analysis.jedi_client")
    if jedi is not None:
        jedi.close_all()
    err.print("interrupted")
    sys.exit(130)
