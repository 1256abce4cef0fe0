"""Evidence overlays: the file format, the LoCoMo audit loader on the real errors.json, targets
read under an overlay, and Stage III comparing a target with itself under other evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets import load
from tiap.datasets.overlays import locomo_audit_overlay, read_overlay
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item
from tiap.targets import build_groups


def test_overlay_file_errors_are_located(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    p.write_text('{"query_id": "q1", "evidence": ["u1"]}\n'
                 "not json\n"
                 '{"query_id": "q1", "evidence": ["u2"]}\n'
                 '{"query_id": "q3", "evidence": "u3"}\n'
                 '{"evidence": []}\n')
    with pytest.raises(TiapError) as err:
        read_overlay(p)
    got = [(pr.line, pr.message.split(":")[0]) for pr in err.value.problems]
    assert got == [(2, "invalid JSON (Expecting value at column 1)"), (3, "query id given twice"),
                   (4, "field 'evidence' must be a list of unit ids (strings)"),
                   (5, "field 'query_id' must be a non-empty string")]


def test_locomo_audit_maps_every_item(data_dir: Path) -> None:
    """All 156 audited items map (by conversation and question index, the question text
    checked); 94 change TIAP's evidence. Of the 96 whose corrected evidence differs from the
    cited, two are already repaired by TIAP's loader: locomo_0_qa37 cites the joined string
    'D8:6; D9:17' (TIAP splits it) and locomo_6_qa38 cites D4:36 (TIAP drops it: the audit's
    correction drops it too)."""
    errors = json.loads((data_dir / "locomo-audit" / "errors.json").read_text())
    ds = load("locomo", data_dir)
    ov = locomo_audit_overlay(data_dir / "locomo-audit" / "errors.json", ds.bundles())
    assert len(errors) == 156 and len(ov.evidence) == 156 and ov.problems == ()
    own = {q.query_id: q for q in ds.queries_iter()}
    changed = {q for q, ev in ov.evidence.items() if set(ev) != set(own[q].evidence)}
    cited_differs = {e["question_id"] for e in errors
                     if sorted(e["cited_evidence"]) != sorted(e["correct_evidence"])}
    assert len(changed) == 94 and len(cited_differs) == 96
    assert ov.evidence["conv-26:q1"] == ("conv-26:D1:14",)  # the file's first erratum
    assert own["conv-26:q1"].question == errors[0]["question"]
    assert ov.notes["conv-26:q1"] == "WRONG_CITATION"
    assert ov.evidence["conv-47:q11"] == ()  # locomo_6_qa11: no correct evidence at all


def test_locomo_audit_reports_what_it_cannot_map(data_dir: Path, tmp_path: Path) -> None:
    errors = json.loads((data_dir / "locomo-audit" / "errors.json").read_text())
    bad = [dict(errors[0], question_id="locomo_0_qa9999"),
           dict(errors[1], question="Something else?"),
           dict(errors[2], question_id="conv-26:q4"),
           dict(errors[3], correct_evidence=["D1:999", "D"]),
           errors[4]]
    p = tmp_path / "errors.json"
    p.write_text(json.dumps(bad))
    ov = locomo_audit_overlay(p, load("locomo", data_dir).bundles())
    kinds = [(pr.record, pr.kind) for pr in ov.problems]
    assert kinds == [("locomo_0_qa9999", "unmapped_id"), ("locomo_0_qa2", "question_mismatch"),
                     ("conv-26:q4", "unmapped_id"), ("locomo_0_qa5", "unresolvable_evidence"),
                     ("locomo_0_qa5", "malformed_evidence")]
    assert set(ov.evidence) == {"conv-26:q5", "conv-26:q23"}
    assert ov.evidence["conv-26:q5"] == ()  # both of its ids unusable: said, not guessed


STORE = [Item("t1", "raw", ("u1",)), Item("t2", "raw", ("u2",)), Item("f", "fact", ("u2",))]


def test_targets_read_the_overlay_where_it_has_the_query() -> None:
    qs = [Query("q1", "c", "?", "a", "x", ("u1",)), Query("q2", "c", "?", "a", "x", ("u1",))]
    ts = build_groups(STORE, qs, ["raw", "source~fix"], overlays={"fix": {"q1": ("u2",)}})
    assert ts["raw"].queries["q1"].groups == (("t1",),)
    assert ts["source~fix"].queries["q1"].groups == (("f", "t2"),)  # u2's family
    assert ts["source~fix"].queries["q2"].groups == (("t1",),)  # not in the overlay: its own
    with pytest.raises(TiapError, match="overlay 'other', which is not given"):
        build_groups(STORE, qs, ["raw~other"], overlays={"fix": {}})


def test_rescore_and_sensitivity_under_the_audit(tmp_path: Path, capsys) -> None:
    """A store of conv-26 turns and a run ranking u1's turn first: under the overlay, q1's
    evidence moves from D1:12 to D1:14. Every target is also scored under it; Stage III
    compares each target with its corrected self only (--pairs ~corrected)."""
    pytest.importorskip("matplotlib")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"t{i}", "kind": "raw",
                                         "sources": [f"conv-26:D1:{i}"]}) + "\n"
                             for i in range(10, 16)))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": f"conv-26:q{n}", "evidence": [ev],
                                           "question": "?", "category": "x"}) + "\n"
                               for n, ev in ((1, "conv-26:D1:12"), (2, "conv-26:D1:11"))))
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps({"query_id": f"conv-26:q{n}", "system": s,
                                       "ranking": r}) + "\n"
                           for s, rs in (("a", (["t14", "t12"], ["t11"])),
                                         ("b", (["t12", "t14"], ["t10", "t11"])))
                           for n, r in zip((1, 2), rs, strict=True)))
    overlay = tmp_path / "overlay.jsonl"
    overlay.write_text('{"query_id": "conv-26:q1", "evidence": ["conv-26:D1:14"]}\n'
                       '{"query_id": "conv-26:q99", "evidence": ["conv-26:D1:1"]}\n')
    runs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for r, s in zip(runs, "ab", strict=True):
        r.write_text("".join(ln + "\n" for ln in run.read_text().splitlines()
                             if json.loads(ln)["system"] == s))
    assert main(["rescore", "--items", str(items), "--queries", str(queries),
                 *[x for r in runs for x in ("--run", str(r))], "--measures", "RR@2",
                 "--overlay", f"corrected={overlay}", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "warning[overlay_unknown_query]: overlay corrected: 1 of its 2 queries" in err
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert man["options"]["overlays"]["corrected"] == {
        "rows": 2, "changed_queries": 1, "not_in_queries_file": 1, "examples": ["conv-26:q99"]}
    summary = (tmp_path / "r" / "summary.csv").read_text()
    assert "raw~corrected" in summary and "canonical~corrected" in summary
    # RR@2, q1: a ranks t14 first, b second: under the overlay a wins (1 vs 0.5), before b
    assert main(["sensitivity", str(tmp_path / "r"), "--out", str(tmp_path / "s"),
                 "--pairs", "~corrected", "--resamples", "100"]) == 0
    pairs = {(r.split(",")[3], r.split(",")[4])
             for r in (tmp_path / "s" / "change.csv").read_text().splitlines()[1:]}
    assert pairs == {("raw", "raw~corrected"), ("source", "source~corrected"),
                     ("canonical", "canonical~corrected")}
    assert main(["sensitivity", str(tmp_path / "r"), "--out", str(tmp_path / "s2"),
                 "--pairs", "raw:rawx"]) == 2
    assert "has no target 'rawx'" in capsys.readouterr().err
    shutil.rmtree(tmp_path / "s2", ignore_errors=True)


def test_targets_exports_qrels_under_the_overlay(tmp_path: Path) -> None:
    """q1's evidence u1 -> u2 under the overlay: its Raw qrels line names t2, not t1."""
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({**it.to_json(), "store": "s"}) + "\n" for it in STORE))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query_id": "q1", "evidence": ["u1"], "question": "?",
                                   "category": "x"}) + "\n")
    overlay = tmp_path / "o.jsonl"
    overlay.write_text('{"query_id": "q1", "evidence": ["u2"]}\n')
    assert main(["targets", "--items", str(items), "--queries", str(queries), "--targets",
                 "raw,raw~fix", "--overlay", f"fix={overlay}", "--out", str(tmp_path / "t")]) == 0
    assert (tmp_path / "t" / "qrels" / "s.raw.qrels").read_text() == "q1 0 t1 1\n"
    assert (tmp_path / "t" / "qrels" / "s.raw~fix.qrels").read_text() == "q1 0 t2 1\n"
    man = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert "overlay:fix" in man["inputs"]


