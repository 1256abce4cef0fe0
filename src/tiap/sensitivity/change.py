"""Per-query change between targets (the paper's §5.1, Appendix A and Figure 3).

For one system, one measure and a pair of targets ``(t1, t2)``, on the queries defined
under both (the *shared subset*, ``n``), with ``Δ_q = v_q(t2) - v_q(t1)``:

- ``changed``: ``#{q : |Δ_q| > 1e-12}``; ``changed_fraction = changed / n``;
- ``mean_delta = mean Δ``; ``mean_abs_delta = mean |Δ|``;
- ``share_abs_delta_ge_0.1 = #{q : |Δ_q| >= 0.1} / n``;
- ``hit_flips``: queries whose hit at ``hit_k`` (anything credited in the top ``hit_k``)
  differs between the targets; ``top1_flips``: the same at rank 1.

``hit_k`` is the measure's own cutoff, else the largest cutoff among the measures, else
``all``, the whole ranking (:func:`tiap.scoring.scores.hit_cutoff`, as in
``pairwise.csv`` of ``tiap rescore``). A hit is read from ``Success@k`` when it was scored,
else from any measure at cutoff ``k`` (``nDCG@k``, ``R@k``, ``RR@k`` and ``P@k`` are > 0
exactly when something credited is in the top ``k``); the top-1 hit from ``Success@1``,
``P@1`` or ``RR`` (``RR = 1`` exactly when rank 1 is credited). Where neither can be read the
flip count is left empty.

Partial lineage: the statistics are over the queries in the universe of both targets, value
determined or only bounded (``intervals.csv``). Every count and rate is built by
:mod:`tiap.scoring.counts` from the per-query bounds (a query's indicator is decided where
the bounds decide it): exact where the lineage decides it, else its column is empty and the
columns of :data:`CHANGE_BOUND_COLUMNS` (always written, equal to the plain column where
it is exact) hold its bounds over every consistent lineage; ``mean_delta`` likewise. Each
target's bounds are read on their own (the rescoring's ``pairwise.csv`` also couples the
two targets' hits through the items' shared lineage, so its flip counts can be tighter).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.scoring import counts
from tiap.scoring.counts import CHANGED_EPS, change_counts
from tiap.scoring.measures import Measure, primary_measure
from tiap.scoring.scores import SystemScores, hit_cutoff, hit_measure, hit_test, top1_measure
from tiap.sensitivity.load import Dataset

__all__ = [
    "CHANGE_BOUND_COLUMNS",
    "CHANGE_COLUMNS",
    "DELTA_COLUMNS",
    "HIST_EDGES",
    "change_rows",
    "change_stats",
    "delta_rows",
    "flip_state",
    "hist_rows",
    "hit_state",
    "hit_vector",
    "primary_measure",
    "top1_state",
    "top1_vector",
]

#: Bins of the Δ histogram (Figure 3): width 0.1 from -1 to 1, with Δ = 0 in a bin of its own.
HIST_EDGES = tuple(round(-1 + 0.1 * i, 10) for i in range(21))

CHANGE_COLUMNS = (
    "dataset", "system", "measure", "target_1", "target_2", "n_shared", "changed",
    "changed_fraction", "mean_delta", "mean_abs_delta", "n_abs_delta_ge_0.1",
    "share_abs_delta_ge_0.1", "hit_k", "hit_flips", "top1_flips",
)
#: Appended to :data:`CHANGE_COLUMNS` (after the Wilson interval's columns): the queries with a value only bounded, and the bounds of every count,
#: rate and mean (equal to the plain column where it is exact).
CHANGE_BOUND_COLUMNS = ("n_undetermined", *counts.bound_columns((
    "changed", "changed_fraction", "mean_delta", "mean_abs_delta", "n_abs_delta_ge_0.1",
    "share_abs_delta_ge_0.1", "hit_flips", "top1_flips")))


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


def hit_state(scores: SystemScores, target: str, k: int | None,
              measures: Sequence[Measure]) -> NDArray[np.int8] | None:
    """Per query, is anything credited in the top ``k``: 0, 1, or
    :data:`~tiap.scoring.counts.EITHER` where the value's bounds leave it open (read as
    :func:`hit_vector`; meaningless where the query is undefined)."""
    m = hit_measure(k, measures)
    if m is None:
        return None
    lo, hi = scores.interval(target, m)
    return counts.truth(lo, hi, hit_test(m))


def top1_state(scores: SystemScores, target: str,
               measures: Sequence[Measure]) -> NDArray[np.int8] | None:
    """Per query, is rank 1 credited (as :func:`hit_state`)."""
    m = top1_measure(measures)
    if m is None:
        return None
    lo, hi = scores.interval(target, m)
    return counts.truth(lo, hi, hit_test(m, one=True))


def flip_state(a: NDArray[np.int8], b: NDArray[np.int8],
               decided: NDArray[np.int8] | None = None) -> NDArray[np.int8]:
    """Per query, does exactly one of two hit states hold (0, 1 or ``EITHER``): decided
    where both are, else where the items' shared lineage decides it (``decided``: 0 or 1,
    -1 where it does not; ``flip_pairs.csv``)."""
    out = counts.differ(a, b)
    if decided is not None:
        use = (out == counts.EITHER) & (decided >= 0)
        out[use] = decided[use]
    return out


def _decided(sc: SystemScores, t1: str, t2: str, k: int) -> NDArray[np.int8] | None:
    """The rescoring's shared-lineage flip decisions for two targets (in either order: a
    flip is symmetric)."""
    got = sc.flip_pairs.get((t1, t2, k))
    return got if got is not None else sc.flip_pairs.get((t2, t1, k))


def change_stats(
    v1: NDArray[np.float64],
    v2: NDArray[np.float64],
    hit1: NDArray[np.float64] | None = None,
    hit2: NDArray[np.float64] | None = None,
    top1: NDArray[np.float64] | None = None,
    top2: NDArray[np.float64] | None = None,
) -> dict[str, Any]:
    """The change statistics of ``v2 - v1`` over the queries where both are defined, for
    determined values (hits 1.0 / 0.0): :func:`~tiap.scoring.counts.change_counts` with
    no value bounded."""

    def state(h: NDArray[np.float64] | None) -> NDArray[np.int8] | None:
        return None if h is None else counts.known(np.nan_to_num(h) > 0.5)

    def flips(a: NDArray[np.int8] | None, b: NDArray[np.int8] | None,
              ) -> NDArray[np.int8] | None:
        return None if a is None or b is None else flip_state(a, b)

    got = change_counts(v1, v1, v2, v2, flips(state(hit1), state(hit2)),
                        flips(state(top1), state(top2)))
    return {k: got[k] for k in CHANGE_COLUMNS[5:] if k in got}


def change_rows(ds: Dataset, *, mask: NDArray[np.bool_] | None = None,
                extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per system, measure and pair of targets, the change statistics (restricted to
    ``mask`` when given, e.g. one category): :func:`~tiap.scoring.counts.change_counts`
    on the bounds."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        for m in ds.measures:
            k = hit_cutoff(m, ds.measures)
            binary = m.family == "Success" and m.cutoff == k and not m.params
            for t1, t2 in ds.target_pairs:
                (lo1, hi1), (lo2, hi2) = sc.interval(t1, m), sc.interval(t2, m)
                h1, h2 = hit_state(sc, t1, k, ds.measures), hit_state(sc, t2, k, ds.measures)
                p1, p2 = top1_state(sc, t1, ds.measures), top1_state(sc, t2, ds.measures)
                hits = (None if h1 is None or h2 is None else
                        flip_state(h1, h2, _decided(sc, t1, t2, k) if k else None))
                tops = (None if p1 is None or p2 is None else
                        flip_state(p1, p2, _decided(sc, t1, t2, 1)))
                if mask is not None:
                    lo1, hi1, lo2, hi2 = lo1[mask], hi1[mask], lo2[mask], hi2[mask]
                    hits, tops = (None if x is None else x[mask] for x in (hits, tops))
                stats = change_counts(lo1, hi1, lo2, hi2, hits, tops,
                                      binary=binary and hits is not None)
                rows.append({"dataset": ds.name, **(extra or {}), "system": s,
                             "measure": str(m), "target_1": t1, "target_2": t2,
                             **stats, "hit_k": k if k else "all"})
    return rows


#: The columns of ``deltas.csv``: ``delta`` where the lineage determines both values, else
#: empty, with ``delta_lower`` / ``delta_upper`` (always written; equal to ``delta`` where it
#: is exact) bounding it over every lineage, each target's bounds read on their own.
DELTA_COLUMNS = ("dataset", "system", "measure", "target_1", "target_2", "query_id", "delta",
                 "delta_lower", "delta_upper")


def delta_rows(ds: Dataset, measure: Measure) -> list[dict[str, Any]]:
    """Per-query Δ of ``measure`` for every system and pair of targets (Figure 3's data):
    every query in both targets' universes, ``[lo2 - hi1, hi2 - lo1]`` where partial lineage
    only bounds a value (:data:`DELTA_COLUMNS`)."""
    rows: list[dict[str, Any]] = []
    for s, sc in ds.systems.items():
        for t1, t2 in ds.target_pairs:
            (lo1, hi1), (lo2, hi2) = sc.interval(t1, measure), sc.interval(t2, measure)
            both = np.flatnonzero(~np.isnan(lo1) & ~np.isnan(lo2))
            exact = (lo1 == hi1) & (lo2 == hi2)
            for i in both.tolist():
                lo, hi = float(lo2[i] - hi1[i]), float(hi2[i] - lo1[i])
                rows.append({"dataset": ds.name, "system": s, "measure": str(measure),
                             "target_1": t1, "target_2": t2, "query_id": ds.query_ids[i],
                             "delta": lo if exact[i] else None, "delta_lower": lo,
                             "delta_upper": hi})
    return rows


def hist_rows(ds: Dataset, measure: Measure,
              notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The Δ histogram of ``measure`` per system and pair of targets: bins of width 0.1
    on [-1, 1] (left-closed; the last also closed), plus a bin of exactly-zero Δ. A Δ
    partial lineage only bounds has no bin: ``notes`` receives how many each histogram
    leaves out (``deltas.csv`` bounds them)."""
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
            open_ = int((~np.isnan(sc.interval(t1, measure)[0])
                         & ~np.isnan(sc.interval(t2, measure)[0])).sum() - both.sum())
            if open_ and notes is not None:
                notes.append(f"{ds.name}: {s} {t1} → {t2}: {open_} queries' {measure} Δ only "
                             "bounded by partial lineage, left out of change_hist.csv (their "
                             "bounds are in deltas.csv)")
            rows.append({**base, "bin_low": 0.0, "bin_high": 0.0, "count": int(zero.sum())})
            counts, _ = np.histogram(np.clip(d[~zero], -1, 1), bins=edges)
            for lo, hi, c in zip(edges[:-1].tolist(), edges[1:].tolist(), counts.tolist(),
                                 strict=True):
                rows.append({**base, "bin_low": lo, "bin_high": hi, "count": int(c)})
    return rows
