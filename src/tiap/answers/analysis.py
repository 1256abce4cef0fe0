"""What moves the score: accuracy, agreement, paired tests, judge flips, variance, noise.

:func:`analyze_answers` reads the verdicts of an :class:`~tiap.answers.records.AnswerSet`
and returns seven tables (:data:`COLUMNS`), each per dataset:

- ``accuracy``: per system, judge configuration and category (``all`` for every one): the
  answers, how many the configuration scored (``correct`` or ``wrong``), how many it left
  without a usable verdict (``null``), not judged, or, for human labels, ``ambiguous``; the
  accuracy over the scored answers with its Wilson 95% interval
  (``statsmodels.stats.proportion.proportion_confint``); and the accuracy over *all*
  answers, exact when every answer is scored, else only bounded: ``[correct / n, (correct
  + unscored) / n]`` (every unscored answer wrong .. every one right).
- ``agreement``: per pair of configurations on the answers both scored: percent agreement
  and Cohen's κ with its 95% interval (:func:`tiap.audit.agreement.cohen_kappa_interval`).
  Human labels are a configuration of kind ``human``: their ``ambiguous`` answers are left
  out and counted (``n_ambiguous``).
- ``paired_tests``: per configuration and pair of systems, on the queries both systems
  answered and the configuration scored: the accuracy gap (A minus B), tested by the
  sign-flip test of :mod:`tiap.sensitivity.stats` with one family per dataset (every pair
  x configuration, Holm by default), its interval, ``d_z``, the gap the queries could detect
  (``mde``) and whether it is *practical* (``|gap| >= min_effect`` and ``|d_z| >= min_dz``).
- ``judge_flips``: per pair of systems and pair of configurations, on the queries both
  systems answered and both configurations scored: a sign change of the gap, reported as
  :mod:`tiap.sensitivity.flips` reports target flips (significant: both gaps significant
  after correction, one family per dataset; practical; headline = both).
- ``rankings``: the systems ordered by accuracy under each configuration.
- ``variance``: the variance components (:mod:`tiap.answers.variance`) of per-question
  correctness (``level`` ``question``: question x system x configuration factors) and of
  system scores (``level`` ``score``: the accuracies of every system x configuration
  cell), with bootstrap intervals over questions, and each factor's share.
- ``noise``: per configuration family (one kind, model, prompt, decoding and settings;
  its configurations differ in ``run`` only) and system: the accuracy of each run, their
  range and SD with an interval, and the share of answers whose verdict changed between
  runs; ``not determined`` with one run.

``min_effect`` (default 0.02, two accuracy points): under one prompt, choices that should
not matter move an accuracy by about a point (the kit: Mem0's 1,539 answers under Mem0's
prompt score 91.0% with gpt-5 and 91.9% with gpt-4o; three reruns of the strict prompt on
the control slice differ by an SD of 0.7 points), so a gap under two points is within what
those choices move together and is never headlined.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.answers.files import ANSWERS_FILE, load_answers
from tiap.answers.records import AMBIGUOUS, AnswerSet, JudgeConfig
from tiap.answers.variance import component_names, crossed_components
from tiap.audit.agreement import cohen_kappa, cohen_kappa_interval
from tiap.errors import TiapError, require
from tiap.io import output_folder, sha256_file
from tiap.provenance import Manifest, input_entry
from tiap.sensitivity.analyze import Table, write_table
from tiap.sensitivity.flips import (
    DEFAULT_MIN_DZ,
    dz_floor,
    is_flip,
    is_practical,
    winner,
)
from tiap.sensitivity.stability import mde, wilson_interval
from tiap.sensitivity.stats import (
    DEFAULT_ALPHA,
    DEFAULT_CORRECTION,
    DEFAULT_RESAMPLES,
    Gap,
    comparison_rng,
    evaluate_gaps,
)

__all__ = [
    "COLUMNS",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_MIN_EFFECT",
    "AnswerAnalysis",
    "analyze_answers",
    "write_answer_analysis",
]

#: The practical threshold of a gap in accuracy points (module docstring).
DEFAULT_MIN_EFFECT = 0.02
#: Bootstrap resamples of questions for the variance components' intervals.
DEFAULT_BOOTSTRAP = 1000
ALL = "all"
NOT_DETERMINED = "not determined"

COLUMNS: dict[str, tuple[str, ...]] = {
    "accuracy": (
        "dataset", "system", "judge", "category", "n_answers", "n_scored", "n_correct",
        "n_null", "n_ambiguous", "n_unjudged", "accuracy", "wilson_low", "wilson_high",
        "accuracy_all", "accuracy_all_lower", "accuracy_all_upper"),
    "agreement": (
        "dataset", "judge_1", "judge_2", "kind_1", "kind_2", "n", "n_ambiguous",
        "agreement", "kappa", "kappa_low", "kappa_high"),
    "paired_tests": (
        "dataset", "judge", "system_a", "system_b", "n_shared", "accuracy_a", "accuracy_b",
        "gap", "ci_low", "ci_high", "p", "p_adjusted", "significant", "effect", "moved",
        "mde", "min_effect", "practical", "winner"),
    "judge_flips": (
        "dataset", "system_a", "system_b", "judge_1", "judge_2", "n_shared", "gap_1",
        "gap_2", "ci_1_low", "ci_1_high", "ci_2_low", "ci_2_high", "p_1", "p_2",
        "p_1_adjusted", "p_2_adjusted", "effect_1", "effect_2", "moved_1", "moved_2",
        "mde_1", "mde_2", "winner_1", "winner_2", "flip", "significant_flip", "practical",
        "headline"),
    "rankings": (
        "dataset", "judge", "rank", "system", "accuracy", "wilson_low", "wilson_high",
        "n_scored"),
    "variance": (
        "dataset", "level", "component", "df", "mean_square", "variance", "variance_raw",
        "variance_low", "variance_high", "share", "share_low", "share_high", "n_queries",
        "n_left_out", "levels"),
    "noise": (
        "dataset", "family", "system", "n_runs", "runs", "accuracies", "accuracy_min",
        "accuracy_max", "accuracy_range", "accuracy_sd", "sd_low", "sd_high", "n_compared",
        "n_changed", "changed_share", "changed_low", "changed_high", "status"),
}


@dataclass(frozen=True)
class AnswerAnalysis:
    """The tables of :func:`analyze_answers` (rows as dicts, columns in :data:`COLUMNS`),
    the options that made them and notes (what could not be computed, and why).

    >>> from tiap.answers import Answer, AnswerSet, AnswerVerdict, JudgeConfig
    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris",
    ...                       verdicts=(AnswerVerdict("strict", "correct"),)),),
    ...               {"strict": JudgeConfig("strict")})
    >>> result = analyze_answers(s, resamples=100)
    >>> [(r["system"], r["accuracy"], r["n_scored"]) for r in result.rows("accuracy")]
    [('A', 1.0, 1)]
    """

    tables: Mapping[str, list[dict[str, Any]]]
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: the judge configurations of the verdicts analysed: name -> its fields
    judges: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def rows(self, name: str) -> list[dict[str, Any]]:
        """The rows of table ``name`` (one of :data:`COLUMNS`)."""
        if name not in COLUMNS:
            raise TiapError(f"no table {name!r}; the tables are {', '.join(COLUMNS)}",
                            code="usage")
        return self.tables[name]

    def to_frame(self, name: str) -> Any:
        """Table ``name`` as a pandas DataFrame (the ``frames`` extra)."""
        pd = require("pandas", "frames")
        return pd.DataFrame(self.rows(name), columns=list(COLUMNS[name]))


# ------------------------------------------------------------------------------------------
# the data of one dataset as arrays


@dataclass(frozen=True, eq=False)
class _Data:
    dataset: str
    queries: list[str]
    systems: list[str]
    judges: list[str]
    answered: NDArray[np.bool_]  # (systems, queries)
    score: NDArray[np.float64]  # (judges, systems, queries): 1, 0, NaN (no score)
    judged: NDArray[np.bool_]  # (judges, systems, queries): a verdict, whatever its label
    ambiguous: NDArray[np.bool_]  # (judges, systems, queries)
    category: NDArray[np.object_]  # (systems, queries)


def _data(answers: AnswerSet, dataset: str) -> _Data:
    own = [a for a in answers if a.dataset == dataset]
    queries = list(dict.fromkeys(a.query_id for a in own))
    systems = list(dict.fromkeys(a.system for a in own))
    judges = list(dict.fromkeys(v.judge for a in own for v in a.verdicts))
    qi = {q: i for i, q in enumerate(queries)}
    si = {s: i for i, s in enumerate(systems)}
    ji = {j: i for i, j in enumerate(judges)}
    shape = (len(judges), len(systems), len(queries))
    answered = np.zeros(shape[1:], bool)
    score = np.full(shape, np.nan)
    judged = np.zeros(shape, bool)
    ambiguous = np.zeros(shape, bool)
    category = np.full(shape[1:], None, object)
    for a in own:
        s, q = si[a.system], qi[a.query_id]
        answered[s, q] = True
        category[s, q] = a.category
        for v in a.verdicts:
            j = ji[v.judge]
            judged[j, s, q] = True
            if v.score is not None:
                score[j, s, q] = v.score
            ambiguous[j, s, q] = v.label == AMBIGUOUS
    return _Data(dataset, queries, systems, judges, answered, score, judged, ambiguous,
                 category)


def _f(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


# ------------------------------------------------------------------------------------------
# 1. accuracy, rankings


def _accuracy_rows(d: _Data, alpha: float) -> list[dict[str, Any]]:
    rows = []
    for s, system in enumerate(d.systems):
        cats = [c for c in dict.fromkeys(d.category[s][d.answered[s]]) if c is not None]
        for j, judge in enumerate(d.judges):
            if not d.judged[j, s].any():
                continue
            for cat in (ALL, *sorted(cats)):
                mask = d.answered[s] if cat == ALL else d.answered[s] & (d.category[s] == cat)
                sc = d.score[j, s][mask]
                n = int(mask.sum())
                scored = int((~np.isnan(sc)).sum())
                correct = int((sc == 1).sum())
                amb = int(d.ambiguous[j, s][mask].sum())
                judged = int(d.judged[j, s][mask].sum())
                lo, hi = wilson_interval(correct, scored, alpha)
                rows.append({
                    "dataset": d.dataset, "system": system, "judge": judge, "category": cat,
                    "n_answers": n, "n_scored": scored, "n_correct": correct,
                    "n_null": judged - scored - amb, "n_ambiguous": amb,
                    "n_unjudged": n - judged,
                    "accuracy": correct / scored if scored else None,
                    "wilson_low": lo, "wilson_high": hi,
                    "accuracy_all": correct / n if n and scored == n else None,
                    "accuracy_all_lower": correct / n if n else None,
                    "accuracy_all_upper": (correct + n - scored) / n if n else None,
                })
    return rows


def _ranking_rows(d: _Data, accuracy: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for judge in d.judges:
        got = [r for r in accuracy if r["judge"] == judge and r["category"] == ALL
               and r["accuracy"] is not None]
        got.sort(key=lambda r: (-r["accuracy"], r["system"]))
        for r in got:  # competition ranking: a tie shares the better rank
            rank = 1 + sum(1 for o in got if o["accuracy"] > r["accuracy"])
            rows.append({"dataset": d.dataset, "judge": judge, "rank": rank,
                         "system": r["system"], "accuracy": r["accuracy"],
                         "wilson_low": r["wilson_low"], "wilson_high": r["wilson_high"],
                         "n_scored": r["n_scored"]})
    return rows


# ------------------------------------------------------------------------------------------
# 2. agreement


def _agreement_rows(d: _Data, configs: Mapping[str, JudgeConfig], human: str
                    ) -> list[dict[str, Any]]:
    rows = []
    for j1, j2 in combinations(range(len(d.judges)), 2):
        x, y = d.score[j1].ravel(), d.score[j2].ravel()
        both = ~np.isnan(x) & ~np.isnan(y)
        amb1, amb2 = d.ambiguous[j1].ravel(), d.ambiguous[j2].ravel()
        k1, k2 = configs[d.judges[j1]].kind, configs[d.judges[j2]].kind
        n_amb = int(((amb1 & ~np.isnan(y)) | (amb2 & ~np.isnan(x))).sum()) \
            if human in (k1, k2) else 0
        a, b = x[both].astype(np.int64), y[both].astype(np.int64)
        n = int(both.sum())
        kappa = cohen_kappa(a, b, 2) if n else math.nan
        lo, hi = cohen_kappa_interval(a, b, 2) if n else (math.nan, math.nan)
        rows.append({"dataset": d.dataset, "judge_1": d.judges[j1], "judge_2": d.judges[j2],
                     "kind_1": k1, "kind_2": k2, "n": n, "n_ambiguous": n_amb,
                     "agreement": float((a == b).mean()) if n else None,
                     "kappa": _f(kappa), "kappa_low": _f(lo), "kappa_high": _f(hi)})
    return rows


# ------------------------------------------------------------------------------------------
# 3. and 4. paired tests and judge flips


def _scored(d: _Data, j: int, s: int) -> NDArray[np.bool_]:
    return d.answered[s] & ~np.isnan(d.score[j, s])


def _gap(d: _Data, family: str, j: int, a: int, b: int, mask: NDArray[np.bool_]) -> Gap:
    return Gap((d.dataset, family), mask, d.score[j, a][mask] - d.score[j, b][mask])


def _note_skipped(d: _Data, table: str, skipped: list[str], notes: list[str]) -> None:
    """A note counting the comparisons a table leaves out because a configuration judged
    only one of the two systems (never a row with nothing to compare, never silence)."""
    if skipped:
        notes.append(f"{d.dataset}: {table}: {len(skipped)} comparison(s) not made, a "
                     f"configuration judged only one of the two systems (first: "
                     f"{skipped[0]})")


def _paired_rows(d: _Data, *, seed: int, resamples: int, alpha: float, correction: str,
                 min_effect: float, min_dz: float, notes: list[str]) -> list[dict[str, Any]]:
    gaps, meta, skipped = [], [], []
    for j in range(len(d.judges)):
        for a, b in combinations(range(len(d.systems)), 2):
            if not (d.judged[j, a].any() and d.judged[j, b].any()):
                skipped.append(f"{d.systems[a]} vs {d.systems[b]} under {d.judges[j]}")
                continue  # the configuration judged only one of the two
            mask = _scored(d, j, a) & _scored(d, j, b)
            gaps.append(_gap(d, "paired_tests", j, a, b, mask))
            meta.append((j, a, b, mask))
    _note_skipped(d, "paired tests", skipped, notes)
    results = evaluate_gaps(gaps, seed=seed, dataset=d.dataset, resamples=resamples,
                            alpha=alpha, correction=correction, notes=notes)
    rows = []
    for g, r, (j, a, b, mask) in zip(gaps, results, meta, strict=True):
        pa, pb = d.score[j, a][mask], d.score[j, b][mask]
        practical = bool(r.n and is_practical(r, min_effect, min_dz, dz_floor(g, r)))
        rows.append({
            "dataset": d.dataset, "judge": d.judges[j], "system_a": d.systems[a],
            "system_b": d.systems[b], "n_shared": r.n,
            "accuracy_a": float(pa.mean()) if r.n else None,
            "accuracy_b": float(pb.mean()) if r.n else None,
            "gap": r.gap, "ci_low": r.ci_low, "ci_high": r.ci_high, "p": r.p,
            "p_adjusted": r.p_adjusted, "significant": r.significant, "effect": r.effect,
            "moved": r.moved, "mde": mde(r.sd, r.n, alpha), "min_effect": min_effect,
            "practical": practical,
            "winner": winner(r.gap, d.systems[a], d.systems[b]) if r.n else "",
        })
    return rows


def _flip_rows(d: _Data, *, seed: int, resamples: int, alpha: float, correction: str,
               min_effect: float, min_dz: float, notes: list[str]) -> list[dict[str, Any]]:
    gaps, meta, skipped = [], [], []
    for a, b in combinations(range(len(d.systems)), 2):
        for j1, j2 in combinations(range(len(d.judges)), 2):
            if not all(d.judged[j, s].any() for j in (j1, j2) for s in (a, b)):
                skipped.append(f"{d.systems[a]} vs {d.systems[b]} under {d.judges[j1]} and "
                               f"{d.judges[j2]}")
                continue  # a configuration judged only one of the two
            mask = (_scored(d, j1, a) & _scored(d, j1, b) & _scored(d, j2, a)
                    & _scored(d, j2, b))
            gaps += [_gap(d, "judge_flips", j1, a, b, mask),
                     _gap(d, "judge_flips", j2, a, b, mask)]
            meta.append((a, b, j1, j2))
    _note_skipped(d, "judge flips", skipped, notes)
    results = evaluate_gaps(gaps, seed=seed, dataset=d.dataset, resamples=resamples,
                            alpha=alpha, correction=correction, notes=notes)
    rows = []
    for i, (a, b, j1, j2) in enumerate(meta):
        (g1, g2), (r1, r2) = gaps[2 * i:2 * i + 2], results[2 * i:2 * i + 2]
        sa, sb = d.systems[a], d.systems[b]
        flip = is_flip(r1.gap, r2.gap)
        practical = flip and all(is_practical(r, min_effect, min_dz, dz_floor(g, r))
                                 for g, r in ((g1, r1), (g2, r2)))
        significant = flip and r1.significant and r2.significant
        rows.append({
            "dataset": d.dataset, "system_a": sa, "system_b": sb,
            "judge_1": d.judges[j1], "judge_2": d.judges[j2], "n_shared": r1.n,
            "gap_1": r1.gap, "gap_2": r2.gap,
            "ci_1_low": r1.ci_low, "ci_1_high": r1.ci_high,
            "ci_2_low": r2.ci_low, "ci_2_high": r2.ci_high,
            "p_1": r1.p, "p_2": r2.p, "p_1_adjusted": r1.p_adjusted,
            "p_2_adjusted": r2.p_adjusted, "effect_1": r1.effect, "effect_2": r2.effect,
            "moved_1": r1.moved, "moved_2": r2.moved,
            "mde_1": mde(r1.sd, r1.n, alpha), "mde_2": mde(r2.sd, r2.n, alpha),
            "winner_1": winner(r1.gap, sa, sb) if r1.n else "",
            "winner_2": winner(r2.gap, sa, sb) if r2.n else "",
            "flip": flip, "significant_flip": significant, "practical": practical,
            "headline": significant and practical,
        })
    return rows


# ------------------------------------------------------------------------------------------
# 5. variance components


def _cell_levels(d: _Data, configs: Mapping[str, JudgeConfig], judges: list[int],
                 system_factors: Mapping[str, Mapping[str, str]] | None
                 ) -> tuple[list[str], list[list[str]], dict[tuple[int, int], tuple[int, ...]]
                            ] | str:
    """The crossed factors of the (system, configuration) cells: their names, levels and
    each cell's index; a reason instead when the cells do not form a full grid."""
    cells: dict[tuple[int, int], dict[str, str]] = {}
    for s, system in enumerate(d.systems):
        side = dict(system_factors[system]) if system_factors else {"system": system}
        for j in judges:
            f = configs[d.judges[j]].factors()
            cells[(s, j)] = {**side, **{k: str(f[k]) for k in ("prompt", "model",
                                                               "temperature", "run")}}
    names = list(next(iter(cells.values())))
    levels = [list(dict.fromkeys(c[n] for c in cells.values())) for n in names]
    keep = [i for i, lv in enumerate(levels) if len(lv) > 1]
    names, levels = [names[i] for i in keep], [levels[i] for i in keep]
    index = {cell: tuple(levels[k].index(v[names[k]]) for k in range(len(names)))
             for cell, v in cells.items()}
    if len(set(index.values())) != len(index):
        same = [c for c in index if list(index.values()).count(index[c]) > 1][:2]
        what = [f"{d.systems[s]} under {d.judges[j]}" for s, j in same]
        return (f"the cells {' and '.join(what)} have the same factor levels (a factor "
                "the decomposition does not know separates them)")
    if len(index) != int(np.prod([len(lv) for lv in levels])):
        return (f"the {len(index)} system x configuration cells do not cross "
                f"{' x '.join(f'{n} ({len(lv)})' for n, lv in zip(names, levels, strict=True))}"
                "; select configurations that do (AnswerSet.select)")
    return names, levels, index


