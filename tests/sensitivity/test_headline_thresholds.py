"""What a headline flip and a preferred configuration may claim, on inputs built here.

- A winner flip is a headline only when both gaps are significant after correction and both
  clear the practical threshold: ``|d_z| >= min_dz`` (default 0.2) and ``|gap| >=
  min_effect``. A significant gap with a small ``d_z`` is reported, never headlined.
- Under partial lineage the ``d_z`` checked is the smallest any lineage can have (a bound,
  :func:`tiap.sensitivity.flips.dz_floor`).
- A preferred configuration is named only when it beats every other one significantly;
  otherwise the preference is ``tie (not significant)`` with the tied set.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from sensitivity_fixtures import read_csv, write_rescore_dir

from tiap.cli.main import main
from tiap.sensitivity import analyze, parse_configs
from tiap.sensitivity.flips import DEFAULT_MIN_DZ, dz_floor
from tiap.sensitivity.stats import Gap, GapResult

N = 2000
Q = [f"q{i}" for i in range(N)]


def _small_dz_flip(tmp_path: Path) -> Path:
    """Systems A and B on 2,000 queries, nDCG@10.

    raw: A = 1, B = 0 on the first 1,000 queries, both 0.5 on the rest: d = +1 on 1,000
    queries, 0 on 1,000; gap +0.5, sum of squares about the mean 2000 · 0.25 = 500,
    sd = sqrt(500 / 1999) = 0.50013, d_z = +0.99975.

    source: A = 0, B = 1 on the first 500 queries (d = -1), A = 1, B = 0 on the next 400
    (d = +1), both 0.5 on the last 1,100: gap (400 - 500) / 2000 = -0.05; sum of squares
    about the mean 900 - 2000 · 0.05² = 895, sd = sqrt(895 / 1999) = 0.66912, d_z = -0.05 /
    0.66912 = -0.074725. The gap is significant (z about d_z · sqrt(n) = 3.3), its effect
    small: below Cohen's 0.2.
    """
    a_raw = [1.0] * 1000 + [0.5] * 1000
    b_raw = [0.0] * 1000 + [0.5] * 1000
    a_src = [0.0] * 500 + [1.0] * 400 + [0.5] * 1100
    b_src = [1.0] * 500 + [0.0] * 400 + [0.5] * 1100
    return write_rescore_dir(tmp_path / "r", {
        ("A", "raw", "nDCG@10"): a_raw, ("A", "source", "nDCG@10"): a_src,
        ("B", "raw", "nDCG@10"): b_raw, ("B", "source", "nDCG@10"): b_src,
    }, Q, targets=("raw", "source"))


DZ_RAW = 0.5 / math.sqrt(500 / 1999)
DZ_SRC = -0.05 / math.sqrt(895 / 1999)


def _flip(res):  # type: ignore[no-untyped-def]
    (row,) = res.table("winner_flips")
    return row


def test_significant_gap_below_the_dz_threshold_is_not_a_headline(tmp_path: Path) -> None:
    d = _small_dz_flip(tmp_path)
    res = analyze([d], seed=0, resamples=2000, answers=False, by_category_tests=False)
    r = _flip(res)
    assert r["gap_1"] == pytest.approx(0.5) and r["gap_2"] == pytest.approx(-0.05)
    assert r["effect_1"] == pytest.approx(DZ_RAW) and r["effect_2"] == pytest.approx(DZ_SRC)
    assert abs(DZ_SRC) == pytest.approx(0.074725, abs=1e-6)
    # the premise: a flip, both gaps significant after Holm (a family of 2 gaps)
    assert r["flip"] and r["significant_flip"]
    assert r["p_2_adjusted"] <= 0.05
    # the default threshold |d_z| >= 0.2 is stated in the options, and the source gap's
    # |d_z| 0.0747 is below it: reported, not headlined
    assert res.options["min_dz"] == DEFAULT_MIN_DZ == 0.2
    assert not r["practical"] and not r["headline"]


@pytest.mark.parametrize(("min_dz", "min_effect", "headline"), [
    (0.0, 0.0, True),     # no threshold at all: every significant flip is a headline
    (0.074, 0.0, True),   # |d_z| 0.074725 >= 0.074
    (0.075, 0.0, False),  # ... < 0.075
    (0.0, 0.05, True),    # |gap| 0.05 >= 0.05 (at the threshold counts)
    (0.0, 0.051, False),  # |gap| 0.05 < 0.051
    (0.074, 0.051, False),  # both thresholds apply
])
def test_the_thresholds_decide_the_headline(tmp_path: Path, min_dz: float, min_effect: float,
                                            headline: bool) -> None:
    res = analyze([_small_dz_flip(tmp_path)], seed=0, resamples=2000, answers=False,
                  by_category_tests=False, min_dz=min_dz, min_effect=min_effect)
    r = _flip(res)
    assert r["significant_flip"] and r["practical"] is headline and r["headline"] is headline


def test_the_cli_states_the_threshold(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    d = _small_dz_flip(tmp_path)
    args = ["sensitivity", str(d), "--resamples", "2000", "--no-answers",
            "--no-category-tests"]
    assert main([*args, "--out", str(tmp_path / "s1")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no headline winner flip on the primary measure" in out
    assert "practical threshold: |d_z| ≥ 0.2 on both gaps" in out
    assert main([*args, "--min-dz", "0", "--out", str(tmp_path / "s2")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "winner flips on nDCG@10 (1; 1 significant after Holm, 1 of them headline;" in out
    assert "practical threshold: none (every significant flip is a headline)" in out
    assert json.loads((tmp_path / "s2" / "manifest.json").read_text())["options"][
        "min_dz"] == 0


# -- partial lineage: the smallest d_z any lineage can have ------------------------------------

def _result(n: int, lo: np.ndarray, hi: np.ndarray) -> GapResult:
    return GapResult(n=n, gap=None, gap_lower=float(lo.mean()), gap_upper=float(hi.mean()),
                     p=None, p_adjusted=None, ci_low=None, ci_high=None, significant=False,
                     effect=None, moved=None)


def test_dz_floor_hand_worked() -> None:
    """d = (1, 1, x, 0.5) with x in [0, 0.5]. mean(lo) = 0.625, mean(hi) = 0.75. With
    midpoints m = (1, 1, 0.25, 0.5) and half-widths h = (0, 0, 0.25, 0), the bound of the sum
    of squares is min_c S(c), S(c) = 2 (1 - c)² + (|c - 0.25| + 0.25)² + (c - 0.5)²; on
    [0.5, 1] S'(c) = 8c - 5 = 0 at c = 0.625: S = 2 · 0.140625 + 0.390625 + 0.015625 =
    0.6875. Floor: 0.625 / sqrt(0.6875 / 3) = 1.30558. The lineage x = 0 attains it (its
    mean is 0.625 and its sum of squares 0.6875), so the bound is tight here."""
    lo, hi = np.array([1, 1, 0, 0.5]), np.array([1, 1, 0.5, 0.5])
    got = dz_floor(Gap(("f",), np.ones(4, bool), lo, hi), _result(4, lo, hi))
    assert got == pytest.approx(0.625 / math.sqrt(0.6875 / 3))
    for x in np.linspace(0, 0.5, 51):  # every lineage's d_z is at least the floor
        d = np.array([1, 1, x, 0.5])
        assert d.mean() / d.std(ddof=1) >= got - 1e-12


def test_dz_floor_bounds_every_lineage() -> None:
    """Random boxes (some differences open, most determined): every sampled lineage, the
    box's corners among them, has |d_z| at least the floor; a box whose mean interval holds
    0 has floor 0; determined differences give the exact |d_z|."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        lo = rng.uniform(-1, 1, n)
        hi = lo + np.where(rng.random(n) < 0.4, rng.uniform(0, 0.8, n), 0.0)
        got = dz_floor(Gap(("f",), np.ones(n, bool), lo, hi), _result(n, lo, hi))
        if lo.mean() <= 0 <= hi.mean():
            assert got == 0.0
            continue
        for _ in range(50):
            pick = rng.random(n)
            d = np.where(pick < 0.3, lo, np.where(pick < 0.6, hi, lo + (hi - lo) * pick))
            sd = d.std(ddof=1)
            if sd > 0:
                assert abs(d.mean()) / sd >= got * (1 - 1e-9)
    d = np.array([0.5, -0.25, 1.0, 0.0])
    exact = GapResult(n=4, gap=float(d.mean()), gap_lower=float(d.mean()),
                      gap_upper=float(d.mean()), p=None, p_adjusted=None, ci_low=None,
                      ci_high=None, significant=False, effect=float(d.mean() / d.std(ddof=1)),
                      moved=None)
    assert dz_floor(Gap(("f",), np.ones(4, bool), d), exact) == pytest.approx(
        abs(d.mean() / d.std(ddof=1)))


