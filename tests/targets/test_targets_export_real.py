"""Per-store qrels on real data (LoCoMo conv-26, stores f1 and f5): trec_eval (pytrec_eval)
scoring each store's run against its own store's qrels equals TIAP's set-credit rescoring
per query, and scoring it against the other store's qrels does not."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from locomo_conv26 import STORES, SYSTEMS

from tiap.datasets.queryfile import read_queries
from tiap.memory.store import read_store
from tiap.runs import read_run
from tiap.scoring.rescore import rescore
from tiap.targets.folder import qrels_name, qrels_store

pytrec_eval = pytest.importorskip("pytrec_eval")

#: TIAP measure -> trec_eval measure (runs are 20 deep, so RR is RR@20)
MEASURES = {"nDCG@10": "ndcg_cut_10", "nDCG@20": "ndcg_cut_20", "R@20": "recall_20",
            "RR": "recip_rank", "P@10": "P_10"}
TRECEVAL = {"ndcg_cut.10,20", "recall.20", "recip_rank", "P.10"}


def trec_eval(qrels_path: Path, run_path: Path) -> dict[str, dict[str, float]]:
    with open(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with open(run_path) as fh:
        run = pytrec_eval.parse_run(fh)
    result: dict[str, dict[str, float]] = pytrec_eval.RelevanceEvaluator(
        qrels, TRECEVAL).evaluate(run)
    return result


def tiap_set_credit(root: Path, system: str, store: str, target: str) -> dict[str, dict[str, float]]:
    """TIAP's per-query values (credit="set") of ``system``'s TREC run under ``store``'s
    lineage: query -> measure -> value, defined queries only."""
    runs = read_run(root / "runs" / f"{system}.trec")
    res = rescore(runs, read_queries(root / "queries.jsonl"),
                  {None: read_store(root / "stores" / store / "items.jsonl")},
                  targets=[target], measures=",".join(MEASURES), credit="set")
    out: dict[str, dict[str, float]] = {}
    for m in MEASURES:
        for q, v in zip(res.query_ids[system], res.value(system, target, m), strict=True):
            if not math.isnan(v):
                out.setdefault(q, {})[m] = float(v)
    return out


@pytest.mark.parametrize("target", ["source", "canonical"])
def test_own_store_qrels_equal_tiap_set_credit(conv26: Path, target: str) -> None:
    for system, store in SYSTEMS.items():
        qrels = conv26 / "targets" / qrels_name(store, target)
        assert qrels_store(qrels) == store
        ref = trec_eval(qrels, conv26 / "runs" / f"{system}.trec")
        got = tiap_set_credit(conv26, system, store, target)
        assert len(ref) > 150 and sorted(got) == sorted(ref)  # the same queries are averaged
        for q, values in ref.items():
            for m, te in MEASURES.items():
                assert got[q][m] == pytest.approx(values[te], abs=1e-9), (system, q, m)


def test_another_stores_qrels_give_other_values(conv26: Path) -> None:
    """The f1 run against f5's Source qrels (what one qrels file for both systems does)
    differs from the f1 run against its own, on some queries and on the mean."""
    (a, sa), (b, sb) = SYSTEMS.items()
    for system, own, other in ((a, sa, sb), (b, sb, sa)):
        run = conv26 / "runs" / f"{system}.trec"
        right = trec_eval(conv26 / "targets" / qrels_name(own, "source"), run)
        wrong = trec_eval(conv26 / "targets" / qrels_name(other, "source"), run)
        shared = sorted(right.keys() & wrong.keys())
        differ = [q for q in shared
                  if abs(right[q]["ndcg_cut_20"] - wrong[q]["ndcg_cut_20"]) > 1e-9]
        assert differ, f"{system}: another store's qrels changed no query"
        mean = {k: sum(v[q]["ndcg_cut_20"] for q in shared) / len(shared)
                for k, v in (("right", right), ("wrong", wrong))}
        assert mean["right"] != pytest.approx(mean["wrong"], abs=1e-6)
    # Raw qrels are the same for both stores (the raw turns are the same items); Source and
    # Canonical are not
    texts = {t: {(conv26 / "targets" / qrels_name(s, t)).read_text() for s in STORES}
             for t in ("raw", "source", "canonical")}
    assert [len(v) for v in texts.values()] == [1, 2, 2]