def _variance_rows(d: _Data, configs: Mapping[str, JudgeConfig], *, human: str, seed: int,
                   boot: int, alpha: float, system_factors: Mapping[str, Mapping[str, str]]
                   | None, notes: list[str]) -> list[dict[str, Any]]:
    judges = [j for j, name in enumerate(d.judges) if configs[name].kind != human]
    if not judges:
        return []
    grid = _cell_levels(d, configs, judges, system_factors)
    if isinstance(grid, str):
        notes.append(f"{d.dataset}: variance decomposition not determined: {grid}")
        return []
    names, levels, index = grid
    if not names:
        notes.append(f"{d.dataset}: variance decomposition not determined: one system and "
                     "one configuration, no factor varies")
        return []
    complete = np.ones(len(d.queries), bool)
    for s, j in index:
        complete &= _scored(d, j, s)
    n_q = int(complete.sum())
    left_out = len(d.queries) - n_q
    if n_q < 2:
        notes.append(f"{d.dataset}: variance decomposition not determined: {n_q} question(s) "
                     "scored in every system x configuration cell")
        return []
    y = np.zeros((n_q, *[len(lv) for lv in levels]), np.int64)
    for (s, j), at in index.items():
        y[(slice(None), *at)] = d.score[j, s][complete].astype(np.int64)
    if left_out:
        notes.append(f"{d.dataset}: the variance decomposition uses the {n_q} questions scored "
                     f"in every system x configuration cell; {left_out} left out")
    level_text = "; ".join(f"{n}: {', '.join(lv)}" for n, lv in zip(names, levels, strict=True))
    rows: list[dict[str, Any]] = []
    for level, axes_names in (("question", ["query", *names]), ("score", names)):
        def comps(arr: NDArray[np.int64], level: str = level) -> list[Any]:
            return (crossed_components(arr) if level == "question"
                    else crossed_components(arr.sum(axis=0), scale=arr.shape[0]))
        point = comps(y)
        # one resample of the questions at a time (memory: one table, not boot of them);
        # both levels see the same resamples
        draws = comparison_rng(seed, d.dataset, "variance")
        boots = np.array([[c.variance for c in comps(y[draws.integers(0, n_q, n_q)])]
                          for _ in range(boot)])
        totals = boots.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = np.where(totals > 0, boots / np.where(totals > 0, totals, 1), np.nan)
        total = sum(c.variance for c in point)
        q = (100 * alpha / 2, 100 * (1 - alpha / 2))
        for i, (c, name) in enumerate(zip(point, component_names(axes_names), strict=True)):
            v_lo, v_hi = np.percentile(boots[:, i], q)
            ok = shares[:, i][~np.isnan(shares[:, i])]
            s_lo, s_hi = np.percentile(ok, q) if ok.size else (math.nan, math.nan)
            rows.append({
                "dataset": d.dataset, "level": level, "component": name, "df": c.df,
                "mean_square": c.mean_square, "variance": c.variance,
                "variance_raw": c.variance_raw, "variance_low": float(v_lo),
                "variance_high": float(v_hi), "share": c.variance / total if total else None,
                "share_low": _f(float(s_lo)), "share_high": _f(float(s_hi)),
                "n_queries": n_q, "n_left_out": left_out, "levels": level_text,
            })
    return rows


