"""Winner flips: hand-worked gaps on inline per-query data, flips, significance after
family-wise correction, practical size, the CSV format, identical reruns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sensitivity_fixtures import read_csv, write_rescore_dir

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.sensitivity import analyze, is_flip, is_flip_interval
from tiap.sensitivity.flips import gap_text, winner_flips
from tiap.sensitivity.load import load_datasets

REQUIRED = ("measure,system_a,system_b,target_1,target_2,n_shared,gap_1,gap_2,ci_1_low,"
            "ci_1_high,ci_2_low,ci_2_high,p_1,p_2,p_1_adjusted,p_2_adjusted,effect_1,effect_2,"
            "moved_1,moved_2,flip,significant_flip,practical,headline").split(",")

QIDS = ["q1", "q2", "q3", "q4"]
# nDCG@10 per query (None: zero-target, undefined)
#            q1   q2   q3   q4
A_RAW = [1.0, 0.0, 0.5, 0.0]
B_RAW = [0.0, 1.0, 1.0, 0.5]
A_SRC = [1.0, 1.0, 1.0, None]
B_SRC = [0.5, 1.0, 1.0, 0.5]


def _dir(tmp_path):  # type: ignore[no-untyped-def]
    return write_rescore_dir(tmp_path / "r", {
        ("A", "raw", "nDCG@10"): A_RAW, ("A", "source", "nDCG@10"): A_SRC,
        ("B", "raw", "nDCG@10"): B_RAW, ("B", "source", "nDCG@10"): B_SRC,
    }, QIDS, targets=("raw", "source"))


def test_hand_worked_gaps_and_flip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ds = load_datasets([_dir(tmp_path)])[0]
    rows = winner_flips(ds, seed=0, resamples=500)
    assert len(rows) == 1
    r = rows[0]
    # shared subset: q4 is undefined for A under source -> {q1, q2, q3}
    assert r["n_shared"] == 3
    # raw: A - B = (1 - 0) + (0 - 1) + (0.5 - 1) = -0.5 over 3 -> -1/6: B wins
    assert r["gap_1"] == pytest.approx(-1 / 6)
    # source: (1 - 0.5) + 0 + 0 = 0.5 over 3 -> +1/6: A wins
    assert r["gap_2"] == pytest.approx(1 / 6)
    assert (r["winner_1"], r["winner_2"]) == ("B", "A")
    assert r["flip"] is True
    # n = 3: 8 sign vectors, two of which (all equal) reach every shift, so p >= 2/8 and
    # no shift can be rejected at 5%: the intervals are unbounded (empty ends)
    assert r["ci_1_low"] is None and r["ci_1_high"] is None
    assert r["ci_2_low"] is None and r["ci_2_high"] is None
    # exact sign-flip p (2^3 <= 500): raw d = [1, -1, -0.5], |sum| = 0.5; sums >= 0.5 in
    # absolute value: +++ (-0.5), ++- (0.5), -+- (-1.5)... enumerate by hand: signs of
    # (1, -1, -0.5): sums 1-1-0.5=-0.5, 1-1+0.5=0.5, 1+1-0.5=1.5, 1+1+0.5=2.5, -1-1-0.5=-2.5,
    # -1-1+0.5=-1.5, -1+1-0.5=-0.5, -1+1+0.5=0.5 -> all 8 reach 0.5 -> p = 1
    assert r["p_1"] == 1.0
    # source d = [0.5, 0, 0]: |sum| 0.5 is reached by every signed sum (±0.5) -> p = 1
    assert r["p_2"] == 1.0
    # a family of two gaps under Holm: 2 * 1 capped at 1
    assert r["p_1_adjusted"] == 1.0 and r["p_2_adjusted"] == 1.0
    # effect sizes: raw d = [1, -1, -0.5], mean -1/6, sd = sqrt(((7/6)^2 + (5/6)^2 +
    # (1/3)^2) / 2) = sqrt(13/12); two of three source differences are 0
    assert r["effect_1"] == pytest.approx((-1 / 6) / (13 / 12) ** 0.5)
    assert r["moved_1"] == 1.0 and r["moved_2"] == pytest.approx(1 / 3)
    assert r["significant_flip"] is False and r["headline"] is False


def test_flip_rules() -> None:
    assert is_flip(-0.1, 0.2) and is_flip(0.3, -0.01)
    assert not is_flip(0.1, 0.2) and not is_flip(0.0, 0.2) and not is_flip(None, 0.1)
    assert not is_flip(1e-15, -0.2)  # within 1e-12 of 0: a tie
    # gap intervals (partial lineage): a flip only when both exclude 0 on opposite sides
    assert is_flip_interval((0.1, 0.3), (-0.2, -0.05))
    assert is_flip_interval((-0.3, -0.1), (0.01, 0.2))
    assert not is_flip_interval((-0.1, 0.3), (-0.2, -0.05))  # first interval has 0
    assert not is_flip_interval((0.1, 0.3), (0.05, 0.2))  # same side
    assert is_flip_interval((0.2, 0.2), (-0.1, -0.1))  # points


def test_gap_text() -> None:
    assert gap_text({"gap_1": 0.01234}, 1) == "+0.0123"
    # a gap too small for 4 decimals gets more (never -0.0000, never scientific notation)
    assert gap_text({"gap_1": "-0.0000312"}, 1) == "-0.00003"
    assert gap_text({"gap_1": -3e-13}, 1) == "+0.0000"  # float noise is 0, not -3.0e-13
    assert gap_text({"gap_2": 0.0}, 2) == "+0.0000"
    assert gap_text({"gap_1": "", "gap_1_lower": "-0.25", "gap_1_upper": "0.5"}, 1) == \
        "[-0.2500, +0.5000]"
    assert gap_text({"gap_1": None}, 1) == "-"


def _noisy(tmp_path, gap: float):  # type: ignore[no-untyped-def]
    """60 queries; A - B = +gap under raw and -gap under source, plus shared noise."""
    rng = np.random.default_rng(5)
    n = 60
    base = rng.uniform(0.3, 0.7, n)
    noise = rng.normal(0, 0.05, n)
    noise -= noise.mean()  # so that the mean gaps are exactly +gap and -gap
    q = [f"q{i}" for i in range(n)]
    vals = {
        ("A", "raw", "nDCG@10"): (base + gap + noise).tolist(),
        ("B", "raw", "nDCG@10"): base.tolist(),
        ("A", "source", "nDCG@10"): (base - gap + noise).tolist(),
        ("B", "source", "nDCG@10"): base.tolist(),
    }
    return write_rescore_dir(tmp_path / f"g{gap}", vals, q, targets=("raw", "source"))


def test_large_flip_is_significant_tiny_is_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    big = analyze([_noisy(tmp_path, 0.2)], seed=1, resamples=2_000, answers=False)
    r = big.table("winner_flips")[0]
    assert r["gap_1"] == pytest.approx(0.2) and r["gap_2"] == pytest.approx(-0.2)
    assert r["flip"] and r["significant_flip"]
    assert r["ci_1_low"] > 0 > r["ci_2_high"]
    assert r["p_1"] < 0.01 and r["p_2"] < 0.01
    assert r["p_1_adjusted"] == pytest.approx(2 * max(r["p_1"], r["p_2"]))  # Holm, m = 2
    assert r["practical"] and r["headline"]  # |d_z| > 1 clears the default 0.2
    assert r["moved_1"] == 1.0 and r["effect_1"] > 1
    tiny = analyze([_noisy(tmp_path, 0.004)], seed=1, resamples=2_000, answers=False)
    r = tiny.table("winner_flips")[0]
    assert r["gap_1"] == pytest.approx(0.004) and r["gap_2"] == pytest.approx(-0.004)
    assert r["flip"]  # a sign change ...
    assert r["ci_1_low"] < 0 < r["ci_1_high"] and r["ci_2_low"] < 0 < r["ci_2_high"]
    assert not r["significant_flip"]  # ... that the test does not support
    assert r["p_1"] > 0.05 and r["p_2"] > 0.05
    assert not r["headline"]


def test_min_effect_reports_but_never_headlines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d = _noisy(tmp_path, 0.2)
    small = analyze([d], seed=1, resamples=2_000, answers=False, min_effect=0.25)
    r = small.table("winner_flips")[0]
    assert r["flip"] and r["significant_flip"]  # reported, significant ...
    assert not r["practical"] and not r["headline"]  # ... but |gap| 0.2 < 0.25
    assert small.options["min_effect"] == 0.25 and small.options["correction"] == "holm"
    at = analyze([d], seed=1, resamples=2_000, answers=False, min_effect=0.2)
    assert at.table("winner_flips")[0]["headline"]  # |gap| 0.2 >= 0.2
    with pytest.raises(TiapError, match="min-effect"):
        analyze([d], seed=1, resamples=200, answers=False, min_effect=-0.1)
    with pytest.raises(TiapError, match="correction"):
        analyze([d], seed=1, resamples=200, answers=False, correction="bonferroni")


def _many(tmp_path, k: int, gap: float):  # type: ignore[no-untyped-def]
    """k systems over 80 queries: S0 = base + gap under raw and base - gap under source, the
    others base plus independent noise (true nulls among themselves)."""
    rng = np.random.default_rng(13)
    n = 80
    base = rng.uniform(0.3, 0.7, n)
    q = [f"q{i}" for i in range(n)]
    vals: dict[tuple[str, str, str], list[float]] = {}
    for s in range(k):
        for t, sign in (("raw", 1), ("source", -1)):
            noise = rng.normal(0, 0.08, n)
            shift = sign * gap if s == 0 else 0.0
            vals[(f"S{s}", t, "nDCG@10")] = (base + shift + noise).tolist()
    return write_rescore_dir(tmp_path / f"k{k}", vals, q, targets=("raw", "source"))


def test_family_correction_in_the_flip_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d = _many(tmp_path, 12, 0.15)
    holm = analyze([d], seed=2, resamples=5_000, answers=False).table("winner_flips")
    none = analyze([d], seed=2, resamples=5_000, answers=False,
                   correction="none").table("winner_flips")
    bh = analyze([d], seed=2, resamples=5_000, answers=False,
                 correction="bh").table("winner_flips")
    assert len(holm) == 66  # C(12, 2) pairs, one target pair: a family of 132 gaps
    for h, u, b in zip(holm, none, bh, strict=True):
        assert h["p_1"] == u["p_1"] == b["p_1"]  # raw p-values do not depend on correction
        assert u["p_1_adjusted"] == u["p_1"]
        assert u["p_1"] <= b["p_1_adjusted"] <= h["p_1_adjusted"]
        assert h["significant_flip"] <= b["significant_flip"] <= u["significant_flip"]
    # the true flips (S0 against each other system) survive Holm
    true = [r for r in holm if r["system_a"] == "S0"]
    assert len(true) == 11 and all(r["significant_flip"] for r in true)
    # among the nulls, noise makes some flips and no significant one after Holm
    nulls = [r for r in holm if r["system_a"] != "S0"]
    assert any(r["flip"] for r in nulls)
    assert not any(r["significant_flip"] for r in nulls)
    # without correction some null gaps are "significant" (8 of 110 with this data)
    assert any(r["p_1_adjusted"] <= 0.05 or r["p_2_adjusted"] <= 0.05
               for r in none if r["system_a"] != "S0")


def test_cli_csv_columns_booleans_and_identical_reruns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d = _noisy(tmp_path, 0.2)
    out1, out2, out3 = tmp_path / "s1", tmp_path / "s2", tmp_path / "s3"
    for out, seed in ((out1, "3"), (out2, "3"), (out3, "4")):
        assert main(["sensitivity", str(d), "--out", str(out), "--seed", seed,
                     "--resamples", "1500"]) == 0
    header = (out1 / "winner_flips.csv").read_text().splitlines()[0].split(",")
    assert all(c in header for c in REQUIRED)
    rows = read_csv(out1 / "winner_flips.csv")
    assert rows[0]["flip"] == "true" and rows[0]["significant_flip"] == "true"
    assert {r["flip"] for r in read_csv(out1 / "winner_flips.csv")} <= {"true", "false"}
    for f in sorted(out1.iterdir()):
        if f.name == "manifest.json":  # the same but for the command line (its --out)
            a, b = (json.loads(x.read_text()) for x in (f, out2 / f.name))
            assert a.pop("command_line")[-4:] == b.pop("command_line")[-4:]
            assert a == b
            continue
        assert f.read_bytes() == (out2 / f.name).read_bytes(), f.name
    assert (out1 / "winner_flips.csv").read_bytes() != (out3 / "winner_flips.csv").read_bytes()


def test_no_shared_query_gives_empty_gaps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d = write_rescore_dir(tmp_path / "e", {
        ("A", "raw", "nDCG@10"): [0.5, 0.2], ("A", "canonical", "nDCG@10"): [None, None],
        ("B", "raw", "nDCG@10"): [0.1, 0.3], ("B", "canonical", "nDCG@10"): [0.4, 0.4],
    }, ["q1", "q2"], targets=("raw", "canonical"))
    r = analyze([d], seed=0, resamples=200, answers=False).table("winner_flips")[0]
    assert r["n_shared"] == 0 and r["gap_1"] is None and r["flip"] is False
