"""A deliberately naive, pure-Python scorer: the definitions of docs/targets-and-scoring.md, line by line.

Used by the tests as the independent oracle for the vectorised kernels (group credit has no
outside implementation to compare with; set credit is also checked against trec_eval).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

Group = Iterable[Hashable] | Mapping[Hashable, float]


def _disc(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def reference(
    ranking: Sequence[Hashable],
    groups: Sequence[Group],
    family: str,
    cutoff: int | None,
    credit: str,
) -> float:
    """One measure for one query. NaN when there is no non-empty group."""
    relevance: dict[Hashable, float] = {}
    sets: list[set[Hashable]] = []
    for group in groups:
        members = dict(group) if isinstance(group, Mapping) else dict.fromkeys(group, 1.0)
        if members:
            sets.append(set(members))
        for x, v in members.items():
            relevance[x] = max(relevance.get(x, 0.0), v)
    if not sets:
        return math.nan
    k = len(ranking) if cutoff is None else cutoff
    top = list(ranking[:k])

    if credit == "group":
        matched: set[int] = set()
        gains = []
        for item in top:
            newly = {i for i, s in enumerate(sets) if item in s and i not in matched}
            gains.append(1.0 if newly else 0.0)
            matched |= newly
        n_targets = len(sets)
        hits = len(matched)
        ideal = [1.0] * (n_targets if cutoff is None else min(n_targets, cutoff))
    else:
        union = set().union(*sets)
        gains = [relevance[item] if item in union else 0.0 for item in top]
        n_targets = len(union)
        hits = sum(1 for item in top if item in union)
        ordered = sorted((relevance[x] for x in union), reverse=True)
        ideal = ordered if cutoff is None else ordered[:cutoff]

    if family == "nDCG":
        dcg = sum(g * _disc(i) for i, g in enumerate(gains, start=1))
        idcg = sum(g * _disc(i) for i, g in enumerate(ideal, start=1))
        return dcg / idcg
    if family == "R":
        return hits / n_targets
    if family == "RR":
        for i, g in enumerate(gains, start=1):
            if g > 0:
                return 1.0 / i
        return 0.0
    if family == "Success":
        return 1.0 if any(g > 0 for g in gains) else 0.0
    if family == "P":
        assert cutoff is not None
        return sum(1 for g in gains if g > 0) / cutoff
    raise ValueError(family)
