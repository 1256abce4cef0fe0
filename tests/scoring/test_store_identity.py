"""An item is (store, item id): stores are named, and two different stores never share a name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, Store, default_store_name, read_items, read_store, write_items
from tiap.runs import Ranking, Run
from tiap.scoring.rescore import rescore

Q = [Query(query_id="q1", collection_id="c", question="?", answer="a", category="1",
           evidence=("u1",))]


def _run(name: str, ids: tuple[str, ...]) -> Run:
    return Run(name, (Ranking("q1", name, ids),))


def test_rows_name_the_store_and_read_back(tmp_path: Path) -> None:
    items = [Item("t1", "raw", ("u1",)), Item("f1", "fact", ("u1",), text="x")]
    (tmp_path / "s").mkdir()
    write_items(tmp_path / "s" / "items.jsonl", items, store="f5")
    rows = [json.loads(x) for x in (tmp_path / "s" / "items.jsonl").read_text().splitlines()]
    assert [r["store"] for r in rows] == ["f5", "f5"]
    assert list(rows[0]) == ["item_id", "store", "kind", "sources"]  # the store right after the id
    st = read_store(tmp_path / "s" / "items.jsonl")
    assert st.name == "f5" and [i.item_id for i in st.items] == ["t1", "f1"]
    with pytest.raises(TiapError, match="not 'f1'"):
        read_store(tmp_path / "s" / "items.jsonl", name="f1")


def test_a_file_holds_one_store(tmp_path: Path) -> None:
    p = tmp_path / "items.jsonl"
    p.write_text('{"item_id": "a", "store": "f1", "kind": "raw", "sources": ["u1"]}\n'
                 '{"item_id": "b", "store": "f5", "kind": "raw", "sources": ["u2"]}\n')
    with pytest.raises(TiapError) as err:
        read_items(p)
    assert err.value.problems[0].line == 2 and "one items file holds one store" in str(err.value)


def test_unnamed_files_are_named_by_their_folder(tmp_path: Path) -> None:
    assert default_store_name("out/stores/f5/items.jsonl") == "f5"
    assert default_store_name("runs/mem0.items.jsonl.gz") == "mem0.items"
    p = tmp_path / "my store" / "items.jsonl"
    p.parent.mkdir()
    p.write_text('{"item_id": "a", "kind": "raw", "sources": ["u1"]}\n')
    assert read_store(p).name == "my_store"


def test_two_different_stores_with_one_name_are_refused() -> None:
    a = Store("f5", (Item("t1", "raw", ("u1",)),))
    b = Store("f5", (Item("t1", "raw", ("u2",)),))  # same id, other lineage
    runs = [_run("A", ("t1",)), _run("B", ("t1",))]
    with pytest.raises(TiapError, match="two different stores are both named 'f5'"):
        rescore(runs, Q, {"A": a, "B": b}, targets=["raw"], measures="RR@10")


def test_runs_of_one_store_share_it_and_report_its_name() -> None:
    f5 = Store("f5", (Item("t1", "raw", ("u1",)), Item("f1", "fact", ("u1",))))
    f1 = Store("f1", (Item("t1", "raw", ("u1",)), Item("f1", "fact", ("u9",))))
    runs = [_run("f5-bm25", ("f1",)), _run("f5-dense", ("f1", "t1")), _run("f1-bm25", ("f1",))]
    res = rescore(runs, Q, {"f5-bm25": f5, "f5-dense": f5, "f1-bm25": f1},
                  targets=["source"], measures="RR@10")
    assert {s: res.reports[s].store for s in res.systems} == {
        "f5-bm25": "f5", "f5-dense": "f5", "f1-bm25": "f1"}
    assert set(res.target_sets) == {"f5", "f1"}
    # the same id 'f1' is credited in store f5 (lineage u1) and not in store f1 (lineage u9)
    assert res.value("f5-bm25", "source", "RR@10").tolist() == [1.0]
    assert res.value("f1-bm25", "source", "RR@10").tolist() == [0.0]


def test_rescore_refuses_another_stores_qrels(tmp_path: Path) -> None:
    """A trace names its store (header); qrels written by `tiap targets` name theirs: a run
    of store f1 scored against f5's qrels is refused, with the qrels to use."""
    from tiap.cli.main import main

    q = tmp_path / "queries.jsonl"
    q.write_text('{"query_id": "q1", "question": "?", "answer": "a", "evidence": ["u1"]}\n')
    for name, fact_unit in (("f1", "u9"), ("f5", "u1")):  # the same id, another lineage
        d = tmp_path / name
        d.mkdir()
        write_items(d / "items.jsonl", [Item("t1", "raw", ("u1",)),
                                        Item("x", "fact", (fact_unit,))], store=name)
    assert main(["targets", "--items", str(tmp_path / "f1" / "items.jsonl"), "--items",
                 str(tmp_path / "f5" / "items.jsonl"), "--queries", str(q),
                 "--out", str(tmp_path / "t")]) == 0
    trace = tmp_path / "f1-run.jsonl"
    trace.write_text(json.dumps({"tiap_trace": 1, "schema_version": 1, "system": "f1-bm25",
                                 "store": {"name": "f1"}}) + "\n"
                     + json.dumps({"query_id": "q1", "system": "f1-bm25",
                                   "ranking": ["x", "t1"]}) + "\n")
    qrels = tmp_path / "t" / "qrels"
    assert main(["rescore", "--run", str(trace), "--qrels", str(qrels / "f5.source.qrels"),
                 "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()
    assert main(["rescore", "--run", str(trace), "--qrels", str(qrels / "f1.source.qrels"),
                 "--measures", "RR@5", "--out", str(tmp_path / "ok")]) == 0
    rows = (tmp_path / "ok" / "per_query.csv").read_text().splitlines()
    # named by its target, not its file name; in f1, x is not credited (lineage u9): RR = 1/2
    assert rows[1] == "f1-bm25,source,q1,RR@5,0.5"


def test_a_run_naming_its_store_is_not_scored_against_another() -> None:
    """Runs TIAP writes say whose items they rank (a trace's header, the rows of JSONL
    rankings): given another store's items, rescoring refuses instead of crediting ids that
    mean other items there."""
    f5 = Store("f5", (Item("t1", "raw", ("u1",)),))
    run = Run("f1-bm25", (Ranking("q1", "f1-bm25", ("t1",)),), store="f1")
    with pytest.raises(TiapError, match="ranks items of store 'f1', but the store given"):
        rescore([run], Q, {None: f5}, targets=["raw"], measures="RR@10")


def test_jsonl_rankings_keep_their_store(tmp_path: Path) -> None:
    from tiap.runs import read_run, write_jsonl_run
    from tiap.runs.formats import trace_store

    run = Run("sys", (Ranking("q1", "sys", ("a", "b")),), store="f5")
    write_jsonl_run(tmp_path / "run.jsonl", run)
    (back,) = read_run(tmp_path / "run.jsonl")
    assert back.store == "f5" and trace_store(tmp_path / "run.jsonl") == "f5"
    rows = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert rows[0]["store"] == "f5"
    (tmp_path / "two.jsonl").write_text(
        '{"query_id": "q1", "system": "s", "store": "f1", "ranking": ["a"]}\n'
        '{"query_id": "q2", "system": "s", "store": "f5", "ranking": ["a"]}\n')
    with pytest.raises(TiapError) as err:
        read_run(tmp_path / "two.jsonl")
    assert err.value.problems[0].line == 2 and "one run, one store" in str(err.value)
