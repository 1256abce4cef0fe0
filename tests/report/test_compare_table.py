"""The compact comparison table (tiap.report.comparison_table) and the pairwise tests it
reads (system_tests, computed by the sensitivity stage): bold, superscripts and intervals
checked by hand on a constructed input, Holm within each column, the p-values against
scipy's permutation test and the winner flips' own, and the LaTeX compiled in a column."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import permutation_test
from statsmodels.stats.multitest import multipletests

import tiap
from tiap.report import comparison_table
from tiap.sensitivity import SensitivityResult, Table, write_sensitivity
from tiap.sensitivity.flips import MEANS_COLUMNS, SYSTEM_TEST_COLUMNS

OPTIONS = {"seed": 0, "resamples": 10_000, "alpha": 0.05, "correction": "holm"}


def _means(system: str, target: str, mean: float | None, lower: float, upper: float,
           n: int = 20, measure: str = "nDCG@10") -> dict[str, object]:
    return {"dataset": "toy", "system": system, "target": target, "measure": measure,
            "n": n, "mean": mean, "lower": lower, "upper": upper}


def _test(a: str, b: str, target: str, winner: str, significant: bool,
          measure: str = "nDCG@10") -> dict[str, object]:
    return {"dataset": "toy", "measure": measure, "target": target, "system_a": a,
            "system_b": b, "winner": winner, "significant": significant}


def _toy(tests: bool = True) -> SensitivityResult:
    """Three systems, two targets, by hand.

    raw: A 0.5, B 0.4, C 0.5 (exact). A and C tie at the top: both bold. A beats B and C
    beats B significantly; A against C is a tie, not significant.
    source: A only bounded, [0.30, 0.60]; B 0.55, C 0.20. The best is open (A may be
    below or above B): nothing bold. A beats C under every lineage (significant), B beats
    C; A against B is not determined (the gap interval holds 0), so no letter."""
    means = [_means("A", "raw", 0.5, 0.5, 0.5), _means("B", "raw", 0.4, 0.4, 0.4),
             _means("C", "raw", 0.5, 0.5, 0.5), _means("A", "source", None, 0.3, 0.6),
             _means("B", "source", 0.55, 0.55, 0.55), _means("C", "source", 0.2, 0.2, 0.2)]
    rows = [_test("A", "B", "raw", "A", True), _test("A", "C", "raw", "tie", False),
            _test("B", "C", "raw", "C", True),
            _test("A", "B", "source", "not determined", False),
            _test("A", "C", "source", "A", True), _test("B", "C", "source", "B", True)]
    tables = {"system_means": Table("system_means", MEANS_COLUMNS, means)}
    if tests:
        tables["system_tests"] = Table("system_tests", SYSTEM_TEST_COLUMNS, rows)
    info = {"datasets": [{"name": "toy", "measures": ["nDCG@10"],
                          "primary_measure": "nDCG@10",
                          "targets": [{"name": "raw"}, {"name": "source"}],
                          "systems": {"A": {}, "B": {}, "C": {}}}]}
    return SensitivityResult((), tables, OPTIONS, (), info)


def test_bold_superscripts_and_intervals_by_hand() -> None:
    t = comparison_table(_toy())
    assert t.to_markdown().splitlines()[-3:] == [
        "| a | A | **0.500**<sup>b</sup> | [0.300, 0.600]<sup>c</sup> |",
        "| b | B | 0.400 | 0.550<sup>c</sup> |",
        "| c | C | **0.500**<sup>b</sup> | 0.200 |",
    ]
    cap = t.caption()
    assert "No bold in nDCG@10 source: intervals leave the best system open." in cap
    assert "[lo, hi]: partial lineage bounds the mean" in cap
    assert ("two-sided paired sign-flip randomization test (10,000 resamples, seed 0)"
            in cap and "Holm-corrected within each column, α = 0.05" in cap)
    tex = t.to_latex()
    assert tex.count(r"\begin{table}") == 1
    assert r"a & A & \textbf{.500}\textsuperscript{b} & [.300, .600]\textsuperscript{c}" in tex
    assert r"c & C & \textbf{.500}\textsuperscript{b} & .200 \\" in tex
    assert r"$\alpha$ = 0.05" in tex
    page = t.to_html()
    assert "<td><b>0.500</b><sup>b</sup></td><td>[0.300, 0.600]<sup>c</sup></td>" in page


def test_selection_and_usage_errors() -> None:
    t = comparison_table(_toy(), targets=["source"], systems=["B", "C"])
    # C is now letter b; B beats C under source
    assert t.to_markdown().splitlines()[-2:] == ["| a | B | **0.550**<sup>b</sup> |",
                                                 "| b | C | 0.200 |"]
    assert "Holm-corrected within each column (over the 3 pairs of all 3 systems tested)" in (
        t.caption())
    with pytest.raises(tiap.TiapError) as err:
        comparison_table(_toy(), measures=["nDCG@5"], targets=["canonical"])
    assert [p.code for p in err.value.problems] == ["usage", "usage"]
    assert "--measure nDCG@5: no measure 'nDCG@5' (there are: nDCG@10)" in str(err.value)


def test_without_system_tests_the_caption_says_so() -> None:
    t = comparison_table(_toy(tests=False))
    assert "<sup>" not in t.to_markdown()
    assert "No superscripts: the sensitivity folder has no system_tests.csv" in t.caption()


def _scores() -> tiap.Scores:
    """Three systems on 9 queries; the evidence turn at a rank per system and query."""
    ranks = {"A": [1, 1, 2, 1, 3, 1, 1, 2, 1], "B": [2, 3, 3, 4, 4, 5, 3, 3, 2],
             "C": [1, 2, 2, 1, 3, 1, 2, 2, 1]}
    qs = [{"query_id": f"q{i}", "evidence": [f"d1:{i}"]} for i in range(9)]
    items = [{"item_id": f"t{i}", "kind": "raw", "sources": [f"d1:{i}"]} for i in range(9)]
    items += [{"item_id": f"x{k}", "kind": "raw", "sources": [f"d2:{k}"]} for k in range(5)]
    runs = {}
    for s, rs in ranks.items():
        runs[s] = {}
        for i, r in enumerate(rs):
            filler = [f"x{k}" for k in range(4)]
            runs[s][f"q{i}"] = filler[:r - 1] + [f"t{i}"] + filler[r - 1:]
    return tiap.rescore(runs, qs, items, measures="RR@5", tokenizer="none")


def test_system_tests_p_values_against_scipy_and_the_flips() -> None:
    """2^9 = 512 sign vectors <= 1000 resamples: the exact test, which is scipy's
    permutation_test over paired samples with every permutation; Holm adjusts the three
    pairs of one (target, measure) column together and nothing else."""
    scores = _scores()
    res = tiap.analyze(scores, resamples=1000, answers=False)
    rows = [r for r in res.table("system_tests") if r["target"] == "raw"]
    assert [(r["system_a"], r["system_b"]) for r in rows] == [("A", "B"), ("A", "C"),
                                                              ("B", "C")]
    rr = {s: scores.values[(s, "raw", scores.measures[0])] for s in ("A", "B", "C")}
    for r in rows:
        x, y = rr[r["system_a"]], rr[r["system_b"]]
        ref = permutation_test((x, y), lambda u, v: np.mean(u - v), vectorized=False,
                               permutation_type="samples", n_resamples=np.inf,
                               alternative="two-sided")
        assert r["n"] == 9
        assert r["p"] == pytest.approx(ref.pvalue, abs=1e-12)
        assert r["gap"] == pytest.approx(float(np.mean(x - y)), abs=1e-15)
    # Holm within the column, m = 3: sorted p_(1) <= p_(2) <= p_(3) are adjusted to
    # 3 p_(1), max(that, 2 p_(2)), max(that, p_(3)) (capped at 1); statsmodels' alike
    p = [r["p"] for r in rows]
    order = sorted(range(3), key=p.__getitem__)
    by_hand = [0.0] * 3
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * p[i]))
        by_hand[i] = running
    assert [r["p_adjusted"] for r in rows] == pytest.approx(by_hand, abs=1e-15)
    assert list(multipletests(p, method="holm")[1]) == pytest.approx(by_hand, abs=1e-15)
    # the same pair, target and queries in the winner flips: the same raw p-value
    flip = next(f for f in res.table("winner_flips") if (f["system_a"], f["system_b"],
                                                         f["target_1"]) == ("A", "B", "raw"))
    assert flip["n_shared"] == 9 and flip["p_1"] == rows[0]["p"]
    # A ranks the turn higher than B on every query: p = 2 / 2^9, Holm at most 3 times
    # that, 0.0117: A beats B significantly (letter b); A against C is not significant
    assert rows[0]["p"] == 2 / 512 and rows[0]["significant"] and rows[0]["winner"] == "A"
    assert not rows[1]["significant"]
    # A's mean RR: six 1s, two 1/2, one 1/3 = 7.333 / 9 = 0.815, the best (C: 0.704)
    t = comparison_table(res, targets=["raw"])
    assert t.to_markdown().splitlines()[-3] == "| a | A | **0.815**<sup>b</sup> |"


def test_system_tests_written_and_read_back(tmp_path: Path) -> None:
    res = tiap.analyze(_scores(), resamples=1000, answers=False)
    write_sensitivity(res, tmp_path / "sens")
    head = (tmp_path / "sens" / "system_tests.csv").read_text().splitlines()[0]
    assert head == ",".join(SYSTEM_TEST_COLUMNS)
    from_folder = comparison_table(tmp_path / "sens")
    assert from_folder.to_markdown() == comparison_table(res).to_markdown()


def _wide(bounded: bool = False) -> SensitivityResult:
    """4 systems x 3 targets x 2 measures, names as long as the demo's (``bounded``: the
    first system's means only bounded, ``[0.312, 0.458]``)."""
    systems = ["f1-bm25", "f5-bm25", "f8-bm25", "native-bm25"]
    targets = ["raw", "source", "canonical"]
    means, rows = [], []
    for m in ("nDCG@60", "RR@60"):
        for t in targets:
            for i, s in enumerate(systems):
                v = 0.3 + 0.1 * i
                row = (_means(s, t, None, 0.312, 0.458, 1981, m) if bounded and i == 0
                       else _means(s, t, v, v, v, 1981, m))
                means.append(row)
            for i, a in enumerate(systems):
                for b in systems[i + 1:]:
                    rows.append(_test(a, b, t, b, True, m))
    info = {"datasets": [{"name": "toy", "measures": ["nDCG@60", "RR@60"],
                          "primary_measure": "nDCG@60",
                          "targets": [{"name": t} for t in targets],
                          "systems": {s: {} for s in systems}}]}
    return SensitivityResult((), {"system_means": Table("system_means", MEANS_COLUMNS, means),
                                  "system_tests": Table("system_tests", SYSTEM_TEST_COLUMNS,
                                                        rows)}, OPTIONS, (), info)


