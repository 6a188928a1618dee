"""`groundcode analyzers`: the analyzers groundcode can ask, and installing the pinned language
servers (analysis/lsp_servers.py) into the user cache.

    groundcode analyzers list
    groundcode analyzers install ty
"""
from __future__ import annotations

import typer

from ..errors import GroundcodeError

app = typer.Typer(help="Analyzers: Jedi (built in) and pinned language servers installed on request.",
                  no_args_is_help=True)


@app.command("list")
def list_cmd() -> None:
    """What can be asked, and whether it is installed."""
    from . import lsp_servers
    typer.echo(f"{'jedi':<13} built in (the default)")
    for name, spec in lsp_servers.SERVERS.items():
        exe = lsp_servers.installed(name)
        state = f"installed: {exe}" if exe else f"not installed (groundcode analyzers install {name})"
        pin = f"{spec.package}@{spec.version} (npm)" if spec.source == "npm" else f"{spec.package}=={spec.version}"
        typer.echo(f"{name:<13} {pin}, {state}: {spec.note}")


@app.command("install")
def install_cmd(name: str = typer.Argument(..., help="a server from `groundcode analyzers list`")) -> None:
    """Download the pinned wheel, check its sha256, unpack the server into the user cache."""
    from . import lsp_servers
    try:
        exe = lsp_servers.install(name, progress=lambda msg: typer.echo(msg, err=True))
    except GroundcodeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo(f"{name}: {exe}")
