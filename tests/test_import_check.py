"""The hallucination judge's runtime import check (evaluation/import_check.py): an import pylint
calls unresolved counts only if importing it fails too — in the sandbox, in the repository's own
environment (its roots and its venv's site-packages), never groundcode's."""
from __future__ import annotations

from pathlib import Path

from groundcode.evaluation import import_check, scoring


def _repo(tmp_path: Path) -> Path:
    """A repository whose venv holds a module that makes its names at import time, as
    typing_extensions does for typing's aliases."""
    repo = tmp_path / "proj"
    (repo / "proj").mkdir(parents=True)
    (repo / "proj" / "__init__.py").write_text("VALUE = 1\n")
    venv = repo / ".venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "dynexports.py").write_text("import typing\nglobals().update({'Optional': typing.Optional})\n")
    (tmp_path / "marker").write_text("untouched\n")
    (site / "sideeffect.py").write_text(f"open({str(tmp_path / 'marker')!r}, 'w').write('written')\n")
    return repo


def test_an_import_that_resolves_when_run_is_confirmed_and_an_invented_one_is_not(tmp_path):
    repo = _repo(tmp_path)
    pairs = [("dynexports", "Optional"), ("dynexports", "Invented"), ("proj", "VALUE"), ("proj", None),
             ("json", "loads"), ("os", "path"), ("inventedpkg", None),
             ("typer", None)]      # in groundcode's environment, not the repository's: not visible
    assert import_check.confirm(repo, pairs) == [True, False, True, True, True, True, False, False]


def test_the_imports_run_in_the_sandbox_not_here(tmp_path):
    """Importing runs the module's code: it runs sandboxed, so a write to the host fails there
    (the import fails: not confirmed) and the host's file is untouched."""
    repo = _repo(tmp_path)
    assert import_check.confirm(repo, [("sideeffect", None)]) == [False]
    assert (tmp_path / "marker").read_text() == "untouched\n"


def test_pylint_messages_are_read_and_the_confirmed_ones_leave_the_count(tmp_path):
    repo = _repo(tmp_path)
    msgs = ["3: no-name-in-module: No name 'Optional' in module 'dynexports'",
            "4: no-name-in-module: No name 'Invented' in module 'dynexports'",
            "5: import-error: Unable to import 'inventedpkg'",
            "6: undefined-variable: Undefined variable 'x'"]
    assert [import_check.import_of(m) for m in msgs] == [("dynexports", "Optional"), ("dynexports", "Invented"),
                                                       ("inventedpkg", None), None]
    (ok,) = import_check.confirmed_messages([(repo, msgs)])
    assert ok == {msgs[0]}
    assert scoring.judged_messages(msgs, None, ok) == msgs[1:]
