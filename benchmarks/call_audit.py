"""Call audit: would a check of calls against their signatures (issue 41) ever forbid the
packages' own calls? For every call `f(…)` / `obj.m(…)` in the source files the recipe's tasks
come from, the analyzer is asked for the signature as the keyword monitor asks it
(decoding/guides/keyword_args.py: a SignatureQuery right after the `(`, the call's text cut,
the rest of the file after the call's last line kept) and the call as the package writes it is
judged against the answer:

- keyword names: each `name=` must be a parameter that takes a keyword, unless the signature
  has `**kwargs` — a miss is a false block of the keyword check (the monitor rolls it back);
- arity: the positional count and the keywords must bind (`inspect.Signature.bind`: too many
  positional arguments, a required parameter missing) — calls with `*args`/`**kw` unpacking
  are not judged; a miss is a false block an arity check would make.

The analyzer is the shipped one (Jedi, the repository as its project, groundcode's interpreter,
untrusted). Every answer is waited for (30 s).

    .venv/bin/python benchmarks/call_audit.py --tasks ~/.cache/groundcode/bench/heldout/tasks.jsonl \
        [--max-calls 3000] [--out benchmarks/results/call_audit.json] [--examples ~/.cache/groundcode/audit/calls.jsonl]

Prints a table per recipe and writes the JSON (counts only; examples quote package code, so they
go to a file outside the repository).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import time
from collections import Counter
from pathlib import Path

from groundcode.analysis.base import SignatureQuery
from groundcode.context import Splice
from groundcode.jsonl import read_jsonl
from groundcode.lines import end_position


def calls_of(text: str) -> list[dict]:
    """The calls of a module whose callee is a name or a dotted name (what the monitor asks
    about), in source order: the `(` offset, the callee's receiver and name, the positional
    count, the keyword names, and whether anything is unpacked."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(lineno, col):                 # ast columns are UTF-8 bytes
        line = text[starts[lineno - 1]: starts[lineno]]
        return starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
            continue
        f = node.func
        paren = text.find("(", offset(f.end_lineno, f.end_col_offset))
        end = starts[node.end_lineno] if node.end_lineno < len(starts) else len(text)
        if paren < 0:
            continue
        receiver = ast.get_source_segment(text, f.value) if isinstance(f, ast.Attribute) else ""
        close = offset(node.end_lineno, node.end_col_offset) - 1       # the call's `)`
        one_line_comma = "\n" not in text[paren:close] and text[paren + 1:close].rstrip().endswith(",")
        out.append({"paren": paren, "end": end, "receiver": receiver or "",
                    "name": f.attr if isinstance(f, ast.Attribute) else f.id,
                    "positional": len(node.args), "keywords": [k.arg for k in node.keywords if k.arg],
                    "unpacked": any(isinstance(a, ast.Starred) for a in node.args)
                    or any(k.arg is None for k in node.keywords), "line": node.lineno,
                    "one_line_comma": one_line_comma})
    out.sort(key=lambda c: c["paren"])
    return out