@pytest.mark.parametrize(("measures", "bounded"), [(["nDCG@60"], False),
                                                   (["nDCG@60", "RR@60"], False),
                                                   (["nDCG@60", "RR@60"], True)])
def test_latex_compiles_in_one_piece_in_a_column(compile_tex, tmp_path: Path,
                                                 measures: list[str], bounded: bool) -> None:
    """In a two-column article (booktabs only), one float, nothing overfull or scaled;
    intervals are kept."""
    tex = comparison_table(_wide(bounded), measures=measures).to_latex()
    assert ("[.312," in tex and ".458]" in tex) == bounded  # on one line, or stacked
    assert tex.count(r"\begin{table}") == 1 and "tiapfit" not in tex
    assert re.search(r"\\(small|footnotesize)\b", tex)
    assert r"\textbf{.600}\textsuperscript{abc}" in tex  # native-bm25 beats every other
    compile_tex(tex, tmp_path, options="twocolumn")


def test_cli_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tiap.cli.main import main

    res = tiap.analyze(_scores(), resamples=1000, answers=False)
    write_sensitivity(res, tmp_path / "sens")
    assert main(["table", str(tmp_path / "sens"), "--target", "raw", "--format", "tex",
                 "--out", str(tmp_path / "t.tex")]) == 0
    assert (tmp_path / "t.tex").read_text() == comparison_table(
        res, targets=["raw"]).to_latex()
    assert main(["table", str(tmp_path / "sens"), "--target", "nope"]) == 2
    assert "--target nope: no target 'nope' (there are: raw, source, canonical)" in (
        capsys.readouterr().err)


