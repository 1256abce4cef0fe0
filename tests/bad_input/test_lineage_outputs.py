"""Partial and inferred lineage in the files TIAP reads back: an item's ``inferred`` field
(items.jsonl), and a rescore folder's ``flip_pairs.csv`` and ``inferred.csv`` (read by
``tiap sensitivity``). What cannot be right is a located error, never read silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Inference, Item, Uncertainty, item_from_json, write_items
from tiap.runs import Ranking, Run, write_jsonl_run


@pytest.mark.parametrize(("field", "why"), [
    ([], "field 'inferred' must be an object, got a list"),
    ("x", "field 'inferred' must be an object, got a string"),
    ({"possible_sources": "c:1"},
     "field 'inferred.possible_sources' must be a list of ids, got a string 'c:1'"),
    ({"kind": "yes"}, "'inferred.kind' must be true or false, got a string"),
    ({"sources": []},
     "field 'inferred' has unknown key(s) 'sources'; expected possible_sources, kind")])
def test_a_bad_inferred_field_is_located(field: object, why: str) -> None:
    with pytest.raises(TiapError) as exc:
        item_from_json({"item_id": "f1", "kind": "fact", "sources": [], "inferred": field},
                       file="i.jsonl", line=3)
    assert str(exc.value.problems[0]) == f"i.jsonl:3, record f1: {why}"


@pytest.fixture()
def rs(tmp_path: Path) -> Path:
    """A rescoring of partial and inferred lineage: s1's turn is unknown, f1's assumed."""
    items = [Item("r1", "raw", ("u1",), collection="c"), Item("r2", "raw", ("u2",), collection="c"),
             Item("s1", "summary", (), collection="c", uncertain=Uncertainty()),
             Item("f1", "fact", ("u1",), collection="c",
                  inferred=Inference(possible=("u1", "u2")))]
    write_items(tmp_path / "items.jsonl", items)
    write_queries(tmp_path / "queries.jsonl",
                  [Query("q1", "c", "?", None, "", ("u1",)),
                   Query("q2", "c", "?", None, "", ("u2",))])
    write_jsonl_run(tmp_path / "run.jsonl", [Run("sys", (Ranking("q1", "sys", ("s1", "f1")),
                                                         Ranking("q2", "sys", ("s1", "r1"))))])
    assert main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
                 str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
                 "--measures", "nDCG@5,Success@5", "--tokenizer", "none",
                 "--out", str(tmp_path / "rs")]) == 0
    return tmp_path / "rs"


def _sensitivity(rs: Path) -> int:
    return main(["sensitivity", str(rs), "--out", str(rs.parent / "sens"), "--resamples", "10",
                 "--no-answers"])


def test_the_folder_reads(rs: Path) -> None:
    # q2's top-1 (s1) is s1 under Source and Canonical alike: decided by the shared lineage
    assert "sys,source,canonical,1,q2,0" in (rs / "flip_pairs.csv").read_text().splitlines()
    assert (rs / "inferred.csv").read_text().splitlines()[0] == "system,target,query_id,reason"
    assert _sensitivity(rs) == 0


@pytest.mark.parametrize(("line", "code", "why"), [
    ("sys,source,canonical,1,q2,2", "invalid-value", "flip must be 0 or 1, got '2'"),
    ("sys,source,canonical,0,q2,0", "invalid-value", "k must be a positive integer"),
    ("sys,source,nope,1,q2,0", "invalid-value", "target 'nope' is not one of the rescoring"),
    ("sys,source,canonical,1,q9,0", "invalid-value",
     "no per_query.csv row for system 'sys' and query 'q9'"),
    ("sys,source,canonical,1,q2,0", "duplicate", "occurs twice")])
def test_a_flip_pair_that_cannot_be_right(rs: Path, capsys, line: str, code: str,
                                          why: str) -> None:
    fp = rs / "flip_pairs.csv"
    n = len(fp.read_text().splitlines())
    with open(fp, "a", newline="") as fh:
        fh.write(line + "\r\n")
    assert _sensitivity(rs) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"error[{code}]: {fp}:{n + 1}" in err and why in err


@pytest.mark.parametrize(("line", "code", "why"), [
    ("sys,nope,q1,x", "invalid-value", "target 'nope' is not one of the rescoring"),
    ("sys,source,q9,x", "invalid-value", "no per_query.csv row"),
    ("sys,source,q1,x", "duplicate", "occurs twice")])
def test_an_inferred_row_that_cannot_be_right(rs: Path, capsys, line: str, code: str,
                                              why: str) -> None:
    path = rs / "inferred.csv"
    lines = path.read_text().splitlines()
    assert "sys,source,q1," in "\n".join(lines)  # f1 is ranked for q1
    with open(path, "a", newline="") as fh:
        fh.write(line + "\r\n")
    assert _sensitivity(rs) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert f"error[{code}]: {path}:{len(lines) + 1}" in err and why in err