def _bounded_flip(tmp_path: Path) -> Path:
    """200 queries. raw (determined): A = 1, B = 0 on the first 100, both 0.5 on the rest
    (gap +0.5, d_z = 0.5 / sqrt(50 / 199) = 0.9975). source: A = 0, B = 1 on the first 100
    (d = -1); on the other 100 B = 0.5 and A's value is only bounded, [0, 1] (d in [-0.5,
    +0.5]). The gap is [-0.75, -0.25]. Its floor: |mean| >= 0.25; midpoints -1 (100) and 0
    (100, half-width 0.5); on [-1, 0] S(c) = 100 (c + 1)² + 100 (0.5 - c)², least at
    c = -0.25: S = 100 · 0.5625 · 2 = 112.5; floor 0.25 / sqrt(112.5 / 199) = 0.33250,
    attained by the lineage A = 1 on all 100 open queries."""
    d = write_rescore_dir(tmp_path / "b", {
        ("A", "raw", "nDCG@10"): [1.0] * 100 + [0.5] * 100,
        ("A", "source", "nDCG@10"): [0.0] * 100 + [None] * 100,
        ("B", "raw", "nDCG@10"): [0.0] * 100 + [0.5] * 100,
        ("B", "source", "nDCG@10"): [1.0] * 100 + [0.5] * 100,
    }, Q[:200], targets=("raw", "source"))
    with open(d / "intervals.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(("system", "target", "query_id", "measure", "lower", "upper"))
        for q in Q[100:200]:
            w.writerow(("A", "source", q, "nDCG@10", "0.0", "1.0"))
    return d


FLOOR = 0.25 / math.sqrt(112.5 / 199)


@pytest.mark.parametrize(("min_dz", "headline"), [(0.2, True), (0.332, True), (0.333, False)])
def test_partial_lineage_headline_needs_the_dz_of_every_lineage(
        tmp_path: Path, min_dz: float, headline: bool) -> None:
    res = analyze([_bounded_flip(tmp_path)], seed=0, resamples=2000, answers=False,
                  by_category_tests=False, min_dz=min_dz)
    r = _flip(res)
    assert r["gap_2"] is None
    assert (r["gap_2_lower"], r["gap_2_upper"]) == (pytest.approx(-0.75), pytest.approx(-0.25))
    assert r["effect_2"] is None  # no single d_z: the decision uses the floor
    assert FLOOR == pytest.approx(0.33250, abs=1e-5)
    assert r["flip"] and r["significant_flip"]
    assert r["headline"] is headline


# -- the preferred configuration: significant, or a tie ---------------------------------------

M = 400


def _configs(tmp_path: Path) -> Path:
    """Configurations c1, c2, c3 on 400 queries, nDCG@10.

    raw: c1 = 1 everywhere, c2 = c3 = 1 on the first 200 queries and 0 on the rest: c1 beats
    both by 0.5 (differences 1 on 200 queries), c2 = c3 (gap 0). Preferred: c1, margin 0.5.
    source: c1 = 0.5, c3 = 0 everywhere, c2 = 1 on q0 and q1 and 0.5 elsewhere: c2 leads c1
    by 2 · 0.5 / 400 = 0.0025, which no test can call significant (two differences of 0.5:
    half the sign vectors reach it, p about 1/2); both beat c3 (0.5 on every query, p at the
    floor 1/2001, Holm x9 = 0.0045). Preferred: a tie of c2 and c1, margin 0.0025.
    canonical: c3 = 1, c1 = c2 = 0 everywhere: c3 beats both. Preferred: c3.
    """
    one, half, zero = [1.0] * M, [0.5] * M, [0.0] * M
    return write_rescore_dir(tmp_path / "c", {
        ("c1", "raw", "nDCG@10"): one,
        ("c1", "source", "nDCG@10"): half,
        ("c1", "canonical", "nDCG@10"): zero,
        ("c2", "raw", "nDCG@10"): [1.0] * 200 + [0.0] * 200,
        ("c2", "source", "nDCG@10"): [1.0, 1.0] + [0.5] * (M - 2),
        ("c2", "canonical", "nDCG@10"): zero,
        ("c3", "raw", "nDCG@10"): [1.0] * 200 + [0.0] * 200,
        ("c3", "source", "nDCG@10"): zero,
        ("c3", "canonical", "nDCG@10"): one,
    }, [f"q{i}" for i in range(M)])


def _design(tmp_path: Path, pairs: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return analyze([_configs(tmp_path)], seed=0, resamples=2000, answers=False,
                   by_category_tests=False, configs=parse_configs(["d=c1,c2,c3"]),
                   pairs=pairs)


def test_margin_not_significant_is_a_tie(tmp_path: Path) -> None:
    res = _design(tmp_path)
    pref = {r["target"]: r for r in res.table("design_preferred")}
    raw, src, can = pref["raw"], pref["source"], pref["canonical"]
    assert raw["ranking"] == "c1 > c2 = c3" and raw["margin"] == pytest.approx(0.5)
    assert raw["preferred"] == "c1" and raw["significant"] is True and raw["tied"] == "c1"
    assert raw["margin_p_adjusted"] <= 0.05
    # source: c2's lead of 0.0025 over c1 is not significant: no preference is named
    assert src["ranking"] == "c2 > c1 > c3" and src["margin"] == pytest.approx(0.0025)
    assert src["preferred"] == "tie (not significant): c2, c1"
    assert src["significant"] is False and src["tied"] == "c2, c1"
    assert src["margin_p_adjusted"] > 0.05
    assert can["preferred"] == "c3" and can["significant"] is True
    row = next(r for r in res.table("design_changes") if r["comparison"] == "preferred")
    assert row["preferences"] == ("raw: c1; source: tie (not significant): c2, c1; "
                                  "canonical: c3")


@pytest.mark.parametrize(("pairs", "changes", "significant"), [
    (("raw:source",), True, False),     # {c1} against the tie {c2, c1}: they share c1
    (("raw:canonical",), True, True),   # {c1} against {c3}: c1 and c3 swap, both significant
    (("source:canonical",), True, True),  # the tie {c2, c1} against {c3}: disjoint
])
def test_a_preference_change_is_significant_only_between_disjoint_tied_sets(
        tmp_path: Path, pairs: tuple[str, ...], changes: bool, significant: bool) -> None:
    res = _design(tmp_path, pairs)
    row = next(r for r in res.table("design_changes") if r["comparison"] == "preferred")
    assert row["changes"] is changes and row["significant_change"] is significant


def test_the_report_prints_the_tie(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from tiap.report import build_report
    from tiap.sensitivity import write_sensitivity

    write_sensitivity(_design(tmp_path), tmp_path / "s")
    build_report([tmp_path / "s"], tmp_path / "rep")
    text = next((tmp_path / "rep" / "tables").glob("*_design.md")).read_text(encoding="utf-8")
    text = text.replace("**", "")  # every row is highlighted: the preference changes
    assert "| source | 400 | tie (not significant): c2, c1 | c2 &gt; c1 &gt; c3 | 0.0025 |" \
        in text
    # Holm over the group's 9 gaps, 6 of them at the floor 1/2001: 9/2001 = 0.0045
    assert "| raw | 400 | c1 | c1 &gt; c2 = c3 | 0.5000 | ≤ 0.0045 |" in text
    card = (tmp_path / "rep" / "target_card_appendix.md").read_text(encoding="utf-8")
    assert "source: tie (not significant): c2, c1" in card
    # an older folder (no tested preference): the report says the margin is untested
    pref = read_csv(tmp_path / "s" / "design_preferred.csv")
    keep = ["dataset", "group", "measure", "target", "n_matched", "preferred", "ranking",
            "margin"]
    with open(tmp_path / "s" / "design_preferred.csv", "w", newline="",
              encoding="utf-8") as fh:
        w = csv.DictWriter(fh, keep, extrasaction="ignore")
        w.writeheader()
        w.writerows(pref)
    man = json.loads((tmp_path / "s" / "manifest.json").read_text())
    man["outputs"]["design_preferred.csv"].pop("sha256", None)
    (tmp_path / "s" / "manifest.json").write_text(json.dumps(man))
    build_report([tmp_path / "s"], tmp_path / "old")
    old = next((tmp_path / "old" / "tables").glob("*_design.md")).read_text(encoding="utf-8")
    assert "the margin's significance is not known" in old and "margin p adj" not in old


def test_flips_on_another_measure_say_the_primary_has_none(capsys) -> None:  # type: ignore[no-untyped-def]
    """The flips shown are on the flipped measure nearest the headline; when the primary
    measure has none, the display says so first (docs/transfer.md's case: Success@1 flips,
    nDCG@60 none)."""
    from tiap.cli.common import print_flips
    from tiap.report import FlipSummary

    row = {"dataset": "d", "system_a": "A", "system_b": "B", "target_1": "raw",
           "target_2": "source"}
    cells = {"gap_1": "+0.1", "p_1": "0.01", "gap_2": "-0.1", "p_2": "0.01", "effect": "+1 / -1"}
    s = FlipSummary(Path("winner_flips.csv"), 1, "Success@1", (row,), (cells,), ("yes",), 1, 1,
                    "|d_z| ≥ 0.2 on both gaps", "after Holm", 1000, 0, ("nDCG@60",), 0)
    print_flips(s)
    out = " ".join(capsys.readouterr().out.split())
    assert ("no headline winner flip on the primary measure (nDCG@60: no flip there); below, "
            "the flips on Success@1") in out
    print_flips(FlipSummary(Path("winner_flips.csv"), 1, "nDCG@60", (row,), (cells,), ("yes",),
                            1, 1, "t", "after Holm", 1000, 0, ("nDCG@60",), 1))
    assert "no flip there" not in capsys.readouterr().out
    # no headline among the other measure's flips: the primary is never named as Success@1
    print_flips(FlipSummary(Path("winner_flips.csv"), 1, "Success@1", (row,), (cells,),
                            ("not significant",), 0, 0, "t", "after Holm", 1000, 0,
                            ("nDCG@60",), 0))
    out = " ".join(capsys.readouterr().out.split())
    assert "primary measure (nDCG@60: no flip there)" in out
    assert "primary measure (Success@1)" not in out
