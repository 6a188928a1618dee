"""Score samples against their tasks: per-sample metrics to results JSONL, aggregates to a summary JSON.

Per sample: the completion is cut where its function ends, spliced into the file text (in memory)
and scored. An empty completion (nothing before the function ends) is a failure for success rate
without linting: a body of only a docstring is valid Python but not a generated function. Both kinds: BLEU-4, EditSim, exact match, NIM, ISM, PM, identifier precision/recall,
success rate (lint.py). Function tasks also: CodeBLEU and dependency coverage (the reference's
repository dependencies that the spliced body also uses, by the same analyzer the builder used).
Summary, per configuration and task kind: every metric's score@k for k = 1..n (score@1 = the mean
over all samples; on 0/1 metrics score@k = pass@k), plus the counts behind them.
Not here: the metric formulas (metrics.py), pylint (lint.py), generation (harness.py).
Test: tests/test_bench_e2e.py.
"""
from __future__ import annotations

import json
import re
import resource
import textwrap
import time
from pathlib import Path

from ..pycode import block_end
from . import import_check
from .judged import judged_messages
from . import metrics as M
from .harness import context_for, split_at_task, task_file_text
from ..jsonl import read_jsonl, write_jsonl
from .lint import LintJob, check

TEXT_METRICS = {
    "bleu4": M.bleu4, "edit_sim": M.edit_sim, "exact_match": M.exact_match,
    "nim": M.next_identifier_match, "ism": M.identifier_sequence_match, "pm": M.prefix_match,
}
# per sample, judged by pylint (never by a monitor): the completion's lines read a name that
# does not exist (undefined-variable), import what does not resolve (import-error,
# no-name-in-module), a member that does not exist (no-member), or a call that does not fit its
# callee (lint.CALL_CHECKS: a keyword that is no parameter, too many or too few arguments)
HALLUCINATIONS = ("undefined_name", "import_error", "no_member", "call_error")
BINARY = {"exact_match", "nim", "success", "success_whole", *HALLUCINATIONS}


def trim_completion(task: dict, completion: str, prefix: str = "") -> str:
    """The completion up to the end of its function, by the engine's body-end rule
    (`pycode.block_end`: the first line indented at or left of the `def` outside a string; the
    model went on to the next definition); keep a final newline. `prefix`: the function's code
    before the completion (its `def` line on), for lexing."""
    cut = block_end(completion, task["indent"], prefix, starts_at_line=task["col"] == 0)
    body = (completion if cut is None else completion[:cut]).rstrip()
    return body + "\n" if body else ""


CUT_SHORT = ("length", "deadline")   # the text ended at a budget, not where the model ended it
_TAIL = re.compile(r"[A-Za-z_]\w*$")


def cut_name(task: dict, text: str, completion: str, body: str, finish_reason: str | None) -> list | None:
    """[line, name] of a name a budget cut may have cut in two: the completion ended (length or
    deadline) right after an identifier that is its body's last text (`num_bytes_` of
    `num_bytes_read`). The hallucination judge does not count a name or member message on that
    line for that name (`judged_messages`): the model did not end it, so whether it exists is
    unknown. None when the body ended anywhere else."""
    end = body.rstrip()
    if finish_reason not in CUT_SHORT or not end or completion.rstrip() != end or completion != completion.rstrip():
        return None
    m = _TAIL.search(end)
    if m is None:
        return None
    before, _ = split_at_task(task, text)
    return [(before + end).count("\n") + 1, m.group(0)]


def _logical_line_ends(prefix: str, body: str) -> list[int]:
    """Offsets in `body` just after each complete logical line (tokenize's NEWLINE), in order;
    `prefix`: the function's code before the body, for lexing. Lexing stops where the text does
    (a bracket or string left open at the end)."""
    import io
    import tokenize
    starts, pos = [0], 0
    text = prefix + body
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    ends = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NEWLINE:
                off = starts[tok.end[0] - 1] + tok.end[1] - len(prefix)
                if off > 0:
                    ends.append(off)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return ends


def whole_statements(task: dict, text: str, body: str, prefix: str = "") -> str:
    """A body that a budget cut short (finish_reason length or deadline) up to its last whole
    statement: its last logical line, left open by the cut, is dropped, and with it the block
    headers that would be left with nothing under them (`if x:` ending the text), at most two.
    Only when the file then compiles and did not before; otherwise `body` as it is (an error the
    model wrote earlier stays an error). The scorer's `--whole-statements` metric
    (`success_whole`): the two arms' cuts fall at random points, so a completion cut mid-line
    fails for the budget, not for what it wrote."""
    def compiles(b: str) -> bool:
        try:
            compile(splice(task, text, b)[0], task.get("path", "<task>"), "exec", dont_inherit=True)
            return True
        except (SyntaxError, ValueError):
            return False
    if not body.strip() or compiles(body):
        return body
    ends = [e for e in _logical_line_ends(prefix, body) if e < len(body.rstrip())]
    for i in range(min(3, len(ends) + 1)):
        cut = ends[-1 - i] if i < len(ends) else 0
        if i > 0:     # the line dropped with the open one must be a block header (ends with `:`)
            header = body[cut:ends[-i]].split("#")[0].rstrip()
            if not header.endswith(":"):
                break
        cand = body[:cut]
        if not cand.strip():
            return ""
        if compiles(cand):
            return cand
    return body


