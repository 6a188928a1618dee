"""Declarations in the prompt: what an IDE knows at the cursor, as model-only blocks."""
from __future__ import annotations

from pathlib import Path

from groundcode.context import CodeContext, cursor_context, function_context
from groundcode.retrieval.declarations import declaration_blocks

FIXTURES = Path(__file__).parent / "fixtures"
SHOP = FIXTURES / "shop"


def _texts(ctx, **kw):
    return [b.text for b in declaration_blocks(ctx, **kw)]


def test_function_context_lists_class_and_attribute_types_never_the_body():
    ctx = function_context(SHOP / "shop" / "cart.py", "Cart.last", SHOP)
    blocks = declaration_blocks(ctx)
    assert [b.source.rsplit(":", 1)[1] for b in blocks] == ["Cart", "Registry"]
    cart, registry = blocks[0].text, blocks[1].text
    assert cart.startswith("# shop/cart.py\n# class Cart:")
    assert "#     registry: Registry" in cart          # typed from `self.registry = Registry()`
    assert "def add(self, item): ...  # Add an item and record the update." in cart
    assert "def last" not in cart                      # the method being written is left out
    assert "latest_update" not in cart                 # ... and so is its body
    assert "#     def latest_update(self): ..." in registry
    assert "#     size: int" in registry
    assert all(line.startswith("#") for b in blocks for line in b.text.splitlines())


def test_cursor_context_excludes_enclosing_method_and_parses_partial_line():
    ctx = cursor_context(SHOP / "shop" / "cart.py", 11, 13, SHOP)   # `        self.|registry...`
    cart = _texts(ctx)[0]
    assert "def add" not in cart and "def last(self): ...  # Return the latest update." in cart


def test_unsaved_text_and_relative_imports_and_budget(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "store.py").write_text(
        "class Store:\n    \"\"\"Rows by key.\n\n    More.\"\"\"\n"
        "    limit: int = 10\n\n    def get(self, key: str) -> dict:\n        \"\"\"One row.\"\"\"\n"
        "        return {}\n\n    @property\n    def size(self) -> int:\n        return 0\n\n\n"
        "def connect(url: str, *, timeout: float = 1.0) -> Store:\n    \"\"\"Open a store.\"\"\"\n"
        "    return Store()\n")
    text = ("from .store import Store, connect\n\n\ndef load(store: Store, key):\n"
            "    s = connect('x')\n    return store.")
    ctx = CodeContext(path=pkg / "app.py", repo=tmp_path, before=text, after="\n")
    blocks = _texts(ctx)
    store = next(b for b in blocks if "class Store" in b)
    assert '"""Rows by key."""' in store and "limit: int" in store and "size: int" in store
    assert "def get(self, key: str) -> dict: ...  # One row." in store
    conn = next(b for b in blocks if "connect" in b)
    assert "def connect(url: str, *, timeout: float=1.0) -> Store: ...  # Open a store." in conn
    # the annotation's class ranks before the other import
    assert blocks.index(store) < blocks.index(conn)
    # a budget keeps whole blocks, best first, and skips what does not fit
    small = _texts(ctx, budget_tokens=len(conn) // 4 + 1)
    assert small == [conn]
    assert _texts(ctx, budget_tokens=0) == []


def test_no_repository_names_no_blocks(tmp_path):
    ctx = CodeContext(path=tmp_path / "m.py", repo=tmp_path, before="import os\n\nx = os.", after="")
    assert declaration_blocks(ctx) == []


def test_generator_prompt_holds_declarations_only_when_asked(tiny_lm):
    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, PromptConfig
    ctx = function_context(SHOP / "shop" / "cart.py", "Cart.last", SHOP)
    tok = tiny_lm.tokenizer
    with Generator(tiny_lm, MonitorConfig(enabled=False)) as plain:
        p0 = plain.prompt(ctx, 32)
    with Generator(tiny_lm, MonitorConfig(enabled=False), prompt=PromptConfig(declarations=True)) as gen:
        p1 = gen.prompt(ctx, 32)
    assert [b.source.rsplit(":", 1)[1] for b in p1.blocks] == ["Cart", "Registry"]
    assert "latest_update" in tok.decode(p1.ids) and "latest_update" not in tok.decode(p0.ids)
    assert tok.decode(p1.ids).endswith(tok.decode(p0.ids))      # the file's text comes last


def test_imports_resolve_from_the_package_root_when_repo_is_higher_up():
    # `groundcode generate` without --repo finds the git root above the fixture: imports still
    # resolve from the directory above the file's top-level package
    ctx = function_context(SHOP / "shop" / "cart.py", "Cart.last", Path(__file__).parent.parent)
    blocks = declaration_blocks(ctx)
    assert [b.text.splitlines()[0] for b in blocks] == ["# shop/cart.py", "# shop/registry.py"]


def test_session_rows_get_declarations_from_a_view_and_from_the_request(tiny_lm):
    # The scheduler builds every row's prompt: `--declarations` (the harness's view, the CLI's
    # generator, a Request's PromptConfig) must reach it, not only Generator.prompt
    from dataclasses import replace

    from groundcode.api import Generator
    from groundcode.config import MonitorConfig, PromptConfig, SamplingConfig
    ctx = function_context(SHOP / "shop" / "cart.py", "Cart.last", SHOP)
    sc = SamplingConfig(max_new_tokens=4)
    with Generator(tiny_lm, MonitorConfig(enabled=False)) as gen:
        plain = gen.run([ctx], sc)[0][0].prompt_tokens
        view = gen.view(prompt=replace(gen.prompts.config, declarations=True))
        declared = view.run([ctx], sc)[0][0].prompt_tokens
        assert declared == len(view.prompt(ctx, 4).ids) > plain == len(gen.prompt(ctx, 4).ids)
        req = gen.request(ctx, sc)
        req = replace(req, prompt=replace(req.prompt, declarations=True))
        assert gen.session.submit(req).result(timeout=120)[0].prompt_tokens == declared
