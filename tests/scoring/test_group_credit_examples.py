"""Group credit (the paper's scorer) on hand-worked examples; the arithmetic is in comments.

Discounts: 1/log2(2) = 1, 1/log2(3) = 0.6309298, 1/log2(4) = 0.5, 1/log2(5) = 0.4306766.
DCG of m ones: DCG_1 = 1, DCG_2 = 1.6309298, DCG_3 = 2.1309298.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tiap.scoring import RankingIndex, encode, score

D3 = 1 / math.log2(4)  # 0.5
D2 = 1 / math.log2(3)  # 0.6309298
D4 = 1 / math.log2(5)  # 0.4306766
DCG1, DCG2, DCG3 = 1.0, 1 + D2, 1 + D2 + D3

ALL = "nDCG@1,nDCG@2,nDCG@3,nDCG@4,nDCG@10,nDCG,R@1,R@2,R@3,R@10,RR,RR@1,RR@10,Success@1,Success@10,P@2,P@3,P@4,P@10"


def _values(rankings, groups, credit="group"):  # type: ignore[no-untyped-def]
    enc = encode(rankings, groups)
    out = score(enc.rankings, enc.targets[0], ALL, credit=credit)
    return {str(m): v for m, v in out.items()}


def test_item_in_two_groups() -> None:
    # ranking a, b, c; groups g1 = {a, x}, g2 = {a, y}, g3 = {c}; G = 3
    # rank 1: a is in g1 and g2, both unmatched -> gain 1, both matched (hits 2)
    # rank 2: b is in no group -> gain 0
    # rank 3: c is in g3 -> gain 1 (hits 3)
    v = _values([["a", "b", "c"]], [[{"a", "x"}, {"a", "y"}, {"c"}]])
    # nDCG@3 = (1 + 0.5) / DCG_min(3,3) = 1.5 / 2.1309298 = 0.7039180
    assert v["nDCG@3"][0] == pytest.approx(1.5 / DCG3, abs=1e-12)
    assert v["nDCG@3"][0] == pytest.approx(0.7039180, abs=1e-7)
    # k = 1 < G: nDCG@1 = 1 / DCG_1 = 1; R@1 = 2 groups of 3
    assert v["nDCG@1"][0] == pytest.approx(1.0)
    assert v["R@1"][0] == pytest.approx(2 / 3)
    # k = 2 < G: nDCG@2 = 1 / DCG_2 = 0.6131472; R@2 still 2/3
    assert v["nDCG@2"][0] == pytest.approx(1 / DCG2, abs=1e-12)
    assert v["R@2"][0] == pytest.approx(2 / 3)
    assert v["R@3"][0] == pytest.approx(1.0)
    # two gain-1 ranks in the top 3: P@3 = 2/3 (the double match counts once)
    assert v["P@3"][0] == pytest.approx(2 / 3)
    assert v["RR"][0] == 1.0 and v["Success@1"][0] == 1.0
    # set credit on the same query: S = {a, x, y, c}, |S| = 4, gains 1, 0, 1
    s = _values([["a", "b", "c"]], [[{"a", "x"}, {"a", "y"}, {"c"}]], credit="set")
    assert s["nDCG@3"][0] == pytest.approx(1.5 / DCG3, abs=1e-12)  # ideal: min(4, 3) = 3 ones
    assert s["R@3"][0] == pytest.approx(2 / 4)
    assert s["R@1"][0] == pytest.approx(1 / 4)


def test_group_with_several_members_retrieved() -> None:
    # ranking p, q, r, s; g1 = {p, q, r}, g2 = {s}; G = 2
    # p: g1 unmatched -> gain 1; q, r: g1 already matched -> gain 0; s: g2 -> gain 1
    v = _values([["p", "q", "r", "s"]], [[{"p", "q", "r"}, {"s"}]])
    # nDCG@4 = (1 + 0.4306766) / DCG_2 = 1.4306766 / 1.6309298 = 0.8772153
    assert v["nDCG@4"][0] == pytest.approx((1 + D4) / DCG2, abs=1e-12)
    assert v["nDCG@4"][0] == pytest.approx(0.8772153, abs=1e-7)
    # top 3 matches only g1: nDCG@3 = 1 / 1.6309298, R@3 = 1/2, P@3 = 1/3
    assert v["nDCG@3"][0] == pytest.approx(1 / DCG2, abs=1e-12)
    assert v["R@3"][0] == pytest.approx(0.5)
    assert v["P@3"][0] == pytest.approx(1 / 3)
    assert v["P@4"][0] == pytest.approx(2 / 4)
    assert v["R@10"][0] == pytest.approx(1.0)
    # set credit: every member is relevant, |S| = 4, gains 1,1,1,1 -> nDCG@4 = 1, P@4 = 1
    s = _values([["p", "q", "r", "s"]], [[{"p", "q", "r"}, {"s"}]], credit="set")
    assert s["nDCG@4"][0] == pytest.approx(1.0)
    assert s["P@4"][0] == pytest.approx(1.0)
    assert s["R@3"][0] == pytest.approx(3 / 4)


def test_zero_target_query_is_nan_for_every_measure() -> None:
    # query 0 has no group, query 1 has only an empty group (dropped: G = 0 too)
    for credit in ("group", "set"):
        v = _values([["a", "b"], ["a"]], [[], [set()]], credit=credit)
        for name, values in v.items():
            assert np.isnan(values).all(), (credit, name)


def test_empty_ranking_with_targets_scores_zero() -> None:
    # query 0: nothing ranked but one group {a} -> every measure is 0, not NaN
    for credit in ("group", "set"):
        v = _values([[], ["a"]], [[{"a"}], [{"a"}]], credit=credit)
        for name, values in v.items():
            assert values[0] == 0.0, (credit, name)
            assert values[1] > 0.0, (credit, name)


def test_ranking_shorter_than_k() -> None:
    # ranking z, b (2 items, padded); groups {b}, {w}; G = 2, k = 10
    # gains 0, 1 -> DCG@10 = 0.6309298; ideal DCG_min(2,10) = 1.6309298 -> 0.3868528
    v = _values([["z", "b"], ["a", "b", "c", "d", "e"]], [[{"b"}, {"w"}], [{"a"}]])
    assert v["nDCG@10"][0] == pytest.approx(D2 / DCG2, abs=1e-12)
    assert v["nDCG@10"][0] == pytest.approx(0.3868528, abs=1e-7)
    assert v["R@10"][0] == pytest.approx(0.5)
    assert v["RR@10"][0] == pytest.approx(0.5)
    assert v["P@10"][0] == pytest.approx(1 / 10)  # P divides by k, like trec_eval's P.k
    # bare nDCG (no cutoff): the same here, since the ideal counts min(G, inf) = 2 ones
    assert v["nDCG"][0] == pytest.approx(D2 / DCG2, abs=1e-12)


def test_k_smaller_than_number_of_groups() -> None:
    # five singleton groups {a}..{e}, ranking a, b, c, d, e: G = 5
    # nDCG@2 = (1 + 0.6309298) / DCG_min(5,2) = 1; R@2 = 2/5
    v = _values([["a", "b", "c", "d", "e"]], [[{"a"}, {"b"}, {"c"}, {"d"}, {"e"}]])
    assert v["nDCG@2"][0] == pytest.approx(1.0)
    assert v["R@2"][0] == pytest.approx(0.4)
    assert v["nDCG@10"][0] == pytest.approx(1.0)
    # ranking that starts with non-members: x, a -> nDCG@2 = 0.6309298 / 1.6309298
    w = _values([["x", "a"]], [[{"a"}, {"b"}, {"c"}, {"d"}, {"e"}]])
    assert w["nDCG@2"][0] == pytest.approx(D2 / DCG2, abs=1e-12)
    assert w["R@2"][0] == pytest.approx(1 / 5)
    assert w["RR@1"][0] == 0.0 and w["RR"][0] == 0.5


def test_later_members_of_a_matched_group_earn_nothing_but_new_groups_do() -> None:
    # ranking a, b, c; g1 = {a, b}, g2 = {b, c}
    # a: matches g1 (gain 1); b: g1 matched, g2 unmatched -> gain 1, matches g2; c: g2 matched -> 0
    v = _values([["a", "b", "c"]], [[{"a", "b"}, {"b", "c"}]])
    assert v["nDCG@3"][0] == pytest.approx((1 + D2) / DCG2, abs=1e-12)  # = 1.0
    assert v["P@3"][0] == pytest.approx(2 / 3)
    # ranking b, a, c: b matches g1 and g2 at once (gain 1); a, c earn 0
    w = _values([["b", "a", "c"]], [[{"a", "b"}, {"b", "c"}]])
    assert w["nDCG@3"][0] == pytest.approx(1 / DCG2, abs=1e-12)  # 0.6131472
    assert w["R@1"][0] == pytest.approx(1.0)


def test_rank_order_not_code_order_is_authoritative() -> None:
    # the same items in two orders score differently; codes play no part
    a = _values([["a", "b", "c"]], [[{"c"}]])
    b = _values([["c", "b", "a"]], [[{"c"}]])
    assert a["RR"][0] == pytest.approx(1 / 3) and b["RR"][0] == 1.0


def test_index_reuse_for_several_targets() -> None:
    # one ranking matrix, two targets: the index is built once and gives the same values
    enc = encode([["a", "b", "c"], ["d"]], [[{"b"}], [{"d"}]], [[{"a", "c"}], []])
    index = RankingIndex(enc.rankings)
    first = index.score(enc.targets[0], "RR,R@1")
    second = index.score(enc.targets[1], "RR,R@1")
    assert first[next(iter(first))].tolist() == [0.5, 1.0]
    rr = second[next(iter(second))]
    assert rr[0] == 1.0 and np.isnan(rr[1])