def splice(task: dict, text: str, body: str) -> tuple[str, int, int]:
    """(new file text, first line, last line of the function in it)."""
    before, after = split_at_task(task, text)
    new = before + body
    if not new.endswith("\n"):
        new += "\n"
    last = new.count("\n")
    return new + after, task["def_line"], max(last, task["line"])


def _dedent_body(task: dict, code: str) -> str:
    return textwrap.dedent(code) if task["col"] == 0 else code


def score(tasks: dict[str, dict], sample_records: list[dict], out: Path, *, workers: int = 2,
          codebleu: bool = True, depcov: bool = True, whole: bool = False, progress=None) -> dict:
    """Write one result per (config, task) to `out`; return {"timing": ..., "n": ...}.
    `whole`: also `success_whole`, success with a budget-cut body scored up to its last whole
    statement (whole_statements; the other metrics read the body as written)."""
    rows, jobs, where = [], [], []
    t_lint = 0.0
    texts: dict[str, str] = {}
    for rec in sample_records:
        task = tasks.get(rec["task_id"])
        if task is None:
            continue
        key = task["repo_dir"] + "/" + task["path"]
        if key not in texts:
            texts[key] = task_file_text(task)
        prefix = context_for(task).lex_prefix
        bodies = [trim_completion(task, s["completion"], prefix) for s in rec["samples"]]
        row = {"task_id": task["task_id"], "config": rec["config"], "kind": task["kind"], "repo": task["repo"],
               "metrics": {}, "completions": bodies, "lint": [],
               "cut_name": [cut_name(task, texts[key], s["completion"], b, s.get("finish_reason"))
                            for b, s in zip(bodies, rec["samples"])]}
        ref = task["reference"]
        for name, fn in TEXT_METRICS.items():
            row["metrics"][name] = [fn(ref, b) for b in bodies]
        pr = [M.identifier_precision_recall(ref, b) for b in bodies]
        row["metrics"]["ident_precision"] = [p for p, _ in pr]
        row["metrics"]["ident_recall"] = [r for _, r in pr]
        spliced = [splice(task, texts[key], b) for b in bodies]
        for j, (new, first, last) in enumerate(spliced):
            if bodies[j].strip():   # an empty completion fails without asking pylint (see summary)
                jobs.append(LintJob(Path(task["repo_dir"]), task["path"], new, first, last))
                where.append((len(rows), j))
        if whole:
            row["whole"] = [b if s.get("finish_reason") not in CUT_SHORT else
                            whole_statements(task, texts[key], b, prefix) for b, s in zip(bodies, rec["samples"])]
            for j, b in enumerate(row["whole"]):
                if b != bodies[j] and b.strip():     # cut back: its own lint job
                    new, first, last = splice(task, texts[key], b)
                    jobs.append(LintJob(Path(task["repo_dir"]), task["path"], new, first, last))
                    where.append((len(rows), ("whole", j)))
        if task["kind"] == "function":
            if codebleu:
                from .codebleu_adapter import codebleu as cb
                row["metrics"]["codebleu"] = [cb(_dedent_body(task, ref), _dedent_body(task, b))["codebleu"]
                                              for b in bodies]
            if depcov:
                from ..analysis.jedi_oracle import repo_dependencies
                cov = []
                for new, _, last in spliced:
                    try:
                        deps = repo_dependencies(Path(task["repo_dir"]), Path(task["repo_dir"]) / task["path"],
                                                 new, task["line"], last)
                    except Exception:   # unparsable sample: nothing resolved, nothing covered
                        deps = set()
                    cov.append(M.dependency_coverage(task["deps"], deps))
                row["metrics"]["dep_coverage"] = cov
        rows.append(row)
        if progress:
            progress(1)
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    lint_results = check(jobs, workers=workers)
    t_lint = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_lint = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)   # the pylint workers' CPU time
    for row in rows:
        row["metrics"]["success"] = [0.0] * len(row["completions"])
        if whole:
            row["metrics"]["success_whole"] = [0.0] * len(row["completions"])
        for m in HALLUCINATIONS:     # an empty completion writes nothing that does not exist
            row["metrics"][m] = [0.0] * len(row["completions"])
        row["lint"] = [[] if b.strip() else ["empty completion"] for b in row["completions"]]
    crashed = 0
    # pylint's unresolved imports that resolve when run (import_check.py: in the sandbox, in the
    # repository's environment) are not hallucinations: names a module makes at import time
    sample_at = [(ri, j, res) for (ri, j), res in zip(where, lint_results) if not isinstance(j, tuple)]
    confirmed = import_check.confirmed_messages(
        [(Path(tasks[rows[ri]["task_id"]]["repo_dir"]), res.messages) for ri, _, res in sample_at])
    for (ri, j, _), ok in zip(sample_at, confirmed):
        rows[ri].setdefault("import_ok", [[] for _ in rows[ri]["completions"]])[j] = sorted(ok)
    for (ri, j), res in zip(where, lint_results):
        if isinstance(j, tuple):             # a cut-back body's verdict: success_whole only
            rows[ri]["metrics"]["success_whole"][j[1]] = float(res.success)
            rows[ri].setdefault("lint_whole", [None] * len(rows[ri]["completions"]))[j[1]] = res.messages
            continue
        rows[ri]["metrics"]["success"][j] = float(res.success)
        if whole and rows[ri]["whole"][j] == rows[ri]["completions"][j]:
            rows[ri]["metrics"]["success_whole"][j] = float(res.success)
        kept = judged_messages(res.messages, rows[ri]["cut_name"][j], rows[ri].get("import_ok", [[]] * (j + 1))[j])
        dropped = [m.split(": ", 2)[1] for m in res.messages if m not in kept]
        for m, n in (("undefined_name", res.undefined_variable - dropped.count("undefined-variable")),
                     ("import_error", res.import_error - dropped.count("import-error")
                      - dropped.count("no-name-in-module")),
                     ("no_member", res.no_member - dropped.count("no-member")), ("call_error", res.call_error)):
            rows[ri]["metrics"][m][j] = float(n > 0)
        rows[ri]["lint"][j] = res.messages + (["pylint crashed"] if res.crashed else [])
        if res.crashed:      # no verdict: counted as a failure, and reported apart
            rows[ri].setdefault("lint_crashed", [False] * len(rows[ri]["completions"]))[j] = True
            crashed += 1
    write_jsonl(out, rows)
    return {"lint_seconds": round(t_lint, 2), "lint_jobs": len(jobs), "lint_crashed": crashed,
            "lint_s_per_sample": round(t_lint / max(1, len(jobs)), 3),
            "lint_cpu_s_per_sample": round(cpu_lint / max(1, len(jobs)), 3)}


