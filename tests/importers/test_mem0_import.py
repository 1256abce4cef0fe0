"""Importing saved Mem0 search results: lineage from metadata (exact ``source_ids``, partial
``source_window``), rankings in Mem0's order, rescored by hand."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError
from tiap.importers.mem0 import import_mem0_results, window_lineage
from tiap.memory.store import Store, Uncertainty, read_items
from tiap.runs import read_run
from tiap.scoring.rescore import rescore


def _mem(mid: str, text: str, sources: object = None, score: float | None = None,
         kind: str | None = None, key: str = "source_ids",
         window: object = None) -> dict[str, object]:
    meta: dict[str, object] = {}
    if sources is not None:
        meta[key] = sources
    if window is not None:
        meta["source_window"] = window
    if kind is not None:
        meta["tiap_kind"] = kind
    row: dict[str, object] = {"id": mid, "memory": text, "metadata": meta, "user_id": "c1"}
    if score is not None:
        row["score"] = score
    return row


def _write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# Two queries over collection c1. Memories:
#   m1 raw  <- c1:D1:1          m2 fact <- c1:D1:1, c1:D1:2 (one add() call of two turns)
#   m3 fact <- (no metadata: no recoverable source)   m4 raw <- c1:D1:3 (never retrieved)
RESULTS = [
    {"query_id": "q1", "collection": "c1", "question": "Where did Ann go?", "answer": "Oslo",
     "category": "1", "evidence": ["c1:D1:2"],
     "results": {"results": [_mem("m2", "Ann went to Oslo", ["c1:D1:1", "c1:D1:2"], 0.9),
                             _mem("m3", "Ann likes tea", None, 0.7),
                             _mem("m1", "Ann: hi", ["c1:D1:1"], 0.8, kind="raw")]}},
    {"query_id": "q2", "collection": "c1", "question": "What does Ann drink?",
     "evidence": ["c1:D1:3"],
     "results": [_mem("m3", "Ann likes tea", None, 0.6), _mem("m1", "Ann: hi", "c1:D1:1", 0.5,
                                                            kind="raw")]},
]


def test_lineage_rankings_and_report(tmp_path: Path) -> None:
    res = _write_jsonl(tmp_path / "results.jsonl", RESULTS)
    mems = _write_jsonl(tmp_path / "memories.jsonl", [
        _mem("m1", "Ann: hi", ["c1:D1:1"], kind="raw"),
        _mem("m4", "Bob: bye", ["c1:D1:3"], kind="raw"),
    ])
    out = tmp_path / "out"
    imp = import_mem0_results(res, out, memories=mems,
                              units=["c1:D1:1", "c1:D1:2", "c1:D1:3"])
    items = {i.item_id: i for i in read_items(out / "items.jsonl")}
    # memories file order first (m1, m4), then retrieved ones it lacks (m2, m3)
    assert [i.item_id for i in read_items(out / "items.jsonl")] == ["m1", "m4", "m2", "m3"]
    assert (items["m1"].kind, items["m1"].sources) == ("raw", ("c1:D1:1",))
    assert (items["m2"].kind, items["m2"].sources) == ("mem0_fact", ("c1:D1:1", "c1:D1:2"))
    assert (items["m3"].kind, items["m3"].sources) == ("mem0_fact", ())
    assert items["m4"].collection == "c1" and items["m2"].text == "Ann went to Oslo"
    [run] = read_run(out / "run.jsonl")
    # rank order as Mem0 gave it, although m1 (0.8) scores above m3 (0.7)
    assert run.ranking("q1").item_ids == ("m2", "m3", "m1")
    assert run.ranking("q1").scores == (0.9, 0.7, 0.8)
    assert run.ranking("q2").item_ids == ("m3", "m1")
    qs = read_queries(out / "queries.jsonl")
    assert [(q.query_id, q.evidence, q.answer) for q in qs] == [
        ("q1", ("c1:D1:2",), "Oslo"), ("q2", ("c1:D1:3",), None)]
    rep = imp.report
    assert rep.items_without_source == ("m3",)
    assert rep.retrieved_not_in_memories == ("m2", "m3")
    assert rep.kinds == {"mem0_fact": 2, "raw": 2} and rep.retrieved_items == 3
    saved = json.loads((out / "mem0_report.json").read_text())
    assert saved["counts"]["items_without_source"] == 1
    man = json.loads((out / "manifest.json").read_text())
    assert [Path(i["path"]).name for i in man["inputs"]] == ["results.jsonl", "memories.jsonl"]


def test_rescore_on_the_import(tmp_path: Path) -> None:
    """nDCG@60 by hand (group credit). q1: evidence c1:D1:2, family {m2} (m2 is its only
    member: m1's source is D1:1). Raw: no raw member -> zero-target (undefined). Source:
    group {m2}, m2 at rank 1 -> 1.0. Canonical: {m2} -> 1.0.
    q2: evidence c1:D1:3, family {m4} (raw, never retrieved). Raw: group {m4}, not ranked -> 0.
    Source: 0. Canonical: no derived member -> undefined."""
    res = _write_jsonl(tmp_path / "results.jsonl", RESULTS)
    mems = _write_jsonl(tmp_path / "memories.jsonl", [_mem("m4", "Bob: bye", ["c1:D1:3"],
                                                           kind="raw")])
    out = tmp_path / "out"
    assert main(["import", "mem0", str(res), "--memories", str(mems), "--out", str(out)]) == 0
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert cov["items_with_no_source"] == 1  # m3: no metadata
    assert main(["rescore", "--items", str(out / "items.jsonl"), "--queries",
                 str(out / "queries.jsonl"), "--run", str(out / "run.jsonl"), "--out",
                 str(tmp_path / "rs"), "--measures", "nDCG@60"]) == 0
    vals = {}
    for line in (tmp_path / "rs" / "per_query.csv").read_text().splitlines()[1:]:
        _system, target, qid, _measure, value = line.split(",")
        vals[(target, qid)] = value
    assert vals[("source", "q1")] in ("1", "1.0") and vals[("canonical", "q1")] in ("1", "1.0")
    assert vals[("raw", "q2")] in ("0", "0.0") and vals[("source", "q2")] in ("0", "0.0")
    assert vals.get(("raw", "q1"), "") == "" and vals.get(("canonical", "q2"), "") == ""


def test_queries_from_a_queries_file_and_another_sources_key(tmp_path: Path) -> None:
    rows = [{"query_id": "q9", "results": [_mem("a", "x", "u:1", 1.0, key="turns"),
                                            _mem("a", "x", "u:1", 0.5, key="turns")]}]
    res = _write_jsonl(tmp_path / "r.jsonl", rows)
    qf = _write_jsonl(tmp_path / "q.jsonl", [{"query_id": "q9", "question": "?",
                                              "evidence": ["u:1"]}])
    imp = import_mem0_results(res, None, queries=qf, sources_key="turns", system="m0")
    assert imp.items[0].sources == ("u:1",)
    assert imp.run.system == "m0" and imp.run.ranking("q9").item_ids == ("a",)
    assert imp.report.duplicates_dropped == 1
    assert imp.queries[0].evidence == ("u:1",)


@pytest.mark.parametrize(("rows", "message"), [
    ([{"query_id": "q1", "results": "nope"}], "r.jsonl:1, query q1: field 'results' must be"),
    ([{"results": []}], "r.jsonl:1: query has no 'query_id'"),
    ([{"query_id": "q1", "results": []}, {"query_id": "q1", "results": []}],
     "r.jsonl:2, query q1: duplicate query id (first on line 1)"),
    ([{"query_id": "q1", "results": [{"memory": "x"}]}], "a Mem0 memory has no 'id'"),
    ([{"query_id": "q1", "results": [_mem("m", "x", {"a": 1})]}],
     "record m, query q1: metadata 'source_ids' must be a list"),
    ([{"query_id": "q1", "results": [_mem("m", "x", window=[["u:1"]])]}],
     "r.jsonl:1, record m, query q1: metadata 'source_window' must be a list"),
    ([{"query_id": "q1", "results": [_mem("m", "x", window=["u:1", "u:2"])]},
      {"query_id": "q2", "results": [_mem("m", "x", ["u:1", "u:2"])]}],
     "memory m has other sources or kind than on"),
    ([{"query_id": "q1", "results": [_mem("m", "x", ["u:1"])]},
      {"query_id": "q2", "results": [_mem("m", "x", ["u:2"])]}],
     "memory m has other sources or kind than on"),
    # json.dumps writes NaN, which is not JSON: refused by the one JSON Lines reader
    ([{"query_id": "q1", "results": [_mem("m", "x", ["u:1"], score=float("nan"))]}],
     "r.jsonl:1, record .results[0].score: NaN is not a JSON value"),
    ([{"query_id": "q1", "results": [{**_mem("m", "x", ["u:1"]), "score": "0.5"}]}],
     "memory 'm' has score '0.5', not a finite number"),
])
def test_bad_input_names_file_line_and_query(tmp_path: Path, rows: list[dict[str, object]],
                                             message: str) -> None:
    res = _write_jsonl(tmp_path / "r.jsonl", rows)
    with pytest.raises(TiapError) as exc:
        import_mem0_results(res, tmp_path / "out")
    assert message in str(exc.value) and "r.jsonl" in str(exc.value)
    assert not (tmp_path / "out").exists()


def test_unknown_query_against_given_queries(tmp_path: Path) -> None:
    res = _write_jsonl(tmp_path / "r.jsonl", [{"query_id": "qx", "results": []}])
    with pytest.raises(TiapError, match="query qx: query id not found"):
        import_mem0_results(res, None, queries=[])


def test_json_list_document(tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    res.write_text(json.dumps(RESULTS, indent=1), encoding="utf-8")
    imp = import_mem0_results(res, None)
    assert imp.run.ranking("q1").item_ids == ("m2", "m3", "m1")
    assert "no memories file" in imp.report.notes[0]


def test_window_lineage_by_hand() -> None:
    # the memory derives from every unit of the first, from one or more of the second
    assert window_lineage((), ()) == ((), None)
    assert window_lineage((), ("a",)) == (("a",), None)  # a window of one turn: exact
    assert window_lineage((), ("a", "b")) == ((), Uncertainty(possible=("a", "b"),
                                                             requires=(("a", "b"),)))
    assert window_lineage(("a",), ("a", "b")) == (("a",), Uncertainty(possible=("b",)))
    assert window_lineage(("c",), ("a", "b")) == (("c",), Uncertainty(
        possible=("a", "b"), requires=(("a", "b"),)))
    assert window_lineage(("c",), ("a",)) == (("c", "a"), None)
    assert window_lineage(("a",), ("a",)) == (("a",), None)


# Three raw turns of c1 and one memory Mem0 derived from the add() call over D1:1 and D1:2
# (metadata source_window: it comes from one or both, Mem0 does not say which).
WINDOW_MEMORIES = [
    _mem("r1", "Ann: I flew to Oslo", ["c1:D1:1"], kind="raw"),
    _mem("r2", "Bob: how was it?", ["c1:D1:2"], kind="raw"),
    _mem("r3", "Ann: cold", ["c1:D1:3"], kind="raw"),
    _mem("m", "Ann flew to Oslo", window=["c1:D1:1", "c1:D1:2"]),
]
WINDOW_RESULTS = [
    {"query_id": "q1", "collection": "c1", "evidence": ["c1:D1:2"],
     "results": [WINDOW_MEMORIES[3], WINDOW_MEMORIES[2], WINDOW_MEMORIES[1]]},  # m, r3, r2
    {"query_id": "q2", "collection": "c1", "evidence": ["c1:D1:3"],
     "results": [WINDOW_MEMORIES[3], WINDOW_MEMORIES[2]]},  # m, r3
    {"query_id": "q3", "collection": "c1", "evidence": ["c1:D1:1", "c1:D1:2"],
     "results": [WINDOW_MEMORIES[3], WINDOW_MEMORIES[2], WINDOW_MEMORIES[0]]},  # m, r3, r1
]


def test_window_memory_is_bounded_not_credited_to_both_turns(tmp_path: Path) -> None:
    res = _write_jsonl(tmp_path / "results.jsonl", WINDOW_RESULTS)
    mems = _write_jsonl(tmp_path / "memories.jsonl", WINDOW_MEMORIES)
    out = tmp_path / "out"
    imp = import_mem0_results(res, out, memories=mems)
    items = {i.item_id: i for i in read_items(out / "items.jsonl")}
    assert items["m"].sources == ()
    assert items["m"].uncertain == Uncertainty(possible=("c1:D1:1", "c1:D1:2"),
                                               requires=(("c1:D1:1", "c1:D1:2"),))
    assert imp.report.partial_lineage_items == ("m",)
    assert imp.report.items_without_source == ()  # m is bounded, not sourceless
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert cov["importer"]["partial_lineage_items"] == 1
    if "items_with_partial_lineage" in cov:  # once lineage_coverage counts partial lineage
        assert (cov["items_with_no_source"], cov["items_with_partial_lineage"]) == (0, 1)
    saved = json.loads((out / "mem0_report.json").read_text())
    assert saved["partial_lineage_items"] == ["m"]

    run = imp.run
    rs = rescore([run], list(imp.queries), {None: Store("mem0", imp.items)},
                 targets=["raw", "source", "canonical"], measures="nDCG@60,R@60")

    def iv(target: str, measure: str = "nDCG@60") -> list[tuple[float, float]]:
        lo, hi = rs.interval(run.system, target, measure)
        return [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]

    d2, d3 = 1 / math.log2(3), 1 / math.log2(4)  # disc(rank 2), disc(rank 3)
    idcg2 = 1 + d2
    # q1, evidence D1:2, ranking m, r3, r2. Source: the group {r2} exists. Without m (or m
    # from D1:1 only) r2 at rank 3 gives 1/log2 4 = 0.5, the lower end; m from D1:2 fills
    # it at rank 1: 1.0. (Before, m was certainly credited to both turns: 1.0 exact.)
    # Raw: {r2} at rank 3, 0.5 exact. Canonical: m is the only derived memory and may not
    # reach D1:2: [0, 1.0], the group possibly empty.
    assert iv("source")[0] == pytest.approx((d3, 1.0))
    assert iv("raw")[0] == pytest.approx((d3, d3))
    assert iv("canonical")[0] == pytest.approx((0.0, 1.0))
    assert rs.possibly_empty[(run.system, "canonical")].tolist()[0] is True
    # q2, evidence D1:3, ranking m, r3: m cannot reach D1:3: Source {r3} at rank 2, exact
    assert iv("source")[1] == pytest.approx((d2, d2))
    assert rs.value(run.system, "source", "nDCG@60")[1] == pytest.approx(d2)
    # q3, evidence D1:1 and D1:2 (G = 2, IDCG = 1 + 1/log2 3), ranking m, r3, r1: m reaches
    # at least one of them, so it gains at rank 1 under every lineage. m = {D1:1} or
    # {D1:1, D1:2} (one gain fills both): r1 adds nothing -> 1 / IDCG = 0.6131; m = {D1:2}:
    # r1 fills D1:1 at rank 3 -> (1 + 0.5) / IDCG = 0.9197. R@60: 1 of 2 groups, or both.
    assert iv("source")[2] == pytest.approx((1 / idcg2, (1 + d3) / idcg2))
    assert iv("source", "R@60")[2] == pytest.approx((0.5, 1.0))
    assert set(rs.undetermined[(run.system, "source")]) == {"q1", "q3"}


def test_plain_source_ids_stay_exact(tmp_path: Path) -> None:
    """Backward compatibility: source_ids naming two turns is taken as given, both certain.
    q1 (evidence D1:2), ranking m, r3, r2: m in the group at rank 1 -> 1.0, exact."""
    old = [{**WINDOW_MEMORIES[3], "metadata": {"source_ids": ["c1:D1:1", "c1:D1:2"]}},
           WINDOW_MEMORIES[2], WINDOW_MEMORIES[1]]
    res = _write_jsonl(tmp_path / "r.jsonl", [{**WINDOW_RESULTS[0], "results": old}])
    imp = import_mem0_results(res, None)
    assert imp.report.partial_lineage_items == ()
    rs = rescore([imp.run], list(imp.queries), {None: Store("mem0", imp.items)},
                 targets=["source"], measures="nDCG@60")
    assert float(rs.value(imp.run.system, "source", "nDCG@60")[0]) == 1.0
