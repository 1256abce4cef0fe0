"""top_k (deterministic ties) and reciprocal-rank fusion, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tiap.retrieval.kernels import DEFAULT_RRF_K, rrf, top_k

INF = np.inf


def test_top_k_orders_by_score_then_store_order() -> None:
    # Scores 2, 5, 5, 1, 5: the three 5s keep their store order (1, 2, 4), then the 2.
    assert top_k(np.array([2.0, 5.0, 5.0, 1.0, 5.0]), 4).tolist() == [1, 2, 4, 0]


def test_top_k_leaves_out_unretrieved_items() -> None:
    assert top_k(np.array([-INF, 0.5, -INF, np.nan]), 10).tolist() == [1]
    assert top_k(np.array([-INF, -INF]), 3).tolist() == []


def test_top_k_depth_cut_keeps_tie_order_across_the_selection_path() -> None:
    # Long arrays take the partition shortcut; ties straddling the cut must still be broken
    # by index, exactly as a full stable sort would.
    rng = np.random.default_rng(7)
    for _ in range(50):
        scores = rng.integers(0, 5, size=200).astype(float)
        scores[rng.random(200) < 0.2] = -INF
        finite = [i for i in range(200) if np.isfinite(scores[i])]
        expected = sorted(finite, key=lambda i: (-scores[i], i))[:7]
        assert top_k(scores, 7).tolist() == expected


def test_top_k_rejects_a_bad_depth() -> None:
    with pytest.raises(ValueError):
        top_k(np.array([1.0]), 0)


def test_rrf_by_hand() -> None:
    # Two rankings over 5 items (0..4), k = 60:
    #   A: 2, 0, 4        B: 0, 3
    # item 0: 1/(60+2) + 1/(60+1) = 0.016129 + 0.016393 = 0.032523
    # item 2: 1/61 = 0.016393;  item 3: 1/62 = 0.016129;  item 4: 1/63 = 0.015873
    # item 1: in neither ranking -> -inf (not retrieved)
    a, b = np.array([2, 0, 4]), np.array([0, 3])
    fused = rrf([a, b], 5, k=DEFAULT_RRF_K)
    assert fused[0] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 61)
    assert fused[3] == pytest.approx(1 / 62)
    assert fused[4] == pytest.approx(1 / 63)
    assert fused[1] == -INF
    assert top_k(fused, 5).tolist() == [0, 2, 3, 4]


def test_rrf_ties_fall_back_to_store_order() -> None:
    # A: 1, 0   B: 0, 1  -> both items score 1/61 + 1/62; store order puts 0 first.
    fused = rrf([np.array([1, 0]), np.array([0, 1])], 2)
    assert fused[0] == fused[1]
    assert top_k(fused, 2).tolist() == [0, 1]


def test_rrf_constant_changes_the_margin() -> None:
    # A: 0, 1, 2   B: 2, 1, 0 (item 1 is second in both).
    # k = 0: items 0 and 2 get 1 + 1/3 = 1.333, item 1 gets 1/2 + 1/2 = 1: 0 wins.
    # k = 60: items 0 and 2 get 1/61 + 1/63 = 0.032266, item 1 gets 2/62 = 0.032258: 0 wins
    # by a hair; the order is the same, the margin is not.
    a, b = np.array([0, 1, 2]), np.array([2, 1, 0])
    assert top_k(rrf([a, b], 3, k=0), 3).tolist() == [0, 2, 1]
    f60 = rrf([a, b], 3, k=60)
    assert f60[0] - f60[1] == pytest.approx(1 / 61 + 1 / 63 - 2 / 62)


def test_rrf_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        rrf([np.array([0, 0])], 2)
    with pytest.raises(ValueError):
        rrf([np.array([3])], 2)
    with pytest.raises(ValueError):
        rrf([np.array([0])], 2, k=-1)
