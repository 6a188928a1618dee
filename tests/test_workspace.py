"""The workspace (workspace.py): editor buffers over the disk, contexts from unsaved text, and an
analyzer that sees the other open buffers (an overlay) and never serves a stale answer."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from groundcode.analysis.base import MembersQuery
from groundcode.analysis.jedi_client import JediAnalyzer
from groundcode.config import SamplingConfig
from groundcode.context import cursor_context
from groundcode.errors import GroundcodeError
from groundcode.workspace import Workspace

NEW_METHOD = "    def total(self):\n        return 0\n\n"


@pytest.fixture()
def repo(tmp_path, shop_repo):
    dst = tmp_path / "shop"
    shutil.copytree(shop_repo, dst)
    return dst


def test_buffers_over_the_disk_and_paths_inside_the_roots(repo, tmp_path):
    ws = Workspace([repo])
    cart = repo / "shop" / "cart.py"
    disk = cart.read_text()
    assert ws.resolve("shop/cart.py") == cart.resolve() and ws.text(cart) == disk
    with pytest.raises(GroundcodeError, match="outside the workspace"):
        ws.resolve(tmp_path / "elsewhere.py")
    link = tmp_path / "link.py"
    os.symlink(cart, link)
    assert ws.resolve(link) == cart.resolve()        # resolved first: the target is inside ...
    inside = repo / "alias.py"
    os.symlink(tmp_path / "nowhere.py", inside)
    with pytest.raises(GroundcodeError):             # ... an inside link to outside is not
        ws.resolve(inside)
    v0 = ws.version
    ws.open(cart, disk + "# edited\n")
    assert ws.version == v0 + 1 and ws.text(cart).endswith("# edited\n")
    assert ws.overlay(exclude=cart).files == ()     # the file itself travels as the query's code
    reg = repo / "shop" / "registry.py"
    ws.open(reg, reg.read_text() + "\n")
    o1 = ws.overlay(exclude=cart)
    assert [p for p, _ in o1.files] == [str(reg.resolve())]
    ws.change(cart, disk + "# more\n")               # a keystroke in the file being completed
    assert ws.overlay(exclude=cart).stamp == o1.stamp
    ws.change(reg, reg.read_text() + "\n\n")         # ... and in another buffer
    assert ws.overlay(exclude=cart).stamp != o1.stamp
    ws.close(cart)
    assert ws.text(cart) == disk


def test_overlay_stamps_follow_content_across_a_rebuilt_workspace(repo):
    """Issue 28: stamps hashed (path, version) and a new Workspace counts from 1 again: after
    the LSP rebuilt it (folders changed), another text under the same version number got the
    old stamp, and the analyzer's cache served the old buffer's answer."""
    cart, reg = repo / "shop" / "cart.py", repo / "shop" / "registry.py"
    a = Workspace([repo])
    a.open(reg, reg.read_text() + "\n# one\n")
    b = Workspace([repo])
    b.open(reg, reg.read_text() + "\n# two\n")
    assert a.version == b.version                        # the same counter value ...
    assert a.overlay(exclude=cart).stamp != b.overlay(exclude=cart).stamp   # ... other stamps
    c = Workspace([repo])
    c.open(reg, reg.read_text() + "\n# one\n")
    assert c.overlay(exclude=cart).stamp == a.overlay(exclude=cart).stamp   # same text, same answer


def test_contexts_from_unsaved_text(repo):
    cart = repo / "shop" / "cart.py"
    unsaved = cart.read_text().replace("    def add(self, item):", NEW_METHOD + "    def add(self, item):")
    ctx = cursor_context(cart, 14, 13, repo, text=unsaved)
    assert "def total(self)" in ctx.before and ctx.before.endswith("        self.")
    ws = Workspace([repo])
    ws.open(cart, unsaved)
    wctx = ws.cursor(cart, 14, 13)
    assert wctx.before == ctx.before and wctx.repo == repo.resolve()
    assert "def total" in ws.function(cart, "Cart.total").before


def test_the_analyzer_reads_other_modules_from_the_overlay(repo):
    # registry.py has an unsaved method: `self.registry.` in cart.py offers it; once the buffer
    # is closed the answer is the disk's again (the cache is keyed by the overlay's stamp).
    ws = Workspace([repo])
    reg = repo / "shop" / "registry.py"
    cart = repo / "shop" / "cart.py"
    ws.open(reg, reg.read_text() + "\n    def purge(self):\n        pass\n")
    with JediAnalyzer(repo, deadline_s=30) as a:
        def members():
            ctx = ws.cursor(cart, 11, len("        self.registry."))
            q = MembersQuery(ctx.splice(""), "self.registry", ("k",))
            return a.ask(q).result(60)
        assert "purge" in members().names and "register" in members().names
        ws.close(reg)
        r = members()
        assert "purge" not in r.names and "register" in r.names and not r.cache_hit


def _gen(tiny_lm, target):
    from scripted import scripted_generator
    return scripted_generator(tiny_lm, target)


def test_a_method_only_in_the_buffer_is_a_member_and_no_stale_answer_blocks_it(tiny_lm, repo):
    # issue 16's acceptance: a buffer whose unsaved text adds a method the file on disk does not
    # have. The same Generator first answers `self.` on the disk's text (cached), then on the
    # buffer's (the method written above the cursor, in the same class): E12, the cache key must
    # hold the enclosing class's text.
    cart = repo / "shop" / "cart.py"
    unsaved = cart.read_text().replace("    def add(self, item):", NEW_METHOD + "    def add(self, item):")
    ws = Workspace([repo])
    with _gen(tiny_lm, "total()\n") as gen:
        s = SamplingConfig(max_new_tokens=10)
        disk = gen.run([ws.cursor(cart, 11, 13)], s)[0][0]
        t = disk.triggers[0]
        assert not t.failed_open and t.rolled_back and not disk.completion.startswith("total")
        ws.open(cart, unsaved)
        out = gen.run([ws.cursor(cart, 14, 13)], s)[0][0]
    t = out.triggers[0]
    assert out.completion.startswith("total()"), out.completion
    assert t.receiver == "self" and not t.failed_open and not t.rolled_back and t.chosen == "total"