def judge(sig, call: dict) -> tuple[list[str], str | None]:
    """(keywords the signature refuses, why the call would not bind or None). A call on one
    line with a trailing comma after every parameter is bound (`f(a, b,)`) is refused by the
    arity rule for commas (keyword_args._comma_past_end): "trailing comma, nothing to bind"."""
    bad = [] if sig.var_keyword else [k for k in call["keywords"] if k not in sig.keywords()]
    if call["unpacked"]:
        return bad, None
    if call.get("one_line_comma") and not sig.var_positional and not sig.var_keyword:
        from groundcode.decoding.guides.keyword_args import _bound    # the rule's own reading
        taken = _bound(sig, call["positional"], call["keywords"])
        if all(p.name in taken for p in sig.params):
            return bad, "trailing comma, nothing to bind"
    try:
        sig.to_inspect().bind(*[None] * call["positional"], **{k: None for k in call["keywords"]})
    except TypeError as exc:
        return bad, str(exc).split(":")[0]
    except ValueError as exc:          # a signature inspect cannot build: counted, not judged
        return bad, f"unreadable: {exc}"
    return bad, None


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, action="append", required=True)
    ap.add_argument("--max-calls", type=int, default=3000, help="per recipe, shared by its packages (file order)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "call_audit.json")
    ap.add_argument("--examples", type=Path, default=None)
    args = ap.parse_args()
    from groundcode.analysis.jedi_client import JediAnalyzer
    console = Console()
    result = {"analyzer": "jedi", "recipes": {}}
    examples = []
    for tasks_file in args.tasks:
        files = list(dict.fromkeys((t["repo_dir"], t["path"]) for t in read_jsonl(tasks_file)
                                   if t["path"].endswith(".py")))
        per_repo: dict = {}
        for repo, path in files:
            text = (Path(repo) / path).read_text(encoding="utf-8", errors="replace")
            per_repo.setdefault(repo, []).extend((repo, path, text, c) for c in calls_of(text))
        quota = -(-args.max_calls // max(1, len(per_repo)))      # every package, in file order
        work = [w for ws in per_repo.values() for w in ws[:quota]]
        r = Counter()
        reasons, arity_why, ms = Counter(), Counter(), []
        analyzers: dict = {}
        t0 = time.perf_counter()
        with Progress(console=console) as prog:
            bar = prog.add_task(f"{tasks_file.parent.name}: calls", total=len(work))
            for repo, path, text, c in work:
                a = analyzers.get(repo)
                if a is None:
                    for old in analyzers.values():
                        old.close()
                    analyzers = {repo: JediAnalyzer(repo, deadline_s=30.0)}
                    a = analyzers[repo]
                head = text[: c["paren"] + 1]
                line, col = end_position(head)
                sp = Splice(head + "\n" + text[c["end"]:], line, col, Path(repo) / path, None)
                ans = a.ask(SignatureQuery(sp, c["receiver"], c["name"])).result(30)
                r["calls"] += 1
                prog.advance(bar)
                if ans is None or ans.signature is None:
                    r["unknown"] += 1
                    reasons["timeout" if ans is None else (ans.failed or "unknown").split(":")[0]] += 1
                    continue
                ms.append(ans.ms)
                sig = ans.signature
                bad, why = judge(sig, c)
                r["keywords_checked"] += 0 if sig.var_keyword else len(c["keywords"])
                r["keyword_false_blocks"] += len(bad)
                r["arity_checked"] += not c["unpacked"]
                r["arity_false_blocks"] += why is not None
                if why:
                    arity_why[why] += 1
                if bad or why:
                    examples.append({"recipe": tasks_file.parent.name, "file": f"{repo}/{path}:{c['line']}",
                                     "call": f"{c['receiver']}.{c['name']}" if c["receiver"] else c["name"],
                                     "refused": bad, "arity": why,
                                     "signature": [(p.name, p.kind, p.required) for p in sig.params],
                                     "var": [sig.var_positional, sig.var_keyword]})
        for a in analyzers.values():
            a.close()
        ms.sort()
        per = (lambda n, d: round(1000 * n / d, 2) if d else None)
        rec = dict(r, seconds=round(time.perf_counter() - t0, 1), files=len(files),
                   unknown_reasons=dict(reasons.most_common()), arity_reasons=dict(arity_why.most_common()),
                   keyword_false_blocks_per_1000=per(r["keyword_false_blocks"], r["keywords_checked"]),
                   arity_false_blocks_per_1000=per(r["arity_false_blocks"], r["arity_checked"]),
                   answer_ms_p50=round(ms[len(ms) // 2], 1) if ms else None,
                   answer_ms_p90=round(ms[int(0.9 * (len(ms) - 1))], 1) if ms else None)
        result["recipes"][tasks_file.parent.name] = rec
    t = Table(title=f"Call audit · jedi · the packages' own calls judged by their signatures")
    for col in ("recipe", "calls", "unknown", "keywords", "refused", "per 1,000", "arity judged", "refused",
                "per 1,000", "p50/p90 ms"):
        t.add_column(col)
    for name, v in result["recipes"].items():
        t.add_row(name, str(v.get("calls", 0)), str(v.get("unknown", 0)), str(v.get("keywords_checked", 0)),
                  str(v.get("keyword_false_blocks", 0)), str(v["keyword_false_blocks_per_1000"]),
                  str(v.get("arity_checked", 0)), str(v.get("arity_false_blocks", 0)),
                  str(v["arity_false_blocks_per_1000"]), f"{v['answer_ms_p50']}/{v['answer_ms_p90']}")
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
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    main()
