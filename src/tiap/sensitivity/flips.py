"""Winner flips between systems (the paper's §3.3 and §5.6), with their statistics.

For systems ``A`` and ``B`` and targets ``t1``, ``t2``, the *shared subset* ``S`` is the set of
queries defined under both targets for both systems. On ``S`` the gap under target ``t`` is

    gap_t = (1/|S|) Σ_{q ∈ S} (v_A,q(t) - v_B,q(t))          (A minus B)

and a **winner flip** is a sign change: ``gap_1 · gap_2 < 0`` (a gap within 1e-12 of 0 is a
tie, never a flip). Each gap has a paired bootstrap percentile interval and a paired
sign-flip randomization p-value (:mod:`tiap.sensitivity.stats`), the two targets' gaps
resampled with the same queries. A flip is **significant** when both intervals exclude 0
with opposite signs: ``ci_1_low > 0 and ci_2_high < 0`` or ``ci_1_high < 0 and ci_2_low > 0``.

All measures of one comparison are resampled together, with a generator keyed by
``(seed, dataset, A, B, t1, t2[, category])``.

**Partial lineage.** Where some value of the shared subset is only bounded (``[lo, hi]``,
from ``intervals.csv``), the gap is the interval ``[gap_lower, gap_upper]`` =
``mean(lo_A - hi_B)``, ``mean(hi_A - lo_B)`` over the shared queries (``gap`` empty), the
winner is ``a`` or ``b`` only when that interval excludes 0 (else ``not determined``), and
a flip is a flip only when both gap intervals exclude 0 with opposite signs: a flip decided
on an interval that straddles zero is not a flip. The bootstrap resamples the lower and the
upper differences with the same queries; the reported interval runs from the lower end of
the first to the upper end of the second, so it holds every lineage's interval, and the
p-value is the larger of the two differences' p-values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.scoring.measures import Measure
from tiap.sensitivity.load import Dataset
from tiap.sensitivity.stats import DEFAULT_ALPHA, DEFAULT_RESAMPLES, paired_test

__all__ = [
    "FLIP_COLUMNS",
    "MEANS_COLUMNS",
    "UNDETERMINED",
    "gap_text",
    "is_flip_interval",
    "is_flip",
    "is_significant_flip",
    "system_means_rows",
    "winner",
    "winner_flips",
]

FLIP_COLUMNS = (
    "dataset", "measure", "system_a", "system_b", "target_1", "target_2", "n_shared",
    "n_undetermined", "gap_1", "gap_2", "gap_1_lower", "gap_1_upper", "gap_2_lower",
    "gap_2_upper", "ci_1_low", "ci_1_high", "ci_2_low", "ci_2_high", "p_1", "p_2",
    "winner_1", "winner_2", "flip", "significant_flip",
)
UNDETERMINED = "not determined"
#: Gaps within this of 0 are ties (float noise in a mean of equal values is not a winner).
TIE_EPS = 1e-12
MEANS_COLUMNS = ("dataset", "system", "target", "measure", "n", "n_exact", "mean", "lower",
                 "upper", "n_shared_targets", "mean_shared_targets")


def winner(gap: float | None, a: str, b: str) -> str:
    """``a`` when the gap (a minus b) is positive, ``b`` when negative, ``tie`` at 0."""
    if gap is None or gap != gap:
        return ""
    return a if gap > TIE_EPS else b if gap < -TIE_EPS else "tie"


def is_flip(gap_1: float | None, gap_2: float | None) -> bool:
    """A sign change of the gap (a zero gap is a tie, not a flip)."""
    if gap_1 is None or gap_2 is None or gap_1 != gap_1 or gap_2 != gap_2:
        return False
    return (gap_1 > TIE_EPS and gap_2 < -TIE_EPS) or (gap_1 < -TIE_EPS and gap_2 > TIE_EPS)


def is_significant_flip(ci_1: tuple[float, float], ci_2: tuple[float, float]) -> bool:
    """Both intervals exclude 0, on opposite sides."""
    (l1, h1), (l2, h2) = ci_1, ci_2
    if any(x is None or x != x for x in (l1, h1, l2, h2)):
        return False
    return (l1 > 0 and h2 < 0) or (h1 < 0 and l2 > 0)


def gap_text(row: Mapping[str, Any], which: int, digits: int = 4) -> str:
    """A flip row's gap ``which`` (1 or 2) as text: ``+0.1234``, or ``[+0.0768, +0.5768]``
    when partial lineage only bounds it (rows as written or as read back from CSV)."""
    def num(v: Any) -> float | None:
        return None if v in (None, "") else float(v)

    g = num(row.get(f"gap_{which}"))
    if g is not None:
        return f"{g:+.{digits}f}"
    lo, hi = num(row.get(f"gap_{which}_lower")), num(row.get(f"gap_{which}_upper"))
    if lo is None or hi is None:
        return "-"
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def _none(x: float) -> float | None:
    return None if x != x else float(x)


def winner_flips(
    ds: Dataset,
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    systems: Sequence[str] | None = None,
    mask: NDArray[np.bool_] | None = None,
    key: Sequence[str] = (),
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One row per (measure, pair of systems, pair of targets): the columns of
    :data:`FLIP_COLUMNS` (``extra`` columns after ``dataset``). ``mask`` restricts the
    queries (a category); ``key`` is added to the generator key."""
    names = list(systems or ds.systems)
    ms: tuple[Measure, ...] = ds.measures
    rows: list[dict[str, Any]] = []
    for a, b in combinations(names, 2):
        sa, sb = ds.systems[a], ds.systems[b]
        for t1, t2 in combinations(ds.targets, 2):
            shared = ds.shared((a, b), (t1, t2), bounded=True)
            if mask is not None:
                shared &= mask
            pairs = [(t, m) for t in (t1, t2) for m in ms]
            lo = [sa.interval(t, m)[0][shared] - sb.interval(t, m)[1][shared] for t, m in pairs]
            hi = [sa.interval(t, m)[1][shared] - sb.interval(t, m)[0][shared] for t, m in pairs]
            d_lo = np.column_stack(lo) if lo else np.empty((0, 0))
            d_hi = np.column_stack(hi) if hi else np.empty((0, 0))
            open_ = ~np.isclose(d_lo, d_hi, rtol=0.0, atol=TIE_EPS)  # (query, column)
            nm = len(ms)
            if not open_.any():
                test = paired_test(d_lo, seed=seed, key=(ds.name, *key, a, b, t1, t2),
                                   resamples=resamples, alpha=alpha)
                t_lo = t_hi = test
            else:
                both = paired_test(np.hstack([d_lo, d_hi]), seed=seed,
                                   key=(ds.name, *key, a, b, t1, t2), resamples=resamples,
                                   alpha=alpha)
                t_lo, t_hi = _split(both, 2 * nm)  # lower columns, then upper ones
            for j, m in enumerate(ms):
                cols = (j, nm + j)
                und = [int(open_[:, c].sum()) for c in cols]
                gaps = [(_none(t_lo.mean[c]), _none(t_hi.mean[c])) for c in cols]
                g1, g2 = (g[0] if u == 0 else None for g, u in zip(gaps, und, strict=True))
                ci1 = (_none(t_lo.ci_low[j]), _none(t_hi.ci_high[j]))
                ci2 = (_none(t_lo.ci_low[nm + j]), _none(t_hi.ci_high[nm + j]))
                p1, p2 = (_none(max(t_lo.p[c], t_hi.p[c])) for c in cols)
                flip = is_flip_interval(gaps[0], gaps[1])
                rows.append({
                    "dataset": ds.name, **(extra or {}), "measure": str(m),
                    "system_a": a, "system_b": b, "target_1": t1, "target_2": t2,
                    "n_shared": t_lo.n, "n_undetermined": max(und),
                    "gap_1": g1, "gap_2": g2,
                    "gap_1_lower": gaps[0][0], "gap_1_upper": gaps[0][1],
                    "gap_2_lower": gaps[1][0], "gap_2_upper": gaps[1][1],
                    "ci_1_low": ci1[0], "ci_1_high": ci1[1],
                    "ci_2_low": ci2[0], "ci_2_high": ci2[1],
                    "p_1": p1, "p_2": p2,
                    "winner_1": winner_interval(gaps[0], a, b),
                    "winner_2": winner_interval(gaps[1], a, b),
                    "flip": flip,
                    "significant_flip": flip and is_significant_flip(ci1, ci2),
                })
    return rows


