"""A real editor drives `groundcode lsp`: headless Neovim from Debian's packages (0.7.2 on
Debian 12; scripts/test installs it with apt-get) on a copy of the shop fixture. Each Lua script
appends lines to cart.py's buffer with nvim_buf_set_lines (Neovim's own incremental sync sends
them; the buffer differs from the disk) and asks for textDocument/inlineCompletion at a `self.`
that only this edit created -- after a non-ASCII string, so UTF-16 columns differ from
Python's:

- tests/nvim/inline_completion.lua: vim.lsp.start_client + buf_attach_client, buf_request_sync,
  the item applied with vim.lsp.util.apply_text_edits;
- tests/nvim/plugin_inline.lua: the documented config (docs/editors/groundcode.lua): the
  suggestion shown as an extmark, then accepted.

The identifier written must be a member of Cart, and the file on disk unchanged. The same for a
TypeScript file (tests/fixtures/tsshop): a function appended to cart.ts asks at `c.` (a Cart),
grounded by TypeScript's server; the documented config attaches to the .ts buffer by itself
(its default filetypes: Python, TypeScript, JavaScript)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "shop"
PLUGIN = HERE.parent / "docs" / "editors" / "groundcode.lua"
CART_MEMBERS = {"owner", "registry", "add", "last", "total"}
ADDED = ["", "    def total(self):", '        tag = "é😀"; return self.']


def _nvim() -> str:
    nvim = shutil.which("nvim")
    assert nvim, "Neovim is missing: install it (Debian/Ubuntu: apt-get install neovim; scripts/test does)"
    return nvim


TS_FIXTURE = HERE / "fixtures" / "tsshop"
TS_ADDED = ["", "export function total(c: Cart): number {", '  const tag = "é😀"; return c.']
TS_MEMBERS = {"add", "owner"}         # `registry` is private to Cart


def _drive(tmp_path: Path, script: str, ts: bool = False, **env_extra) -> tuple[dict, bool]:
    """Run `script` in headless Neovim on a fresh copy of the fixture; (its result, whether
    cart.py (cart.ts) on disk is byte-identical afterwards)."""
    repo = tmp_path / ("tsshop" if ts else "shop")
    shutil.copytree(TS_FIXTURE if ts else FIXTURE, repo)
    cart = repo / "src" / "cart.ts" if ts else repo / "shop" / "cart.py"
    before = hashlib.sha256(cart.read_bytes()).hexdigest()
    out = tmp_path / "out.json"
    server = [sys.executable, "-m", "groundcode", "lsp", "--model", "tiny", "--debounce-ms", "0",
              "--deadline", "60", "--max-new-tokens", "24"]
    env = dict(os.environ, GC_FILE=str(cart), GC_ROOT=str(repo), GC_CMD=json.dumps(server),
               GC_LINES=json.dumps(TS_ADDED if ts else ADDED), GC_OUT=str(out), GC_PLUGIN=str(PLUGIN),
               HF_HUB_OFFLINE="1", **env_extra)
    r = subprocess.run([_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "-n",
                        "-c", f"luafile {HERE / 'nvim' / script}"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=240)
    assert out.exists(), f"nvim wrote no result (rc {r.returncode}): {r.stderr[-2000:]}"
    got = json.loads(out.read_text())
    assert "error" not in got, got
    return got, hashlib.sha256(cart.read_bytes()).hexdigest() == before


def _member_written(got: dict, ts: bool = False) -> str:
    line, applied = (TS_ADDED if ts else ADDED)[-1], got["applied"]
    assert applied.startswith(line), applied
    name = re.match(r"[A-Za-z_]\w*", applied[len(line):])
    assert name and name.group(0) in (TS_MEMBERS if ts else CART_MEMBERS), applied
    info = got["item"]["command"]["arguments"][0]["grounded"][0]
    assert info["receiver"] == ("c" if ts else "self") and info["constrained"] and info["chosen"] == name.group(0), got
    return name.group(0)


def test_neovim_inline_completion_on_an_unsaved_edit(tmp_path):
    got, disk_unchanged = _drive(tmp_path, "inline_completion.lua")
    assert got["inline_declared"], got
    # Neovim 0.7-0.11 offer no position encoding: UTF-16, where the emoji counts 2
    if got["encoding"] == "utf-16":
        assert got["character"] == len(ADDED[-1]) + 1
    _member_written(got)
    assert got["modified"] is True          # the edit lives in the buffer only
    assert disk_unchanged                   # and the server never wrote the file


def test_the_documented_neovim_config_shows_and_accepts_a_member(tmp_path):
    got, disk_unchanged = _drive(tmp_path, "plugin_inline.lua")
    name = _member_written(got)
    assert got["accepted"] is True and got["ghost"].startswith(name)   # what was shown went in
    assert got["marks_after"] == 0
    assert disk_unchanged


def test_neovim_inline_completion_in_a_typescript_file(tmp_path):
    from groundcode.analysis import lsp_servers
    lsp_servers.install("typescript")
    got, disk_unchanged = _drive(tmp_path, "inline_completion.lua", ts=True)
    _member_written(got, ts=True)
    assert got["modified"] is True and disk_unchanged


def test_the_documented_neovim_config_attaches_to_a_typescript_buffer_by_itself(tmp_path):
    """The documented configuration as a user sets it up (setup() with its default filetypes,
    then `:edit src/cart.ts`): its FileType autocommand attaches the .ts buffer, and the
    suggestion at `c.` is a member of Cart, grounded by TypeScript's server (issue 44 item 4)."""
    from groundcode.analysis import lsp_servers
    lsp_servers.install("typescript")
    got, disk_unchanged = _drive(tmp_path, "plugin_inline.lua", ts=True, GC_BY_FILETYPE="1")
    name = _member_written(got, ts=True)
    assert got["accepted"] is True and got["ghost"].startswith(name)
    assert disk_unchanged
