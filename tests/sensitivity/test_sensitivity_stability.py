"""Ranking stability (Kendall's tau-b, tau-AP, pair counts), Wilson intervals and the minimum
detectable effect: hand-worked values, published reference values and closed forms."""

from __future__ import annotations

import math
from itertools import permutations, product
from pathlib import Path

import numpy as np
import pytest
from sensitivity_fixtures import write_rescore_dir

from tiap.scoring.measures import parse_measure
from tiap.scoring.scores import SystemScores
from tiap.sensitivity import change
from tiap.sensitivity.load import Dataset, load_datasets
from tiap.sensitivity.stability import (
    RANKING_COLUMNS,
    kendall_tau_b,
    mde,
    mde_of,
    pair_counts,
    ranking_rows,
    ranking_stats,
    rate_rows_with_wilson,
    tau_ap,
    tie_levels,
    wilson_columns,
    wilson_interval,
)

pytest.importorskip("scipy.stats")

#: z_{0.975} and z_{0.8}, from a normal table (not from the code under test)
Z975 = 1.959963984540054
Z80 = 0.8416212335729143

STATS = ("kendall_tau", "tau_ap", "concordant_pairs", "discordant_pairs", "tied_pairs")


def _dataset(values: dict[tuple[str, str, str], list[float]], *, targets: tuple[str, ...],
             categories: tuple[str, ...] | None = None,
             bounds: dict[tuple[str, str, str], tuple[list[float], list[float]]] | None = None,
             ) -> Dataset:
    """A Dataset built directly: ``values[(system, target, measure)]`` per query (NaN =
    undefined or only bounded); ``bounds`` the partial-lineage ``(lower, upper)``."""
    n = len(next(iter(values.values())))
    measures = tuple(parse_measure(m) for m in dict.fromkeys(k[2] for k in values))
    by_name = {str(m): m for m in measures}
    systems = {}
    for s in dict.fromkeys(k[0] for k in values):
        vals = {(t, by_name[m]): np.asarray(v, dtype=float)
                for (s2, t, m), v in values.items() if s2 == s}
        lows = {(t, by_name[m]): np.asarray(b[0], dtype=float)
                for (s2, t, m), b in (bounds or {}).items() if s2 == s}
        highs = {(t, by_name[m]): np.asarray(b[1], dtype=float)
                 for (s2, t, m), b in (bounds or {}).items() if s2 == s}
        systems[s] = SystemScores(s, Path("."), vals, {}, {}, lows, highs)
    return Dataset(
        name="d", dirs=(), query_ids=tuple(f"q{i + 1}" for i in range(n)), systems=systems,
        targets=targets, target_specs={t: {"name": t} for t in targets}, measures=measures,
        credit="group", categories=categories or ("c",) * n, category_source="test",
        queries_input=None)


def _plain_tau_ap(reference: list[float], compared: list[float]) -> float:
    """Yilmaz et al.'s formula for rankings without ties, written out independently:
    2/(N-1) Σ_{i=2..N} C(i)/(i-1) - 1, positions i of the compared ranking."""
    order = sorted(range(len(compared)), key=lambda k: -compared[k])
    total = 0.0
    for i in range(1, len(order)):
        c = sum(1 for j in order[:i] if reference[j] > reference[order[i]])
        total += c / i
    return 2 * total / (len(order) - 1) - 1


def _tie_broken(values: list[float]) -> list[list[float]]:
    """Every strict version of ``values`` that keeps its order and breaks its ties."""
    classes: dict[float, list[int]] = {}
    for i, v in enumerate(values):
        classes.setdefault(v, []).append(i)
    out = []
    for perms in product(*(permutations(ix) for ix in classes.values())):
        strict = [0.0] * len(values)
        for (v, _), perm in zip(classes.items(), perms, strict=True):
            for rank, i in enumerate(perm):
                strict[i] = v - 1e-3 * rank  # within a class, keep the order of perm
        out.append(strict)
    return out


# ------------------------------------------------------------------------------------------
# the kernels


