"""``tiap.compare``: each pair of systems under each target, checked against values this
test computes itself (the means and d_z with numpy from per-query values known by
construction, the exact sign-flip p-values with scipy, Holm with statsmodels), and against
``tiap.analyze``'s winner-flip table."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

import tiap
from tiap.errors import TiapError

# Eight queries q1..q8; query qi's evidence is turn ti (d1:i), memory mi derives from it and
# x is a turn of no query's evidence. Each system ranks one item per query, so Success@1 is
# 1 exactly where that item is credited: a turn under Raw and Source, a memory under Source
# and Canonical, x never.
TOP = {
    "A": ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "x"],
    "B": ["t1", "t2", "t3", "m4", "m5", "m6", "m7", "m8"],
    "C": ["x", "t2", "m3", "m4", "m5", "m6", "m7", "m8"],
}
# hence the per-query values (by hand, from TOP):
VALUES = {
    ("A", "raw"): [1, 1, 1, 1, 1, 1, 1, 0],
    ("A", "source"): [1, 1, 1, 1, 1, 1, 1, 0],
    ("A", "canonical"): [0, 0, 0, 0, 0, 0, 0, 0],
    ("B", "raw"): [1, 1, 1, 0, 0, 0, 0, 0],
    ("B", "source"): [1, 1, 1, 1, 1, 1, 1, 1],
    ("B", "canonical"): [0, 0, 0, 1, 1, 1, 1, 1],
    ("C", "raw"): [0, 1, 0, 0, 0, 0, 0, 0],
    ("C", "source"): [0, 1, 1, 1, 1, 1, 1, 1],
    ("C", "canonical"): [0, 0, 1, 1, 1, 1, 1, 1],
}
TARGETS = ("raw", "source", "canonical")


def _scores(measures: str = "Success@1") -> tiap.Scores:
    items = [{"item_id": f"t{i}", "kind": "raw", "sources": [f"d1:{i}"]} for i in range(1, 9)]
    items += [{"item_id": f"m{i}", "kind": "fact", "sources": [f"d1:{i}"]} for i in range(1, 9)]
    items.append({"item_id": "x", "kind": "raw", "sources": ["d1:99"]})
    queries = [{"query_id": f"q{i}", "evidence": [f"d1:{i}"]} for i in range(1, 9)]
    runs = {s: {f"q{i}": [top[i - 1]] for i in range(1, 9)} for s, top in TOP.items()}
    return tiap.rescore(runs, queries, items, targets=list(TARGETS), measures=measures)


def _exact_p(d: np.ndarray) -> float:
    """The two-sided exact sign-flip p-value of mean(d), by scipy (all 2^8 sign vectors)."""
    stats = pytest.importorskip("scipy.stats")
    res = stats.permutation_test(
        (d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
        n_resamples=np.inf, alternative="two-sided", vectorized=True)
    return float(res.pvalue)


def test_compare_against_values_computed_here() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    cmp = tiap.compare(_scores(), resamples=1000)  # 2^8 = 256 <= 1000: the exact test
    rows = cmp.table()
    # one row per (pair of systems, pair of targets, target), in that order
    expect_keys = [(a, b, t1, t2, t) for a, b in combinations("ABC", 2)
                   for t1, t2 in combinations(TARGETS, 2) for t in (t1, t2)]
    assert [(r["system_a"], r["system_b"], r["target_1"], r["target_2"], r["target"])
            for r in rows] == expect_keys
    # every query is defined under every target: each pair compares all eight
    assert {r["n_shared"] for r in rows} == {8}
    raw_p = []
    for r in rows:
        va = np.array(VALUES[(r["system_a"], r["target"])], float)
        vb = np.array(VALUES[(r["system_b"], r["target"])], float)
        d = va - vb
        assert r["mean_a"] == pytest.approx(va.mean())
        assert r["mean_b"] == pytest.approx(vb.mean())
        assert r["difference"] == pytest.approx(d.mean())
        assert (r["mean_a_lower"], r["mean_a_upper"]) == (r["mean_a"], r["mean_a"])
        dz = d.mean() / d.std(ddof=1) if d.std() > 0 else None
        assert r["effect"] == (pytest.approx(dz) if dz is not None else None)
        raw_p.append(_exact_p(d) if d.any() else 1.0)
        w = r["system_a"] if d.mean() > 0 else r["system_b"] if d.mean() < 0 else "tie"
        assert r["winner"] == w
    # one family: every gap of the measure in the dataset, Holm-adjusted together
    holm = multitest.multipletests(raw_p, method="holm")[1]
    assert [r["p_adjusted"] for r in rows] == pytest.approx(list(holm))
    # a flip: the winners of the two targets of a pair are the two systems
    for r1, r2 in zip(rows[::2], rows[1::2], strict=True):
        flip = {r1["winner"], r2["winner"]} == {r1["system_a"], r1["system_b"]}
        assert r1["flip"] is r2["flip"] is flip
    # A against B: A wins under Raw (+0.5, 7/8 against 3/8) and B under Canonical (-0.625)
    ab = [r for r in rows if (r["system_a"], r["system_b"], r["target_1"], r["target_2"])
          == ("A", "B", "raw", "canonical")]
    assert [(r["winner"], r["difference"]) for r in ab] == [("A", 0.5), ("B", -0.625)]
    assert ab[0]["flip"]


def test_compare_is_analyze_winner_flips_for_the_measure() -> None:
    """The same numbers as analyze's table (random sign vectors: 100 < 2^8), and the
    default measure is analyze's primary one (nDCG at its largest cutoff)."""
    scores = _scores("Success@1,nDCG@5,RR@10")
    cmp = tiap.compare(scores, resamples=100, seed=3)
    flips = [f for f in tiap.analyze(scores, resamples=100, seed=3, answers=False)
             .table("winner_flips") if f["measure"] == "nDCG@5"]
    assert {r["measure"] for r in cmp.table()} == {"nDCG@5"}
    assert cmp.options["measure"] == {"scores": "nDCG@5"}
    got = [(r["difference"], r["p_adjusted"], r["effect"], r["winner"], r["flip"])
           for r in cmp.table()]
    want = [(f[f"gap_{i}"], f[f"p_{i}_adjusted"], f[f"effect_{i}"], f[f"winner_{i}"],
             f["flip"]) for f in flips for i in (1, 2)]
    assert got == want
    # seeded: the same call gives the same rows
    assert tiap.compare(scores, resamples=100, seed=3).table() == cmp.table()


