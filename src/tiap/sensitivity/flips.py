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
"""

from __future__ import annotations

from collections.abc import Sequence
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
    "is_flip",
    "is_significant_flip",
    "system_means_rows",
    "winner",
    "winner_flips",
]

FLIP_COLUMNS = (
    "dataset", "measure", "system_a", "system_b", "target_1", "target_2", "n_shared",
    "gap_1", "gap_2", "ci_1_low", "ci_1_high", "ci_2_low", "ci_2_high", "p_1", "p_2",
    "winner_1", "winner_2", "flip", "significant_flip",
)
#: Gaps within this of 0 are ties (float noise in a mean of equal values is not a winner).
TIE_EPS = 1e-12
MEANS_COLUMNS = ("dataset", "system", "target", "measure", "n", "mean", "n_shared_targets",
                 "mean_shared_targets")


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
            shared = ds.shared((a, b), (t1, t2))
            if mask is not None:
                shared &= mask
            cols = [sa.get(t, m)[shared] - sb.get(t, m)[shared] for t in (t1, t2) for m in ms]
            d = np.column_stack(cols) if cols else np.empty((0, 0))
            test = paired_test(d, seed=seed, key=(ds.name, *key, a, b, t1, t2),
                               resamples=resamples, alpha=alpha)
            nm = len(ms)
            for j, m in enumerate(ms):
                g1, g2 = _none(test.mean[j]), _none(test.mean[nm + j])
                ci1 = (_none(test.ci_low[j]), _none(test.ci_high[j]))
                ci2 = (_none(test.ci_low[nm + j]), _none(test.ci_high[nm + j]))
                rows.append({
                    "dataset": ds.name, **(extra or {}), "measure": str(m),
                    "system_a": a, "system_b": b, "target_1": t1, "target_2": t2,
                    "n_shared": test.n, "gap_1": g1, "gap_2": g2,
                    "ci_1_low": ci1[0], "ci_1_high": ci1[1],
                    "ci_2_low": ci2[0], "ci_2_high": ci2[1],
                    "p_1": _none(test.p[j]), "p_2": _none(test.p[nm + j]),
                    "winner_1": winner(g1, a, b), "winner_2": winner(g2, a, b),
                    "flip": is_flip(g1, g2),
                    "significant_flip": is_flip(g1, g2) and is_significant_flip(ci1, ci2),
                })
    return rows


def system_means_rows(ds: Dataset, *, mask: NDArray[np.bool_] | None = None,
                      extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per system, target and measure: the mean over the queries defined under the target,
    and over the queries defined under every target (the system's shared subset)."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        all_t = ds.shared((s,), ds.targets)
        if mask is not None:
            all_t &= mask
        for t in ds.targets:
            for m in ds.measures:
                v = sc.get(t, m)
                ok = ~np.isnan(v) if mask is None else ~np.isnan(v) & mask
                rows.append({
                    "dataset": ds.name, **(extra or {}), "system": s, "target": t,
                    "measure": str(m), "n": int(ok.sum()),
                    "mean": float(v[ok].mean()) if ok.any() else None,
                    "n_shared_targets": int(all_t.sum()),
                    "mean_shared_targets": float(v[all_t].mean()) if all_t.any() else None,
                })
    return rows
