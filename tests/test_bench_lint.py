"""Success rate's lint check: verdicts, overlays, and that samples of one file do not leak into each other."""
from pathlib import Path

from groundcode.evaluation import lint

FIXTURE = Path(__file__).parent / "fixtures" / "bench_repo"
MODELS = (FIXTURE / "inventory" / "models.py").read_text()


def test_verdict_counts_only_the_functions_lines():
    msgs = [{"symbol": "no-member", "line": 12, "message": "x"},
            {"symbol": "undefined-variable", "line": 3, "message": "y"},
            {"symbol": "unused-import", "line": 12, "message": "z"}]
    assert not lint.verdict(msgs, 10, 20).success
    assert lint.verdict(msgs, 10, 20).no_member == 1 and lint.verdict(msgs, 10, 20).undefined_variable == 0
    assert lint.verdict(msgs, 13, 20).success
    syntax = [{"symbol": "syntax-error", "line": 99, "message": "bad"}]
    assert lint.verdict(syntax, 1, 2).syntax_error and not lint.verdict(syntax, 1, 2).success


def _replace(old: str, new: str) -> str:
    assert old in MODELS
    return MODELS.replace(old, new, 1)


def test_check_spliced_samples_in_overlays():
    lines = MODELS.splitlines()
    first = next(i for i, ln in enumerate(lines, 1) if "def total_value" in ln)
    last = first + 5
    texts = [
        MODELS,                                                                         # the original
        _replace("self.book.price_with_tax(name)", "self.book.price_including_tax(name)"),  # no-member
        _replace("total = 0.0", "total = start_value"),                                 # undefined name
        _replace("total = 0.0", "total = 0.0 +"),                                       # syntax error
        _replace("return item.quantity\n", "return item.quantity + missing_name\n"),    # outside the lines
        MODELS,                                                                         # again: cache forgotten
        _replace("total = 0.0", "import invented_pkg_q\n        total = 0.0"),       # an invented module
        _replace("price_with_tax(name)", "price_with_tax(name, rate=2)"),             # no such parameter
        _replace("price_with_tax(name)", "price_with_tax()"),                          # one missing
    ]
    before = {p: p.read_bytes() for p in FIXTURE.rglob("*") if p.is_file()}
    jobs = [lint.LintJob(FIXTURE, "inventory/models.py", t, first, last) for t in texts]
    res = lint.check(jobs, workers=2)
    assert [r.success for r in res] == [True, False, False, False, True, True, True, True, True]  # imports
    assert [r.import_error for r in res] == [0, 0, 0, 0, 0, 0, 1, 0, 0] and "invented_pkg_q" in res[6].messages[0]
    assert [r.call_error for r in res] == [0, 0, 0, 0, 0, 0, 0, 1, 1]       # and calls: counted only
    assert "unexpected-keyword-arg" in res[7].messages[0] and "no-value-for-parameter" in res[8].messages[0]
    assert res[1].no_member == 1 and "price_including_tax" in res[1].messages[0]
    assert res[2].undefined_variable == 1
    assert res[3].syntax_error
    assert not any(r.crashed for r in res)
    assert {p: p.read_bytes() for p in FIXTURE.rglob("*") if p.is_file()} == before


def test_prune_keeps_lines_attributes_and_the_scored_function():
    from groundcode.evaluation.prune import STUB, prune
    lines = MODELS.split("\n")
    first = next(i for i, ln in enumerate(lines, 1) if "def total_value" in ln)
    out = prune(MODELS, first, first + 5)
    new = out.split("\n")
    assert len(new) == len(lines)
    assert new[first - 1:first + 5] == lines[first - 1:first + 5]          # the scored function is intact
    assert "        self.book = PriceBook()" in new                          # instance attributes stay
    assert "item.quantity -= quantity" not in out and STUB in out           # other bodies are stubs
    assert prune("def f(:\n", 1, 1) == "def f(:\n"                           # broken text: untouched


def test_pruned_and_full_lint_agree_on_the_fixture():
    lines = MODELS.splitlines()
    first = next(i for i, ln in enumerate(lines, 1) if "def total_value" in ln)
    texts = [MODELS, _replace("self.book.price_with_tax(name)", "self.book.price_including_tax(name)"),
             _replace("self.items.items()", "self.itemz.items()"), _replace("total = 0.0", "total = start")]
    jobs = [lint.LintJob(FIXTURE, "inventory/models.py", t, first, first + 5) for t in texts]
    pruned = lint.check(jobs, workers=1, prune_over_lines=1)
    full = lint.check(jobs, workers=1, prune_over_lines=0)
    assert [r.success for r in pruned] == [r.success for r in full] == [True, False, False, False]


def test_a_pylint_crash_or_fatal_message_is_a_failure_reported_apart():
    crash = [{"symbol": "pylint-crash", "line": 0, "message": "RecursionError()"}]
    fatal = [{"type": "fatal", "symbol": "astroid-error", "message-id": "F0002", "line": 1,
              "message": "AstroidError"}]
    for msgs in (crash, fatal):
        r = lint.verdict(msgs, 1, 5)
        assert r.crashed and not r.success and not r.syntax_error and not r.no_member
    assert lint.verdict([{"symbol": "parse-error", "message-id": "F0010", "line": 0}], 1, 5).crashed
    assert lint.verdict([], 1, 5).success and not lint.verdict([], 1, 5).crashed


def test_a_namespace_package_of_the_repository_is_imported_from_its_root(tmp_path):
    # svg.charts (heldout2): svg/ has no __init__.py, so pylint's own path for svg/charts/pie.py
    # is svg/, and `from svg.charts.graph import Graph` (the package's own import) was an
    # import error for the reference and both arms alike; the judge now has the repository's
    # roots on its path, as the names monitor's module index does
    (tmp_path / "svg" / "charts").mkdir(parents=True)
    (tmp_path / "svg" / "charts" / "__init__.py").write_text("")
    (tmp_path / "svg" / "charts" / "graph.py").write_text("class Graph:\n    pass\n")
    (tmp_path / "svg" / "charts" / "pie.py").write_text("")
    (tmp_path / "src" / "lay").mkdir(parents=True)
    (tmp_path / "src" / "lay" / "__init__.py").write_text("VALUE = 1\n")
    text = ("from svg.charts.graph import Graph\nfrom svg.charts import graph\nimport svg\n"
            "from svg.charts.graph import Invented\nfrom lay import VALUE\n")
    [res] = lint.check([lint.LintJob(tmp_path, "svg/charts/pie.py", text, 1, 5)], workers=1)
    assert [m.split(":")[0:2] for m in res.messages] == [["4", " no-name-in-module"]], res.messages
