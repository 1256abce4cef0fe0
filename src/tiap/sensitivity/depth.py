"""Depth: the target shift at several cutoffs of the same traces (Appendix J, Table 19).

For every measure family scored at one or more cutoffs ``k`` (``nDCG@20``, ``nDCG@40``,
``nDCG@60``, ...), per system and pair of targets, on the queries defined under both:

    shift_k = mean v@k(t2) - mean v@k(t1),    relative_shift_k = shift_k / mean v@k(t1)

(relative shift empty when the base mean is 0). ``system = all`` pools the (query, system)
pairs of every system of the dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tiap.sensitivity.load import Dataset

__all__ = ["DEPTH_COLUMNS", "depth_rows"]

DEPTH_COLUMNS = ("dataset", "system", "family", "k", "target_1", "target_2", "n", "mean_1",
                 "mean_2", "shift", "relative_shift")


def depth_rows(datasets: Sequence[Dataset]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for ds in datasets:
        families: dict[str, list] = {}  # type: ignore[type-arg]
        for m in ds.measures:
            if m.cutoff is not None:
                families.setdefault(m.name.rsplit("@", 1)[0], []).append(m)  # family(params)
        for fam, ms in families.items():
            ms = sorted(ms, key=lambda m: m.cutoff)
            for t1, t2 in ds.target_pairs:
                for m in ms:
                    pooled1, pooled2 = [], []
                    for s, sc in ds.systems.items():
                        v1, v2 = sc.get(t1, m), sc.get(t2, m)
                        ok = ~np.isnan(v1) & ~np.isnan(v2)
                        pooled1.append(v1[ok])
                        pooled2.append(v2[ok])
                        rows.append(_row(ds.name, s, fam, m.cutoff, t1, t2, v1[ok], v2[ok]))
                    if len(ds.systems) > 1:
                        rows.append(_row(ds.name, "all", fam, m.cutoff, t1, t2,
                                         np.concatenate(pooled1), np.concatenate(pooled2)))
    return rows


def _row(dataset: str, system: str, family: str, k: int | None, t1: str, t2: str,
         a: np.ndarray, b: np.ndarray) -> dict[str, Any]:  # type: ignore[type-arg]
    n = int(a.size)
    m1 = float(a.mean()) if n else None
    m2 = float(b.mean()) if n else None
    shift = (m2 - m1) if n else None  # type: ignore[operator]
    rel = shift / m1 if n and m1 else None  # type: ignore[operator]
    return {"dataset": dataset, "system": system, "family": family, "k": k, "target_1": t1,
            "target_2": t2, "n": n, "mean_1": m1, "mean_2": m2, "shift": shift,
            "relative_shift": rel}
