"""LongMemEval's retrieval metrics reproduced by TIAP's measures on a real BM25 run over
LongMemEval-S: ``recall_any@k`` is ``Success@k``, ``recall_all@k`` is ``Rall@k`` (group
credit: at session level, each evidence session is one group), ``ndcg_any@k`` is
``nDCG(discount='jk')@k`` (set credit), under the ``raw`` target at turn level and under
``raw@session`` at session level (its cutoffs count sessions, as LongMemEval's rule does).
Expected values come from :mod:`lme_reference`, written from LongMemEval's definitions.

The definitions are applied to TIAP's corpus (every turn of the haystack; LongMemEval's own
retriever indexes the user's turns only), TIAP's ranking and TIAP's evidence turns;
abstention questions, which have no evidence, are left out by both.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from lme_reference import metrics, session_metrics

from tiap.datasets import load
from tiap.datasets.queryfile import read_queries, write_queries
from tiap.memory import build_store
from tiap.memory.store import read_store
from tiap.retrieval import make_retriever, retrieve
from tiap.runs import read_run
from tiap.scoring.rescore import rescore

pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def lme(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """30 LongMemEval-S questions with evidence and 4 abstention questions: a store of their
    haystacks' turns (no derived item), and BM25 ranking, to any depth, every turn of each
    haystack it scores above 0 (a turn it does not rank is not retrieved, for both)."""
    root = tmp_path_factory.mktemp("lme")
    ds = load("longmemeval/s", data_dir)
    qs = list(ds.queries_iter())
    chosen = [q for q in qs if not q.abstention][:30] + [q for q in qs if q.abstention][:4]
    cols = [q.collection_id for q in chosen]
    build_store(ds, "turns", root / "store", collections=cols, store="lme")
    write_queries(root / "queries.jsonl", chosen)
    retrieve(root / "store", root / "queries.jsonl", make_retriever("bm25"),
             root / "run.jsonl", depth=10_000, system="bm25")
    return root


@pytest.mark.parametrize("k", [5, 10])
def test_turn_and_session_metrics_equal_longmemeval(lme: Path, k: int) -> None:
    store = read_store(lme / "store" / "items.jsonl")
    queries = read_queries(lme / "queries.jsonl")
    [run] = read_run(lme / "run.jsonl")
    corpus: dict[str, list[str]] = {}
    for it in store:
        corpus.setdefault(it.collection, []).append(it.item_id)
    ms = f"Success@{k},Rall@{k},nDCG(discount='jk')@{k}"
    targets = ["raw", "raw@session"]
    group = rescore([run], queries, {None: store}, targets=targets, measures=ms)
    sett = rescore([run], queries, {None: store}, targets=targets, measures=ms, credit="set")
    names = {q.query_id: q for q in queries}
    checked = {"raw": 0, "raw@session": 0}
    for target, ref in (("raw", metrics), ("raw@session", session_metrics)):
        got = {
            "any": group.value("bm25", target, f"Success@{k}"),
            "all": group.value("bm25", target, f"Rall@{k}"),
            "ndcg": sett.value("bm25", target, f"nDCG(discount='jk')@{k}"),
        }
        for i, qid in enumerate(group.query_ids["bm25"]):
            q = names[qid]
            if q.abstention:
                assert all(math.isnan(v[i]) for v in got.values())  # no evidence: undefined
                continue
            docs = corpus[q.collection_id]
            ranked = run.ranking(qid).item_ids  # every turn BM25 scores above 0
            assert set(ranked) <= set(docs)
            pos = {d: j for j, d in enumerate(docs)}
            expect = ref(docs, [pos[d] for d in ranked], list(q.evidence), k)
            for name, want in zip(("any", "all", "ndcg"), expect, strict=True):
                assert abs(got[name][i] - want) <= 1e-12, (target, qid, name, got[name][i], want)
            checked[target] += 1
    assert checked == {"raw": 30, "raw@session": 30}
    # session level is not turn level: some question's values differ between the two
    assert any(abs(a - b) > 1e-9 for a, b in zip(
        group.value("bm25", "raw", f"Rall@{k}"), group.value("bm25", "raw@session", f"Rall@{k}"),
        strict=True) if not math.isnan(a))
