"""Multi-evidence measures: Rall, alpha-nDCG, ERR-IA, subtopic recall (R) and nDCG with the
'jk' discount, in both credit modes.

alpha-nDCG, ERR-IA and subtopic recall are checked against ndeval (pyndeval, the reference
implementation behind ir_measures' diversity measures) per query, on the subtopic qrels
``tiap targets`` exports for real LoCoMo stores (the native store's session summaries sit in
several groups, so intents overlap); the rest by hand on cases small enough to work out.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tiap.datasets import load
from tiap.datasets.queryfile import read_queries, write_queries
from tiap.ids import Vocabulary
from tiap.memory import build_store
from tiap.memory.store import read_store
from tiap.retrieval import make_retriever, retrieve
from tiap.runs import read_run
from tiap.scoring.kernels import Targets, score
from tiap.scoring.rescore import rescore
from tiap.targets.folder import write_targets

LOG3 = math.log2(3)


def _score(rankings: list[list[str]], groups: list[list[list[str]]], measures: str,
           credit: str = "group") -> dict[str, list[float]]:
    vocab = Vocabulary()
    mat = vocab.code_rows(rankings)
    t = Targets.from_groups([[[vocab.code(i) for i in g] for g in gs] for gs in groups])
    return {str(m): v.tolist() for m, v in score(mat, t, measures, credit).items()}


def test_an_item_in_two_groups_by_hand() -> None:
    """Groups g1 = {A, B}, g2 = {A}; ranking B, A.

    group credit: B opens g1 (gain 1), A opens g2 (gain 1): DCG = 1 + 1/log2(3) over the
    ideal of G = 2 ones, the same: nDCG@2 = 1.
    alpha = 1: B gains 1 (g1); A gains 0 (g1 seen) + 1 (g2) = 1; the greedy ideal puts A
    first (2 intents) and B then gains 0: alpha-nDCG@2 = (1 + 1/log2 3) / 2.
    alpha = 0.5: B 1; A 0.5 + 1 = 1.5; ideal A 2, B 0.5:
    (1 + 1.5/log2 3) / (2 + 0.5/log2 3).
    ERR-IA@2 (alpha 0.5): (1/1 + 1.5/2) / (2 (1 + 0.5/2)) = 1.75 / 2.5 = 0.7.
    """
    got = _score([["B", "A"]], [[["A", "B"], ["A"]]],
                 "nDCG@2,alpha_nDCG(alpha=1)@2,alpha_nDCG(alpha=0.5)@2,ERR_IA@2,R@1,Rall@1,Rall@2")
    assert got["nDCG@2"] == [pytest.approx(1.0)]
    assert got["alpha_nDCG(alpha=1)@2"] == [pytest.approx((1 + 1 / LOG3) / 2, abs=1e-15)]
    assert got["alpha_nDCG(alpha=0.5)@2"] == [
        pytest.approx((1 + 1.5 / LOG3) / (2 + 0.5 / LOG3), abs=1e-15)]
    assert got["ERR_IA(alpha=0.5)@2"] == [pytest.approx(0.7, abs=1e-15)]
    assert got["R@1"] == [0.5] and got["Rall@1"] == [0.0] and got["Rall@2"] == [1.0]


def test_set_credit_treats_each_relevant_item_as_an_intent() -> None:
    """S = {A, B, C}; ranking A, x, B: alpha-nDCG is the set nDCG (gains 1, 0, 1); ERR-IA
    = (1 + 1/3) / (3 (1 + 0.5/2 + 0.25/3)); Rall needs C too, group credit does not."""
    got = _score([["A", "x", "B"]], [[["A", "C"], ["B"]]],
                 "nDCG@3,alpha_nDCG(alpha=0.5)@3,ERR_IA@3,Rall@3", credit="set")
    ndcg = (1 + 0.5) / (1 + 1 / LOG3 + 0.5)
    assert got["nDCG@3"] == [pytest.approx(ndcg, abs=1e-15)]
    assert got["alpha_nDCG(alpha=0.5)@3"] == [pytest.approx(ndcg, abs=1e-15)]
    assert got["ERR_IA(alpha=0.5)@3"] == [
        pytest.approx((1 + 1 / 3) / (3 * (1 + 0.25 + 0.25 / 3)), abs=1e-15)]
    assert got["Rall@3"] == [0.0]
    assert _score([["A", "x", "B"]], [[["A", "C"], ["B"]]], "Rall@3")["Rall@3"] == [1.0]


def test_jk_discount_is_longmemeval_ndcg() -> None:
    """LongMemEval's dcg: rel_1 + sum_{i>=2} rel_i / log2(i): ranks 1 and 2 weigh 1.
    Relevant {A, B}; ranking x, A, y, B: DCG = 1 + 1/log2(4) = 1.5 over the ideal 1 + 1 = 2
    (log2 discount: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3))."""
    got = _score([["x", "A", "y", "B"]], [[["A"], ["B"]]],
                 "ndcg_any@4,nDCG@4,ndcg_any@1", credit="set")
    assert got["nDCG(discount='jk')@4"] == [pytest.approx(0.75, abs=1e-15)]
    assert got["nDCG@4"] == [pytest.approx((1 / LOG3 + 1 / math.log2(5)) / (1 + 1 / LOG3))]
    assert got["nDCG(discount='jk')@1"] == [0.0]


def test_no_shared_items_means_alpha_one_equals_group_ndcg() -> None:
    """With no item in two groups of a query, alpha-nDCG at alpha = 1 and group-credit nDCG
    are one measure (the first item of each group gains 1, the ideal is min(G, k) ones)."""
    rng = np.random.default_rng(7)
    rankings, groups = [], []
    for q in range(200):
        items = [f"{q}:{i}" for i in range(12)]
        rng.shuffle(items)
        cut = sorted(rng.choice(np.arange(1, 10), size=rng.integers(0, 4), replace=False))
        parts = np.split(np.array(items[:10]), cut)
        groups.append([list(p) for p in parts if len(p)])
        rankings.append(list(rng.permutation(items + [f"x{q}:{j}" for j in range(5)]))[:15])
    got = _score(rankings, groups, "nDCG@10,alpha_nDCG(alpha=1)@10,alpha_nDCG(alpha=0.5)@10")
    assert got["nDCG@10"] == pytest.approx(got["alpha_nDCG(alpha=1)@10"], abs=1e-12)
    assert got["nDCG@10"] != pytest.approx(got["alpha_nDCG(alpha=0.5)@10"], abs=1e-6)


@pytest.fixture(scope="module")
def conv26_native(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """conv-26: the heuristic store at density 5 and the native one (LoCoMo's observations
    and session summaries), BM25 to depth 20, and ``tiap targets`` of both."""
    root = tmp_path_factory.mktemp("intents")
    ds = load("locomo", data_dir)
    write_queries(root / "queries.jsonl",
                  (q for q in ds.queries_iter() if q.collection_id == "conv-26"))
    for name, parser, args in (("f5", "heuristic", {"max_facts": 5}), ("native", "native", {})):
        build_store(ds, parser, root / "stores" / name, parser_args=args,
                    collections=["conv-26"], store=name)
        retrieve(root / "stores" / name, root / "queries.jsonl", make_retriever("bm25"),
                 root / "runs" / f"{name}.jsonl", depth=20, system=name)
    write_targets(root / "targets", [read_store(root / "stores" / s / "items.jsonl")
                                     for s in ("f5", "native")],
                  read_queries(root / "queries.jsonl"))
    return root


@pytest.mark.parametrize("alpha", [0.5, 0.2, 1.0])
def test_equal_to_ndeval_on_exported_subtopic_qrels(conv26_native: Path, alpha: float) -> None:
    pyndeval = pytest.importorskip("pyndeval")
    root = conv26_native
    cut = (5, 10, 20)
    names = {"alpha_nDCG": "alpha-nDCG", "ERR_IA": "ERR-IA", "R": "strec"}
    measures = [f"alpha_nDCG(alpha={alpha})@{k}" for k in cut] + \
        [f"ERR_IA(alpha={alpha})@{k}" for k in cut] + [f"R@{k}" for k in cut]
    overlapping = 0
    for store in ("f5", "native"):
        for target in ("raw", "source", "canonical"):
            lines = (root / "targets" / "subtopic_qrels" / f"{store}.{target}.qrels"
                     ).read_text().split("\n")
            qrels = [pyndeval.SubtopicQrel(*ln.split()[:3], int(ln.split()[3]))
                     for ln in lines if ln]
            by_doc: dict[tuple[str, str], int] = {}
            for q in qrels:
                by_doc[(q.query_id, q.doc_id)] = by_doc.get((q.query_id, q.doc_id), 0) + 1
            overlapping += sum(1 for n in by_doc.values() if n > 1)
            [run] = read_run(root / "runs" / f"{store}.jsonl")
            scored = [pyndeval.ScoredDoc(r.query_id, i, 100.0 - j)
                      for r in run.rankings for j, i in enumerate(r.item_ids)]
            ref = pyndeval.ndeval(qrels, scored, alpha=alpha)
            res = rescore([run], read_queries(root / "queries.jsonl"),
                          {None: read_store(root / "stores" / store / "items.jsonl")},
                          targets=[target], measures=",".join(measures))
            qids = res.query_ids[store]
            for m in measures:
                vals = res.value(store, target, m)
                mine = {q: v for q, v in zip(qids, vals, strict=True) if not math.isnan(v)}
                family, k = m.split("(")[0].split("@")[0], m.rsplit("@", 1)[1]
                theirs = {q: r[f"{names[family]}@{k}"] for q, r in ref.items()}
                assert set(mine) == set(theirs), (store, target, m)
                worst = max(abs(mine[q] - theirs[q]) for q in mine)
                assert worst <= 1e-12, (store, target, m, worst)
    assert overlapping > 50  # (66) summaries fill several groups: the hard case is here
