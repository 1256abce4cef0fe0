"""Agreement statistics against hand-computed values and statsmodels."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tiap.audit import (
    LabelRecord,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    percent_agreement,
    write_labels,
)
from tiap.audit.agreement import (
    binary_codes,
    category_counts,
    cohen_kappa_interval,
    majority_vote,
)
from tiap.cli.main import main

S, P, D = 0, 1, 2  # supports, partial, does_not_support
M = -1


def test_cohen_kappa_by_hand() -> None:
    # a and b agree on 7 of 10 (p_o = 0.7); both use the categories 4, 3, 3 times:
    # p_e = 0.4^2 + 0.3^2 + 0.3^2 = 0.34; kappa = (0.7 - 0.34) / 0.66 = 6/11
    a = [S, S, S, S, P, P, P, D, D, D]
    b = [S, S, S, P, P, P, D, D, D, S]
    assert percent_agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b, 3) == pytest.approx(6 / 11, abs=1e-12)
    assert cohen_kappa(a, a, 3) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([S, S], [S, S], 3))  # p_e = 1: undefined


def test_fleiss_kappa_by_hand() -> None:
    # 4 cases, 3 raters, 2 categories: counts [3,0] [0,3] [2,1] [1,2]
    # P_i = 1, 1, 1/3, 1/3 -> P_bar = 2/3; p = (1/2, 1/2) -> P_e = 1/2; kappa = 1/3
    counts = np.array([[3, 0], [0, 3], [2, 1], [1, 2]])
    assert fleiss_kappa(counts) == pytest.approx(1 / 3, abs=1e-12)


def test_fleiss_kappa_textbook_example() -> None:
    # Fleiss (1971) as worked in Wikipedia's "Fleiss' kappa": 10 subjects, 14 raters,
    # 5 categories; P_bar = 0.378, P_e = 0.213, kappa = 0.210
    counts = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
                       [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
                       [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    assert fleiss_kappa(counts) == pytest.approx(0.210, abs=5e-4)


def test_kernels_equal_statsmodels_on_random_tables() -> None:
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(42)
    for _ in range(50):
        n, r = int(rng.integers(5, 60)), int(rng.integers(2, 7))
        codes = rng.integers(0, 3, (n, r))
        counts = category_counts(codes, 3)
        assert fleiss_kappa(counts) == pytest.approx(sm.fleiss_kappa(counts), abs=1e-12)
        a, b = codes[:, 0], codes[:, 1]
        table = np.zeros((3, 3))
        np.add.at(table, (a, b), 1)
        assert cohen_kappa(a, b, 3) == pytest.approx(sm.cohens_kappa(table).kappa, abs=1e-12)
        ref = sm.cohens_kappa(table)
        lo, hi = cohen_kappa_interval(a, b, 3)
        # statsmodels' Wald interval, clipped to kappa's range [-1, 1]
        assert (lo, hi) == (pytest.approx(max(ref.kappa_low, -1.0), abs=1e-12),
                            pytest.approx(min(ref.kappa_upp, 1.0), abs=1e-12))


def test_kappa_interval_by_hand() -> None:
    # 2x2: a = [0,0,1,1], b = [0,1,1,1]: p00 = .25, p01 = .25, p11 = .5; rows (.5, .5),
    # cols (.25, .75); p_o = .75, p_e = .5, kappa = .5.
    # term_a = .25 (1 - .75 * .5)^2 + .5 (1 - 1.25 * .5)^2 = .09765625 + .0703125
    # term_b = (1 - .5)^2 * p01 (p_.0 + p_1.)^2 = .25 * .25 * (.25 + .5)^2 = .03515625
    # term_c = (.5 - .5 * .5)^2 = .0625; var = (.16796875 + .03515625 - .0625) / .25 / 4
    var = (0.09765625 + 0.0703125 + 0.03515625 - 0.0625) / 0.25 / 4
    assert var == pytest.approx(0.140625)
    lo, hi = cohen_kappa_interval([0, 0, 1, 1], [0, 1, 1, 1], 2)
    half = 1.959963984540054 * math.sqrt(var)  # 0.735: 0.5 + half is past 1, clipped to 1
    assert (lo, hi) == (pytest.approx(0.5 - half, abs=1e-12), 1.0)
    assert all(math.isnan(v) for v in cohen_kappa_interval([0, 0], [0, 0], 3))
    # one rater gives one label only: kappa is 0 and the variance 0, no interval
    assert cohen_kappa([0, 1, 1, 0], [1, 1, 1, 1], 2) == 0.0
    assert all(math.isnan(v) for v in cohen_kappa_interval([0, 1, 1, 0], [1, 1, 1, 1], 2))


def test_krippendorff_alpha_reference_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the nominal example:
    # 4 observers, 12 units, values 1-5, missing data; alpha = 0.743
    obs = [[1, 2, 3, 3, 2, 1, 4, 1, 2, M, M, M],
           [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, M, 3],
           [M, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, M],
           [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, M]]
    x = np.asarray(obs).T
    x = np.where(x > 0, x - 1, -1)
    assert krippendorff_alpha(x, 5) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(x, 5) == pytest.approx(0.7434210526315789, abs=1e-12)


def test_krippendorff_alpha_small_by_hand() -> None:
    # 2 raters, 4 units: (S,S) (S,P) (P,P) (D,D). Coincidences: o_SS = 2, o_SP = o_PS = 1,
    # o_PP = 2, o_DD = 2; n_S = 3, n_P = 3, n_D = 2, n = 8.
    # D_o = 2 (the off-diagonal); sum_{c!=k} n_c n_k = 64 - (9 + 9 + 4) = 42
    # alpha = 1 - 7 * 2 / 42 = 2/3
    x = np.array([[S, S], [S, P], [P, P], [D, D]])
    assert krippendorff_alpha(x, 3) == pytest.approx(2 / 3, abs=1e-12)
    assert krippendorff_alpha(np.array([[S, S], [P, P]]), 3) == pytest.approx(1.0)
    # units with a single label do not count
    y = np.vstack([x, [[D, M]]])
    assert krippendorff_alpha(y, 3) == pytest.approx(2 / 3, abs=1e-12)


def test_binary_collapse() -> None:
    assert binary_codes([S, P, D, M]).tolist() == [0, 0, 1, -1]


def test_majority_vote_and_its_tie_rules() -> None:
    x = np.array([[S, S, P], [S, D, M], [S, P, D], [M, M, M], [P, D, D]])
    win, tie = majority_vote(x, 3, "conservative")
    assert win.tolist() == [S, D, D, -1, D]
    assert tie.tolist() == [False, True, True, False, False]
    assert majority_vote(x, 3, "lenient")[0].tolist() == [S, S, S, -1, D]
    assert majority_vote(x, 3, "none")[0].tolist() == [S, -1, -1, -1, D]


def rec(case: str, judge: str, label: str, dataset: str = "d", target: str = "source"
        ) -> LabelRecord:
    return LabelRecord(case_id=case, judge=judge, label=label, dataset=dataset, target=target,
                       reason="x" if label == "unscored" else None)


LABELS = {  # case: (A, B, C)
    "c1": ("supports", "supports", "supports"),
    "c2": ("supports", "partial", "supports"),
    "c3": ("partial", "partial", "does_not_support"),
    "c4": ("does_not_support", "does_not_support", "does_not_support"),
    "c5": ("partial", "does_not_support", "unscored"),
}


def records() -> list[LabelRecord]:
    out = []
    for c, labs in LABELS.items():
        for judge, lab in zip("ABC", labs, strict=True):
            out.append(rec(c, judge, lab, dataset="x" if c in ("c1", "c2") else "y"))
    return out


def test_agreement_report_by_hand() -> None:
    rep = agreement(records())
    assert rep.raters == ("A", "B", "C") and rep.n_cases == 5 and rep.n_complete == 4
    pw = {(r["rater_1"], r["rater_2"], r["scheme"]): r for r in rep.pairwise}
    # complete cases c1-c4. A-B: agree c1, c3, c4 (3/4); A-C: c1, c2, c4 (3/4);
    # B-C: c1, c4 (2/4). mean = (0.75 + 0.75 + 0.5) / 3 = 2/3
    assert pw[("A", "B", "three_class")]["agreement_complete"] == 0.75
    assert pw[("B", "C", "three_class")]["agreement_complete"] == 0.5
    assert rep.summary["mean_pairwise_agreement"]["three_class"] == pytest.approx(2 / 3,
                                                                                abs=1e-6)
    # A-B over both-labelled c1-c5: agree c1, c3, c4 -> 3/5
    assert pw[("A", "B", "three_class")]["n"] == 5
    assert pw[("A", "B", "three_class")]["agreement"] == 0.6
    # binary (S+P vs D), complete cases: A = R R R N, B = R R R N, C = R R N N
    # A-B 4/4, A-C 3/4, B-C 3/4 -> mean 5/6
    assert rep.summary["mean_pairwise_agreement"]["binary"] == pytest.approx(5 / 6, abs=1e-6)
    # Fleiss on c1-c4 (three raters): counts [3,0,0] [2,1,0] [0,2,1] [0,0,3]
    # P_i = 1, 1/3, 1/3, 1 -> P_bar = 2/3; p = (5, 3, 4) / 12 -> P_e = 50/144
    # kappa = (2/3 - 50/144) / (1 - 50/144) = 46/94
    assert rep.summary["fleiss_kappa"]["three_class"] == pytest.approx(46 / 94, abs=1e-6)
    assert rep.summary["fleiss_kappa"]["n"] == 4
    maj = {r["case_id"]: r for r in rep.majority}
    assert maj["c2"]["label"] == "supports" and maj["c3"]["label"] == "partial"
    assert maj["c5"]["label"] == "does_not_support" and maj["c5"]["tie"] is True
    assert rep.summary["majority"]["distribution"] == {"supports": 2, "partial": 1,
                                                       "does_not_support": 2}
    dist = {(r["rater"], r["dataset"], r["label"]): r["count"] for r in rep.distribution}
    assert dist[("A", "x", "supports")] == 2 and dist[("A", "y", "partial")] == 2
    assert dist[("C", "y", "no_label")] == 1
    assert dist[("majority", "all", "does_not_support")] == 2
    # Krippendorff over all 5 cases (c5 has two labels)
    x = np.array([[S, S, S], [S, P, S], [P, P, D], [D, D, D], [P, D, M]])
    assert rep.summary["krippendorff_alpha"]["three_class"] == pytest.approx(
        krippendorff_alpha(x, 3), abs=1e-6)


def test_agreement_with_human_labels() -> None:
    human = [rec("c1", "human:h", "supports"), rec("c2", "human:h", "partial"),
             rec("c3", "human:h", "does_not_support"), rec("zz", "human:h", "supports")]
    rep = agreement(records(), human=human)
    rows = {(r["rater"], r["scheme"]): r for r in rep.human if r["target"] == "all"}
    # A on c1-c3: S, S, P vs S, P, D -> 1/3; binary R R R vs R R N -> 2/3
    assert rows[("A", "three_class")]["n"] == 3
    assert rows[("A", "three_class")]["agreement"] == pytest.approx(1 / 3, abs=1e-6)
    assert rows[("A", "binary")]["agreement"] == pytest.approx(2 / 3, abs=1e-6)
    # C: S, S, D vs S, P, D -> 2/3
    assert rows[("C", "three_class")]["agreement"] == pytest.approx(2 / 3, abs=1e-6)
    assert rows[("majority", "three_class")]["n"] == 3
    conf = {(r["rater"], r["human_label"], r["rater_label"]): r["count"] for r in rep.confusion}
    assert conf[("A", "does_not_support", "partial")] == 1
    assert rep.summary["human"]["matched"] == 3


def test_one_human_judgment_of_several_cases_counts_once() -> None:
    """A human label that stands for two cases (unit u1: c1 and c2; unit u2: c3 and c4) is
    one judgment; the judge's labels on its cases are combined by the tie rule."""
    human = [LabelRecord(case_id=c, judge="human:h", label=lab, unit=u, target=t)
             for c, lab, u, t in [("c1", "supports", "u1", "source"),
                                  ("c2", "supports", "u1", "canonical"),
                                  ("c3", "does_not_support", "u2", "source"),
                                  ("c4", "does_not_support", "u2", "canonical")]]
    # A: c1 S, c2 S -> u1 S (agrees); c3 P, c4 D -> u2 split, conservative D (agrees)
    rep = agreement(records(), human=human, raters=["A"])
    rows = {(r["target"], r["scheme"]): r for r in rep.human if r["rater"] == "A"}
    assert rows[("all", "three_class")]["n"] == 2
    assert rows[("all", "three_class")]["split"] == 1
    assert rows[("all", "three_class")]["agreement"] == 1.0
    # per target: source c1 S/S, c3 P/D -> 1/2; canonical c2 S/S, c4 D/D -> 2/2
    assert rows[("source", "three_class")]["n"] == 1 + 1
    assert rows[("source", "three_class")]["agreement"] == 0.5
    assert rows[("canonical", "three_class")]["agreement"] == 1.0
    # the lenient rule takes partial for u2: 1/2
    lenient = agreement(records(), human=human, raters=["A"], tie_rule="lenient")
    assert [r["agreement"] for r in lenient.human if r["target"] == "all"
            and r["scheme"] == "three_class"] == [0.5]
    assert rep.summary["human"]["cases"] == 2 and rep.summary["human"]["audit_cases"] == 4


