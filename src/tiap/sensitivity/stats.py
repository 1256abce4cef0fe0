"""The statistical procedure of Stage III: one paired randomization test for every gap.

Every comparison TIAP reports (a winner-flip gap, a design pair, a per-category gap) is a
*gap*: the mean of paired per-query differences ``d_1..d_n`` (system A minus system B under
one target and measure, on the shared subset). One procedure decides them all:

1. **The test** (paired randomization, or sign-flip; Fisher 1935; Smucker, Allan &
   Carterette 2007): under ``H0`` each difference is equally likely to carry either sign.
   With ``T(δ) = |Σ_j (d_j − δ)|`` and sign vectors ``s``, ``T_s(δ) = |Σ_j s_j (d_j − δ)|``,
   the two-sided p-value of ``H0: gap = δ`` is ``p(δ) = (1 + #{b : T_{s_b}(δ) >= T(δ)}) /
   (1 + B)`` over ``B`` random sign vectors (Phipson & Smyth 2010: never 0), or the share of
   all ``2^n`` sign vectors reaching ``T(δ)`` when ``2^n <= B`` (exact). The gap's p-value is
   ``p(0)``.
2. **Family-wise control**: the p-values of one *family* (a table's gaps within one dataset
   and measure, see the callers) are adjusted together, by Holm (1979) by default,
   Benjamini-Hochberg (1995) or none (``statsmodels.stats.multitest.multipletests``). A gap
   is *significant* when its adjusted p-value is at most ``alpha``.
3. **The interval** is the inversion of the same test (Hodges-Lehmann style: every shift
   ``δ`` the test does not reject), at the gap's *effective level* ``alpha_j = alpha ·
   p_j / p̃_j`` (``p̃_j`` the adjusted p-value), so that the interval excludes 0 exactly when
   the gap is significant: ``0 ∉ CI ⇔ p_j <= alpha_j ⇔ p̃_j <= alpha``. For one sign vector
   ``s`` the shifts it reaches, ``{δ : T_s(δ) >= T(δ)}``, form an interval containing the
   mean (between the roots ``(A − D) / (C − n)`` and ``(A + D) / (C + n)`` with ``A = Σ s_j
   d_j``, ``C = Σ s_j``, ``D = Σ d_j``), so ``p(δ)`` falls monotonically away from the mean
   and the ends of the interval are order statistics of those roots: exact for the sign
   vectors drawn, with no search.

The sign vectors are drawn once per (seed, dataset, shared subset of queries): every gap on
one subset, in any family, uses the same ones, and a gap's numbers do not depend on which
or how many other gaps are tested with it. Reruns with the same seed are byte-identical.

**Partial lineage**: a gap whose per-query differences are only bounded, ``lo_j <= d_j <=
hi_j``, is tested for every lineage at once. The test is monotone in each difference: for a
gap that is positive under every lineage, a sign vector reaches ``T`` exactly when the
differences it negates, or the ones it keeps, sum to at most 0 (``Σ_{s_j=-1} d_j <= 0`` or
``Σ_{s_j=+1} d_j <= 0``), which raising any ``d_j`` can only undo. So the largest p-value
over every lineage is the lower differences' ``p(lo)`` when ``mean(lo) > 0``, the upper
ones' ``p(hi)`` when ``mean(hi) < 0``, and 1 when the gap interval contains 0 (some lineage
has mean 0); that p-value is the gap's, exact, and adjusted as any other. Likewise the union
over every lineage of the intervals is ``[lower end for lo, upper end for hi]``, the interval
reported, and it excludes 0 exactly when the gap is significant.

**Effect size**: the paired Cohen's ``d_z = mean(d) / sd(d)`` (ddof 1) and the share of
queries whose difference is not 0 (``|d_j| > 1e-12``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.engine import current_engine
from tiap.errors import TiapError
from tiap.limits import available_memory, check, number

__all__ = [
    "CORRECTIONS",
    "DEFAULT_ALPHA",
    "DEFAULT_CORRECTION",
    "DEFAULT_RESAMPLES",
    "Gap",
    "GapResult",
    "Randomization",
    "adjust",
    "comparison_rng",
    "randomize",
    "sign_vectors",
    "evaluate_gaps",
]

DEFAULT_RESAMPLES = 10_000
DEFAULT_ALPHA = 0.05
CORRECTIONS: tuple[str, ...] = ("holm", "bh", "none")
DEFAULT_CORRECTION = "holm"
#: Cells (rows x queries) of one chunk of the sign matrix.
CHUNK_CELLS = 1 << 20
#: Relative tolerance of "reaches the observed statistic" (float noise in equal sums).
TIE_RTOL = 1e-9
#: Decimals kept in interval ends (a matrix product's last bits may differ between BLAS builds).
CI_DECIMALS = 12
#: A difference within this of 0 is no difference (the share of queries that move).
MOVE_EPS = 1e-12

FloatArray = NDArray[np.float64]


def comparison_rng(seed: int, *key: str) -> np.random.Generator:
    """A Generator seeded by ``seed`` and a sha256 digest of the key strings."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TiapError(f"the seed must be a non-negative integer, got {seed!r}")
    digest = hashlib.sha256("\x1f".join(key).encode("utf-8")).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([seed, *words])