def _split(test: Any, h: int) -> tuple[Any, Any]:
    """A paired test's first ``h`` columns (lower differences) and the rest (upper)."""
    from tiap.sensitivity.stats import PairedTest

    return (PairedTest(test.n, test.mean[:h], test.ci_low[:h], test.ci_high[:h], test.p[:h]),
            PairedTest(test.n, test.mean[h:], test.ci_low[h:], test.ci_high[h:], test.p[h:]))


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
    opposite sides (for points, :func:`is_flip`)."""
    (l1, h1), (l2, h2) = gap_1, gap_2
    if any(x is None for x in (l1, h1, l2, h2)):
        return False
    return (l1 > TIE_EPS and h2 < -TIE_EPS) or (h1 < -TIE_EPS and l2 > TIE_EPS)


def system_means_rows(ds: Dataset, *, mask: NDArray[np.bool_] | None = None,
                      extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per system, target and measure: the mean over the queries defined under the target
    (``[lower, upper]`` where partial lineage only bounds some values; ``mean`` then empty),
    and over the queries whose values are determined under every target (the system's
    shared subset)."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        all_t = ds.shared((s,), ds.targets)
        if mask is not None:
            all_t &= mask
        for t in ds.targets:
            for m in ds.measures:
                v = sc.get(t, m)
                lo, hi = sc.interval(t, m)
                ok = ~np.isnan(lo) if mask is None else ~np.isnan(lo) & mask
                n_exact = int((ok & ~np.isnan(v)).sum())
                n = int(ok.sum())
                exact = n_exact == n
                rows.append({
                    "dataset": ds.name, **(extra or {}), "system": s, "target": t,
                    "measure": str(m), "n": n, "n_exact": n_exact,
                    "mean": float(v[ok].mean()) if n and exact else None,
                    "lower": float(lo[ok].mean()) if n else None,
                    "upper": float(hi[ok].mean()) if n else None,
                    "n_shared_targets": int(all_t.sum()),
                    "mean_shared_targets": float(v[all_t].mean()) if all_t.any() else None,
                })
    return rows
