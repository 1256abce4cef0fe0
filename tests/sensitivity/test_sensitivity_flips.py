"""Winner flips: hand-worked gaps on inline per-query data, flips, significance, the CSV
format, identical reruns."""

from __future__ import annotations

import numpy as np
import pytest
from sensitivity_fixtures import read_csv, write_rescore_dir

from tiap.cli.main import main
from tiap.sensitivity import analyze, is_flip, is_significant_flip, load_datasets, winner_flips

REQUIRED = ("measure,system_a,system_b,target_1,target_2,n_shared,gap_1,gap_2,ci_1_low,"
            "ci_1_high,ci_2_low,ci_2_high,p_1,p_2,flip,significant_flip").split(",")

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
    # the bootstrap intervals contain the gaps; n = 3 cannot make the flip significant
    assert r["ci_1_low"] <= r["gap_1"] <= r["ci_1_high"]
    assert r["ci_2_low"] <= r["gap_2"] <= r["ci_2_high"]
    # exact sign-flip p (2^3 <= 500): raw d = [1, -1, -0.5], |sum| = 0.5; sums >= 0.5 in
    # absolute value: +++ (-0.5), ++- (0.5), -+- (-1.5)... enumerate by hand: signs of
    # (1, -1, -0.5): sums 1-1-0.5=-0.5, 1-1+0.5=0.5, 1+1-0.5=1.5, 1+1+0.5=2.5, -1-1-0.5=-2.5,
    # -1-1+0.5=-1.5, -1+1-0.5=-0.5, -1+1+0.5=0.5 -> all 8 reach 0.5 -> p = 1
    assert r["p_1"] == 1.0
    assert r["significant_flip"] is False


def test_flip_rules() -> None:
    assert is_flip(-0.1, 0.2) and is_flip(0.3, -0.01)
    assert not is_flip(0.1, 0.2) and not is_flip(0.0, 0.2) and not is_flip(None, 0.1)
    assert not is_flip(1e-15, -0.2)  # within 1e-12 of 0: a tie
    assert is_significant_flip((0.1, 0.3), (-0.2, -0.05))
    assert is_significant_flip((-0.3, -0.1), (0.01, 0.2))
    assert not is_significant_flip((-0.1, 0.3), (-0.2, -0.05))  # first interval has 0
    assert not is_significant_flip((0.1, 0.3), (0.05, 0.2))  # same side


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
    tiny = analyze([_noisy(tmp_path, 0.004)], seed=1, resamples=2_000, answers=False)
    r = tiny.table("winner_flips")[0]
    assert r["gap_1"] == pytest.approx(0.004) and r["gap_2"] == pytest.approx(-0.004)
    assert r["flip"]  # a sign change ...
    assert r["ci_1_low"] < 0 < r["ci_1_high"] and r["ci_2_low"] < 0 < r["ci_2_high"]
    assert not r["significant_flip"]  # ... that the intervals do not support
    assert r["p_1"] > 0.05 and r["p_2"] > 0.05


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
        assert f.read_bytes() == (out2 / f.name).read_bytes(), f.name
    assert (out1 / "winner_flips.csv").read_bytes() != (out3 / "winner_flips.csv").read_bytes()


def test_no_shared_query_gives_empty_gaps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d = write_rescore_dir(tmp_path / "e", {
        ("A", "raw", "nDCG@10"): [0.5, 0.2], ("A", "canonical", "nDCG@10"): [None, None],
        ("B", "raw", "nDCG@10"): [0.1, 0.3], ("B", "canonical", "nDCG@10"): [0.4, 0.4],
    }, ["q1", "q2"], targets=("raw", "canonical"))
    r = analyze([d], seed=0, resamples=200, answers=False).table("winner_flips")[0]
    assert r["n_shared"] == 0 and r["gap_1"] is None and r["flip"] is False
