"""Call monitor audit, token by token: does the keyword-argument and arity monitor
(decoding/guides/keyword_args.py) ever refuse a token of correct code, or roll it back? (issue 41:
"the call monitor's false blocks <= 2 and rollbacks of correct code <= 1 per 1,000 triggers on
the held-out recipes")

benchmarks/call_audit.py judges the packages' calls by their signatures; this one feeds the
function tasks' references (the packages' own bodies) to the monitor itself, tokenized by a
registry model's tokenizer, with the task's own context, as the engine feeds a row: each token
is first judged (`mask`, then `check`, as the row step asks before it accepts a token), then
accepted (`advance`). A token the monitor's mask leaves out or its check refuses is a false
block; a rollback it proposes is a rollback of correct code (declined: the replay goes on). A
trigger is one call whose signature was asked (a `TriggerRecord` for `callee(`). Qwen's
tokenizer merges more (`(tree`, `(self`): the tokens that open a call and begin its argument
are judged too. The monitor is reproducible (every signature waited for; Jedi, 30 s).

    .venv/bin/python benchmarks/call_token_audit.py --tasks ~/.cache/groundcode/bench/heldout2/tasks.jsonl \
        [--model qwen2.5-coder-0.5b] [--kinds function] [--limit N] [--out F.json] [--examples F.jsonl]

Prints a table per recipe and writes the JSON (counts only; examples quote package code and
go to a file outside the repository). Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from names_audit import _Analyzers, _LazyAnalyzer, _tokenizer

from groundcode.decoding.guides.base import RowView, as_rollback
from groundcode.decoding.guides.keyword_args import KeywordArgMonitor
from groundcode.decoding.vocab import VocabIndex
from groundcode.evaluation.harness import context_for
from groundcode.jsonl import read_jsonl


def replay(task, tok, vocab, analyzers) -> dict:
    ctx = context_for(task)
    ids = tok.encode(task["reference"], add_special_tokens=False)
    row = RowView(0, ctx, vocab)
    g = KeywordArgMonitor(_LazyAnalyzer(analyzers, Path(task["repo_dir"])), reproducible=True)
    g.reset(row)
    blocks, rollbacks = [], []
    for k, t in enumerate(ids):
        allowed = g.mask(row)
        how = "mask"
        if allowed is None:
            allowed, how = g.check(row, t), "check"
        if allowed is not None and t not in set(int(i) for i in allowed):
            blocks.append({"at": len(row.text), "token": vocab.texts[t], "by": how,
                           "call": g.record.receiver if g.record is not None else None,
                           "line": row.text[row.text.rfind("\n") + 1:] + vocab.texts[t]})
        row.tokens.append(t)
        row.text += vocab.texts[t]
        row.ends.append(len(row.text))
        p = as_rollback(g.advance(row, t))
        if p is not None:
            rollbacks.append({"at": len(row.text), "reason": p.reason,
                              "line": row.text[row.text.rfind("\n", 0, len(row.text) - 1) + 1:]})
            g.declined(row, p)
    recs = [r for r in row.triggers if r.receiver.endswith("(")]
    return {"triggers": len(recs), "constrained": sum(bool(r.constrained) for r in recs),
            "failed_open": Counter(str(r.reason) for r in recs if r.failed_open),
            "blocks": blocks, "rollbacks": rollbacks}


def main() -> None:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, action="append", required=True)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="whose tokenizer cuts the references")
    ap.add_argument("--kinds", default="function")
    ap.add_argument("--limit", type=int, default=0, help="tasks per recipe (0: all)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "call_token_audit.json")
    ap.add_argument("--examples", type=Path, default=None)
    args = ap.parse_args()
    tok = _tokenizer(args.model)
    vocab = VocabIndex([tok.decode([i]) for i in range(len(tok))])
    console = Console()
    kinds = set(args.kinds.split(","))
    result = {"model": args.model, "analyzer": "jedi", "kinds": sorted(kinds), "recipes": {}}
    examples = []
    for tasks_file in args.tasks:
        tasks = [t for t in read_jsonl(tasks_file) if t["kind"] in kinds and t["path"].endswith(".py")]
        tasks = tasks[: args.limit] if args.limit else tasks
        c, fo = Counter(), Counter()
        analyzers = _Analyzers()
        t0 = time.perf_counter()
        try:
            with Progress(console=console) as prog:
                bar = prog.add_task(f"{tasks_file.parent.name}: tasks", total=len(tasks))
                for task in tasks:
                    r = replay(task, tok, vocab, analyzers)
                    c["tasks"] += 1
                    c["triggers"] += r["triggers"]
                    c["constrained"] += r["constrained"]
                    c["blocks"] += len(r["blocks"])
                    c["rollbacks"] += len(r["rollbacks"])
                    fo.update(r["failed_open"])
                    for what in ("blocks", "rollbacks"):
                        examples += [{"task_id": task["task_id"], "what": what, **e} for e in r[what]]
                    prog.advance(bar)
        finally:
            analyzers.close()
        n = max(1, c["triggers"])
        result["recipes"][tasks_file.parent.name] = {
            **c, "failed_open": dict(fo), "seconds": round(time.perf_counter() - t0, 1),
            "blocks_per_1000": round(1000 * c["blocks"] / n, 2), "rollbacks_per_1000": round(1000 * c["rollbacks"] / n, 2)}
    table = Table(title=f"Call monitor, token by token · {args.model}'s tokens · jedi")
    for col in ("recipe", "tasks", "calls asked", "constrained", "false blocks", "per 1,000", "rollbacks",
                "per 1,000", "failed open"):
        table.add_column(col)
    for name, r in result["recipes"].items():
        table.add_row(name, str(r["tasks"]), str(r["triggers"]), str(r["constrained"]), str(r["blocks"]),
                      str(r["blocks_per_1000"]), str(r["rollbacks"]), str(r["rollbacks_per_1000"]),
                      str(sum(r["failed_open"].values())))
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if args.examples:
        args.examples.parent.mkdir(parents=True, exist_ok=True)
        args.examples.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    console.print(f"→ {args.out}" + (f", examples → {args.examples}" if args.examples else ""))


if __name__ == "__main__":
    main()