# ------------------------------------------------------------------------------------------
# 6. run-to-run noise


def _family(c: JudgeConfig) -> tuple[Any, ...]:
    return (c.kind, c.model, c.prompt, c.prompt_sha256, c.temperature,
            tuple(sorted((k, repr(v)) for k, v in c.settings.items())))


def _noise_rows(d: _Data, configs: Mapping[str, JudgeConfig], human: str, alpha: float
                ) -> list[dict[str, Any]]:
    from scipy.stats import chi2

    families: dict[tuple[Any, ...], list[int]] = {}
    for j, name in enumerate(d.judges):
        if configs[name].kind != human:
            families.setdefault(_family(configs[name]), []).append(j)
    rows = []
    for key, members in families.items():
        members.sort(key=lambda j: (configs[d.judges[j]].run, d.judges[j]))
        kind, model, prompt, _, temp, _ = key
        label = "|".join(str(x) for x in (kind, model, prompt, f"t={temp}"))
        runs = ",".join(str(configs[d.judges[j]].run) for j in members)
        for s, system in enumerate(d.systems):
            row: dict[str, Any] = {"dataset": d.dataset, "family": label, "system": system,
                                   "n_runs": len(members), "runs": runs}
            accs, exact = [], []  # exact: as fractions, so equal runs have an SD of 0
            for j in members:
                ok = _scored(d, j, s)
                n_ok = int(ok.sum())
                exact.append(Fraction(int(d.score[j, s][ok].sum()), n_ok) if n_ok else None)
                accs.append(float(exact[-1]) if n_ok else math.nan)
            row["accuracies"] = ";".join("" if math.isnan(a) else repr(a) for a in accs)
            if len(members) < 2:
                rows.append({**row, "status": f"{NOT_DETERMINED}: one run"})
                continue
            every = np.ones(len(d.queries), bool)
            for j in members:
                every &= _scored(d, j, s)
            verdicts = d.score[members][:, s][:, every]
            changed = int((verdicts.min(axis=0) != verdicts.max(axis=0)).sum())
            n_cmp = int(every.sum())
            acc = np.array(accs)
            k = len(members)
            sd = (math.nan if None in exact
                  else float(statistics.stdev(x for x in exact if x is not None)))
            lo_c, hi_c = wilson_interval(changed, n_cmp, alpha)
            rows.append({
                **row, "accuracy_min": _f(float(acc.min())), "accuracy_max": _f(float(acc.max())),
                "accuracy_range": _f(float(acc.max() - acc.min())), "accuracy_sd": _f(sd),
                # the chi-square interval of an SD of k normal values (k - 1 df)
                "sd_low": _f(sd * math.sqrt((k - 1) / chi2.ppf(1 - alpha / 2, k - 1))),
                "sd_high": _f(sd * math.sqrt((k - 1) / chi2.ppf(alpha / 2, k - 1))),
                "n_compared": n_cmp, "n_changed": changed,
                "changed_share": changed / n_cmp if n_cmp else None,
                "changed_low": lo_c, "changed_high": hi_c, "status": "",
            })
    return rows


