"""The layout shows the architecture (issue 29): the import graph of src/groundcode has no
cycle — lazy imports inside functions included (they are imports all the same). A cycle is
cut with a leaf module for what both sides need (contract.py, console.py,
analysis/jedi_texts.py)."""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"


def _graph() -> dict:
    root = SRC / "groundcode"
    mods = {}
    for p in root.rglob("*.py"):
        parts = p.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    g = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != m:
                    g[m].add(t)
    return g


def _cycles(g: dict) -> list[list[str]]:
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_cycle():
    g = _graph()
    assert len(g) > 100 and "groundcode.decoding.scheduler" in g
    assert _cycles(g) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_no_source_file_is_over_500_lines():
    long = {str(p.relative_to(SRC)): n for p in (SRC / "groundcode").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}
