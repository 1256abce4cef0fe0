"""Cardinality: does target-set size explain the score shift? (§5.2, Appendix I.)

Per (query, system) on the queries defined under both targets, with the base target ``t1``
(Raw) and an expanded one ``t2`` (Source, or Canonical on its covered subset):

    x = |T2| - |T1|        (n_members of the union of the groups, from target_sizes.csv)
    y = v(t2) - v(t1)      (the shift of the measure, nDCG by default)

- Pearson ``r`` of (x, y) with its two-sided p-value, ``R² = r²`` (the share of the shift's
  variance a linear function of the size difference explains);
- bins of ``x``: ``<=0``, ``1``, ``2``, ``3``, ``4``, ``5+``; per bin the mean shift, its
  standard deviation and a two-sided one-sample t-test of ``mean y = 0``.

Both p-values are those of Student's t with ``nu`` degrees of freedom, two-sided, in closed
form: ``p = I_{nu / (nu + t^2)}(nu / 2, 1 / 2)`` (the regularized incomplete beta function,
``scipy.special.betainc``), with ``t = r sqrt(nu / (1 - r^2))``, ``nu = n - 2`` (so
``nu / (nu + t^2) = 1 - r^2``) for Pearson and ``t = mean / (sd / sqrt(n))``, ``nu = n - 1``
for the t-test. They equal ``scipy.stats.pearsonr`` and ``scipy.stats.ttest_1samp`` (checked
by the tests); importing ``scipy.stats`` would cost the Stage III step more than this module.

Rows are written per system and pooled over the systems of a dataset (``system = all``),
and, with several datasets, pooled over all of them (``dataset = all``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.errors import require
from tiap.scoring.measures import Measure
from tiap.sensitivity.load import Dataset

__all__ = ["BINS", "CARD_BIN_COLUMNS", "CARD_COLUMNS", "bin_stats", "cardinality_rows",
           "correlation"]

BINS: tuple[str, ...] = ("<=0", "1", "2", "3", "4", "5+")
CARD_COLUMNS = ("dataset", "system", "target_1", "target_2", "measure", "n", "pearson_r",
                "r_squared", "p_value", "mean_size_diff", "mean_shift")
CARD_BIN_COLUMNS = ("dataset", "system", "target_1", "target_2", "measure", "bin", "n",
                    "mean_shift", "sd_shift", "t", "p_value")


def _bin_of(x: NDArray[np.float64]) -> NDArray[np.int64]:
    return np.clip(x, 0, 5).astype(np.int64)


def _t_pvalue(x: float, df: float) -> float:
    """The two-sided p-value ``I_x(df / 2, 1 / 2)`` of Student's t, given
    ``x = df / (df + t^2)`` (module docstring)."""
    special = require("scipy.special", "stats")
    return float(special.betainc(0.5 * df, 0.5, min(max(x, 0.0), 1.0)))


def correlation(x: NDArray[np.float64], y: NDArray[np.float64]) -> dict[str, float | None]:
    """Pearson r, R² and the two-sided p-value (None when undefined: n < 3 or constant)."""
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson_r": None, "r_squared": None, "p_value": None}
    dx, dy = x - x.mean(), y - y.mean()
    r = float(np.dot(dx, dy) / math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy))))
    r = min(max(r, -1.0), 1.0)
    return {"pearson_r": r, "r_squared": r * r, "p_value": _t_pvalue(1.0 - r * r, x.size - 2)}


def bin_stats(x: NDArray[np.float64], y: NDArray[np.float64]) -> list[dict[str, Any]]:
    """Per bin of ``x`` (:data:`BINS`): n, mean and sd of ``y``, one-sample t and p."""
    b = _bin_of(x)
    out = []
    for i, label in enumerate(BINS):
        yy = y[b == i]
        row: dict[str, Any] = {"bin": label, "n": int(yy.size),
                               "mean_shift": float(yy.mean()) if yy.size else None,
                               "sd_shift": float(yy.std(ddof=1)) if yy.size > 1 else None,
                               "t": None, "p_value": None}
        if yy.size > 1 and np.ptp(yy) > 0:
            t = row["mean_shift"] / (row["sd_shift"] / math.sqrt(yy.size))
            df = yy.size - 1
            row["t"], row["p_value"] = t, _t_pvalue(df / (df + t * t), df)
        out.append(row)
    return out


def _pairs(ds: Dataset, system: str, t1: str, t2: str, m: Measure
           ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    sc = ds.systems[system]
    if t1 not in sc.sizes or t2 not in sc.sizes:
        return None
    v1, v2 = sc.get(t1, m), sc.get(t2, m)
    s1, s2 = sc.sizes[t1][1], sc.sizes[t2][1]
    ok = ~np.isnan(v1) & ~np.isnan(v2) & ~np.isnan(s1) & ~np.isnan(s2)
    return s2[ok] - s1[ok], v2[ok] - v1[ok]


def cardinality_rows(datasets: Sequence[Dataset], measures: Sequence[Measure] | None = None
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The correlation rows, the bin rows and notes (targets without sizes)."""
    corr: list[dict[str, Any]] = []
    bins: list[dict[str, Any]] = []
    notes: list[str] = []
    pooled: dict[tuple[str, str, str], list[tuple[NDArray[np.float64], NDArray[np.float64]]]] = {}
    for ds in datasets:
        if len(ds.targets) < 2:
            continue
        t1 = ds.targets[0]
        ms = [m for m in (measures or ds.measures) if m in ds.measures]
        ms = ms or list(ds.measures)
        for t2 in ds.targets[1:]:
            for m in ms:
                per_ds: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
                for s in ds.systems:
                    got = _pairs(ds, s, t1, t2, m)
                    if got is None:
                        notes.append(f"{ds.name}/{s}: no target sizes for {t1}/{t2} "
                                     "(target_sizes.csv missing); cardinality skipped")
                        continue
                    per_ds.append(got)
                    _emit(corr, bins, ds.name, s, t1, t2, m, *got)
                if per_ds:
                    x = np.concatenate([p[0] for p in per_ds])
                    y = np.concatenate([p[1] for p in per_ds])
                    _emit(corr, bins, ds.name, "all", t1, t2, m, x, y)
                    pooled.setdefault((t1, t2, str(m)), []).append((x, y))
    if len(datasets) > 1:
        for (t1, t2, mname), parts in pooled.items():
            if len(parts) < 2:
                continue
            x = np.concatenate([p[0] for p in parts])
            y = np.concatenate([p[1] for p in parts])
            m = next(mm for ds in datasets for mm in ds.measures if str(mm) == mname)
            _emit(corr, bins, "all", "all", t1, t2, m, x, y)
    return corr, bins, sorted(set(notes))


def _emit(corr: list[dict[str, Any]], bins: list[dict[str, Any]], dataset: str, system: str,
          t1: str, t2: str, m: Measure, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
    base = {"dataset": dataset, "system": system, "target_1": t1, "target_2": t2,
            "measure": str(m)}
    corr.append({**base, "n": int(x.size), **correlation(x, y),
                 "mean_size_diff": float(x.mean()) if x.size else None,
                 "mean_shift": float(y.mean()) if y.size else None})
    for row in bin_stats(x, y):
        bins.append({**base, **row})
