"""The library's entry points: ground a model on a repository and generate code.

    gen = Generator(model=None | "hf-id-or-path" | LoadedModel, monitor=MonitorConfig())
    ctx = function_context(file, "Class.method", repo)   # a function body from signature+docstring
    ctx = cursor_context(file, line, col, repo)          # continue at a cursor (line 1-based, col 0-based)
    ctx = CodeContext(path, repo, before, after, stop_indent, scope)   # or build one yourself
    outs = gen.run([ctx, ...], SamplingConfig(...), n=1) # outs[i][j]: sample j of context i

The model sees the tail of `before`; the analyzer sees before + completion + "\\n" + after (the
real file around the cursor, in memory). Not here: the loop (decoding/engine.py), jedi
(analysis/jedi.py), the CLI (cli.py).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .config import MonitorConfig, SamplingConfig
from .errors import GroundcodeError
from .repo import find_function, find_repo_root, read_source, text_version


@dataclass
class CodeContext:
    path: Path                      # the file the code goes into
    repo: Path                      # the analyzer's project root
    before: str                     # file text before the generated region
    after: str = ""                 # file text after it (analyzer only)
    stop_indent: int | None = None  # stop at a line indented <= this; None: never
    scope: str = ""                 # cache scope (qualified function name, or the cursor)
    lex_prefix: str = ""            # tail of `before` from a statement start (lexing only)
    starts_at_line: bool = True     # generation starts at the beginning of a line
    reference: str | None = None    # the original code of the region, when known
    lead: str = ""                  # text that ends `before` and starts the completion (the
                                    # body's indentation): the model writes after it
    version: str = ""               # content hash of the file

    def __post_init__(self):
        self.path, self.repo = Path(self.path), Path(self.repo)
        if not self.version:
            self.version = text_version(self.before + "\0" + self.after)
        if not self.lex_prefix:
            self.lex_prefix = _statement_tail(self.before)


def _statement_tail(before: str, max_lines: int = 2000) -> str:
    """`before` from the last line that starts a top-level statement (column 0)."""
    lines = before.splitlines(keepends=True)
    lo = max(0, len(lines) - max_lines)
    for k in range(len(lines) - 1, lo - 1, -1):
        ln = lines[k]
        if ln[:1] not in ("", " ", "\t", "\n", "\r", "#", ")", "]", "}") and k < len(lines) - 1 \
                or (k == len(lines) - 1 and ln[:1] not in ("", " ", "\t", "#")):
            return "".join(lines[k:])
    return "".join(lines[lo:]) if lo else before


def function_context(file: str | Path, qualname: str, repo: str | Path | None = None) -> CodeContext:
    """Context for writing the body of `qualname` from its signature and docstring."""
    path = Path(file)
    text = read_source(path)
    site = find_function(text, qualname, path)
    lines = text.splitlines(keepends=True)
    before = "".join(lines[: site.body_line - 1])
    if before and not before.endswith("\n"):
        before += "\n"
    after = "".join(lines[site.end_line:])
    reference = "".join(lines[site.body_line - 1: site.end_line])
    # The prompt ends with the body's indentation, so the model starts the first statement
    # instead of (as small models like to) closing the function right after its docstring.
    first = next((ln for ln in lines[site.body_line - 1: site.end_line] if ln.strip()), "")
    lead = first[: len(first) - len(first.lstrip(" \t"))] or " " * (site.indent + 4)
    return CodeContext(path=path, repo=Path(repo) if repo else find_repo_root(path),
                       before=before + lead, after=after, stop_indent=site.indent, scope=qualname,
                       lex_prefix="".join(lines[site.first_line - 1: site.body_line - 1]) + lead,
                       starts_at_line=False, reference=reference, version=text_version(text),
                       lead=lead)


def cursor_context(file: str | Path, line: int, column: int, repo: str | Path | None = None) -> CodeContext:
    """Context for continuing code at (line, column); the rest of that line is replaced."""
    path = Path(file)
    text = read_source(path)
    lines = text.splitlines(keepends=True) or [""]
    if not 1 <= line <= len(lines) + 1:
        raise GroundcodeError(f"{path}: line {line} is outside the file (1..{len(lines)})")
    cur = lines[line - 1].rstrip("\r\n") if line <= len(lines) else ""
    if not 0 <= column <= len(cur):
        raise GroundcodeError(f"{path}:{line}: column {column} is outside the line (0..{len(cur)})")
    before = "".join(lines[: line - 1]) + cur[:column]
    after = "".join(lines[line:])
    head = cur[:column]
    ind = len(head) - len(head.lstrip(" \t")) if not head.strip() else len(cur) - len(cur.lstrip(" \t"))
    return CodeContext(path=path, repo=Path(repo) if repo else find_repo_root(path), before=before,
                       after=after, stop_indent=ind - 1 if ind > 0 else None,
                       scope=f"{line}:{column}", starts_at_line=not head.strip(),
                       version=text_version(text))


@dataclass
class Generation:
    completion: str
    tokens: int
    seconds: float
    finish_reason: str
    triggers: list = field(default_factory=list)
    model: str = ""
    monitored: bool = True
    rollbacks: int = 0

    def to_json(self) -> dict:
        d = asdict(self)
        d["triggers"] = [t.to_json() if hasattr(t, "to_json") else t for t in self.triggers]
        return d


class Generator:
    """A model, its vocab index, the engine and one analyzer per repository, kept warm."""

    def __init__(self, model=None, monitor: MonitorConfig | None = None, device: str | None = None,
                 dtype: str | None = None, batch_rows: int = 8):
        from .decoding.engine import Engine
        from .decoding.vocab import VocabIndex
        from .models.load import LoadedModel, load_model
        self.lm = model if isinstance(model, LoadedModel) else load_model(model, device, dtype)
        self.monitor = monitor or MonitorConfig()
        self.vocab = VocabIndex.for_tokenizer(self.lm.tokenizer)
        self.engine = Engine(self.lm.model, self.lm.tokenizer, self.vocab)
        self.batch_rows = batch_rows
        self._analyzers: dict[Path, object] = {}

    def analyzer(self, repo: Path):
        key = Path(repo).resolve()
        a = self._analyzers.get(key)
        if a is None:
            from .analysis.jedi import JediAnalyzer
            m = self.monitor
            a = JediAnalyzer(key, deadline_s=m.deadline_s, hide_private=m.hide_private,
                             hide_dunder=m.hide_dunder)
            self._analyzers[key] = a
        return a

    def close(self) -> None:
        for a in self._analyzers.values():
            a.close()

    def _guides(self, ctx: CodeContext) -> list:
        from .decoding.guides.body_end import BodyEnd
        from .decoding.guides.dereference import DereferenceMonitor
        guides = []
        if ctx.stop_indent is not None:
            guides.append(BodyEnd(ctx.stop_indent))
        if self.monitor.enabled:
            guides.append(DereferenceMonitor(self.analyzer(ctx.repo), self.monitor.allow_bindings))
        return guides

    def prompt_ids(self, ctx: CodeContext, max_new_tokens: int) -> list[int]:
        ids = self.lm.tokenizer(ctx.before, add_special_tokens=False)["input_ids"]
        budget = max(16, self.lm.context_length - max_new_tokens - 1)
        ids = ids[-budget:]
        if not ids:
            ids = [self.engine.pad_id]
        return ids

    def run(self, contexts: list[CodeContext], sampling: SamplingConfig | None = None, n: int = 1,
            on_text=None) -> list[list[Generation]]:
        from .decoding.engine import RowSpec
        sampling = sampling or SamplingConfig()
        if sampling.temperature <= 0 and n > 1:
            raise GroundcodeError("n > 1 samples need --temperature > 0 (greedy gives one answer)")
        jobs = [(ci, j) for ci in range(len(contexts)) for j in range(n)]
        results: list[list[Generation | None]] = [[None] * n for _ in contexts]
        prompts = {ci: self.prompt_ids(c, sampling.max_new_tokens) for ci, c in enumerate(contexts)}
        if self.monitor.enabled:
            for c in contexts:   # Jedi's cold start runs while the prompt is prefilled
                self.analyzer(c.repo).prewarm(c.before + c.after, c.path)
        for k in range(0, len(jobs), self.batch_rows):
            chunk = jobs[k: k + self.batch_rows]
            specs = [RowSpec(prompts[ci], contexts[ci], self._guides(contexts[ci]), sampling.seed + j)
                     for ci, j in chunk]
            t0 = time.perf_counter()
            outs = self.engine.generate(specs, sampling, on_text=on_text)
            dt = time.perf_counter() - t0
            for (ci, j), o in zip(chunk, outs):
                results[ci][j] = Generation(contexts[ci].lead + o.completion, len(o.tokens),
                                            round(dt, 4), o.finish_reason,
                                            list(o.triggers), self.lm.name, self.monitor.enabled,
                                            o.rollbacks)
        return results  # type: ignore[return-value]