# ------------------------------------------------------------------------------------------
# the analysis


def analyze_answers(
    answers: AnswerSet,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
    min_effect: float = DEFAULT_MIN_EFFECT,
    min_dz: float = DEFAULT_MIN_DZ,
    human: str = "human",
    bootstrap: int = DEFAULT_BOOTSTRAP,
    system_factors: Mapping[str, Mapping[str, str]] | None = None,
) -> AnswerAnalysis:
    """Every table of the module docstring, for every dataset of ``answers``.

    ``resamples``, ``alpha``, ``correction`` and ``seed`` are the sensitivity stage's
    (:func:`tiap.sensitivity.stats.evaluate_gaps`); ``min_effect`` (accuracy points) and
    ``min_dz`` make a gap practical; configurations of kind ``human`` are the reference
    labels (left out of the variance decomposition and the noise band); ``bootstrap``
    resamples of questions give the variance components' intervals; ``system_factors``
    splits each system name into crossed factors for the decomposition, e.g. ``{"mem0@raw":
    {"system": "mem0", "target": "raw"}, ...}`` (every system, the same factor names).

    System A right on 8 of 10 questions under prompt P and 5 under Q; B the reverse:

    >>> from tiap.answers import Answer, AnswerSet, AnswerVerdict, JudgeConfig
    >>> cfg = {p: JudgeConfig(p, model="m", prompt=p) for p in ("P", "Q")}
    >>> right = {("A", "P"): 8, ("A", "Q"): 5, ("B", "P"): 5, ("B", "Q"): 8}
    >>> s = AnswerSet(tuple(Answer("locomo", sy, f"q{i}", "x", verdicts=tuple(
    ...     AnswerVerdict(p, "correct" if i < right[sy, p] else "wrong") for p in "PQ"))
    ...     for sy in "AB" for i in range(10)), cfg)
    >>> r = analyze_answers(s, resamples=1000)
    >>> [(x["judge"], x["rank"], x["system"], x["accuracy"]) for x in r.rows("rankings")]
    [('P', 1, 'A', 0.8), ('P', 2, 'B', 0.5), ('Q', 1, 'B', 0.8), ('Q', 2, 'A', 0.5)]
    >>> [(f["gap_1"], f["gap_2"], f["flip"]) for f in r.rows("judge_flips")]
    [(0.3, -0.3, True)]
    """
    if len(answers) == 0:
        raise TiapError("the answer set is empty: nothing to analyze", code="invalid-value")
    for name, value in (("min_effect", min_effect), ("min_dz", min_dz)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise TiapError(f"{name} must be a number >= 0, got {value!r}", code="usage")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
        raise TiapError(f"bootstrap must be an integer >= 1, got {bootstrap!r}", code="usage")
    if not 0 < alpha < 1:
        raise TiapError(f"alpha must be between 0 and 1, got {alpha!r}", code="usage")
    if system_factors is not None:
        _check_system_factors(answers, system_factors)
    notes: list[str] = []
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in COLUMNS}
    test = {"seed": seed, "resamples": resamples, "alpha": alpha, "correction": correction,
            "min_effect": min_effect, "min_dz": min_dz, "notes": notes}
    for dataset in answers.datasets:
        d = _data(answers, dataset)
        acc = _accuracy_rows(d, alpha)
        tables["accuracy"] += acc
        tables["rankings"] += _ranking_rows(d, acc)
        tables["agreement"] += _agreement_rows(d, answers.configs, human)
        tables["paired_tests"] += _paired_rows(d, **test)  # type: ignore[arg-type]
        tables["judge_flips"] += _flip_rows(d, **test)  # type: ignore[arg-type]
        tables["variance"] += _variance_rows(d, answers.configs, human=human, seed=seed,
                                             boot=bootstrap, alpha=alpha,
                                             system_factors=system_factors, notes=notes)
        tables["noise"] += _noise_rows(d, answers.configs, human, alpha)
    tables = {name: [{c: r.get(c) for c in COLUMNS[name]} for r in rows]
              for name, rows in tables.items()}  # every row has every column
    options = {"seed": seed, "resamples": resamples, "alpha": alpha,
               "correction": correction, "min_effect": min_effect, "min_dz": min_dz,
               "human": human, "bootstrap": bootstrap,
               "system_factors": ({k: dict(v) for k, v in system_factors.items()}
                                  if system_factors else None)}
    judges = {k: answers.configs[k].to_json() for k in answers.judges}
    return AnswerAnalysis(tables, options, tuple(notes), judges)


