"""Guides by name: one factory per guide, so a request names the guides it wants (and a new guide
is one `@register` away) instead of an if-chain in the API.

    names = default_names(monitor, tools)             # the generator's configuration
    guides = build(names, GuideSpec(generator, row_ctx, prompt, sampling, stop=("\\n\\n",)))

Names, in order of authority (masks are intersected in this order; a later mask that would
leave nothing allowed is dropped for that step, masking.combine):

    heal          token healing: re-write the whitespace the prompt gave back     (implied)
    body_end      stop when the code leaves the function / the cursor's block    (implied)
    stop_at       stop after the first line or statement (sampling.stop)         (implied)
    stop_strings  stop before the first of the request's stop strings            (implied)
    repetition    stop a row caught in a loop, one copy kept (repetition.py)     (implied)
    dereference   after `expr.` only members of expr (the MGD monitor)
    keywords      calls that fit a known signature: keyword names and arity (Python), arity (TypeScript)
    names         names read and modules imported exist (names.py; TypeScript: names_ts.py)
    toolcall      ToolGen's tool token (<COMP>) or zero-shot entropy trigger

The implied guides carry the prompt's and the request's own semantics: they are always built
where they apply (a factory returns None where not: nothing owed, no block to end, ...). A
request's `guides` names the others; None means the generator's defaults.
Test: tests/test_session.py (named guides), tests/test_engine.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import GroundcodeError

FACTORIES: dict = {}
IMPLIED = ("heal", "body_end", "stop_at", "stop_strings", "repetition")


@dataclass(frozen=True)
class GuideSpec:
    """What a factory may read to build one row's guide."""
    generator: object                  # api.Generator (a view with the request's configuration)
    row_ctx: object                    # the CodeContext the row sees (ctx.continued(owed))
    prompt: object                     # decoding.prompt.Prompt
    sampling: object                   # SamplingConfig
    stop: tuple = field(default=())    # the request's stop strings
    grounded: bool = True              # a repository context (not a plain text prompt)


def register(name: str):
    def deco(factory):
        FACTORIES[name] = factory
        return factory
    return deco


def default_names(monitor, tools) -> tuple:
    names = []
    if monitor.enabled:
        names.append("dereference")
        if monitor.keywords:
            names.append("keywords")
        if monitor.names:
            names.append("names")
    if tools.enabled:
        names.append("toolcall")
    return tuple(names)


def build(names, spec: GuideSpec) -> list:
    """The guides of one row: the implied ones that apply, then `names`, in registry order."""
    unknown = [n for n in names if n not in FACTORIES]
    if unknown:
        raise GroundcodeError(f"unknown guide {unknown[0]!r}: known guides are {', '.join(FACTORIES)}")
    wanted = set(names) | set(IMPLIED)
    if not spec.grounded and set(names) - set(IMPLIED):
        raise GroundcodeError("grounding guides need a code context (a repository), not prompt_text")
    out = []
    for name, factory in FACTORIES.items():
        if name in wanted:
            g = factory(spec)
            if g is not None:
                out.append(g)
    return out


@register("heal")
def _heal(s: GuideSpec):
    from .heal import Heal
    return Heal(s.prompt.owed) if s.prompt.owed else None


@register("body_end")
def _body_end(s: GuideSpec):
    from .body_end import BodyEnd
    ctx = s.row_ctx
    if ctx is not None and ctx.language.Braces is not None:      # braces end blocks (TS, JS)
        from .brace_end import BraceEnd
        if ctx.kind == "body":
            return BraceEnd(s.prompt.owed)
        return BraceEnd(s.prompt.owed, ctx.language.inline_braces(ctx.before, s.prompt.owed))   # the cursor's block
    ind = ctx.stop_indent if ctx is not None else None
    return BodyEnd(ind) if ind is not None else None


@register("stop_at")
def _stop_at(s: GuideSpec):
    from .stop_at import StopAt
    return StopAt(s.sampling.stop) if s.sampling.stop != "block" else None


@register("stop_strings")
def _stop_strings(s: GuideSpec):
    from .stop_strings import StopStrings
    return StopStrings(s.stop, skip=len(s.prompt.owed)) if any(s.stop) else None


@register("repetition")
def _repetition(s: GuideSpec):
    from .repetition import RepetitionStop
    return RepetitionStop()


@register("dereference")
def _dereference(s: GuideSpec):
    from .dereference import DereferenceMonitor
    g, ctx = s.generator, s.row_ctx
    m = g.monitor
    return DereferenceMonitor(g.analyzer_for(ctx), m.allow_bindings,
                              speculate=m.speculate, hide_dunder=m.hide_dunder,
                              waits=None if m.reproducible else g.waits, reproducible=m.reproducible,
                              call_sites=m.call_sites, vocabulary=m.vocabulary)


@register("keywords")
def _keywords(s: GuideSpec):
    g = s.generator
    m = g.monitor
    if not s.row_ctx.language.heuristics:       # TypeScript: the arity of calls (call_arity.py)
        from .call_arity import TYPED, CallArityMonitor
        if s.row_ctx.path.suffix not in TYPED:
            return None
        return CallArityMonitor(g.analyzer_for(s.row_ctx), reproducible=m.reproducible)
    from .keyword_args import KeywordArgMonitor           # Python's keyword arguments and arity
    return KeywordArgMonitor(g.analyzer_for(s.row_ctx), reproducible=m.reproducible)


@register("names")
def _names(s: GuideSpec):
    ctx = s.row_ctx
    if ctx.language.heuristics:                  # Python's scopes and modules
        from .names import NamesMonitor as cls
    elif ctx.language.name == "typescript":      # tree-sitter's reading, the server's names
        from .names_ts import TsNamesMonitor as cls
    else:
        return None
    g = s.generator
    m = g.monitor
    return cls(g.analyzer_for(ctx), waits=None if m.reproducible else g.waits, reproducible=m.reproducible)


@register("toolcall")
def _toolcall(s: GuideSpec):
    return s.generator.tool_guide(s.row_ctx)
