"""The library's entry points: ground a model on a repository and generate code.

    gen = Generator(model=None | "hf-id-or-path" | LoadedModel, monitor=MonitorConfig(),
                    prompt=PromptConfig(), tools=ToolConfig(enabled=True))   # tools: <COMP> calls
    gen = Generator(model="http://HOST:PORT/v1", tokenizer="smollm2-135m")  # a remote server
    ctx = function_context(file, "Class.method", repo)   # a function body from signature+docstring
    ctx = cursor_context(file, line, col, repo)          # continue at a cursor (line 1-based, col 0-based)
    outs = gen.run([ctx, ...], SamplingConfig(...), n=1) # outs[i][j]: sample j of context i
    for u in gen.stream(ctx, sampling, n=2): ...         # session updates (text, trigger, done)
    gen.session.submit(Request(...))                     # the session itself (session.py)
    v = gen.view(monitor=MonitorConfig(enabled=False))   # same model, other configuration
    gen.block_sources.append(lambda ctx: [PromptBlock(...)])   # snippets / API docs for prompts

Every generation goes through the generator's session (one scheduler thread owns the model;
requests from any thread batch together). Configuration is never changed in place: a view
carries its own, and each request carries the configuration it was made with.

The model sees the prompt (decoding/prompt.py: plain or FIM, context blocks, token healing);
the analyzer sees before + completion + "\\n" + after (the real file around the cursor, in
memory). Not here: contexts (context.py), the session (session.py), the loop
(decoding/engine.py), guides by name (decoding/guides/registry.py), jedi
(analysis/jedi_*.py), the CLI (cli.py).
"""
from __future__ import annotations

from pathlib import Path

from .config import MonitorConfig, PromptConfig, SamplingConfig, ToolConfig
from .context import CodeContext, cursor_context, function_context  # noqa: F401  (public here)
from .contract import Generation  # noqa: F401  (public here)
from .errors import GroundcodeError


