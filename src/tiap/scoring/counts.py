"""Counts and rates over queries whose values partial lineage may only bound.

A count over queries (queries that changed between two targets, hit flips, top-1 flips,
queries with ``|Δ| >= 0.1``) adds up one indicator per query. Where the lineage determines
both values of a query its indicator is 0 or 1; where it only bounds them
(:mod:`tiap.scoring.bounds`) the indicator may still be decided by the bounds (two disjoint
intervals certainly differ), or it is :data:`EITHER`: 0 under some consistent lineage, 1
under another. :func:`count` then reports the count as exact when no indicator is
:data:`EITHER`, else as the interval ``[known, known + open]`` (``known``: indicators
certainly 1, ``open``: :data:`EITHER`), which holds the count under every consistent
lineage. A rate is the count over ``n``, bounded the same way.

The indicators here read each target's per-query bounds on their own. The two values of a
query are decided by one lineage, so some combinations of the bounds cannot occur together;
treating them as free gives an interval that always holds (every lineage's count is in it)
but may be wider than the tightest one. Where the items' shared lineage decides a
comparison the per-target bounds leave open, the caller passes the decided indicator instead
(rescoring does so for hit and top-1 flips: :func:`joint_flip`).

One mechanism for every count: ``pairwise.csv`` of ``tiap rescore`` and ``change.csv`` of
``tiap sensitivity`` both take their change statistics from :func:`change_counts` (they
differ only in where the hit flip states come from), and write them with :func:`cells`: the
plain column holds the count where it is exact and is empty where it is not, and
``<column>_lower`` / ``<column>_upper`` always hold its bounds (as ``summary.csv`` gives
``mean``, ``lower``, ``upper``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CHANGED_EPS",
    "EITHER",
    "LARGE_DELTA",
    "Count",
    "abs_delta_bounds",
    "at_least",
    "bound_columns",
    "cells",
    "change_counts",
    "changed",
    "count",
    "differ",
    "joint_flip",
    "known",
    "mean_cells",
    "rate_cells",
    "truth",
]

#: An indicator that is 0 under some consistent lineage and 1 under another.
EITHER = 2

Indicator = NDArray[np.int8]  # 0, 1 or EITHER per query
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Count:
    """A count of ``n`` queries' indicators: ``known`` certainly 1, ``open`` undecided."""

    n: int
    known: int
    open: int = 0

    @property
    def exact(self) -> bool:
        return self.open == 0

    @property
    def lower(self) -> int:
        return self.known

    @property
    def upper(self) -> int:
        return self.known + self.open

    @property
    def value(self) -> int | None:
        """The count where the lineage decides it, else ``None``."""
        return self.known if self.exact else None

    def rate(self) -> tuple[float | None, float | None, float | None]:
        """``(rate or None, lower, upper)`` of the count over ``n`` (all ``None`` at n = 0)."""
        if not self.n:
            return None, None, None
        lo, hi = self.lower / self.n, self.upper / self.n
        return (lo if self.exact else None), lo, hi


def count(indicator: Indicator) -> Count:
    """The count of the indicators (0, 1 or :data:`EITHER` each)."""
    ind = np.asarray(indicator)
    return Count(int(ind.size), int((ind == 1).sum()), int((ind == EITHER).sum()))


def known(values: NDArray[np.bool_]) -> Indicator:
    """Indicators the data decides (``True`` -> 1)."""
    return np.asarray(values, dtype=bool).astype(np.int8)


def truth(lower: Floats, upper: Floats, test: Callable[[Floats], NDArray[np.bool_]],
          ) -> Indicator:
    """``test(value)`` per query, for a ``test`` monotone in the value (``v > 0``,
    ``v >= 1``): decided where it gives the same answer at both bounds, else
    :data:`EITHER`."""
    a, b = known(test(lower)), known(test(upper))
    return np.where(a == b, a, EITHER).astype(np.int8)


def differ(a: Indicator, b: Indicator) -> Indicator:
    """``a xor b`` per query: decided where both are, else :data:`EITHER` (each side read on
    its own; :func:`joint_flip` couples them)."""
    out = (a != b).astype(np.int8)
    out[(a == EITHER) | (b == EITHER)] = EITHER
    return out


