"""Agreement between judges (and with human labels): kernels and the report.

Ratings are an integer matrix ``[N cases, R raters]`` of category codes, ``-1`` where a
rater gave no label (``unscored``, or the case is not in its file). Categories are the
three semantic labels (``supports`` = 0, ``partial`` = 1, ``does_not_support`` = 2) or their
binary collapse (``relevant`` = supports + partial, ``not_relevant`` = does_not_support).

Kernels (pure functions, no I/O):

- :func:`percent_agreement`: the share of cases two raters label alike.
- :func:`cohen_kappa` (Cohen 1960): ``κ = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed
  agreement and ``p_e = Σ_c p_1(c) p_2(c)`` the agreement expected from the two raters'
  own label frequencies; undefined (NaN) when ``p_e = 1``.
- :func:`cohen_kappa_interval`: the large-sample interval ``κ ± z_{1-α/2} SE(κ)`` with the
  variance of Fleiss, Cohen & Everitt (1969, "Large sample standard errors of kappa and
  weighted kappa", Psychological Bulletin 72(5)), from the joint proportions ``p_ij``, the
  margins ``p_i.``, ``p_.j`` and ``p_e``: ``n (1 - p_e)² Var(κ) = Σ_i p_ii (1 - (p_i. + p_.i)
  (1 - κ))² + (1 - κ)² Σ_{i≠j} p_ij (p_.i + p_j.)² - (κ - p_e (1 - κ))²`` (the ``kappa_low``
  / ``kappa_upp`` of ``statsmodels.stats.inter_rater.cohens_kappa``; the tests hold them
  equal). Every ``cohen_kappa`` column of the report has its ``cohen_kappa_low`` /
  ``cohen_kappa_high`` at 95%. With n = 120 judgments it is about ±0.1 wide. None when a
  rater gives one label only (κ is 0 there and the variance degenerates to 0).
- :func:`fleiss_kappa` (Fleiss 1971), from per-case category counts ``n_ic`` with ``m``
  raters per case: ``P_i = (Σ_c n_ic² - m) / (m (m - 1))``, ``P̄ = mean P_i``,
  ``p_c = Σ_i n_ic / (N m)``, ``P_e = Σ_c p_c²``, ``κ = (P̄ - P_e) / (1 - P_e)``. The report
  computes it with ``statsmodels.stats.inter_rater.fleiss_kappa`` when statsmodels is
  installed (the ``stats`` extra) and with this kernel otherwise; the tests hold the two equal.
- :func:`krippendorff_alpha` (nominal; Krippendorff 2011, "Computing Krippendorff's
  Alpha-Reliability"): from the coincidence matrix ``o_ck = Σ_u Σ_{i≠j} [v_ui = c][v_uj = k]
  / (m_u - 1)`` over the cases with ``m_u >= 2`` labels, ``n_c = Σ_k o_ck``, ``n = Σ_c n_c``:
  ``α = 1 - (n - 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k``. Missing labels are allowed.
- :func:`majority_vote`: the most frequent label of each case among its valid labels. **Tie
  rule** (stated in every report): ``conservative`` (default) takes, among the tied labels,
  the one with the least support (does_not_support before partial before supports): a
  credit must be earned; ``lenient`` takes the most support; ``none`` leaves a tied case
  without a majority.

The report (:func:`agreement`) computes Fleiss' κ and the mean pairwise agreement over the
*complete* cases (a valid label from every rater, as the paper's appendix G does with its
1,876 of 1,902 cases), Cohen's κ and percent agreement per pair over the cases both raters
labelled (and over the complete cases), Krippendorff's α over all cases, the majority vote,
the label distribution per rater and dataset, and agreement with human labels. The unit of
agreement with a human is one of the human's *judgments* (:attr:`LabelRecord.judgment
<tiap.audit.labels.LabelRecord.judgment>`): a label that stands for several cases (the
paper's validation files judge a memory once for its Source and its Canonical case) is
counted once, never once per case, and the other rater's labels on those cases are combined
by majority vote with the tie rule.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tiap.audit.labels import BINARY_LABELS, SEMANTIC_LABELS, LabelRecord, select_judges
from tiap.errors import Problem, TiapError
from tiap.io import output_folder
from tiap.provenance import Manifest, input_entry

__all__ = [
    "TIE_RULES",
    "AgreementReport",
    "RatingTable",
    "agreement",
    "binary_codes",
    "category_counts",
    "cohen_kappa",
    "cohen_kappa_interval",
    "fleiss_kappa",
    "krippendorff_alpha",
    "majority_vote",
    "percent_agreement",
    "rating_table",
    "write_agreement",
]

TieRule = Literal["conservative", "lenient", "none"]
TIE_RULES: tuple[str, ...] = ("conservative", "lenient", "none")
MAJORITY = "majority"
_CODE = {lab: i for i, lab in enumerate(SEMANTIC_LABELS)}
_EXAMPLES = 5  # located examples kept per counted warning
IntArray = NDArray[np.int64]


# ------------------------------------------------------------------------------------------
# kernels


def _codes(x: ArrayLike) -> IntArray:
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TiapError("ratings must be integer category codes (-1 for missing)")
    return a.astype(np.int64)


def binary_codes(codes: ArrayLike) -> IntArray:
    """The binary collapse of three-class codes: 0 (supports), 1 (partial) -> 0 (relevant);
    2 (does_not_support) -> 1 (not_relevant); -1 stays -1."""
    c = _codes(codes)
    return np.where(c < 0, -1, np.where(c == 2, 1, 0))


def percent_agreement(a: ArrayLike, b: ArrayLike) -> float:
    """Share of positions where ``a`` and ``b`` agree (both fully labelled; NaN if empty).

    Codes: 0 supports, 1 partial, 2 does_not_support. Example: the raters agree on cases
    1, 3 and 4 of 4.

    >>> percent_agreement([0, 0, 1, 2], [0, 1, 1, 2])
    0.75
    """
    x, y = _codes(a), _codes(b)
    if x.shape != y.shape or x.ndim != 1:
        raise TiapError("percent_agreement needs two 1-d arrays of the same length")
    if (x < 0).any() or (y < 0).any():
        raise TiapError("percent_agreement: remove missing labels (-1) first")
    return float((x == y).mean()) if x.size else math.nan


def cohen_kappa(a: ArrayLike, b: ArrayLike, n_categories: int | None = None) -> float:
    """Cohen's κ of two raters over the same cases (no missing labels); NaN when undefined.

    Example: ``p_o = 3/4``; rater 1 gives code 0 and 1 half the time each, rater 2 gives 0
    three times in four, so ``p_e = 1/2 · 3/4 + 1/2 · 1/4 = 1/2`` and
    ``κ = (3/4 - 1/2) / (1 - 1/2) = 0.5``.

    >>> cohen_kappa([0, 0, 1, 1], [0, 0, 1, 0])
    0.5
    """
    x, y = _codes(a), _codes(b)
    if x.shape != y.shape or x.ndim != 1:
        raise TiapError("cohen_kappa needs two 1-d arrays of the same length")
    if (x < 0).any() or (y < 0).any():
        raise TiapError("cohen_kappa: remove missing labels (-1) first")
    if x.size == 0:
        return math.nan
    k = n_categories or int(max(x.max(), y.max())) + 1
    po = float((x == y).mean())
    pa = np.bincount(x, minlength=k) / x.size
    pb = np.bincount(y, minlength=k) / y.size
    pe = float((pa * pb).sum())
    if math.isclose(pe, 1.0):
        return math.nan
    return (po - pe) / (1.0 - pe)


def cohen_kappa_interval(a: ArrayLike, b: ArrayLike, n_categories: int | None = None,
                         alpha: float = 0.05) -> tuple[float, float]:
    """The large-sample ``1 - alpha`` interval of Cohen's κ (module docstring), clipped to
    κ's range [-1, 1] (the normal approximation can reach past 1 on a few cases); NaN, NaN
    when κ is undefined or fewer than two cases."""
    from statistics import NormalDist

    x, y = _codes(a), _codes(b)
    kappa = cohen_kappa(x, y, n_categories)
    if math.isnan(kappa) or x.size < 2 or np.unique(x).size < 2 or np.unique(y).size < 2:
        # a rater who gives one label only: κ = 0 exactly, and the large-sample variance
        # degenerates to 0 ([0, 0] would look certain); no interval
        return math.nan, math.nan
    k = n_categories or int(max(x.max(), y.max())) + 1
    p = np.zeros((k, k))
    np.add.at(p, (x, y), 1.0)
    p /= x.size
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    pe = float((rows * cols).sum())
    term_a = float((np.diag(p) * (1 - (rows + cols) * (1 - kappa)) ** 2).sum())
    off = p * (cols[:, None] + rows[None, :]) ** 2
    np.fill_diagonal(off, 0.0)
    term_b = (1 - kappa) ** 2 * float(off.sum())
    term_c = (kappa - pe * (1 - kappa)) ** 2
    var = max(term_a + term_b - term_c, 0.0) / (1 - pe) ** 2 / x.size
    half = NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt(var)
    return max(kappa - half, -1.0), min(kappa + half, 1.0)


def category_counts(codes: ArrayLike, n_categories: int) -> IntArray:
    """``[N, k]`` counts of each category per case (missing labels ignored)."""
    c = _codes(codes)
    out = np.zeros((c.shape[0], n_categories), np.int64)
    for j in range(n_categories):
        out[:, j] = (c == j).sum(axis=1)
    return out


def fleiss_kappa(counts: ArrayLike) -> float:
    """Fleiss' κ from ``[N, k]`` category counts with the same number of raters per case.

    Example: two raters, two categories, three cases: both say 0, both say 1, they split.
    ``P_i = 1, 1, 0`` so ``P̄ = 2/3``; ``p_c = 1/2, 1/2`` so ``P_e = 1/2``;
    ``κ = (2/3 - 1/2) / (1 - 1/2) = 1/3``.

    >>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 6)
    0.333333
    """
    n = np.asarray(counts, dtype=np.float64)
    if n.ndim != 2 or n.shape[0] == 0:
        return math.nan
    m = n.sum(axis=1)
    if not np.allclose(m, m[0]) or m[0] < 2:
        raise TiapError("fleiss_kappa needs the same number (>= 2) of ratings for every case")
    mm = m[0]
    p_i = ((n * n).sum(axis=1) - mm) / (mm * (mm - 1))
    p_bar = float(p_i.mean())
    p_c = n.sum(axis=0) / (n.shape[0] * mm)
    p_e = float((p_c * p_c).sum())
    if math.isclose(p_e, 1.0):
        return math.nan
    return (p_bar - p_e) / (1.0 - p_e)


def krippendorff_alpha(codes: ArrayLike, n_categories: int | None = None) -> float:
    """Krippendorff's α, nominal metric, ``[N units, R raters]`` with ``-1`` for missing.

    Example: two raters agree on units 1 (code 0) and 2 (code 1) and split on unit 3; unit
    4 has one label and is not pairable. The coincidences are ``o_00 = o_11 = 2``,
    ``o_01 = o_10 = 1``, so ``n_0 = n_1 = 3``, ``n = 6`` and
    ``α = 1 - (n - 1) · 2 / (2 · 3 · 3) = 1 - 10/18 = 4/9``.

    >>> round(krippendorff_alpha([[0, 0], [1, 1], [0, 1], [0, -1]]), 6)
    0.444444
    """
    c = _codes(codes)
    if c.ndim != 2:
        raise TiapError("krippendorff_alpha needs a 2-d [units, raters] array")
    k = n_categories or (int(c.max()) + 1 if c.size and c.max() >= 0 else 0)
    if k == 0:
        return math.nan
    counts = category_counts(c, k).astype(np.float64)  # n_uc
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    counts, m_u = counts[pairable], m_u[pairable]
    if counts.shape[0] == 0:
        return math.nan
    # o_ck = Σ_u n_uc (n_uk - [c = k]) / (m_u - 1)
    w = 1.0 / (m_u - 1.0)
    o = (counts * w[:, None]).T @ counts - np.diag((counts * w[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = n_c.sum() ** 2 - (n_c * n_c).sum()
    if d_e == 0:
        return math.nan
    return float(1.0 - (n - 1.0) * d_o / d_e)


def majority_vote(codes: ArrayLike, n_categories: int = 3,
                  tie_rule: TieRule = "conservative") -> tuple[IntArray, NDArray[np.bool_]]:
    """Per case, the most frequent valid code (``-1`` when there is none) and a tie flag.

    Codes run from the most support (0) to the least; ``conservative`` breaks a tie toward
    the highest code (least support), ``lenient`` toward the lowest, ``none`` gives -1.
    """
    if tie_rule not in TIE_RULES:
        raise TiapError(f"tie rule must be one of {', '.join(TIE_RULES)}, got {tie_rule!r}")
    counts = category_counts(codes, n_categories)
    top = counts.max(axis=1)
    is_top = (counts == top[:, None]) & (top[:, None] > 0)
    tie = is_top.sum(axis=1) > 1
    if tie_rule == "lenient":
        winner = np.argmax(is_top, axis=1)
    else:
        winner = n_categories - 1 - np.argmax(is_top[:, ::-1], axis=1)
    winner = np.where(top > 0, winner, -1)
    if tie_rule == "none":
        winner = np.where(tie, -1, winner)
    return winner.astype(np.int64), tie


# ------------------------------------------------------------------------------------------
# the rating table


@dataclass(frozen=True, eq=False)
class RatingTable:
    """Cases x raters codes (``-1`` missing), with each case's dataset and target."""

    case_ids: tuple[str, ...]
    raters: tuple[str, ...]
    codes: IntArray
    datasets: tuple[str, ...]
    targets: tuple[str, ...]

    def column(self, rater: str) -> IntArray:
        return self.codes[:, self.raters.index(rater)]