def test_the_overlay_step_writes_the_overlay_its_problems_and_a_manifest(
        data_dir: Path, tmp_path: Path) -> None:
    """``tiap datasets overlay locomo-audit``: the 156 audited items, 94 of them with other
    evidence than the dataset's and no problem (counted in
    test_locomo_audit_maps_every_item); the manifest says so, in the step's key order."""
    out = tmp_path / "ov"
    assert main(["datasets", "overlay", "locomo-audit", "--out", str(out),
                 "--data", str(data_dir)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "overlay.jsonl",
                                                     "problems.jsonl"]
    assert len(read_overlay(out / "overlay.jsonl").evidence) == 156
    assert (out / "problems.jsonl").read_text() == ""
    man = json.loads((out / "manifest.json").read_text())
    assert list(man) == ["schema_version", "command", "created", "versions", "command_line",
                         "overlay", "inputs", "counts", "outputs"]
    assert (man["schema_version"], man["command"], man["overlay"]) == (
        1, "datasets-overlay", "locomo-audit")
    assert list(man["inputs"]) == ["locomo-audit/errors.json"]
    assert man["counts"] == {"rows": 156, "changed_queries": 94, "problems": 0}
    assert man["outputs"] == ["overlay.jsonl", "problems.jsonl"]


def test_the_overlay_step_is_the_api_the_cli_calls(data_dir: Path, tmp_path: Path) -> None:
    """:func:`export_overlay` writes what the command writes (the same rows and counts) and
    checks what the command checks: an unknown overlay, a folder of the user's."""
    from tiap.datasets import DataSource
    from tiap.datasets.overlays import export_overlay

    got = export_overlay("locomo-audit", tmp_path / "ov", source=DataSource(data_dir))
    assert (got.rows, got.changed, got.overlay.problems) == (156, 94, ())
    man = json.loads((tmp_path / "ov" / "manifest.json").read_text())
    assert man["counts"] == {"rows": 156, "changed_queries": 94, "problems": 0}
    with pytest.raises(TiapError) as err:
        export_overlay("nope", tmp_path / "ov2", source=DataSource(data_dir))
    assert err.value.code == "usage" and "unknown overlay 'nope'" in str(err.value)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("x")
    with pytest.raises(TiapError) as err:
        export_overlay("locomo-audit", mine, source=DataSource(data_dir))
    assert err.value.code == "stale-output" and (mine / "notes.txt").read_text() == "x"
