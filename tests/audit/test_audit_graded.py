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

The store is named ``toy``; labels are keyed by (store, query, item).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from audit_fixtures import ITEMS, QUERIES, runs

from tiap.audit import (
    LabelRecord,
    graded_rescore,
    item_relevance,
    read_labels,
    write_labels,
)
from tiap.audit.graded import write_graded
from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.errors import TiapError
from tiap.memory.store import Item, Store, write_items
from tiap.runs import write_jsonl_run

TOY = Store("toy", tuple(ITEMS))
STORES = {None: TOY}


def d(i: int) -> float:
    return 1 / math.log2(i + 1)


IDEAL5 = sum(d(i) for i in range(1, 6))


def lab(q: str, item: str, label: str, judge: str = "j", store: str = "toy",
        system: str = "sys") -> LabelRecord:
    return LabelRecord(case_id=f"{system}:{q}:source:{item}:{judge}", judge=judge, label=label,
                       system=system, store=store, query_id=q, item_id=item)


LABELS = [lab("q1", "s1", "partial"), lab("q1", "f1", "does_not_support")]


def rows(result, system="sys", target="source"):
    return {r["query_id"]: r for r in result.rows
            if r["system"] == system and r["target"] == target}


def test_graded_and_retained_ndcg_by_hand() -> None:
    rel = item_relevance(LABELS)
    assert rel == {("toy", "q1", "s1"): 1, ("toy", "q1", "f1"): 0}
    res = graded_rescore(runs(), QUERIES, STORES, rel, k=5)
    r = rows(res)["q1"]
    assert r["binary"] == pytest.approx((d(2) + d(3) + d(4) + d(5)) / IDEAL5, abs=1e-12)
    assert r["graded"] == pytest.approx((d(2) + 2 * d(3) + 2 * d(5)) / (2 * IDEAL5), abs=1e-12)
    assert r["retained"] == pytest.approx((0.5 * d(2) + d(3) + d(5)) / IDEAL5, abs=1e-12)
    assert r["raw"] == pytest.approx(d(3) / (d(1) + d(2)), abs=1e-12)
    assert (r["n_members"], r["n_judged"], r["n_rejected"]) == (7, 2, 1)


def test_all_supports_changes_nothing() -> None:
    rel = {("toy", "q1", "s1"): 2, ("toy", "q1", "f1"): 2, ("toy", "q3", "f2"): 2}
    res = graded_rescore(runs(), QUERIES, STORES, rel, k=5)
    for r in res.rows:
        if r["binary"] is not None:
            assert r["graded"] == pytest.approx(r["binary"], abs=1e-12)
            assert r["retained"] == pytest.approx(r["binary"], abs=1e-12)
    for s in res.summary:
        assert s["survival"] in (None, pytest.approx(1.0))


def test_binary_equals_set_credit_rescoring() -> None:
    from tiap.scoring.rescore import rescore

    res = graded_rescore(runs(), QUERIES, STORES, {}, k=5)
    ref = rescore(runs(), QUERIES, STORES, measures="nDCG@5", credit="set")
    for s in ("sys", "sys2"):
        for t in ("source", "canonical"):
            want = dict(zip(ref.query_ids[s], ref.value(s, t, "nDCG@5").tolist(), strict=True))
            for q, r in rows(res, s, t).items():
                got = r["binary"]
                assert (got is None and math.isnan(want[q])) or got == pytest.approx(want[q])


def test_unjudged_policies() -> None:
    rel = item_relevance(LABELS)
    drop = rows(graded_rescore(runs(), QUERIES, STORES, rel, k=5, unjudged="drop"))["q1"]
    # drop: only t1, t2 (raw, 2) and s1 (1) stay: DCG = 1 d2 + 2 d3; ideal 2 d1 + 2 d2 + 1 d3
    assert drop["graded"] == pytest.approx((d(2) + 2 * d(3)) / (2 * d(1) + 2 * d(2) + d(3)))
    # retained: s1 0.5 at 2, t1 1 at 3, o2 unjudged -> 0
    assert drop["retained"] == pytest.approx((0.5 * d(2) + d(3)) / IDEAL5)


def test_several_labels_of_one_item_are_combined_by_majority() -> None:
    labs = [lab("q1", "s1", "supports", "a"), lab("q1", "s1", "does_not_support", "b")]
    key = ("toy", "q1", "s1")
    assert item_relevance(labs) == {key: 0}  # tie -> least support
    assert item_relevance(labs, tie_rule="lenient") == {key: 2}
    labs.append(lab("q1", "s1", "supports", "c"))
    assert item_relevance(labs) == {key: 2}
    assert item_relevance(labs, judges=["b"]) == {key: 0}
    # the same query and item id in another store is another item: never combined
    labs.append(lab("q1", "s1", "does_not_support", "d", store="other"))
    assert item_relevance(labs) == {key: 2, ("other", "q1", "s1"): 0}