def rating_table(labels: Iterable[LabelRecord], raters: Sequence[str] | None = None,
                 case_ids: Sequence[str] | None = None) -> RatingTable:
    """The rating table of ``labels`` (raters in first-appearance order unless given)."""
    labs = list(labels)
    order: dict[str, None] = {}
    cases: dict[str, None] = dict.fromkeys(case_ids or ())
    meta: dict[str, tuple[str, str]] = {}
    for r in labs:
        order.setdefault(r.judge, None)
        if case_ids is None:
            cases.setdefault(r.case_id, None)
        ds, tg = meta.get(r.case_id, ("", ""))
        meta[r.case_id] = (ds or r.dataset, tg or r.target)
    rlist = list(raters) if raters is not None else list(order)
    cidx = {c: i for i, c in enumerate(cases)}
    ridx = {r: j for j, r in enumerate(rlist)}
    codes = np.full((len(cidx), len(rlist)), -1, np.int64)
    for r in labs:
        i, j = cidx.get(r.case_id), ridx.get(r.judge)
        if i is None or j is None or not r.scored:
            continue
        if codes[i, j] >= 0:
            raise TiapError(f"judge {r.judge!r} labels case {r.case_id!r} twice")
        codes[i, j] = _CODE[r.label]
    return RatingTable(
        case_ids=tuple(cidx), raters=tuple(rlist), codes=codes,
        datasets=tuple(meta.get(c, ("", ""))[0] for c in cidx),
        targets=tuple(meta.get(c, ("", ""))[1] for c in cidx))


