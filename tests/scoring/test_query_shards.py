"""A query's values depend on its own ranking and groups alone: rescoring a run in query
shards (``query_shard``, the partition a Ray run sends to its workers) gives every output row
of scoring it whole, bit for bit.

The stores are random: three collections of sessions, raw turns, facts and summaries of one
to three turns, queries with zero to three evidence turns (some unknown to the store), and
rankings of 0 to 90 items (past 64, the kernels' second bit word), some with ids the store
lacks. Every measure family is scored, with group and set credit: under turn targets on a
store where some items have partial lineage (possible sources, any source of the collection:
bounded values), and under turn, session and window targets on one whose lineage is certain
(short rankings: bounded values too). A shard of one query and shards of 7 and 50 are
compared with the whole run.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tiap.datasets.records import Query
from tiap.engine import LocalEngine, use_engine
from tiap.errors import TiapError
from tiap.memory.store import Item, Uncertainty
from tiap.runs import Ranking, Run, read_qrels, read_run_columnar
from tiap.scoring.rescore import rescore, rescore_qrels
from tiap.scoring.scores import Scores

MEASURES = ("nDCG@10,nDCG@70,nDCG,R@5,RR@10,Success@1,P@5,Rall@10,alpha_nDCG@10,"
            "ERR_IA(alpha=0.3)@10,nDCG(discount='jk')@10")
TURN_TARGETS = ["raw", "source", "canonical"]
BLOCK_TARGETS = ["raw", "source", "source@session", "raw@window2"]


def _world(seed: int, partial: bool) -> tuple[list[Item], list[Query], list[Run]]:
    rng = random.Random(seed)
    items: list[Item] = []
    queries: list[Query] = []
    by_coll: dict[str, list[str]] = {}
    turns_of: dict[str, list[str]] = {}
    for c in range(3):
        coll = f"c{c}"
        turns = []
        for s in range(rng.randint(2, 4)):
            for t in range(rng.randint(2, 6)):
                u = f"{coll}:s{s}:{t}"
                turns.append(u)
                items.append(Item(f"t-{u}", "raw", (u,), collection=coll,
                                  meta=(("session_id", f"s{s}"),)))
        for f in range(rng.randint(5, 25)):
            src = tuple(rng.sample(turns, rng.randint(1, 3)))
            kind = "fact" if len(src) == 1 else "summary"
            unc = None
            roll = rng.random()
            if partial and roll < 0.15:
                unc = Uncertainty(possible=tuple(rng.sample(turns, 2)))
            elif partial and roll < 0.2:
                unc = Uncertainty(possible=None, max_sources=2)
            items.append(Item(f"{kind[0]}{f}-{coll}", kind, src, collection=coll,
                              uncertain=unc))
        turns_of[coll] = turns
        by_coll[coll] = [i.item_id for i in items if i.collection == coll]
    for q in range(60):
        coll = f"c{q % 3}"
        ev = rng.sample(turns_of[coll], rng.randint(0, 3))
        if rng.random() < 0.1:
            ev.append(f"{coll}:gone:{q}")  # unknown to the store
        queries.append(Query(f"q{q}", coll, "?", "a", "x", tuple(ev)))
    runs = []
    for name in ("a", "b"):
        rankings = []
        for q in queries:
            if name == "b" and rng.random() < 0.2:
                continue  # b does not rank every query
            pool = by_coll[q.collection_id] + [f"stray-{q.query_id}-{j}" for j in range(3)]
            n = rng.choice([0, 1, 3, 10, 40, 90])
            rankings.append(Ranking(q.query_id, name,
                                    tuple(rng.sample(pool, min(n, len(pool))))))
        runs.append(Run(name, tuple(rankings)))
    return items, queries, runs


def _rows(res: Scores) -> dict[str, Any]:
    """Every output of a result, floats as their exact bits (repr), in output order."""
    def exact(rows: Any) -> list[str]:
        return [repr(r) for r in rows]

    return {
        "per_query": exact(res.per_query_rows()),
        "interval": exact(res.interval_rows()),
        "zero": exact(res.zero_target_rows()),
        "undetermined": exact(res.undetermined_rows()),
        "sizes": exact(res.target_size_rows()),
        "summary": exact(res.summary_rows()),
        "shared": exact(res.summary_rows(shared=True)),
        "pairwise": exact(res.pairwise_rows()),
        "flips": {k: v.tobytes() for k, v in res.flips.items()},
        "values": {k: v.tobytes() for k, v in res.values.items()},
        "lower": {k: v.tobytes() for k, v in res.lower.items()},
        "upper": {k: v.tobytes() for k, v in res.upper.items()},
        "reports": [r.to_json() for r in res.reports.values()],
        "integrity": exact(res.integrity),
        "query_ids": dict(res.query_ids),
    }


def _score(shard: int | None, world: tuple[list[Item], list[Query], list[Run]],
           targets: list[str], credit: str, missing: str, depth: int | None) -> dict[str, Any]:
    items, queries, runs = world
    with use_engine(LocalEngine(query_shard=shard)):
        return _rows(rescore(runs, queries, {None: items}, targets=targets,
                             measures=MEASURES, credit=credit, missing=missing, depth=depth,
                             tokenizer="none"))


@pytest.mark.parametrize(("seed", "partial", "credit", "missing", "depth"), [
    (1, True, "group", "skip", None), (2, True, "set", "zero", None),
    (3, True, "group", "zero", 40), (4, False, "group", "skip", None),
    (5, False, "set", "zero", 40)])
def test_shards_give_the_whole_runs_bits(seed: int, partial: bool, credit: str, missing: str,
                                         depth: int | None) -> None:
    world = _world(seed, partial)
    targets = TURN_TARGETS if partial else BLOCK_TARGETS
    whole = _score(None, world, targets, credit, missing, depth)
    # the world exercises what the merge must carry: bounds, undetermined and undefined
    # queries, and both runs
    assert whole["interval"] and whole["undetermined"] and whole["zero"]
    assert len(whole["query_ids"]) == 2
    for shard in (1, 7, 50):
        got = _score(shard, world, targets, credit, missing, depth)
        for name, rows in whole.items():
            assert got[name] == rows, (shard, name)


def test_query_shard_must_be_positive() -> None:
    with pytest.raises(TiapError, match="query_shard must be a positive integer"):
        LocalEngine(query_shard=0)


def test_a_shard_of_queries_scores_as_in_the_whole_matrix() -> None:
    """The kernels alone: rows scored with other rows or on their own, the same bits
    (a BLAS matrix-vector product does not promise it)."""
    from tiap.scoring.discounts import row_dot

    rng = np.random.default_rng(0)
    gains = (rng.random((1001, 60)) < 0.2) * rng.random((1001, 60))
    w = 1.0 / np.log2(np.arange(2, 62))
    whole = row_dot(gains, w)
    parts = np.concatenate([row_dot(gains[a:a + 7], w) for a in range(0, 1001, 7)])
    assert whole.tobytes() == parts.tobytes()
    assert whole.tobytes() == np.concatenate([row_dot(gains[i:i + 1], w)
                                              for i in range(1001)]).tobytes()
    np.testing.assert_allclose(whole, gains @ w, rtol=1e-14)


@pytest.mark.parametrize(("credit", "missing", "graded"), [
    ("group", "skip", False), ("set", "zero", True)])
def test_qrels_shards_give_the_whole_runs_bits(tmp_path: Path, credit: str, missing: str,
                                               graded: bool) -> None:
    """The qrels path (columnar runs, the 10^6-query one): the same, with a run that ranks
    queries nobody judges and misses judged ones, and qrels files that judge some queries
    only non-relevant or not at all."""
    pytest.importorskip("pyarrow")
    rng = random.Random(7)
    lines = []
    for q in range(80):
        if q % 13 == 5:
            continue  # judged, not ranked
        docs = rng.sample(range(300), rng.choice([1, 5, 30, 70]))
        lines += [f"q{q} Q0 d{d} {r} {len(docs) - r} sys\n" for r, d in enumerate(docs, 1)]
    lines.append("q999 Q0 d1 1 1 sys\n")  # nobody judges q999
    (tmp_path / "run.trec").write_text("".join(lines))
    qrels = {}
    for t in range(2):
        rows = [f"q{q} 0 d{d} {rng.randint(0, 3) if graded else int(rng.random() < 0.8)}\n"
                for q in range(80) if rng.random() > 0.1
                for d in rng.sample(range(300), rng.randint(1, 12))]
        (tmp_path / f"t{t}.qrels").write_text("".join(rows))
        qrels[f"t{t}"] = read_qrels(tmp_path / f"t{t}.qrels")
    (run,) = read_run_columnar(tmp_path / "run.trec")

    def rows(shard: int | None) -> dict[str, Any]:
        with use_engine(LocalEngine(query_shard=shard)):
            return _rows(rescore_qrels([run], qrels, measures=MEASURES.replace(
                ",alpha_nDCG@10,ERR_IA(alpha=0.3)@10,nDCG(discount='jk')@10", ""),
                credit=credit, missing=missing))

    whole = rows(None)
    assert whole["zero"] and len(whole["query_ids"]["sys"]) >= 60
    for shard in (1, 9):
        got = rows(shard)
        for name, r in whole.items():
            assert got[name] == r, (shard, name)
