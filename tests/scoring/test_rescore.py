"""``tiap rescore`` end to end on a small hand-made store, with every number worked by hand."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main

# Store: two source turns u1, u2 (raw items t1, t2); fact f1 from t1 (through parents),
# fact f2 from both turns, summary s1 non-serving from u1; "x" is an item of no lineage.
ITEMS = [
    {"item_id": "t1", "kind": "raw", "sources": ["u1"]},
    {"item_id": "t2", "kind": "raw", "sources": ["u2"]},
    {"item_id": "f1", "kind": "fact", "sources": [], "parents": ["t1"]},
    {"item_id": "f2", "kind": "fact", "sources": ["u1", "u2"]},
    {"item_id": "s1", "kind": "summary", "sources": ["u1"], "serving": False},
    {"item_id": "t3", "kind": "raw", "sources": ["u3"]},
]
QUERIES = [
    {"query_id": "q1", "question": "?", "answer": "a", "category": "c", "evidence": ["u1", "u2"]},
    {"query_id": "q2", "question": "?", "answer": "a", "category": "c", "evidence": ["u3"]},
    {"query_id": "q3", "question": "?", "answer": "a", "category": "c", "evidence": []},
]
# System A ranks: q1 -> f2, t3, t1 ; q2 -> t3 ; q3 -> t1
RUN_A = [
    {"query_id": "q1", "system": "A", "ranking": ["f2", "t3", "t1"]},
    {"query_id": "q2", "system": "A", "ranking": ["t3"]},
    {"query_id": "q3", "system": "A", "ranking": ["t1"]},
]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "items": _write(tmp_path / "items.jsonl", ITEMS),
        "queries": _write(tmp_path / "queries.jsonl", QUERIES),
        "run": _write(tmp_path / "run.jsonl", RUN_A),
    }


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _values(out: Path) -> dict[tuple[str, str, str, str], str]:
    return {(r["system"], r["target"], r["query_id"], r["measure"]): r["value"]
            for r in _read(out / "per_query.csv")}


def test_group_credit_by_hand(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc = main(["rescore", "--items", str(files["items"]), "--queries", str(files["queries"]),
               "--run", str(files["run"]), "--out", str(out),
               "--measures", "nDCG@3,R@3,RR@3,Success@1"])
    assert rc == 0
    v = _values(out)
    d2, d3 = 1 / math.log2(3), 1 / math.log2(4)
    # q1 Raw: groups {t1}, {t2}; ranking f2, t3, t1 -> only t1 at rank 3 -> DCG 1/log2(4);
    # ideal = 1 + 1/log2(3) (G = 2).
    assert float(v[("A", "raw", "q1", "nDCG@3")]) == pytest.approx(d3 / (1 + d2), abs=1e-12)
    assert float(v[("A", "raw", "q1", "R@3")]) == pytest.approx(0.5)
    assert float(v[("A", "raw", "q1", "RR@3")]) == pytest.approx(1 / 3)
    assert float(v[("A", "raw", "q1", "Success@1")]) == 0.0
    # q1 Source: groups {t1,f1,f2,s1}, {t2,f2}; f2 at rank 1 belongs to both -> both matched
    # at rank 1 (gain 1); t1 at rank 3 earns nothing (its group is matched) -> DCG 1;
    # nDCG = 1 / (1 + 1/log2(3)); R = 2/2; RR = 1.
    assert float(v[("A", "source", "q1", "nDCG@3")]) == pytest.approx(1 / (1 + d2), abs=1e-12)
    assert float(v[("A", "source", "q1", "R@3")]) == 1.0
    assert float(v[("A", "source", "q1", "Success@1")]) == 1.0
    # q1 Canonical: {f1,f2} (s1 is non-serving), {f2}: same as Source here.
    assert float(v[("A", "canonical", "q1", "nDCG@3")]) == pytest.approx(1 / (1 + d2), abs=1e-12)
    # q2 Raw and Source: {t3} at rank 1 -> 1; Canonical: u3 has no derived item -> undefined.
    assert float(v[("A", "raw", "q2", "nDCG@3")]) == 1.0
    assert v[("A", "canonical", "q2", "nDCG@3")] == ""
    # q3 has no evidence: undefined under every target
    assert v[("A", "raw", "q3", "nDCG@3")] == "" and v[("A", "source", "q3", "R@3")] == ""

    summary = {(r["target"], r["measure"]): r for r in _read(out / "summary.csv")}
    raw_ndcg = summary[("raw", "nDCG@3")]
    assert raw_ndcg["n"] == "2"  # q1, q2 (q3 undefined)
    assert float(raw_ndcg["mean"]) == pytest.approx((d3 / (1 + d2) + 1) / 2)
    assert summary[("canonical", "nDCG@3")]["n"] == "1"

    pw = {(r["measure"], r["target_1"], r["target_2"]): r for r in _read(out / "pairwise.csv")}
    rs = pw[("nDCG@3", "raw", "source")]
    # shared: q1, q2; q1 changes by 1/(1+d2) - d3/(1+d2); q2 does not
    assert rs["n_shared"] == "2" and rs["changed"] == "1"
    assert float(rs["mean_delta"]) == pytest.approx((1 - d3) / (1 + d2) / 2)
    # Success@1: q1 0 -> 1 (a top-1 flip); Success@3 (hit) is 1 in both
    assert rs["top1_flips"] == "1" and rs["hit_flips"] == "0"
    zeros = _read(out / "zero_targets.csv")
    assert {"system": "A", "target": "canonical", "query_id": "q2", "reason": "no_members",
            "detail": "no members under target 'canonical' (evidence units: u3)"} in zeros
    # every reason is one of the three documented codes
    assert {r["reason"] for r in zeros} <= {"no_evidence", "unknown_evidence", "no_members"}
    man = json.loads((out / "manifest.json").read_text())
    assert man["options"]["credit"] == "group" and "sha256" in man["inputs"]["queries"]
    sizes = {(r["target"], r["query_id"]): (r["n_groups"], r["n_members"])
             for r in _read(out / "target_sizes.csv")}
    # q1: Raw {t1},{t2} -> 2 groups, 2 members; Source {t1,f1,f2,s1},{t2,f2} -> union of 5
    assert sizes[("raw", "q1")] == ("2", "2") and sizes[("source", "q1")] == ("2", "5")
    assert sizes[("canonical", "q2")] == ("0", "0")
    assert [r["query_id"] for r in _read(out / "queries.csv")] == ["q1", "q2", "q3"]


def test_shared_subset_and_set_credit(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["rescore", "--items", str(files["items"]), "--queries", str(files["queries"]),
                 "--run", str(files["run"]), "--out", str(out), "--measures", "nDCG@3,R@3",
                 "--credit", "set", "--shared"]) == 0
    v = _values(out)
    # Set credit, q1 Source: set {t1,f1,f2,s1,t2} (|R| = 5); relevant at ranks 1 (f2), 3 (t1)
    # -> DCG = 1 + 1/log2(4); IDCG@3 = 1 + 1/log2(3) + 1/log2(4); R@3 = 2/5.
    d2, d3 = 1 / math.log2(3), 1 / math.log2(4)
    assert float(v[("A", "source", "q1", "nDCG@3")]) == pytest.approx((1 + d3) / (1 + d2 + d3))
    assert float(v[("A", "source", "q1", "R@3")]) == pytest.approx(2 / 5)
    # --shared: only q1 is defined under raw, source and canonical
    summary = _read(out / "summary.csv")
    assert {r["n"] for r in summary} == {"1"}


def test_named_stores_and_runs(files: dict[str, Path], tmp_path: Path) -> None:
    # System B has its own store in which f2 is not derived from u2
    other = [dict(it) for it in ITEMS]
    other[3] = {"item_id": "f2", "kind": "fact", "sources": ["u1"]}
    b_items = _write(tmp_path / "b_items.jsonl", other)
    out = tmp_path / "out"
    assert main(["rescore", "--items", str(files["items"]), "--items", f"B={b_items}",
                 "--queries", str(files["queries"]), "--run", f"A={files['run']}",
                 "--run", f"B={files['run']}", "--out", str(out), "--measures", "R@3"]) == 0
    v = _values(out)
    # A: f2 matches both groups of q1 under Source -> R = 1; B: only u1's group -> R = 1/2
    assert float(v[("A", "source", "q1", "R@3")]) == 1.0
    # B q1 Source groups: {t1,f1,f2,s1}, {t2}: f2 rank 1 (u1), t3 no, t1 (u1 matched) -> 1/2
    assert float(v[("B", "source", "q1", "R@3")]) == 0.5


def test_bad_input_reported(files: dict[str, Path], tmp_path: Path, capsys) -> None:
    rows = RUN_A + [{"query_id": "q9", "system": "A", "ranking": ["t1"]}]
    rows[1] = {"query_id": "q2", "system": "A", "ranking": ["nope", "t3"]}
    run = _write(tmp_path / "bad.jsonl", [r for r in rows if r["query_id"] != "q3"])
    out = tmp_path / "out"
    assert main(["rescore", "--items", str(files["items"]), "--queries", str(files["queries"]),
                 "--run", str(run), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 ranked queries are not in the queries file" in err and "q9" in err
    assert "1 queries of the queries file have no ranking" in err and "q3" in err
    assert "1 ranked ids in 1 queries are not in the store" in err and "q2: nope" in err
    v = _values(out)
    assert float(v[("A", "raw", "q2", "RR@60")]) == 0.5  # the unknown id occupies rank 1
    assert not any(q == "q9" or q == "q3" for (_, _, q, _) in v)
    man = json.loads((out / "manifest.json").read_text())
    assert man["systems"]["A"]["queries_not_in_run"]["count"] == 1


def test_duplicate_in_ranking_is_an_error_and_nothing_is_written(
        files: dict[str, Path], tmp_path: Path, capsys) -> None:
    run = _write(tmp_path / "dup.jsonl", [{"query_id": "q1", "system": "A",
                                          "ranking": ["t1", "f2", "t1"]}])
    out = tmp_path / "out"
    rc = main(["rescore", "--items", str(files["items"]), "--queries", str(files["queries"]),
               "--run", str(run), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "q1" in err and "t1" in err and "dup.jsonl" in err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    # with --dedup first: a counted warning, and the first occurrence is kept
    assert main(["rescore", "--items", str(files["items"]), "--queries", str(files["queries"]),
                 "--run", str(run), "--out", str(out), "--dedup", "first"]) == 0
    assert "1 in 1 queries" in capsys.readouterr().err


def test_unknown_measure_and_missing_store(files: dict[str, Path], tmp_path: Path, capsys) -> None:
    rc = main(["rescore", "--items", str(files["items"]), "--queries", str(files["queries"]),
               "--run", str(files["run"]), "--out", str(tmp_path / "o"), "--measures", "MAP@5"])
    assert rc == 2 and "nDCG" in capsys.readouterr().err
    rc = main(["rescore", "--items", f"B={files['items']}", "--queries", str(files["queries"]),
               "--run", str(files["run"]), "--out", str(tmp_path / "o")])
    assert rc == 2 and "no store for run 'A'" in capsys.readouterr().err


def test_targets_command(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "t"
    assert main(["targets", "--items", str(files["items"]), "--queries", str(files["queries"]),
                 "--out", str(out), "--targets", "raw;source;canonical;facts=kind in {fact}"]) == 0
    store = tmp_path.name  # items.jsonl names no store: its folder does
    qrels = (out / "qrels" / f"{store}.canonical.qrels").read_text().split("\n")
    assert "q1 0 f1 1" in qrels and not any(line.startswith("q2 ") for line in qrels)
    mapping = [json.loads(x) for x in (out / "target_mapping.jsonl").read_text().splitlines()]
    assert mapping[0] == {"store": store, "query_id": "q1", "raw_ids": ["t1", "t2"],
                          "source_ids": ["f1", "f2", "s1", "t1", "t2"],
                          "canonical_ids": ["f1", "f2"]}
    assert (out / "qrels" / f"{store}.facts.qrels").exists()