# ------------------------------------------------------------------------------------------
# the report


def _fleiss(counts: IntArray) -> tuple[float, str]:
    try:
        from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    except ImportError:  # pragma: no cover - depends on the environment
        return fleiss_kappa(counts), "tiap"
    import statsmodels

    if counts.shape[0] == 0:
        return math.nan, f"statsmodels {statsmodels.__version__}"
    return float(sm_fleiss(counts, method="fleiss")), f"statsmodels {statsmodels.__version__}"


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, nd)


@dataclass
class AgreementReport:
    """Everything :func:`agreement` computes (written by :func:`write_agreement`)."""

    raters: tuple[str, ...]
    n_cases: int
    n_complete: int
    tie_rule: str
    summary: dict[str, Any]
    pairwise: list[dict[str, Any]]
    distribution: list[dict[str, Any]]
    majority: list[dict[str, Any]]
    human: list[dict[str, Any]] = field(default_factory=list)
    confusion: list[dict[str, Any]] = field(default_factory=list)
    #: the manifest's counted warnings (``unmatched_label``: human labels of no judged case)
    warnings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        summary = dict(self.summary)
        human_cases = summary.pop("human", None)  # "human" holds the rows
        out = {"raters": list(self.raters), "n_cases": self.n_cases,
               "n_complete": self.n_complete, "tie_rule": self.tie_rule, **summary,
               "pairwise": self.pairwise, "human": self.human}
        if human_cases is not None:
            out["human_cases"] = human_cases
        return out


