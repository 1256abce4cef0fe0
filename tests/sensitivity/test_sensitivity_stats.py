"""Bootstrap intervals and sign-flip tests: hand-worked p-values, exact enumeration, scipy,
coverage of the true gap, and identical reruns."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from tiap.errors import TiapError
from tiap.sensitivity.stats import (
    bootstrap_means,
    comparison_rng,
    paired_test,
    percentile_interval,
    sign_flip_pvalue,
)


def _exact_p(d: list[float]) -> float:
    """Independent enumeration: share of sign vectors with |Σ s d| >= |Σ d|."""
    obs = abs(sum(d))
    hits = sum(1 for s in product((-1, 1), repeat=len(d))
               if abs(sum(a * b for a, b in zip(s, d, strict=True))) >= obs - 1e-12)
    return hits / 2 ** len(d)


def test_sign_flip_hand_worked() -> None:
    # d = [1, 1, 1]: T = 3; only +++ and --- reach |sum| 3 -> p = 2/8
    assert sign_flip_pvalue(np.array([1.0, 1, 1]), 10_000, comparison_rng(0, "x"))[0] == 0.25
    # d = [1, 2]: sums 3, -1, 1, -3 -> two of four reach 3 -> p = 0.5
    assert sign_flip_pvalue(np.array([1.0, 2]), 10_000, comparison_rng(0, "x"))[0] == 0.5
    # no difference at all: every sign vector ties -> p = 1
    assert sign_flip_pvalue(np.zeros(4), 10_000, comparison_rng(0, "x"))[0] == 1.0
    # no query: undefined
    assert np.isnan(sign_flip_pvalue(np.zeros(0), 100, comparison_rng(0, "x"))[0])


def test_sign_flip_exact_matches_enumeration_and_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (4, 7, 9):
        d = np.round(rng.normal(0.1, 0.3, n), 3)
        got = sign_flip_pvalue(d, 10_000, comparison_rng(1, "y"))[0]
        assert got == pytest.approx(_exact_p(d.tolist()), abs=1e-12)
        ref = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                     alternative="two-sided", n_resamples=10_000)
        assert got == pytest.approx(ref.pvalue, abs=1e-9)


def test_sign_flip_monte_carlo_close_to_exact() -> None:
    d = np.array([0.3, -0.1, 0.2, 0.25, 0.05, -0.2, 0.4, 0.1, 0.15, -0.05, 0.3, 0.2])
    exact = _exact_p(d.tolist())  # 2^12 = 4096 sign vectors
    mc = sign_flip_pvalue(d, 2_000, comparison_rng(5, "mc"))[0]  # 2000 < 4096: Monte Carlo
    assert abs(mc - exact) < 0.03
    # Monte Carlo p-values are never 0: (1 + hits) / (1 + B)
    big = np.full(200, 0.5)
    assert sign_flip_pvalue(big, 1_000, comparison_rng(0, "b"))[0] == pytest.approx(1 / 1001)


def test_bootstrap_shapes_and_constant_columns() -> None:
    d = np.column_stack([np.full(30, 0.25), np.linspace(-1, 1, 30)])
    means = bootstrap_means(d, 500, comparison_rng(0, "k"))
    assert means.shape == (500, 2)
    assert np.all(means[:, 0] == pytest.approx(0.25))  # a constant column never varies
    lo, hi = percentile_interval(means)
    assert lo[0] == pytest.approx(0.25) and hi[0] == pytest.approx(0.25)
    assert lo[1] < 0 < hi[1]


def test_interval_contains_true_gap_and_covers_about_95_percent() -> None:
    true_gap = 0.2
    data = np.random.default_rng(11)
    covered = 0
    reps = 120
    for r in range(reps):
        d = true_gap + data.normal(0, 0.3, 150)
        t = paired_test(d, seed=r, key=("cover",), resamples=1_000)
        covered += t.ci_low[0] <= true_gap <= t.ci_high[0]
        if r == 0:
            assert t.ci_low[0] <= true_gap <= t.ci_high[0]
    assert 0.88 <= covered / reps <= 0.99


def test_large_gap_significant_tiny_gap_not() -> None:
    noise = np.random.default_rng(2).normal(0, 0.3, 300)
    big = paired_test(0.3 + noise, seed=0, key=("big",), resamples=2_000)
    assert big.ci_low[0] > 0 and big.p[0] < 0.01
    tiny = paired_test(0.001 + noise - noise.mean(), seed=0, key=("tiny",), resamples=2_000)
    assert tiny.ci_low[0] < 0 < tiny.ci_high[0] and tiny.p[0] > 0.5


def test_reruns_identical_and_keys_matter() -> None:
    d = np.random.default_rng(0).normal(0, 1, (80, 3))
    a = paired_test(d, seed=4, key=("a", "b"), resamples=1_500)
    b = paired_test(d, seed=4, key=("a", "b"), resamples=1_500)
    c = paired_test(d, seed=4, key=("a", "c"), resamples=1_500)
    for x, y in ((a.ci_low, b.ci_low), (a.ci_high, b.ci_high), (a.p, b.p)):
        assert x.tobytes() == y.tobytes()
    assert a.ci_low.tobytes() != c.ci_low.tobytes()


def test_columns_share_resamples() -> None:
    # two identical columns get identical intervals: they are resampled with the same queries
    x = np.random.default_rng(1).normal(0, 1, 50)
    t = paired_test(np.column_stack([x, x]), seed=0, key=("same",), resamples=800)
    assert t.ci_low[0] == t.ci_low[1] and t.ci_high[0] == t.ci_high[1]


def test_bad_arguments() -> None:
    with pytest.raises(TiapError):
        comparison_rng(-1, "x")
    with pytest.raises(TiapError):
        bootstrap_means(np.zeros(3), 0, comparison_rng(0))
    with pytest.raises(TiapError):
        percentile_interval(np.zeros((3, 1)), alpha=1.5)
    with pytest.raises(ValueError):
        paired_test([0.1, float("nan")], seed=0, key=())
