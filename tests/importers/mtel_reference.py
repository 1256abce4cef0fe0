"""An independent, pure-Python reference for the paper's group-credit scorer.

Nothing here imports TIAP's scoring or targets code: groups are built straight from the
imported items (``kind`` and ``sources``) as docs/targets-and-scoring.md defines them, and scored with the
paper's group credit, so the tests compare the importer against the published
``target_rescore*.json`` figures through code that shares nothing with the code under test.

Group credit (the paper's scorer): walk the top-k list; an item is relevant (gain 1) when it
belongs to at least one group not matched yet, and then every unmatched group it belongs to
becomes matched. With G groups and hits = matched groups:

- nDCG@k = sum(gain_i / log2(i + 1)) / sum_{i=1..min(G, k)} 1 / log2(i + 1)
- RR@k   = 1 / rank of the first relevant item (0 if none)
- R@k    = hits / G;  hit rate = [hits > 0];  top-1 rate = [the rank-1 item is relevant]

A query with no group under a target is a zero-target case: left out of that target's means.

Items whose lineage the trace leaves open (``uncertain``) are members only of the turns
their ``sources`` prove; :func:`resolve_exclusive` gives raw items that are one of several
turns (each turn has one raw item) one turn each, by a matching of its own, for the Raw
figures, which do not depend on the choice.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

K = 60
TARGET_KEYS = {"raw": "raw_turn", "source": "source_family", "canonical": "canonical"}
FIGURES = ("ndcg_at_k", "mrr", "recall_at_k", "hit_rate_at_k", "top1_hit_rate")


def group_credit(
    ranking: Sequence[str], groups: Sequence[frozenset[str]], k: int = K
) -> dict[str, float]:
    """Per-query values under group credit (see the module docstring)."""
    n_groups = len(groups)
    matched = [False] * n_groups
    dcg = rr = top1 = 0.0
    for rank, item in enumerate(ranking[:k], start=1):
        new = [g for g in range(n_groups) if not matched[g] and item in groups[g]]
        if not new:
            continue
        for g in new:
            matched[g] = True
        dcg += 1.0 / math.log2(rank + 1)
        if rr == 0.0:
            rr = 1.0 / rank
        if rank == 1:
            top1 = 1.0
    hits = sum(matched)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(n_groups, k) + 1))
    return {
        "ndcg": dcg / ideal,
        "rr": rr,
        "recall": hits / n_groups,
        "hit": float(hits > 0),
        "top1": top1,
        "hits": float(hits),
        "G": float(n_groups),
    }


def aggregate(values: Iterable[dict[str, float]]) -> dict[str, float]:
    """Means in the published keys, plus the micro recall and the totals."""
    rows = list(values)
    n = len(rows)
    total_hits = sum(r["hits"] for r in rows)
    total_rel = sum(r["G"] for r in rows)
    return {
        "queries": n,
        "ndcg_at_k": sum(r["ndcg"] for r in rows) / n,
        "mrr": sum(r["rr"] for r in rows) / n,
        "recall_at_k": sum(r["recall"] for r in rows) / n,
        "hit_rate_at_k": sum(r["hit"] for r in rows) / n,
        "top1_hit_rate": sum(r["top1"] for r in rows) / n,
        "micro_recall_at_k": total_hits / total_rel,
        "total_hits": total_hits,
        "total_relevant": total_rel,
    }


def families(items: Iterable[Any]) -> dict[str, list[Any]]:
    """Source unit id -> the items whose ``sources`` list it (lineage has no parents here)."""
    fam: dict[str, list[Any]] = defaultdict(list)
    for it in items:
        for u in it.sources:
            fam[u].append(it)
    return fam


def target_groups(
    evidence: Sequence[str], fam: dict[str, list[Any]], target: str
) -> list[frozenset[str]]:
    """One group per evidence unit under Raw / Source / Canonical; empty groups dropped."""
    out = []
    for u in dict.fromkeys(evidence):
        members = fam.get(u, [])
        if target == "raw":
            ids = {i.item_id for i in members if i.kind == "raw"}
        elif target == "source":
            ids = {i.item_id for i in members}
        elif target == "canonical":
            ids = {i.item_id for i in members if i.kind != "raw" and i.serving is not False}
        else:  # pragma: no cover - a typo in a test
            raise ValueError(target)
        if ids:
            out.append(frozenset(ids))
    return out


def score_import(
    imp: Any, target: str, query_ids: Iterable[str] | None = None
) -> dict[str, dict[str, float]]:
    """query id -> group-credit values under ``target``; zero-target queries are left out."""
    fam = families(imp.items)
    rankings = {r.query_id: r.item_ids for r in imp.rankings}
    wanted = None if query_ids is None else set(query_ids)
    out = {}
    for q in imp.queries:
        if wanted is not None and q.query_id not in wanted:
            continue
        groups = target_groups(q.evidence, fam, target)
        if groups:
            out[q.query_id] = group_credit(rankings[q.query_id], groups)
    return out


def first_hit(ranking: Sequence[str], relevant: set[str], k: int = K) -> dict[str, float]:
    """RR, hit and top-1 from the set of items credited under *any* group.

    Under group credit these three depend only on which ranked items belong to some group
    (the first such item always opens an unmatched group), so a trace's membership flags
    determine them even where lineage is unknown.
    """
    for rank, item in enumerate(ranking[:k], start=1):
        if item in relevant:
            return {"rr": 1.0 / rank, "hit": 1.0, "top1": float(rank == 1)}
    return {"rr": 0.0, "hit": 0.0, "top1": 0.0}


def resolve_exclusive(imp: Any) -> Any:
    """The import with every exclusive, single-source item of undetermined turn given one of
    its candidate turns, no two the same (an augmenting-path matching, in id order)."""
    todo = sorted((i for i in imp.items if i.uncertain is not None and i.uncertain.exclusive
                   and i.uncertain.max_sources == 1 and i.uncertain.possible and not i.sources),
                  key=lambda i: i.item_id)
    owner: dict[str, str] = {}

    def augment(item: Any, seen: set[str]) -> bool:
        for u in item.uncertain.possible:
            if u in seen:
                continue
            seen.add(u)
            if u not in owner or augment(by_id[owner[u]], seen):
                owner[u] = item.item_id
                return True
        return False

    by_id = {i.item_id: i for i in todo}
    for item in todo:
        assert augment(item, set()), item.item_id  # each turn has one raw item: a matching
    given = {iid: u for u, iid in owner.items()}
    items = tuple(replace(i, sources=(given[i.item_id],), uncertain=None)
                  if i.item_id in given else i for i in imp.items)
    return replace(imp, items=items)
