"""The one test of Stage III: hand-worked sign-flip p-values, exact enumeration, scipy's
permutation test, the inverted interval (consistent with the decision, covering the true
gap), Holm and BH against statsmodels, the family-wise error rate, identical reruns."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from tiap.errors import TiapError
from tiap.sensitivity.stats import (
    Gap,
    adjust,
    comparison_rng,
    evaluate_gaps,
    randomize,
    sign_vectors,
)


def _exact_p(d: list[float], delta: float = 0.0) -> float:
    """Independent enumeration: share of sign vectors with |Σ s (d - δ)| >= |Σ (d - δ)|."""
    x = [v - delta for v in d]
    obs = abs(sum(x))
    hits = sum(1 for s in product((-1, 1), repeat=len(x))
               if abs(sum(a * b for a, b in zip(s, x, strict=True))) >= obs - 1e-9)
    return hits / 2 ** len(x)


def _p(d: list[float] | np.ndarray, resamples: int = 10_000, seed: int = 0) -> float:
    arr = np.asarray(d, np.float64)
    signs, exact = sign_vectors(arr.size, resamples, comparison_rng(seed, "t"))
    return float(randomize(arr, signs, exact).p[0])


def _one(d: np.ndarray, **kw):  # type: ignore[no-untyped-def]
    return evaluate_gaps([Gap(("f",), np.ones(d.size, bool), d)], dataset="x",
                     **{"seed": 0, **kw})[0]


def test_hand_worked_p_values() -> None:
    # d = [1, 1, 1]: T = 3; only +++ and --- reach |sum| 3 -> p = 2/8
    assert _p([1, 1, 1]) == 0.25
    # d = [1, 2]: sums 3, -1, 1, -3 -> two of four reach 3 -> p = 0.5
    assert _p([1, 2]) == 0.5
    # d = [1, -1, -0.5]: |sum| 0.5; the eight signed sums are ±0.5, ±0.5, ±1.5, ±2.5 -> p = 1
    assert _p([1, -1, -0.5]) == 1.0
    # d = [3, 1, 1, 1]: T = 6; sums reaching 6: ++++ (6), ---- (-6) -> 2/16; +-++ = 4 ... no
    assert _p([3, 1, 1, 1]) == 2 / 16
    # no difference at all: every sign vector ties -> p = 1
    assert _p(np.zeros(4)) == 1.0
    # no query: undefined
    assert np.isnan(_p(np.zeros(0)))


def test_exact_matches_enumeration_and_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (4, 7, 9):
        d = np.round(rng.normal(0.1, 0.3, n), 3)
        got = _p(d)
        assert got == pytest.approx(_exact_p(d.tolist()), abs=1e-12)
        ref = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                     alternative="two-sided", n_resamples=10_000)
        assert got == pytest.approx(ref.pvalue, abs=1e-9)


def test_monte_carlo_within_its_error_of_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    d = np.random.default_rng(8).normal(0.03, 0.3, 400)  # p around 0.05
    ours = _p(d, 20_000, seed=1)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                 alternative="two-sided", n_resamples=20_000,
                                 random_state=np.random.default_rng(2)).pvalue
    se = math.sqrt(2 * ref * (1 - ref) / 20_000)  # both are Monte Carlo estimates
    assert 0.005 < ref < 0.5
    assert abs(ours - ref) < 4 * se
    # Monte Carlo p-values are never 0: (1 + hits) / (1 + B)
    assert _p(np.full(200, 0.5), 1_000) == pytest.approx(1 / 1001)


def test_interval_is_the_inverted_test() -> None:
    # exact n = 8: the interval's ends are where p(δ) crosses the level
    d = np.array([0.3, 0.5, -0.1, 0.4, 0.2, 0.6, 0.1, 0.35])
    r = _one(d, resamples=10_000, alpha=0.1)
    assert r.p == pytest.approx(_exact_p(d.tolist()))
    lo, hi = r.ci_low, r.ci_high
    assert lo < d.mean() < hi
    for delta in np.linspace(lo - 0.2, hi + 0.2, 81):
        inside = lo + 1e-9 < delta < hi - 1e-9
        outside = delta < lo - 1e-9 or delta > hi + 1e-9
        p = _exact_p(d.tolist(), delta)
        if inside:
            assert p > 0.1, delta
        if outside:
            assert p <= 0.1, delta


def test_significant_exactly_when_interval_excludes_zero() -> None:
    rng = np.random.default_rng(4)
    n, cols = 60, 40  # Holm over 40 gaps needs p <= 0.05 / 40: reachable with B = 2000
    d = rng.normal(0, 0.2, (n, cols)) + np.linspace(-0.12, 0.12, cols)
    subset = np.ones(n, bool)
    for correction in ("holm", "bh", "none"):
        res = evaluate_gaps([Gap(("f",), subset, d[:, j]) for j in range(cols)], seed=3,
                        dataset="x", resamples=2_000, correction=correction)
        sig = [r.significant for r in res]
        assert 0 < sum(sig) < cols  # both kinds present
        for r in res:
            assert r.significant == (r.p_adjusted <= 0.05)
            assert r.significant == (r.ci_low > 0 or r.ci_high < 0)
            assert r.ci_low <= r.gap <= r.ci_high
            assert r.alpha_effective == pytest.approx(0.05 * r.p / r.p_adjusted)


def test_interval_covers_true_gap() -> None:
    true_gap = 0.2
    data = np.random.default_rng(11)
    covered, reps = 0, 150
    for r in range(reps):
        res = _one(true_gap + data.normal(0, 0.3, 150), resamples=1_000, seed=r)
        covered += res.ci_low <= true_gap <= res.ci_high
    assert 0.89 <= covered / reps <= 0.99  # nominal 0.95


def test_holm_and_bh_equal_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = np.round(rng.uniform(0, 0.2, 17), 3)  # rounded: ties included
        for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh")):
            ref = multitest.multipletests(p, alpha=0.05, method=theirs)[1]
            assert np.allclose(adjust(p, ours), ref, atol=1e-15, rtol=0)
    assert np.array_equal(adjust(p, "none"), p)
    # hand-worked Holm: p = (0.01, 0.04, 0.03) -> sorted 0.01, 0.03, 0.04 -> 0.03, 0.06, 0.06
    assert adjust([0.01, 0.04, 0.03], "holm").tolist() == pytest.approx([0.03, 0.06, 0.06])
    # hand-worked BH: 3 * 0.01 / 1, 3 * 0.03 / 2, 3 * 0.04 / 3 -> 0.03, 0.045, 0.04 -> min up
    assert adjust([0.01, 0.04, 0.03], "bh").tolist() == pytest.approx([0.03, 0.04, 0.04])
    # NaN is not part of the family
    assert adjust([0.01, float("nan"), 0.02], "holm")[[0, 2]].tolist() == pytest.approx(
        [0.02, 0.02])


def test_family_wise_error_under_noise() -> None:
    """12 systems that differ only by noise: all 66 pairwise gaps are true nulls; under
    Holm a seed with any significant gap is a family-wise error; its rate must stay near
    or below 5% (the two-sided binomial bound for 40 seeds at 5% is 5 errors).

    The size keeps the test able to fail: Holm's smallest adjusted p-value is 66 / (B + 1),
    0.0165 with B = 4,000 resamples, so a gap can be significant (it was 40 systems, 780
    pairs and 20,000 resamples, 15,600 being the least that can reach 0.05: 60 times the
    work). And the family is large enough that without a correction most seeds err (checked
    below on the same p-values; and with correction="none" the test fails: 33 of 40)."""
    rng = np.random.default_rng(20)
    n, k = 100, 12
    errors = unadjusted_errors = 0
    seeds = 40
    subset = np.ones(n, bool)
    for s in range(seeds):
        base = rng.uniform(0, 1, n)
        systems = base + rng.normal(0, 0.1, (k, n))  # same expected value for every system
        gaps = [Gap(("noise",), subset, systems[i] - systems[j])
                for i in range(k) for j in range(i + 1, k)]
        res = evaluate_gaps(gaps, seed=s, dataset="noise", resamples=4_000)
        errors += any(r.significant for r in res)
        unadjusted_errors += any(r.p <= 0.05 for r in res)
    assert unadjusted_errors >= 20  # without correction, noise alone "wins" in most seeds
    assert errors <= 5


def test_large_gap_found_p_008_not() -> None:
    noise = np.random.default_rng(2).normal(0, 0.3, 300)
    noise -= noise.mean()
    big = _one(0.1 + noise, resamples=5_000)
    assert big.significant and big.p < 0.001 and big.ci_low > 0
    # a gap whose p is about 0.08: significant at no level below it, even alone
    d = 0.0305 + noise
    r = _one(d, resamples=20_000)
    assert 0.06 < r.p < 0.10
    assert not r.significant and r.ci_low < 0 < r.ci_high


def test_effect_sizes() -> None:
    d = np.array([0.2, 0.0, 0.4, 0.0])
    r = _one(d)
    # d_z = mean / sd(ddof 1): mean 0.15, sd = sqrt((0.0025+0.0225+0.0625+0.0225)/3)
    assert r.effect == pytest.approx(0.15 / math.sqrt(0.11 / 3))
    assert r.moved == 0.5  # two of four queries move


def test_bounded_gap_covers_every_lineage() -> None:
    rng = np.random.default_rng(6)
    n = 14  # 2^14 = 16,384 sign vectors: exact with B = 20,000
    lo = 0.25 + rng.normal(0, 0.2, n)
    hi = lo.copy()
    hi[:4] += rng.uniform(0.1, 0.6, 4)  # four queries only bounded
    r = evaluate_gaps([Gap(("f",), np.ones(n, bool), lo, hi)], seed=0, dataset="x",
                      resamples=20_000, alpha=0.1)[0]
    assert r.gap is None and r.gap_lower == pytest.approx(lo.mean())
    assert r.gap_upper == pytest.approx(hi.mean()) and r.n_undetermined == 4
    assert r.effect is None and r.moved is None and r.sd is None
    # the gap is positive under every lineage: its p-value is the lower differences' ...
    assert r.p == pytest.approx(_exact_p(lo.tolist()))
    # ... the largest any lineage gives (independent check on random lineages in the box)
    for _ in range(40):
        d = lo + rng.uniform(0, 1, n) * (hi - lo)
        assert _exact_p(d.tolist()) <= r.p + 1e-12
    # the interval is the union of every lineage's: lower end from lo, upper end from hi
    one_lo = _one(lo, resamples=20_000, alpha=0.1)
    one_hi = _one(hi, resamples=20_000, alpha=0.1)
    assert r.ci_low == pytest.approx(one_lo.ci_low) and r.ci_high == pytest.approx(one_hi.ci_high)
    for _ in range(10):
        d = lo + rng.uniform(0, 1, n) * (hi - lo)
        cd = _one(d, resamples=20_000, alpha=0.1)
        assert r.ci_low - 1e-9 <= cd.ci_low and cd.ci_high <= r.ci_high + 1e-9
    assert r.significant == (r.p_adjusted <= 0.1) == (r.ci_low > 0)
    # a gap interval containing 0: some lineage has mean 0, so p = 1, never significant
    r2 = evaluate_gaps([Gap(("f",), np.ones(n, bool), lo - 0.6, lo + 0.6)], seed=0,
                       dataset="x", resamples=20_000)[0]
    assert r2.gap_lower < 0 < r2.gap_upper
    assert r2.p == 1.0 and not r2.significant and r2.ci_low < 0 < r2.ci_high
    # a negative gap: the upper differences decide
    r3 = evaluate_gaps([Gap(("f",), np.ones(n, bool), -hi, -lo)], seed=0, dataset="x",
                       resamples=20_000, alpha=0.1)[0]
    assert r3.p == pytest.approx(r.p) and r3.ci_high == pytest.approx(-r.ci_low)


def test_independent_of_batch_and_order_identical_reruns() -> None:
    rng = np.random.default_rng(0)
    n = 80
    sub = np.ones(n, bool)
    half = sub.copy()
    half[::2] = False
    cols = [rng.normal(0.02 * j, 0.3, n) for j in range(5)]
    gaps = [Gap(("f", str(j % 2)), sub if j < 3 else half, c if j < 3 else c[half])
            for j, c in enumerate(cols)]
    all_at_once = evaluate_gaps(gaps, seed=4, dataset="d", resamples=1_500)
    again = evaluate_gaps(gaps, seed=4, dataset="d", resamples=1_500)
    assert all_at_once == again
    reversed_ = evaluate_gaps(gaps[::-1], seed=4, dataset="d", resamples=1_500)[::-1]
    assert [r.p for r in reversed_] == [r.p for r in all_at_once]
    assert [r.ci_low for r in reversed_] == [r.ci_low for r in all_at_once]
    alone = [evaluate_gaps([g], seed=4, dataset="d", resamples=1_500, correction="none")[0]
             for g in gaps]
    assert [r.p for r in alone] == [r.p for r in all_at_once]  # raw p: same sign vectors
    other_seed = evaluate_gaps(gaps, seed=5, dataset="d", resamples=1_500)
    assert [r.p for r in other_seed] != [r.p for r in all_at_once]


def test_unresolvable_family_is_noted() -> None:
    rng = np.random.default_rng(1)
    sub = np.ones(50, bool)
    gaps = [Gap(("big",), sub, rng.normal(1, 0.1, 50)) for _ in range(30)]
    notes: list[str] = []
    res = evaluate_gaps(gaps, seed=0, dataset="d", resamples=200, notes=notes)
    assert not any(r.significant for r in res)  # 30 / 201 > 0.05: Holm cannot reach it
    assert len(notes) == 1 and "no gap of this family can be significant" in notes[0]
    assert "--resamples to at least 600" in notes[0]
    notes2: list[str] = []
    res = evaluate_gaps(gaps, seed=0, dataset="d", resamples=1_000, notes=notes2)
    assert all(r.significant for r in res) and not notes2


def test_bad_arguments() -> None:
    with pytest.raises(TiapError):
        comparison_rng(-1, "x")
    with pytest.raises(TiapError):
        sign_vectors(3, 0, comparison_rng(0))
    with pytest.raises(TiapError):
        adjust([0.1], "bonferroni")
    with pytest.raises(TiapError):
        _one(np.zeros(3), alpha=1.5)
    with pytest.raises(ValueError):
        randomize(np.array([0.1, float("nan")]), *sign_vectors(2, 10, comparison_rng(0)))
