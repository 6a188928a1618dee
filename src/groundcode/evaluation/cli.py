"""`groundcode bench build|run|score|report`: the benchmark's command line (a typer sub-app, `app`).

Each command parses flags into options and calls one library function (builder.build,
harness.run, scoring.score_files, report.report_files). Recipes (evaluation/recipes/*.json) name
the packages, pinned versions, archive hashes, seed, options and the expected task-set hash.
Not here: any benchmark logic. Test: tests/test_bench_e2e.py (CliRunner on a fixture repository).
"""
from __future__ import annotations

import json
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import GroundcodeError

app = typer.Typer(help="Repository-level benchmark: build tasks, generate, score, report.",
                  no_args_is_help=True, add_completion=False)


def load_recipe(name_or_path: str) -> dict:
    """A recipe by name (shipped in evaluation/recipes/) or by path."""
    p = Path(name_or_path)
    if p.suffix == ".json" and p.is_file():
        return json.loads(p.read_text())
    res = resources.files("groundcode.evaluation").joinpath("recipes", f"{name_or_path}.json")
    if res.is_file():
        return json.loads(res.read_text())
    raise GroundcodeError(f"no recipe {name_or_path!r} (a shipped name like 'standing', or a .json path)")


def recipe_subset(spec: str) -> dict:
    """A recipe's named subset from `RECIPE:NAME` (e.g. standing:cpu, api:cpu)."""
    rname, _, sname = spec.partition(":")
    sub = load_recipe(rname).get("subsets", {}).get(sname)
    if sub is None:
        raise GroundcodeError(f"recipe {rname!r} has no subset {sname!r}")
    return sub