def test_survival_summary() -> None:
    res = graded_rescore(runs(), QUERIES, STORES, item_relevance(LABELS), k=5)
    s = next(x for x in res.summary if x["system"] == "sys" and x["target"] == "source")
    assert s["n"] == 3  # q1, q2 (Raw and Source are both {t3}) and q3
    assert s["gain"] == pytest.approx(s["binary"] - s["raw"])
    assert s["survival"] == pytest.approx((s["retained"] - s["raw"]) / (s["binary"] - s["raw"]))
    assert 0 < s["survival"] < 1


def test_labels_grade_only_their_own_store() -> None:
    """Two stores reuse the id f1 for different texts: a label of f1 in one store must not
    grade f1 in the other. Store ``b`` is the toy store with f1 replaced (same id, same
    lineage, another text); run ``sys`` uses ``toy`` and ``sys2`` (same rankings) ``b``."""
    other = Store("b", tuple(Item("f1", "fact", ("u1",), text="Caroline likes tea.")
                             if it.item_id == "f1" else it for it in ITEMS))
    rs = runs()
    rs = [rs[0], type(rs[0])(system="sys2", benchmark="toy", rankings=tuple(
        type(r)(r.query_id, "sys2", r.item_ids) for r in rs[0].rankings))]
    labels = [lab("q1", "f1", "supports", store="toy"),
              lab("q1", "f1", "does_not_support", store="b", system="sys2")]
    res = graded_rescore(rs, QUERIES, {"sys": TOY, "sys2": other}, item_relevance(labels),
                         k=5)
    assert res.systems == {"sys": "toy", "sys2": "b"}
    assert res.qrels["toy"]["source"]["q1"]["f1"] == 2
    assert "f1" not in res.qrels["b"]["source"]["q1"]  # rejected in b only
    a, b = rows(res, "sys")["q1"], rows(res, "sys2")["q1"]
    assert (a["n_judged"], a["n_rejected"], b["n_judged"], b["n_rejected"]) == (1, 0, 1, 1)
    assert b["graded"] < a["graded"]


def test_labels_without_a_store(tmp_path: Path) -> None:
    """Labels written before stores were named: taken as the store's when the audit has
    exactly one store, else an error naming the file, line and case."""
    old = [LabelRecord(case_id="sys:q1:source", judge="j", label="partial", query_id="q1",
                       item_id="s1")]
    write_labels(tmp_path / "old.jsonl", old)
    got = read_labels(tmp_path / "old.jsonl")
    assert item_relevance(got, stores={"toy"}) == {("toy", "q1", "s1"): 1}
    with pytest.raises(TiapError) as err:
        item_relevance(got, stores={"toy", "b"})
    msg = str(err.value)
    assert f"{tmp_path / 'old.jsonl'}:1" in msg and "sys:q1:source" in msg
    assert "re-run `tiap audit cases`" in msg
    with pytest.raises(TiapError, match="names no store"):
        item_relevance(got)


def test_cli_graded(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", ITEMS, store="toy")
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", runs())
    assert main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
                 str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
                 "--measures", "nDCG@5", "--out", str(tmp_path / "rs")]) == 0
    # labels without a store (written before stores were named): one store, so they are its
    write_labels(tmp_path / "labels.jsonl",
                 [LabelRecord(case_id=r.case_id, judge=r.judge, label=r.label,
                              query_id=r.query_id, item_id=r.item_id) for r in LABELS])
    assert main(["audit", "graded", str(tmp_path / "rs"), "--labels",
                 str(tmp_path / "labels.jsonl"), "--out", str(tmp_path / "g")]) == 0
    with open(tmp_path / "g" / "graded_per_query.csv", newline="") as fh:
        got = {(r["system"], r["target"], r["query_id"]): r for r in csv.DictReader(fh)}
    r = got[("sys", "source", "q1")]
    assert float(r["retained"]) == pytest.approx((0.5 * d(2) + d(3) + d(5)) / IDEAL5)
    assert r["store"] == "toy"
    qrels = (tmp_path / "g" / "qrels" / "toy.source.graded.qrels").read_text().splitlines()
    assert "q1 0 s1 1" in qrels and "q1 0 t1 2" in qrels
    assert not any(line.startswith("q1 0 f1 ") for line in qrels)
    assert (tmp_path / "g" / "graded_summary.csv").exists()
    man = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert man["stores"]["toy"]["systems"] == ["sys", "sys2"]
    assert man["systems"]["sys"]["qrels"]["source"] == "qrels/toy.source.graded.qrels"
    assert sorted(p.name for p in (tmp_path / "g" / "qrels").iterdir()) == [
        "toy.canonical.graded.qrels", "toy.source.graded.qrels"]


