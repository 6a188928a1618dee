"""`groundcode lsp` over a scripted model, for tests/test_lsp_deadline.py (pytest-lsp drives it
as an editor would, over stdio): the bundled-style tiny model made to write `sc` at
`return self.di|` and then have its request's deadline fall (tests/scripted.py `DeadlineAt`),
an analyzer that answers Cart's members (with the buffer's `discounts`) at once. What the
server answered, and whether the cut happened, is written as JSON to $GC_SCRIPTED_LOG.

    python tests/scripted_lsp.py        # speaks LSP on stdin/stdout
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

MEMBERS = {"add", "last", "owner", "registry", "discounts", "total", "__init__"}


def main() -> None:
    from fake_analyzer import FakeBase
    from scripted import DeadlineAt, scripted_lm

    from groundcode.analysis.base import Analysis
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig
    from groundcode.models.load import load_model
    from groundcode.models.tiny import build_tiny_model
    from groundcode.server.lsp import serve_stdio
    from groundcode.server.lsp_completer import Completer
    from groundcode.session import Session

    class Members(FakeBase):
        def members(self, code, path, line, column, *, receiver, cache_key):
            if receiver == "self":
                return Analysis(receiver, frozenset(MEMBERS), 1.0, False, None)
            return Analysis(receiver, frozenset(), 1.0, False, "empty")

    log = Path(os.environ["GC_SCRIPTED_LOG"])
    seen = {"fired": 0, "answers": []}
    rules = DeadlineAt("sc", "ounts\n")
    lm = load_model(str(build_tiny_model(Path(tempfile.mkdtemp()) / "model")))

    def load():
        gen = rules.bind(Generator(scripted_lm(lm, rules), MonitorConfig(enabled=True)))
        fake = Members()
        gen.analyzer = lambda *a, **kw: fake          # every root: the members above
        Session(gen, lookahead=0)
        return gen

    class Logged(Completer):
        async def complete(self, *a, **kw):
            ans = await super().complete(*a, **kw)
            seen["fired"] = rules.fired
            if ans is not None:
                seen["answers"].append({"text": ans.text, "finish_reason": ans.finish_reason,
                                        "grounded": ans.grounded})
            log.write_text(json.dumps(seen))
            return ans

    serve_stdio(Logged(load, [], debounce_s=0, deadline_s=60))


if __name__ == "__main__":
    main()