def test_cli_agreement(tmp_path: Path) -> None:
    write_labels(tmp_path / "a.jsonl", [r for r in records() if r.judge != "C"])
    write_labels(tmp_path / "c.jsonl", [r for r in records() if r.judge == "C"])
    (tmp_path / "human.csv").write_text("case_id,label,rater\nc1,Supports,ann\nc2,partial,ann\n"
                                        "c3,does not support,ann\n", encoding="utf-8")
    rc = main(["audit", "agreement", str(tmp_path / "a.jsonl"), str(tmp_path / "c.jsonl"),
               "--human", str(tmp_path / "human.csv"), "--out", str(tmp_path / "ag")])
    assert rc == 0
    import json

    got = json.loads((tmp_path / "ag" / "agreement.json").read_text())
    assert got["fleiss_kappa"]["three_class"] == pytest.approx(46 / 94, abs=1e-6)
    assert got["fleiss_kappa"]["backend"].startswith(("statsmodels", "tiap"))
    assert got["tie_rule"] == "conservative"
    for f in ("pairwise.csv", "distribution.csv", "majority.jsonl", "human.csv",
              "confusion.csv", "manifest.json"):
        assert (tmp_path / "ag" / f).exists(), f
    assert "human:ann" in (tmp_path / "ag" / "human.csv").read_text()


def test_a_typo_in_human_labels_is_reported(tmp_path: Path, capsys) -> None:
    write_labels(tmp_path / "a.jsonl", records())
    (tmp_path / "h.csv").write_text("case_id,label\nc1,suports\n", encoding="utf-8")
    rc = main(["audit", "agreement", str(tmp_path / "a.jsonl"), "--human",
               str(tmp_path / "h.csv"), "--out", str(tmp_path / "ag")])
    assert rc == 2
    assert "h.csv:2" in capsys.readouterr().err


def test_a_judge_labelling_a_case_twice_is_an_error(tmp_path: Path) -> None:
    from tiap.audit import read_labels
    from tiap.errors import TiapError

    write_labels(tmp_path / "a.jsonl", records())
    with pytest.raises(TiapError, match="labels this case twice"):
        read_labels([tmp_path / "a.jsonl", tmp_path / "a.jsonl"])
