"""Metric specifications: every expected value below is computed by hand in the comment beside it."""
import math
from itertools import combinations

import pytest

from groundcode.evaluation import metrics as m


def test_code_tokens_skip_comments_and_keep_strings_whole():
    assert m.code_tokens("x = f('a b')  # hi\nreturn x.y") == ["x", "=", "f", "(", "'a b'", ")", "return", "x", ".", "y"]
    assert m.code_tokens('s = """doc\nmore"""') == ["s", "=", '"""doc\nmore"""']
    assert m.code_tokens("a **= 2; b //= 3 -> c") == ["a", "**=", "2", ";", "b", "//=", "3", "->", "c"]
    # an unterminated string (completions stop anywhere) does not raise
    assert m.code_tokens("x = 'abc") == ["x", "=", "'abc"]
    assert m.identifiers("return self.items if x else None") == ["self", "items", "x"]


def test_bleu4_hand_computed():
    # tokens a = b + c / a = b + d: p1 = 4/5, p2 = (3+1)/(4+1), p3 = (2+1)/(3+1), p4 = (1+1)/(2+1), BP = 1
    assert m.bleu4("a = b + c", "a = b + d") == pytest.approx((0.8 * 0.8 * 0.75 * (2 / 3)) ** 0.25)
    assert m.bleu4("a = b + c", "a = b + d") == pytest.approx(0.752121, abs=1e-6)
    # short candidate: all smoothed precisions 1, BP = exp(1 - 5/3)
    assert m.bleu4("a = b + c", "a = b") == pytest.approx(math.exp(-2 / 3))
    assert m.bleu4("return self.x", "return self.x") == 1.0
    assert m.bleu4("return self.x", "") == 0.0
    assert m.bleu4("return self.x", "pass") == 0.0   # no unigram in common


def test_bleu4_matches_sacrebleu_with_add_one_smoothing():
    """Parity: CodeXGLUE's smoothing is sacrebleu's add-k (k=1) on orders >= 2, on code tokens."""
    sacrebleu = pytest.importorskip("sacrebleu")
    pairs = [("a = b + c", "a = b + d"), ("a = b + c", "a = b"), ("return self.x", "return self.x"),
             ("for i in range(10):\n    total += f(i)\nreturn total",
              "for j in range(10):\n    total = total + f(j)\nreturn total"),
             ("x.append(y)\nx.extend(z)", "x.extend(z)\nx.append(y)\nreturn x"),
             ("return self.x", "pass")]
    for ref, cand in pairs:
        want = sacrebleu.sentence_bleu(" ".join(m.code_tokens(cand)), [" ".join(m.code_tokens(ref))],
                                       smooth_method="add-k", smooth_value=1, tokenize="none").score / 100
        assert m.bleu4(ref, cand) == pytest.approx(want, abs=1e-9), (ref, cand)


def test_edit_sim_and_exact_match():
    assert m.edit_sim("abc", "abd") == pytest.approx(2 / 3)
    assert m.edit_sim("abc", "") == 0.0
    # indentation and blank lines do not count
    assert m.edit_sim("    x = 1\n\n    return x\n", "x = 1\nreturn x") == 1.0
    assert m.edit_sim("kitten", "sitting") == pytest.approx(1 - 3 / 7)     # 3 edits over 7
    assert m.exact_match("return  x  # done", "return x") == 1.0
    assert m.exact_match("return x", "return y") == 0.0


def test_match_metrics_at_a_dereference_point():
    ref = "append(x)\n        self.items.sort()\n"
    cand = "append(y)\n"
    assert m.next_identifier_match(ref, cand) == 1.0
    assert m.next_identifier_match(ref, "extend(x)") == 0.0
    # identifiers: append x self items sort (5); common prefix with append y = 1
    assert m.identifier_sequence_match(ref, cand) == pytest.approx(1 / 5)
    # tokens: append ( x ) self . items . sort ( ) (11); common prefix append ( = 2
    assert m.prefix_match(ref, cand) == pytest.approx(2 / 11)
    assert m.prefix_match(ref, ref) == 1.0
    # distinct identifiers: ref {append,x,self,items,sort}, cand {append,y}: 1 hit
    assert m.identifier_precision_recall(ref, cand) == pytest.approx((1 / 2, 1 / 5))
    assert m.identifier_precision_recall(ref, "") == (0.0, 0.0)