def _check_system_factors(answers: AnswerSet,
                          system_factors: Mapping[str, Mapping[str, str]]) -> None:
    missing = [s for s in answers.systems if s not in system_factors]
    if missing:
        raise TiapError(f"system_factors names no factors for system(s) "
                        f"{', '.join(map(repr, missing))}", code="usage")
    keys = {tuple(system_factors[s]) for s in answers.systems}
    if len(keys) != 1 or not next(iter(keys)):
        raise TiapError("system_factors must give every system the same factor names, at "
                        f"least one; got {sorted(keys)}", code="usage")
    clash = set(next(iter(keys))) & {"query", "prompt", "model", "temperature", "run"}
    if clash:
        raise TiapError(f"system_factors may not name a judge factor or the query: "
                        f"{sorted(clash)}", code="usage")


def write_answer_analysis(result: AnswerAnalysis, out: str | Path, *,
                          inputs: Mapping[str, str | Path] | None = None,
                          force: bool = False) -> dict[str, Any]:
    """Write every table as ``<name>.csv`` and ``manifest.json`` into ``out`` (replaced
    whole, atomically: :func:`tiap.io.output_folder`); the manifest has no timestamp, so a
    rerun with the same seed writes the same bytes. ``inputs``: name -> path of each file
    the answers were read from (recorded with its sha256). The manifest names every judge
    configuration analysed (``judges``). Returns the manifest.

    >>> from tiap.answers import Answer, AnswerSet, AnswerVerdict, JudgeConfig
    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris",
    ...                       verdicts=(AnswerVerdict("strict", "correct"),)),),
    ...               {"strict": JudgeConfig("strict")})
    >>> manifest = write_answer_analysis(analyze_answers(s, resamples=100), "analysis")
    >>> manifest["outputs"]["accuracy.csv"]["rows"], sorted(p.name for p in
    ...                                                   Path("analysis").iterdir())[:3]
    (1, ['accuracy.csv', 'agreement.csv', 'judge_flips.csv'])
    """
    with output_folder(out, "answers analysis", force=force, known=("*.csv",)) as tmp:
        outputs: dict[str, dict[str, Any]] = {}
        for name, columns in COLUMNS.items():
            write_table(tmp / f"{name}.csv", Table(name, columns, result.rows(name)))
            outputs[f"{name}.csv"] = {"rows": len(result.rows(name)),
                                      "sha256": sha256_file(tmp / f"{name}.csv")}
        entries = {k: input_entry(p) for k, p in (inputs or {}).items()}
        man = Manifest.new("answers analysis", inputs=entries, options=dict(result.options),
                           extra={"notes": list(result.notes),
                                  "judges": {k: dict(v) for k, v in result.judges.items()}},
                           outputs=outputs)
        man.write(tmp / "manifest.json")
    return man.to_json()


