"""Several signatures read as one (issue 41: "overloads: any overload that still fits"): a
callee with overloads (`@overload`, a stub's: `typing.cast`, `dict.get`, `str.split`) or a union
of callables. Where their parameters agree by name at every position they share, the merged
signature refuses only what every one of them refuses: its positions are the longest's, a
parameter is required only where every signature requires it, a keyword may be any signature's
(positional-only only where it is so in all), `*args`/`**kwargs` where any has them. Signatures
that name a position differently stay unknown: which one binds cannot be told. Used by
jedi_worker.call_signature and lsp_messages.signature. Test: tests/test_call_signatures.py.
"""
from __future__ import annotations

from .base import CallSignature, ParamSpec


def merge(sigs: list[CallSignature]) -> CallSignature | None:
    """The one signature that fits a call wherever any of `sigs` fits it (None: they disagree
    by name at a shared position, or there are none)."""
    if len(sigs) <= 1:
        return sigs[0] if sigs else None
    pos = [[p for p in s.params if p.kind != "keyword"] for s in sigs]
    longest = max(pos, key=len)
    if any(p.name != longest[i].name for ps in pos for i, p in enumerate(ps)):
        return None
    by_name: dict[str, list[ParamSpec]] = {}
    for s in sigs:
        for p in s.params:
            by_name.setdefault(p.name, []).append(p)

    def required(name: str) -> bool:
        got = by_name[name]
        return len(got) == len(sigs) and all(p.required for p in got)

    params = [ParamSpec(p.name, "positional" if all(q.kind == "positional" for q in by_name[p.name]) else "either",
                        required(p.name)) for p in longest]
    placed = {p.name for p in longest}
    for name in by_name:                       # keyword-only in every signature that has it
        if name not in placed:
            params.append(ParamSpec(name, "keyword", required(name)))
    return CallSignature(sigs[0].name, tuple(params), any(s.var_positional for s in sigs),
                         any(s.var_keyword for s in sigs))