def _pair_rows(table: RatingTable, complete: NDArray[np.bool_]) -> list[dict[str, Any]]:
    rows = []
    for r1, r2 in combinations(table.raters, 2):
        a, b = table.column(r1), table.column(r2)
        for scheme in ("three_class", "binary"):
            x, y = (a, b) if scheme == "three_class" else (binary_codes(a), binary_codes(b))
            k = 3 if scheme == "three_class" else 2
            both = (x >= 0) & (y >= 0)
            cc = both & complete
            rows.append({
                "rater_1": r1, "rater_2": r2, "scheme": scheme,
                "n": int(both.sum()),
                "agreement": _r(percent_agreement(x[both], y[both])),
                "cohen_kappa": _r(cohen_kappa(x[both], y[both], k)),
                **_kappa_interval(x[both], y[both], k),
                "n_complete": int(cc.sum()),
                "agreement_complete": _r(percent_agreement(x[cc], y[cc])),
            })
    return rows


def _kappa_interval(x: IntArray, y: IntArray, k: int) -> dict[str, float | None]:
    lo, hi = cohen_kappa_interval(x, y, k)
    return {"cohen_kappa_low": _r(lo), "cohen_kappa_high": _r(hi)}


def _distribution(table: RatingTable, majority: IntArray) -> list[dict[str, Any]]:
    rows = []
    cols = [(r, table.column(r)) for r in table.raters]
    if len(table.raters) > 1:
        cols.append((MAJORITY, majority))
    datasets = sorted(set(table.datasets))
    ds_arr = np.asarray(table.datasets, dtype=object)
    for rater, col in cols:
        for ds in ["all", *datasets] if len(datasets) > 1 else ["all"]:
            mask = np.ones(col.size, bool) if ds == "all" else ds_arr == ds
            valid = int(((col >= 0) & mask).sum())
            for code, lab in enumerate(SEMANTIC_LABELS):
                n = int(((col == code) & mask).sum())
                rows.append({"rater": rater, "dataset": ds, "label": lab, "count": n,
                             "fraction": _r(n / valid if valid else math.nan)})
            rows.append({"rater": rater, "dataset": ds, "label": "no_label",
                         "count": int(((col < 0) & mask).sum()), "fraction": None})
    return rows


