"""Snippet corpora: docstring Examples read statically from a package written here, user JSONL,
deduplication, decontamination against DS-1000-format records, and `groundcode index snippets`."""
from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from groundcode.errors import GroundcodeError
from groundcode.retrieval import snippet_sources as src
from groundcode.retrieval.contamination import Contamination
from groundcode.retrieval.snippet import Snippet
from groundcode.retrieval.snippet_index import SnippetIndex, dedupe

MODULE = '''
"""Tiny library for the tests."""
import sys

sys.exit("never import me")            # the corpus builder must read this file, not import it


def running_mean(values, window):
    """Average of each window of consecutive values.

    Parameters
    ----------
    values : list

    Examples
    --------
    >>> from minilib.stats import running_mean
    >>> running_mean([1, 2, 3, 4], 2)
    [1.5, 2.5, 3.5]

    A window as long as the data gives one value:

    >>> running_mean([1, 2, 3], 3)  # doctest: +SKIP
    [2.0]
    >>> for w in (1, 2):
    ...     print(running_mean([2, 4], w))
    [2.0, 4.0]
    [3.0]

    See Also
    --------
    numpy.convolve
    """


class Table:
    """Rows with named columns."""

    def pivot(self, index, columns):
        """Reshape the table by column values.

        Examples
        --------
        Spread the values of one column into new columns:

        >>> t = Table()
        >>> t.pivot("day", "city")
        """


def helper():
    """No examples here.

    >>> import os
    """


add_newdoc("minilib.core", "clip", """
    Limit the values in an array.

    Examples
    --------
    Clip to the range 1..8:

    >>> clip(values, 1, 8)
    """)
'''


@pytest.fixture
def minilib(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "minilib"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stats.py").write_text(textwrap.dedent(MODULE))
    (pkg / "tests" / "test_stats.py").write_text('def test_x():\n    """\n    Examples\n    --------\n    >>> 1 + 1\n    """\n')
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    return pkg


def test_examples_are_split_with_their_preceding_prose(minilib):
    info = src.locate(["minilib"])["minilib"]
    summaries = {}
    got = list(src.package_snippets(info, summaries=summaries))
    by_name = {}
    for s in got:
        by_name.setdefault(s.name, []).append(s)
    mean = by_name["minilib.stats.running_mean"]
    assert [s.description for s in mean] == ["", "A window as long as the data gives one value:"]
    assert mean[0].code == "from minilib.stats import running_mean\nrunning_mean([1, 2, 3, 4], 2)\n"
    # outputs and doctest directives dropped, continuation lines kept
    assert mean[1].code == ("running_mean([1, 2, 3], 3)\nfor w in (1, 2):\n"
                            "    print(running_mean([2, 4], w))\n")
    assert by_name["minilib.stats.Table.pivot"][0].description == "Spread the values of one column into new columns:"
    assert by_name["minilib.core.clip"][0].code == "clip(values, 1, 8)\n"        # numpy's add_newdoc docs
    assert "minilib.stats.helper" not in by_name          # no Examples section
    assert all("tests" not in s.source for s in got)       # test files are not a corpus
    assert mean[0].source == "minilib:minilib/stats.py:running_mean"
    assert summaries["minilib.stats.running_mean"] == "Average of each window of consecutive values."


def test_an_example_that_only_imports_is_dropped():
    section = "\n>>> import numpy as np\n\nThen:\n\n>>> np.ones(2)\narray([1., 1.])\n"
    assert src.split_examples(section) == [("Then:", "np.ones(2)\n")]


def test_missing_package_is_a_clear_error():
    with pytest.raises(GroundcodeError, match="not installed"):
        src.locate(["no_such_package_xyz"])


def test_user_jsonl_records(tmp_path):
    p = tmp_path / "so.jsonl"
    p.write_text(json.dumps({"title": "Drop NaN rows", "code": "df.dropna()", "license": "CC BY-SA 4.0"}) + "\n"
                 + json.dumps({"title": "no code"}) + "\n")
    (s,) = list(src.jsonl_snippets(p))
    assert (s.description, s.code, s.license, s.source) == ("Drop NaN rows", "df.dropna()\n", "CC BY-SA 4.0", "so.jsonl:1")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"x": 1}) + "\n")
    with pytest.raises(GroundcodeError, match="no records"):
        list(src.jsonl_snippets(empty))