def test_cli_graded_refuses_store_less_labels_with_two_stores(tmp_path: Path, capsys) -> None:
    write_items(tmp_path / "a.jsonl", ITEMS, store="a")
    write_items(tmp_path / "b.jsonl", ITEMS, store="b")
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", runs())
    assert main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
                 f"sys={tmp_path / 'a.jsonl'}", "--items", f"sys2={tmp_path / 'b.jsonl'}",
                 "--queries", str(tmp_path / "queries.jsonl"), "--measures", "nDCG@5",
                 "--out", str(tmp_path / "rs")]) == 0
    write_labels(tmp_path / "labels.jsonl",
                 [lab("q1", "s1", "partial", store="a"),
                  LabelRecord(case_id="sys2:q1:source", judge="j", label="partial",
                              query_id="q1", item_id="s1")])
    capsys.readouterr()
    assert main(["audit", "graded", str(tmp_path / "rs"), "--labels",
                 str(tmp_path / "labels.jsonl"), "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'labels.jsonl'}:2" in err and "sys2:q1:source" in err
    assert "2 stores" in err and not (tmp_path / "g").exists()


def test_stale_graded_qrels_are_removed(tmp_path: Path) -> None:
    """The folder is replaced whole: qrels an earlier run wrote and this one does not (the
    old pooled layout, the store of an earlier audit, an edited file) do not survive; a file
    in qrels/ that the earlier manifest does not list is the user's, and refused."""
    out = tmp_path / "g"
    (out / "qrels").mkdir(parents=True)
    (out / "qrels" / "source.graded.qrels").write_text("q1 0 f1 2\n")  # pooled, schema 1
    (out / "manifest.json").write_text(json.dumps({
        "command": "audit graded", "schema_version": 1,
        "outputs": ["graded_per_query.csv", "graded_summary.csv", "qrels/"]}))
    write_graded(graded_rescore(runs(), QUERIES, STORES, {}, k=5), out)
    assert sorted(p.name for p in (out / "qrels").iterdir()) == [
        "toy.canonical.graded.qrels", "toy.source.graded.qrels"]
    man = json.loads((out / "manifest.json").read_text())
    assert man["outputs"]["qrels/toy.source.graded.qrels"]["store"] == "toy"
    (out / "qrels" / "toy.canonical.graded.qrels").write_text("edited\n")
    write_graded(graded_rescore(runs(), QUERIES, {None: Store("b", TOY.items)}, {}, k=5), out)
    assert sorted(p.name for p in (out / "qrels").iterdir()) == [
        "b.canonical.graded.qrels", "b.source.graded.qrels"]
    (out / "qrels" / "mine.qrels").write_text("q1 0 f1 1\n")  # not TIAP's
    before = sorted(p.name for p in (out / "qrels").iterdir())
    with pytest.raises(TiapError) as err:
        write_graded(graded_rescore(runs(), QUERIES, STORES, {}, k=5), out)
    assert err.value.problems[0].code == "stale-output" and "'qrels/mine.qrels'" in str(err.value)
    assert sorted(p.name for p in (out / "qrels").iterdir()) == before
    write_graded(graded_rescore(runs(), QUERIES, STORES, {}, k=5), out, force=True)
    assert sorted(p.name for p in (out / "qrels").iterdir()) == [
        "toy.canonical.graded.qrels", "toy.source.graded.qrels"]


def test_partial_lineage_leaves_a_query_ungraded() -> None:
    """An item that may or may not be in q1's Source family (partial lineage): q1's Source
    members are not known, so it gets no graded value (a value of the certain members would
    be a guess) and is counted apart; the other queries keep theirs."""
    from tiap.memory.store import Uncertainty

    maybe = Item("m9", "fact", (), uncertain=Uncertainty(possible=("u1", "u9"), max_sources=1))
    store = {None: Store("toy", (*ITEMS, maybe))}
    res = graded_rescore(runs(), QUERIES, store, item_relevance(LABELS), k=5)
    r = rows(res)["q1"]
    assert r["determined"] is False and r["binary"] is None and r["graded"] is None
    open_ = {q.query_id for q in QUERIES if "u1" in q.evidence}  # m9 may be u1's
    assert {q for q, x in rows(res).items() if not x["determined"]} == open_
    summ = next(s for s in res.summary if s["system"] == "sys" and s["target"] == "source")
    assert summ["n_undetermined"] == len(open_)
    whole = graded_rescore(runs(), QUERIES, STORES, item_relevance(LABELS), k=5)
    full = next(s for s in whole.summary if s["system"] == "sys" and s["target"] == "source")
    assert summ["n"] == full["n"] - len(open_)
    assert "q1" not in res.qrels.get("toy", {}).get("source", {})
