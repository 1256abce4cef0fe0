"""Pure ranking kernels: top-k with deterministic ties, and reciprocal-rank fusion.

Scores are arrays over one collection's items in *store order* (the order of
``items.jsonl``). ``-inf`` marks an item the retriever did not retrieve (BM25: the item
shares no term with the query); such items are never ranked. No I/O, no global state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The RRF constant of Cormack, Clarke and Büttcher (SIGIR 2009), used unless told otherwise.
DEFAULT_RRF_K = 60


def top_k(scores: np.ndarray, depth: int) -> np.ndarray:
    """Indices of the ``depth`` best items: score descending, ties by store order (index).

    Items scored ``-inf`` (not retrieved) or NaN are left out, so the result may hold fewer
    than ``depth`` indices. Two runs over the same scores give the same order.

    >>> top_k(np.array([1.0, 3.0, 3.0, -np.inf, 2.0]), 3).tolist()
    [1, 2, 4]
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise ValueError("scores must be a 1-d array")
    idx = np.flatnonzero(np.isfinite(scores))
    if idx.size > 4 * depth:
        # Keep only candidates at least as good as the depth-th best score (ties included),
        # then sort those exactly: O(n) selection before the O(m log m) sort.
        cut = -np.partition(-scores[idx], depth - 1)[depth - 1]
        idx = idx[scores[idx] >= cut]
    # np.lexsort sorts by the last key first: score descending, then index ascending.
    order = np.lexsort((idx, -scores[idx]))
    return idx[order][:depth]


def rrf(rankings: Sequence[np.ndarray], n_items: int, k: float = DEFAULT_RRF_K) -> np.ndarray:
    """Reciprocal-rank fusion scores over ``n_items`` items.

    ``RRF(d) = sum over rankings r that contain d of 1 / (k + rank_r(d))``, with 1-based
    ranks (Cormack, Clarke and Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
    individual Rank Learning Methods", SIGIR 2009; k = 60 there). ``rankings`` are arrays of
    item indices in rank order; an item in no ranking scores ``-inf`` (not retrieved).

    >>> rrf([np.array([0, 1]), np.array([1, 2])], 4, k=1).tolist()
    [0.5, 0.8333333333333333, 0.3333333333333333, -inf]
    """
    if k < 0:
        raise ValueError(f"the RRF constant k must be >= 0, got {k}")
    out = np.zeros(n_items, dtype=np.float64)
    seen = np.zeros(n_items, dtype=bool)
    for ranking in rankings:
        ranking = np.asarray(ranking, dtype=np.int64)
        if ranking.size and (ranking.min() < 0 or ranking.max() >= n_items):
            raise ValueError("a ranking holds an index outside 0..n_items-1")
        if np.unique(ranking).size != ranking.size:
            raise ValueError("a ranking holds an item twice")
        ranks = np.arange(1, ranking.size + 1, dtype=np.float64)
        out[ranking] += 1.0 / (k + ranks)
        seen[ranking] = True
    out[~seen] = -np.inf
    return out