def test_dependency_coverage():
    ref = {"pkg.A.run", "pkg.A.items", "pkg.helper"}
    assert m.dependency_coverage(ref, {"pkg.A.run", "pkg.other"}) == pytest.approx(1 / 3)
    assert m.dependency_coverage(ref, set()) == 0.0
    assert m.dependency_coverage(set(), {"x"}) == 1.0


def test_pass_at_k_edge_cases():
    assert m.pass_at_k(5, 0, 1) == 0.0
    assert m.pass_at_k(5, 5, 3) == 1.0
    assert m.pass_at_k(5, 1, 1) == pytest.approx(0.2)
    assert m.pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)   # 1 - C(3,2)/C(5,2)
    assert m.pass_at_k(5, 4, 2) == 1.0                          # n - c < k: some correct in every pair
    assert m.pass_at_k(1, 1, 1) == 1.0
    with pytest.raises(ValueError):
        m.pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        m.pass_at_k(3, 1, 4)


def test_score_at_k_is_expected_max_over_subsets():
    s = [0.2, 0.8, 0.5]
    assert m.score_at_k(s, 1) == pytest.approx(0.5)        # mean
    assert m.score_at_k(s, 2) == pytest.approx(2.1 / 3)    # (0.8 + 0.5 + 0.8) / 3 subsets
    assert m.score_at_k(s, 3) == pytest.approx(0.8)        # max
    # brute force over all k-subsets for an MGD-sized n = 6
    s6 = [0.1, 0.9, 0.4, 0.4, 0.0, 0.7]
    for k in range(1, 7):
        subsets = list(combinations(s6, k))
        assert m.score_at_k(s6, k) == pytest.approx(sum(max(t) for t in subsets) / len(subsets))


def test_score_at_k_equals_pass_at_k_on_binary_scores():
    for n in range(1, 7):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert m.score_at_k([1.0] * c + [0.0] * (n - c), k) == pytest.approx(m.pass_at_k(n, c, k))


def test_codebleu_readme_example():
    from groundcode.evaluation.codebleu_adapter import codebleu
    prediction = "def add ( a , b ) :\n return a + b"
    reference = "def sum ( first , second ) :\n return second + first"
    out = codebleu(reference, prediction)
    # the values printed in codebleu 0.7.0's README for this example
    assert out["codebleu"] == pytest.approx(0.5537, abs=1e-4)
    assert out["ngram_match_score"] == pytest.approx(0.1041, abs=1e-4)
    assert out["weighted_ngram_match_score"] == pytest.approx(0.1109, abs=1e-4)
    assert out["syntax_match_score"] == 1.0
    assert out["dataflow_match_score"] == 1.0
    assert codebleu(reference, "")["codebleu"] == 0.0


def test_reciprocal_rank_and_recall_at_k_hand_computed():
    ranked = ["a", "b", "c", "d"]
    assert m.reciprocal_rank(ranked, {"c", "d"}) == pytest.approx(1 / 3)     # first relevant at rank 3
    assert m.reciprocal_rank(ranked, {"z"}) == 0.0
    assert m.recall_at_k(ranked, {"c"}, 2) == 0.0 and m.recall_at_k(ranked, {"c"}, 3) == 1.0
    # MRR over two queries: (1/1 + 1/4) / 2
    assert (m.reciprocal_rank(ranked, {"a"}) + m.reciprocal_rank(ranked, {"d"})) / 2 == pytest.approx(0.625)
