"""Per-query change between targets (the paper's §5.1, Appendix A and Figure 3).

For one system, one measure and a pair of targets ``(t1, t2)``, on the queries defined
under both (the *shared subset*, ``n``), with ``Δ_q = v_q(t2) - v_q(t1)``:

- ``changed``: ``#{q : |Δ_q| > 1e-12}``; ``changed_fraction = changed / n``;
- ``mean_delta = mean Δ``; ``mean_abs_delta = mean |Δ|``;
- ``share_abs_delta_ge_0.1 = #{q : |Δ_q| >= 0.1} / n``;
- ``hit_flips``: queries whose hit at ``hit_k`` (anything credited in the top ``hit_k``)
  differs between the targets; ``top1_flips``: the same at rank 1.

``hit_k`` is the measure's own cutoff, else the largest cutoff among the measures (as in
``pairwise.csv`` of ``tiap rescore``). A hit is read from ``Success@k`` when it was scored,
else from any measure at cutoff ``k`` (``nDCG@k``, ``R@k``, ``RR@k`` and ``P@k`` are > 0
exactly when something credited is in the top ``k``); the top-1 hit from ``Success@1``,
``P@1`` or ``RR`` (``RR = 1`` exactly when rank 1 is credited). Where neither can be read the
flip count is left empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.scoring.measures import Measure, primary_measure
from tiap.sensitivity.load import Dataset, SystemScores

__all__ = [
    "CHANGE_COLUMNS",
    "CHANGED_EPS",
    "HIST_EDGES",
    "LARGE_DELTA",
    "change_rows",
    "change_stats",
    "delta_rows",
    "hist_rows",
    "hit_cutoff",
    "hit_vector",
    "primary_measure",
    "top1_vector",
]

CHANGED_EPS = 1e-12
LARGE_DELTA = 0.1
#: Bins of the Δ histogram (Figure 3): width 0.1 from -1 to 1, with Δ = 0 in a bin of its own.
HIST_EDGES = tuple(round(-1 + 0.1 * i, 10) for i in range(21))

CHANGE_COLUMNS = (
    "dataset", "system", "measure", "target_1", "target_2", "n_shared", "changed",
    "changed_fraction", "mean_delta", "mean_abs_delta", "n_abs_delta_ge_0.1",
    "share_abs_delta_ge_0.1", "hit_k", "hit_flips", "top1_flips",
)


def hit_cutoff(m: Measure, measures: Sequence[Measure]) -> int | None:
    """The k of the hit reported next to ``m`` (``None``: the whole list)."""
    if m.cutoff:
        return m.cutoff
    cuts = [x.cutoff for x in measures if x.cutoff]
    return max(cuts) if cuts else None


def hit_vector(scores: SystemScores, target: str, k: int | None,
               measures: Sequence[Measure]) -> NDArray[np.float64] | None:
    """1.0 / 0.0 per query (NaN where undefined): is anything credited in the top ``k``?"""
    by_name = {str(m): m for m in measures}
    want = f"Success@{k}" if k else "Success"
    if want in by_name:
        return scores.get(target, by_name[want]).copy()
    for m in measures:
        if m.cutoff == k and m.family in ("nDCG", "R", "RR", "P", "Success"):
            v = scores.get(target, m)
            return np.where(np.isnan(v), np.nan, (v > 0).astype(np.float64))
    return None


def top1_vector(scores: SystemScores, target: str,
                measures: Sequence[Measure]) -> NDArray[np.float64] | None:
    """1.0 / 0.0 per query (NaN where undefined): is rank 1 credited?"""
    for m in measures:
        if (m.family in ("Success", "P") and m.cutoff == 1) or m.family == "RR":
            v = scores.get(target, m)
            if m.family == "RR":
                return np.where(np.isnan(v), np.nan, (v >= 1 - 1e-12).astype(np.float64))
            return v.copy()
    for m in measures:
        if m.family in ("nDCG", "R") and m.cutoff == 1:
            v = scores.get(target, m)
            return np.where(np.isnan(v), np.nan, (v > 0).astype(np.float64))
    return None


def change_stats(
    v1: NDArray[np.float64],
    v2: NDArray[np.float64],
    hit1: NDArray[np.float64] | None = None,
    hit2: NDArray[np.float64] | None = None,
    top1: NDArray[np.float64] | None = None,
    top2: NDArray[np.float64] | None = None,
) -> dict[str, Any]:
    """The change statistics of ``v2 - v1`` over the queries where both are defined."""
    both = ~np.isnan(v1) & ~np.isnan(v2)
    d = v2[both] - v1[both]
    n = int(both.sum())
    changed = int((np.abs(d) > CHANGED_EPS).sum())
    large = int((np.abs(d) >= LARGE_DELTA - CHANGED_EPS).sum())
    return {
        "n_shared": n,
        "changed": changed,
        "changed_fraction": changed / n if n else None,
        "mean_delta": float(d.mean()) if n else None,
        "mean_abs_delta": float(np.abs(d).mean()) if n else None,
        "n_abs_delta_ge_0.1": large,
        "share_abs_delta_ge_0.1": large / n if n else None,
        "hit_flips": (int((hit1[both] != hit2[both]).sum())
                      if hit1 is not None and hit2 is not None else None),
        "top1_flips": (int((top1[both] != top2[both]).sum())
                       if top1 is not None and top2 is not None else None),
    }


def change_rows(ds: Dataset, *, mask: NDArray[np.bool_] | None = None,
                extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per system, measure and pair of targets, the change statistics (restricted to
    ``mask`` when given, e.g. one category)."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        for m in ds.measures:
            k = hit_cutoff(m, ds.measures)
            for t1, t2 in ds.target_pairs:
                v1, v2 = sc.get(t1, m), sc.get(t2, m)
                h1, h2 = hit_vector(sc, t1, k, ds.measures), hit_vector(sc, t2, k, ds.measures)
                p1, p2 = top1_vector(sc, t1, ds.measures), top1_vector(sc, t2, ds.measures)
                if mask is not None:
                    v1, v2 = v1[mask], v2[mask]
                    h1, h2, p1, p2 = (None if x is None else x[mask] for x in (h1, h2, p1, p2))
                stats = change_stats(v1, v2, h1, h2, p1, p2)
                rows.append({"dataset": ds.name, **(extra or {}), "system": s,
                             "measure": str(m), "target_1": t1, "target_2": t2,
                             **{k_: stats[k_] for k_ in CHANGE_COLUMNS[5:12]},
                             "hit_k": k if k else "all", "hit_flips": stats["hit_flips"],
                             "top1_flips": stats["top1_flips"]})
    return rows


def delta_rows(ds: Dataset, measure: Measure) -> list[dict[str, Any]]:
    """Per-query Δ of ``measure`` for every system and pair of targets (Figure 3's data)."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        for t1, t2 in ds.target_pairs:
            v1, v2 = sc.get(t1, measure), sc.get(t2, measure)
            both = np.flatnonzero(~np.isnan(v1) & ~np.isnan(v2))
            for i, d in zip(both.tolist(), (v2[both] - v1[both]).tolist(), strict=True):
                rows.append({"dataset": ds.name, "system": s, "measure": str(measure),
                             "target_1": t1, "target_2": t2, "query_id": ds.query_ids[i],
                             "delta": d})
    return rows


def hist_rows(ds: Dataset, measure: Measure) -> list[dict[str, Any]]:
    """The Δ histogram of ``measure`` per system and pair of targets: bins of width 0.1
    on [-1, 1] (left-closed; the last also closed), plus a bin of exactly-zero Δ."""
    edges = np.asarray(HIST_EDGES)
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        for t1, t2 in ds.target_pairs:
            v1, v2 = sc.get(t1, measure), sc.get(t2, measure)
            both = ~np.isnan(v1) & ~np.isnan(v2)
            d = v2[both] - v1[both]
            zero = np.abs(d) <= CHANGED_EPS
            base = {"dataset": ds.name, "system": s, "measure": str(measure),
                    "target_1": t1, "target_2": t2}
            rows.append({**base, "bin_low": 0.0, "bin_high": 0.0, "count": int(zero.sum())})
            counts, _ = np.histogram(np.clip(d[~zero], -1, 1), bins=edges)
            for lo, hi, c in zip(edges[:-1].tolist(), edges[1:].tolist(), counts.tolist(),
                                 strict=True):
                rows.append({**base, "bin_low": lo, "bin_high": hi, "count": int(c)})
    return rows