def test_named_scores_and_a_folder_give_the_same_rows(tmp_path) -> None:
    """(The exact test: random sign vectors are seeded with the dataset's name.)"""
    scores = _scores()
    rows = tiap.compare(scores, resamples=1000).table()
    named = tiap.compare([("mine", scores)], resamples=1000).table()
    scores.to_folder(tmp_path / "rescore")
    folder = tiap.compare(str(tmp_path / "rescore"), resamples=1000).table()
    assert {r["dataset"] for r in named} == {"mine"}
    for other in (named, folder):
        assert [{**r, "dataset": ""} for r in other] == [{**r, "dataset": ""} for r in rows]


def test_renderings() -> None:
    cmp = tiap.compare(_scores(), resamples=1000, pairs=["raw:canonical"])
    text = str(cmp).splitlines()
    assert text[0] == "scores, Success@1; p adjusted by holm"
    assert text[1].split() == ["A", "B", "target", "n", "mean", "A", "mean", "B", "A", "-",
                               "B", "p", "adj.", "d_z", "winner", "flip"]
    # A against B under Raw: 0.875 - 0.375 = +0.5; d = (0,0,0,1,1,1,1,0), d_z = 0.5 / sd
    sd = np.std([0, 0, 0, 1, 1, 1, 1, 0], ddof=1)
    assert text[2].split()[:7] == ["A", "B", "raw", "8", "0.8750", "0.3750", "+0.5000"]
    assert text[2].split()[8] == f"{0.5 / sd:+.2f}"
    latex = cmp.to_latex().splitlines()
    assert latex[1] == "\\begin{tabular}{lllrrrrrrll}"
    assert latex[2] == "\\toprule" and latex[4] == "\\midrule"
    assert latex[-2:] == ["\\bottomrule", "\\end{tabular}"]
    assert len(latex) == 5 + len(cmp.table()) + 2
    assert latex[5].startswith("A & B & raw & 8 & 0.8750 & 0.3750 & $+0.5000$ & ")
    pd = pytest.importorskip("pandas")
    frame = cmp.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(cmp.table())


def test_partial_lineage_gives_intervals() -> None:
    """Memory u derives from d1:2 and may derive from d1:1 (partial lineage): under
    Canonical, A's Success@1 on q1 is [0, 1], so A's mean is [0.5, 1.0] and the difference
    with B (q1: 1, q2: 0; mean 0.5) is [0.0, 0.5]: no winner, no d_z. Under Raw both
    values are exact: A 0 and 0, B 0 and 1 (t2), a difference of -0.5."""
    items = [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
             {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]},
             {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]},
             {"item_id": "m2", "kind": "fact", "sources": ["d1:2"]},
             {"item_id": "u", "kind": "fact", "sources": ["d1:2"],
              "uncertain": {"possible_sources": ["d1:1"]}}]
    queries = [{"query_id": "q1", "evidence": ["d1:1"]}, {"query_id": "q2", "evidence": ["d1:2"]}]
    runs = {"A": {"q1": ["u"], "q2": ["m2"]}, "B": {"q1": ["m1"], "q2": ["t2"]}}
    scores = tiap.rescore(runs, queries, items, targets=["raw", "canonical"],
                          measures="Success@1")
    cmp = tiap.compare(scores, resamples=100)
    raw, can = cmp.table()
    assert (raw["mean_a"], raw["mean_b"], raw["difference"], raw["winner"]) == (
        0.0, 0.5, -0.5, "B")
    assert can["mean_a"] is None and (can["mean_a_lower"], can["mean_a_upper"]) == (0.5, 1.0)
    assert can["mean_b"] == 0.5
    assert can["difference"] is None
    assert (can["difference_lower"], can["difference_upper"]) == (0.0, 0.5)
    assert can["effect"] is None and can["winner"] == "not determined"
    assert not can["flip"]
    assert str(cmp).splitlines()[3].split()[:5] == ["A", "B", "canonical", "2", "[0.5000,"]
    assert "& $[+0.0000, +0.5000]$ &" in cmp.to_latex()


def test_bad_options_are_errors() -> None:
    scores = _scores()
    with pytest.raises(TiapError, match="measure RR@10 is not among the measures of scores"):
        tiap.compare(scores, measure="RR@10")
    with pytest.raises(TiapError, match="correction must be one of"):
        tiap.compare(scores, correction="bonferroni")
    with pytest.raises(TiapError, match="no target 'gold'"):
        tiap.compare(scores, pairs=["raw:gold"])
