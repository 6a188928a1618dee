"""Retrievers over a small snippet index (BM25 both sides, dense with the packaged MiniLM, the
paper's ensemble, RRF) and the prompt blocks with the paper's trimming order."""
from __future__ import annotations

import numpy as np
import pytest

from groundcode.errors import GroundcodeError
from groundcode.retrieval.snippet import Snippet
from groundcode.retrieval.snippet_index import SnippetIndex
from groundcode.retrieval.snippet_prompt import snippet_blocks
from groundcode.retrieval.snippet_retriever import RetrieverConfig, SnippetRetriever, _ranks

SNIPPETS = [
    Snippet("Sort an array in place", "a.sort()\n", "t:1", name="numpy.ndarray.sort"),
    Snippet("Read a comma-separated file into a DataFrame", "df = pd.read_csv('data.csv')\n", "t:2",
            name="pandas.read_csv"),
    Snippet("Remove rows that contain missing values", "df = df.dropna()\n", "t:3", name="pandas.DataFrame.dropna"),
    Snippet("", "np.linalg.inv(m)\n", "t:4", name="numpy.linalg.inv"),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return SnippetIndex.build(SNIPPETS, tmp_path_factory.mktemp("idx") / "snippets", dense=True)


def _top(index, method, query, **kw):
    return [index.snippets[i].source for i, _ in SnippetRetriever(index, RetrieverConfig(method, **kw)).rank(query, 4)]


def test_bm25_matches_words_on_each_side(index):
    assert _top(index, "bm25-desc", "missing values")[0] == "t:3"
    assert _top(index, "bm25-code", "read_csv")[0] == "t:2"
    assert _top(index, "bm25-desc", "linalg inv")[0] == "t:4"             # the name's words count
    assert _top(index, "bm25-desc", "zzz qqq") == []                      # no shared word, nothing found


def test_dense_finds_paraphrases_bm25_cannot(index):
    q = "order the elements of a vector from smallest to largest"
    assert _top(index, "bm25-desc", q)[:1] != ["t:1"]
    assert _top(index, "dense-desc", q)[0] == "t:1"
    assert _top(index, "dense-desc", "load a csv table")[0] == "t:2"


def test_ensemble_is_the_weighted_sum_of_both_sides(index):
    q = "drop incomplete records"
    v = index.encode_queries([q])[0]
    d, c = index.dense_scores("desc", v), index.dense_scores("code", v)
    s = SnippetRetriever(index, RetrieverConfig("ensemble", weight=0.3)).scores(q, v)
    assert np.allclose(s, 0.3 * c + 0.7 * d)
    assert _top(index, "ensemble", q, weight=0.0) == _top(index, "dense-desc", q)
    assert _top(index, "ensemble", q, weight=1.0) == _top(index, "dense-code", q)
    with pytest.raises(GroundcodeError, match="weight"):
        SnippetRetriever(index, RetrieverConfig("ensemble", weight=1.5))
    with pytest.raises(GroundcodeError, match="unknown retriever"):
        SnippetRetriever(index, RetrieverConfig("magic"))


def test_rrf_sums_reciprocal_ranks_of_the_four_rankings(index):
    q = "remove rows with missing values"
    v = index.encode_queries([q])[0]
    parts = [index.bm25_scores("desc", q), index.bm25_scores("code", q),
             index.dense_scores("desc", v), index.dense_scores("code", v)]
    want = sum(1.0 / (60 + _ranks(p)) for p in parts)
    got = SnippetRetriever(index, RetrieverConfig("rrf")).scores(q, v)
    assert np.allclose(got, want)
    assert _top(index, "rrf", q)[0] == "t:3"
    assert list(_ranks(np.array([0.1, 0.9, 0.5, 0.9]))) == [4, 1, 3, 2]


class WordTokenizer:
    """One token per whitespace-separated word (the budget arithmetic is then easy to follow)."""

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}


def _ranked():
    return [Snippet("best one here", "best_a()\nbest_b()\n", "r:1"),
            Snippet("second one here", "second_a()\nsecond_b()\n", "r:2")]


def test_blocks_come_in_reverse_rank_order_and_fit_untouched_when_they_can():
    blocks, prompt, rep = snippet_blocks("the prompt", _ranked(), WordTokenizer(), budget=100)
    assert [b.text for b in blocks] == ["# second one here\nsecond_a()\nsecond_b()\n\n",
                                        "# best one here\nbest_a()\nbest_b()\n\n"]
    assert prompt == "the prompt" and rep["description_tokens_cut"] == rep["code_tokens_cut"] == 0


def test_trimming_cuts_descriptions_first_then_code_then_the_prompt():
    tok, prompt = WordTokenizer(), "the prompt"                     # 2 tokens; each block 6
    # 12 + 2 = 14 > 11: the lowest-ranked description goes (3 words and its "#": 4 tokens)
    blocks, _, rep = snippet_blocks(prompt, _ranked(), tok, budget=11)
    assert rep["description_tokens_cut"] == 4 and rep["code_tokens_cut"] == 0
    assert [b.text for b in blocks] == ["second_a()\nsecond_b()\n\n", "# best one here\nbest_a()\nbest_b()\n\n"]
    # budget 5 (3 for blocks): both descriptions (8 tokens), then one code line of the lower-ranked
    blocks, p, rep = snippet_blocks(prompt, _ranked(), tok, budget=5)
    assert rep["description_tokens_cut"] == 8 and rep["code_tokens_cut"] == 1
    assert [b.text for b in blocks] == ["second_a()\n\n", "best_a()\nbest_b()\n\n"] and p == prompt
    # budget 3 (1 for blocks): the lower-ranked block is dropped, the best keeps one line
    blocks, p, rep = snippet_blocks(prompt, _ranked(), tok, budget=3)
    assert [b.text for b in blocks] == ["best_a()\n\n"] and rep["blocks_dropped"] == 1
    # a prompt over the budget on its own: every block goes and its oldest lines are cut
    blocks, p, rep = snippet_blocks("old line\nnewer line\nlast", _ranked(), tok, budget=3)
    assert blocks == [] and p == "newer line\nlast" and rep["prompt_tokens_cut"] == 2
    # the engine's cap on block tokens is respected
    blocks, _, rep = snippet_blocks(prompt, _ranked(), tok, budget=100, block_cap=6)
    assert rep["block_tokens"] <= 6


def test_held_out_queries_never_contain_an_indexed_description(tmp_path):
    from groundcode.retrieval.snippet_queries import held_out_queries
    snips = [Snippet("", "a.sort()\n", "q:1", name="lib.sort"),
             Snippet("Sort descending instead:", "a.sort(reverse=True)\n", "q:2", name="lib.sort"),
             Snippet("", "inv(m)\n", "q:3", name="lib.inv"),
             Snippet("Compute the inverse of a matrix", "inv(m2)\n", "q:4", name="lib.inv2")]
    summaries = {"lib.sort": "Return a sorted copy of an array.", "lib.inv": "Inverse.",
                 "lib.inv2": "Compute the inverse of a matrix", "lib.gone": "Something with no snippets left."}
    idx = SnippetIndex.build(snips, tmp_path / "idx", dense=False, summaries=summaries)
    qs = held_out_queries(idx, n=None)
    # lib.inv: too short; lib.inv2: its summary is an indexed description; lib.gone: no snippets
    assert [(q["name"], sorted(q["relevant"])) for q in qs] == [("lib.sort", [0, 1])]
    assert qs[0]["split"] in ("dev", "test")
    assert held_out_queries(idx, n=None) == qs                                   # deterministic
