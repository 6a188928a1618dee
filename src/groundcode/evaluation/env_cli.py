"""`groundcode bench env`: a recipe's dependency environments (evaluation/bench_env.py) for the
repositories of a built task set, or `--lock` to resolve the recipe's pins afresh.
Not here: what an environment holds or how it is made (bench_env.py).
Test: tests/test_bench_env.py.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import GroundcodeError


def env(
    tasks: Path = typer.Argument(..., help="A built task set (its directory or tasks.jsonl): "
                                           "the repositories to give their environments."),
    recipe: Optional[str] = typer.Option(None, help="The environment spec: a recipe name (recipes/NAME.env.json) "
                                                    "or a .json path (default: the task set's recipe)."),
    lock: Optional[Path] = typer.Option(None, "--lock", help="Resolve every package's requirements afresh "
                                                              "(needs the package index) and write the spec here."),
):
    """Install each repository's pinned third-party wheels into its .venv (nothing of it runs),
    so the analyzer and the judge see what it imports."""
    from . import bench_env
    path = tasks / "tasks.jsonl" if tasks.is_dir() else tasks
    try:
        if not path.is_file():
            raise GroundcodeError(f"no tasks.jsonl at {tasks}")
        if recipe is None:
            manifest = json.loads((path.parent / "manifest.json").read_text())
            recipe = (manifest.get("recipe") or {}).get("name")
        spec = bench_env.env_spec(recipe) if recipe else None
        if spec is None:
            raise GroundcodeError(f"no environment spec for recipe {recipe!r} (recipes/{recipe}.env.json)")
        want, have = spec.get("python"), "{}.{}".format(*sys.version_info[:2])
        if want and want != have and lock is None:
            raise GroundcodeError(f"the spec pins wheels for Python {want}; this is {have} (--lock resolves afresh)")
        if lock is not None:
            spec = dict(bench_env.lock(spec, progress=lambda s, pins: typer.echo(f"{s}: {len(pins)} wheels", err=True)),
                        python=have)
            lock.write_text(json.dumps(spec, indent=1) + "\n")
            typer.echo(f"pins -> {lock}")
        repos: dict[str, str] = {}
        with path.open() as f:
            for line in f:
                t = json.loads(line)
                repos.setdefault(t["source"], t["repo_dir"])
        for source, repo_dir in repos.items():
            pkg = spec["packages"].get(source)
            if pkg is None:
                typer.echo(f"{source}: not in the spec, left as it is", err=True)
                continue
            state = bench_env.install(Path(repo_dir), pkg.get("pins", []))
            where = f"{repo_dir}/.venv" if state != "empty" else "no third-party requirements, no venv"
            typer.echo(f"{source}: {state} ({len(pkg.get('pins', []))} wheels) {where}")
    except GroundcodeError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1)
