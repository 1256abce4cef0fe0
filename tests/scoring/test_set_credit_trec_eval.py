"""Set credit must equal trec_eval (pytrec_eval) and ir_measures to 1e-9.

Runs are written with strictly decreasing scores (depth - rank), so trec_eval's own sort
reproduces our rank order; zero-target queries get no qrels lines (trec_eval then leaves them
out, matching our NaN); RR@k is trec_eval's ``recip_rank`` on the run truncated to k.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tiap.scoring import RankingIndex, encode, parse_measures

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 3, 5, 10, 20)
TOL = 1e-9


def _random_queries(seed: int, n_queries: int, graded: bool = False):  # type: ignore[no-untyped-def]
    """Rankings and groups with every shape of interest: empty runs, no target, one relevant
    id, a few, and more than the largest cutoff; ids shared across queries and groups."""
    rng = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(400)]
    rankings: list[list[str]] = []
    groups: list[list[Any]] = []
    for q in range(n_queries):
        depth = 0 if q % 37 == 5 else int(rng.integers(1, 31))
        run = [str(x) for x in rng.choice(pool, size=depth, replace=False)]
        kind = ("none", "one", "few", "many")[q % 4]
        if kind == "none":
            rel: list[str] = []
        else:
            n_rel = {"one": 1, "few": int(rng.integers(2, 7)), "many": int(rng.integers(25, 41))}[
                kind
            ]
            from_run = [x for x in run if rng.random() < 0.4]
            others = [str(x) for x in rng.choice(pool, size=n_rel, replace=False)]
            rel = list(dict.fromkeys(from_run + others))[:n_rel]
        # split into groups, then put some ids in a second group too
        qgroups: list[dict[str, int] | set[str]] = []
        n_groups = min(len(rel), int(rng.integers(1, 5))) if rel else 0
        for g in range(n_groups):
            members = set(rel[g::n_groups])
            if rel and rng.random() < 0.5:
                members.add(rel[int(rng.integers(0, len(rel)))])
            qgroups.append(members)
        if graded:
            levels = {x: int(rng.integers(1, 4)) for x in rel}
            qgroups = [{x: levels[x] for x in g} for g in qgroups]
        rankings.append(run)
        groups.append(qgroups)
    return rankings, groups


def _trec_inputs(rankings, groups, cut: int | None = None):  # type: ignore[no-untyped-def]
    qrels: dict[str, dict[str, int]] = {}
    for q, qgroups in enumerate(groups):
        rel: dict[str, int] = {}
        for g in qgroups:
            items = g.items() if isinstance(g, dict) else ((x, 1) for x in g)
            for x, v in items:
                rel[x] = max(rel.get(x, 0), int(v))
        if rel:  # zero-target query: no qrels lines
            qrels[f"q{q}"] = rel
    run = {}
    for q, ranking in enumerate(rankings):
        top = ranking if cut is None else ranking[:cut]
        run[f"q{q}"] = {x: float(len(top) - i) for i, x in enumerate(top)}  # strictly decreasing
    return qrels, run


def _ours(rankings, groups, measures: str):  # type: ignore[no-untyped-def]
    enc = encode(rankings, groups)
    return RankingIndex(enc.rankings).score(enc.targets[0], measures, credit="set")


def _compare(ours: np.ndarray, trec: dict[str, dict[str, float]], key: str, n: int) -> int:
    defined = {f"q{q}" for q in range(n) if not np.isnan(ours[q])}
    assert defined == set(trec), key  # NaN exactly where trec_eval has no qrels
    for qid, row in trec.items():
        assert abs(ours[int(qid[1:])] - row[key]) <= TOL, (key, qid, ours[int(qid[1:])], row[key])
    return len(trec)


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_set_credit_equals_trec_eval(graded: bool) -> None:
    n = 400
    rankings, groups = _random_queries(seed=7 + graded, n_queries=n, graded=graded)
    qrels, run = _trec_inputs(rankings, groups)
    cuts = ",".join(map(str, CUTOFFS))
    names = {
        f"ndcg_cut.{cuts}",
        f"recall.{cuts}",
        f"success.{cuts}",
        f"P.{cuts}",
        "recip_rank",
        "ndcg",
    }
    trec = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    spec = ",".join(f"nDCG@{k},R@{k},Success@{k},P@{k}" for k in CUTOFFS) + ",RR,nDCG"
    ours = _ours(rankings, groups, spec)
    by_name = {str(m): v for m, v in ours.items()}
    checked = 0
    for k in CUTOFFS:
        checked += _compare(by_name[f"nDCG@{k}"], trec, f"ndcg_cut_{k}", n)
        checked += _compare(by_name[f"R@{k}"], trec, f"recall_{k}", n)
        checked += _compare(by_name[f"Success@{k}"], trec, f"success_{k}", n)
        checked += _compare(by_name[f"P@{k}"], trec, f"P_{k}", n)
    checked += _compare(by_name["RR"], trec, "recip_rank", n)
    checked += _compare(by_name["nDCG"], trec, "ndcg", n)
    assert checked > 5000
    # the data has every case: zero-target, one relevant, more relevant than k, empty runs
    sizes = [len(r) for r in qrels.values()]
    assert min(sizes) == 1 and max(sizes) > max(CUTOFFS)
    assert len(qrels) < n and any(len(r) == 0 for r in rankings)


def test_rr_at_k_equals_trec_eval_on_truncated_runs() -> None:
    n = 300
    rankings, groups = _random_queries(seed=11, n_queries=n)
    spec = ",".join(f"RR@{k}" for k in CUTOFFS)
    ours = {str(m): v for m, v in _ours(rankings, groups, spec).items()}
    for k in CUTOFFS:
        qrels, run = _trec_inputs(rankings, groups, cut=k)
        trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
        _compare(ours[f"RR@{k}"], trec, "recip_rank", n)


def test_set_credit_equals_ir_measures() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    n = 120
    rankings, groups = _random_queries(seed=3, n_queries=n)
    qrels, run = _trec_inputs(rankings, groups)
    qrel_rows = [ir_measures.Qrel(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    names = ["nDCG@10", "R@10", "RR@10", "Success@10", "P@5", "RR", "nDCG@3"]
    theirs: dict[str, dict[str, float]] = {}
    for row in ir_measures.iter_calc(
        [ir_measures.parse_measure(x) for x in names], qrel_rows, run_rows
    ):
        theirs.setdefault(str(row.measure), {})[row.query_id] = row.value
    ours = {str(m): v for m, v in _ours(rankings, groups, ",".join(names)).items()}
    for name in names:
        assert name in theirs, name
        for qid, value in theirs[name].items():
            q = int(qid[1:])
            assert not np.isnan(ours[name][q]), (name, qid)
            assert abs(ours[name][q] - value) <= TOL, (name, qid, ours[name][q], value)
        # every query ir_measures scored has a value, every other defined query is empty-run
        assert len(theirs[name]) >= len(qrels) - sum(1 for r in rankings if not r)


def test_measure_names_match_the_parser() -> None:
    # the names used above parse to the canonical forms the comparisons rely on
    assert [str(m) for m in parse_measures("ndcg@10,recall@10,hit@10,mrr")] == [
        "nDCG@10",
        "R@10",
        "Success@10",
        "RR",
    ]
