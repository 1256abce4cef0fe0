"""Kind 4 of issue 14: an input changed after the step that read it.

Every step that reads an earlier step's inputs again (``audit cases`` and ``audit graded``
read the run, store and queries a rescore manifest names; ``sensitivity`` the queries file
when a folder's queries.csv is empty) verifies them against the sha256 that manifest
records (:func:`tiap.provenance.verify_input`). A changed file, or another file passed in
its place, is ``error[input-changed]`` naming the file, the manifest and both sha256
prefixes, exit 2, and nothing is written.

The toy rescoring: store ``t1 t2`` (raw turns of u1, u2) and ``f1`` (a fact of u1); queries
q1 (evidence u1) and q2 (u2); run ``sys`` ranks ``f1 t1`` for q1 and ``t2`` for q2, so
``f1`` at rank 1 is a contested credit of q1 under Source ({t1, f1}) and under Canonical
({f1}): two cases (q2's only Source member is the raw t2; Canonical has no u2 group).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, write_items
from tiap.provenance import verify_input, verify_inputs
from tiap.runs import Ranking, Run, write_jsonl_run

ITEMS = [Item("t1", "raw", ("u1",), text="Caroline: I moved to Paris."),
         Item("t2", "raw", ("u2",), text="Melanie: pottery is fun."),
         Item("f1", "fact", ("u1",), text="Caroline moved to Paris.")]
QUERIES = [Query("q1", "c", "Where did Caroline move?", "Paris", "single-hop", ("u1",)),
           Query("q2", "c", "What does Melanie do?", "pottery", "single-hop", ("u2",))]


def _run(system: str, q1: list[str]) -> Run:
    return Run(system=system, benchmark="toy", rankings=(
        Ranking("q1", system, tuple(q1)), Ranking("q2", system, ("t2",))))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def rescored(tmp_path: Path) -> Path:
    write_items(tmp_path / "items.jsonl", ITEMS)
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", [_run("sys", ["f1", "t1"])])
    rc = main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
               str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
               "--measures", "nDCG@5", "--out", str(tmp_path / "rs")])
    assert rc == 0
    return tmp_path


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err.replace("\n", " ")


def _cases(tmp: Path, *extra: str) -> int:
    return main(["audit", "cases", str(tmp / "rs"), "--out", str(tmp / "cases.jsonl"), *extra])


def _graded(tmp: Path, *extra: str) -> int:
    labels = tmp / "labels.jsonl"  # one label of the contested f1 (an empty file is refused)
    labels.write_text(json.dumps({"case_id": "sys:q1:source", "judge": "j", "label": "partial",
                                  "query_id": "q1", "item_id": "f1"}) + "\n", encoding="utf-8")
    return main(["audit", "graded", str(tmp / "rs"), "--labels", str(labels),
                 "--out", str(tmp / "graded"), *extra])


def _nothing_written(tmp: Path) -> None:
    assert not (tmp / "cases.jsonl").exists()
    assert not (tmp / "cases.jsonl.manifest.json").exists()
    assert not (tmp / "graded").exists()


def test_unchanged_inputs_pass(rescored: Path) -> None:
    assert _cases(rescored) == 0
    lines = (rescored / "cases.jsonl").read_text().splitlines()
    assert [json.loads(x)["case_id"] for x in lines] == ["sys:q1:source", "sys:q1:canonical"]
    assert _graded(rescored) == 0


@pytest.mark.parametrize("command", [_cases, _graded])
def test_a_run_changed_after_the_rescoring(rescored: Path, capsys, command) -> None:
    run = rescored / "run.jsonl"
    before = sha(run)
    write_jsonl_run(run, [_run("sys", ["t1", "f1"])])  # the same system, another ranking
    after = sha(run)
    assert command(rescored) == 2
    err = _err(capsys)
    assert "error[input-changed]" in err
    assert str(run) in err and str(rescored / "rs" / "manifest.json") in err
    assert before[:12] in err and after[:12] in err
    _nothing_written(rescored)


def test_another_run_passed_with_run(rescored: Path, capsys) -> None:
    other = rescored / "other.jsonl"
    write_jsonl_run(other, [_run("sys", ["t1", "f1"])])
    assert _cases(rescored, "--run", str(other)) == 2
    err = _err(capsys)
    assert "error[input-changed]" in err
    assert str(other) in err and str(rescored / "run.jsonl") in err  # both files named
    assert sha(rescored / "run.jsonl")[:12] in err and sha(other)[:12] in err
    _nothing_written(rescored)


def test_a_copy_of_the_scored_run_is_accepted(rescored: Path) -> None:
    copy = rescored / "moved" / "run.jsonl"
    copy.parent.mkdir()
    copy.write_bytes((rescored / "run.jsonl").read_bytes())
    assert _cases(rescored, "--run", str(copy)) == 0
    man = json.loads((rescored / "cases.jsonl.manifest.json").read_text())
    assert man["inputs"]["run:run.jsonl"]["path"] == str(copy)


def test_a_run_of_a_system_the_rescoring_did_not_score(rescored: Path, capsys) -> None:
    other = rescored / "new.jsonl"
    write_jsonl_run(other, [_run("sys", ["f1", "t1"])])
    assert _cases(rescored, "--run", f"newsys={other}") == 2
    err = _err(capsys)
    assert "error[invalid-value]" in err
    assert str(other) in err and "'newsys'" in err and "it scored sys" in err
    _nothing_written(rescored)


@pytest.mark.parametrize(("name", "command"), [("items.jsonl", _cases),
                                               ("queries.jsonl", _graded)])
def test_a_store_or_queries_file_changed(rescored: Path, capsys, name, command) -> None:
    path = rescored / name
    before = sha(path)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n")  # one more byte: nothing else differs
    assert command(rescored) == 2
    err = _err(capsys)
    assert "error[input-changed]" in err and str(path) in err
    assert before[:12] in err and sha(path)[:12] in err
    _nothing_written(rescored)


def test_another_store_passed_with_items(rescored: Path, capsys) -> None:
    other = rescored / "other-items.jsonl"
    write_items(other, ITEMS[:2])  # f1 gone: no contested credit any more
    assert _cases(rescored, "--items", str(other)) == 2
    err = _err(capsys)
    assert "error[input-changed]" in err
    assert str(other) in err and str(rescored / "items.jsonl") in err
    _nothing_written(rescored)


def test_a_recorded_input_that_is_gone(rescored: Path, capsys) -> None:
    (rescored / "run.jsonl").unlink()
    assert _graded(rescored) == 2
    err = _err(capsys)
    assert "error[io]" in err and str(rescored / "run.jsonl") in err
    assert "'run:sys'" in err and "--run" in err
    _nothing_written(rescored)


# -- the function every step calls ------------------------------------------------------


def _manifest(tmp: Path, **files: bytes) -> dict:
    inputs = {}
    for key, data in files.items():
        p = tmp / f"{key}.txt"
        p.write_bytes(data)
        inputs[key] = {"path": str(p), "sha256": hashlib.sha256(data).hexdigest(),
                       "bytes": len(data)}
    return {"command": "rescore", "inputs": inputs}


def test_verify_inputs_reports_every_changed_file(tmp_path: Path) -> None:
    man = _manifest(tmp_path, a=b"one", b=b"two", c=b"three")
    (tmp_path / "a.txt").write_bytes(b"ONE")
    (tmp_path / "c.txt").write_bytes(b"THREE")
    with pytest.raises(TiapError) as info:
        verify_inputs(man, tmp_path / "manifest.json")
    assert info.value.code == "input-changed"
    assert [p.file for p in info.value.problems] == [str(tmp_path / "a.txt"),
                                                     str(tmp_path / "c.txt")]
    assert hashlib.sha256(b"ONE").hexdigest()[:12] in info.value.problems[0].message
    assert hashlib.sha256(b"one").hexdigest()[:12] in info.value.problems[0].message
    ok = verify_inputs(man, tmp_path / "manifest.json", ["b"])
    assert ok == {"b": tmp_path / "b.txt"}


def test_verify_input_of_a_key_not_recorded_or_malformed(tmp_path: Path) -> None:
    man = _manifest(tmp_path, a=b"one")
    with pytest.raises(TiapError) as info:
        verify_input(man, tmp_path / "m.json", "run:x", tmp_path / "a.txt")
    assert info.value.code == "invalid-value" and "'run:x'" in str(info.value)
    man["inputs"]["a"] = {"path": str(tmp_path / "a.txt")}  # no sha256
    with pytest.raises(TiapError) as info:
        verify_input(man, tmp_path / "m.json", "a")
    assert info.value.code == "input"
    assert info.value.problems[0].record == "inputs.a"
    assert info.value.problems[0].file == str(tmp_path / "m.json")


def test_sensitivity_verifies_the_queries_file_it_reads_for_categories(rescored: Path,
                                                                       capsys) -> None:
    rs = rescored / "rs"
    (rs / "queries.csv").write_text("query_id,category,collection,abstention\r\n",
                                    encoding="utf-8")  # empty: categories from the file
    queries = rescored / "queries.jsonl"
    write_queries(queries, [QUERIES[1], QUERIES[0]])  # the same queries, another order
    rc = main(["sensitivity", str(rs), "--out", str(rescored / "sens"), "--resamples", "10"])
    assert rc == 2
    err = _err(capsys)
    assert "error[input-changed]" in err and str(queries) in err
    assert not (rescored / "sens").exists()
