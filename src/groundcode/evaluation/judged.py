"""The hallucination judge's view of a sample's lint (dependency-free: benchmarks/hallucinations.py
reads it with the system interpreter). Not counted: a name or member message about the identifier a
budget cut may have cut in two (the scorer's `cut_name`: [line, name]) and an unresolved import that
resolved when run (the scorer's `import_ok`, import_check.py).
Test: tests/test_bench_scoring.py, tests/test_import_check.py.
"""
from __future__ import annotations

CUT_SYMBOLS = ("undefined-variable", "no-member")


def judged_messages(messages: list[str], cut: list | None, import_ok=()) -> list[str]:
    """`messages` ("LINE: SYMBOL: TEXT") without those about the name the budget cut and the
    unresolved imports that resolved when run."""
    out = [m for m in messages if m not in import_ok]
    if not cut:
        return out
    line, name = cut
    return [m for m in out if not (m.startswith(f"{line}: ") and m.split(": ", 2)[1:2] and
                                    m.split(": ", 2)[1] in CUT_SYMBOLS and f"'{name}'" in m)]