def _check_resamples(resamples: int) -> None:
    """The declared range of ``resamples`` (:data:`tiap.limits.LIMITS`, the one
    ``--resamples`` and the config key take)."""

    check("resamples", resamples, "resamples (--resamples)")


#: Bytes a test needs whatever its size: the row blocks of :func:`randomize` and their
#: products (a few arrays of :data:`CHUNK_CELLS` float64 cells).
_FIXED_BYTES = 4 * 8 * CHUNK_CELLS


def subset_test_bytes(n: int, resamples: int, columns: int) -> int:
    """About the most memory (bytes) the sign-flip test of one shared subset of ``n``
    queries and ``columns`` gaps holds at once with ``resamples`` sign vectors: the int8
    sign matrix (``B x n``, and twice that while it is drawn), four float64 and a boolean
    value per sign vector, the interval ends of a block of columns (two float64 per sign
    vector and column) and the fixed row blocks. Exact when ``2^n <= B``: ``B = 2^n``."""
    b = (1 << n) if n < 63 and (1 << n) <= resamples else resamples
    width = max(1, min(columns, CHUNK_CELLS // max(b, 1)))
    return 3 * b * n + 33 * b + 19 * width * b + _FIXED_BYTES


def _check_memory(jobs: Sequence[_SubsetJob], dataset: str) -> None:
    """Refuse ``resamples`` whose tests do not fit the memory this machine has available
    (:func:`tiap.limits.available_memory`), naming the largest value that fits, before
    any test runs. The jobs run one at a time per worker; the largest one decides."""

    if not jobs:
        return
    job = max(jobs, key=lambda j: subset_test_bytes(j.d.shape[0], j.resamples, j.d.shape[1]))
    n, c = job.d.shape
    need = subset_test_bytes(n, job.resamples, c)
    free = available_memory()
    if free is None or need <= free:
        return
    lo, hi = 0, job.resamples  # the largest resamples that fit (the need only grows with it)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if subset_test_bytes(n, mid, c) <= free else (lo, mid - 1)
    fits = lo
    def size(x: int) -> str:
        return f"{x / 1e9:,.1f} GB" if x >= 1e9 else f"{x / 1e6:,.0f} MB"

    raise TiapError(
        f"resamples (--resamples) {number(job.resamples)}: the sign-flip test of a shared "
        f"subset of {n:,} queries ({c:,} gap{'s' if c != 1 else ''}, dataset {dataset}) needs "
        f"about {size(need)}, more than the {size(free)} this machine has available; "
        + (f"give at most --resamples {number(fits)}" if fits >= 1 else
           "free memory first"), code="invalid-value")


def sign_vectors(n: int, resamples: int, rng: np.random.Generator,
                 ) -> tuple[NDArray[np.int8], bool]:
    """``(signs, exact)``: all ``2^n`` sign vectors when ``2^n <= resamples`` (``exact``), else
    ``resamples`` random ones, as an int8 ``(B, n)`` matrix of ±1."""
    _check_resamples(resamples)
    if n < 63 and (1 << n) <= resamples:
        codes = np.arange(1 << n, dtype=np.int64)
        signs = np.empty((1 << n, n), np.int8)  # column by column: never an int64 (2^n, n)
        for j in range(n):
            signs[:, j] = ((codes >> j) & 1) * 2 - 1
        return signs, True
    raw = rng.integers(0, 256, size=(resamples, (n + 7) // 8), dtype=np.uint8)
    bits = np.unpackbits(raw, axis=1, count=n).astype(np.int8)
    return bits * 2 - 1, False


def _count_level(alpha_eff: float, b: int, exact: bool) -> int:
    """The smallest number ``k`` of sign vectors reaching a shift with ``p > alpha_eff``."""
    if exact:
        return math.floor(alpha_eff * b) + 1  # N / 2^n > a  <=>  N >= k
    return math.floor(alpha_eff * (b + 1) - 1) + 1  # (1 + N) / (1 + B) > a


@dataclass(frozen=True, eq=False)
class Randomization:
    """The sign-flip test of every column of a difference matrix, and its inversion.

    Per column: ``hits`` sign vectors reach ``δ = 0`` (``p`` is ``p(0)``); ``lows`` holds the
    ``keep`` smallest lower ends of the shift intervals the sign vectors reach (ascending)
    and ``highs`` the ``keep`` largest upper ends (descending): the only order statistics an
    interval at a level up to the ``alpha`` given to :func:`randomize` can need.
    """

    n: int
    resamples: int
    exact: bool
    mean: FloatArray
    hits: NDArray[np.int64]
    p: FloatArray
    lows: FloatArray  # (keep, c), ascending
    highs: FloatArray  # (keep, c), descending

    def count_level(self, alpha_eff: float) -> int:
        return _count_level(alpha_eff, self.resamples, self.exact)

    def interval(self, column: int, k: int) -> tuple[float, float]:
        """Every shift ``δ`` reached by at least ``k`` sign vectors (``p(δ)`` above the level
        ``k`` stands for), for one column: the test's inversion (``-inf`` / ``inf`` where
        no resample could reject)."""
        if k < 1 or k > self.resamples:
            return -math.inf, math.inf
        if k > self.lows.shape[0]:
            raise ValueError(f"interval at count level {k} needs a larger alpha in randomize")
        return float(self.lows[k - 1, column]), float(self.highs[k - 1, column])


def randomize(d: FloatArray, signs: NDArray[np.int8], exact: bool,
              alpha: float = DEFAULT_ALPHA) -> Randomization:
    """Test every column of ``d`` (``(n, c)`` paired differences) with the sign vectors,
    keeping what intervals at levels up to ``alpha`` need.

    Column blocks sized to :data:`CHUNK_CELLS`: within one, a row block's matrix product
    with ``d`` gives every resampled sum ``A`` at once, and one in-place partition per
    block keeps the order statistics, so memory stays ``O(CHUNK_CELLS + keep · c)``.
    """
    d = np.asarray(d, np.float64)
    if d.ndim == 1:
        d = d[:, None]
    if np.isnan(d).any():
        raise ValueError("differences must not contain NaN (restrict to the shared subset)")
    n, c = d.shape
    b = signs.shape[0]
    if n == 0:
        nan = np.full(c, np.nan)
        empty = np.empty((0, c))
        return Randomization(0, b, exact, nan, np.zeros(c, np.int64), nan, empty, empty)
    keep = max(1, min(b, _count_level(alpha, b, exact) + 1))
    total = d.sum(axis=0)
    scale = np.abs(d).mean(axis=0)
    tol = TIE_RTOL * np.where(scale > 0, scale, 1.0)
    hits = np.zeros(c, np.int64)
    best_lo = np.empty((c, keep))
    best_hi = np.empty((c, keep))
    s_sum = signs.sum(axis=1, dtype=np.int64).astype(np.float64)
    everywhere = np.abs(s_sum) == n  # all signs equal: T_s(δ) = T(δ) for every δ
    with np.errstate(divide="ignore"):
        inv_minus = 1.0 / (s_sum - n)  # inf only where every sign is equal (overwritten)
        inv_plus = 1.0 / (s_sum + n)
    width = max(1, min(c, CHUNK_CELLS // b))  # columns whose full (width, B) ends fit a chunk
    rows = max(1, CHUNK_CELLS // max(n, width))
    dt = np.ascontiguousarray(d.T)
    with one_blas_thread():
        for c0 in range(0, c, width):
            cols = slice(c0, min(c, c0 + width))
            dc = dt[cols]
            tot = total[cols, None]
            lows = np.empty((dc.shape[0], b))  # (columns, sign vectors): rows contiguous
            highs = np.empty((dc.shape[0], b))
            for r0 in range(0, b, rows):
                rr = slice(r0, r0 + rows)
                a_mat = dc @ signs[rr].T.astype(np.float64)
                r1 = a_mat - tot
                a_mat += tot
                with np.errstate(invalid="ignore"):  # 0 * inf: all-equal signs, overwritten
                    r1 *= inv_minus[rr]
                    a_mat *= inv_plus[rr]
                np.minimum(r1, a_mat, out=lows[:, rr])
                np.maximum(r1, a_mat, out=highs[:, rr])
            lows[:, everywhere] = -np.inf
            highs[:, everywhere] = np.inf
            hits[cols] = ((lows <= tol[cols, None]) & (highs >= -tol[cols, None])).sum(axis=1)
            best_lo[cols] = _smallest(lows, keep)
            np.negative(highs, out=highs)
            best_hi[cols] = _smallest(highs, keep)
    p = hits / b if exact else (1 + hits) / (1 + b)
    best_lo.sort(axis=1)
    best_hi.sort(axis=1)
    best_lo -= tol[:, None]  # ties within the tolerance reach: widen by it
    best_hi -= tol[:, None]  # (negated upper ends)
    return Randomization(n, b, exact, d.mean(axis=0), hits, np.minimum(p, 1.0),
                         np.ascontiguousarray(best_lo.T), np.ascontiguousarray(-best_hi.T))


def one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """Limit BLAS to one thread (threadpoolctl, when installed). The products of
    :func:`randomize` are small: on two cores shared with other work, OpenBLAS's second
    thread made them 4-12x slower (0.8-2.4 s instead of 0.12-0.22 s for one demo family
    under load), while on a quiet machine it gains little (0.121 s against 0.164 s for
    100 comparisons, benchmarks/README.md)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - depends on the environment
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _smallest(x: FloatArray, keep: int) -> FloatArray:
    """The ``keep`` smallest values of every row (unordered; ``x`` is reordered)."""
    if x.shape[1] > keep:
        x.partition(keep - 1, axis=1)
    return x[:, :keep]


def adjust(p: Sequence[float] | FloatArray, correction: str = DEFAULT_CORRECTION,
           ) -> FloatArray:
    """Adjusted p-values of one family (NaN stays NaN and is not counted in the family).

    ``holm`` (Holm 1979): with ``p_(1) <= ... <= p_(m)``, ``p̃_(i) = max_{j<=i} min(1,
    (m - j + 1) p_(j))``. ``bh`` (Benjamini & Hochberg 1995): ``p̃_(i) = min_{j>=i} min(1,
    m p_(j) / j)``. The same values as ``statsmodels.stats.multitest.multipletests`` with
    ``holm`` / ``fdr_bh`` (tested equal), computed here because statsmodels' Holm runs a
    full garbage collection on every call (about 60 ms each with TIAP's data loaded).

    By hand for ``[0.01, 0.04, 0.03]`` (sorted 0.01, 0.03, 0.04; m = 3): Holm gives
    ``3 · 0.01 = 0.03``, ``max(0.03, 2 · 0.03) = 0.06``, ``max(0.06, 1 · 0.04) = 0.06``; BH
    gives ``min(3 · 0.04 / 3, 3 · 0.03 / 2) = 0.04``, ``0.04``, ``min(0.04, 3 · 0.01 / 1) =
    0.03``:

    >>> adjust([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust([0.01, 0.04, 0.03], "bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    >>> adjust([0.01, float("nan")]).tolist()  # NaN is not counted in the family
    [0.01, nan]
    """
    if correction not in CORRECTIONS:
        raise TiapError(f"correction must be one of {', '.join(CORRECTIONS)}, got "
                        f"{correction!r}")
    arr = np.asarray(p, np.float64)
    out = arr.copy()
    ok = np.flatnonzero(~np.isnan(arr))
    if correction == "none" or not ok.size:
        return out
    vals = arr[ok]
    m = vals.size
    order = np.argsort(vals, kind="stable")
    ranked = vals[order]
    if correction == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    back = np.empty(m)
    back[order] = adj
    out[ok] = back
    return out


@dataclass(frozen=True, eq=False)
class Gap:
    """One gap to test: its family, the shared queries (a mask over the dataset's queries)
    and the per-query differences on them (``hi`` is ``lo`` when they are determined).

    >>> import numpy as np
    >>> every = np.ones(8, bool)  # the 8 queries both systems share
    >>> d = np.array([0.2, 0.4, 0.1, 0.3, 0.5, 0.2, 0.1, 0.2])
    >>> exact = Gap(("nDCG@10", "raw"), every, d)
    >>> bounded = Gap(("nDCG@10", "raw"), every, d - 0.05, d + 0.05)  # partial lineage
    >>> exact.bounded, bounded.bounded
    (False, True)
    """

    family: tuple[str, ...]
    subset: NDArray[np.bool_]
    lo: FloatArray
    hi: FloatArray | None = None

    @property
    def bounded(self) -> bool:
        return self.hi is not None and not np.array_equal(self.lo, self.hi)


@dataclass(frozen=True)
class GapResult:
    """A tested gap. ``gap`` is ``None`` when the differences are only bounded (then
    ``[gap_lower, gap_upper]`` bounds it); ``effect`` is the paired Cohen's d_z and
    ``moved`` the share of queries whose difference is not 0, ``sd`` the differences'
    standard deviation (ddof 1; all three ``None`` when bounded or undefined).

    Eight queries where A beats B on every one: the mean difference is ``2.0 / 8 =
    0.25``, its sd 0.1414 (the squared deviations sum to 0.14, over 7), so ``d_z = 0.25 /
    0.1414 = 1.77``; only the all-plus and all-minus of the ``2^8`` sign vectors reach the
    observed sum, so ``p = 2 / 256``, exact:

    >>> import numpy as np
    >>> every = np.ones(8, bool)  # the 8 queries both systems share
    >>> d = np.array([0.2, 0.4, 0.1, 0.3, 0.5, 0.2, 0.1, 0.2])
    >>> [r] = evaluate_gaps([Gap(("nDCG@10",), every, d)], seed=0, dataset="demo")
    >>> r.n, r.gap, r.p, r.significant, round(r.sd, 4), round(r.effect, 2)
    (8, 0.25, 0.0078125, True, 0.1414, 1.77)

    Bounded differences (each known within ±0.05): no single gap, its bounds instead:

    >>> [r] = evaluate_gaps([Gap(("nDCG@10",), every, d - 0.05, d + 0.05)], seed=0,
    ...                     dataset="demo")
    >>> r.gap, round(r.gap_lower, 4), round(r.gap_upper, 4), r.significant, r.n_undetermined
    (None, 0.2, 0.3, True, 8)
    """

    n: int
    gap: float | None
    gap_lower: float | None
    gap_upper: float | None
    p: float | None
    p_adjusted: float | None
    ci_low: float | None
    ci_high: float | None
    significant: bool
    effect: float | None
    moved: float | None
    sd: float | None = None
    alpha_effective: float | None = None
    n_undetermined: int = 0
    extra: dict[str, float] = field(default_factory=dict)


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _deciding(test: Randomization, lc: int, hc: int) -> int | None:
    """The column whose p-value is the gap's: the lower differences' when every lineage's
    gap is positive, the upper ones' when every one is negative, ``None`` (p = 1) when the
    gap interval contains 0; for a determined gap (``lc == hc``) its one column."""
    if lc == hc:
        return lc
    if test.mean[lc] > 0:
        return lc
    if test.mean[hc] < 0:
        return hc
    return None


def _rounded(x: float) -> float | None:
    """An interval end as written: rounded to :data:`CI_DECIMALS` (the decision uses the
    unrounded value), never rounded onto 0 from the side it lies on."""
    if not math.isfinite(x):
        return None
    r = round(x, CI_DECIMALS)
    if r == 0.0 and x != 0.0:
        return x
    return r


def _effect(d: FloatArray) -> tuple[float | None, float | None]:
    if d.size == 0:
        return None, None
    moved = float((np.abs(d) > MOVE_EPS).mean())
    if d.size < 2:
        return None, moved
    sd = float(d.std(ddof=1))
    mean = float(d.mean())
    if sd == 0.0:
        return (0.0 if abs(mean) <= MOVE_EPS else math.copysign(math.inf, mean)), moved
    return mean / sd, moved


#: Columns of one randomization job (a bounded gap's two columns stay in one job).
JOB_COLUMNS = 256


@dataclass(frozen=True, eq=False)
class _SubsetJob:
    """One shared subset's randomization test: what a worker needs, and nothing else."""

    seed: int
    dataset: str
    digest: str  # sha256 of the subset mask: with seed and dataset, its sign vectors
    resamples: int
    alpha: float
    d: FloatArray  # (n, columns) paired differences


def _test_subset(job: _SubsetJob) -> Randomization:
    """The sign-flip test of one subset's columns (a pure function of the job)."""
    signs, exact = sign_vectors(job.d.shape[0], job.resamples,
                                comparison_rng(job.seed, job.dataset, "signs", job.digest))
    return randomize(job.d, signs, exact, job.alpha)


def evaluate_gaps(
    gaps: Sequence[Gap],
    *,
    seed: int,
    dataset: str,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
    notes: list[str] | None = None,
) -> list[GapResult]:
    """Test every gap (module docstring): one sign-vector set per shared subset, p-values
    adjusted within each family, intervals at each gap's effective level.

    ``notes`` receives one line per family too large for the resamples to resolve: under
    Holm the smallest adjusted p-value is ``m · p_min`` (``m`` gaps, ``p_min = 1 / (1 + B)``,
    or ``2 / 2^n`` when exact), so when that exceeds ``alpha`` no gap of the family can be
    significant whatever the data.

    Two gaps of one family (one dataset, measure and table), tested on the same 8 queries
    with the same sign vectors: A beats B on every query; C and D trade wins. Holm
    doubles the smaller p-value (``2 · 2/256 = 0.015625``), so the first gap stays
    significant at ``alpha = 0.05``, at an effective level of ``0.05 · p / p̃ = 0.025``:

    >>> import numpy as np
    >>> every = np.ones(8, bool)  # the 8 queries both systems share
    >>> ab = Gap(("nDCG@10",), every, np.array([0.2, 0.4, 0.1, 0.3, 0.5, 0.2, 0.1, 0.2]))
    >>> cd = Gap(("nDCG@10",), every, np.array([0.1, -0.1, 0.2, -0.2, 0.0, 0.1, -0.1, 0.0]))
    >>> for r in evaluate_gaps([ab, cd], seed=0, dataset="demo"):
    ...     print(r.gap, r.p, r.p_adjusted, r.significant, r.alpha_effective,
    ...           round(r.ci_low, 4), round(r.ci_high, 4))
    0.25 0.0078125 0.015625 True 0.025 0.1 0.4
    0.0 1.0 1.0 False 0.05 -0.1 0.1
    """
    if not 0 < alpha < 1:
        raise TiapError(f"alpha must be between 0 and 1, got {alpha!r}")
    if correction not in CORRECTIONS:
        raise TiapError(f"correction must be one of {', '.join(CORRECTIONS)}, got "
                        f"{correction!r}")
    _check_resamples(resamples)
    # 1. per shared subset: one set of sign vectors, every column tested with it
    by_subset: dict[bytes, list[int]] = {}
    for i, g in enumerate(gaps):
        by_subset.setdefault(np.packbits(g.subset).tobytes() + bytes([g.subset.size % 8]),
                             []).append(i)
    tests: dict[int, tuple[Randomization, int, int]] = {}  # gap -> (test, lo col, hi col)
    jobs: list[_SubsetJob] = []
    placed: list[dict[int, tuple[int, int]]] = []
    for key, members in by_subset.items():
        n = int(gaps[members[0]].subset.sum())
        digest = hashlib.sha256(key).hexdigest()
        # a subset of many gaps is tested a block of columns at a time: each column's test
        # is its own, with the subset's sign vectors (rebuilt from the seed), so the blocks
        # are independent work (tiap.engine); a gap's columns stay in one block
        blocks: list[tuple[list[FloatArray], dict[int, tuple[int, int]]]] = [([], {})]
        for i in members:
            g = gaps[i]
            width = 2 if g.bounded else 1
            if len(blocks[-1][0]) + width > JOB_COLUMNS and blocks[-1][0]:
                blocks.append(([], {}))
            cols, where = blocks[-1]
            cols.append(g.lo)
            lo_col = len(cols) - 1
            hi_col = lo_col
            if g.bounded:
                cols.append(g.hi)  # type: ignore[arg-type]
                hi_col = len(cols) - 1
            where[i] = (lo_col, hi_col)
        for cols, where in blocks:
            jobs.append(_SubsetJob(seed, dataset, digest, resamples, alpha,
                                   np.column_stack(cols) if n else np.empty((0, len(cols)))))
            placed.append(where)
    _check_memory(jobs, dataset)
    # the jobs are independent (each subset its own sign vectors, from the seed and the
    # subset alone): the engine may run them anywhere, in any order (tiap.engine)
    for test, where in zip(current_engine().map(_test_subset, jobs), placed, strict=True):
        for i, (lc, hc) in where.items():
            tests[i] = (test, lc, hc)
    # 2. family-wise adjustment of each gap's p-value (the larger of its two extremes)
    deciding = [_deciding(*tests[i]) for i in range(len(gaps))]
    raw = np.array([np.nan if not tests[i][0].n else 1.0 if deciding[i] is None
                    else float(tests[i][0].p[deciding[i]]) for i in range(len(gaps))])
    adj = np.full(len(gaps), np.nan)
    families: dict[tuple[str, ...], list[int]] = {}
    for i, g in enumerate(gaps):
        families.setdefault(g.family, []).append(i)
    for fam, members in families.items():
        adj[members] = adjust(raw[members], correction)
        tested = [i for i in members if tests[i][0].n]
        if notes is not None and correction == "holm" and tested:
            floors = [2 / tests[i][0].resamples if tests[i][0].exact else 1 / (1 + resamples)
                      for i in tested]
            floor_p = min(floors)
            if len(tested) * floor_p > alpha:
                fix = (f"raise --resamples to at least {math.ceil(len(tested) / alpha)} or "
                       "use --correction bh" if floor_p == 1 / (1 + resamples) else
                       "the shared subsets are too small for an exact test to reach it")
                notes.append(
                    f"{' / '.join(fam)}: {len(tested)} gaps under Holm need a p-value of at "
                    f"most {alpha / len(tested):.2g}, but the smallest the test can give is "
                    f"{floor_p:.2g}: no gap of this family can be significant ({fix})")
    # 3. the intervals at each gap's effective level
    out: list[GapResult] = []
    for i, g in enumerate(gaps):
        test, lc, hc = tests[i]
        if not test.n:
            out.append(GapResult(0, None, None, None, None, None, None, None, False, None,
                                 None))
            continue
        a_eff = alpha * raw[i] / adj[i] if adj[i] > 0 else alpha
        g_lo, g_hi = float(test.mean[lc]), float(test.mean[hc])
        bounded = g.bounded
        significant = bool(adj[i] <= alpha)
        # the interval at the effective level: its lower end from the lower differences,
        # its upper end from the upper ones (the union over every lineage); the deciding
        # column's count level is pinned to the decision, so that float rounding in
        # alpha * p / p̃ can never make the interval and the decision disagree
        k = test.count_level(a_eff)
        levels = {lc: k, hc: k}
        col = deciding[i]
        if col is not None:
            hits = int(test.hits[col])
            levels[col] = max(k, hits + 1) if significant else min(k, hits)
        lo_ci = test.interval(lc, levels[lc])[0]
        hi_ci = test.interval(hc, levels[hc])[1]
        effect, moved = (None, None) if bounded else _effect(g.lo)
        out.append(GapResult(
            n=test.n,
            gap=None if bounded else g_lo,
            gap_lower=g_lo, gap_upper=g_hi,
            p=_num(raw[i]), p_adjusted=_num(adj[i]),
            ci_low=_rounded(lo_ci), ci_high=_rounded(hi_ci),
            significant=significant,
            effect=None if effect is None or not math.isfinite(effect) else effect,
            moved=moved,
            sd=float(g.lo.std(ddof=1)) if not bounded and g.lo.size > 1 else None,
            alpha_effective=_num(a_eff),
            n_undetermined=(int((np.abs(g.hi - g.lo) > MOVE_EPS).sum())
                            if g.hi is not None and bounded else 0),
        ))
    return out
