"""Intent-aware gains: alpha-nDCG and ERR-IA with a query's target groups as its intents.

A query's groups are its evidence units (one group per unit: the items credited for it), so
they are the *intents* (subtopics) of the diversity measures of Clarke et al. (SIGIR 2008,
alpha-nDCG) and Chapelle et al. (CIKM 2009, ERR-IA), computed as ndeval computes them
(TREC Web track, version 4.5; the reference implementation behind ir_measures' pyndeval
provider). For one query, ranks ``i = 1..k``, intents ``g`` (the non-empty groups),
``J(i, g) = 1`` when the item at rank ``i`` is a member of ``g``, and ``c_g(i)`` = the items
of ``g`` ranked above ``i``:

* gain ``a_i = sum_g J(i, g) (1 - alpha)^c_g(i)``;
* ``alpha-DCG@k = sum_{i<=k} a_i / log2(i + 1)``; ``alpha-nDCG@k`` = that over the
  alpha-DCG@k of the *ideal* list, built greedily as ndeval builds it: at each rank the item
  of largest gain given the items already placed, a tie going to the item whose id sorts
  last (``order``);
* ``ERR-IA@k = sum_{i<=k} a_i / i`` over ``sum_{i<=k} |G| (1 - alpha)^(i - 1) / i`` (ndeval's
  collection-independent "ideal ideal" normalisation: every intent satisfied at every rank).
  ndeval leaves its ERR-IA@1 unnormalised (its loop starts at rank 2); here @1 is
  normalised like every other cutoff.

Under set credit every distinct member of the union of the groups is an intent of its own
(there is no grouping to be redundant within): ``a_i`` is 1 for a relevant item, alpha-nDCG
is the set-credit nDCG, and ERR-IA's normaliser counts ``|S|`` intents.

Group-credit nDCG and alpha-nDCG with ``alpha = 1`` agree exactly when no ranked item is in
two groups of its query: both give gain 1 to the first item of each group and 0 to later
ones, and both ideals are ``min(G, k)`` ones. An item in two groups (a derived fact of two
evidence turns) gains 2 under alpha-nDCG (it covers two intents) and 1 under group credit,
and the ideals differ too, so the two measures part there.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from tiap.scoring.discounts import row_dot

__all__ = ["err_ia_norm", "greedy_ideal_gains", "intent_gains"]

FloatArray = NDArray[np.float64]


def intent_gains(ranks: NDArray[np.integer], member_query: NDArray[np.integer],
                 member_intent: NDArray[np.integer], n_queries: int, depth: int,
                 alpha: float) -> FloatArray:
    """Gain matrix ``[Q, depth]``: ``a_i`` of every rank.

    ``ranks[j]`` is the 0-based rank of member ``j`` (``>= depth``: not ranked),
    ``member_query[j]`` its query and ``member_intent[j]`` its intent (a group index, unique
    across queries). A member listed twice in one intent counts once.
    """
    gains = np.zeros((n_queries, depth), np.float64)
    ranked = ranks < depth
    if not ranked.any():
        return gains
    r = np.asarray(ranks)[ranked].astype(np.int64)
    g = np.asarray(member_intent)[ranked].astype(np.int64)
    q = np.asarray(member_query)[ranked].astype(np.int64)
    order = np.lexsort((r, g))
    r, g, q = r[order], g[order], q[order]
    keep = np.ones(r.size, bool)
    keep[1:] = (g[1:] != g[:-1]) | (r[1:] != r[:-1])  # one rank is one item
    r, g, q = r[keep], g[keep], q[keep]
    start = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    before = np.arange(r.size) - np.repeat(start, np.diff(np.r_[start, r.size]))
    np.add.at(gains, (q, r), (1.0 - alpha) ** before)
    return gains


def greedy_ideal_gains(items: NDArray[np.integer], intents: NDArray[np.integer],
                       member_query: NDArray[np.integer], n_queries: int, k: int,
                       alpha: float, order: NDArray[np.integer] | None) -> FloatArray:
    """The first ``k`` gains of each query's ideal list, ``[Q, k]`` (ndeval's greedy).

    ``items``, ``intents`` and ``member_query`` list every (item code, intent, query)
    membership; ``order[code]`` ranks the item ids (a tie between two items of equal gain
    goes to the larger; ``None``: the larger code).
    """
    out = np.zeros((n_queries, k), np.float64)
    if items.size == 0 or k == 0:
        return out
    q = np.asarray(member_query, np.int64)
    srt = np.argsort(q, kind="stable")
    q, it, gi = q[srt], np.asarray(items, np.int64)[srt], np.asarray(intents, np.int64)[srt]
    bounds = np.flatnonzero(np.r_[True, q[1:] != q[:-1], True])
    keep = 1.0 - alpha
    for a, b in itertools.pairwise(bounds):
        codes, item_ix = np.unique(it[a:b], return_inverse=True)
        ints, int_ix = np.unique(gi[a:b], return_inverse=True)
        member = np.zeros((codes.size, ints.size), bool)
        member[item_ix, int_ix] = True
        tie = (np.asarray(order)[codes] if order is not None else codes).astype(np.float64)
        weight = np.ones(ints.size)
        free = np.ones(codes.size, bool)
        row = out[q[a]]
        for rank in range(min(k, codes.size)):
            score = np.where(free, row_dot(member, weight), -1.0)
            best = score.max()
            cand = np.flatnonzero(score == best)
            pick = cand[np.argmax(tie[cand])]
            row[rank] = best
            free[pick] = False
            weight[member[pick]] *= keep
    return out


def err_ia_norm(n_intents: NDArray[np.integer], k: int, alpha: float) -> FloatArray:
    """ndeval's ERR-IA normaliser: ``sum_{i<=k} n (1 - alpha)^(i - 1) / i`` per query."""
    i = np.arange(1, k + 1, dtype=np.float64)
    return np.asarray(n_intents, np.float64) * float(np.sum((1.0 - alpha) ** (i - 1) / i))
