"""Pooling rescore folders into datasets (issue 33, item 11): folders scored against
different queries files are not pooled, and when they share a dataset name the error says so,
with both queries files' sha256 and the fix, not only ``two datasets are named locomo``; and a
folder's dataset is named by its queries' dataset (``locomo``), not by the folder
(``Dataset rescore`` in the report). Every input is built here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.sensitivity.load import load_datasets

ITEMS = [{"item_id": "t1", "kind": "raw", "sources": ["u1"], "text": "alpha beta"},
         {"item_id": "t2", "kind": "raw", "sources": ["u2"], "text": "gamma delta"},
         {"item_id": "f1", "kind": "fact", "sources": ["u1"], "text": "alpha fact"}]
QUERIES = [{"query_id": "q1", "question": "alpha?", "answer": "a", "category": "c",
            "evidence": ["u1"]},
           {"query_id": "q2", "question": "gamma?", "answer": "a", "category": "c",
            "evidence": ["u2"]}]
RUN = [{"query_id": "q1", "system": "A", "ranking": ["f1", "t1"]},
       {"query_id": "q2", "system": "A", "ranking": ["t2"]}]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _export(folder: Path, queries: list[dict], dataset: str | None) -> Path:
    """A queries file as ``tiap datasets export`` leaves it: a manifest beside it names the
    dataset (none when ``dataset`` is None)."""
    path = _jsonl(folder / "queries.jsonl", queries)
    if dataset is not None:
        (folder / "manifest.json").write_text(json.dumps({"command": "datasets export",
                                                          "dataset": dataset}))
    return path


def _rescore(tmp: Path, queries: Path, out: Path, *systems: str) -> Path:
    items = _jsonl(tmp / "store" / "items.jsonl", ITEMS)
    run = _jsonl(tmp / "run.jsonl", RUN)
    args = ["rescore", "--items", str(items), "--queries", str(queries), "--out", str(out)]
    for s in systems:
        args += ["--run", f"{s}={run}"]
    assert main(args) == 0
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_folders_of_one_dataset_scored_against_different_queries_files(tmp_path, capsys):
    # two slices of one benchmark: the second queries file lacks q2
    qa = _export(tmp_path / "qa", QUERIES, "locomo")
    qb = _export(tmp_path / "qb", QUERIES[:1], "locomo")
    ra = _rescore(tmp_path, qa, tmp_path / "ra", "A", "B")
    rb = _rescore(tmp_path, qb, tmp_path / "rb", "C")
    capsys.readouterr()
    out = tmp_path / "s"
    assert main(["sensitivity", str(ra), str(rb), "--out", str(out), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and not out.exists()
    assert err.splitlines() == [
        "error[invalid-value]: the rescore folders of dataset 'locomo' were scored against "
        "different queries files, so they are not pooled into one dataset (only folders "
        f"scored against the same queries file, the same sha256, are): {ra} against {qa} "
        f"(sha256 {_sha(qa)}); {rb} against {qb} (sha256 {_sha(qb)}). To compare their "
        "systems, rescore them against one queries file (tiap rescore --queries FILE); to "
        "keep them apart, name them differently (NAME=PATH)"]
    assert _sha(qa) != _sha(qb)
    # the fix the message gives works: named apart, they are two datasets
    assert main(["sensitivity", f"slice_a={ra}", f"slice_b={rb}", "--out", str(out),
                 "--resamples", "20", "--no-answers"]) == 0
    with open(out / "winner_flips.csv", encoding="utf-8") as fh:
        assert {line.split(",")[0] for line in list(fh)[1:]} == {"slice_a"}  # C has no pair


def test_the_same_names_given_by_hand_say_the_same(tmp_path) -> None:
    qa = _export(tmp_path / "qa", QUERIES, None)
    qb = _export(tmp_path / "qb", QUERIES[:1], None)
    ra = _rescore(tmp_path, qa, tmp_path / "ra", "A")
    rb = _rescore(tmp_path, qb, tmp_path / "rb", "B")
    with pytest.raises(TiapError) as err:
        load_datasets([f"x={ra}", f"x={rb}"])
    (p,) = err.value.problems
    assert p.message.startswith("the rescore folders of dataset 'x' were scored against "
                                "different queries files")
    assert _sha(qa) in p.message and _sha(qb) in p.message
    assert "rescore them against one queries file" in p.message


def test_folders_scored_against_one_queries_file_are_pooled_under_its_dataset(tmp_path):
    q = _export(tmp_path / "q", QUERIES, "locomo")
    ra = _rescore(tmp_path, q, tmp_path / "ra" / "rescore", "A")
    rb = _rescore(tmp_path, q, tmp_path / "rb" / "rescore", "B")
    man = json.loads((ra / "manifest.json").read_text())
    assert man["dataset"] == "locomo"  # recorded by tiap rescore
    (ds,) = load_datasets([ra, rb])
    assert ds.name == "locomo" and sorted(ds.systems) == ["A", "B"]  # not "rescore"


def test_the_dataset_name_defaults_to_the_queries_dataset(tmp_path) -> None:
    # named by a field of the queries themselves
    q = _jsonl(tmp_path / "own" / "queries.jsonl",
               [{**r, "dataset": "longmemeval_s"} for r in QUERIES])
    r = _rescore(tmp_path, q, tmp_path / "own" / "rescore", "A", "B")
    assert [d.name for d in load_datasets([r])] == ["longmemeval_s"]
    # a folder written before tiap rescore recorded the dataset: found from the inputs
    man = json.loads((r / "manifest.json").read_text())
    del man["dataset"]
    (r / "manifest.json").write_text(json.dumps(man))
    assert [d.name for d in load_datasets([r])] == ["rescore"]  # the records are not read
    q2 = _export(tmp_path / "exp", QUERIES, "locomo")
    r2 = _rescore(tmp_path, q2, tmp_path / "exp" / "rescore", "A")
    man = json.loads((r2 / "manifest.json").read_text())
    del man["dataset"]
    (r2 / "manifest.json").write_text(json.dumps(man))
    assert [d.name for d in load_datasets([r2])] == ["locomo"]  # the export's manifest
    # nothing names it: the folder's name, as before; a name given wins
    q3 = _export(tmp_path / "bare", QUERIES, None)
    r3 = _rescore(tmp_path, q3, tmp_path / "bare" / "mine", "A")
    assert json.loads((r3 / "manifest.json").read_text())["dataset"] is None
    assert [d.name for d in load_datasets([r3])] == ["mine"]
    assert [d.name for d in load_datasets([f"given={r2}"])] == ["given"]
