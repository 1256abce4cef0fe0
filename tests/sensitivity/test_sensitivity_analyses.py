"""Per-query change, categories, design recommendations, cardinality, depth, aggregation and
agreement filtering on inline data with hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest
from sensitivity_fixtures import write_rescore_dir

from tiap.errors import TiapError
from tiap.sensitivity import analyze, parse_configs
from tiap.sensitivity.cardinality import bin_stats, correlation
from tiap.sensitivity.change import change_stats
from tiap.sensitivity.design import ranking_text


def test_change_stats_hand_worked() -> None:
    v1 = np.array([0.0, 0.5, 1.0, np.nan, 0.2])
    v2 = np.array([0.5, 0.5, 0.8, 1.0, 0.25])
    hit1 = np.array([0.0, 1, 1, np.nan, 1])
    hit2 = np.array([1.0, 1, 1, 1, 1])
    s = change_stats(v1, v2, hit1, hit2, hit1, hit1)
    # shared: q1, q2, q3, q5; deltas +0.5, 0, -0.2, +0.05
    assert s["n_shared"] == 4 and s["changed"] == 3
    assert s["changed_fraction"] == 0.75
    assert s["mean_delta"] == pytest.approx((0.5 - 0.2 + 0.05) / 4)
    assert s["mean_abs_delta"] == pytest.approx((0.5 + 0.2 + 0.05) / 4)
    assert s["n_abs_delta_ge_0.1"] == 2 and s["share_abs_delta_ge_0.1"] == 0.5
    assert s["hit_flips"] == 1 and s["top1_flips"] == 0


def _three_configs(tmp_path):  # type: ignore[no-untyped-def]
    # two queries; configs f1, f5, f8 of one system. Means per target:
    #   raw:       f1 0.5   f5 0.3   f8 0.2   -> f1 preferred
    #   source:    f1 0.5   f5 0.7   f8 0.6   -> f5 preferred
    #   canonical: f1 0.8   f5 0.6   f8 0.6   -> f1 preferred (f5 = f8 tie)
    v = {
        ("f1", "raw", "nDCG@10"): [0.6, 0.4], ("f1", "source", "nDCG@10"): [0.5, 0.5],
        ("f1", "canonical", "nDCG@10"): [0.8, 0.8],
        ("f5", "raw", "nDCG@10"): [0.3, 0.3], ("f5", "source", "nDCG@10"): [0.7, 0.7],
        ("f5", "canonical", "nDCG@10"): [0.6, 0.6],
        ("f8", "raw", "nDCG@10"): [0.2, 0.2], ("f8", "source", "nDCG@10"): [0.6, 0.6],
        ("f8", "canonical", "nDCG@10"): [0.6, 0.6],
    }
    sizes = {(s, t): n for s in ("f1", "f5", "f8")
             for t, n in (("raw", [1, 1]), ("source", [2, 3]), ("canonical", [1, 2]))}
    return write_rescore_dir(tmp_path / "d", v, ["q1", "q2"], sizes=sizes,
                             categories={"q1": "temporal", "q2": "single-hop"})


def test_design_recommendations(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = analyze([_three_configs(tmp_path)], seed=0, resamples=300, answers=False,
                  configs=parse_configs(["density=f1,f5,f8"]))
    pref = {r["target"]: r for r in res.table("design_preferred")}
    assert pref["raw"]["ranking"] == "f1 > f5 > f8"
    assert pref["source"]["ranking"] == "f5 > f8 > f1"
    assert pref["canonical"]["ranking"] == "f1 > f5 = f8"
    assert pref["raw"]["margin"] == pytest.approx(0.2)
    # two queries: the exact test has 4 sign vectors, so p >= 1/2 and no gap is
    # significant: every target's top configuration ties with the others (by mean)
    assert pref["raw"]["preferred"] == "tie (not significant): f1, f5, f8"
    assert pref["source"]["preferred"] == "tie (not significant): f5, f8, f1"
    assert pref["canonical"]["tied"] == "f1, f5, f8"
    assert all(r["significant"] is False and r["margin_p_adjusted"] > 0.05
               for r in pref.values())
    changes = {r["comparison"]: r for r in res.table("design_changes")}
    # the means' order changes, but what can be claimed (a tie of all three) does not
    assert changes["preferred"]["changes"] is False
    assert changes["preferred"]["significant_change"] is False
    assert changes["preferred"]["preferences"] == (
        "raw: tie (not significant): f1, f5, f8; source: tie (not significant): f5, f8, f1; "
        "canonical: tie (not significant): f1, f5, f8")
    assert changes["f1 vs f5"]["changes"] is True
    # f5 vs f8: raw f5, source f5, canonical tie -> changes (a tie is a different answer)
    assert changes["f5 vs f8"]["preferences"] == "raw: f5; source: f5; canonical: tie"
    pairs = {(r["config_a"], r["config_b"], r["target"]): r for r in res.table("design_pairwise")}
    assert pairs[("f1", "f5", "raw")]["gap"] == pytest.approx(0.2)
    assert pairs[("f1", "f5", "source")]["gap"] == pytest.approx(-0.2)
    assert pairs[("f1", "f5", "source")]["preferred"] == "f5"
    means = [r for r in res.table("design_means") if r["target"] == "canonical"]
    assert [r["rank"] for r in means] == [1, 2, 2]


def test_configs_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TiapError):
        parse_configs(["density=f1"])
    with pytest.raises(TiapError):
        parse_configs(["f1,f5"])
    with pytest.raises(TiapError, match="no rescore folder has"):
        analyze([_three_configs(tmp_path)], resamples=100, answers=False,
                configs={"d": ("f1", "nope")})


def test_ranking_text() -> None:
    assert ranking_text({"a": 0.1, "b": 0.3, "c": 0.3}) == "b = c > a"


def test_by_category(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = analyze([_three_configs(tmp_path)], seed=0, resamples=200, answers=False)
    rows = [r for r in res.table("category_change") if r["system"] == "f1"
            and r["target_1"] == "raw" and r["target_2"] == "source"]
    by = {r["category"]: r for r in rows}
    # q1 (temporal): 0.6 -> 0.5; q2 (single-hop): 0.4 -> 0.5
    assert by["temporal"]["n_shared"] == 1 and by["temporal"]["mean_delta"] == pytest.approx(-0.1)
    assert by["single-hop"]["mean_delta"] == pytest.approx(0.1)
    flips = res.table("category_flips")
    assert {r["category"] for r in flips} == {"temporal", "single-hop"}


def test_cardinality_kernels() -> None:
    stats = pytest.importorskip("scipy.stats")
    x = np.array([0, 1, 1, 2, 3, 4, 5, 7], dtype=float)
    y = 0.1 * x
    c = correlation(x, y)
    assert c["pearson_r"] == pytest.approx(1.0) and c["r_squared"] == pytest.approx(1.0)
    bins = {b["bin"]: b for b in bin_stats(x, np.array([0, .1, .3, .2, .3, .4, .5, .7]))}
    assert bins["<=0"]["n"] == 1 and bins["1"]["n"] == 2 and bins["5+"]["n"] == 2
    assert bins["1"]["mean_shift"] == pytest.approx(0.2)
    ref = stats.ttest_1samp([0.1, 0.3], 0.0)
    assert bins["1"]["t"] == pytest.approx(ref.statistic)
    assert bins["1"]["p_value"] == pytest.approx(ref.pvalue)
    assert bins["2"]["t"] is None  # one value: no test
    assert correlation(np.ones(5), np.arange(5.0))["pearson_r"] is None
    # the closed forms equal scipy.stats on random data, weak and strong effects, small n
    rng = np.random.default_rng(3)
    for n in (3, 4, 9, 50, 400):
        for slope in (0.0, 0.05, 1.0):
            xx = rng.integers(0, 7, n).astype(float) + rng.normal(0, 1e-3, n)
            yy = slope * xx + rng.normal(0, 1, n)
            c = correlation(xx, yy)
            ref = stats.pearsonr(xx, yy)
            assert c["pearson_r"] == pytest.approx(ref.statistic, abs=1e-12)
            assert c["p_value"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
            row = bin_stats(np.full(n, 2.0), yy + slope)[2]
            ref_t = stats.ttest_1samp(yy + slope, 0.0)
            assert row["t"] == pytest.approx(ref_t.statistic, rel=1e-12)
            assert row["p_value"] == pytest.approx(ref_t.pvalue, rel=1e-9, abs=1e-300)


def test_cardinality_and_depth_tables(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = analyze([_three_configs(tmp_path)], seed=0, resamples=100, answers=False)
    card = {(r["system"], r["target_2"]): r for r in res.table("cardinality")}
    # source - raw sizes: q1 2 - 1 = 1, q2 3 - 1 = 2; f1 shifts: -0.1, +0.1
    assert card[("f1", "source")]["mean_size_diff"] == pytest.approx(1.5)
    assert card[("f1", "source")]["n"] == 2
    pooled = [r for r in res.table("cardinality_bins") if r["system"] == "all"
              and r["target_2"] == "source" and r["bin"] == "1"][0]
    # bin 1: q1 of f1, f5, f8: shifts -0.1, +0.4, +0.4
    assert pooled["n"] == 3 and pooled["mean_shift"] == pytest.approx(0.7 / 3)
    depth = [r for r in res.table("depth") if r["system"] == "f5" and r["target_2"] == "source"
             and r["target_1"] == "raw"][0]
    assert depth["k"] == 10 and depth["shift"] == pytest.approx(0.4)
    assert depth["relative_shift"] == pytest.approx(0.4 / 0.3)


def test_depth_relative_shift_by_k(tmp_path) -> None:  # type: ignore[no-untyped-def]
    v = {("A", "raw", "nDCG@20"): [0.2, 0.2], ("A", "source", "nDCG@20"): [0.5, 0.5],
         ("A", "raw", "nDCG@60"): [0.3, 0.3], ("A", "source", "nDCG@60"): [0.6, 0.6]}
    d = write_rescore_dir(tmp_path / "k", v, ["q1", "q2"], targets=("raw", "source"))
    rows = {r["k"]: r for r in analyze([d], resamples=100, answers=False).table("depth")}
    assert rows[20]["relative_shift"] == pytest.approx(1.5)  # (0.5 - 0.2) / 0.2
    assert rows[60]["relative_shift"] == pytest.approx(1.0)  # (0.6 - 0.3) / 0.3


def test_aggregation_novel_ranking_and_agreement(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # one query, three systems:  raw: A 1.0 > B 0.6 > C 0.0;  source: C 1.0 > B 0.6 > A 0.0
    v = {("A", "raw", "nDCG@10"): [1.0], ("A", "source", "nDCG@10"): [0.0],
         ("B", "raw", "nDCG@10"): [0.6], ("B", "source", "nDCG@10"): [0.6],
         ("C", "raw", "nDCG@10"): [0.0], ("C", "source", "nDCG@10"): [1.0]}
    d = write_rescore_dir(tmp_path / "a", v, ["q1"], targets=("raw", "source"))
    res = analyze([d], resamples=100, answers=False)
    agg = {(r["subset"], r["scheme"]): r for r in res.table("aggregation")}
    assert agg[("common", "raw")]["ranking"] == "A > B > C"
    assert agg[("common", "source")]["ranking"] == "C > B > A"
    # mean: A 0.5, B 0.6, C 0.5; min: A 0, B 0.6, C 0; max: A 1, B 0.6, C 1
    assert agg[("common", "mean")]["ranking"] == "B > A = C" and agg[("common", "mean")]["novel"]
    assert agg[("common", "min")]["ranking"] == "B > A = C"
    assert agg[("common", "max")]["ranking"] == "A = C > B" and agg[("common", "max")]["novel"]
    agree = {r["system"]: r for r in res.table("agreement")}
    # hits (value > 0): A raw yes / source no -> disagree; B agrees; C disagrees
    assert agree["A"]["n_agree"] == 0 and agree["B"]["n_agree"] == 1
    assert agree["A"]["mean_spread_common"] == pytest.approx(1.0)
    assert agree["B"]["n_agree_all_systems"] == 0


def test_pooling_and_dataset_names(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = write_rescore_dir(tmp_path / "a", {("A", "raw", "nDCG@10"): [0.1, 0.2],
                                           ("A", "source", "nDCG@10"): [0.3, 0.4]},
                          ["q1", "q2"], targets=("raw", "source"))
    b = write_rescore_dir(tmp_path / "b", {("B", "raw", "nDCG@10"): [0.2, 0.1],
                                           ("B", "source", "nDCG@10"): [0.1, 0.1]},
                          ["q2", "q1"], targets=("raw", "source"))
    res = analyze([f"locomo={a}", b], resamples=100, answers=False)
    assert [d.name for d in res.datasets] == ["locomo+b"]  # same queries file: pooled
    r = res.table("winner_flips")[0]
    # aligned by query id: A - B raw = (0.1 - 0.1) + (0.2 - 0.2) = 0; source (0.2 + 0.3) / 2
    assert r["gap_1"] == pytest.approx(0.0) and r["winner_1"] == "tie"
    assert r["gap_2"] == pytest.approx(0.25) and r["flip"] is False
    c = write_rescore_dir(tmp_path / "c", {("A", "raw", "nDCG@10"): [0.1]}, ["q1"],
                          targets=("raw",), queries_sha="z" * 64)
    res = analyze([a, c], resamples=100, answers=False)
    assert len(res.datasets) == 2  # different queries files: compared separately


def test_bad_folder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TiapError, match="not an output folder"):
        analyze([tmp_path], answers=False)