def test_a_system_tests_file_that_cannot_be_right_is_located(tmp_path: Path) -> None:
    """A p-value outside [0, 1] in system_tests.csv: an error naming the file and line."""
    res = tiap.analyze(_scores(), resamples=1000, answers=False)
    write_sensitivity(res, tmp_path / "sens")
    path = tmp_path / "sens" / "system_tests.csv"
    lines = path.read_text().splitlines()
    cells = lines[1].split(",")
    cells[SYSTEM_TEST_COLUMNS.index("p")] = "1.5"
    lines[1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(tiap.TiapError) as err:
        comparison_table(tmp_path / "sens")
    assert "system_tests.csv:2" in str(err.value) and "p: 1.5 cannot be right" in str(err.value)


def test_partial_lineage_pairs_and_an_open_column() -> None:
    """A summary s of unknown lineage (any turn of conversation c may be its source).
    Eight queries, each about its own turn t_i. A ranks a filler, then t_i (RR@5 = 1/2
    under every target); P ranks s, a filler, then t_i (under source: 1 if s derives from
    t_i, else 1/3, so [1/3, 1]); B ranks four fillers, then t_i (1/5).

    By hand, under source: A - P lies in [1/2 - 1, 1/2 - 1/3] = [-1/2, 1/6]: it holds 0, so
    no winner and p = 1. P - B lies in [1/3 - 1/5, 1 - 1/5] = [2/15, 4/5], positive under
    every lineage: the p-value is the lower differences' (all 2/15), whose exact test
    gives 2/2^8 (scipy's permutation test alike). Means: A 0.5, P [1/3, 1], B 0.2: the best
    is open (P may be above or below A), so the column has no bold."""
    from tiap.datasets.records import Query
    from tiap.memory.store import Item, Uncertainty
    from tiap.runs import Ranking, Run

    fill = [Item(f"x{k}", "raw", (f"c:{100 + k}",), collection="c") for k in range(4)]
    items = [Item(f"t{i}", "raw", (f"c:{i}",), collection="c") for i in range(8)]
    items += [*fill, Item("s", "summary", (), collection="c", uncertain=Uncertainty())]
    queries = [Query(f"q{i}", "c", "?", None, "", (f"c:{i}",)) for i in range(8)]
    orders = {"A": lambda i: ("x0", f"t{i}"), "P": lambda i: ("s", "x0", f"t{i}"),
              "B": lambda i: ("x0", "x1", "x2", "x3", f"t{i}")}
    runs = [Run(s, tuple(Ranking(f"q{i}", s, f(i)) for i in range(8)))
            for s, f in orders.items()]
    res = tiap.analyze(tiap.rescore(runs, queries, {None: items}, measures="RR@5"),
                       resamples=1000, answers=False, by_category_tests=False)
    rows = {(r["system_a"], r["system_b"]): r for r in res.table("system_tests")
            if r["target"] == "source"}
    ap, pb = rows[("A", "P")], rows[("P", "B")]
    assert ap["gap"] is None and ap["winner"] == "not determined" and ap["p"] == 1.0
    assert ap["gap_lower"] == pytest.approx(-0.5) and ap["gap_upper"] == pytest.approx(1 / 6)
    assert not ap["significant"]
    assert pb["gap"] is None and pb["winner"] == "P" and pb["n_undetermined"] == 8
    assert pb["gap_lower"] == pytest.approx(2 / 15) and pb["gap_upper"] == pytest.approx(0.8)
    lo = np.full(8, 2 / 15)
    ref = permutation_test((lo, np.zeros(8)), lambda u, v: np.mean(u - v), vectorized=False,
                           permutation_type="samples", n_resamples=np.inf)
    assert pb["p"] == pytest.approx(ref.pvalue, abs=1e-12) == 2 / 256
    assert pb["significant"]  # Holm over 3 pairs: at most 3 * 2/256 < 0.05
    t = comparison_table(res, targets=["source"])
    assert t.to_markdown().splitlines()[-3:] == [
        "| a | A | 0.500<sup>c</sup> |",
        "| b | P | [0.333, 1.000]<sup>c</sup> |",
        "| c | B | 0.200 |",
    ]
    assert t.open_best == (("RR@5", "source"),)
    assert "No bold in RR@5 source: intervals leave the best system open." in t.caption()
