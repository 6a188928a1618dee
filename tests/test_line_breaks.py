"""Issue 39 item 7, the acceptance test: a lone CR, a CRLF and a U+2028 above the cursor give the
same grounded answer as a LF, with Jedi, ty and TypeScript. Before lines.py took every cursor
computation, `CodeContext.splice` and the LSP client counted `\\n` only: the analyzer was asked
about the wrong line, ty and TypeScript answered a closed list of globals and the monitor forced
one (`self.getattr`), recorded as grounded. Here each variant goes the whole way: the buffer's
cursor (lines.end_position, as guard.cursor_of), cursor_context, the splice, the analyzer's
answer, and a generation with the bundled tiny model whose trigger record is compared."""
from __future__ import annotations

from pathlib import Path

import pytest

from groundcode.analysis import lsp_servers
from groundcode.analysis.base import MembersQuery
from groundcode.api import Generator
from groundcode.config import MonitorConfig, SamplingConfig
from groundcode.context import cursor_context
from groundcode.lines import end_position

FIXTURES = Path(__file__).parent / "fixtures"
PY = '''from shop.registry import Registry


class Cart:
    def __init__(self, owner):
        self.owner = owner
        self.registry = Registry()

    # a note@@    # another note
    def total(self):
        return self.'''
TS = '''import { Registry } from "./registry";

export class Cart {
  private registry = new Registry();
  // a note@@  // another note
  constructor(public owner: string) {}

  add(item: string): number {
    return this.registry.'''


def _variants(text: str, wide: str) -> dict[str, str]:
    """LF, and the one break above the cursor as a lone CR, CRLF or `wide` (U+2028: inside a
    comment, one line to Python, to the LSP and to TypeScript's server); and every break above
    the cursor as CR, as CRLF."""
    out = {name: text.replace("@@", brk) for name, brk in
           (("LF", "\n"), ("CR", "\r"), ("CRLF", "\r\n"), ("U+2028", wide))}
    lf = out["LF"]
    out["all CR"], out["all CRLF"] = lf.replace("\n", "\r"), lf.replace("\n", "\r\n")
    return out


def _grounded(gen, path: Path, repo: Path, texts: dict, receiver: str) -> dict:
    seen = {}
    for name, text in texts.items():
        line, col = end_position(text)            # the client's cursor: the end of its prefix
        want_line = 10 if path.suffix == ".ts" else 12
        assert line == want_line - (name == "U+2028"), name
        ctx = cursor_context(path, line, col, repo, text=text)
        assert ctx.before == text, name
        at = ctx.splice("")
        ans = gen.analyzer_for(ctx).ask(MembersQuery(at, receiver, (name,))).result(60)
        out = gen.run([ctx], SamplingConfig(max_new_tokens=8))[0][0]
        trig = next((t for t in out.triggers if t.receiver == receiver), None)
        assert trig is not None, (name, out.completion, out.triggers)
        seen[name] = (ans.names, ans.failed, trig.failed_open, trig.candidates, trig.chosen)
    return seen


def _same_as_lf(seen: dict, members: set) -> None:
    names, failed, failed_open, candidates, _ = seen["LF"]
    assert members <= names and failed is None and not failed_open, seen["LF"]
    for name, (n, f, fo, c, chosen) in seen.items():
        assert (n, f, fo, c) == (names, failed, failed_open, candidates), name
        assert chosen in names, (name, chosen)


@pytest.mark.parametrize("analyzer", ["jedi", "ty"])
def test_python_breaks_ground_as_lf(analyzer, tiny_lm, shop_repo):
    if analyzer != "jedi":
        lsp_servers.install(analyzer)          # pinned; idempotent (scripts/test installs ty)
    with Generator(tiny_lm, MonitorConfig(enabled=True, analyzer=analyzer, deadline_s=60)) as gen:
        seen = _grounded(gen, shop_repo / "shop" / "cart.py", shop_repo, _variants(PY, "\u2028"), "self")
    _same_as_lf(seen, {"owner", "registry", "total"})


def test_typescript_breaks_ground_as_lf(tiny_lm):
    lsp_servers.install("typescript")
    repo = FIXTURES / "tsshop"
    with Generator(tiny_lm, MonitorConfig(enabled=True, deadline_s=60)) as gen:
        seen = _grounded(gen, repo / "src" / "cart.ts", repo, _variants(TS, "\u2028"), "this.registry")
    _same_as_lf(seen, {"register", "size", "latestUpdate"})
