"""What moves the score (tiap.answers.analysis), on cases built here with known answers and
on the kit's real verdicts (mnemoverse, read from the data path).

Expected values come from hand calculation (worked in comments) or from scipy/statsmodels
called here directly: the sign-flip test's exact p-value of 0/1 differences is the exact
two-sided sign test on the discordant questions, i.e. ``binomtest(k, k)`` and McNemar's
exact test; the mean squares of the variance decomposition are ``anova_lm``'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tiap.answers import Answer, AnswerSet, AnswerVerdict, JudgeConfig
from tiap.answers.analysis import (
    COLUMNS,
    analyze_answers,
    write_answer_analysis,
)
from tiap.answers.variance import crossed_components
from tiap.errors import TiapError

LAB = {1: "correct", 0: "wrong", None: None, "a": "ambiguous"}


def answer_set(table: dict[tuple[str, str], Sequence[int | str | None]],
               configs: dict[str, JudgeConfig], categories: Sequence[str] | None = None,
               dataset: str = "locomo") -> AnswerSet:
    """Answers from ``{(system, judge): labels per question}`` (1, 0, None for no usable
    verdict, "a" ambiguous; a missing key: not judged)."""
    systems = list(dict.fromkeys(s for s, _ in table))
    n = len(next(iter(table.values())))
    answers = []
    for s in systems:
        for q in range(n):
            verdicts = tuple(AnswerVerdict(j, LAB[labels[q]]) for (s2, j), labels in
                             table.items() if s2 == s)
            answers.append(Answer(dataset, s, f"q{q}", "x", verdicts=verdicts,
                                  category=categories[q] if categories else None))
    return AnswerSet(tuple(answers), configs)


def cfg(name: str, model: str = "m", prompt: str = "p", run: int = 0,
        kind: str = "llm") -> JudgeConfig:
    return JudgeConfig(name, kind=kind, model=model, prompt=prompt, temperature=0.0, run=run)


def rows(result: object, name: str, **where: object) -> list[dict[str, object]]:
    return [r for r in result.rows(name)  # type: ignore[attr-defined]
            if all(r[k] == v for k, v in where.items())]


# ------------------------------------------------------------------------------------------
# a prompt that flips a known pair


def flip_case(n: int, a_p: int, b_p: int) -> AnswerSet:
    """A right on the first ``a_p`` of ``n`` questions under prompt P, B on the first
    ``b_p``; under Q the two swap."""
    first = lambda k: [1 if i < k else 0 for i in range(n)]
    return answer_set({("A", "P"): first(a_p), ("A", "Q"): first(b_p),
                       ("B", "P"): first(b_p), ("B", "Q"): first(a_p)},
                      {"P": cfg("P", prompt="P"), "Q": cfg("Q", prompt="Q")})


def test_a_prompt_that_flips_a_pair_8_of_10_against_5_of_10() -> None:
    from scipy.stats import binomtest
    from statsmodels.stats.contingency_tables import mcnemar

    r = analyze_answers(flip_case(10, 8, 5), resamples=10_000)
    # under P: A - B is +1 on questions 5, 6, 7 and 0 elsewhere: gap 3/10. The sign-flip
    # test is exact (2^10 <= 10,000): the 7 zero differences do not matter, the three +1
    # reach |sum| = 3 only with one sign: 2 of 8 patterns, p = 0.25 -- the exact sign test
    # on the 3 discordant questions, and McNemar's exact test on A/B right/wrong
    [p_row] = rows(r, "paired_tests", judge="P")
    assert (p_row["gap"], p_row["n_shared"], p_row["winner"]) == (pytest.approx(0.3), 10, "A")
    assert p_row["p"] == pytest.approx(binomtest(3, 3, 0.5).pvalue) == 0.25
    assert p_row["p"] == pytest.approx(mcnemar([[5, 3], [0, 2]], exact=True).pvalue)
    # one family per dataset: two gaps (P and Q), both p = 0.25: Holm gives 0.5 each
    assert p_row["p_adjusted"] == pytest.approx(0.5) and p_row["significant"] is False
    [q_row] = rows(r, "paired_tests", judge="Q")
    assert q_row["gap"] == pytest.approx(-0.3) and q_row["winner"] == "B"
    [flip] = r.rows("judge_flips")
    assert (flip["judge_1"], flip["judge_2"], flip["flip"]) == ("P", "Q", True)
    assert (flip["winner_1"], flip["winner_2"]) == ("A", "B")
    assert flip["p_1_adjusted"] == pytest.approx(0.5)
    assert (flip["significant_flip"], flip["headline"]) == (False, False)
    assert [(x["judge"], x["rank"], x["system"]) for x in r.rows("rankings")] == [
        ("P", 1, "A"), ("P", 2, "B"), ("Q", 1, "B"), ("Q", 2, "A")]


def test_a_significant_flip_is_a_headline() -> None:
    from scipy.stats import binomtest

    # 12 questions: under P A is right on all 12, B on the first 2: ten +1 differences.
    # Exact (2^12 <= 10,000): p = 2 / 2^10 = binomtest(10, 10); Holm over the family's two
    # gaps doubles it: 0.0039 <= 0.05. d_z: mean 10/12, squared deviations 10 (1/6)^2 +
    # 2 (5/6)^2 = 5/3, sd = sqrt(5/3 / 11) = 0.3892, d_z = 2.141 >= 0.2; gap 0.83 >= 0.02
    r = analyze_answers(flip_case(12, 12, 2), resamples=10_000)
    [flip] = r.rows("judge_flips")
    assert flip["p_1"] == pytest.approx(binomtest(10, 10, 0.5).pvalue)
    assert flip["p_1_adjusted"] == pytest.approx(2 * flip["p_1"])
    assert flip["effect_1"] == pytest.approx((10 / 12) / math.sqrt(5 / 3 / 11))
    assert (flip["flip"], flip["significant_flip"], flip["practical"], flip["headline"]) \
        == (True, True, True, True)
    assert flip["ci_1_low"] > 0 > flip["ci_2_high"]  # the intervals exclude 0
    # a practical threshold above the gap: reported, never headlined
    r = analyze_answers(flip_case(12, 12, 2), resamples=10_000, min_effect=0.9)
    [flip] = r.rows("judge_flips")
    assert (flip["significant_flip"], flip["practical"], flip["headline"]) == (True, False, False)


# ------------------------------------------------------------------------------------------
# accuracy and agreement


def test_accuracy_over_scored_answers_and_bounded_over_all() -> None:
    from statsmodels.stats.proportion import proportion_confint

    # 10 answers: 6 correct, 2 wrong, one with no usable verdict, one not judged (the
    # verdict list of the judge skips it: a separate judge "other" covers it)
    labels: list[int | None] = [1, 1, 1, 1, 1, 1, 0, 0, None, 1]
    s = answer_set({("A", "j"): labels}, {"j": cfg("j")},
                   categories=["t", "t", "t", "t", "s", "s", "s", "s", "s", "s"])
    # drop the last answer's verdict: not judged
    last = s.answers[-1]
    s = AnswerSet((*s.answers[:-1], Answer(last.dataset, last.system, last.query_id, "x",
                                           category="s")), s.configs)
    r = analyze_answers(s, resamples=100)
    [all_] = rows(r, "accuracy", category="all")
    assert (all_["n_answers"], all_["n_scored"], all_["n_correct"], all_["n_null"],
            all_["n_unjudged"]) == (10, 8, 6, 1, 1)
    assert all_["accuracy"] == 0.75
    # Wilson, by hand: z = 1.96, p = 0.75, n = 8: centre (p + z²/2n) / (1 + z²/n)
    z = 1.959963984540054
    centre = (0.75 + z * z / 16) / (1 + z * z / 8)
    half = z * math.sqrt(0.75 * 0.25 / 8 + z * z / 256) / (1 + z * z / 8)
    assert all_["wilson_low"] == pytest.approx(centre - half)
    assert all_["wilson_high"] == pytest.approx(centre + half)
    assert (all_["wilson_low"], all_["wilson_high"]) == pytest.approx(
        proportion_confint(6, 8, method="wilson"))
    # over all 10 answers the accuracy is not determined: 6/10 (both unscored wrong) ..
    # 8/10 (both right)
    assert all_["accuracy_all"] is None
    assert (all_["accuracy_all_lower"], all_["accuracy_all_upper"]) == (0.6, 0.8)
    # per category: t has 4 answers, all correct and scored: exact
    [t] = rows(r, "accuracy", category="t")
    assert (t["n_answers"], t["accuracy"], t["accuracy_all"]) == (4, 1.0, 1.0)
    [cat_s] = rows(r, "accuracy", category="s")
    assert (cat_s["n_answers"], cat_s["n_scored"], cat_s["accuracy"]) == (6, 4, 0.5)
    assert (cat_s["accuracy_all_lower"], cat_s["accuracy_all_upper"]) == (2 / 6, 4 / 6)


def test_agreement_with_human_labels_leaves_ambiguous_out_and_counts_it() -> None:
    from statsmodels.stats.inter_rater import cohens_kappa

    judge = [1, 1, 1, 0, 0, 1, 0, 1]
    human: list[int | str] = [1, 1, 0, 0, 0, "a", "a", 1]
    s = answer_set({("A", "j"): judge, ("A", "h"): human},
                   {"j": cfg("j"), "h": cfg("h", kind="human", model="", prompt="")})
    [row] = analyze_answers(s, resamples=100).rows("agreement")
    # 6 answers both scored (2 ambiguous human labels left out, counted); they agree on 5.
    # Judge: 4 correct of 6, human 3 of 6: p_o = 5/6, p_e = 4/6·3/6 + 2/6·3/6 = 1/2,
    # kappa = (5/6 - 1/2) / (1/2) = 2/3
    assert (row["n"], row["n_ambiguous"], row["kind_2"]) == (6, 2, "human")
    assert row["agreement"] == pytest.approx(5 / 6)
    assert row["kappa"] == pytest.approx(2 / 3)
    ref = cohens_kappa(np.array([[3, 1], [0, 2]]))  # rows judge correct/wrong, cols human
    assert row["kappa"] == pytest.approx(ref.kappa)
    # statsmodels' Wald interval (0.104, 1.229), clipped to kappa's range [-1, 1]
    assert (row["kappa_low"], row["kappa_high"]) == pytest.approx((ref.kappa_low,
                                                                   min(ref.kappa_upp, 1.0)))


# ------------------------------------------------------------------------------------------
# variance components


def test_mean_squares_equal_statsmodels_anova_lm() -> None:
    import pandas as pd
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, size=(7, 2, 3))  # questions x prompts x models, 0/1
    frame = pd.DataFrame([{"y": float(y[q, p, m]), "q": q, "p": p, "m": m}
                          for q in range(7) for p in range(2) for m in range(3)])
    fit = ols("y ~ C(q) + C(p) + C(m) + C(q):C(p) + C(q):C(m) + C(p):C(m)", frame).fit()
    table = anova_lm(fit)
    ref = {"C(q)": (0,), "C(p)": (1,), "C(m)": (2,), "C(q):C(p)": (0, 1),
           "C(q):C(m)": (0, 2), "C(p):C(m)": (1, 2), "Residual": (0, 1, 2)}
    got = {c.axes: c for c in crossed_components(y)}
    for name, axes in ref.items():
        assert got[axes].mean_square == pytest.approx(table.loc[name, "mean_sq"], abs=1e-12)
        assert got[axes].df == table.loc[name, "df"]
    # the components from E[MS] by hand for the prompt main effect: MS_p = σ²_qpm +
    # 3 σ²_qp + 7 σ²_pm + 21 σ²_p
    ms = {axes: got[axes].mean_square for axes in got}
    s_qpm = ms[(0, 1, 2)]
    s_qp = (ms[(0, 1)] - s_qpm) / 3
    s_pm = (ms[(1, 2)] - s_qpm) / 7
    assert got[(1,)].variance_raw == pytest.approx((ms[(1,)] - s_qpm - 3 * s_qp - 7 * s_pm)
                                                   / 21)


def test_components_equal_statsmodels_mixedlm_reml_on_a_balanced_table() -> None:
    # on balanced data with every component positive, REML's estimates are the ANOVA
    # ones: statsmodels' MixedLM (crossed question and prompt effects as variance
    # components of one group) is an independent reference for the components themselves
    import warnings

    import pandas as pd
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(1)
    y = (rng.normal(0, 1.0, 12)[:, None] + rng.normal(0, 0.7, 4)[None, :]
         + rng.normal(0, 0.5, (12, 4)))
    frame = pd.DataFrame([{"y": y[q, p], "q": q, "p": p, "g": 1}
                          for q in range(12) for p in range(4)])
    model = smf.mixedlm("y ~ 1", frame, groups="g", re_formula="0",
                        vc_formula={"q": "0 + C(q)", "p": "0 + C(p)"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True, method="lbfgs")
    reml = dict(zip(model.exog_vc.names, fit.vcomp, strict=True))
    got = {c.axes: c.variance for c in crossed_components(y)}
    assert got[(0,)] == pytest.approx(reml["q"], rel=1e-4)
    assert got[(1,)] == pytest.approx(reml["p"], rel=1e-4)
    assert got[(0, 1)] == pytest.approx(fit.scale, rel=1e-4)


def test_a_judge_model_that_changes_nothing_has_a_component_of_exactly_0() -> None:
    rng = np.random.default_rng(5)
    strict = [int(x) for x in rng.integers(0, 2, 30)]
    lenient = [int(x) for x in rng.integers(0, 2, 30)]
    table = {}
    configs = {}
    for model in ("gpt-5", "gpt-4o"):  # both models give the same verdicts
        for prompt, labels in (("strict", strict), ("lenient", lenient)):
            configs[f"{model}|{prompt}"] = cfg(f"{model}|{prompt}", model=model,
                                               prompt=prompt)
            table[("A", f"{model}|{prompt}")] = labels
    r = analyze_answers(answer_set(table, configs), resamples=100, bootstrap=200)
    comps = {(x["level"], x["component"]): x for x in r.rows("variance")}
    with_model = [k for k in comps if "model" in k[1]]
    assert len(with_model) == 4 + 2  # model, query:model, prompt:model, q:p:m; score: 2
    for k in with_model:
        assert comps[k]["variance"] == 0.0 and comps[k]["variance_raw"] == 0.0, k
        assert comps[k]["variance_high"] == 0.0 and comps[k]["share"] == 0.0, k
    # the prompt does move the score: its score-level component is the variance of the two
    # prompts' accuracies (1 df, the models identical): (a_1 - a_2)² / 2
    a1, a2 = np.mean(strict), np.mean(lenient)
    assert comps[("score", "prompt")]["variance"] == pytest.approx((a1 - a2) ** 2 / 2)
    assert comps[("score", "prompt")]["share"] == pytest.approx(1.0)


def test_system_factors_split_systems_and_a_non_grid_is_a_note() -> None:
    rng = np.random.default_rng(7)
    table = {(f"{s}@{t}", j): [int(x) for x in rng.integers(0, 2, 12)]
             for s in ("A", "B") for t in ("raw", "canonical") for j in ("P", "Q")}
    configs = {"P": cfg("P", prompt="P"), "Q": cfg("Q", prompt="Q")}
    factors = {f"{s}@{t}": {"system": s, "target": t} for s in "AB"
               for t in ("raw", "canonical")}
    r = analyze_answers(answer_set(table, configs), resamples=100, bootstrap=50,
                        system_factors=factors)
    names = [x["component"] for x in r.rows("variance") if x["level"] == "score"]
    assert names[:3] == ["system", "target", "prompt"]
    assert names[-1] == "system:target:prompt (+ residual)"
    # a third configuration that crosses nothing (another model, one prompt): no grid
    configs["R"] = cfg("R", model="other", prompt="P")
    for key in list(table):
        table[(key[0], "R")] = table[key]
    r = analyze_answers(answer_set(table, configs), resamples=100, bootstrap=50)
    assert r.rows("variance") == []
    assert any("variance decomposition not determined" in n and "do not cross" in n
               for n in r.notes)
    with pytest.raises(TiapError, match="names no factors for system"):
        analyze_answers(answer_set(table, configs), system_factors={"A@raw": {"s": "A"}})


# ------------------------------------------------------------------------------------------
# run-to-run noise


def test_identical_runs_have_a_noise_band_of_exactly_0_and_one_run_is_not_determined(
) -> None:
    labels = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
    configs = {f"r{i}": cfg(f"r{i}", run=i) for i in range(3)}
    configs["solo"] = cfg("solo", model="other")
    table = {("A", f"r{i}"): labels for i in range(3)}
    table[("A", "solo")] = labels
    r = analyze_answers(answer_set(table, configs), resamples=100, bootstrap=20)
    [band] = rows(r, "noise", n_runs=3)
    assert (band["accuracy_range"], band["accuracy_sd"], band["sd_low"], band["sd_high"]) \
        == (0.0, 0.0, 0.0, 0.0)
    assert (band["n_compared"], band["n_changed"], band["changed_share"]) == (10, 0, 0.0)
    assert band["runs"] == "0,1,2" and band["family"] == "llm|m|p|t=0.0"
    [solo] = rows(r, "noise", n_runs=1)
    assert solo["status"] == "not determined: one run" and solo["accuracy_sd"] is None


def test_runs_that_differ_give_their_range_sd_and_changed_share() -> None:
    from scipy.stats import chi2

    # run 0: 7/10, run 1: 8/10 (question 1 flips), run 2: 6/10 (question 0 flips)
    base = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
    runs = [base, [1, 1, *base[2:]], [0, 0, *base[2:]]]
    configs = {f"r{i}": cfg(f"r{i}", run=i) for i in range(3)}
    r = analyze_answers(answer_set({("A", f"r{i}"): runs[i] for i in range(3)}, configs),
                        resamples=100, bootstrap=20)
    [band] = r.rows("noise")
    assert band["accuracies"] == "0.7;0.8;0.6"
    assert band["accuracy_range"] == pytest.approx(0.2)
    assert band["accuracy_sd"] == pytest.approx(0.1)  # deviations 0, .1, -.1: sqrt(.02/2)
    assert band["sd_high"] == pytest.approx(0.1 * math.sqrt(2 / chi2.ppf(0.025, 2)))
    assert (band["n_compared"], band["n_changed"]) == (10, 2)


# ------------------------------------------------------------------------------------------
# writing, and bad calls


def test_write_is_whole_and_reruns_write_the_same_bytes(tmp_path: Path) -> None:
    s = flip_case(10, 8, 5)
    first = write_answer_analysis(analyze_answers(s, resamples=500), tmp_path / "out")
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert set(before) == {f"{n}.csv" for n in COLUMNS} | {"manifest.json"}
    assert first["outputs"]["judge_flips.csv"]["rows"] == 1
    write_answer_analysis(analyze_answers(s, resamples=500), tmp_path / "out")
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
    header = (tmp_path / "out" / "paired_tests.csv").read_text().splitlines()[0]
    assert header == ",".join(COLUMNS["paired_tests"])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(TiapError, match="holds no manifest"):
        write_answer_analysis(analyze_answers(s, resamples=100), mine)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"min_effect": -0.1}, "min_effect must be a number >= 0"),
    ({"bootstrap": 0}, "bootstrap must be an integer >= 1"),
    ({"alpha": 1.5}, "alpha must be between 0 and 1"),
])
def test_bad_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TiapError, match=message):
        analyze_answers(flip_case(4, 3, 1), **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# the kit's real verdicts (mnemoverse; read from the data path, never copied)

_MEM0_FILES = {  # file prefix and suffix -> (judge model, prompt): the kit's README
    ("B", "mem0"): ("gpt-5", "mem0"), ("B", "strict"): ("gpt-5", "strict"),
    ("MV", "mem0-4o"): ("gpt-4o", "mem0"), ("MV", "strict-4o"): ("gpt-4o", "strict"),
    ("XB", "mem0-claude"): ("claude", "mem0"), ("XB", "strict-claude"): ("claude", "strict"),
}
_KIT_LABEL = {"CORRECT": "correct", "WRONG": "wrong", None: None}


@pytest.fixture(scope="module")
def kit(data_dir: Path) -> Path:
    path = data_dir / "mnemoverse"
    if not (path / "kit" / "data" / "mem0_oss_answers").is_dir():
        pytest.skip("the mnemoverse kit is not in the data folder")
    return path


def mem0_answer_set(kit: Path) -> tuple[AnswerSet, dict[str, int]]:
    """Mem0's 1,539 published answers with the verdicts of the six B/MV/XB files, and the
    correct count of each file counted directly."""
    configs, verdicts, counted = {}, {}, {}
    for (pre, suf), (model, prompt) in _MEM0_FILES.items():
        name = f"{model}|{prompt}"
        configs[name] = JudgeConfig(name, model=model, prompt=prompt)
        counted[name] = 0
        for c in range(10):
            path = kit / "experiments" / "hardening" / "verdicts" / f"{pre}_conv{c}_{suf}.json"
            for rec in json.loads(path.read_text(encoding="utf-8")):
                verdicts.setdefault(rec["qid"], []).append(
                    AnswerVerdict(name, _KIT_LABEL[rec["label"]]))
                counted[name] += rec["label"] == "CORRECT"
    answers = []
    for c in range(10):
        path = kit / "kit" / "data" / "mem0_oss_answers" / f"conv{c}.json"
        for rec in json.loads(path.read_text(encoding="utf-8")):
            answers.append(Answer("locomo", "mem0", rec["qid"], rec["answer"],
                                  category=rec["category"],
                                  verdicts=tuple(verdicts.pop(rec["qid"]))))
    assert not verdicts  # every verdict joined an answer
    return AnswerSet(tuple(answers), configs), counted


def test_mem0_published_answers_accuracy_and_decomposition(kit: Path) -> None:
    import pandas as pd
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    answers, counted = mem0_answer_set(kit)
    r = analyze_answers(answers)
    acc = {x["judge"]: x for x in rows(r, "accuracy", category="all")}
    for name, correct in counted.items():
        assert (acc[name]["n_answers"], acc[name]["n_correct"]) == (1539, correct)
    print("\naccuracy of Mem0's 1,539 answers:")
    for name, x in acc.items():
        print(f"  {name:14} {x['n_correct']:5}/{x['n_scored']} = {x['accuracy']:.4f} "
              f"[{x['wilson_low']:.4f}, {x['wilson_high']:.4f}]")
    # the kit's README states gpt-4o 91.9% / 43.1%
    assert round(acc["gpt-4o|mem0"]["accuracy"], 3) == 0.919
    assert round(acc["gpt-4o|strict"]["accuracy"], 3) == 0.431
    print("variance components (prompt x judge model):")
    for x in r.rows("variance"):
        print(f"  {x['level']:8} {x['component']:34} {x['variance']:.5f} share "
              f"{x['share']:.3f} [{x['share_low']:.3f}, {x['share_high']:.3f}]")
    # the score level against statsmodels: a two-way table without replication of the six
    # accuracies, E[MS_prompt] = σ²_res + 3 σ²_prompt, E[MS_model] = σ²_res + 2 σ²_model
    frame = pd.DataFrame([{"acc": acc[n]["accuracy"], "model": m, "prompt": p}
                          for n, (m, p) in ((f"{m}|{p}", (m, p)) for m, p in
                                            _MEM0_FILES.values())])
    table = anova_lm(ols("acc ~ C(prompt) + C(model)", frame).fit())
    res = table.loc["Residual", "mean_sq"]
    comp = {x["component"]: x for x in r.rows("variance") if x["level"] == "score"}
    assert comp["prompt"]["variance"] == pytest.approx(
        (table.loc["C(prompt)", "mean_sq"] - res) / 3)
    assert comp["model"]["variance"] == pytest.approx(
        max((table.loc["C(model)", "mean_sq"] - res) / 2, 0.0))
    assert comp["prompt:model (+ residual)"]["variance"] == pytest.approx(res)
    assert comp["prompt"]["share"] > 0.8  # the prompt moves the score most
    assert comp["prompt"]["share_low"] <= comp["prompt"]["share"] <= comp["prompt"]["share_high"]
    assert r.rows("paired_tests") == [] and r.rows("judge_flips") == []  # one system


def test_conv26_six_pipelines_rankings_and_flips_under_four_judges(kit: Path) -> None:
    doc = json.loads((kit / "kit" / "data" / "matrix_conv26_perq.json").read_text())
    models = {"mem0": ("gpt-5", "mem0"), "mem0-4o": ("gpt-4o", "mem0"),
              "strict": ("gpt-5", "strict"), "mnemoverse": ("gpt-5-mini", "mnemoverse")}
    configs = {j: JudgeConfig(j, model=m, prompt=p) for j, (m, p) in models.items()}
    # naked_cosine's mnemoverse judge used another prompt (the file's _provenance): it is
    # another configuration, never compared with the harness pipelines' one
    configs["mnemoverse-binary"] = JudgeConfig("mnemoverse-binary", model="gpt-5-mini",
                                               prompt="mnemoverse-binary")
    answers = []
    for system, per_q in doc["matrix"].items():
        for q, scores in per_q.items():
            vs = tuple(AnswerVerdict("mnemoverse-binary" if system == "naked_cosine"
                                     and j == "mnemoverse" else j,
                                     "correct" if v == 1 else "wrong")
                       for j, v in scores.items())
            answers.append(Answer("locomo", system, f"conv-26:q{q}", None, verdicts=vs))
    r = analyze_answers(AnswerSet(tuple(answers), configs))
    print("\nconv-26 rankings:")
    for j in models:
        order = [(x["system"], round(x["accuracy"], 3)) for x in rows(r, "rankings", judge=j)]
        print(f"  {j:11}", order)
    flips = [f for f in r.rows("judge_flips") if f["flip"]]
    print(f"flips: {len(flips)}, significant {sum(f['significant_flip'] for f in flips)}, "
          f"headline {sum(f['headline'] for f in flips)}")
    for f in flips:
        print(f"  {f['system_a']} vs {f['system_b']}: {f['judge_1']} {f['gap_1']:+.4f} "
              f"(p_adj {f['p_1_adjusted']:.3g}) / {f['judge_2']} {f['gap_2']:+.4f} "
              f"(p_adj {f['p_2_adjusted']:.3g})")
    # counted directly from the file: mem0/gpt-5 credits naked_cosine 123 of 152, zep 97
    [nc] = rows(r, "accuracy", system="naked_cosine", judge="mem0", category="all")
    [zep] = rows(r, "accuracy", system="zep", judge="strict", category="all")
    assert (nc["n_correct"], nc["n_scored"], zep["n_correct"]) == (123, 152, 29)
    # every pair under the three judges all six share, the five harness pipelines' 10
    # pairs under mnemoverse, none under mnemoverse-binary (one system)
    assert len(r.rows("paired_tests")) == 3 * 15 + 10
    assert len(r.rows("judge_flips")) == 10 * 6 + 5 * 3
    for f in flips:  # a flip's gaps have opposite signs, and its winners swap
        assert f["gap_1"] * f["gap_2"] < 0 and f["winner_1"] != f["winner_2"]
    assert any("not determined" in n for n in r.notes)  # the judges do not cross


def test_control_slice_reruns_noise_band_and_human_agreement(kit: Path) -> None:
    # the control slice: 143 answers on conv-26, judged three times under each of the mem0
    # and strict prompts by gpt-5 (A_*_rep0..2), and 57 of them labelled by a human
    verdict_dir = kit / "experiments" / "hardening" / "verdicts"
    configs, verdicts = {}, {}
    counted: dict[str, list[str]] = {}
    for prompt in ("mem0", "strict"):
        for run in range(3):
            name = f"gpt-5|{prompt}|r{run}"
            configs[name] = JudgeConfig(name, model="gpt-5", prompt=prompt, run=run)
            recs = json.loads((verdict_dir / f"A_{prompt}_rep{run}.json").read_text())
            counted[name] = [r["label"] for r in recs]
            for rec in recs:
                verdicts.setdefault(rec["qid"], []).append(
                    AnswerVerdict(name, _KIT_LABEL[rec["label"]]))
    configs["human"] = JudgeConfig("human", kind="human")
    labels = json.loads((kit / "kit" / "judge_audit" / "human_labels_control_slice.json")
                        .read_text())["labels"]
    for rec in labels:
        verdicts[rec["qid"]].append(AnswerVerdict("human", rec["human_verdict"].lower()))
    answers = [Answer("locomo", "mem0-control", f"conv-26:q{rec['qid']}", rec["answer"],
                      category=rec["category"], verdicts=tuple(verdicts[rec["qid"]]))
               for rec in json.loads((kit / "kit" / "data" / "answers_mem0_conv26.json")
                                     .read_text())]
    r = analyze_answers(AnswerSet(tuple(answers), configs))
    print("\nrun-to-run noise (143 answers, 3 runs):")
    for band in r.rows("noise"):
        print(f"  {band['family']:22} {band['accuracies']}  range {band['accuracy_range']:.4f}"
              f"  sd {band['accuracy_sd']:.4f} [{band['sd_low']:.4f}, {band['sd_high']:.4f}]"
              f"  changed {band['n_changed']}/{band['n_compared']}")
    strict = rows(r, "noise", family="llm|gpt-5|strict|t=None")[0]
    # counted directly: strict credits 47, 48, 49 of 143 -> range 2/143, sd 1/143
    assert strict["accuracy_range"] == pytest.approx(2 / 143)
    assert strict["accuracy_sd"] == pytest.approx(1 / 143)
    changed = sum(len({counted[f"gpt-5|strict|r{i}"][q] for i in range(3)}) > 1
                  for q in range(143))
    assert strict["n_changed"] == changed
    print("agreement with the human labels:")
    for row in rows(r, "agreement", judge_2="human"):
        print(f"  {row['judge_1']:16} n {row['n']} (ambiguous left out {row['n_ambiguous']})"
              f"  agreement {row['agreement']:.3f}  kappa {row['kappa']}")
    human = rows(r, "agreement", judge_1="gpt-5|mem0|r0", judge_2="human")[0]
    assert (human["n"], human["n_ambiguous"]) == (57 - 14, 14)  # 14 AMBIGUOUS labels
    print("variance components (prompt x run):")
    for x in r.rows("variance"):
        print(f"  {x['level']:8} {x['component']:30} {x['variance']:.6f} share "
              f"{x['share']:.4f} [{x['share_low']:.4f}, {x['share_high']:.4f}]")
    comp = {(x["level"], x["component"]): x for x in r.rows("variance")}
    assert comp[("score", "run")]["share"] < 0.01 < comp[("score", "prompt")]["share"]


def test_comparisons_a_configuration_cannot_make_are_counted_in_the_notes() -> None:
    """A configuration that judged only system A makes no A-vs-B row, and says so."""
    from tiap.answers import Answer, AnswerSet, AnswerVerdict, JudgeConfig, analyze_answers

    configs = {j: JudgeConfig(j, model="m", prompt=j) for j in ("P", "Q")}
    answers = AnswerSet(tuple(
        Answer("locomo", s, f"q{i}", "x", verdicts=tuple(
            AnswerVerdict(j, "correct") for j in (("P", "Q") if s == "A" else ("P",))))
        for s in "AB" for i in range(4)), configs)
    result = analyze_answers(answers, resamples=100)
    assert [r["judge"] for r in result.rows("paired_tests")] == ["P"]
    assert result.rows("judge_flips") == []
    assert any("paired tests: 1 comparison(s) not made" in n and "A vs B under Q" in n
               for n in result.notes)
    assert any("judge flips: 1 comparison(s) not made" in n for n in result.notes)
