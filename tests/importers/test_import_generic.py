"""tiap import generic: the documented JSONL schema, its validation, and a rescore by hand,
exact and (partial lineage) bounded."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError
from tiap.importers import IMPORTERS, get_importer
from tiap.importers.generic import read_generic
from tiap.memory.store import read_store
from tiap.runs import read_run
from tiap.scoring.rescore import rescore

DOC = Path(__file__).parents[2] / "docs" / "import.md"


def _doc_block(n: int) -> str:
    """The n-th ```json block of docs/import.md (0-based), as a user would copy it."""
    return DOC.read_text(encoding="utf-8").split("```json\n")[n + 1].split("```", 1)[0]

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
    with open(rs / "summary.csv", newline="") as fh:
        means = {r["target"]: float(r["upper"]) for r in csv.DictReader(fh)}
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
        (f"{src}:7, query q1: item 't1' appears more than once in the ranking (ranks 1 "
         "and 2) (system 'bad'); remove the repeat: the rank order is the data"),
        f"{src}:8, query q1: query ranked twice (first on line 7)",
        f"{src}:10, query q3: some ranked entries have a score and others do not",
        f"{src}:3, record f1: parent 'zz' is not an item",
        (f"{src}:9, query q2: rank 1: 'ghost' has no item record (give it one; if its lineage "
         "is unknown, \"sources\": [] with \"uncertain\": {\"possible_sources\": \"any\"})"),
        f"{src}:9, query q2: ranking for a query with no query record",  # same run: all at once
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
    src = tmp_path / "export.jsonl"
    src.write_text(_doc_block(0), encoding="utf-8")
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


def test_the_documented_partial_lineage_example(tmp_path: Path) -> None:
    """The partial-lineage example of docs/import.md. By hand (group credit, nDCG@60 and
    RR@60; disc(r) = 1/log2(r + 1)):

    q1, evidence D1:3, ranking m1, t5, t3. Source: the group {t3} certainly exists (G = 1,
    IDCG = 1); m1 (rank 1) may derive from D1:3 (possible D1:3, D1:4; requires one of them,
    which is no proof of D1:3) and k1 ("any" but D1:5) may too, unranked. m1 outside:
    t3 at rank 3 -> nDCG 1/log2 4 = 0.5, RR 1/3; m1 inside: rank 1 -> 1.0, RR 1.
    So Source nDCG [0.5, 1.0], RR [1/3, 1]. Raw: {t3} only (m1 is a fact) -> 0.5, exact.
    Canonical: no derived item certainly reaches D1:3, m1 and k1 may: the group may not exist;
    m1 at rank 1 -> [0, 1.0], possibly empty.

    q2, evidence D1:5, ranking k1, m1, t5. k1 excludes D1:5, m1 cannot reach it: Source
    {t5, f5 (placeholder, certain)} with t5 at rank 3 -> 0.5 exact; Raw {t5} -> 0.5 exact;
    Canonical {f5}: certain to exist, nothing of it ranked -> 0.0 exact."""
    src = tmp_path / "export.jsonl"
    src.write_text(_doc_block(1), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["import", "generic", str(src), "--out", str(out)]) == 0
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert cov["importer"]["partial_lineage_items"] == 2  # m1, k1
    assert cov["importer"]["partial_lineage_items_by_kind"] == {"fact": 1, "knowledge": 1}
    assert cov["importer"]["placeholder_items"] == 1
    assert cov["importer"]["listed_partial_lineage_items"] == ["m1", "k1"]
    assert cov["importer"]["queries_without_collection"] == 0
    if "items_with_partial_lineage" in cov:  # once lineage_coverage counts partial lineage
        assert (cov["items_with_no_source"], cov["items_with_partial_lineage"],
                cov["placeholder_items"]) == (0, 2, 1)

    store = read_store(out / "items.jsonl")
    assert store.name == "export"
    m1 = next(i for i in store if i.item_id == "m1")
    assert m1.uncertain is not None and m1.uncertain.requires == (("conv-26:D1:3",
                                                                   "conv-26:D1:4"),)
    (run,) = read_run(out / "run.jsonl")
    res = rescore([run], read_queries(out / "queries.jsonl"), {None: store},
                  targets=["raw", "source", "canonical"], measures="nDCG@60,RR@60")
    assert res.query_ids[run.system] == ("q1", "q2")

    def iv(target: str, measure: str) -> list[tuple[float, float]]:
        lo, hi = res.interval(run.system, target, measure)
        return [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]

    assert iv("source", "nDCG@60") == [pytest.approx((0.5, 1.0)), pytest.approx((0.5, 0.5))]
    assert iv("source", "RR@60") == [pytest.approx((1 / 3, 1.0)), pytest.approx((1 / 3, 1 / 3))]
    assert iv("raw", "nDCG@60") == [pytest.approx((0.5, 0.5))] * 2
    assert iv("canonical", "nDCG@60") == [pytest.approx((0.0, 1.0)), pytest.approx((0.0, 0.0))]
    # the values: NaN where only bounded, the number where determined
    source = res.value(run.system, "source", "nDCG@60")
    assert math.isnan(source[0]) and source[1] == pytest.approx(0.5)
    assert res.value(run.system, "raw", "nDCG@60").tolist() == pytest.approx([0.5, 0.5])
    assert res.value(run.system, "canonical", "nDCG@60")[1] == 0.0
    assert res.possibly_empty[(run.system, "canonical")].tolist() == [True, False]
    assert set(res.undetermined[(run.system, "source")]) == {"q1"}


def test_queries_without_collection_are_counted(tmp_path: Path) -> None:
    rows = [{"type": "item", "item_id": "k", "kind": "fact", "collection": "c",
             "uncertain": {"possible_sources": "any"}},
            {"type": "query", "query_id": "q1", "evidence": ["u1"]},
            {"type": "query", "query_id": "q2", "collection": "c", "evidence": ["u1"]},
            {"type": "ranking", "query_id": "q1", "ranked": ["k"]}]
    res = read_generic(_write(tmp_path / "x.jsonl", rows))
    assert res.findings["queries_without_collection"] == 1
    assert res.findings["partial_lineage_items"] == 1
    assert "queries_without_collection" not in read_generic(
        _write(tmp_path / "y.jsonl", GOOD)).findings  # no partial lineage, nothing to say


def test_partial_lineage_records_are_checked_with_their_lines(tmp_path: Path) -> None:
    rows = [
        {"type": "item", "item_id": "a", "kind": "raw", "sources": ["u1"]},
        {"type": "item", "item_id": "b", "kind": "fact", "uncertain": {"maybe": ["u1"]}},
        {"type": "item", "item_id": "c", "kind": "fact", "sources": ["u1"],
         "uncertain": {"possible_sources": "any", "excluded_sources": ["u1"]}},
        {"type": "item", "item_id": "d", "kind": "fact", "placeholder": {"existence": "sure"}},
        {"type": "item", "item_id": "p", "kind": "fact", "sources": ["u1"],
         "placeholder": {"existence": "possible"}},
        {"type": "query", "query_id": "q1", "evidence": ["u1"]},
        {"type": "ranking", "query_id": "q1", "ranked": ["a", "p"]},
    ]
    src = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(TiapError) as exc:
        read_generic(src)
    assert [str(p) for p in exc.value.problems] == [
        (f"{src}:2, record b: field 'uncertain' has unknown key(s) 'maybe'; expected "
         "possible_sources, excluded_sources, requires, max_sources, exclusive"),
        f"{src}:3, record c: units both in sources and excluded_sources: u1",
        f"{src}:4, record d: placeholder existence must be 'certain' or 'possible', got 'sure'",
        (f"{src}:7, query q1: rank 2: 'p' is a placeholder (it stands for unseen items and is "
        "never ranked)"),
    ]


def test_partial_lineage_no_lineage_satisfies_is_located(tmp_path: Path) -> None:
    rows = [
        {"type": "item", "item_id": "a", "kind": "raw", "sources": ["u1"]},
        {"type": "item", "item_id": "b", "kind": "raw", "sources": ["u2"]},
        {"type": "item", "item_id": "r1", "kind": "fact",  # line 3: u2 is not possible
         "uncertain": {"possible_sources": ["u1"], "requires": [["u2"]]}},
        {"type": "item", "item_id": "r2", "kind": "fact",  # line 4: u2 is excluded
         "uncertain": {"possible_sources": "any", "excluded_sources": ["u2"],
                       "requires": [["u2"]]}},
        {"type": "item", "item_id": "s1", "kind": "fact", "parents": ["a", "b"],  # line 5
         "uncertain": {"max_sources": 1}},
        {"type": "item", "item_id": "s2", "kind": "fact",  # line 6: no one unit meets both
         "uncertain": {"possible_sources": ["u1", "u2"], "requires": [["u1"], ["u2"]],
                       "max_sources": 1}},
        {"type": "item", "item_id": "ok", "kind": "fact", "parents": ["r1"]},  # inherits r1
        {"type": "query", "query_id": "q1", "evidence": ["u1"]},
        {"type": "ranking", "query_id": "q1", "ranked": ["a"]},
    ]
    src = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(TiapError) as exc:
        read_generic(src)
    assert [str(p) for p in exc.value.problems] == [
        (f"{src}:3, record r1: 'uncertain.requires' ['u2']: the item may reach none of these "
        "units, so no lineage meets it"),
        (f"{src}:4, record r2: 'uncertain.requires' ['u2']: the item may reach none of these "
        "units, so no lineage meets it"),
        (f"{src}:5, record s1: max_sources 1, but the item certainly reaches 2 units (u1, u2) "
        "through its sources and parents"),
        (f"{src}:6, record s2: max_sources 1, but no single unit the item may reach is in every "
        "'uncertain.requires' list"),
    ]