def changed(lo1: Floats, hi1: Floats, lo2: Floats, hi2: Floats, eps: float) -> Indicator:
    """``|v2 - v1| > eps`` per query, from the two values' bounds: 1 where the intervals
    are further apart than ``eps``, 0 where no choice of the two values within them differs
    by more than ``eps`` (both determined, or within ``eps``), else :data:`EITHER`."""
    d_lo, d_hi = lo2 - hi1, hi2 - lo1
    yes = (d_lo > eps) | (d_hi < -eps)
    no = (d_lo >= -eps) & (d_hi <= eps)
    return _three(yes, no)


def at_least(lo1: Floats, hi1: Floats, lo2: Floats, hi2: Floats, threshold: float,
             ) -> Indicator:
    """``|v2 - v1| >= threshold`` per query, from the two values' bounds."""
    d_lo, d_hi = lo2 - hi1, hi2 - lo1
    yes = (d_lo >= threshold) | (d_hi <= -threshold)
    no = (d_hi < threshold) & (d_lo > -threshold)
    return _three(yes, no)


def _three(yes: NDArray[np.bool_], no: NDArray[np.bool_]) -> Indicator:
    out = np.full(yes.shape, EITHER, np.int8)
    out[no] = 0
    out[yes] = 1
    return out


def abs_delta_bounds(lo1: Floats, hi1: Floats, lo2: Floats, hi2: Floats,
                     ) -> tuple[Floats, Floats]:
    """Per query, the least and greatest ``|v2 - v1|`` within the two values' bounds."""
    d_lo, d_hi = lo2 - hi1, hi2 - lo1
    least = np.where((d_lo <= 0) & (d_hi >= 0), 0.0, np.minimum(np.abs(d_lo), np.abs(d_hi)))
    return least, np.maximum(np.abs(d_lo), np.abs(d_hi))


def joint_flip(first: Iterable[tuple[int, int]], second: Iterable[tuple[int, int]],
               maybe: int = 1, yes: int = 2) -> int:
    """Whether something is credited in the top ``k`` under exactly one of two targets,
    from the items of the top ``k`` each target may credit, as ``(rank, credited)`` with
    ``credited`` ``yes`` or ``maybe`` (:class:`tiap.scoring.bounds.Position`).

    Whether an item is credited depends on its lineage alone (does it reach an evidence
    unit of the query), so an item both targets may credit, with the same status under
    both, is one unknown: credited under both or under neither. Every other undecided item
    is an unknown of its own (a relaxation: the unknowns may be tied by constraints across
    items, which only removes outcomes). Returns 0, 1 or :data:`EITHER` over every
    assignment of the unknowns.
    """
    a, b = dict(first), dict(second)
    shared = [r for r in a if r in b and a[r] == b[r]]
    only_a = [a[r] for r in a if r not in shared]
    only_b = [b[r] for r in b if r not in shared]
    both = [a[r] for r in shared]

    def values(credits: list[int]) -> tuple[bool, ...]:
        if any(c == yes for c in credits):
            return (True,)
        return (False, True) if any(c == maybe for c in credits) else (False,)

    got = {(x or z) != (y or z)
           for x, y, z in product(values(only_a), values(only_b), values(both))}
    return int(got.pop()) if len(got) == 1 else EITHER


# ------------------------------------------------------------------------------------------
# the change between two targets

#: ``|Δ|`` above this is a change (float noise below it is none).
CHANGED_EPS = 1e-12
#: ``|Δ|`` at least this is a large change (``n_abs_delta_ge_0.1``).
LARGE_DELTA = 0.1


