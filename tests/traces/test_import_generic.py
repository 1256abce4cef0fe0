"""tiap import generic: the documented JSONL schema, its validation, and a rescore by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.traces.importers import IMPORTERS, get_importer
from tiap.traces.importers.generic import read_generic

GOOD = [
    {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u1"], "text": "turn one"},
    {"type": "item", "item_id": "t2", "kind": "raw", "sources": ["u2"]},
    {"type": "item", "item_id": "f1", "kind": "fact", "parents": ["t1"]},
    {"type": "item", "item_id": "f2", "kind": "fact", "parents": ["f1"], "serving": False},
    {"type": "item", "item_id": "k1", "kind": "knowledge", "sources": []},
    {"type": "query", "query_id": "q1", "question": "?", "evidence": ["u1", "u2"]},
    {"type": "ranking", "query_id": "q1",
     "ranked": [{"item_id": "k1", "score": 3}, {"item_id": "f2", "score": 2},
                {"item_id": "t2", "score": 1}]},
]


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_import_and_rescore_by_hand(tmp_path: Path) -> None:
    src = _write(tmp_path / "mysys.jsonl", GOOD)
    out = tmp_path / "imp"
    assert main(["import", "generic", str(src), "--out", str(out)]) == 0
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert cov["listed"]["items_with_no_source"] == ["k1"]
    assert cov["ranked_positions_with_no_source"] == 1
    rs = tmp_path / "rs"
    assert main(["rescore", "--items", str(out / "items.jsonl"), "--queries",
                 str(out / "queries.jsonl"), "--run", str(out / "run.jsonl"), "--out", str(rs),
                 "--targets", "raw,source,canonical", "--measures", "nDCG@60"]) == 0
    means = {r.split(",")[1]: float(r.split(",")[-1])
             for r in (rs / "summary.csv").read_text().splitlines()[1:]}
    # groups: raw {t1}, {t2}; source {f1, f2, t1}, {t2}; canonical {f1} (f2 does not serve)
    # ranking k1 (no source), f2, t2; IDCG(G=2) = 1 + 1/log2 3, IDCG(G=1) = 1
    assert means["raw"] == pytest.approx((1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert means["source"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4))
                                            / (1 + 1 / math.log2(3)))
    assert means["canonical"] == 0.0


def test_every_problem_is_located(tmp_path: Path) -> None:
    rows = [
        GOOD[0],
        {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["u9"]},   # 2 duplicate
        {"type": "item", "item_id": "f1", "kind": "fact", "parents": ["zz"]},  # 3 dangling
        {"type": "memory", "id": 1},                                           # 4 unknown type
        "[1, 2]",                                                              # 5 not an object
        {"type": "query", "query_id": "q1", "evidence": ["u1"]},
        {"type": "ranking", "query_id": "q1", "ranked": ["t1", "t1"]},         # 7 twice
        {"type": "ranking", "query_id": "q1", "ranked": ["t1"]},               # 8 ranked twice
        {"type": "ranking", "query_id": "q2", "ranked": ["ghost"]},            # 9 no item
        {"type": "ranking", "query_id": "q3",
         "ranked": [{"item_id": "t1", "score": 1}, "f1"]},                     # 10 mixed scores
    ]
    src = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(TiapError) as exc:
        read_generic(src)
    got = [str(p) for p in exc.value.problems]
    assert got == [
        f"{src}:2, record t1: duplicate item id (first on line 1)",
        (f"{src}:4: unknown record type 'memory'; expected one of item, query, ranking in the "
        "field 'type'"),
        f"{src}:5: a record must be a JSON object",
        f"{src}:7, query q1: item 't1' is ranked twice (ranks 1 and 2)",
        f"{src}:8, query q1: query ranked twice (first on line 7)",
        f"{src}:10, query q3: some ranked entries have a score and others do not",
        f"{src}:3, record f1: parent 'zz' is not an item",
        (f"{src}:9, query q2: rank 1: 'ghost' has no item record (give it one, with "
        "\"sources\": [] if its lineage is unknown)"),
    ]


def test_cycle_is_located(tmp_path: Path) -> None:
    rows = [{"type": "item", "item_id": "a", "kind": "fact", "parents": ["b"]},
            {"type": "item", "item_id": "b", "kind": "fact", "parents": ["a"]},
            {"type": "query", "query_id": "q", "evidence": []},
            {"type": "ranking", "query_id": "q", "ranked": ["a"]}]
    with pytest.raises(TiapError) as exc:
        read_generic(_write(tmp_path / "c.jsonl", rows))
    assert str(exc.value.problems[0]).startswith(f"{tmp_path / 'c.jsonl'}:1, record a: cycle")


def test_queries_from_a_dataset(data_dir: Path, tmp_path: Path) -> None:
    rows = [{"type": "item", "item_id": "t", "kind": "raw", "sources": ["conv-26:D1:3"]},
            {"type": "ranking", "query_id": "conv-26:q0", "ranked": ["t"]},
            {"type": "ranking", "query_id": "conv-26:q999", "ranked": ["t"]}]
    src = _write(tmp_path / "d.jsonl", rows)
    with pytest.raises(TiapError) as exc:
        read_generic(src, dataset="locomo", data_dir=data_dir)
    assert [str(p) for p in exc.value.problems] == [
        f"{src}:3, query conv-26:q999: ranking for a query that is not in dataset 'locomo'"]
    res = read_generic(_write(src, rows[:2]), dataset="locomo", data_dir=data_dir)
    assert [q.evidence for q in res.queries] == [("conv-26:D1:3",)]
    assert res.findings["queries_not_ranked"] == 1985


def test_registry_names_and_mem0_slot() -> None:
    assert {"generic", "memoryos", "graphiti", "mtel-trace", "mem0"} <= set(IMPORTERS)
    with pytest.raises(TiapError, match="unknown system 'zep-cloud'"):
        get_importer("zep-cloud")


def test_the_documented_example_imports(tmp_path: Path) -> None:
    """The example in docs/import.md, as a user would copy it. q1's evidence is D1:3, whose
    family is t1 (raw), f1 (fact from t1) and s1 (summary of t1 and t2, not serving); the
    ranking is f1, k1, t1. By hand: Raw {t1} at rank 3: nDCG@60 = 1/log2(4) = 0.5, RR 1/3;
    Source {t1, f1, s1}: f1 at rank 1 -> 1.0; Canonical (serving derived) {f1} -> 1.0."""
    doc = (Path(__file__).parents[2] / "docs" / "import.md").read_text(encoding="utf-8")
    block = doc.split("```json\n", 1)[1].split("```", 1)[0]
    src = tmp_path / "export.jsonl"
    src.write_text(block, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["import", "generic", str(src), "--out", str(out)]) == 0
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert cov["items_with_no_source"] == 1  # k1
    assert main(["rescore", "--items", str(out / "items.jsonl"), "--queries",
                 str(out / "queries.jsonl"), "--run", str(out / "run.jsonl"),
                 "--measures", "nDCG@60,RR@60", "--out", str(tmp_path / "rs")]) == 0
    got = {}
    for line in (tmp_path / "rs" / "per_query.csv").read_text().splitlines()[1:]:
        _system, target, _qid, measure, value = line.split(",")
        got[(target, measure)] = float(value)
    assert got[("raw", "nDCG@60")] == pytest.approx(0.5)
    assert got[("raw", "RR@60")] == pytest.approx(1 / 3)
    assert got[("source", "nDCG@60")] == pytest.approx(1.0)
    assert got[("canonical", "nDCG@60")] == pytest.approx(1.0)
