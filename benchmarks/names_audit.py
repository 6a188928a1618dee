"""Names audit: does the names monitor (decoding/guides/names.py) ever judge correct code missing,
and how often does it fail open, and why? (issue 40, "each new monitor: false blocks <= 2 and
rollbacks of correct code <= 1 per 1,000 triggers, by the grounding audit on the held-out
recipes, shipped configuration")

Each task's reference (the packages' own code: a function body, or the rest of the function
from a member dot) is tokenized with a registry model's tokenizer and fed to the monitor token
by token, as the engine feeds a row, with the task's own context (the file around it). The
monitor checks each logical line once it is complete, so a name it judges missing is both a
false block and a rollback of correct code; the proposal is declined (the replay goes on). A
trigger is one name or module looked up (`NamesMonitor.checked`). Star-importing files get
Jedi's names at the cursor, waited for (the shipped monitor waits up to the deadline there).

    .venv/bin/python benchmarks/names_audit.py --tasks ~/.cache/groundcode/bench/standing/tasks.jsonl \
        --tasks ~/.cache/groundcode/bench/heldout/tasks.jsonl [--model smollm2-135m] \
        [--out benchmarks/results/names_audit.json] [--examples ~/.cache/groundcode/audit/names.jsonl]

`--kinds headers`: the import statements of every source file the recipe's tasks come from
(Python and TypeScript): the file's start up to its last top-level import line is fed as the
generated text with the rest of the file after the cursor, and only the modules (and the names
imports take) are counted; a module that does not resolve is a false block (the packages' own
imports: they all exist where the package is installed).

Prints a table per recipe and writes the JSON (counts only: examples quote package code, so
they go to a file outside the repository).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import time
from collections import Counter
from pathlib import Path

from groundcode.analysis.wait import PatientWait
from groundcode.decoding.guides.base import RowView, as_rollback
from groundcode.decoding.guides.names import NamesMonitor
from groundcode.decoding.vocab import VocabIndex
from groundcode.evaluation.harness import context_for
from groundcode.jsonl import read_jsonl


def _tokenizer(model: str):
    from transformers import AutoTokenizer
    from groundcode.models.load import resolve_model
    return AutoTokenizer.from_pretrained(str(resolve_model(model)[1]))


class _Analyzers:
    """One analyzer per repository: Jedi, started only for a star-importing file; TypeScript's
    server for a .ts task (its names at the cursor are what the TypeScript monitor asks)."""

    def __init__(self):
        self.by_repo = {}

    def get(self, repo, ts: bool = False):
        a = self.by_repo.get((repo, ts))
        if a is None:
            if ts:
                from groundcode.analysis.lsp_client import LspAnalyzer
                a = LspAnalyzer(Path(repo).resolve(), "typescript", deadline_s=30.0)
            else:
                from groundcode.analysis.jedi_client import JediAnalyzer
                a = JediAnalyzer(repo)
            self.by_repo[(repo, ts)] = a
        return a

    def close(self):
        for a in self.by_repo.values():
            a.close()


class _LazyAnalyzer:
    def __init__(self, pool, repo, ts=False):
        self.pool, self.repo, self.ts = pool, repo, ts

    def ask(self, q):
        return self.pool.get(self.repo, self.ts).ask(q)

    def deadline(self):
        return 30.0


@functools.lru_cache(maxsize=1)
def _ts_bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location("ts_bench", Path(__file__).with_name("ts_bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ts_context(task: dict):
    """A TypeScript task's context, as benchmarks/ts_bench.py builds it."""
    return _ts_bench().context_for(task, (Path(task["repo_dir"]) / task["path"]).read_text(encoding="utf-8"))


def feed(g, row, ids, vocab) -> list:
    """Feed `ids` to the monitor as the engine feeds a row, declining every proposal (the replay
    goes on), then settle: the proposals made (each a false block on real code)."""
    blocks = []
    for t in ids:
        row.tokens.append(t)
        row.text += vocab.texts[t]
        row.ends.append(len(row.text))
        p = as_rollback(g.advance(row, t))
        if p is not None:
            blocks.append(p)
            g.declined(row, p)
    p = as_rollback(g.settle(row))
    if p is not None:
        blocks.append(p)
    return blocks


def replay(task, tok, vocab, analyzers) -> dict:
    ts = task["path"].endswith((".ts", ".tsx", ".mts", ".cts"))
    ctx = _ts_context(task) if ts else context_for(task)
    ids = tok.encode(task["reference"], add_special_tokens=False)
    row = RowView(0, ctx, vocab)
    cls = NamesMonitor
    if ts:
        from groundcode.decoding.guides.names_ts import TsNamesMonitor as cls
    g = cls(_LazyAnalyzer(analyzers, Path(task["repo_dir"]), ts), waits=PatientWait(), reproducible=True)
    g.reset(row)
    blocks = feed(g, row, ids, vocab)
    recs = [r for r in row.triggers if r.kind in ("name", "import")]
    return {"checked": g.checked, "blocks": [(p.reason, p.payload[1].chosen, p.payload[1].kind) for p in blocks],
            "failed_open": Counter(f"{r.kind}: {r.reason}" for r in recs if r.failed_open)}


