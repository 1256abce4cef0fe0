"""Rank discounts and the sums of gains under them, shared by every gain-based measure.

The lowest layer of the scoring kernels: plain numpy arithmetic on arrays, with no
knowledge of targets, rankings or measures. :mod:`tiap.scoring.kernels`,
:mod:`tiap.scoring.intents` and the family kernels of :mod:`tiap.scoring.families` all
take their discounts from here, so each is computed one way only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["ideal_dcg_table", "jk_discounts", "log2_discounts", "row_dot"]

FloatArray = NDArray[np.float64]


def log2_discounts(n: int) -> FloatArray:
    """``1 / log2(i + 1)`` for ranks ``i = 1..n``.

    >>> log2_discounts(3).round(4).tolist()
    [1.0, 0.6309, 0.5]
    """
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def jk_discounts(n: int) -> FloatArray:
    """Järvelin-Kekäläinen (base 2) discounts for ranks ``1..n``: 1, 1, 1/log2(3), ...

    >>> jk_discounts(3).round(4).tolist()
    [1.0, 1.0, 0.6309]
    """
    r = np.arange(1, n + 1, dtype=np.float64)
    return 1.0 / np.log2(np.maximum(r, 2.0))


def row_dot(matrix: NDArray[np.generic], weights: NDArray[np.float64]) -> FloatArray:
    """``sum_j matrix[i, j] * weights[j]`` for every row ``i``, added column after column:
    a row's value depends on that row alone, not on which rows are computed with it (a
    query shard, a subset of the queries) or where they sit. (A BLAS matrix-vector product
    handles rows in groups and may round a row differently by its place in the matrix.)

    >>> row_dot(np.array([[1.0, 1.0], [0.0, 2.0]]), np.array([0.5, 0.25])).tolist()
    [0.75, 0.5]
    """
    w = np.asarray(weights, np.float64)
    out = np.zeros(matrix.shape[0], np.float64)
    for j in range(matrix.shape[1]):
        out += matrix[:, j].astype(np.float64, copy=False) * w[j]
    return out


def ideal_dcg_table(n: int) -> FloatArray:
    """``table[m]`` = DCG of ``m`` ones = sum_{i=1..m} 1/log2(i+1), summed in rank order.

    >>> ideal_dcg_table(2).round(4).tolist()
    [0.0, 1.0, 1.6309]
    """
    table = np.zeros(n + 1, np.float64)
    np.cumsum(log2_discounts(n), out=table[1:])
    return table