def test_full_reversal_of_three() -> None:
    # A > B > C against C > B > A: every one of the 3 pairs is discordant -> tau = -1;
    # tau-AP: in C, B, A every item has only wrongly ordered items above it -> C(i) = 0,
    # 2/2 * 0 - 1 = -1
    ref, cmp_ = [3.0, 2.0, 1.0], [1.0, 2.0, 3.0]
    assert pair_counts(ref, cmp_) == (0, 3, 0)
    assert kendall_tau_b(ref, cmp_) == pytest.approx(-1.0)
    assert tau_ap(ref, cmp_) == pytest.approx(-1.0)
    # identical rankings: 3 concordant, tau = tau-AP = 1
    assert ranking_stats(ref, ref) == pytest.approx(
        {"kendall_tau": 1.0, "tau_ap": 1.0, "concordant_pairs": 3, "discordant_pairs": 0,
         "tied_pairs": 0})


def test_one_swap_of_four_top_weighted() -> None:
    ref = [4.0, 3.0, 2.0, 1.0]  # A > B > C > D
    # swap of the last two (A > B > D > C): 5 of 6 pairs concordant, tau = (5 - 1)/6 = 2/3.
    # tau-AP, positions of A, B, D, C: C(2) = 1 (A above B), C(3) = 2 (A, B above D),
    # C(4) = 2 (A, B above C, not D): 2/3 * (1/1 + 2/2 + 2/3) - 1 = 16/9 - 1 = 7/9
    bottom = [4.0, 3.0, 1.0, 2.0]
    assert pair_counts(ref, bottom) == (5, 1, 0)
    assert kendall_tau_b(ref, bottom) == pytest.approx(2 / 3)
    assert tau_ap(ref, bottom) == pytest.approx(7 / 9)
    # swap of the top two (B > A > C > D): the same tau, but tau-AP: C(2) = 0 (B above A is
    # wrong), C(3) = 2, C(4) = 3: 2/3 * (0 + 1 + 1) - 1 = 1/3
    top = [3.0, 4.0, 2.0, 1.0]
    assert kendall_tau_b(ref, top) == pytest.approx(2 / 3)
    assert tau_ap(ref, top) == pytest.approx(1 / 3)


def test_tau_ap_is_asymmetric() -> None:
    x = [4.0, 3.0, 2.0, 1.0]  # A > B > C > D
    y = [4.0, 1.0, 3.0, 2.0]  # A > C > D > B
    # reference x, positions of y (A, C, D, B): C(2) = 1, C(3) = 2 (A, C above D),
    # C(4) = 1 (only A is above B in x): 2/3 * (1 + 1 + 1/3) - 1 = 5/9
    assert tau_ap(x, y) == pytest.approx(5 / 9)
    # reference y, positions of x (A, B, C, D): C(2) = 1, C(3) = 1 (A; y puts C above B),
    # C(4) = 2 (A, C; y puts D above B): 2/3 * (1 + 1/2 + 2/3) - 1 = 4/9
    assert tau_ap(y, x) == pytest.approx(4 / 9)
    # Kendall's tau is symmetric: (B, C) and (B, D) discordant, 4 concordant -> 2/6
    assert kendall_tau_b(x, y) == kendall_tau_b(y, x) == pytest.approx(1 / 3)