def header(path: Path, text: str) -> str:
    """The file's start up to the end of its last top-level import (Python: ast, which only
    parses; TypeScript: tree-sitter), or ""."""
    if path.suffix == ".py":
        import ast
        try:
            body = ast.parse(text).body
        except (SyntaxError, ValueError):
            return ""
        ends = [n.end_lineno for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if not ends:
            return ""
        lines = text.splitlines(keepends=True)
        return "".join(lines[: max(ends)])
    from groundcode.languages.typescript_scope import _parser
    data = text.encode("utf-8", "surrogatepass")
    root = _parser().parse(data).root_node
    last = None
    for n in root.children:
        if n.type == "import_statement" or n.type == "export_statement" and n.child_by_field_name("source"):
            last = n
    if last is None:
        return ""
    end = data.find(b"\n", last.end_byte)
    return data[: len(data) if end < 0 else end + 1].decode("utf-8", "surrogatepass")


def replay_header(repo: Path, rel: str, tok, vocab, analyzers) -> dict | None:
    """The file's import header replayed as generated text (`--kinds headers`)."""
    from groundcode.context import cursor_context
    path = repo / rel
    text = path.read_text(encoding="utf-8", errors="replace")
    head = header(path, text)
    if not head.strip():
        return None
    ctx = cursor_context(path, 1, 0, repo, text="\n" + text[len(head):])
    ts = path.suffix != ".py"
    cls = NamesMonitor
    if ts:
        from groundcode.decoding.guides.names_ts import TsNamesMonitor as cls
    # TypeScript's server lists a module's exports (the names `import { … }` takes)
    g = cls(_LazyAnalyzer(analyzers, repo, True) if ts else None, waits=PatientWait(), reproducible=True)
    row = RowView(0, ctx, vocab)
    g.reset(row)
    blocks = feed(g, row, tok.encode(head, add_special_tokens=False), vocab)
    recs = [r for r in row.triggers if r.kind == "import"]
    return {"checked": g.checked_imports,
            "blocks": [(p.reason, p.payload[1].chosen, p.payload[1].kind) for p in blocks
                       if p.payload[1].kind == "import"],
            "failed_open": Counter(f"import: {r.reason}" for r in recs if r.failed_open)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", action="append", required=True)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--kinds", default="function,dereference")
    ap.add_argument("--out", default="benchmarks/results/names_audit.json")
    ap.add_argument("--examples", default=str(Path.home() / ".cache/groundcode/audit/names.jsonl"))
    args = ap.parse_args()
    tok = _tokenizer(args.model)
    vocab = VocabIndex.for_tokenizer(tok)
    kinds = set(args.kinds.split(","))
    analyzers = _Analyzers()
    out = {"model_tokenizer": args.model, "recipes": {}}
    Path(args.examples).parent.mkdir(parents=True, exist_ok=True)
    ex = open(args.examples, "w")
    try:
        for path in args.tasks:
            recipe = Path(path).parent.name
            per = {}
            files = set()
            for task in read_jsonl(Path(path).expanduser()):
                if "headers" in kinds:
                    if (task["repo_dir"], task["path"]) in files:
                        continue
                    files.add((task["repo_dir"], task["path"]))
                    t0 = time.perf_counter()
                    r = replay_header(Path(task["repo_dir"]), task["path"], tok, vocab, analyzers)
                    if r is None:
                        continue
                    task = dict(task, kind="headers")
                elif task["kind"] not in kinds:
                    continue
                else:
                    t0 = time.perf_counter()
                    r = replay(task, tok, vocab, analyzers)
                ms = (time.perf_counter() - t0) * 1e3
                k = per.setdefault(task["kind"], {"tasks": 0, "triggers": 0, "false_blocks": 0,
                                                  "failed_open": Counter(), "ms": 0.0})
                k["tasks"] += 1
                k["triggers"] += r["checked"]
                k["false_blocks"] += len(r["blocks"])
                k["failed_open"].update(r["failed_open"])
                k["ms"] += ms
                for reason, name, kind in r["blocks"]:
                    ex.write(json.dumps({"recipe": recipe, "task_id": task["task_id"], "reason": reason,
                                         "name": name, "kind": kind}) + "\n")
            for kind, k in per.items():
                k["false_blocks_per_1000"] = round(1000 * k["false_blocks"] / max(1, k["triggers"]), 2)
                k["failed_open_total"] = sum(k["failed_open"].values())
                k["failed_open_per_1000"] = round(1000 * k["failed_open_total"] / max(1, k["triggers"]), 2)
                k["ms_per_task"] = round(k.pop("ms") / max(1, k["tasks"]), 1)
                k["failed_open"] = dict(k["failed_open"].most_common())
            out["recipes"][recipe] = per
            print(f"\n{recipe}")
            print(f"{'kind':<12} {'tasks':>6} {'triggers':>9} {'false blocks':>13} {'per 1000':>9} {'failed open':>12} {'ms/task':>8}")
            for kind, k in per.items():
                print(f"{kind:<12} {k['tasks']:>6} {k['triggers']:>9} {k['false_blocks']:>13} "
                      f"{k['false_blocks_per_1000']:>9} {k['failed_open_total']:>12} {k['ms_per_task']:>8}")
                for why, n in k["failed_open"].items():
                    print(f"    failed open  {why}: {n}")
    finally:
        ex.close()
        analyzers.close()
    out["examples"] = args.examples
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"\nwrote {args.out}; examples (package code, outside the repository): {args.examples}")


if __name__ == "__main__":
    main()