def test_dedupe_ignores_comments_and_spacing():
    a = Snippet("first", "x = f(1)  # call\n", "s:1")
    b = Snippet("second", "x  =  f(1)\n", "s:2")
    c = Snippet("third", "y = 2\n", "s:3")
    kept, dropped = dedupe([a, b, c])
    assert [s.source for s in kept] == ["s:1", "s:3"] and dropped == 1


def test_decontamination_drops_copies_and_reports_weak_overlap():
    bench = [{"prompt": "Problem: I have a dataframe and I want to remove every row that has a missing "
                        "value in any column of it please", "reference_code": "result = df.dropna(axis=0, how='any').reset_index(drop=True)\n"}]
    c = Contamination(bench)
    exact = Snippet("x", "result = df.dropna(axis=0,  how='any').reset_index(drop=True)", "s:1")
    inside = Snippet("y", "import pandas as pd\nresult = df.dropna(axis=0, how='any').reset_index(drop=True)\nprint(result)", "s:2")
    prose = Snippet("I have a dataframe and I want to remove every row that has a missing value in any column",
                    "df.dropna()", "s:3")
    weak = Snippet("z", "out = df.dropna(axis=0, how='any')\n", "s:4")
    clean = Snippet("w", "np.ones(3)\n", "s:5")
    kept, report = c.filter([exact, inside, prose, weak, clean])
    assert [s.source for s in kept] == ["s:4", "s:5"]
    assert report["dropped"] == {"exact_code": 1, "code_ngram": 1, "description_ngram": 1}
    assert report["weak_overlap_kept"] == 1 and report["checked"] == 5


def test_cli_builds_the_index_in_the_given_directory_and_searches_it(minilib, tmp_path):
    from groundcode.cli import app
    so = tmp_path / "so.jsonl"
    so.write_text(json.dumps({"description": "Compute a moving average of a series", "code": "s.rolling(3).mean()"}) + "\n"
                  + json.dumps({"description": "dup", "code": "s.rolling(3).mean()  # same"}) + "\n")
    bench = tmp_path / "ds.jsonl"
    bench.write_text(json.dumps({"prompt": "p", "reference_code": "clip(values, 1, 8)\n",
                                 "code_context": "", "metadata": {}}) + "\n")
    out = tmp_path / "idx"
    r = CliRunner().invoke(app, ["index", "snippets", "--no-libraries", "--package", "minilib", "--jsonl", str(so),
                                 "--ds1000", str(bench), "--out", str(out), "--no-dense"])
    assert r.exit_code == 0, r.output
    idx = SnippetIndex.open(out)
    m = idx.manifest
    assert m["extracted"] == 6 and m["duplicates_dropped"] == 1 and len(idx) == 4
    assert m["decontamination"]["dropped"] == {"exact_code": 1}            # the clip example
    assert "dropped 1" in r.output
    assert "minilib.stats.running_mean" in idx.summaries()
    hit = CliRunner().invoke(app, ["index", "snippets-search", "moving average", "--index", str(out),
                                   "--method", "bm25-desc", "-k", "1", "--json"])
    assert hit.exit_code == 0, hit.output
    assert json.loads(hit.output)["code"] == "s.rolling(3).mean()\n"
    missing = CliRunner().invoke(app, ["index", "snippets-search", "x", "--index", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no snippet index" in missing.output


def test_the_default_libraries_that_are_not_installed_are_skipped_not_fatal(minilib, tmp_path):
    # pandas, scipy and scikit-learn are not groundcode dependencies: `index snippets` with its
    # defaults must work where they are missing. A bare venv has none of them (numpy neither);
    # minilib is visible to it through PYTHONPATH.
    import subprocess
    import sys
    from groundcode.cli import app
    env = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    py = str(env / "bin" / "python")
    out = tmp_path / "idx"
    r = CliRunner().invoke(app, ["index", "snippets", "--package", "minilib", "--python", py,
                                 "--out", str(out), "--no-dense"])
    assert r.exit_code == 0, r.output
    assert "skipped: numpy, pandas, scipy, sklearn" in r.output
    assert set(SnippetIndex.open(out).manifest["sources"]) == {"minilib"}
    named = CliRunner().invoke(app, ["index", "snippets", "--package", "pandas", "--python", py, "--out", str(out)])
    assert named.exit_code == 2 and "not installed" in named.output      # a package asked for by name must exist
    none = CliRunner().invoke(app, ["index", "snippets", "--python", py, "--out", str(out), "--no-dense"])
    assert none.exit_code == 2 and "none of numpy, pandas, scipy, sklearn is installed" in none.output