def analyze_files(path: str | Path, out: str | Path, *, systems: Sequence[str] | None = None,
                  judges: Sequence[str] | None = None, force: bool = False,
                  **options: Any) -> tuple[AnswerAnalysis, dict[str, Any]]:
    """``tiap answers analyze PATH --out OUT``: the answers of ``path`` (an ``answers.jsonl``
    or a folder of ``tiap answers import``, ``judge`` or ``generate``; only ``systems`` and
    ``judges`` when given: :meth:`AnswerSet.select`), analysed
    (:func:`analyze_answers`, ``options`` its keyword arguments) and written to ``out``
    (:func:`write_answer_analysis`, the answers file recorded as its input).

    >>> _ = Path("a.jsonl").write_text('{"dataset": "locomo", "system": "A", "query_id": '
    ...     '"q1", "answer": "Paris", "verdicts": [{"judge": "f1", "label": "correct"}]}\\n')
    >>> result, manifest = analyze_files("a.jsonl", "analysis", resamples=100)
    >>> result.rows("accuracy")[0]["accuracy"], list(manifest["inputs"])
    (1.0, ['answers'])
    """
    answers = load_answers(path)
    if systems is not None or judges is not None:
        answers = answers.select(systems=systems, judges=judges)
    p = Path(path)
    result = analyze_answers(answers, **options)
    result = dataclasses.replace(result, options={**result.options, "systems": systems,
                                                  "judges": judges})
    man = write_answer_analysis(result, out, force=force,
                                inputs={"answers": p / ANSWERS_FILE if p.is_dir() else p})
    return result, man
