"""Statistical kernels of Stage III: paired bootstrap intervals and sign-flip tests.

Pure functions over arrays; every random draw comes from a :class:`numpy.random.Generator`
built by :func:`comparison_rng` from a user seed and the *name* of the comparison, so a
comparison's numbers do not depend on which other comparisons run before it, and reruns
with the same seed are byte-identical.

Both procedures work on a matrix ``d`` of paired per-query differences, one row per query
and one column per statistic (for example system A minus system B under each target and
measure), and treat all columns with the *same* resampled queries, so intervals of two
targets are paired too.

Paired bootstrap (Efron & Tibshirani 1993, ch. 13; percentile interval): draw ``B``
resamples of the ``n`` query indices with replacement, ``i*_b = (i_b1..i_bn)``, and compute
``mean*_b = (1/n) Σ_j d[i_bj]``. The ``1-α`` interval is the ``α/2`` and ``1-α/2``
quantiles of ``mean*_1..mean*_B`` (linear interpolation, NumPy's default).

Paired randomization (sign-flip) test (Fisher 1935; Smucker, Allan & Carterette 2007):
under ``H0`` (no difference between the paired values) each difference is equally likely
to carry either sign. With ``T = |Σ_j d_j|`` and sign vectors ``s ∈ {-1, +1}^n``,
``T*_b = |Σ_j s_bj d_j|``. When ``2^n <= B`` every sign vector is enumerated and
``p = #{s : T*(s) >= T} / 2^n`` (exact). Otherwise ``B`` sign vectors are drawn uniformly
and ``p = (1 + #{b : T*_b >= T}) / (1 + B)`` (Phipson & Smyth 2010: never 0). Two-sided.

The resampling is vectorised: index (or sign) matrices of a fixed number of rows are drawn
per chunk and reduced with one matrix product; there is no Python loop per resample. The
chunk size depends only on ``n``, so the random stream, and the result, never depend on
memory or timing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tiap.errors import TiapError

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_RESAMPLES",
    "PairedTest",
    "bootstrap_means",
    "comparison_rng",
    "paired_test",
    "percentile_interval",
    "sign_flip_pvalue",
]

DEFAULT_RESAMPLES = 10_000
DEFAULT_ALPHA = 0.05
#: Cells (rows x queries) of one chunk of the index or sign matrix.
CHUNK_CELLS = 1 << 20
#: Relative tolerance when comparing a resampled statistic with the observed one.
TIE_RTOL = 1e-9
#: Decimals kept in interval ends (a matrix product's last bits may differ between BLAS builds).
CI_DECIMALS = 12


def comparison_rng(seed: int, *key: str) -> np.random.Generator:
    """A Generator for one named comparison: seeded by ``seed`` and a sha256 digest of the
    key strings (so the stream depends on what is compared, not on the order of work)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TiapError(f"the seed must be a non-negative integer, got {seed!r}")
    digest = hashlib.sha256("\x1f".join(key).encode("utf-8")).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([seed, *words])


def _as_matrix(d: NDArray[np.float64] | Sequence[float]) -> NDArray[np.float64]:
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError("differences must be a vector or an (n_queries, n_statistics) matrix")
    if np.isnan(arr).any():
        raise ValueError("differences must not contain NaN (restrict to the shared subset first)")
    return arr


def _check_resamples(resamples: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise TiapError(f"the number of resamples must be a positive integer, got {resamples!r}")


def _chunk_rows(n: int) -> int:
    return max(1, CHUNK_CELLS // max(n, 1))


def bootstrap_means(
    d: NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """``(resamples, m)`` bootstrap means of the columns of ``d`` (``(n, m)``), all columns
    resampled with the same query indices."""
    d = _as_matrix(d)
    _check_resamples(resamples)
    n, m = d.shape
    out = np.empty((resamples, m), dtype=np.float64)
    if n == 0:
        out.fill(np.nan)
        return out
    rows = _chunk_rows(n)
    for start in range(0, resamples, rows):
        c = min(rows, resamples - start)
        idx = rng.integers(0, n, size=(c, n), dtype=np.int64 if n >= 1 << 31 else np.int32)
        # counts[r, i]: how often query i is drawn in resample r (one bincount per chunk)
        flat = (idx + (np.arange(c, dtype=np.int64) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=c * n).reshape(c, n).astype(np.float64)
        out[start:start + c] = (counts @ d) / n
    return out


def percentile_interval(
    means: NDArray[np.float64], alpha: float = DEFAULT_ALPHA
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``alpha/2`` and ``1 - alpha/2`` quantiles of each column of ``means``."""
    if not 0 < alpha < 1:
        raise TiapError(f"alpha must be between 0 and 1, got {alpha!r}")
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return np.round(lo, CI_DECIMALS), np.round(hi, CI_DECIMALS)


def _all_signs(n: int) -> NDArray[np.float64]:
    codes = np.arange(1 << n, dtype=np.int64)[:, None]
    bits = (codes >> np.arange(n, dtype=np.int64)) & 1
    return (bits * 2 - 1).astype(np.float64)


def sign_flip_pvalue(
    d: NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Two-sided paired randomization (sign-flip) p-value of each column of ``d``.

    Exact (every sign vector) when ``2^n <= resamples``, else Monte Carlo with
    ``(1 + hits) / (1 + resamples)``. A column of zeros has ``p = 1``; no query: NaN.
    """
    d = _as_matrix(d)
    _check_resamples(resamples)
    n, m = d.shape
    if n == 0:
        return np.full(m, np.nan)
    observed = np.abs(np.ones(n) @ d)
    threshold = observed - TIE_RTOL * np.maximum(observed, 1e-300)
    if n < 63 and (1 << n) <= resamples:
        stats = np.abs(_all_signs(n) @ d)
        return (stats >= threshold).sum(axis=0) / float(1 << n)
    hits = np.zeros(m, dtype=np.int64)
    total = d.sum(axis=0)
    rows = _chunk_rows(n)
    for start in range(0, resamples, rows):
        c = min(rows, resamples - start)
        # one random bit per (resample, query): s = 2 b - 1, so s @ d = 2 (b @ d) - Σ d
        raw = rng.integers(0, 256, size=(c, (n + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw, axis=1, count=n).astype(np.float64)
        hits += (np.abs(2 * (bits @ d) - total) >= threshold).sum(axis=0)
    return (1 + hits) / (1 + resamples)


@dataclass(frozen=True)
class PairedTest:
    """Per column of the difference matrix: mean, interval and p-value."""

    n: int
    mean: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    p: NDArray[np.float64]


def paired_test(
    d: NDArray[np.float64] | Sequence[float],
    *,
    seed: int,
    key: Sequence[str],
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
) -> PairedTest:
    """Mean, paired-bootstrap percentile interval and sign-flip p-value of every column of
    ``d`` (one row per query). The bootstrap and the test draw from two generators derived
    from ``seed`` and ``key`` (:func:`comparison_rng`)."""
    arr = _as_matrix(d)
    n, m = arr.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return PairedTest(0, nan, nan, nan, nan)
    means = bootstrap_means(arr, resamples, comparison_rng(seed, *key, "bootstrap"))
    lo, hi = percentile_interval(means, alpha)
    p = sign_flip_pvalue(arr, resamples, comparison_rng(seed, *key, "sign-flip"))
    return PairedTest(n, arr.mean(axis=0), lo, hi, p)
