"""Benchmark reports: Markdown and a self-contained HTML page from summaries and results.

Tables like the papers': configurations x metrics (score@1) with the relative delta to the baseline
configuration, score@k at the largest k, a per-repository breakdown, score@k curves (matplotlib
PNG, embedded in the HTML as base64 and written next to the Markdown), and side-by-side examples
where grounding fixed or broke a function (success rate of the first sample).
The only module that imports matplotlib. Not here: computing metrics (scoring.py).
Test: tests/test_bench_e2e.py.
"""
from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

from ..jsonl import read_jsonl

LABELS = {"bleu4": "BLEU-4", "codebleu": "CodeBLEU", "edit_sim": "EditSim", "exact_match": "EM",
          "dep_coverage": "DepCov", "success": "SuccRate", "nim": "NIM", "ism": "ISM", "pm": "PM",
          "ident_precision": "IdPrec", "ident_recall": "IdRec", "undefined_name": "UndefName",
          "import_error": "ImportErr", "no_member": "NoMember", "call_error": "CallErr"}
ORDER = list(LABELS)
KEY_METRICS = {"function": ["success", "dep_coverage", "codebleu", "edit_sim"],
               "dereference": ["success", "nim", "ism", "pm"],
               "name": ["undefined_name", "nim", "edit_sim", "success"],
               "call": ["call_error", "nim", "edit_sim", "success"],
               "keyword": ["call_error", "nim", "edit_sim", "success"],
               "import": ["import_error", "nim", "exact_match", "edit_sim"]}


def load_summaries(paths: list[Path]) -> dict:
    merged: dict = {}
    for p in paths:
        merged.update(json.loads(Path(p).read_text()))
    return merged


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def _delta(v: float, base: float) -> str:
    if base == 0:
        return ""
    return f" ({(v - base) / base * 100:+.1f}%)"


def metric_table(summary: dict, kind: str, baseline: str, k_index: int = 0) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per configuration, score@(k_index+1) per metric, delta vs baseline."""
    configs = [c for c in summary if kind in summary[c]["kinds"]]
    names = [m for m in ORDER if any(m in summary[c]["kinds"][kind]["metrics"] for c in configs)]
    header = ["config", "tasks", "samples", "empty"] + [LABELS[m] for m in names]
    base = summary.get(baseline, {}).get("kinds", {}).get(kind, {}).get("metrics", {})
    rows = []
    for c in configs:
        d = summary[c]["kinds"][kind]
        row = [c, str(d["tasks"]), str(d["samples"]), str(d.get("empty_completions", ""))]
        for m in names:
            vals = d["metrics"].get(m)
            if not vals:
                row.append("")
                continue
            v = vals[min(k_index, len(vals) - 1)] if k_index >= 0 else vals[-1]
            b = base.get(m)
            bv = (b[min(k_index, len(b) - 1)] if k_index >= 0 else b[-1]) if b else None
            row.append(_fmt(v) + (_delta(v, bv) if bv is not None and c != baseline else ""))
        rows.append(row)
    return header, rows


def config_table(summary: dict) -> tuple[list[str], list[list[str]]]:
    header = ["config", "model", "monitor", "schedule", "top_p", "max_new_tokens"]
    rows = []
    for c, d in summary.items():
        r = d.get("run") or {}
        model = "reference (oracle)" if r.get("oracle") else (r.get("model") or "default (registry)")
        if r.get("oracle"):
            rows.append([c, model, "-", "-", "-", "-"])
            continue
        rows.append([c, str(model), str(r.get("monitor", "")), str(r.get("schedule", "")),
                     str(r.get("top_p", "")) if r.get("schedule") not in (None, "greedy") else "-",
                     str(r.get("max_new_tokens", ""))])
    return header, rows


def repo_table(summary: dict, kind: str) -> tuple[list[str], list[list[str]]]:
    keys = KEY_METRICS[kind]
    configs = [c for c in summary if kind in summary[c]["kinds"]]
    header = ["repository", "tasks"] + [f"{LABELS[m]} {c}" for m in keys for c in configs]
    repos = sorted({r for c in configs for r, d in summary[c]["repos"].items() if kind in d})
    rows = []
    for r in repos:
        first = next(summary[c]["repos"][r][kind] for c in configs if kind in summary[c]["repos"].get(r, {}))
        row = [r, str(first["tasks"])]
        for m in keys:
            for c in configs:
                v = summary[c]["repos"].get(r, {}).get(kind, {}).get(m)
                row.append(_fmt(v) if v is not None else "")
        rows.append(row)
    return header, rows


def curves_png(summary: dict, kind: str) -> bytes | None:
    """score@k curves of the key metrics, one line per configuration; None when n = 1 everywhere."""
    keys = [m for m in KEY_METRICS[kind]
            if any(len(summary[c]["kinds"].get(kind, {}).get("metrics", {}).get(m, [])) > 1 for c in summary)]
    if not keys:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 2.8), squeeze=False)
    for ax, m in zip(axes[0], keys):
        for c in summary:
            vals = summary[c]["kinds"].get(kind, {}).get("metrics", {}).get(m)
            if vals:
                ax.plot(range(1, len(vals) + 1), vals, marker="o", label=c)
        ax.set_title(f"{LABELS[m]} ({kind})", fontsize=9)
        ax.set_xlabel("k", fontsize=8)
        ax.set_ylabel("score@k", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def examples(results: list[dict], tasks: dict, baseline: str, other: str, limit: int = 3) -> dict:
    """Tasks where the first sample's lint success differs: {"fixed": [...], "broke": [...]}."""
    by = {}
    for r in results:
        by.setdefault(r["task_id"], {})[r["config"]] = r
    out = {"fixed": [], "broke": []}
    for tid in sorted(by):
        pair = by[tid]
        if baseline not in pair or other not in pair:
            continue
        b, o = pair[baseline], pair[other]
        sb, so = b["metrics"]["success"][0], o["metrics"]["success"][0]
        if sb == so:
            continue
        key = "fixed" if so > sb else "broke"
        if len(out[key]) < limit:
            t = tasks.get(tid, {})
            out[key].append({"task_id": tid, "prompt_tail": _prompt_tail(t), "reference": t.get("reference", ""),
                             baseline: b["completions"][0], other: o["completions"][0],
                             f"lint {baseline}": b["lint"][0], f"lint {other}": o["lint"][0]})
    return out


