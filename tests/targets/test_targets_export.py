"""Writers: groups JSONL, target-mapping rows, qrels, coverage, and atomicity."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from fixtures_targets import item, queries, query, store

import tiap.targets.export as export
from tiap.errors import TiapError
from tiap.targets import build_groups, write_qrels, write_targets


def read_jsonl(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_write_targets_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cov = write_targets(out, store(), queries(), ["raw", "canonical", "facts=kind in {fact}"])
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == [
        "coverage.csv", "coverage.json", "groups.jsonl", "manifest.json",
        "qrels/canonical.qrels", "qrels/facts.qrels", "qrels/raw.qrels", "target_mapping.jsonl",
    ]
    rows = read_jsonl(out / "groups.jsonl")
    assert len(rows) == 6 * 3  # 6 queries x 3 targets, query order then target order
    assert rows[0] == {"query_id": "q1", "target": "raw", "groups": [["t1"], ["t2"]],
                       "units": ["u1", "u2"], "n_groups": 2, "zero_target_reason": None}
    assert rows[1]["groups"] == [["f1", "f2", "f3", "s1"], ["f3", "s1"]]
    assert rows[3 * 5 + 1] == {
        "query_id": "q6", "target": "canonical", "groups": [], "units": [], "n_groups": 0,
        "zero_target_reason": "no members under target 'canonical' (evidence units: u4)",
    }
    # the mapping always has the three built-ins, even though 'source' was not requested
    mapping = read_jsonl(out / "target_mapping.jsonl")
    assert mapping[0] == {
        "query_id": "q1", "raw_ids": ["t1", "t2"],
        "source_ids": ["f1", "f2", "f3", "o1", "s1", "t1", "t2"],
        "canonical_ids": ["f1", "f2", "f3", "s1"],
    }
    assert mapping[1] == {"query_id": "q2", "raw_ids": [], "source_ids": [], "canonical_ids": []}
    assert [t.target for t in cov.targets] == ["raw", "canonical", "facts"]
    summary = json.loads((out / "coverage.json").read_text())
    assert summary["targets"][1]["zero_target_by_reason"] == {
        "no_evidence": 1, "unknown_evidence": 1, "no_members": 1,
    }
    with open(out / "coverage.csv", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [r["target"] for r in csv_rows] == ["raw", "canonical", "facts"]
    assert csv_rows[1]["defined"] == "3" and csv_rows[1]["zero_no_members"] == "1"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["targets"][2] == {"name": "facts", "spec": "kind in {fact}"}
    assert manifest["inputs"]["items"]["records"] == 10
    assert manifest["outputs"]["qrels/raw.qrels"]["lines"] == 5


def test_qrels_have_no_lines_for_zero_target_queries(tmp_path: Path) -> None:
    write_targets(tmp_path, store(), queries(), ["canonical", "raw"])
    lines = (tmp_path / "qrels" / "canonical.qrels").read_text().splitlines()
    # canonical defines q1 {f1 f2 f3 s1}, q4 {s1}, q5 {f1 f2 f3 s1}; q2, q3, q6 are zero-target
    assert lines == [
        "q1 0 f1 1", "q1 0 f2 1", "q1 0 f3 1", "q1 0 s1 1",
        "q4 0 s1 1",
        "q5 0 f1 1", "q5 0 f2 1", "q5 0 f3 1", "q5 0 s1 1",
    ]
    assert {ln.split()[0] for ln in lines} == {"q1", "q4", "q5"}
    raw = (tmp_path / "qrels" / "raw.qrels").read_text().splitlines()
    assert raw == ["q1 0 t1 1", "q1 0 t2 1", "q4 0 t3 1", "q5 0 t1 1", "q6 0 t4 1"]


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*") if p.name.startswith("."))


def test_writer_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sets = build_groups(store(), queries())

    def broken(tg):  # type: ignore[no-untyped-def]
        yield "q1 0 t1 1\n"
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(export, "qrels_lines", broken)
    target = tmp_path / "raw.qrels"
    with pytest.raises(RuntimeError):
        write_qrels(target, sets["raw"])
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_bad_ids_fail_before_writing(tmp_path: Path) -> None:
    sets = build_groups([item("t 1", "raw", ("u1",))], [query("q", ("u1",))])
    with pytest.raises(TiapError, match="whitespace"):
        write_qrels(tmp_path / "raw.qrels", sets["raw"])
    assert list(tmp_path.iterdir()) == []


def test_write_targets_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "coverage.json").write_text("old\n")

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("failure after groups, mapping and qrels were written")

    monkeypatch.setattr(export, "write_coverage", broken)
    with pytest.raises(RuntimeError):
        write_targets(out, store(), queries())
    assert sorted(p.name for p in out.iterdir()) == ["coverage.json"]
    assert (out / "coverage.json").read_text() == "old\n"
    assert _leftovers(tmp_path) == []


def test_write_targets_input_errors_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(TiapError, match="dangling parent"):
        write_targets(out, [item("f", "fact", parents=("ghost",))], queries())
    with pytest.raises(TiapError, match="unknown target"):
        write_targets(out, store(), queries(), ["raw", "nope"])
    assert not out.exists()


def test_qrels_read_by_reference_tools(tmp_path: Path) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    write_targets(tmp_path, store(), queries(), ["canonical"])
    path = tmp_path / "qrels" / "canonical.qrels"
    qrels = list(ir_measures.read_trec_qrels(str(path)))
    assert {q.query_id for q in qrels} == {"q1", "q4", "q5"}
    # a run that retrieves s1 first for every query: trec_eval averages only q1, q4, q5
    run = {q: {"s1": 2.0, "t1": 1.0} for q in ("q1", "q2", "q3", "q4", "q5", "q6")}
    sets = build_groups(store(), queries(), ["canonical"])
    res = pytrec_eval.RelevanceEvaluator(sets["canonical"].qrels(), {"recip_rank"}).evaluate(run)
    assert sorted(res) == ["q1", "q4", "q5"]
    assert all(v["recip_rank"] == 1.0 for v in res.values())