def change_counts(
    lo1: NDArray[np.float64], hi1: NDArray[np.float64],
    lo2: NDArray[np.float64], hi2: NDArray[np.float64],
    hits: NDArray[np.int8] | None = None,
    tops: NDArray[np.int8] | None = None,
    *, binary: bool = False,
) -> dict[str, Any]:
    """The change statistics of ``v2 - v1`` over the queries in both universes (not NaN),
    from the per-query bounds (``lo == hi`` where a value is determined): ``n_shared``,
    ``n_undetermined`` (queries with a value only bounded), and the cells (:func:`cells`,
    :func:`rate_cells`, :func:`mean_cells`) of ``changed`` (``|Δ| > CHANGED_EPS``),
    ``changed_fraction``, ``mean_delta``, ``mean_abs_delta``, ``n_abs_delta_ge_0.1`` and
    ``share_abs_delta_ge_0.1`` (``|Δ| >= LARGE_DELTA``), ``hit_flips`` and ``top1_flips``.
    ``hits`` and ``tops``: the hit and top-1 flip states per query (0, 1 or
    :data:`EITHER`; ``None``: not known, the cells are empty); with ``binary`` the measure
    is the hit itself (``Success@k``), so a query changed exactly when its hit flipped.

    The one computation of ``pairwise.csv`` (``tiap rescore``) and ``change.csv`` (``tiap
    sensitivity``); they differ in where the flip states come from.

    >>> import numpy as np
    >>> v1, v2 = np.array([0.5, 1.0, np.nan]), np.array([0.5, 0.0, 1.0])
    >>> c = change_counts(v1, v1, v2, v2)
    >>> c["n_shared"], c["changed"], c["mean_delta"], c["n_abs_delta_ge_0.1"]
    (2, 1, -0.5, 1)
    >>> lo2, hi2 = np.array([0.5, 0.0, 1.0]), np.array([0.6, 0.0, 1.0])
    >>> c = change_counts(v1, v1, lo2, hi2)
    >>> c["n_undetermined"], c["changed"], c["changed_lower"], c["changed_upper"]
    (1, None, 1, 2)
    """
    both = ~np.isnan(lo1) & ~np.isnan(lo2)
    l1, h1, l2, h2 = lo1[both], hi1[both], lo2[both], hi2[both]
    n = int(both.sum())
    if binary and hits is not None:
        moved = large = count(hits[both])
    else:
        moved = count(changed(l1, h1, l2, h2, CHANGED_EPS))
        large = count(at_least(l1, h1, l2, h2, LARGE_DELTA - CHANGED_EPS))
    abs_lo, abs_hi = abs_delta_bounds(l1, h1, l2, h2)
    out: dict[str, Any] = {
        "n_shared": n,
        "n_undetermined": int(((l1 != h1) | (l2 != h2)).sum()),
        **cells("changed", moved),
        **rate_cells("changed_fraction", moved),
        **mean_cells("mean_delta", l2 - h1, h2 - l1),
        **mean_cells("mean_abs_delta", abs_lo, abs_hi),
        **cells("n_abs_delta_ge_0.1", large),
        **rate_cells("share_abs_delta_ge_0.1", large),
    }
    for name, state in (("hit_flips", hits), ("top1_flips", tops)):
        if state is None:
            out.update({name: None, f"{name}_lower": None, f"{name}_upper": None})
        else:
            out.update(cells(name, count(state[both])))
    return out


# ------------------------------------------------------------------------------------------
# table cells


def bound_columns(names: Iterable[str]) -> tuple[str, ...]:
    """``<name>_lower, <name>_upper`` for every name, in order."""
    return tuple(f"{n}_{side}" for n in names for side in ("lower", "upper"))


def cells(name: str, c: Count) -> dict[str, Any]:
    """A count's cells: ``name`` (the count where exact, else ``None``), ``name_lower``,
    ``name_upper``."""
    return {name: c.value, f"{name}_lower": c.lower, f"{name}_upper": c.upper}


def rate_cells(name: str, c: Count) -> dict[str, Any]:
    """A rate's cells (the count over ``n``), as :func:`cells`."""
    v, lo, hi = c.rate()
    return {name: v, f"{name}_lower": lo, f"{name}_upper": hi}


def mean_cells(name: str, lower: Floats, upper: Floats) -> dict[str, Any]:
    """A mean's cells over per-query bounds: ``name`` where every query is determined."""
    if not lower.size:
        return {name: None, f"{name}_lower": None, f"{name}_upper": None}
    lo, hi = float(lower.mean()), float(upper.mean())
    exact = bool(np.array_equal(lower, upper))
    return {name: lo if exact else None, f"{name}_lower": lo, f"{name}_upper": hi}
