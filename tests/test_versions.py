"""The libraries whose private internals groundcode uses are pinned to the range it was tested
with (pyproject.toml): the installed ones must lie in it."""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def test_transformers_jedi_and_parso_are_inside_their_pinned_ranges():
    text = PYPROJECT.read_text()
    for name in ("transformers", "jedi", "parso"):
        spec = re.search(rf'"({name}[<>=!~][^"]*)"', text).group(1)
        req = Requirement(spec)
        assert req.specifier, f"{name} has no upper bound or pin: {spec}"
        assert any(s.operator in ("<", "<=", "==") for s in req.specifier), spec
        assert metadata.version(name) in req.specifier, (name, metadata.version(name), spec)
