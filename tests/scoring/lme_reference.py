"""LongMemEval's retrieval metrics, written here from their definitions (Wu et al., ICLR 2025,
and the metric functions of the benchmark's evaluation), independently of TIAP's kernels.

For one question: ``corpus`` is the list of document ids that were ranked, ``ranking`` the
ranked positions into it (best first, every document ranked), ``correct`` the ids of the
evidence documents, ``k`` the cutoff.

- ``recall_any@k``: 1 when any correct document is in the top k;
- ``recall_all@k``: 1 when every correct document is;
- ``ndcg_any@k``: ``dcg(ranked relevances, k) / dcg(all relevances sorted, k)`` with
  ``dcg(r, k) = r_1 + sum_{i=2..k} r_i / log2(i)`` (ranks 1 and 2 both weigh 1), 0 when the
  ideal is 0.

Session level from a turn ranking: every id becomes its session's id (the turn id without
its last ``:position`` part), the correct ids become the set of their sessions, and the
cutoff grows from ``k`` until the top of the ranking holds ``k`` distinct sessions (or the
ranking ends); then the three metrics are taken on the mapped ids at that cutoff, duplicates
and all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _dcg(relevances: Sequence[float], k: int) -> float:
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def metrics(corpus: Sequence[str], ranking: Sequence[int], correct: Sequence[str],
            k: int) -> tuple[float, float, float]:
    """(recall_any@k, recall_all@k, ndcg_any@k)."""
    top = {corpus[i] for i in ranking[:k]}
    wanted = set(correct)
    recall_any = float(any(c in top for c in wanted))
    recall_all = float(all(c in top for c in wanted))
    relevance = [1.0 if d in wanted else 0.0 for d in corpus]
    ideal = _dcg(sorted(relevance, reverse=True), k)
    got = _dcg([relevance[i] for i in ranking[:k]], k)
    return recall_any, recall_all, (got / ideal if ideal else 0.0)


def session_metrics(corpus: Sequence[str], ranking: Sequence[int], correct: Sequence[str],
                    k: int) -> tuple[float, float, float]:
    """The same at session level, from a turn ranking (module docstring)."""
    def session(turn_id: str) -> str:
        return turn_id.rsplit(":", 1)[0]

    sessions = [session(d) for d in corpus]
    wanted = sorted({session(c) for c in correct})
    cut = k
    while cut <= len(sessions) and len({sessions[i] for i in ranking[:cut]}) < k:
        cut += 1
    return metrics(sessions, ranking, wanted, cut)
