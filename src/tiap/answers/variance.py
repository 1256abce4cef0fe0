"""Variance components of a fully crossed design: how much of a score each factor moves.

The model (a *G-study*, Cronbach et al. 1972; Brennan 2001): every factor is random and
fully crossed, one observation per cell, ``y = μ + Σ_E α_E + e`` over every non-empty set
``E`` of factors (main effects and interactions), each effect independent with variance
``σ²_E``; the residual is confounded with the interaction of every factor (its row says
``(+ residual)``). The estimates are the ANOVA (method of moments) ones:

- the effect of ``E`` is its inclusion-exclusion contrast of marginal means,
  ``ê_E = Σ_{S ⊆ E} (-1)^{|E|-|S|} ȳ_S``, its sum of squares ``SS_E = (N / c_E) Σ ê_E²``
  (``c_E`` the cells of ``E``, ``N`` all cells), ``df_E = Π_{f ∈ E} (n_f - 1)``,
  ``MS_E = SS_E / df_E``: the numbers ``statsmodels``' ``anova_lm`` gives for the same
  balanced table (the tests hold them equal);
- ``E[MS_E] = Σ_{E' ⊇ E} (N / c_{E'}) σ²_{E'}``, solved from the highest interaction down.
  A negative estimate (sampling noise around a small component) is reported as 0 and its
  unclipped value kept in ``variance_raw``; the equations use the unclipped values
  (Brennan 2001, §3.4), so each estimate stays unbiased.

Why this model: on a balanced table it is exact, unbiased, and takes milliseconds (the sums
of squares are sums over marginal means), so intervals can come from a bootstrap over
questions; a mixed model by REML on 1,539 questions x 6 configurations builds a dense
design of thousands of columns and takes minutes. Answers that some configuration did not
score make the table unbalanced: the caller keeps only the questions scored in every cell
(the complete cases) and says how many it left out.

Integer data (0/1 verdicts, or their sums over questions) is computed in integers scaled by
``N`` where possible, so a factor that never changes anything has a component of exactly 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

__all__ = ["Component", "component_names", "crossed_components", "effect_sets"]

FloatArray = NDArray[np.float64]


def effect_sets(k: int) -> list[tuple[int, ...]]:
    """Every non-empty set of ``k`` axes, main effects first, each in axis order.

    >>> effect_sets(2)
    [(0,), (1,), (0, 1)]
    """
    return [c for r in range(1, k + 1) for c in combinations(range(k), r)]


@dataclass(frozen=True)
class Component:
    """One effect of a crossed design: its axes, degrees of freedom, mean square and the
    estimated variance (``variance_raw`` unclipped, ``variance`` at least 0).

    >>> y = np.array([[1, 0], [1, 0], [1, 0]])  # 3 questions x 2 prompts: prompt 0 credits all
    >>> [(c.axes, c.variance) for c in crossed_components(y)]
    [((0,), 0.0), ((1,), 0.5), ((0, 1), 0.0)]
    """

    axes: tuple[int, ...]
    df: int
    mean_square: float
    variance_raw: float

    @property
    def variance(self) -> float:
        return max(self.variance_raw, 0.0)


def crossed_components(y: FloatArray | NDArray[np.integer], scale: float = 1.0
                       ) -> list[Component]:
    """The variance components of a fully crossed table ``y`` (one value per cell, every
    axis a random factor with at least 2 levels), in :func:`effect_sets` order, each
    divided by ``scale ** 2`` (``y`` given as sums of ``scale`` values: means, exactly).

    Two raters on four questions, rater 1 one point more generous on every one (question
    means 0.5, 1.5, 2.5, 3.5): ``MS_q = 2 · 5/3``, ``MS_r = 4 · (0.5² + 0.5²) = 2``, the
    residual 0, so ``σ²_q = MS_q / 2 = 5/3``, ``σ²_r = MS_r / 4 = 0.5``:

    >>> y = np.array([[1, 0], [2, 1], [3, 2], [4, 3]])
    >>> [(c.axes, c.df, round(c.variance, 4)) for c in crossed_components(y)]
    [((0,), 3, 1.6667), ((1,), 1, 0.5), ((0, 1), 3, 0.0)]
    """
    arr = np.asarray(y)
    if arr.ndim < 1 or min(arr.shape) < 2:
        raise ValueError(f"every factor needs at least 2 levels, got shape {arr.shape}")
    k, n_all = arr.ndim, arr.size
    work = arr.astype(np.float64)
    # N · ȳ_S = sum_S · c_S (c_S cells of S): integers for integer data, so that contrasts
    # that vanish are exactly 0
    scaled: dict[tuple[int, ...], FloatArray] = {}
    for s in [(), *effect_sets(k)]:
        other = tuple(i for i in range(k) if i not in s)
        sums = work.sum(axis=other, keepdims=True) if other else work
        cells = int(np.prod([arr.shape[i] for i in s])) if s else 1
        scaled[s] = sums * cells
    out: dict[tuple[int, ...], tuple[int, float]] = {}
    for e in effect_sets(k):
        contrast: FloatArray = np.zeros([arr.shape[i] if i in e else 1 for i in range(k)])
        for r in range(len(e) + 1):
            for s in combinations(e, r):
                contrast = contrast + (-1) ** (len(e) - r) * scaled[s]
        cells = int(np.prod([arr.shape[i] for i in e]))
        ss = float((contrast ** 2).sum()) * (n_all / cells) / (n_all ** 2)
        df = int(np.prod([arr.shape[i] - 1 for i in e]))
        out[e] = (df, ss / df)
    sigma: dict[tuple[int, ...], float] = {}
    for e in sorted(out, key=len, reverse=True):  # the highest interaction first
        ms = out[e][1]
        above = sum((n_all / np.prod([arr.shape[i] for i in e2])) * sigma[e2]
                    for e2 in sigma if set(e) < set(e2))
        sigma[e] = (ms - above) / (n_all / np.prod([arr.shape[i] for i in e]))
    s2 = scale ** 2
    return [Component(e, out[e][0], out[e][1] / s2,
                      float(sigma[e]) / s2)
            for e in effect_sets(k)]


def component_names(names: Sequence[str]) -> list[str]:
    """Names of the effects of :func:`crossed_components` for axes ``names``; the highest
    interaction carries the residual.

    >>> component_names(["query", "prompt"])
    ['query', 'prompt', 'query:prompt (+ residual)']
    """
    sets = effect_sets(len(names))
    out = [":".join(names[i] for i in e) for e in sets]
    out[-1] += " (+ residual)"
    return out