def _progress():
    """The progress bar of the long bench commands (elapsed and remaining time)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..progress import progress_bar
    return progress_bar("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn())


EXECUTOR_HELP = "local | ray: shard the work by repository onto Ray actors (pip install 'groundcode[ray]')."
RAY_ADDRESS_HELP = "Ray cluster address for --executor ray (default: start a local Ray on this machine)."


def _executor(kind: str, address: Optional[str], workers: int):
    """None for --executor local (the command's own path), else the Ray executor (groundcode/executor.py)."""
    from ..executor import make_executor
    return make_executor(kind, address, workers)


def _fail(e: Exception):
    typer.echo(f"error: {e}", err=True)
    raise typer.Exit(1)


def _build_typescript(recipe: dict, out: Path, kinds: str) -> None:
    """The TypeScript benchmark (evaluation/ts_builder.py): the recipe's npm packages, packed by
    their integrity into the user cache with their type-checking installs (no package script
    runs), and their function and dereference tasks (`kinds`: also name and import cursors)."""
    from dataclasses import replace as _replace

    from ..cache import cache_dir
    from .ts_builder import _recipe_options, build as ts_build
    asked = tuple(k.strip() for k in kinds.split(",") if k.strip())
    bad = set(asked) - {"function", "dereference", "name", "import"}
    if bad:
        _fail(GroundcodeError(f"TypeScript tasks are function, dereference, name or import, not {', '.join(sorted(bad))}"))
    opts = _recipe_options(recipe)
    opts = _replace(opts, kinds=asked) if asked != ("function", "dereference") else opts

    def progress(s):
        typer.echo(s["package"] + ": " + ", ".join(f"{v} {k[:-6]}" for k, v in s.items() if k.endswith("_tasks"))
                   + " tasks", err=True)
    try:
        m = ts_build(recipe, out, cache_dir() / "npm-src", opts=opts, progress=progress)
    except GroundcodeError as e:
        _fail(e)
    typer.echo(f"{sum(m['counts'].values())} tasks {m['counts']} -> {out / 'tasks.jsonl'}")


@app.command()
def build(
    sources: List[str] = typer.Argument(None, help="Directories or pypi:NAME==VERSION (omit with --recipe)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory for tasks.jsonl and manifest.json."),
    recipe: Optional[str] = typer.Option(None, help="Build a recipe (e.g. 'standing'); checks its task hash."),
    seed: int = typer.Option(0, help="Sampling seed."),
    kinds: str = typer.Option("function,dereference", "--kinds", "--kind",
                              help="Task kinds, comma-separated: function, dereference, name, call, import, keyword "
                                   "(the last four: the four-kind benchmark's cursors; with --recipe they are "
                                   "built from its packages); `api` builds the API-invocation benchmark "
                                   "(botocore; no sources; --recipe api)."),
    functions_per_repo: int = typer.Option(20, help="Function tasks per repository."),
    methods_per_repo: int = typer.Option(20, help="Methods with dereference tasks per repository (MGD: 20)."),
    points_per_method: int = typer.Option(10, help="Dereference points per method (MGD: 10)."),
    max_body_lines: int = typer.Option(30, help="Skip function tasks with longer bodies."),
):
    """Build benchmark tasks from local directories or PyPI source distributions."""
    from . import builder, sources as src
    if "api" in kinds.split(",") or (recipe and load_recipe(recipe).get("kind") == "api"):
        return _build_api(sources, out, recipe, seed)
    if recipe and "typescript" in (load_recipe(recipe).get("name"), load_recipe(recipe).get("language")):
        return _build_typescript(load_recipe(recipe), out, kinds)
    try:
        if recipe:
            r = load_recipe(recipe)
            known = {f.name for f in fields(builder.BuildOptions)}
            opts = builder.BuildOptions(**{k: (tuple(v) if k == "kinds" else v)
                                           for k, v in r.get("options", {}).items() if k in known})
            asked = tuple(k.strip() for k in kinds.split(",") if k.strip())
            if asked != ("function", "dereference"):      # other kinds from the recipe's packages
                from dataclasses import replace as _replace
                opts = _replace(opts, kinds=asked)
                r = dict(r, tasks_sha256=None)            # its hash covers its own kinds only
            repos = []
            for pkg in r["packages"]:
                s = src.resolve(pkg["source"], artifact=pkg.get("artifact"), sha256=pkg.get("sha256"))
                if pkg.get("project"):
                    src.check_project(s, pkg["project"])
                repos.append(s)
        else:
            if not sources:
                raise GroundcodeError("name at least one source (directory or pypi:NAME==VERSION), or --recipe")
            opts = builder.BuildOptions(seed=seed, kinds=tuple(k.strip() for k in kinds.split(",") if k.strip()),
                                        functions_per_repo=functions_per_repo, methods_per_repo=methods_per_repo,
                                        points_per_method=points_per_method, max_body_lines=max_body_lines)
            repos = [src.resolve(s) for s in sources]
            r = None

        def progress(stats):
            extra = "".join(f", {getattr(stats, k + '_tasks')} {k}" for k in builder.CURSOR_KINDS if k in opts.kinds)
            typer.echo(f"{stats.name}: {stats.function_tasks} function, {stats.dereference_tasks} dereference"
                       f"{extra} tasks ({stats.files} files, analysis {stats.analysis_s}s)", err=True)

        manifest = builder.build(repos, opts, out, recipe=r, progress=progress)
    except GroundcodeError as e:
        _fail(e)
    typer.echo(f"{sum(manifest['counts'].values())} tasks {manifest['counts']} -> {out / 'tasks.jsonl'}")
    typer.echo(f"tasks_sha256 {manifest['tasks_sha256']}")
    if recipe and r.get("tasks_sha256"):
        if r["tasks_sha256"] != manifest["tasks_sha256"]:
            typer.echo(f"error: the task set differs from the recipe's (recipe {r['tasks_sha256']}); "
                       f"built with jedi {manifest['versions']['jedi']}, recipe {r.get('versions')}", err=True)
            raise typer.Exit(2)
        typer.echo("matches the recipe's tasks_sha256")


def _build_api(sources, out: Path, recipe: Optional[str], seed: int) -> None:
    """`bench build --kind api`: tasks from botocore; frequencies from the recipe's corpus
    (or from the directories / pypi: specs given as sources)."""
    from . import api_bench, sources as src
    try:
        r = load_recipe(recipe or "api")
        known = {f.name for f in fields(api_bench.ApiBuildOptions)}
        opts = api_bench.ApiBuildOptions(**{k: v for k, v in r.get("options", {}).items() if k in known})
        if not recipe:
            opts.seed = seed
        corpus, roots = [], []
        specs = [{"source": s} for s in sources] if sources else r.get("frequency_corpus", [])
        for c in specs:
            s = src.resolve(c["source"], artifact=c.get("artifact"), sha256=c.get("sha256"))
            roots.append(s.root)
            corpus.append({"source": c["source"], "artifact": s.artifact, "sha256": s.sha256})
        m = api_bench.build(roots, opts, out, recipe=r if recipe else None, corpus=corpus,
                            progress=lambda msg: typer.echo(msg, err=True))
    except GroundcodeError as e:
        _fail(e)
    typer.echo(f"{sum(m['counts'].values())} api tasks {m['counts']} -> {out / 'tasks.jsonl'}")
    typer.echo(f"tasks_sha256 {m['tasks_sha256']}")
    if recipe and r.get("tasks_sha256"):
        if r["tasks_sha256"] != m["tasks_sha256"]:
            typer.echo(f"error: the task set differs from the recipe's (recipe {r['tasks_sha256']})", err=True)
            raise typer.Exit(2)
        typer.echo("matches the recipe's tasks_sha256")


@app.command()
def run(
    tasks: Path = typer.Argument(..., help="tasks.jsonl from `bench build`."),
    out: Path = typer.Option(..., "--out", "-o", help="Samples JSONL (appended; reruns resume)."),
    config: str = typer.Option(..., help="Name of this configuration in results and reports."),
    model: Optional[str] = typer.Option(None, help="registry name, tiny, HF id or local path; default: the registry default (smollm2-135m)."),
    monitor: bool = typer.Option(True, "--monitor/--no-monitor", help="Dereference monitor on/off."),
    tool_tokens: bool = typer.Option(False, "--tool-tokens/--no-tool-tokens",
                                     help="ToolGen's tool-token guide: <COMP> calls the analyzer."),
    tool_threshold: Optional[float] = typer.Option(None, help="Also call when p(<COMP>) >= this."),
    tool_entropy: Optional[float] = typer.Option(None, help="Zero-shot tool calls at name starts with entropy >= this (nats)."),
    schedule: str = typer.Option("greedy", help="greedy | mgd (6 samples, T 0.2/0.4/0.6x2/0.8x2) | T:N,T:N"),
    top_p: float = typer.Option(0.95, help="Nucleus top-p for temperature > 0."),
    seed: int = typer.Option(0),
    max_new_tokens: int = typer.Option(128),
    limit: Optional[int] = typer.Option(None, help="At most this many tasks per kind (a fixed subset)."),
    kinds: Optional[str] = typer.Option(None, help="Only these task kinds, comma-separated."),
    subset: Optional[str] = typer.Option(None, help="Apply a recipe subset: RECIPE:NAME, e.g. standing:cpu."),
    oracle: bool = typer.Option(False, help="Write the references as samples (calibrates the metrics)."),
    batch: int = typer.Option(8, help="Tasks per generator call."),
    fim: str = typer.Option("auto", help="Fill-in-the-middle: auto (cursor tasks) | on | off."),
    heal: bool = typer.Option(True, "--heal/--no-heal", help="Token healing of the prompt's trailing whitespace."),
    max_prompt_tokens: int = typer.Option(0, help="Cap prompts below the model's window (0: the window)."),
    dtype: Optional[str] = typer.Option(None, help="Weights' dtype: float32 | bfloat16 | float16 | int8 (CPU) "
                                                   "(default: the loader's, float32 on CPU)."),
    declarations: bool = typer.Option(False, "--declarations/--no-declarations",
                                      help="Prepend the IDE's declarations at the cursor (enclosing class, repository classes it uses)."),
    analyzer: str = typer.Option("jedi", "--analyzer", help="jedi or a language server installed with "
                                 "`groundcode analyzers install NAME` (name the arm after it: --config)"),
    vocabulary: bool = typer.Option(False, "--vocabulary/--no-vocabulary",
                                    help="Where a receiver's type is unknown, hold the name to the project's member "
                                         "vocabulary (MonitorConfig.vocabulary, opt-in) or leave it free (the default)."),
    names: bool = typer.Option(False, "--names/--no-names",
                               help="The names monitor: names read and modules imported must exist (MonitorConfig.names)."),
    keywords: bool = typer.Option(True, "--keywords/--no-keywords",
                                  help="The call monitor: keyword names and arity fit the callee's signature "
                                       "(MonitorConfig.keywords, on with --monitor)."),
    check_first: bool = typer.Option(False, "--check-first",
                                     help="Function tasks: write freely, check (ty where installed, else pylint), write again from the "
                                          "first failing line with the monitors on (greedy, one sample; with --monitor)."),
    reproducible: bool = typer.Option(True, "--reproducible/--speculate",
                                      help="Wait for every analysis (samples independent of timing, load and "
                                           "process: the default) or speculate as the editor does (deadlines apply)."),
    executor: str = typer.Option("local", help=EXECUTOR_HELP),
    ray_address: Optional[str] = typer.Option(None, help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(2, help="Ray actors, one model + analyzer each (with --executor ray)."),
):
    """Generate samples for tasks with one configuration (resumable)."""
    from . import harness
    from ..jsonl import read_jsonl
    ex = None
    try:
        all_tasks = list(read_jsonl(tasks))
        kind_t = tuple(k.strip() for k in kinds.split(",")) if kinds else None
        if subset:
            sub = recipe_subset(subset)
            limit = sub.get("limit", limit)
            kind_t = tuple(sub["kinds"]) if sub.get("kinds") else kind_t
        picked = harness.select(all_tasks, limit=limit, kinds=kind_t)
        cfg = harness.RunConfig(name=config, model=model, dtype=dtype, monitor=monitor, schedule=schedule, top_p=top_p,
                                seed=seed, max_new_tokens=max_new_tokens, batch=batch, fim=fim, heal=heal,
                                max_prompt_tokens=max_prompt_tokens,
                                tool_tokens=tool_tokens or tool_entropy is not None,
                                tool_threshold=tool_threshold, tool_entropy=tool_entropy,
                                declarations=declarations, reproducible=reproducible, vocabulary=vocabulary,
                                analyzer=analyzer, names=names, keywords=keywords, check_first=check_first)
        if check_first and (not monitor or schedule != "greedy"):
            raise GroundcodeError("--check-first rewrites with the monitors on, one greedy sample: "
                                  "use it with --monitor and --schedule greedy")
        harness.parse_schedule(schedule)
        ex = _executor(executor, ray_address, workers)
        if ex is not None:
            from .sharded import recover_samples
            recover_samples(out)
        todo = len(picked) - len(harness.done_task_ids(out, config) & {t["task_id"] for t in picked})
        with _progress() as bar:
            tid = bar.add_task(f"{config}", total=todo)
            if ex is None:
                n = harness.run(picked, out, cfg, oracle=oracle, progress=lambda k: bar.advance(tid, k))
            else:
                from .sharded import run_sharded
                n = run_sharded(picked, out, cfg, ex, oracle=oracle, progress=lambda k: bar.advance(tid, k))
    except GroundcodeError as e:
        _fail(e)
    finally:
        if ex is not None:
            ex.close()
    typer.echo(f"{n} tasks generated ({len(picked) - n} already in {out})")


@app.command()
def score(
    tasks: Path = typer.Argument(..., help="tasks.jsonl"),
    samples: Path = typer.Argument(..., help="Samples JSONL from `bench run` (any number of configs)."),
    results: Path = typer.Option(..., "--results", help="Per-task results JSONL to write."),
    summary: Path = typer.Option(..., "--summary", help="Summary JSON to write (one object per config)."),
    workers: int = typer.Option(2, help="Parallel pylint workers; with --executor ray: Ray actors (one pylint each)."),
    codebleu: bool = typer.Option(True, "--codebleu/--no-codebleu"),
    depcov: bool = typer.Option(True, "--depcov/--no-depcov", help="Dependency coverage (runs the analyzer)."),
    whole: bool = typer.Option(False, "--whole-statements/--no-whole-statements",
                               help="Also success_whole: a body cut short by the token budget (or a deadline) "
                                    "linted up to its last whole statement."),
    executor: str = typer.Option("local", help=EXECUTOR_HELP),
    ray_address: Optional[str] = typer.Option(None, help=RAY_ADDRESS_HELP),
):
    """Score samples: similarity, match, dependency coverage and lint success metrics."""
    from .scoring import score_files
    ex = None
    try:
        ex = _executor(executor, ray_address, workers)
        if ex is None:
            s = score_files(tasks, samples, results, summary, workers=workers, codebleu=codebleu, depcov=depcov,
                            whole=whole)
        else:
            from ..jsonl import read_jsonl
            from .sharded import score_sharded
            with _progress() as bar:
                tid = bar.add_task("score", total=sum(1 for _ in read_jsonl(samples)))
                s = score_sharded(tasks, samples, results, summary, ex, codebleu=codebleu, depcov=depcov,
                                  whole=whole, progress=lambda k: bar.advance(tid, k))
    except GroundcodeError as e:
        _fail(e)
    finally:
        if ex is not None:
            ex.close()
    for name, c in s.items():
        for kind, d in c["kinds"].items():
            m = d["metrics"]
            line = ", ".join(f"{k}={v[0]:.3f}" for k, v in m.items() if k in ("success", "success_whole", "dep_coverage", "nim", "codebleu"))
            typer.echo(f"{name} {kind}: {d['tasks']} tasks, {d['samples']} samples: {line}")
    first = next(iter(s.values()), None)
    if first:
        t = first["scoring"]
        typer.echo(f"lint: {t['lint_s_per_sample']} s/sample wall, {t['lint_cpu_s_per_sample']} s/sample CPU, "
                   f"over {t['lint_jobs']} samples ({t['lint_seconds']} s)")


@app.command()
def report(
    summaries: List[Path] = typer.Argument(..., help="Summary JSON files from `bench score`."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory for report.md, report.html, PNGs."),
    results: List[Path] = typer.Option([], "--results", help="Results JSONL (for examples)."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="tasks.jsonl (for examples)."),
    baseline: Optional[str] = typer.Option(None, help="Configuration the deltas are relative to."),
    title: str = typer.Option("groundcode benchmark"),
    notes: str = typer.Option("", help="A paragraph under the title (setup, commands)."),
    examples: bool = typer.Option(True, "--examples/--no-examples",
                                  help="Side-by-side examples (they quote the benchmark packages' code)."),
):
    """Write Markdown and self-contained HTML reports."""
    from .report import report_files
    if not examples:
        results = []
    try:
        files = report_files(summaries, out, results_paths=results, tasks_path=tasks, baseline=baseline,
                             title=title, notes=notes)
    except GroundcodeError as e:
        _fail(e)
    typer.echo(f"wrote {files['markdown']} and {files['html']}")


@app.command("ds1000")
def ds1000_cmd(
    data: str = typer.Argument(..., help="DS-1000 JSONL(.gz) path (e.g. ../shared/data/ds1000.jsonl.gz) or an HF dataset id."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory for samples.jsonl, results.jsonl, summary.json."),
    config: Optional[str] = typer.Option(None, help="Configuration name (default: reference, plain or <retriever>-k<k>)."),
    reference: bool = typer.Option(False, "--reference", help="Run the reference solutions (harness sanity check)."),
    model: Optional[str] = typer.Option(None, help="Registry name, HF id or local path; default: the default model."),
    libraries: Optional[str] = typer.Option(None, help="Only these libraries, comma-separated (e.g. Numpy,Pandas)."),
    per_library: Optional[int] = typer.Option(None, help="A seeded subset: at most N problems per library."),
    seed: int = typer.Option(0, help="Subset and sampling seed."),
    samples: int = typer.Option(1, help="Completions per problem (pass@5 needs 5)."),
    temperature: float = typer.Option(0.0, help="0 = greedy; DS-1000 uses 0.2 with top-p 0.95."),
    top_p: float = typer.Option(0.95),
    max_new_tokens: int = typer.Option(256),
    batch: int = typer.Option(4, help="Problems per engine call."),
    workers: int = typer.Option(2, help="Programs executed in parallel (each in its own sandbox)."),
    python: Optional[str] = typer.Option(None, help="Interpreter that runs the tests (default: the DS-1000 "
                                         "environment of recipes/ds1000_env.sh when built, else this one)."),
    wall_s: float = typer.Option(120.0, help="Wall-clock limit per program (upstream: 120 s)."),
    memory_mb: int = typer.Option(4096, help="Memory limit per program: the resident memory of its whole "
                                  "process tree, tmpfs included (address space: 8 GiB per process)."),
    unsafe_subprocess: bool = typer.Option(False, "--unsafe-subprocess",
                                           help="Without bubblewrap: a plain subprocess (no network/fs isolation)."),
    execute: bool = typer.Option(True, "--execute/--no-execute", help="Run the tests after generating."),
    retriever: str = typer.Option("none", help="Snippets in the prompt: none | bm25-desc | bm25-code | dense-desc "
                                  "| dense-code | ensemble | rrf (index: `groundcode index snippets`)."),
    k: int = typer.Option(2, "-k", help="Snippets prepended (reverse rank order) when --retriever is set."),
    weight: float = typer.Option(0.4, help="ensemble: weight of query-code similarity."),
    budget: Optional[int] = typer.Option(None, help="Token budget for snippets + prompt (descriptions are cut "
                                         "first, then code, then the prompt); default: the model's window."),
    index: Optional[Path] = typer.Option(None, "--index", help="Snippet index directory (default: user cache)."),
):
    """DS-1000: generate completions (or take the references), run the official tests in the sandbox,
    report pass@1/pass@5 by library and perturbation type."""
    from . import ds1000 as ds
    from . import ds1000_samples as dss
    try:
        rag = retriever != "none" and not reference
        name = config or ("reference" if reference else (f"{retriever}-k{k}" if rag else "plain"))
        interp = python or ds.default_python()
        problems = ds.select(ds.load(data), tuple(x.strip() for x in libraries.split(",")) if libraries else (),
                             per_library, seed)
        runnable, skipped = ds.split_runnable(problems, interp)
        typer.echo(f"{len(problems)} problems selected, {len(runnable)} runnable with {interp}, "
                   f"{len(skipped)} skipped {dict(ds.tally(skipped.values()))}", err=True)
        out.mkdir(parents=True, exist_ok=True)
        samples_path, results_path = out / "samples.jsonl", out / "results.jsonl"
        if reference:
            dss.reference_samples(runnable, samples_path, name)
        else:
            cfg = dss.DS1000RunConfig(name=name, model=model, samples=samples, temperature=temperature,
                                      top_p=top_p, seed=seed, max_new_tokens=max_new_tokens, batch=batch,
                                      retriever=retriever if rag else "none", k=k if rag else 0, budget=budget)
            snippet_retriever = None
            if rag:
                from ..retrieval.snippet_index import SnippetIndex
                from ..retrieval.snippet_retriever import RetrieverConfig, SnippetRetriever
                snippet_retriever = SnippetRetriever(SnippetIndex.open(index),
                                                     RetrieverConfig(method=retriever, weight=weight))
            with _progress() as bar:
                tid = bar.add_task(f"generate {name}", total=len(runnable))
                bar.advance(tid, len(runnable) - len([q for q in runnable if q.task_id not in dss.done(samples_path, name)]))
                dss.generate(runnable, samples_path, cfg, retriever=snippet_retriever,
                             progress=lambda n: bar.advance(tid, n))
        if not execute:
            return
        sandbox = ds.sandbox_config(mode="subprocess" if unsafe_subprocess else "bwrap", wall_s=wall_s,
                                    cpu_s=int(wall_s), memory_mb=memory_mb, python=interp)
        with _progress() as bar:
            comps = dss.completions(samples_path, name)
            tid = bar.add_task(f"execute {name}", total=sum(len(comps.get(q.task_id, [])) for q in runnable))
            results = ds.execute_resumable(runnable, comps, results_path, name, sandbox, workers=workers,
                                           progress=lambda n: bar.advance(tid, n))
        summary = ds.summarize(results, skipped)
        summary["config"], summary["interpreter"] = name, interp
        summary["versions"] = ds.library_versions(interp)
        summary["failures"] = ds.failure_reasons(results)
        allsum_path = out / "summary.json"
        allsum = json.loads(allsum_path.read_text()) if allsum_path.exists() else {}
        allsum[name] = summary
        allsum_path.write_text(json.dumps(allsum, indent=2) + "\n")
    except GroundcodeError as e:
        _fail(e)
    typer.echo(ds.markdown_table({name: summary}))
    typer.echo(f"summary -> {allsum_path}")


@app.command("api-run")
def api_run(
    tasks: Path = typer.Argument(..., help="tasks.jsonl from `bench build --kind api`."),
    out: Path = typer.Option(..., "--out", "-o", help="Samples JSONL (appended; reruns resume)."),
    configs: str = typer.Option("base,dag,dagpp,dagpp+sdk,sdk", help="Presets, comma-separated: base, dag, "
                                "dagpp, dagpp+sdk, sdk."),
    model: Optional[str] = typer.Option(None, help="Registry name, HF id or local path (default: the registry default)."),
    index: Optional[Path] = typer.Option(None, help="API index directory (default: user cache; `groundcode index api`)."),
    precision: float = typer.Option(0.5, help="Retriever precision@k (the paper's DAG++ setting: 0.5); -1 = plain BM25."),
    k: int = typer.Option(1, "-k", help="Documents retrieved."),
    threshold: float = typer.Option(0.8, help="Confidence trigger: retrieve when min name-token probability < this."),
    design: str = typer.Option("desc+spec", help="Augmentation: name, desc, spec, desc+spec, full."),
    budget: int = typer.Option(512, help="Tokens for the augmentation."),
    max_new_tokens: int = typer.Option(64),
    per_class: Optional[int] = typer.Option(None, help="Only the first N tasks of each frequency class."),
    subset: Optional[str] = typer.Option(None, help="A recipe subset, e.g. api:cpu."),
    batch: int = typer.Option(8),
    seed: int = typer.Option(0, help="Seeds the retriever's precision coin."),
):
    """Generate API-benchmark samples for DAG/DAG++/SDK-monitor configurations (resumable)."""
    from . import api_harness
    from ..jsonl import read_jsonl
    try:
        if subset:
            per_class = recipe_subset(subset).get("per_class", per_class)
        picked = api_harness.select(list(read_jsonl(tasks)), per_class)
        if index is None:
            from ..retrieval.cli import default_api_dir
            index = default_api_dir()
        cfg = api_harness.ApiRunConfig(configs=tuple(c.strip() for c in configs.split(",") if c.strip()),
                                       model=model, index=str(index), precision=None if precision < 0 else precision,
                                       k=k, threshold=threshold, design=design, budget_tokens=budget,
                                       max_new_tokens=max_new_tokens, batch=batch, seed=seed)
        with _progress() as bar:
            tid = bar.add_task("api", total=len(picked) * len(cfg.configs))
            n = api_harness.run(picked, out, cfg, progress=lambda k: bar.advance(tid, k))
    except GroundcodeError as e:
        _fail(e)
    typer.echo(f"{n} samples generated -> {out}")


@app.command("api-score")
def api_score(
    tasks: Path = typer.Argument(..., help="tasks.jsonl"),
    samples: Path = typer.Argument(..., help="Samples JSONL from `bench api-run`."),
    results: Path = typer.Option(..., "--results", help="Per-sample verdicts JSONL to write."),
    summary: Path = typer.Option(..., "--summary", help="Summary JSON to write."),
    per_class: Optional[int] = typer.Option(None, help="Only the first N tasks of each frequency class."),
    subset: Optional[str] = typer.Option(None, help="A recipe subset, e.g. api:cpu (samples of other tasks are ignored)."),
):
    """Score API-benchmark samples (valid invocation by binding; failure classes) and print the table."""
    from . import api_harness
    try:
        if subset:
            per_class = recipe_subset(subset).get("per_class", per_class)
        s = api_harness.score_files(tasks, samples, results, summary, per_class)
    except GroundcodeError as e:
        _fail(e)
    typer.echo(api_harness.table(s))


from .env_cli import env as _env  # noqa: E402  (its own module: cli.py stays one screen of commands each)
app.command("env")(_env)
