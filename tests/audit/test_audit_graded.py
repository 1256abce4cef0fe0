"""Graded targets on the hand-made store of test_audit_cases.py.

Run ``sys``, query q1, ranking ``x9 s1 t1 f1 o2 f2``, k = 5, set credit. Source's set is
{f1, f2, s1, t1, n2, o2, t2} (7 members), Raw's is {t1, t2}. Labels: (q1, s1) partial,
(q1, f1) does_not_support; the other derived members are unjudged.

- binary: relevant at ranks 2, 3, 4, 5; DCG = d2 + d3 + d4 + d5 with d_i = 1/log2(i+1);
  ideal = 5 ones (d1..d5).
- graded (keep): s1 1, t1 2, f1 0 (leaves the target), o2 2, and f2, n2, t2 2. DCG =
  1 d2 + 2 d3 + 2 d5; ideal = 2 (d1 + ... + d5) (six members of relevance 2 or 1, the top
  five are 2s).
- retained: gains rel / 2: 0.5 d2 + 1 d3 + 0 d4 + 1 d5 over the binary ideal.
- raw: t1 at rank 3: d3 over the ideal of 2 ones (d1 + d2).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from audit_fixtures import ITEMS, QUERIES, runs

from tiap.audit import LabelRecord, graded_rescore, item_relevance, write_labels
from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.memory.store import write_items
from tiap.traces.runs import write_jsonl_run


def d(i: int) -> float:
    return 1 / math.log2(i + 1)


IDEAL5 = sum(d(i) for i in range(1, 6))


def lab(q: str, item: str, label: str, judge: str = "j") -> LabelRecord:
    return LabelRecord(case_id=f"sys:{q}:source:{item}:{judge}", judge=judge, label=label,
                       query_id=q, item_id=item)


LABELS = [lab("q1", "s1", "partial"), lab("q1", "f1", "does_not_support")]


def rows(result, system="sys", target="source"):
    return {r["query_id"]: r for r in result.rows
            if r["system"] == system and r["target"] == target}


def test_graded_and_retained_ndcg_by_hand() -> None:
    rel = item_relevance(LABELS)
    assert rel == {("q1", "s1"): 1, ("q1", "f1"): 0}
    res = graded_rescore(runs(), QUERIES, {None: ITEMS}, rel, k=5)
    r = rows(res)["q1"]
    assert r["binary"] == pytest.approx((d(2) + d(3) + d(4) + d(5)) / IDEAL5, abs=1e-12)
    assert r["graded"] == pytest.approx((d(2) + 2 * d(3) + 2 * d(5)) / (2 * IDEAL5), abs=1e-12)
    assert r["retained"] == pytest.approx((0.5 * d(2) + d(3) + d(5)) / IDEAL5, abs=1e-12)
    assert r["raw"] == pytest.approx(d(3) / (d(1) + d(2)), abs=1e-12)
    assert (r["n_members"], r["n_judged"], r["n_rejected"]) == (7, 2, 1)


def test_all_supports_changes_nothing() -> None:
    rel = {("q1", "s1"): 2, ("q1", "f1"): 2, ("q3", "f2"): 2}
    res = graded_rescore(runs(), QUERIES, {None: ITEMS}, rel, k=5)
    for r in res.rows:
        if r["binary"] is not None:
            assert r["graded"] == pytest.approx(r["binary"], abs=1e-12)
            assert r["retained"] == pytest.approx(r["binary"], abs=1e-12)
    for s in res.summary:
        assert s["survival"] in (None, pytest.approx(1.0))


def test_binary_equals_set_credit_rescoring() -> None:
    from tiap.scoring.rescore import rescore

    res = graded_rescore(runs(), QUERIES, {None: ITEMS}, {}, k=5)
    ref = rescore(runs(), QUERIES, {None: ITEMS}, measures="nDCG@5", credit="set")
    for s in ("sys", "sys2"):
        for t in ("source", "canonical"):
            want = dict(zip(ref.query_ids[s], ref.value(s, t, "nDCG@5").tolist(), strict=True))
            for q, r in rows(res, s, t).items():
                got = r["binary"]
                assert (got is None and math.isnan(want[q])) or got == pytest.approx(want[q])


def test_unjudged_policies() -> None:
    rel = item_relevance(LABELS)
    drop = rows(graded_rescore(runs(), QUERIES, {None: ITEMS}, rel, k=5, unjudged="drop"))["q1"]
    # drop: only t1, t2 (raw, 2) and s1 (1) stay: DCG = 1 d2 + 2 d3; ideal 2 d1 + 2 d2 + 1 d3
    assert drop["graded"] == pytest.approx((d(2) + 2 * d(3)) / (2 * d(1) + 2 * d(2) + d(3)))
    # retained: s1 0.5 at 2, t1 1 at 3, o2 unjudged -> 0
    assert drop["retained"] == pytest.approx((0.5 * d(2) + d(3)) / IDEAL5)


def test_several_labels_of_one_item_are_combined_by_majority() -> None:
    labs = [lab("q1", "s1", "supports", "a"), lab("q1", "s1", "does_not_support", "b")]
    assert item_relevance(labs) == {("q1", "s1"): 0}  # tie -> least support
    assert item_relevance(labs, tie_rule="lenient") == {("q1", "s1"): 2}
    labs.append(lab("q1", "s1", "supports", "c"))
    assert item_relevance(labs) == {("q1", "s1"): 2}
    assert item_relevance(labs, judges=["b"]) == {("q1", "s1"): 0}


def test_survival_summary() -> None:
    res = graded_rescore(runs(), QUERIES, {None: ITEMS}, item_relevance(LABELS), k=5)
    s = next(x for x in res.summary if x["system"] == "sys" and x["target"] == "source")
    assert s["n"] == 3  # q1, q2 (Raw and Source are both {t3}) and q3
    assert s["gain"] == pytest.approx(s["binary"] - s["raw"])
    assert s["survival"] == pytest.approx((s["retained"] - s["raw"]) / (s["binary"] - s["raw"]))
    assert 0 < s["survival"] < 1


def test_cli_graded(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", ITEMS)
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", runs())
    assert main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
                 str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
                 "--measures", "nDCG@5", "--out", str(tmp_path / "rs")]) == 0
    write_labels(tmp_path / "labels.jsonl", LABELS)
    assert main(["audit", "graded", str(tmp_path / "rs"), "--labels",
                 str(tmp_path / "labels.jsonl"), "--out", str(tmp_path / "g")]) == 0
    with open(tmp_path / "g" / "graded_per_query.csv", newline="") as fh:
        got = {(r["system"], r["target"], r["query_id"]): r for r in csv.DictReader(fh)}
    r = got[("sys", "source", "q1")]
    assert float(r["retained"]) == pytest.approx((0.5 * d(2) + d(3) + d(5)) / IDEAL5)
    qrels = (tmp_path / "g" / "qrels" / "source.graded.qrels").read_text().splitlines()
    assert "q1 0 s1 1" in qrels and "q1 0 t1 2" in qrels
    assert not any(line.startswith("q1 0 f1 ") for line in qrels)
    assert (tmp_path / "g" / "graded_summary.csv").exists()
