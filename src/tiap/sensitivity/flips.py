"""Winner flips between systems (the paper's §3.3 and §5.6), with their statistics.

For systems ``A`` and ``B`` and targets ``t1``, ``t2``, the *shared subset* ``S`` is the set of
queries defined under both targets for both systems. On ``S`` the gap under target ``t`` is

    gap_t = (1/|S|) Σ_{q ∈ S} (v_A,q(t) - v_B,q(t))          (A minus B)

and a **winner flip** is a sign change: ``gap_1 · gap_2 < 0`` (a gap within 1e-12 of 0 is a
tie, never a flip). Every gap is tested by the paired randomization (sign-flip) test of
:mod:`tiap.sensitivity.stats`, its p-value adjusted within the *family* of every gap of this
table in one dataset and measure (the per-category table: every category's gaps under one
measure together), by Holm unless ``correction`` says otherwise; its interval is the test's inversion at the gap's effective level, so it
excludes 0 exactly when the adjusted p-value is at most ``alpha``. A flip is
**significant** when both gaps are significant after correction (their signs are opposite,
being a flip). ``mde_1`` / ``mde_2`` are the gaps the shared subset could detect with 80%
power in one test at ``alpha`` (:func:`~tiap.sensitivity.stability.mde`; a correction only
raises them): a flip whose gaps lie far below them is one the queries could not resolve.
It is **practical** when both gaps clear the practical threshold in the direction of the
flip: ``|d_z| >= min_dz`` (the paired effect size, ``mean / sd`` of the per-query
differences; :data:`DEFAULT_MIN_DZ` = 0.2, Cohen's "small") and ``|gap| >= min_effect`` (in
the measure's units; 0 by default, no floor), and a **headline** when it is significant and
practical: a flip below the threshold is reported, never headlined.

**Partial lineage.** Where some value of the shared subset is only bounded (``[lo, hi]``,
from ``intervals.csv``), the gap is the interval ``[gap_lower, gap_upper]`` =
``mean(lo_A - hi_B)``, ``mean(hi_A - lo_B)`` over the shared queries (``gap`` empty), the
winner is ``a`` or ``b`` only when that interval excludes 0 (else ``not determined``), and
a flip is a flip only when both gap intervals exclude 0 with opposite signs: a flip decided
on an interval that straddles zero is not a flip. The test covers every lineage at once
(:mod:`tiap.sensitivity.stats`): the p-value is the largest any lineage gives (the lower
differences' for a positive gap, the upper ones' for a negative gap, 1 when the gap interval
contains 0) and the interval is the union of every lineage's. The ``d_z`` a threshold is
checked against is then the smallest any lineage can have, bounded from below: ``|mean|`` is
at least ``min(|gap_lower|, |gap_upper|)``, and ``Σ (d_j - mean)²`` is at most
``Σ max((lo_j - c)², (hi_j - c)²)`` for any ``c`` (the mean minimizes the sum of squares),
taken at the best ``c`` (:func:`dz_floor`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap import numfmt
from tiap.scoring.measures import Measure
from tiap.sensitivity.load import Dataset
from tiap.sensitivity.stability import mde
from tiap.sensitivity.stats import (
    DEFAULT_ALPHA,
    DEFAULT_CORRECTION,
    DEFAULT_RESAMPLES,
    Gap,
    GapResult,
    evaluate_gaps,
)

__all__ = [
    "DEFAULT_MIN_DZ",
    "FLIP_COLUMNS",
    "MEANS_COLUMNS",
    "SYSTEM_TEST_COLUMNS",
    "UNDETERMINED",
    "dz_floor",
    "flip_undetermined",
    "gap_text",
    "is_flip",
    "is_flip_interval",
    "system_means_rows",
    "system_tests",
    "winner",
    "winner_flips",
]

FLIP_COLUMNS = (
    "dataset", "measure", "system_a", "system_b", "target_1", "target_2", "n_shared",
    "n_undetermined", "gap_1", "gap_2", "gap_1_lower", "gap_1_upper", "gap_2_lower",
    "gap_2_upper", "ci_1_low", "ci_1_high", "ci_2_low", "ci_2_high", "p_1", "p_2",
    "p_1_adjusted", "p_2_adjusted", "effect_1", "effect_2", "moved_1", "moved_2", "mde_1",
    "mde_2", "winner_1", "winner_2", "flip", "significant_flip", "practical", "headline",
)
UNDETERMINED = "not determined"
#: The default practical threshold of a headline flip: both gaps with ``|d_z| >= 0.2``, the
#: effect Cohen (1988) calls small (docs/sensitivity.md, "When a flip is a headline").
DEFAULT_MIN_DZ = 0.2
#: Gaps within this of 0 are ties (float noise in a mean of equal values is not a winner).
TIE_EPS = 1e-12
#: One row per (dataset, measure, target, pair of systems): :func:`system_tests`.
SYSTEM_TEST_COLUMNS = (
    "dataset", "measure", "target", "system_a", "system_b", "n", "n_undetermined", "gap",
    "gap_lower", "gap_upper", "ci_low", "ci_high", "p", "p_adjusted", "d_z", "d_z_floor",
    "winner", "significant",
)
MEANS_COLUMNS = ("dataset", "system", "target", "measure", "n", "n_exact", "mean", "lower",
                 "upper", "n_shared_targets", "mean_shared_targets", "n_inferred",
                 "n_shared_targets_in_universe", "lower_shared_targets",
                 "upper_shared_targets")


def winner(gap: float | None, a: str, b: str) -> str:
    """``a`` when the gap (a minus b) is positive, ``b`` when negative, ``tie`` at 0."""
    if gap is None or gap != gap:
        return ""
    return a if gap > TIE_EPS else b if gap < -TIE_EPS else "tie"


def is_flip(gap_1: float | None, gap_2: float | None) -> bool:
    """A sign change of the gap (a zero gap is a tie, not a flip).

    >>> is_flip(0.12, -0.03), is_flip(0.12, 0.05), is_flip(0.12, 0.0), is_flip(None, -0.03)
    (True, False, False, False)
    """
    if gap_1 is None or gap_2 is None or gap_1 != gap_1 or gap_2 != gap_2:
        return False
    return (gap_1 > TIE_EPS and gap_2 < -TIE_EPS) or (gap_1 < -TIE_EPS and gap_2 > TIE_EPS)


def gap_text(row: Mapping[str, Any], which: int, digits: int = 4) -> str:
    """A flip row's gap ``which`` (1 or 2) as text: ``+0.1234``, or ``[+0.0768, +0.5768]``
    when partial lineage only bounds it (rows as written or as read back from CSV), by the
    printing rule of :mod:`tiap.numfmt` (a gap too small for ``digits`` gets more)."""
    if numfmt.value(row.get(f"gap_{which}")) is not None:
        return numfmt.signed(row.get(f"gap_{which}"), digits)
    return numfmt.interval(row.get(f"gap_{which}_lower"), row.get(f"gap_{which}_upper"),
                           digits, missing="-")


def _none(x: float) -> float | None:
    return None if x != x else float(x)


def bounded_differences(ds: Dataset, a: str, b: str, t: str, m: Measure,
                        shared: NDArray[np.bool_]) -> tuple[NDArray[np.float64],
                                                            NDArray[np.float64] | None]:
    """Per-query ``A - B`` on ``shared``: the lower and upper differences, the upper being
    ``None`` where every value is determined."""
    sa, sb = ds.systems[a], ds.systems[b]
    la, ha = sa.interval(t, m)
    lb, hb = sb.interval(t, m)
    lo = la[shared] - hb[shared]
    hi = ha[shared] - lb[shared]
    return lo, (None if np.array_equal(lo, hi) else hi)


def dz_floor(gap: Gap, result: GapResult) -> float | None:
    """The smallest ``|d_z|`` (``|mean(d)| / sd(d)``, ddof 1) of the gap's per-query
    differences under any lineage: the exact ``|d_z|`` where the lineage determines every
    difference, else a lower bound (the module docstring); ``inf`` for equal differences
    other than 0, ``None`` with fewer than 2 queries."""
    if result.n < 2 or result.gap_lower is None or result.gap_upper is None:
        return None
    if not gap.bounded:
        if result.effect is not None:
            return abs(result.effect)
        return 0.0 if result.gap is None or abs(result.gap) <= TIE_EPS else math.inf
    lo_mean, hi_mean = result.gap_lower, result.gap_upper
    if lo_mean <= TIE_EPS and hi_mean >= -TIE_EPS:
        return 0.0  # some lineage has mean 0
    assert gap.hi is not None
    s = _max_squares(gap.lo, gap.hi)
    smallest = min(abs(lo_mean), abs(hi_mean))
    return math.inf if s <= 0 else smallest / math.sqrt(s / (result.n - 1))


def _max_squares(lo: NDArray[np.float64], hi: NDArray[np.float64]) -> float:
    """An upper bound of ``Σ_j (d_j - mean(d))²`` over every ``d`` with ``lo <= d <= hi``:
    ``min_c Σ_j max((lo_j - c)², (hi_j - c)²) = min_c Σ_j (|c - m_j| + h_j)²`` (``m``, ``h``
    the midpoints and half-widths), since the mean minimizes the sum of squares about a
    point. The function of ``c`` is convex, a quadratic between consecutive midpoints: its
    minimum is the least of each piece's vertex clipped to the piece."""
    order = np.argsort((lo + hi) / 2, kind="stable")
    m, h = ((lo + hi) / 2)[order], ((hi - lo) / 2)[order]
    n = m.size
    below_h = np.concatenate(([0.0], np.cumsum(h)))  # Σ h_j over the k smallest midpoints
    below_hm = np.concatenate(([0.0], np.cumsum(h * m)))
    total_m, total_h = float(m.sum()), float(below_h[-1])
    c = (total_m + total_h - 2 * below_h) / n  # each piece's vertex (k = 0..n below it)
    c = np.clip(c, np.concatenate(([-np.inf], m)), np.concatenate((m, [np.inf])))
    dist = c * below_h - below_hm + (below_hm[-1] - below_hm) - c * (total_h - below_h)
    s = n * c * c - 2 * c * total_m + float((m * m).sum()) + 2 * dist + float((h * h).sum())
    return max(float(s.min()), 0.0)