def _prompt_tail(task: dict, lines: int = 6) -> str:
    fn = task.get("function", "")
    if not fn:
        return ""
    head = fn.splitlines(keepends=True)[: task["line"] - task["def_line"]]
    text = "".join(head)
    if task.get("col"):
        text += fn.splitlines(keepends=True)[task["line"] - task["def_line"]][: task["col"]]
    return "".join(text.splitlines(keepends=True)[-lines:])


def _md_table(header, rows) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _html_table(header, rows) -> str:
    h = "".join(f"<th>{html.escape(x)}</th>" for x in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def write_report(summary: dict, out_dir: Path, *, results: list[dict] | None = None, tasks: dict | None = None,
                 baseline: str | None = None, title: str = "groundcode benchmark", notes: str = "") -> dict:
    """Write report.md, report.html and score@k PNGs into out_dir; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    configs = list(summary)
    baseline = baseline if baseline in summary else (configs[0] if configs else "")
    kinds = [k for k in ("function", "dereference", "name", "call", "keyword", "import")
             if any(k in summary[c]["kinds"] for c in configs)]
    md = [f"# {title}", "", notes, "", f"Baseline for the deltas: `{baseline}`. Values are score@1 (the mean over "
          "all samples); deltas are relative to the baseline, as in the papers' tables. `empty`: samples whose "
          "completion was empty where the function ends (they count as failures for SuccRate).", ""]
    hb = [f"<h1>{html.escape(title)}</h1>", f"<p>{html.escape(notes)}</p>",
          f"<p>Baseline for the deltas: <code>{html.escape(baseline)}</code>. Values are score@1.</p>"]
    files = {"markdown": str(out_dir / "report.md"), "html": str(out_dir / "report.html")}
    header, rows = config_table(summary)
    md += ["## Configurations", "", _md_table(header, rows), ""]
    hb += ["<h2>Configurations</h2>", _html_table(header, rows)]
    timing = next((d.get("scoring") for d in summary.values() if d.get("scoring")), None)
    if timing:
        line = (f"Success-rate lint: {timing['lint_jobs']} samples, {timing['lint_s_per_sample']} s/sample wall, "
                f"{timing.get('lint_cpu_s_per_sample', '?')} s/sample CPU (pylint workers)."
                + (f" pylint crashed (no verdict, counted as failures) on {timing['lint_crashed']}."
                   if timing.get("lint_crashed") else ""))
        md += [line, ""]
        hb.append(f"<p>{html.escape(line)}</p>")
    for kind in kinds:
        header, rows = metric_table(summary, kind, baseline, 0)
        md += [f"## {kind} tasks: score@1", "", _md_table(header, rows), ""]
        hb += [f"<h2>{kind} tasks: score@1</h2>", _html_table(header, rows)]
        n_max = max(len(v) for c in configs for v in summary[c]["kinds"].get(kind, {}).get("metrics", {}).values())
        if n_max > 1:
            header, rows = metric_table(summary, kind, baseline, n_max - 1)
            md += [f"## {kind} tasks: score@{n_max}", "", _md_table(header, rows), ""]
            hb += [f"<h2>{kind} tasks: score@{n_max}</h2>", _html_table(header, rows)]
        header, rows = repo_table(summary, kind)
        md += [f"### {kind} tasks by repository (score@1)", "", _md_table(header, rows), ""]
        hb += [f"<h3>{kind} tasks by repository (score@1)</h3>", _html_table(header, rows)]
        png = curves_png(summary, kind)
        if png:
            name = f"score_at_k_{kind}.png"
            (out_dir / name).write_bytes(png)
            files[name] = str(out_dir / name)
            md += [f"![score@k {kind}]({name})", ""]
            hb.append(f'<img alt="score@k {kind}" src="data:image/png;base64,{base64.b64encode(png).decode()}">')
    if results and len(configs) > 1:
        for other in configs:
            if other == baseline or (summary[other].get("run") or {}).get("oracle"):
                continue          # examples compare decoders; the oracle is the reference itself
            ex = examples(results, tasks or {}, baseline, other)
            for key, label in (("fixed", "fixed"), ("broke", "broke")):
                if not ex[key]:
                    continue
                md += [f"## Where `{other}` {label} a function that `{baseline}` got "
                       f"{'wrong' if key == 'fixed' else 'right'} (lint, first sample)", ""]
                hb.append(f"<h2>Where {html.escape(other)} {label} a function (lint, first sample)</h2>")
                for e in ex[key]:
                    md += [f"**{e['task_id']}**", "", "prompt (tail):", "```python", e["prompt_tail"].rstrip(), "```"]
                    cells = []
                    for name in (baseline, other):
                        msgs = "; ".join(e[f"lint {name}"]) or "no lint finding"
                        md += [f"{name} ({msgs}):", "```python", e[name].rstrip() or "# (empty)", "```"]
                        cells.append(f"<td><b>{html.escape(name)}</b><br><small>{html.escape(msgs)}</small>"
                                     f"<pre>{html.escape(e[name])}</pre></td>")
                    md += ["reference:", "```python", e["reference"].rstrip(), "```", ""]
                    hb.append(f"<h4>{html.escape(e['task_id'])}</h4><pre>{html.escape(e['prompt_tail'])}</pre>"
                              f"<table><tr>{''.join(cells)}<td><b>reference</b><pre>"
                              f"{html.escape(e['reference'])}</pre></td></tr></table>")
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;"
             "margin:8px 0}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;vertical-align:top}"
             "pre{font-size:12px;background:#f6f6f6;padding:4px;white-space:pre-wrap}")
    Path(files["markdown"]).write_text("\n".join(md).rstrip() + "\n")
    Path(files["html"]).write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
                                   f"</title><style>{style}</style></head><body>{''.join(hb)}</body></html>\n")
    return files


def report_files(summary_paths: list[Path], out_dir: Path, *, results_paths: list[Path] = (),
                 tasks_path: Path | None = None, baseline: str | None = None, title: str = "groundcode benchmark",
                 notes: str = "") -> dict:
    summary = load_summaries(summary_paths)
    results = [r for p in results_paths for r in read_jsonl(p)]
    tasks = {t["task_id"]: t for t in read_jsonl(tasks_path)} if tasks_path else {}
    return write_report(summary, out_dir, results=results, tasks=tasks, baseline=baseline, title=title, notes=notes)
