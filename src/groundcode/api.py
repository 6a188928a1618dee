"""The library's entry points: ground a model on a repository and generate code.

    gen = Generator(model=None | "hf-id-or-path" | LoadedModel, monitor=MonitorConfig(),
                    prompt=PromptConfig(), tools=ToolConfig(enabled=True))   # tools: <COMP> calls
    ctx = function_context(file, "Class.method", repo)   # a function body from signature+docstring
    ctx = cursor_context(file, line, col, repo)          # continue at a cursor (line 1-based, col 0-based)
    outs = gen.run([ctx, ...], SamplingConfig(...), n=1) # outs[i][j]: sample j of context i
    for ev in gen.stream([ctx], sampling, n=2): ...      # engine events; rows named (i, j);
                                                         # .cancel((i, j)) stops one row
    gen.block_sources.append(lambda ctx: [PromptBlock(...)])   # snippets / API docs for prompts

The model sees the prompt (decoding/prompt.py: plain or FIM, context blocks, token healing);
the analyzer sees before + completion + "\\n" + after (the real file around the cursor, in
memory). Not here: contexts (context.py), the loop (decoding/engine.py), jedi
(analysis/jedi_*.py), the CLI (cli.py).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .config import MonitorConfig, PromptConfig, SamplingConfig, ToolConfig
from .context import CodeContext, cursor_context, function_context  # noqa: F401  (public here)
from .errors import GroundcodeError


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
    prompt_tokens: int = 0             # tokens in the model's prompt
    tokens_cached: int = 0             # prompt tokens reused from the prefix cache (not prefilled)
    timings: dict = field(default_factory=dict)   # queue_ms, prefill_ms, first_token_ms,
                                                  # decode_ms, analysis_ms, total_ms
    stop: object = None                # a guide's Stop(reason, cut, payload) when finish_reason is "stop"

    def to_json(self) -> dict:
        d = asdict(self)
        d["triggers"] = [t.to_json() if hasattr(t, "to_json") else t for t in self.triggers]
        st = self.stop
        d["stop"] = None if st is None else {"reason": st.reason, "cut": st.cut}
        return d


class Generator:
    """A model, its vocab index, prompt builder, the engine and one analyzer per repository,
    kept warm."""

    def __init__(self, model=None, monitor: MonitorConfig | None = None, device: str | None = None,
                 dtype: str | None = None, batch_rows: int = 8, prompt: PromptConfig | None = None,
                 tools: ToolConfig | None = None):
        from .decoding.engine import Engine
        from .decoding.vocab import VocabIndex
        from .models.load import LoadedModel, load_model
        self.lm = model if isinstance(model, LoadedModel) else load_model(model, device, dtype)
        self.monitor = monitor or MonitorConfig()
        self.tools = tools or ToolConfig()
        self.vocab = VocabIndex.for_tokenizer(self.lm.tokenizer)
        self.engine = Engine(self.lm.model, self.lm.tokenizer, self.vocab)
        self.prompts = self.prompt_builder(prompt)
        self.block_sources: list = []      # callables ctx -> [PromptBlock]: model-only context
        self.batch_rows = batch_rows
        self._analyzers: dict[tuple, object] = {}
        from .analysis.wait import WaitPolicy
        self.waits = WaitPolicy()          # one analysis-wait budget shared by every row
        import threading
        self._shared = {"lock": threading.Lock()}   # the session, shared with views

    def prompt_builder(self, config: PromptConfig | None = None):
        """A prompt builder for this model: its window, and the registry's FIM facts if known."""
        from .decoding.prompt import PromptBuilder
        t = getattr(self.lm, "template", None)
        return PromptBuilder(self.lm.tokenizer, self.lm.context_length, config,
                             None if t is None else t.has_fim)

    def view(self, monitor: MonitorConfig | None = None, tools: ToolConfig | None = None,
             prompt: PromptConfig | None = None) -> "Generator":
        """The same model, analyzers and session with other configuration: callers never change
        a generator's configuration in place (another request may be using it)."""
        import copy
        v = copy.copy(self)
        if monitor is not None:
            v.monitor = monitor
        if tools is not None:
            v.tools = tools
        if prompt is not None:
            v.prompts = self.prompt_builder(prompt)
        return v

    @property
    def session(self):
        """The generator's session (created on first use; shared by its views)."""
        with self._shared["lock"]:
            s = self._shared.get("session")
            if s is None:
                from .session import Session
                s = self._shared["session"] = Session(self)
            return s

    def analyzer(self, repo: Path, python: Path | None = None):
        """The analyzer of a repository (one per repository and interpreter, kept warm):
        `python` (else MonitorConfig.python, else the repository's `.venv`/`venv`) is the
        environment whose installed libraries Jedi sees."""
        python = python or self.monitor.python
        key = (Path(repo).resolve(), str(python) if python else None)
        a = self._analyzers.get(key)
        if a is None:
            from .analysis.jedi_client import JediAnalyzer
            m = self.monitor
            a = JediAnalyzer(key[0], deadline_s=m.deadline_s, hide_private=m.hide_private,
                             hide_dunder=m.hide_dunder, python=python)
            if m.sdk:
                from .analysis.sdk import ChainAnalyzer, SdkAnalyzer, botocore_version
                if botocore_version():        # botocore installed: SDK first, else Jedi
                    a = ChainAnalyzer([SdkAnalyzer(), a])
            self._analyzers[key] = a
        return a

    def set_analyzer(self, repo: Path, analyzer, python: Path | None = None) -> None:
        """Use `analyzer` (anything with the analysis.base.Analyzer interface) for `repo`."""
        self._analyzers[(Path(repo).resolve(), str(python) if python else None)] = analyzer

    def close(self) -> None:
        """Stop the session and the analyzers' worker processes (also on `with Generator(...)
        as gen:` exit)."""
        s = self._shared.pop("session", None)
        if s is not None:
            s.close()
        for a in self._analyzers.values():
            a.close()
        self._analyzers.clear()

    def __enter__(self) -> "Generator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def prompt(self, ctx: CodeContext, max_new_tokens: int, blocks=None):
        """The model's prompt for `ctx` (blocks: extra PromptBlocks besides block_sources')."""
        every = [b for src in self.block_sources for b in src(ctx)] + list(blocks or ())
        return self.prompts.build(ctx, max_new_tokens, every)

    def guides(self, row_ctx: CodeContext, owed: str = "", stop: str = "block") -> list:
        """The guides of one row; `row_ctx` is the context the row sees (ctx.continued(owed));
        `stop`: also end after the first line or statement (SamplingConfig.stop)."""
        from .decoding.guides.body_end import BodyEnd
        from .decoding.guides.dereference import DereferenceMonitor
        from .decoding.guides.heal import Heal
        from .decoding.guides.stop_at import StopAt
        guides = [Heal(owed)] if owed else []
        if row_ctx.stop_indent is not None:
            guides.append(BodyEnd(row_ctx.stop_indent))
        if stop != "block":
            guides.append(StopAt(stop))
        if self.monitor.enabled:
            m = self.monitor
            guides.append(DereferenceMonitor(self.analyzer(row_ctx.repo, row_ctx.python), m.allow_bindings,
                                             speculate=m.speculate, hide_dunder=m.hide_dunder,
                                             waits=self.waits))
            if m.keywords:
                from .decoding.guides.keyword_args import KeywordArgMonitor
                guides.append(KeywordArgMonitor(self.analyzer(row_ctx.repo, row_ctx.python)))
        if self.tools.enabled:
            guides.append(self._tool_guide(row_ctx))
        return guides

    def _tool_guide(self, row_ctx: CodeContext):
        """ToolGen's tool-token guide: <COMP> (or, zero-shot, a high-entropy name start) calls
        the analyzer and the model picks among its suggestions."""
        from .decoding.guides.toolcall import ToolCallGuide
        from .models.lora import tool_token_id
        t = self.tools
        comp = None if t.entropy is not None else tool_token_id(self.lm.tokenizer)
        if comp is None and t.entropy is None:
            raise GroundcodeError(f"model {self.lm.name} has no <COMP> token: use a TOOLGEN adapter "
                                  "(--model ADAPTER_DIR) or the zero-shot mode (--tool-entropy NATS)")
        return ToolCallGuide(self.analyzer(row_ctx.repo, row_ctx.python), comp, threshold=t.threshold,
                             entropy=t.entropy, hide_dunder=self.monitor.hide_dunder, waits=self.waits)

    def specs(self, contexts: list[CodeContext], sampling: SamplingConfig, n: int = 1, blocks=None):
        """Engine rows for `n` samples of each context, named (context index, sample index), and
        the context each row sees."""
        from .decoding.engine import RowSpec
        from .decoding.vocab.kernel import warm_in_background
        if sampling.temperature <= 0 and n > 1:
            raise GroundcodeError("n > 1 samples need --temperature > 0 (greedy gives one answer)")
        specs, row_ctxs = [], {}
        for ci, ctx in enumerate(contexts):
            p = self.prompt(ctx, sampling.max_new_tokens, blocks[ci] if blocks else None)
            row_ctx = row_ctxs[ci] = ctx.continued(p.owed)
            if self.monitor.enabled or self.tools.enabled:   # Jedi's cold start runs while the prompt is prefilled,
                self.analyzer(ctx.repo, ctx.python).prewarm(ctx.splice(""))
                warm_in_background()   # and numba loads the mask kernel

            for j in range(n):
                specs.append(RowSpec(p.ids, row_ctx, self.guides(row_ctx, p.owed, sampling.stop),
                                     sampling.seed + j,
                                     id=(ci, j), stop_ids=p.stop_ids))
        return specs, row_ctxs

    def stream(self, contexts: list[CodeContext], sampling: SamplingConfig | None = None, n: int = 1,
               blocks=None):
        """All rows in one engine call (a server's view): events, cancel((i, j))."""
        specs, _ = self.specs(contexts, sampling or SamplingConfig(), n, blocks)
        return self.engine.stream(specs, sampling or SamplingConfig())

    def run(self, contexts: list[CodeContext], sampling: SamplingConfig | None = None, n: int = 1,
            on_event=None, blocks=None) -> list[list[Generation]]:
        """n samples per context, in engine calls of at most `batch_rows` rows; the samples of a
        context go into one call when they fit (one shared prefill)."""
        sampling = sampling or SamplingConfig()
        specs, row_ctxs = self.specs(contexts, sampling, n, blocks)
        results: list[list[Generation | None]] = [[None] * n for _ in contexts]
        chunks: list[list] = [[]]
        for ci in range(len(contexts)):
            mine = specs[ci * n: (ci + 1) * n]
            if len(chunks[-1]) + len(mine) > self.batch_rows:
                chunks.append([])
            for k in range(0, len(mine), self.batch_rows):
                if k:
                    chunks.append([])
                chunks[-1].extend(mine[k: k + self.batch_rows])
        for chunk in (c for c in chunks if c):
            t0 = time.perf_counter()
            outs = self.engine.generate(chunk, sampling, on_event=on_event)
            dt = time.perf_counter() - t0
            for o in outs:
                ci, j = o.id
                ctx = contexts[ci]
                results[ci][j] = Generation(ctx.insertion(row_ctxs[ci], o.completion), len(o.tokens),
                                            round(dt, 4), o.finish_reason, list(o.triggers),
                                            self.lm.name, self.monitor.enabled, o.rollbacks)
        return results  # type: ignore[return-value]
