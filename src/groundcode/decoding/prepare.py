"""A request's preparation, off the scheduler thread: the prompt (tokenizing, the context
blocks: the IDE's declarations read with `ast`, retrieval), the contexts, the analyzer's
prewarm, the guides by name and the rows (a guide's reset may scan the project: the member
vocabulary). One worker thread, in arrival order; the scheduler goes on decoding the running
batch meanwhile and admits the request when its preparation is done (decoding/scheduler.py:
the drafts, the cancel and the prefill stay on the scheduler thread: they read its state).

    prep = Preparer(generator, engine)
    prep.start(job, wake)       # job.prep: a future; wake() when it is done
    prep.close()

Test: tests/test_session.py (a slow preparation does not stall the running rows).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ..context import CodeContext
from .guides.another_start import AnotherStart
from .guides.logit_bias import LogitBias
from .guides.registry import GuideSpec, build, default_names
from .guides.stop_strings import StopStrings
from .rows import RowSpec


class Preparer:
    def __init__(self, generator, engine):
        self.gen, self.engine = generator, engine
        self._builders: dict = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groundcode-prepare")

    def start(self, job, wake) -> None:
        job.prep = self._pool.submit(self._prepare, job)
        job.prep.add_done_callback(lambda _f: wake())

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _builder(self, config):
        key = repr(config)
        b = self._builders.get(key)
        if b is None:
            b = self._builders[key] = self.gen.prompt_builder(config)
        return b

    def _prepare(self, job) -> None:
        """Sets job.gen, ctx, row_ctx, prompt and rows; raises what fails (the scheduler ends
        the request with it)."""
        if job.stream.cancelled.is_set():
            return                                # ended while it waited: the sweep ends it
        req = job.request
        gen = job.gen = self.gen.view(req.monitor, req.tools)
        from ..analysis.wait import WaitPolicy
        gen.waits = WaitPolicy()          # this request's own window: another request's
                                          # stalled repository never cuts its waits short
        pconf = req.prompt or gen.prompts.config
        grounded = req.context is not None
        raw = req.prompt_ids is not None      # token ids: the model as is (a remote back end)
        if grounded:
            ctx = req.context
        else:
            ctx = CodeContext(path="<prompt>", repo=".", before=req.prompt_text or "",
                              after=req.suffix_text or "", scope="<prompt>", kind="cursor")
            pconf = replace(pconf, fim="on" if req.suffix_text is not None else "off")
        if raw:
            from .prompt import Prompt
            prompt = Prompt(ids=list(req.prompt_ids))
        else:
            builder = self._builder(pconf)
            # declarations need a file (a grounded context); retrieval works on any text
            every = gen.context_blocks(ctx, pconf if grounded else replace(pconf, declarations=False),
                                       req.blocks)
            prompt = builder.build(ctx, req.sampling.max_new_tokens, every)
        row_ctx = ctx.continued(prompt.owed)
        names = req.guides if req.guides is not None else (
            default_names(gen.monitor, gen.tools) if grounded else ())
        if grounded and set(names) & {"dereference", "keywords", "toolcall"}:
            gen.prewarm(row_ctx)          # what the rows' guides will see
        rows = []
        for j in range(1 if job.warm else req.n):
            if job.warm:
                guides = []
            elif raw:       # no healing, block ends or repetition stops: the stop strings only
                guides = [StopStrings(req.stop)] if any(req.stop) else []
            else:
                guides = build(names, GuideSpec(gen, row_ctx, prompt, req.sampling, tuple(req.stop), grounded))
            if req.logit_bias and not job.warm:
                guides.insert(0, LogitBias(req.logit_bias))
            if job.ahead is not None:
                guides.insert(0, AnotherStart(len(prompt.owed), job.ahead.chars))
            spec = RowSpec(prompt.ids, row_ctx, guides, req.sampling.seed + j, id=(job, j),
                           stop_ids=prompt.stop_ids)
            rows.append(self.engine.row(spec, req.sampling, j))   # its batch index: at add()
        job.ctx, job.row_ctx, job.prompt, job.rows = ctx, row_ctx, prompt, rows
