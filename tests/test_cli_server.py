"""A CLI that feels like the editor (issue 30): `complete` sends its request to a running
`groundcode serve` (no model load per call), stops where the editor server stops (`--stop auto`)
and loads the serving dtype."""
from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from typer.testing import CliRunner

from groundcode.cli import _stop_for, app
from serve_process import free_port, start_serve, stop

CART_MEMBERS = {"owner", "registry", "add", "last"}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


def test_stop_auto_is_the_editor_servers_rule(tmp_path):
    from groundcode.context import cursor_context
    text = "def f(x):\n    if x:\n    return x.\n"
    opens = cursor_context(tmp_path / "m.py", 2, len("    if x:"), tmp_path, text=text)
    plain = cursor_context(tmp_path / "m.py", 3, len("    return x."), tmp_path, text=text)
    assert _stop_for("auto", opens) == "block" and _stop_for("auto", plain) == "statement"
    assert _stop_for("line", plain) == "line"


def test_complete_and_generate_through_a_running_server(tmp_path, shop_repo):
    ws = tmp_path / "shop"
    shutil.copytree(shop_repo, ws)
    proc, base = start_serve(["--model", "tiny", "--workspace", str(ws), "--lookahead", "0"], _env(), free_port())
    try:
        cart = ws / "shop" / "cart.py"
        r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base, "--json", "-n", "8"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["server"] == base and d["model"] == "tiny"
        first = d["triggers"][0]
        assert first["receiver"] == "self" and first["chosen"] in CART_MEMBERS, d
        r = CliRunner().invoke(app, ["generate", f"{cart}:Cart.last", "--server", base, "--json", "-n", "8"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.stdout.strip().splitlines()[-1])
        assert d["server"] == base and d["tokens"] <= 8 and isinstance(d["completion"], str)
        r = CliRunner().invoke(app, ["generate", f"{cart}:Cart.nope", "--server", base])
        assert r.exit_code == 2 and "nope" in r.output
        outside = tmp_path / "elsewhere.py"
        outside.write_text("x = 1\n")
        r = CliRunner().invoke(app, ["complete", f"{outside}:1:0", "--server", base])
        assert r.exit_code == 2 and "does not serve" in r.output
    finally:
        stop(proc)
    r = CliRunner().invoke(app, ["complete", f"{cart}:11:13", "--server", base])
    assert r.exit_code == 2 and "no groundcode serve answers" in r.output
