"""A real editor drives `groundcode lsp`: headless Neovim from Debian's packages (0.7.2 on
Debian 12; scripts/test installs it with apt-get) runs tests/nvim/inline_completion.lua on a copy
of the shop fixture. The script appends lines to cart.py's buffer with nvim_buf_set_lines (so
Neovim's own incremental sync sends them and the buffer differs from the disk), asks for
textDocument/inlineCompletion at a `self.` that only this edit created -- after a non-ASCII
string, so UTF-16 columns differ from Python's -- and applies the item with
vim.lsp.util.apply_text_edits. The identifier written must be a member of Cart, and the file
on disk unchanged."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "shop"
SCRIPT = Path(__file__).parent / "nvim" / "inline_completion.lua"
CART_MEMBERS = {"owner", "registry", "add", "last", "total"}


def _nvim() -> str:
    nvim = shutil.which("nvim")
    assert nvim, "Neovim is missing: install it (Debian/Ubuntu: apt-get install neovim; scripts/test does)"
    return nvim


def test_neovim_inline_completion_on_an_unsaved_edit(tmp_path):
    repo = tmp_path / "shop"
    shutil.copytree(FIXTURE, repo)
    cart = repo / "shop" / "cart.py"
    before = hashlib.sha256(cart.read_bytes()).hexdigest()
    added = ["", "    def total(self):", '        tag = "é😀"; return self.']
    out = tmp_path / "out.json"
    server = [sys.executable, "-m", "groundcode", "lsp", "--model", "tiny", "--debounce-ms", "0", "--deadline", "60",
              "--max-new-tokens", "24"]
    env = dict(os.environ, GC_FILE=str(cart), GC_ROOT=str(repo), GC_CMD=json.dumps(server),
               GC_LINES=json.dumps(added), GC_OUT=str(out), HF_HUB_OFFLINE="1")
    r = subprocess.run([_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "-n",
                        "-c", f"luafile {SCRIPT}"], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=240)
    assert out.exists(), f"nvim wrote no result (rc {r.returncode}): {r.stderr[-2000:]}"
    got = json.loads(out.read_text())
    assert "error" not in got, got
    assert got["inline_declared"], got
    # Neovim 0.7-0.11 offer no position encoding: UTF-16, where the emoji counts 2
    line = added[-1]
    if got["encoding"] == "utf-16":
        assert got["character"] == len(line) + 1
    item = got["item"]
    assert item, got
    info = item["command"]["arguments"][0]["grounded"][0]
    assert info["receiver"] == "self" and info["constrained"], item
    applied = got["applied"]
    assert applied.startswith(line), applied
    name = re.match(r"[A-Za-z_]\w*", applied[len(line):])
    assert name and name.group(0) in CART_MEMBERS, applied
    assert name.group(0) == info["chosen"]
    # the edit lives in the buffer only; the server never wrote the file
    assert got["modified"] is True
    assert hashlib.sha256(cart.read_bytes()).hexdigest() == before