def test_tau_ap_published_values() -> None:
    # ircor (Urbano's R package) README: tauAP(x, y) = 0.7491182, tau = 0.7777778
    x = [0.06, 0.2, 0.27, 0.37, 0.57, 0.63, 0.66, 0.9, 0.91, 0.94]
    y = [0.37, 0.06, 0.2, 0.27, 0.57, 0.66, 0.63, 0.91, 0.9, 0.94]
    assert tau_ap(x, y) == pytest.approx(0.7491182, abs=5e-7)
    assert kendall_tau_b(x, y) == pytest.approx(0.7777778, abs=5e-7)
    # pyircor's test data: tauap(x, y) and, ties in y only, Urbano & Marrero's
    # tauap_a(x, y_ties) (x the true ranking), to 4 decimals
    sets = [
        ([0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
         [0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
         [0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1], 0.8519, 0.7454, 0.9111),
        ([0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
         [0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
         [0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6], 0.2504, 0.2692, 0.2889),
        ([0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
         [0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
         [0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2], -0.6971, -0.5558, -0.6889),
    ]
    for xs, ys, yt, ap, ap_a, tau in sets:
        assert tau_ap(xs, ys) == pytest.approx(ap, abs=5e-5)
        assert tau_ap(xs, ys) == pytest.approx(_plain_tau_ap(xs, ys), abs=1e-12)
        assert tau_ap(xs, yt) == pytest.approx(ap_a, abs=5e-5)
        assert kendall_tau_b(xs, ys) == pytest.approx(tau, abs=5e-5)


def test_tau_ap_ties_hand_worked() -> None:
    # reference A > B > C, compared A > {B = C}. Breaking the tie: A, B, C gives 1;
    # A, C, B gives C(2) = 1, C(3) = 1 (A, not C, above B): 2/2 * 1.5 - 1 = 1/2.
    # Expected value: (1 + 1/2) / 2 = 3/4
    assert tau_ap([3.0, 2.0, 1.0], [2.0, 1.0, 1.0]) == pytest.approx(3 / 4)
    # a tie in the reference, {A = B} > C, compared A > B > C: the pair (A, B) is concordant
    # under one of the two breaks -> C(2) = 1/2, C(3) = 2: 2/2 * (1/2 + 1) - 1 = 1/2
    assert tau_ap([2.0, 2.0, 1.0], [3.0, 2.0, 1.0]) == pytest.approx(1 / 2)
    # everything tied in one ranking: half of the pairs agree on average -> 0
    assert tau_ap([1.0, 1.0, 1.0, 1.0], [4.0, 3.0, 2.0, 1.0]) == pytest.approx(0.0)
    assert tau_ap([4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0]) == pytest.approx(0.0)
    assert tau_ap([1.0], [1.0]) is None


def test_tau_ap_ties_equal_average_over_tie_breaks() -> None:
    # the documented definition, checked by brute force: the mean of the no-tie formula over
    # every way of breaking the ties of both rankings
    rng = np.random.default_rng(7)
    for _ in range(12):
        x = rng.integers(0, 3, 6).astype(float).tolist()
        y = rng.integers(0, 3, 6).astype(float).tolist()
        brute = [_plain_tau_ap(xs, ys) for xs in _tie_broken(x) for ys in _tie_broken(y)]
        assert tau_ap(x, y) == pytest.approx(sum(brute) / len(brute), abs=1e-12)


def test_kendall_tau_b_and_counts_with_ties() -> None:
    # A > B > C against A > {B = C}: 2 concordant, 1 tied (in the second), none discordant;
    # tau_b = (2 - 0) / sqrt((3 - 0) * (3 - 1)) = 2 / sqrt(6)
    assert pair_counts([3.0, 2.0, 1.0], [2.0, 1.0, 1.0]) == (2, 0, 1)
    assert kendall_tau_b([3.0, 2.0, 1.0], [2.0, 1.0, 1.0]) == pytest.approx(2 / math.sqrt(6))
    # means 1e-13 apart are tied (within 1e-12), 1e-9 apart are not
    assert pair_counts([0.5, 0.5 + 1e-13, 0.1], [0.3, 0.2, 0.1]) == (2, 0, 1)
    assert pair_counts([0.5, 0.5 + 1e-9, 0.1], [0.3, 0.2, 0.1]) == (2, 1, 0)
    assert tie_levels([0.5, 0.5 + 1e-13, 0.1]).tolist() == [1, 1, 0]
    # a ranking that ties everything: tau_b is 0/0
    assert kendall_tau_b([1.0, 1.0, 1.0], [3.0, 2.0, 1.0]) is None
    assert ranking_stats([1.0], [2.0]) == dict.fromkeys(STATS)



def test_kendall_tau_b_equals_scipy_with_ties() -> None:
    """The pair-counted tau-b equals scipy.stats.kendalltau (variant b) on random rankings
    with many ties, and None exactly where scipy's is undefined."""
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for n in (2, 3, 5, 12, 40):
        for _ in range(25):
            x = rng.integers(0, 4, n).astype(float)
            y = rng.integers(0, 4, n).astype(float)
            got = kendall_tau_b(x, y)
            ref = float(stats.kendalltau(x, y, variant="b").statistic)
            if math.isnan(ref):
                assert got is None
            else:
                assert got == pytest.approx(ref, abs=1e-12)


# ------------------------------------------------------------------------------------------
# ranking_rows


def test_ranking_rows_from_rescore_folder(tmp_path: Path) -> None:
    q = ["q1", "q2", "q3", "q4"]
    raw: dict[str, list[float | None]] = {
        "A": [0.9, 0.9, 0.9, 0.0], "B": [0.5] * 4, "C": [0.1, 0.1, 0.1, 1.0], "D": [0.3] * 4}
    source: dict[str, list[float | None]] = {
        "A": [0.4, 0.4, 0.4, 1.0], "B": [0.5] * 4, "C": [0.9, 0.9, 0.9, None], "D": [None] * 4}
    values: dict[tuple[str, str, str], list[float | None]] = {}
    for s in "ABCD":
        values[(s, "raw", "nDCG@10")] = raw[s]
        values[(s, "source", "nDCG@10")] = source[s]
        values[(s, "canonical", "nDCG@10")] = raw[s]
    (ds,) = load_datasets([("x", write_rescore_dir(tmp_path / "r", values, q))])
    rows = ranking_rows(ds)
    assert all(tuple(r) == RANKING_COLUMNS for r in rows)
    by = {(r["target_1"], r["target_2"]): r for r in rows}
    assert list(by) == [("raw", "source"), ("raw", "canonical"), ("source", "canonical")]
    # raw vs source: D has no source value (left out: 3 systems); C's q4 is undefined under
    # source, so the means are over q1..q3 for everyone: raw A .9 > B .5 > C .1, source
    # C .9 > B .5 > A .4 -> a full reversal. (Over A's own four queries source would give
    # A .55 > B .5: not a full reversal.)
    r = by[("raw", "source")]
    assert (r["n_systems"], r["n_queries"]) == (3, 3)
    assert (r["concordant_pairs"], r["discordant_pairs"], r["tied_pairs"]) == (0, 3, 0)
    assert r["kendall_tau"] == pytest.approx(-1.0)
    assert r["tau_ap"] == pytest.approx(-1.0)
    # raw vs canonical: the same values, all four systems on all four queries
    r = by[("raw", "canonical")]
    assert (r["n_systems"], r["n_queries"], r["concordant_pairs"]) == (4, 4, 6)
    assert (r["kendall_tau"], r["tau_ap"]) == pytest.approx((1.0, 1.0))
    r = by[("source", "canonical")]
    assert (r["n_systems"], r["n_queries"], r["discordant_pairs"]) == (3, 3, 3)
    assert r["dataset"] == "x" and r["measure"] == "nDCG@10"


def test_ranking_rows_swaps_ties_and_mask() -> None:
    raw = {"A": [0.8, 0.8], "B": [0.6, 0.6], "C": [0.4, 0.4], "D": [0.2, 0.2]}
    src_ndcg = {"A": [0.8, 0.8], "B": [0.6, 0.6], "C": [0.2, 0.4], "D": [0.4, 0.2]}
    src_r = {"A": [0.6, 0.6], "B": [0.8, 0.8], "C": [0.4, 0.4], "D": [0.2, 0.2]}
    values = {}
    for s in "ABCD":
        values[(s, "raw", "nDCG@10")] = raw[s]
        values[(s, "source", "nDCG@10")] = src_ndcg[s]
        values[(s, "raw", "R@10")] = raw[s]
        values[(s, "source", "R@10")] = src_r[s]
    ds = _dataset(values, targets=("raw", "source"), categories=("x", "y"))
    rows = {r["measure"]: r for r in ranking_rows(ds)}
    # nDCG@10 on both queries: source means A .8, B .6, C .3, D .3 -> (C, D) tied:
    # 5 concordant, 1 tied; tau_b = 5 / sqrt(6 * 5); tau-AP = the mean over the two breaks
    # of the tie, (1 + 7/9) / 2 = 8/9
    r = rows["nDCG@10"]
    assert (r["concordant_pairs"], r["discordant_pairs"], r["tied_pairs"]) == (5, 0, 1)
    assert r["kendall_tau"] == pytest.approx(5 / math.sqrt(30))
    assert r["tau_ap"] == pytest.approx(8 / 9)
    # R@10: the top two swap under source: tau 2/3, tau-AP 1/3
    r = rows["R@10"]
    assert (r["kendall_tau"], r["tau_ap"]) == pytest.approx((2 / 3, 1 / 3))
    assert (r["n_systems"], r["n_queries"]) == (4, 2)
    # category x (q1): source C .2 < D .4 -> the last two swap: tau 2/3, tau-AP 7/9
    cats = np.asarray(ds.categories, dtype=object)
    rx = {r["measure"]: r for r in ranking_rows(ds, mask=cats == "x", extra={"category": "x"})}
    assert tuple(rx["nDCG@10"]) == (RANKING_COLUMNS[0], "category", *RANKING_COLUMNS[1:])
    assert rx["nDCG@10"]["n_queries"] == 1
    assert (rx["nDCG@10"]["kendall_tau"], rx["nDCG@10"]["tau_ap"]) == pytest.approx(
        (2 / 3, 7 / 9))
    # category y (q2): C .4 > D .2 as under raw -> identical rankings
    ry = {r["measure"]: r for r in ranking_rows(ds, mask=cats == "y")}
    assert (ry["nDCG@10"]["kendall_tau"], ry["nDCG@10"]["tau_ap"]) == pytest.approx((1, 1))


def test_ranking_rows_degenerate_cases() -> None:
    nan = math.nan
    # one system: nothing to rank
    one = _dataset({("A", "raw", "nDCG@10"): [0.1, 0.2],
                    ("A", "source", "nDCG@10"): [0.3, nan]}, targets=("raw", "source"))
    (r,) = ranking_rows(one)
    assert (r["n_systems"], r["n_queries"]) == (1, 1)
    assert {k: r[k] for k in STATS} == dict.fromkeys(STATS)
    # two systems defined on disjoint queries: both have a mean, no query is shared
    disjoint = _dataset(
        {("A", "raw", "nDCG@10"): [0.1, nan], ("A", "source", "nDCG@10"): [0.3, nan],
         ("B", "raw", "nDCG@10"): [nan, 0.2], ("B", "source", "nDCG@10"): [nan, 0.4]},
        targets=("raw", "source"))
    (r,) = ranking_rows(disjoint)
    assert (r["n_systems"], r["n_queries"]) == (2, 0)
    assert {k: r[k] for k in STATS} == dict.fromkeys(STATS)
    # partial lineage: A's source value of q2 is only bounded ([0, 1]); q2 stays in the
    # shared subset (it is in both universes), so A's source mean is [(.2 + 0) / 2,
    # (.2 + 1) / 2] = [.1, .6], which holds B's .4: the order under source is not
    # determined, and so is every statistic (before, q2 was dropped in silence and the
    # ranking on q1 alone was printed as the systems' ranking)
    bounded = _dataset(
        {("A", "raw", "nDCG@10"): [0.9, 0.0], ("A", "source", "nDCG@10"): [0.2, nan],
         ("B", "raw", "nDCG@10"): [0.1, 1.0], ("B", "source", "nDCG@10"): [0.7, 0.1]},
        targets=("raw", "source"),
        bounds={("A", "source", "nDCG@10"): ([0.2, 0.0], [0.2, 1.0])})
    notes: list[str] = []
    (r,) = ranking_rows(bounded, notes=notes)
    assert (r["n_systems"], r["n_queries"]) == (2, 2)
    assert {k: r[k] for k in STATS} == dict.fromkeys(STATS)
    assert notes and "not determined (A: means only bounded by partial lineage)" in notes[0]


# ------------------------------------------------------------------------------------------
# Wilson intervals


def _wilson(k: int, n: int, z: float = Z975) -> tuple[float, float]:
    """Wilson (1927), closed form."""
    p = k / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return center - half, center + half


def test_wilson_interval_closed_form() -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for k, n in [(0, 10), (3, 10), (10, 10), (1, 1), (392, 453), (45, 453), (0, 1),
                 (7, 1_000_000), (999_999, 1_000_000)]:
        for alpha in (0.05, 0.01, 0.1, 0.5):
            lo, hi = wilson_interval(k, n, alpha)
            ref = proportion.proportion_confint(k, n, alpha=alpha, method="wilson")
            assert (lo, hi) == pytest.approx((max(ref[0], 0.0), min(ref[1], 1.0)), abs=1e-12)
        lo, hi = wilson_interval(k, n)
        want = _wilson(k, n)
        assert lo == pytest.approx(max(want[0], 0.0), abs=1e-12)
        assert hi == pytest.approx(min(want[1], 1.0), abs=1e-12)
    # 0 of 10: [0, z²/n / (1 + z²/n)] = [0, 0.27753...]
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.3841458820694124 / 1.3841458820694124))
    # 90% interval: z_{0.95} = 1.6448536269514722
    assert wilson_interval(3, 10, alpha=0.1) == pytest.approx(_wilson(3, 10, 1.6448536269514722))
    assert wilson_interval(0, 0) == (None, None)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)
    with pytest.raises(ValueError):
        wilson_interval(1, 10, alpha=1.5)


def test_rate_rows_with_wilson_on_change_table(tmp_path: Path) -> None:
    pytest.importorskip("statsmodels")
    q = ["q1", "q2", "q3", "q4"]
    values: dict[tuple[str, str, str], list[float | None]] = {
              ("A", "raw", "nDCG@10"): [0.1, 0.2, 0.3, 0.4],
              ("A", "source", "nDCG@10"): [0.1, 0.5, 0.3, 0.9],
              ("B", "raw", "nDCG@10"): [None] * 4,
              ("B", "source", "nDCG@10"): [0.2] * 4}
    (ds,) = load_datasets([write_rescore_dir(tmp_path / "r", values, q,
                                             targets=("raw", "source"))])
    rows = change.change_rows(ds)
    out = rate_rows_with_wilson(rows, "changed", "n_shared", 0.05)
    a, b = out
    # A: 2 of 4 queries changed
    assert (a["changed"], a["n_shared"]) == (2, 4)
    assert (a["changed_fraction_low"], a["changed_fraction_high"]) == pytest.approx(
        _wilson(2, 4))
    # B: no shared query
    assert b["n_shared"] == 0
    assert b["changed_fraction_low"] is None and b["changed_fraction_high"] is None
    assert "changed_fraction_low" not in rows[0]  # the input rows are left alone
    cols = wilson_columns(change.CHANGE_COLUMNS, "changed")
    i = cols.index("changed_fraction")
    assert cols[i + 1:i + 3] == ("changed_fraction_low", "changed_fraction_high")
    assert len(cols) == len(change.CHANGE_COLUMNS) + 2
    assert wilson_columns(("n", "k"), "k", rate_key="share") == ("n", "k", "share_low",
                                                                 "share_high")
    hand = rate_rows_with_wilson([{"k": 1, "n": 5}], "k", "n", 0.1, rate_key="share")
    assert (hand[0]["share_low"], hand[0]["share_high"]) == pytest.approx(
        _wilson(1, 5, 1.6448536269514722))


# ------------------------------------------------------------------------------------------
# minimum detectable effect


def test_mde_formula_and_scaling() -> None:
    # (z_{0.975} + z_{0.8}) * sd / sqrt(n) = 2.80159 * 1 / 10
    assert mde(1.0, 100) == pytest.approx((Z975 + Z80) / 10)
    assert mde(0.3, 453) == pytest.approx((Z975 + Z80) * 0.3 / math.sqrt(453))
    # alpha 0.01, power 0.9: z_{0.995} = 2.5758293035489, z_{0.9} = 1.2815515655446004
    assert mde(2.0, 50, alpha=0.01, power=0.9) == pytest.approx(
        (2.5758293035489 + 1.2815515655446004) * 2 / math.sqrt(50))
    # doubling n divides the MDE by sqrt(2); doubling sd doubles it
    for n in (2, 10, 453):
        base = mde(0.4, n)
        assert base is not None
        assert mde(0.4, 2 * n) == pytest.approx(base / math.sqrt(2))
        assert mde(0.8, n) == pytest.approx(2 * base)
    assert mde(0.0, 10) == 0.0
    assert mde(1.0, 1) is None
    assert mde(math.nan, 10) is None
    assert mde(math.inf, 10) is None
    assert mde(None, 10) is None
    with pytest.raises(ValueError):
        mde(-1.0, 10)


def test_mde_of_differences() -> None:
    # d = 1, 2, 3, 4: sd (ddof 1) = sqrt(5/3), n = 4
    assert mde_of([1.0, 2.0, 3.0, 4.0]) == pytest.approx(
        (Z975 + Z80) * math.sqrt(5 / 3) / 2)
    assert mde_of([0.5]) is None
    assert mde_of([]) is None
    with pytest.raises(ValueError):
        mde_of([0.1, math.nan])


def test_mde_close_to_the_t_test_for_large_n() -> None:
    power = pytest.importorskip("statsmodels.stats.power")
    # the normal approximation understates the paired t-test's MDE, less so as n grows
    prev = None
    for n in (10, 30, 100, 1000):
        exact = power.TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8)
        approx = mde(1.0, n)
        assert approx is not None and approx < exact
        gap = 1 - approx / exact
        assert prev is None or gap < prev
        prev = gap
    assert prev is not None and prev < 0.002  # n = 1000


def test_mde_in_winner_flip_rows() -> None:
    from tiap.sensitivity.flips import winner_flips

    nan = math.nan
    values = {("A", "raw", "nDCG@10"): [0.5, 0.6, 0.7, 0.8],
              ("B", "raw", "nDCG@10"): [0.4, 0.4, 0.4, 0.4],
              ("A", "source", "nDCG@10"): [0.1, 0.1, 0.1, 0.1],
              ("B", "source", "nDCG@10"): [0.2, 0.3, 0.2, 0.3]}
    ds = _dataset(values, targets=("raw", "source"))
    (r,) = winner_flips(ds, seed=0, resamples=200)
    # raw: d = .1, .2, .3, .4, sd = sqrt(0.05/3); source: d = -.1, -.2, -.1, -.2,
    # sd = sqrt(0.01/3); n = 4
    assert r["mde_1"] == pytest.approx((Z975 + Z80) * math.sqrt(0.05 / 3) / 2)
    assert r["mde_2"] == pytest.approx((Z975 + Z80) * math.sqrt(0.01 / 3) / 2)
    # restricted to q1..q3: raw d = .1, .2, .3, sd = 0.1, n = 3
    (rm,) = winner_flips(ds, seed=0, resamples=200, mask=np.array([True, True, True, False]))
    assert rm["mde_1"] == pytest.approx((Z975 + Z80) * 0.1 / math.sqrt(3))
    # partial lineage: B's source value of q4 only bounded in [0.1, 0.5] -> the source
    # differences are open there (no MDE); raw keeps all four queries
    values[("B", "source", "nDCG@10")] = [0.2, 0.3, 0.2, nan]
    lb = _dataset(values, targets=("raw", "source"),
                  bounds={("B", "source", "nDCG@10"): ([0.2, 0.3, 0.2, 0.1],
                                                       [0.2, 0.3, 0.2, 0.5])})
    (rb,) = winner_flips(lb, seed=0, resamples=200)
    assert rb["mde_1"] == pytest.approx(r["mde_1"])
    assert rb["gap_2"] is None and rb["mde_2"] is None
    # one system undefined on q5 under source: the shared subset is q1..q4
    values = {k: [*v[:4], 0.2] for k, v in values.items()}
    values[("B", "source", "nDCG@10")] = [0.2, 0.3, 0.2, 0.3, nan]
    (r5,) = winner_flips(_dataset(values, targets=("raw", "source")), seed=0, resamples=200)
    assert r5["n_shared"] == 4 and r5["mde_1"] == pytest.approx(r["mde_1"])


def _bounded_dir(tmp_path: Path) -> Path:
    """System A under Raw (exact) and Source (q2, q3, q4 only bounded), with the rescoring's
    shared-lineage decision that q3's hit does not flip (flip_pairs.csv)."""
    q = ["q1", "q2", "q3", "q4"]
    values: dict[tuple[str, str, str], list[float | None]] = {
        ("A", "raw", "nDCG@5"): [0.5, 0.0, 0.0, 0.3],
        ("A", "source", "nDCG@5"): [0.5, None, None, None],
        ("A", "raw", "Success@5"): [1.0, 0.0, 0.0, 1.0],
        ("A", "source", "Success@5"): [1.0, None, None, 1.0]}
    d = write_rescore_dir(tmp_path / "r", values, q, targets=("raw", "source"))
    (d / "intervals.csv").write_text(
        "system,target,query_id,measure,lower,upper\n"
        "A,source,q2,nDCG@5,0.0,0.6\nA,source,q3,nDCG@5,0.2,0.4\nA,source,q4,nDCG@5,0.1,0.2\n"
        "A,source,q2,Success@5,0.0,1.0\nA,source,q3,Success@5,0.0,1.0\n")
    (d / "flip_pairs.csv").write_text("system,target_1,target_2,k,query_id,flip\n"
                                      "A,raw,source,5,q3,0\n")
    return d


def test_change_counts_under_partial_lineage_by_hand(tmp_path: Path) -> None:
    """By hand, Raw -> Source on nDCG@5 (Δ bounds per query: q1 [0, 0], q2 [0, 0.6],
    q3 [0.2, 0.4], q4 [-0.2, -0.1]):

    - changed: q1 no, q2 may, q3 and q4 certainly: [2, 3] of 4, the share [0.5, 0.75];
    - mean Δ: [(0 + 0 + 0.2 - 0.2) / 4, (0 + 0.6 + 0.4 - 0.1) / 4] = [0, 0.225];
    - mean |Δ|: [(0 + 0 + 0.2 + 0.1) / 4, (0 + 0.6 + 0.4 + 0.2) / 4] = [0.075, 0.3];
    - |Δ| >= 0.1: q2 may, q3 and q4 do: [2, 3];
    - hit flips at 5: q1 and q4 hit under both, q2 misses under Raw and may hit under
      Source: may flip; q3 likewise by its bounds, but the rescoring found it cannot
      (flip_pairs.csv): [0, 1]. Success@5 changes exactly when the hit flips: [0, 1].
    The Wilson interval of the share: from the lower end of 2/4's to the upper end of 3/4's.
    """
    (ds,) = load_datasets([_bounded_dir(tmp_path)])
    rows = {r["measure"]: r for r in rate_rows_with_wilson(change.change_rows(ds), "changed",
                                                           "n_shared", 0.05)}
    r = rows["nDCG@5"]
    assert (r["n_shared"], r["n_undetermined"]) == (4, 3)
    assert (r["changed"], r["changed_lower"], r["changed_upper"]) == (None, 2, 3)
    assert (r["changed_fraction"], r["changed_fraction_lower"],
            r["changed_fraction_upper"]) == (None, 0.5, 0.75)
    assert r["mean_delta"] is None
    assert (r["mean_delta_lower"], r["mean_delta_upper"]) == pytest.approx((0.0, 0.225))
    assert (r["mean_abs_delta_lower"], r["mean_abs_delta_upper"]) == pytest.approx((0.075, 0.3))
    assert (r["n_abs_delta_ge_0.1_lower"], r["n_abs_delta_ge_0.1_upper"]) == (2, 3)
    assert (r["hit_k"], r["hit_flips"], r["hit_flips_lower"], r["hit_flips_upper"]) == (
        5, None, 0, 1)
    assert r["top1_flips"] is None and r["top1_flips_lower"] is None  # no top-1 measure
    assert r["changed_fraction_low"] == pytest.approx(_wilson(2, 4)[0])
    assert r["changed_fraction_high"] == pytest.approx(_wilson(3, 4)[1])
    s = rows["Success@5"]
    assert (s["changed"], s["changed_lower"], s["changed_upper"]) == (None, 0, 1)
    # the same pair compared the other way round (--pairs source:raw): the same decision
    from tiap.sensitivity.analyze import select_pairs

    back = {x["measure"]: x for x in change.change_rows(select_pairs(ds, ["source:raw"]))}
    assert (back["nDCG@5"]["hit_flips_lower"], back["nDCG@5"]["hit_flips_upper"]) == (0, 1)
    # without the rescoring's shared-lineage decision q3 may flip too
    (tmp_path / "r" / "flip_pairs.csv").unlink()
    (ds,) = load_datasets([tmp_path / "r"])
    r = {x["measure"]: x for x in change.change_rows(ds)}["nDCG@5"]
    assert (r["hit_flips_lower"], r["hit_flips_upper"]) == (0, 2)


def test_change_table_bounds_are_the_values_under_complete_lineage(tmp_path: Path) -> None:
    from tiap.sensitivity import analyze

    res = analyze([_bounded_dir(tmp_path)], resamples=50, answers=False,
                  by_category_tests=False)
    cols = res.tables["change"].columns
    assert cols[-len(change.CHANGE_BOUND_COLUMNS):] == change.CHANGE_BOUND_COLUMNS
    assert res.tables["category_change"].columns[-1] == change.CHANGE_BOUND_COLUMNS[-1]
    q = ["q1", "q2"]
    exact = write_rescore_dir(tmp_path / "e", {("A", "raw", "nDCG@5"): [0.5, 0.1],
                                               ("A", "source", "nDCG@5"): [0.5, 0.2]}, q,
                              targets=("raw", "source"))
    res = analyze([exact], resamples=50, answers=False, by_category_tests=False)
    assert res.tables["change"].columns[-len(change.CHANGE_BOUND_COLUMNS):] == (
        change.CHANGE_BOUND_COLUMNS)
    (r,) = res.table("change")
    assert (r["changed"], r["changed_fraction"], r["hit_flips"]) == (1, 0.5, 0)
    assert (r["changed_lower"], r["changed_upper"], r["hit_flips_lower"],
            r["hit_flips_upper"], r["n_undetermined"]) == (1, 1, 0, 0, 0)