class Generator:
    """A model, its vocab index, prompt builder, the engine and one analyzer per repository,
    kept warm (at most `AnalyzerPool.limit` at once, idle ones closed: analysis/pool.py)."""

    def __init__(self, model=None, monitor: MonitorConfig | None = None, device: str | None = None,
                 dtype: str | None = None, batch_rows: int = 16, prompt: PromptConfig | None = None,
                 tools: ToolConfig | None = None, remote_model: str | None = None,
                 tokenizer: str | None = None, remote_constraint: str = "auto",
                 api_key: str | None = None):
        """`model="http://HOST:PORT/v1"`: the model is an OpenAI-compatible server (vLLM,
        llama.cpp, another `groundcode serve`; decoding/remote.py); `remote_model` names the
        served model when there are several, `tokenizer` the local tokenizer that matches it."""
        from .decoding.engine import Engine
        from .decoding.remote import RemoteEngine, is_remote, load_remote
        from .decoding.vocab import VocabIndex
        from .models.load import GGUF, LoadedModel, load_model
        if is_remote(model):
            self.lm = load_remote(model, remote_model, tokenizer, remote_constraint, api_key)
        else:
            self.lm = model if isinstance(model, LoadedModel) else load_model(model, device, dtype)
        self.monitor = monitor or MonitorConfig()
        self.tools = tools or ToolConfig()
        self.vocab = VocabIndex.for_tokenizer(self.lm.tokenizer)
        if is_remote(model):
            self.engine = RemoteEngine(self.lm, self.vocab)
        elif self.lm.dtype == GGUF:                    # the GGUF file on llama.cpp
            from .decoding.llama_engine import LlamaEngine
            self.engine = LlamaEngine(self.lm, self.vocab, max_rows=batch_rows)
        else:
            self.engine = Engine(self.lm.model, self.lm.tokenizer, self.vocab)
        self.prompts = self.prompt_builder(prompt)
        self.block_sources: list = []      # callables ctx -> [PromptBlock]: model-only context
        self.batch_rows = batch_rows
        from .analysis.pool import AnalyzerPool
        self._analyzers = AnalyzerPool()   # bounded: least recently used / idle ones closed
        from .analysis.wait import WaitPolicy
        self.waits = WaitPolicy()          # the analysis-wait window of this generator's rows (the
                                           # session gives each request a view with its own)
        import threading
        self._shared = {"lock": threading.RLock()}   # the session, shared with views

    def prompt_builder(self, config: PromptConfig | None = None):
        """A prompt builder for this model: its window, and the registry's FIM facts if known."""
        from .decoding.prompt import PromptBuilder
        t = self.lm.template
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

    def adopt_session(self, session) -> bool:
        """Make `session` this generator's (and its views') unless it has one: True if it did."""
        with self._shared["lock"]:
            if "session" in self._shared:
                return False
            self._shared["session"] = session
            return True

    @property
    def has_session(self) -> bool:
        with self._shared["lock"]:
            return "session" in self._shared

    def running_analyzers(self) -> list[tuple]:
        """(name, root, process id or None) of every analyzer started, a chain's links apart."""
        from .analysis.base import links
        return [(p.name, key[0], p.pid) for key, a in list(self._analyzers.items()) for p in links(a)]

    def analyzer_report(self) -> list[dict]:
        """Every analyzer's name, root, process id and health (status ok | degraded, reason)."""
        return self._analyzers.report()

    def analyzer(self, repo: Path, python: Path | None = None, trust: bool = False, language=None):
        """The analyzer of a repository (one per repository, interpreter, trust and monitor
        settings, kept warm; views with another monitor configuration get their own). What it
        may run is trust.py's: `python` (else MonitorConfig.python) when named; the repository's
        own venv only when the workspace is trusted (`trust`, MonitorConfig.trust or the user's
        trusted list); else this interpreter, with the venv's site-packages read as files.
        `language` (languages.Language): a file that is not Python is analyzed by its language's
        server — TypeScript's for TypeScript and JavaScript — when the configured analyzer is
        Jedi (Python's alone); the SDK analyzer (botocore) answers for Python only."""
        m = self.monitor
        server = m.analyzer
        if language is not None and language.name != "python":
            from .analysis.lsp_servers import server_for
            server = server_for(language.name, server)
        python = python or m.python
        trust = bool(trust or m.trust)
        root = Path(repo).resolve()
        py = str(python) if python else None
        key = (root, py, trust, m.deadline_s, m.hide_private, m.hide_dunder, m.sdk, server)
        with self._shared["lock"]:      # the scheduler, a prewarm and a server thread may all ask
            return self._analyzer(key, root, python, trust, m, server)

    def _analyzer(self, key, root, python, trust, m, server: str):
        py = key[1]
        a = self._analyzers.get(key) or self._analyzers.get((root, py))   # set_analyzer serves all
        if a is None:
            fast, _, careful = server.partition("+")
            a = self._single(fast, root, python, trust, m)
            if careful:                   # a server's answers, checked by Jedi before a block
                from .analysis.second_opinion import SecondOpinionAnalyzer
                a = SecondOpinionAnalyzer(a, self._single(careful, root, python, trust, m))
            if m.sdk and server != "typescript":
                from .analysis.sdk import ChainAnalyzer, SdkAnalyzer, botocore_version
                if botocore_version():        # botocore installed: SDK first, else Jedi
                    a = ChainAnalyzer([SdkAnalyzer(), a])
            self._analyzers[key] = a
        return a

    @staticmethod
    def _single(server: str, root, python, trust, m):
        if server != "jedi":              # a language server (reads files, runs nothing)
            from .analysis.lsp_client import LspAnalyzer
            from .trust import search_paths, trusted
            a = LspAnalyzer(root, server, deadline_s=m.deadline_s, hide_private=m.hide_private,
                            hide_dunder=m.hide_dunder, paths=search_paths(root, python))
            a.trusted = bool(trust) or trusted(root)  # recorded only: a server runs nothing
            return a
        from .analysis.jedi_client import JediAnalyzer
        return JediAnalyzer(root, deadline_s=m.deadline_s, hide_private=m.hide_private,
                            hide_dunder=m.hide_dunder, python=python, trust=trust)

    def analyzer_for(self, ctx):
        """The analyzer of a context's repository, with its interpreter and trust, for its
        file's language."""
        return self.analyzer(ctx.repo, ctx.python, ctx.trust, ctx.language)

    def set_analyzer(self, repo: Path, analyzer, python: Path | None = None) -> None:
        """Use `analyzer` (anything with the analysis.base.Analyzer interface) for `repo`."""
        self._analyzers.pin((Path(repo).resolve(), str(python) if python else None), analyzer)

    def close(self) -> None:
        """Stop the session and the analyzers' worker processes (also on `with Generator(...)
        as gen:` exit)."""
        s = self._shared.pop("session", None)
        if s is not None:
            s.close()
        self._analyzers.close()
        self.engine.close()                    # a remote model's HTTP client and thread pool

    def __enter__(self) -> "Generator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def prompt(self, ctx: CodeContext, max_new_tokens: int, blocks=None):
        """The model's prompt for `ctx` (blocks: extra PromptBlocks besides block_sources')."""
        return self.prompts.build(ctx, max_new_tokens, self.context_blocks(ctx, self.prompts.config, blocks))

    def context_blocks(self, ctx: CodeContext, config: PromptConfig, blocks=None) -> list:
        """The PromptBlocks of a grounded context's prompt, best first (the budget keeps the
        first that fit): the IDE's declarations when `config.declarations`, then the block
        sources' (retrieval), then `blocks`. The one place both `prompt` and the session's
        scheduler take them from."""
        every = [b for src in self.block_sources for b in src(ctx)] + list(blocks or ())
        if config.declarations:
            from .retrieval.declarations import declaration_blocks
            tok = self.lm.tokenizer
            every = declaration_blocks(ctx, config.declaration_tokens, lambda s: len(
                tok(s, add_special_tokens=False)["input_ids"])) + every
        return every

    def guides(self, row_ctx: CodeContext, prompt, sampling: SamplingConfig, names=None,
               stop=()) -> list:
        """The guides of one row, by name (decoding/guides/registry.py; None: this generator's
        defaults); `row_ctx` is the context the row sees (ctx.continued(prompt.owed))."""
        from .decoding.guides.registry import GuideSpec, build, default_names
        names = default_names(self.monitor, self.tools) if names is None else tuple(names)
        return build(names, GuideSpec(self, row_ctx, prompt, sampling, tuple(stop)))

    def tool_guide(self, row_ctx: CodeContext):
        """ToolGen's tool-token guide: <COMP> (or, zero-shot, a high-entropy name start) calls
        the analyzer and the model picks among its suggestions."""
        from .decoding.guides.toolcall import ToolCallGuide
        from .models.lora import tool_token_id
        t = self.tools
        comp = None if t.entropy is not None else tool_token_id(self.lm.tokenizer)
        if comp is None and t.entropy is None:
            raise GroundcodeError(f"model {self.lm.name} has no <COMP> token: use a TOOLGEN adapter "
                                  "(--model ADAPTER_DIR) or the zero-shot mode (--tool-entropy NATS)")
        from .analysis.wait import PatientWait
        return ToolCallGuide(self.analyzer_for(row_ctx), comp, threshold=t.threshold,
                             entropy=t.entropy, hide_dunder=self.monitor.hide_dunder,
                             waits=PatientWait() if self.monitor.reproducible else self.waits)

    def prewarm(self, ctx: CodeContext) -> None:
        """Start the analyzer (Jedi's cold start), the mask kernel and the project's member
        vocabulary (its scan, the buffer's names) while the prompt is prefilled. `ctx`: the
        context the rows see (after healing), so the monitor finds the buffer read."""
        from .decoding.vocab.kernel import warm_in_background
        if self.monitor.enabled or self.tools.enabled:
            self.analyzer_for(ctx).prewarm(ctx.splice(""))
            warm_in_background()
        if self.monitor.enabled and self.monitor.vocabulary and ctx.repo is not None:
            from .analysis.vocabulary import buffer_of, project_vocabulary
            project_vocabulary(ctx.repo).names(ctx.path, buffer_of(ctx))   # read in the background

    def specs(self, contexts: list[CodeContext], sampling: SamplingConfig, n: int = 1, blocks=None):
        """Engine rows for `n` samples of each context, named (context index, sample index), and
        the context each row sees: for drivers that run the engine themselves (teacher-forced
        replay, DAG++'s statement passes). Generation goes through the session (`run`)."""
        from .decoding.engine import RowSpec
        if sampling.temperature <= 0 and n > 1:
            raise GroundcodeError("n > 1 samples need --temperature > 0 (greedy gives one answer)")
        specs, row_ctxs = [], {}
        for ci, ctx in enumerate(contexts):
            p = self.prompt(ctx, sampling.max_new_tokens, blocks[ci] if blocks else None)
            row_ctx = row_ctxs[ci] = ctx.continued(p.owed)
            self.prewarm(row_ctx)
            for j in range(n):
                specs.append(RowSpec(p.ids, row_ctx, self.guides(row_ctx, p, sampling),
                                     sampling.seed + j, id=(ci, j), stop_ids=p.stop_ids))
        return specs, row_ctxs

    def request(self, ctx: CodeContext, sampling: SamplingConfig | None = None, n: int = 1,
                blocks=(), **kw):
        """A session Request for `ctx` with this generator's (view's) configuration."""
        from .session import Request
        return Request(context=ctx, sampling=sampling or SamplingConfig(), n=n, blocks=tuple(blocks or ()),
                       monitor=self.monitor, tools=self.tools, prompt=self.prompts.config, **kw)

    def stream(self, context: CodeContext, sampling: SamplingConfig | None = None, n: int = 1,
               blocks=(), **kw):
        """One request through the session: a stream of updates (session.Stream); `.cancel()`."""
        return self.session.submit(self.request(context, sampling, n, blocks, **kw))

    def run(self, contexts: list[CodeContext], sampling: SamplingConfig | None = None, n: int = 1,
            on_event=None, blocks=None) -> list[list[Generation]]:
        """n samples per context, all submitted to the session at once (they batch);
        `on_event(update)` sees every update (session.Update) of every context in turn."""
        sampling = sampling or SamplingConfig()
        if sampling.temperature <= 0 and n > 1:
            raise GroundcodeError("n > 1 samples need --temperature > 0 (greedy gives one answer)")
        streams = [self.stream(ctx, sampling, n, blocks[ci] if blocks else ()) for ci, ctx in enumerate(contexts)]
        try:
            if on_event is not None:
                for st in streams:
                    for u in st:
                        on_event(u)
            return [st.result() for st in streams]
        except BaseException:
            for st in streams:
                st.cancel()
            raise
