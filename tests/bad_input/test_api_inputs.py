"""``tiap.rescore`` called from Python takes runs, queries and stores as objects, plain
data or files (:mod:`tiap.scoring.inputs`), with the checks the file readers make: every
bad ranking, query or item of one input is reported together, located."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.datasets.queryfile import write_queries
from tiap.errors import TiapError
from tiap.memory.store import write_items
from tiap.runs import write_jsonl_run
from tiap.scoring.inputs import as_queries, as_runs, as_stores
from tiap.scoring.rescore import rescore

ITEMS = [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
         {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}]
QUERIES = [{"query_id": "q1", "evidence": ["d1:1"]}]


def test_every_bad_ranking_of_a_run_is_reported_together() -> None:
    with pytest.raises(TiapError) as err:
        as_runs({"A": {"q1": ["t1", "t1"], "q2": "t1", "q3": ["m1"]}})
    probs = err.value.problems
    assert [p.query_id for p in probs] == ["q1", "q2"]
    assert "occurs more than once" in probs[0].message
    assert "expected a list of item ids" in probs[1].message


def test_a_run_needs_a_system_name_and_rankings_by_query() -> None:
    with pytest.raises(TiapError, match="non-empty string"):
        as_runs({"": {"q1": ["t1"]}})
    with pytest.raises(TiapError, match=r"expected \{query_id"):
        as_runs({"A": ["t1"]})


def test_bad_query_and_item_records_are_located_by_their_place() -> None:
    with pytest.raises(TiapError) as err:
        as_queries([QUERIES[0], {"evidence": ["d1:2"]}, {"query_id": 3.5}])
    assert [p.line for p in err.value.problems] == [2, 3]
    with pytest.raises(TiapError) as err:
        as_stores([ITEMS[0], {"kind": "raw", "sources": []}])
    assert [p.line for p in err.value.problems] == [2]


def test_files_and_plain_data_give_the_same_scores(tmp_path: Path) -> None:
    runs = {"A": {"q1": ["m1", "t1"]}}
    held = rescore(runs, QUERIES, ITEMS, measures="RR@5")
    write_items(tmp_path / "items.jsonl", as_stores(ITEMS)[None])
    write_queries(tmp_path / "queries.jsonl", as_queries(QUERIES))
    write_jsonl_run(tmp_path / "run.jsonl", as_runs(runs))
    read = rescore(str(tmp_path / "run.jsonl"), tmp_path / "queries.jsonl",
                        {"A": tmp_path / "items.jsonl"}, measures="RR@5")
    # q1 ranks m1 then t1: raw credits t1 (RR 1/2), source both (1), canonical m1 (1)
    for res in (held, read):
        assert [res.value("A", t, "RR@5").tolist() for t in ("raw", "source", "canonical")] \
            == [[0.5], [1.0], [1.0]]