def _combine(codes: Sequence[int], tie_rule: TieRule) -> int:
    """One label from the labels one rater gave the cases of one judgment (majority vote
    with the report's tie rule; -1 when there is none)."""
    if len(codes) == 1:
        return codes[0]
    winner, _ = majority_vote(np.asarray([codes], np.int64), 3, tie_rule)
    return int(winner[0])


def _human_rows(table: RatingTable, human: RatingTable, majority: IntArray,
                units: Mapping[tuple[str, str], str], tie_rule: TieRule,
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Agreement of each human with each judge, the majority and every later human.

    The unit of every statistic is one *judgment* of the human (``units``: (human, case
    id) -> judgment, :attr:`LabelRecord.judgment`): a human label that stands for several
    cases (the paper's validation files label a memory once for its Source and its
    Canonical case) is counted once, against the other rater's labels on those cases
    combined by majority vote with the tie rule (``split`` counts the judgments where
    they differ)."""
    rows: list[dict[str, Any]] = []
    confusion: list[dict[str, Any]] = []
    index = {c: i for i, c in enumerate(table.case_ids)}
    cols = [(r, table.column(r)) for r in table.raters]
    if len(table.raters) > 1:
        cols.append((MAJORITY, majority))
    for n_h, h in enumerate(human.raters):
        hcol = human.column(h)
        others = [(r, human.column(r)) for r in human.raters[n_h + 1:]]  # each pair once
        for rater, col in [*cols, *others]:
            pairs = []  # (judgment, human code, rater code, target)
            for i, c in enumerate(human.case_ids):
                if rater in human.raters:
                    v = int(col[i])
                else:
                    j = index.get(c)
                    v = int(col[j]) if j is not None else -1
                if hcol[i] >= 0 and v >= 0:
                    tg = human.targets[i] or (table.targets[index[c]] if c in index else "")
                    pairs.append((units.get((h, c), c), int(hcol[i]), v, tg))
            targets = sorted({p[3] for p in pairs})
            for tg in ["all", *targets] if len(targets) > 1 else ["all"]:
                by_unit: dict[str, tuple[list[int], list[int]]] = {}
                for u, hc, rc, t in pairs:
                    if tg == "all" or t == tg:
                        hs, rs = by_unit.setdefault(u, ([], []))
                        hs.append(hc)
                        rs.append(rc)
                combined = [(_combine(hs, tie_rule), _combine(rs, tie_rule), len(set(rs)) > 1)
                            for hs, rs in by_unit.values()]
                combined = [x for x in combined if x[0] >= 0 and x[1] >= 0]
                split = sum(1 for x in combined if x[2])
                x = np.asarray([p[0] for p in combined], np.int64)
                y = np.asarray([p[1] for p in combined], np.int64)
                for scheme in ("three_class", "binary"):
                    xx, yy = (x, y) if scheme == "three_class" else (binary_codes(x),
                                                                   binary_codes(y))
                    rows.append({"human": h, "rater": rater, "target": tg, "scheme": scheme,
                                 "n": int(xx.size), "split": split,
                                 "agreement": _r(percent_agreement(xx, yy)),
                                 "cohen_kappa": _r(cohen_kappa(xx, yy,
                                                               3 if scheme == "three_class"
                                                               else 2)),
                                 **_kappa_interval(xx, yy, 3 if scheme == "three_class"
                                                   else 2)})
                if tg == "all":
                    for hc, hl in enumerate(SEMANTIC_LABELS):
                        for rc, rl in enumerate(SEMANTIC_LABELS):
                            confusion.append({"human": h, "rater": rater, "human_label": hl,
                                              "rater_label": rl,
                                              "count": int(((x == hc) & (y == rc)).sum())})
    return rows, confusion


def agreement(labels: Iterable[LabelRecord], *, human: Iterable[LabelRecord] = (),
              tie_rule: TieRule = "conservative",
              raters: Sequence[str] | None = None) -> AgreementReport:
    """Agreement statistics of the judges in ``labels`` (module docstring).

    Args:
        labels: label records of one or more judges (one per judge and case).
        human: human label records (judge names such as ``human:primary``), compared with
            every judge and with the majority vote over the cases they share.
        tie_rule: the majority vote's tie rule.
        raters: the judges to include, in this order (default: all, in order of appearance).

    Raises:
        TiapError: before anything is computed, when the labels are empty, a rater of
            ``raters`` is named by no label, or a rater taken gives no scored label
            (:func:`tiap.audit.labels.select_judges`); the same for each human rater, and
            when none of a human rater's scored labels names a case a judge labelled. Human
            labels of cases no judge labelled are counted in :attr:`AgreementReport.warnings`
            (``unmatched_label``) and left out.

    Example: judges ``a`` and ``b`` on three cases; they agree on the first and third.
    Three classes: ``p_o = 2/3``; ``a`` gives each label once, ``b`` supports once and
    does_not_support twice, so ``p_e = 1/9 + 0 + 2/9 = 1/3`` and ``κ = (2/3 - 1/3) / (2/3) =
    0.5``. Binary: ``a`` says relevant twice, ``b`` once, so ``p_e = 2/9 + 2/9 = 4/9`` and
    ``κ = (2/3 - 4/9) / (5/9) = 0.4``. The second case is a tie (partial against
    does_not_support), which the conservative rule gives to does_not_support.

    >>> labels = [LabelRecord(f"A:q{i}:canonical", judge, label)
    ...           for judge, labs in (("a", ["supports", "partial", "does_not_support"]),
    ...                               ("b", ["supports", "does_not_support", "does_not_support"]))
    ...           for i, label in enumerate(labs, start=1)]
    >>> report = agreement(labels)
    >>> report.raters, report.n_cases, report.n_complete
    (('a', 'b'), 3, 3)
    >>> [(r["scheme"], r["agreement"], r["cohen_kappa"]) for r in report.pairwise]
    [('three_class', 0.666667, 0.5), ('binary', 0.666667, 0.4)]
    >>> report.summary["majority"]["ties"], report.summary["majority"]["distribution"]
    (1, {'supports': 1, 'partial': 0, 'does_not_support': 2})
    """
    table = rating_table(select_judges(labels, raters), raters)
    codes = table.codes
    complete: NDArray[np.bool_] = np.asarray((codes >= 0).all(axis=1), dtype=bool)
    n_complete = int(complete.sum())
    majority, tie = majority_vote(codes, 3, tie_rule)
    summary: dict[str, Any] = {}
    if len(table.raters) >= 2:
        three = codes[complete]
        binary = binary_codes(three)
        f3, backend = _fleiss(category_counts(three, 3))
        f2, _ = _fleiss(category_counts(binary, 2))
        pw = _pair_rows(table, complete)
        mean_pw = {s: _r(float(np.mean([r["agreement_complete"] for r in pw
                                        if r["scheme"] == s
                                        and r["agreement_complete"] is not None]))
                         if n_complete else math.nan)
                   for s in ("three_class", "binary")}
        summary = {
            "fleiss_kappa": {"three_class": _r(f3), "binary": _r(f2), "n": n_complete,
                             "backend": backend},
            "krippendorff_alpha": {"three_class": _r(krippendorff_alpha(codes, 3)),
                                   "binary": _r(krippendorff_alpha(binary_codes(codes), 2)),
                                   "n": int(((codes >= 0).sum(axis=1) >= 2).sum())},
            "mean_pairwise_agreement": {**mean_pw, "n": n_complete},
        }
    else:
        pw = []
    valid_major = majority >= 0
    summary["majority"] = {
        "tie_rule": tie_rule,
        "ties": int((tie & valid_major).sum()) if tie_rule != "none" else int(tie.sum()),
        "labelled": int(valid_major.sum()),
        "distribution": {lab: int((majority == c).sum()) for c, lab in
                         enumerate(SEMANTIC_LABELS)},
    }
    summary["scored_per_rater"] = {r: int((table.column(r) >= 0).sum()) for r in table.raters}
    maj_rows = [{"case_id": c, "dataset": table.datasets[i], "target": table.targets[i],
                 "label": SEMANTIC_LABELS[majority[i]] if majority[i] >= 0 else None,
                 "binary": BINARY_LABELS[0 if majority[i] in (0, 1) else 1]
                 if majority[i] >= 0 else None,
                 "votes": {lab: int((codes[i] == k).sum()) for k, lab in
                           enumerate(SEMANTIC_LABELS)},
                 "tie": bool(tie[i])} for i, c in enumerate(table.case_ids)]
    hum = list(human)
    human_rows: list[dict[str, Any]] = []
    confusion: list[dict[str, Any]] = []
    warnings: dict[str, Any] = {}
    if hum:
        hum = select_judges(hum, who="human rater")
        warnings = _check_human(hum, table)
        htable = rating_table(hum)
        units = {(r.judge, r.case_id): r.judgment for r in hum}
        human_rows, confusion = _human_rows(table, htable, majority, units, tie_rule)
        judged = set(table.case_ids)
        per: dict[str, dict[str, set[str]]] = {}
        for r in hum:
            d = per.setdefault(r.judge, {"cases": set(), "audit_cases": set(),
                                         "matched": set()})
            d["cases"].add(r.judgment)
            d["audit_cases"].add(r.case_id)
            if r.case_id in judged:
                d["matched"].add(r.judgment)
        summary["human"] = {
            "raters": list(htable.raters),
            "cases": len({r.judgment for r in hum}),
            "matched": len({r.judgment for r in hum if r.case_id in judged}),
            "audit_cases": len(htable.case_ids),
            "per_rater": {h: {k: len(v) for k, v in d.items()} for h, d in per.items()},
        }
    return AgreementReport(
        raters=table.raters, n_cases=len(table.case_ids), n_complete=n_complete,
        tie_rule=tie_rule, summary=summary, pairwise=pw,
        distribution=_distribution(table, majority), majority=maj_rows,
        human=human_rows, confusion=confusion, warnings=warnings)


def _check_human(hum: Sequence[LabelRecord], table: RatingTable) -> dict[str, Any]:
    """Human labels against the judges' cases, before any agreement with them is computed:
    a human rater none of whose scored labels names a case a judge labelled (scored) is an
    error naming its file and example cases of both sides (its agreement would be computed
    over nothing); human labels of cases no judge labelled are counted
    (``unmatched_label``, the manifest's ``warnings``) and left out."""
    cases = set(table.case_ids)
    scored = {c for c, row in zip(table.case_ids, table.codes, strict=True) if (row >= 0).any()}
    problems: list[Problem] = []
    for h in dict.fromkeys(r.judge for r in hum):
        mine = [r for r in hum if r.judge == h]
        if any(r.scored and r.case_id in scored for r in mine):
            continue
        files = list(dict.fromkeys(r.origin[0] for r in mine if r.origin))
        theirs = ", ".join(list(dict.fromkeys(r.case_id for r in mine))[:3])
        ours = ", ".join([c for c in table.case_ids if c in scored][:3])
        problems.append(Problem(
            f"human rater {h!r} labels no case that a judge labelled, so its agreement would "
            f"be computed over nothing: its {len(mine):,} labels name cases such as {theirs}; "
            f"the judges' are such as {ours}. Are the human labels of another audit (their "
            f"case_id must be the case ids of cases.jsonl)?",
            file=files[0] if len(files) == 1 else None, code="invalid-value"))
    if problems:
        raise TiapError(problems=problems, code="invalid-value")
    missed = [r for r in hum if r.case_id not in cases]
    if not missed:
        return {}
    examples = [str(Problem(f"case {r.case_id!r} has no judge's label", code="unmatched_label",
                            **r.where()))
                for r in missed[:_EXAMPLES]]
    return {"unmatched_label": {
        "message": f"human labels name cases that no judge labelled; they are left out "
                   f"({len(missed):,} of {len(hum):,} human labels)",
        "count": len(missed), "examples": examples}}


def _write_csv(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if r.get(c) is None else r[c] for c in columns])


#: The manifest ``command`` of ``tiap audit agreement``.
AGREEMENT_COMMAND = "audit agreement"


def write_agreement(report: AgreementReport, out: str | Path, *,
                    inputs: Mapping[str, str | Path] = {},
                    force: bool = False) -> dict[str, Any]:
    """Write ``agreement.json``, ``pairwise.csv``, ``distribution.csv``, ``majority.jsonl``,
    ``human.csv`` and ``confusion.csv`` (with human labels) and ``manifest.json``.

    ``out`` is replaced whole (:func:`tiap.io.output_folder`): no ``human.csv`` of an
    earlier run with human labels survives; a folder that is not an earlier agreement's
    output is refused (``error[stale-output]``) unless ``force``."""

    with output_folder(out, AGREEMENT_COMMAND, force=force) as tmp:
        (tmp / "agreement.json").write_text(
            json.dumps(report.to_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        _write_csv(tmp / "pairwise.csv", report.pairwise,
                   ("rater_1", "rater_2", "scheme", "n", "agreement", "cohen_kappa",
                    "cohen_kappa_low", "cohen_kappa_high", "n_complete", "agreement_complete"))
        _write_csv(tmp / "distribution.csv", report.distribution,
                   ("rater", "dataset", "label", "count", "fraction"))
        with open(tmp / "majority.jsonl", "w", encoding="utf-8") as fh:
            for r in report.majority:
                fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
        outputs = ["agreement.json", "pairwise.csv", "distribution.csv", "majority.jsonl"]
        if report.human:
            _write_csv(tmp / "human.csv", report.human,
                       ("human", "rater", "target", "scheme", "n", "split", "agreement",
                        "cohen_kappa", "cohen_kappa_low", "cohen_kappa_high"))
            _write_csv(tmp / "confusion.csv", report.confusion,
                       ("human", "rater", "human_label", "rater_label", "count"))
            outputs += ["human.csv", "confusion.csv"]
        man = Manifest.new(AGREEMENT_COMMAND,
                           inputs={k: input_entry(p) for k, p in inputs.items()},
                           options={"tie_rule": report.tie_rule, "raters": list(report.raters)},
                           warnings=dict(report.warnings) if report.warnings else None,
                           outputs=outputs)
        man.write(tmp / "manifest.json")
    return man.to_json()