def summarize(results: list[dict]) -> dict:
    """{config: {"kinds": {kind: {"tasks", "samples", "metrics": {name: [score@1..score@n]}}},
    "repos": {repo: {kind: {metric: score@1}}}}}. Tasks with fewer samples than the most common n
    are left out of the curves' higher k (score@k needs k <= n)."""
    out: dict = {}
    for r in results:
        c = out.setdefault(r["config"], {"kinds": {}, "repos": {}})
        k = c["kinds"].setdefault(r["kind"], {"tasks": 0, "samples": 0, "_scores": {}})
        k["tasks"] += 1
        k["samples"] += len(r["completions"])
        k["empty_completions"] = k.get("empty_completions", 0) + sum(not c.strip() for c in r["completions"])
        for name, vals in r["metrics"].items():
            k["_scores"].setdefault(name, []).append(vals)
        rep = c["repos"].setdefault(r["repo"], {}).setdefault(r["kind"], {"tasks": 0, "_m": {}})
        rep["tasks"] += 1
        for name, vals in r["metrics"].items():
            rep["_m"].setdefault(name, []).extend(vals)
    for c in out.values():
        for k in c["kinds"].values():
            k["metrics"] = {}
            for name, lists in k.pop("_scores").items():
                n = min(len(v) for v in lists)
                k["metrics"][name] = [sum(M.score_at_k(v[:n], kk) for v in lists) / len(lists)
                                      for kk in range(1, n + 1)]
                if name in BINARY:
                    k.setdefault("counts", {})[name] = {"correct": int(sum(sum(v) for v in lists)),
                                                       "samples": sum(len(v) for v in lists)}
        for rep in c["repos"].values():
            for kind, d in rep.items():
                rep[kind] = {"tasks": d["tasks"]} | {m: sum(v) / len(v) for m, v in d.pop("_m").items() if v}
    return out


def score_files(tasks_path: Path, samples_path: Path, results_path: Path, summary_path: Path, **kw) -> dict:
    tasks = {t["task_id"]: t for t in read_jsonl(tasks_path)}
    recs = list(read_jsonl(samples_path))
    timing = score(tasks, recs, results_path, **kw)
    return write_summary(recs, results_path, summary_path, timing)


def write_summary(recs: list[dict], results_path: Path, summary_path: Path, timing: dict) -> dict:
    """Summarize the results file into the summary JSON (with the scoring timing and each config's run)."""
    summary = summarize(list(read_jsonl(results_path)))
    for name in summary:
        summary[name]["scoring"] = timing
        summary[name]["run"] = next((r.get("run") for r in recs if r.get("config") == name), None)
    Path(summary_path).parent.mkdir(parents=True, exist_ok=True)
    Path(summary_path).write_text(json.dumps(summary, indent=2) + "\n")
    return summary