def is_practical(gap: GapResult, min_effect: float, min_dz: float = 0.0,
                 dz: float | None = None) -> bool:
    """The gap is practical under every lineage: at least ``min_effect`` (in the measure's
    units) away from 0, and ``dz`` (its smallest ``|d_z|``, :func:`dz_floor`) at least
    ``min_dz``. With both thresholds 0, every gap is."""
    if gap.gap_lower is None or gap.gap_upper is None:
        return False
    if gap.gap_lower <= 0 <= gap.gap_upper:
        return min_effect <= 0 and min_dz <= 0
    if min(abs(gap.gap_lower), abs(gap.gap_upper)) < min_effect - TIE_EPS:
        return False
    return min_dz <= 0 or (dz is not None and dz >= min_dz - TIE_EPS)


def winner_flips(
    ds: Dataset,
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
    min_effect: float = 0.0,
    min_dz: float = DEFAULT_MIN_DZ,
    systems: Sequence[str] | None = None,
    mask: NDArray[np.bool_] | None = None,
    extra: Mapping[str, Any] | None = None,
    groups: Sequence[tuple[Mapping[str, Any], NDArray[np.bool_] | None]] | None = None,
    family: str = "winner_flips",
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One row per (group, measure, pair of systems, pair of targets): the columns of
    :data:`FLIP_COLUMNS`, a group's ``extra`` columns after ``dataset``.

    ``groups`` are ``(extra, mask)`` restrictions of the queries (the categories, say;
    default one group: ``extra`` and ``mask``). Every gap of every group under one measure
    is one family, ``(dataset, family, measure)``, adjusted together (module docstring);
    ``notes`` receives the families the resamples cannot resolve
    (:func:`~tiap.sensitivity.stats.evaluate_gaps`).
    """
    names = list(systems or ds.systems)
    gaps: list[Gap] = []
    rows_meta: list[tuple[Mapping[str, Any], str, str, str, str, Measure]] = []
    for label, gmask in groups if groups is not None else ((extra or {}, mask),):
        for a, b in combinations(names, 2):
            for t1, t2 in ds.target_pairs:
                shared = ds.shared((a, b), (t1, t2), bounded=True)
                if gmask is not None:
                    shared = shared & gmask
                for m in ds.measures:
                    for t in (t1, t2):
                        lo, hi = bounded_differences(ds, a, b, t, m, shared)
                        gaps.append(Gap((ds.name, family, str(m)), shared, lo, hi))
                    rows_meta.append((label, a, b, t1, t2, m))
    results = evaluate_gaps(gaps, seed=seed, dataset=ds.name, resamples=resamples,
                            alpha=alpha, correction=correction, notes=notes)
    rows: list[dict[str, Any]] = []
    for j, (label, a, b, t1, t2, m) in enumerate(rows_meta):
        r1, r2 = results[2 * j], results[2 * j + 1]
        g1, g2 = (r1.gap_lower, r1.gap_upper), (r2.gap_lower, r2.gap_upper)
        flip = is_flip_interval(g1, g2)
        significant = flip and r1.significant and r2.significant
        practical = flip and all(
            is_practical(r, min_effect, min_dz, dz_floor(g, r) if min_dz > 0 else None)
            for g, r in ((gaps[2 * j], r1), (gaps[2 * j + 1], r2)))
        rows.append({
            "dataset": ds.name, **label, "measure": str(m),
            "system_a": a, "system_b": b, "target_1": t1, "target_2": t2,
            "n_shared": r1.n, "n_undetermined": max(r1.n_undetermined, r2.n_undetermined),
            "gap_1": r1.gap, "gap_2": r2.gap,
            "gap_1_lower": g1[0], "gap_1_upper": g1[1],
            "gap_2_lower": g2[0], "gap_2_upper": g2[1],
            "ci_1_low": r1.ci_low, "ci_1_high": r1.ci_high,
            "ci_2_low": r2.ci_low, "ci_2_high": r2.ci_high,
            "p_1": r1.p, "p_2": r2.p, "p_1_adjusted": r1.p_adjusted, "p_2_adjusted": r2.p_adjusted,
            "effect_1": r1.effect, "effect_2": r2.effect,
            "moved_1": r1.moved, "moved_2": r2.moved,
            "mde_1": mde(r1.sd, r1.n, alpha), "mde_2": mde(r2.sd, r2.n, alpha),
            "winner_1": winner_interval(g1, a, b), "winner_2": winner_interval(g2, a, b),
            "flip": flip, "significant_flip": significant, "practical": practical,
            "headline": significant and practical,
        })
    return rows


def system_tests(
    ds: Dataset,
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
    systems: Sequence[str] | None = None,
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Every pair of systems under each target and measure, tested on the queries both
    define under that target: the columns of :data:`SYSTEM_TEST_COLUMNS`.

    The test is the winner flips' (:func:`~tiap.sensitivity.stats.evaluate_gaps`: paired
    sign-flip, the same seed and resamples, so the same sign vectors for the same shared
    queries), and partial lineage is handled as there: the gap is ``[gap_lower,
    gap_upper]`` (``gap`` empty), the p-value the largest any lineage gives, the winner
    ``not determined`` unless every lineage agrees. The family of the correction is one
    *column* of the comparison table: every pair of systems under one dataset, target and
    measure. ``winner`` is the system ahead (``tie``, or ``not determined`` when the gap
    interval contains 0); ``significant`` is ``p_adjusted <= alpha``; ``d_z`` is the paired
    effect size (empty when bounded), ``d_z_floor`` the smallest ``|d_z|`` any lineage
    allows (:func:`dz_floor`).
    """
    names = list(systems or ds.systems)
    gaps: list[Gap] = []
    meta: list[tuple[Measure, str, str, str]] = []
    for m in ds.measures:
        for t in ds.targets:
            for a, b in combinations(names, 2):
                shared = ds.shared((a, b), (t,), bounded=True)
                lo, hi = bounded_differences(ds, a, b, t, m, shared)
                gaps.append(Gap((ds.name, "system_tests", t, str(m)), shared, lo, hi))
                meta.append((m, t, a, b))
    results = evaluate_gaps(gaps, seed=seed, dataset=ds.name, resamples=resamples,
                            alpha=alpha, correction=correction, notes=notes)
    rows: list[dict[str, Any]] = []
    for g, r, (m, t, a, b) in zip(gaps, results, meta, strict=True):
        rows.append({
            "dataset": ds.name, "measure": str(m), "target": t, "system_a": a, "system_b": b,
            "n": r.n, "n_undetermined": r.n_undetermined, "gap": r.gap,
            "gap_lower": r.gap_lower, "gap_upper": r.gap_upper,
            "ci_low": r.ci_low, "ci_high": r.ci_high, "p": r.p, "p_adjusted": r.p_adjusted,
            "d_z": r.effect, "d_z_floor": dz_floor(g, r),
            "winner": winner_interval((r.gap_lower, r.gap_upper), a, b),
            "significant": r.significant,
        })
    return rows


def winner_interval(gap: tuple[float | None, float | None], a: str, b: str) -> str:
    """The winner when the gap interval decides it: ``a`` (above 0), ``b`` (below 0),
    ``tie`` (a point at 0), else ``not determined``."""
    lo, hi = gap
    if lo is None or hi is None:
        return ""
    if hi - lo <= TIE_EPS:
        return winner(lo, a, b)
    if lo > TIE_EPS:
        return a
    if hi < -TIE_EPS:
        return b
    return UNDETERMINED


def is_flip_interval(gap_1: tuple[float | None, float | None],
                     gap_2: tuple[float | None, float | None]) -> bool:
    """A sign change that holds under every lineage: both gap intervals exclude 0, on
    opposite sides (for points, :func:`is_flip`).

    >>> is_flip_interval((0.10, 0.15), (-0.08, -0.02))  # A wins, then B, under any lineage
    True
    >>> is_flip_interval((0.10, 0.15), (-0.08, 0.01))  # the second gap may be positive
    False
    """
    (l1, h1), (l2, h2) = gap_1, gap_2
    if l1 is None or h1 is None or l2 is None or h2 is None:
        return False
    return (l1 > TIE_EPS and h2 < -TIE_EPS) or (h1 < -TIE_EPS and l2 > TIE_EPS)


def flip_undetermined(row: Mapping[str, Any]) -> bool:
    """A flip row (as written, or as read back from CSV) whose flip partial lineage leaves
    open: not a flip under every lineage (:func:`is_flip_interval`), but one under some (the
    gap intervals allow opposite signs). Its ``flip`` column is false and its winners
    ``not determined``; a report shows the flip as not determined, never as "no".

    >>> flip_undetermined({"gap_1_lower": 0.10, "gap_1_upper": 0.15,
    ...                    "gap_2_lower": -0.08, "gap_2_upper": 0.01})
    True
    >>> flip_undetermined({"gap_1_lower": 0.10, "gap_1_upper": 0.15,
    ...                    "gap_2_lower": 0.02, "gap_2_upper": 0.08})  # no lineage flips it
    False
    """
    g = [numfmt.value(row.get(k)) for k in ("gap_1_lower", "gap_1_upper", "gap_2_lower",
                                            "gap_2_upper")]
    if any(x is None for x in g):
        return False
    l1, h1, l2, h2 = (float(x) for x in g)  # type: ignore[arg-type]
    possible = (h1 > TIE_EPS and l2 < -TIE_EPS) or (l1 < -TIE_EPS and h2 > TIE_EPS)
    return possible and not is_flip_interval((l1, h1), (l2, h2))


def system_means_rows(ds: Dataset, *, mask: NDArray[np.bool_] | None = None,
                      extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per system, target and measure: the mean over the queries defined under the target
    (``[lower, upper]`` where partial lineage only bounds some values; ``mean`` then empty),
    and over the queries whose values are determined under every target (the system's
    shared subset). ``n_exact`` counts the values the lineage determines, ``n_inferred``
    those that rest on lineage the import inferred (never counted as exact). The last three
    columns bound the mean over the queries in every target's universe (exact or only
    bounded; equal to the shared subset and its mean where the lineage is complete)."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        all_t = ds.shared((s,), ds.targets)
        in_all = ds.shared((s,), ds.targets, bounded=True)
        if mask is not None:
            all_t &= mask
            in_all &= mask
        for t in ds.targets:
            for m in ds.measures:
                v = sc.get(t, m)
                lo, hi = sc.interval(t, m)
                ok = ~np.isnan(lo) if mask is None else ~np.isnan(lo) & mask
                point = ok & ~np.isnan(v)
                inf = sc.inferred_mask(t)
                n_inferred = int((ok & inf).sum()) if inf is not None else 0
                n_exact = int((point & ~inf).sum()) if inf is not None else int(point.sum())
                n = int(ok.sum())
                exact = int(point.sum()) == n
                rows.append({
                    "dataset": ds.name, **(extra or {}), "system": s, "target": t,
                    "measure": str(m), "n": n, "n_exact": n_exact, "n_inferred": n_inferred,
                    "mean": float(v[ok].mean()) if n and exact else None,
                    "lower": float(lo[ok].mean()) if n else None,
                    "upper": float(hi[ok].mean()) if n else None,
                    "n_shared_targets": int(all_t.sum()),
                    "mean_shared_targets": float(v[all_t].mean()) if all_t.any() else None,
                    "n_shared_targets_in_universe": int(in_all.sum()),
                    "lower_shared_targets": float(lo[in_all].mean()) if in_all.any() else None,
                    "upper_shared_targets": float(hi[in_all].mean()) if in_all.any() else None,
                })
    return rows
