"""Call audit for TypeScript (issue 41): would the arity monitor (decoding/guides/call_arity.py)
ever forbid the packages' own calls? For every call `f(…)` / `obj.m(…)` / `new C(…)` in the
TypeScript files the recipe's tasks come from (tree-sitter finds them), the callee is read and
the signature asked exactly as the monitor does — `CallArityMonitor._callee` at the `(`, a
SignatureQuery to TypeScript's server with the call's text cut after the `(` and the file's rest
after the call's last line kept — and the call as the package writes it (`read_args`: the
monitor's count: at least so many against the parameters, at most against the required ones)
is judged: more arguments than parameters without a rest parameter (the signature asked again
where the extra argument begins, as the monitor does), or fewer than the last required
parameter needs, is a false block. Spread arguments are not judged.

    .venv/bin/python benchmarks/ts_call_audit.py --tasks ~/.cache/groundcode/bench/typescript-heldout/tasks.jsonl \
        [--max-calls 2000] [--out benchmarks/results/ts_call_audit.json] [--examples FILE]

Prints a table per recipe and writes the JSON (counts only; examples quote package code, so they
go to a file outside the repository). Needs `groundcode analyzers install typescript`.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from groundcode.analysis.base import SignatureQuery
from groundcode.context import CodeContext, Splice
from groundcode.decoding.guides.call_arity import TYPED, CallArityMonitor, read_args
from groundcode.jsonl import read_jsonl
from groundcode.lines import end_position


def calls_of(text: str) -> list[int]:
    """The offsets of the `(` of every call and `new` expression with an argument list."""
    from groundcode.languages.typescript_scope import _parser
    data = text.encode("utf-8")
    out = []

    def walk(n) -> None:
        if n.type in ("call_expression", "new_expression"):
            args = n.child_by_field_name("arguments")
            if args is not None and args.type == "arguments":
                out.append(len(data[: args.start_byte].decode("utf-8", "replace")))
        for c in n.children:
            walk(c)
    walk(_parser().parse(data).root_node)
    return sorted(out)


class _Probe(CallArityMonitor):
    """The monitor's own reading of a callee at a `(`, on a file's text."""

    def __init__(self, ctx: CodeContext):
        self.ctx, self.prefix = ctx, ""
        self.lexer = ctx.language.Lexer("")


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from groundcode.analysis.lsp_client import LspAnalyzer
    from groundcode.trust import search_paths
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, action="append", required=True)
    ap.add_argument("--max-calls", type=int, default=2000, help="per recipe, shared by its packages (file order)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ts_call_audit.json")
    ap.add_argument("--examples", type=Path, default=None)
    args = ap.parse_args()
    console = Console()
    result = {"analyzer": "typescript", "recipes": {}}
    examples = []
    for tasks_file in args.tasks:
        files = list(dict.fromkeys((t["repo_dir"], t["path"]) for t in read_jsonl(tasks_file)
                                   if Path(t["path"]).suffix in TYPED))
        per_repo: dict = {}
        for repo, path in files:
            text = (Path(repo) / path).read_text(encoding="utf-8", errors="replace")
            ctx = CodeContext(path=Path(repo) / path, repo=Path(repo), before="")
            probe = _Probe(ctx)
            for paren in calls_of(text):
                callee = probe._callee(text[: paren + 1], paren)
                if callee:
                    per_repo.setdefault(repo, []).append((repo, path, text, paren, callee))
        quota = -(-args.max_calls // max(1, len(per_repo)))
        work = [w for ws in per_repo.values() for w in ws[:quota]]
        r, reasons, why_blocked, ms = Counter(), Counter(), Counter(), []
        current: dict = {}
        t0 = time.perf_counter()
        with Progress(console=console) as prog:
            bar = prog.add_task(f"{tasks_file.parent.name}: calls", total=len(work))
            for repo, path, text, paren, callee in work:
                a = current.get(repo)
                if a is None:
                    for old in current.values():
                        old.close()
                    current = {repo: LspAnalyzer(Path(repo).resolve(), "typescript", deadline_s=30.0,
                                                 paths=search_paths(Path(repo).resolve(), None))}
                    a = current[repo]
                got = read_args(text[paren + 1:])
                end = text.find("\n", paren + 1 + max(0, got.closed))
                end = len(text) if end < 0 else end + 1
                head = text[: paren + 1]
                line, col = end_position(head)
                sp = Splice(head + "\n" + text[end:], line, col, Path(repo) / path, None)
                receiver, _, name = callee.rpartition(".")
                ans = a.ask(SignatureQuery(sp, receiver, name)).result(30)
                r["calls"] += 1
                prog.advance(bar)
                if ans is None or ans.signature is None:
                    r["unknown"] += 1
                    reasons["timeout" if ans is None else (ans.failed or "unknown").split(":")[0]] += 1
                    continue
                ms.append(ans.ms)
                if got.spread or got.closed < 0:
                    r["not_judged"] += 1
                    continue
                sig = ans.signature
                need, most = _Probe._bounds_of(None, sig)
                if got.least > most:       # as the monitor: asked again where the extra one begins
                    cut = got.commas[int(most) - 1] + 1 if most else 0     # (after its sure comma)
                    head2 = text[: paren + 1 + cut]
                    line2, col2 = end_position(head2)
                    again = a.ask(SignatureQuery(Splice(head2 + "\n" + text[end:], line2, col2, Path(repo) / path, None),
                                                 receiver, name)).result(30)
                    r["asked_again"] += 1
                    if again is None or again.signature is None:
                        r["not_judged"] += 1
                        continue
                    sig = again.signature
                    need, most = _Probe._bounds_of(None, sig)
                r["judged"] += 1
                why = "too many" if got.least > most else "too few" if got.count < need else None
                if why:
                    r["false_blocks"] += 1
                    why_blocked[why] += 1
                    examples.append({"recipe": tasks_file.parent.name, "file": f"{repo}/{path}:{line}",
                                     "call": callee, "arguments": got.count, "why": why,
                                     "signature": [(p.name, p.required) for p in sig.params],
                                     "rest": sig.var_positional})
        for a in current.values():
            a.close()
        ms.sort()
        rec = dict(r, seconds=round(time.perf_counter() - t0, 1), files=len(files),
                   unknown_reasons=dict(reasons.most_common()), blocked=dict(why_blocked),
                   false_blocks_per_1000=round(1000 * r["false_blocks"] / r["judged"], 2) if r["judged"] else None,
                   answer_ms_p50=round(ms[len(ms) // 2], 1) if ms else None,
                   answer_ms_p90=round(ms[int(0.9 * (len(ms) - 1))], 1) if ms else None)
        result["recipes"][tasks_file.parent.name] = rec
    t = Table(title="TypeScript call audit · the packages' own calls judged by the arity monitor's signatures")
    for col in ("recipe", "calls", "unknown", "judged", "false blocks", "per 1,000", "p50/p90 ms"):
        t.add_column(col)
    for name, v in result["recipes"].items():
        t.add_row(name, str(v.get("calls", 0)), str(v.get("unknown", 0)), str(v.get("judged", 0)),
                  str(v.get("false_blocks", 0)), str(v["false_blocks_per_1000"]),
                  f"{v['answer_ms_p50']}/{v['answer_ms_p90']}")
    console.print(t)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.examples:
        args.examples.parent.mkdir(parents=True, exist_ok=True)
        with open(args.examples, "w", encoding="utf-8") as f:
            for e in examples:
                f.write(json.dumps(e) + "\n")
    console.print(f"→ {args.out}" + (f", examples → {args.examples}" if args.examples else ""))


if __name__ == "__main__":
    main()
