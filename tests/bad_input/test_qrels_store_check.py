"""A run scored against another store's qrels is refused in the API itself
(:func:`tiap.scoring.rescore.rescore_qrels`), so a Python caller gets the same error as
``tiap rescore --qrels``: both files name their store (the run's rows, the manifest of
``tiap targets`` beside the qrels file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.errors import TiapError
from tiap.io import sha256_file
from tiap.runs import read_qrels, read_run_columnar
from tiap.scoring.rescore import rescore_qrels


def _inputs(tmp_path: Path, qrels_store: str) -> tuple[Path, Path]:
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "system": "sys", "store": "A",
                               "ranking": ["t1", "t2"]}) + "\n", encoding="utf-8")
    qdir = tmp_path / "targets" / "qrels"
    qdir.mkdir(parents=True)
    qrels = qdir / f"{qrels_store}.raw.qrels"
    qrels.write_text("q1 0 t1 1\n", encoding="utf-8")
    (tmp_path / "targets" / "manifest.json").write_text(json.dumps({
        "command": "targets",
        "outputs": {f"qrels/{qrels.name}": {"store": qrels_store,
                                            "sha256": sha256_file(qrels)}}}),
        encoding="utf-8")
    return run, qrels


def test_another_stores_qrels_are_refused_in_the_api(tmp_path: Path) -> None:
    run, qrels = _inputs(tmp_path, "B")
    with pytest.raises(TiapError) as err:
        rescore_qrels(read_run_columnar(run), {"raw": read_qrels(qrels)}, measures="R@2")
    (p,) = err.value.problems
    assert "ranks items of store 'A'" in p.message and "store 'B'" in p.message
    assert p.file == str(run)


def test_the_same_stores_qrels_are_scored(tmp_path: Path) -> None:
    run, qrels = _inputs(tmp_path, "A")
    res = rescore_qrels(read_run_columnar(run), {"raw": read_qrels(qrels)}, measures="R@2")
    # q1 ranks t1 first; its one relevant item is t1: R@2 = 1
    assert res.value("sys", "raw", "R@2").tolist() == [1.0]
