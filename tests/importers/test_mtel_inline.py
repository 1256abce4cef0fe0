"""The MTEL trace importer on small inline traces: layouts, lineage recovery, errors.

A two-conversation LoCoMo file is written to a temporary folder; its turns in file order are
the *global fixture rows* the traces point at:

    row 0 c-1:D1:1   row 1 c-1:D1:2   row 2 c-1:D1:3   row 3 c-1:D2:1   row 4 c-1:D2:2
    row 5 c-2:D1:1   row 6 c-2:D1:2   row 7 c-2:D1:3   row 8 c-2:D1:4
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from mtel_reference import group_credit, score_import

from tiap.errors import TiapError
from tiap.importers.mtel import (
    FORMAT_IDS_ONLY,
    FORMAT_KIND_FLAG,
    FORMAT_NATIVE,
    MtelImport,
    import_mtel_trace,
    write_mtel_import,
)
from tiap.memory.store import Placeholder, Store, Uncertainty, read_items
from tiap.runs import read_run
from tiap.scoring.rescore import rescore

D1 = "1:00 pm on 1 May, 2023"
D2 = "2:00 pm on 2 May, 2023"
TURNS = {
    "c-1": {
        1: [
            ("Ann", "I adopted a puppy named Rex."),
            ("Bob", "That is wonderful news!"),
            ("Ann", "We went hiking at the lake."),
        ],
        2: [("Bob", "I started a pottery class."), ("Ann", "Pottery sounds fun.")],
    },
    "c-2": {
        1: [
            ("Cy", "My sister moved to Lisbon."),
            ("Di", "I bought a red bicycle."),
            ("Cy", "The garden needs new tomato plants."),
            ("Di", "My violin lessons start Monday."),
        ],
    },
}
QA = {
    "c-1": [
        ("What did Ann adopt?", ["D1:1"]),
        ("What is new?", ["D1:2", "D2:1"]),
        ("Where did they hike?", ["D1:3"]),
        ("Would Ann like cats?", []),
    ],
    "c-2": [("What did Di buy?", ["D1:2"]), ("What is planned?", ["D1:3", "D1:4"])],
}


def raw_text(cid: str, session: int, pos: int) -> str:
    speaker, text = TURNS[cid][session][pos - 1]
    return f"{speaker} ({D1 if session == 1 else D2}): {text}"


@pytest.fixture
def locomo(tmp_path: Path) -> Path:
    convs = []
    for cid, sessions in TURNS.items():
        body: dict[str, Any] = {"speaker_a": "a", "speaker_b": "b"}
        for n, turns in sessions.items():
            body[f"session_{n}_date_time"] = D1 if n == 1 else D2
            body[f"session_{n}"] = [
                {"speaker": s, "dia_id": f"D{n}:{i}", "text": t}
                for i, (s, t) in enumerate(turns, 1)
            ]
        qa = [{"question": q, "answer": "x", "evidence": ev, "category": 4} for q, ev in QA[cid]]
        convs.append({"sample_id": cid, "conversation": body, "qa": qa})
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(convs), encoding="utf-8")
    return path


def write_trace(path: Path, rows: list[Any], *, gz: bool = True) -> Path:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def flag_row(
    idx: int, cid: str, q: str, gold: list[int], preview: list[tuple[str, str, bool]]
) -> dict:
    """A kind-flag (Mem0-style) row: preview entries are (id, kind, family match)."""
    ids = [p[0] for p in preview]
    return {
        "query_index": idx,
        "tenant_id": f"locomo_{cid}",
        "query": q,
        "category": 4,
        "reference_answer": "x",
        "expected_fixture_indexes": gold,
        "expected_memory_ids": [],
        "expected_group_count": len(gold),
        "expected_group_sizes": [],
        "returned_ids_full": ids,
        "returned_ids_topk": ids,
        "ranked_preview": [
            {
                "rank": i,
                "memory_id": m,
                "kind": k,
                "score": 1.0 - i / 100,
                "is_expected_family_match": f,
            }
            for i, (m, k, f) in enumerate(preview, 1)
        ],
    }


def native_row(
    idx: int,
    cid: str,
    q: str,
    gold: list[int],
    sizes: list[int],
    union: list[str],
    preview: list[tuple[str, str]],
) -> dict:
    """A native row: preview entries are (id, stored text); is_expected = id in union."""
    ids = [p[0] for p in preview]
    return {
        "query_index": idx,
        "tenant_id": f"locomo_{cid}",
        "query": q,
        "category": 4,
        "expected_fixture_indexes": gold,
        "expected_memory_ids": sorted(union),
        "expected_group_count": len(gold),
        "expected_group_sizes": sizes,
        "returned_ids_topk": ids,
        "ranked_preview": [
            {
                "rank": i,
                "memory_id": m,
                "is_expected": m in union,
                "rrf_score": 0.5 / i,
                "normalized_content": t,
            }
            for i, (m, t) in enumerate(preview, 1)
        ],
    }


def meta(imp: MtelImport) -> dict[str, dict[str, Any]]:
    return {i.item_id: dict(i.meta) for i in imp.items}


def items(imp: MtelImport) -> dict[str, Any]:
    return {i.item_id: i for i in imp.items}


def status(imp: MtelImport) -> dict[str, tuple[str, str, str]]:
    return {q.query_id: (q.raw, q.source, q.canonical) for q in imp.report.queries}


# --------------------------------------------------------------------------------------------
# kind-flag (Mem0 transfer layout)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def flag_import(tmp_path: Path, locomo: Path) -> MtelImport:
    rows = [
        # one gold turn: the flagged raw item is that turn's; the observation reaches it
        flag_row(
            1,
            "c-1",
            "What did Ann adopt?",
            [0],
            [("o1", "observation", True), ("r0", "raw_turn", True), ("r2", "raw_turn", False)],
        ),
        # two gold turns, two flagged raw items seen nowhere else: symmetric, so "assumed"
        flag_row(
            2,
            "c-1",
            "What is new?",
            [1, 3],
            [
                ("ra", "raw_turn", True),
                ("o2", "observation", True),
                ("rb", "raw_turn", True),
                ("o1", "observation", False),
            ],
        ),
        # the gold turn's raw item is never shown: a placeholder keeps its Raw group
        flag_row(
            3,
            "c-2",
            "What did Di buy?",
            [6],
            [("x", "raw_turn", False), ("o3", "observation", True)],
        ),
    ]
    return import_mtel_trace(write_trace(tmp_path / "trace.jsonl.gz", rows), locomo_path=locomo)


def test_flag_layout_items_and_lineage(flag_import: MtelImport) -> None:
    imp = flag_import
    assert imp.report.format == FORMAT_KIND_FLAG
    it, m = items(imp), meta(imp)
    assert it["r0"].kind == "raw" and it["r0"].sources == ("c-1:D1:1",)
    assert m["r0"]["mtel_lineage"] == "trace" and it["r0"].uncertain is None
    # o1 is flagged for row 0 and not for rows 1, 3: it reaches c-1:D1:1 (maybe more turns,
    # but not rows 1 and 3)
    assert it["o1"].kind == "observation" and it["o1"].sources == ("c-1:D1:1",)
    assert m["o1"]["mtel_lineage"] == "partial"
    assert it["o1"].uncertain == Uncertainty(excluded=("c-1:D1:2", "c-1:D2:1"))
    # ra / rb: one of rows 1, 3 each, which one the trace cannot tell: nothing is assumed
    for x in ("ra", "rb"):
        assert it[x].sources == () and m[x]["mtel_lineage"] == "ambiguous"
        assert it[x].uncertain == Uncertainty(
            possible=("c-1:D1:2", "c-1:D2:1"), requires=(("c-1:D1:2", "c-1:D2:1"),),
            max_sources=1, exclusive=True)
    assert imp.report.ambiguous_raw_items == ("ra", "rb")
    # o2 reaches row 1 or row 3 (or both), maybe more: at least one of them, nothing proven
    assert it["o2"].sources == ()
    assert it["o2"].uncertain == Uncertainty(requires=(("c-1:D1:2", "c-1:D2:1"),))
    # r2: a raw turn, not row 0's (unflagged there), otherwise unknown
    assert it["r2"].sources == () and m["r2"]["mtel_lineage"] == "unknown"
    assert it["r2"].uncertain == Uncertainty(excluded=("c-1:D1:1",), max_sources=1,
                                             exclusive=True)
    # every gold turn has one raw item: rows 1 and 3 may have theirs among ra / rb (count
    # unknown), row 6 shows none (one unseen); and any gold turn may have derived items the
    # trace never shows
    raw_ph = [f"mtel-unretrieved-raw:{u}" for u in ("c-1:D1:2", "c-1:D2:1", "c-2:D1:2")]
    unseen = [f"mtel-unseen-derived:{u}" for u in ("c-1:D1:1", "c-1:D1:2", "c-1:D2:1",
                                                    "c-2:D1:2")]
    assert imp.report.placeholder_items == (*raw_ph, *unseen)
    ph = it["mtel-unretrieved-raw:c-2:D1:2"]
    assert ph.kind == "raw" and ph.sources == ("c-2:D1:2",) and ph.collection == "c-2"
    assert ph.placeholder == Placeholder("certain", 1)
    assert it["mtel-unretrieved-raw:c-1:D1:2"].placeholder == Placeholder("certain", None)
    assert it[unseen[0]].placeholder == Placeholder("possible", None)
    assert it[unseen[0]].kind == "observation"
    assert it["o3"].sources == ("c-2:D1:2",)
    assert imp.report.units_without_known_derived == ("c-1:D1:2", "c-1:D2:1")


def test_flag_layout_statuses_and_values(flag_import: MtelImport) -> None:
    imp = flag_import
    assert status(imp) == {
        "c-1:q0": ("exact", "exact", "exact"),
        "c-1:q1": ("exact", "unknown", "unknown"),
        "c-2:q0": ("exact", "exact", "exact"),
    }
    res = rescore([imp.run], imp.queries, {None: Store(imp.system, imp.items)},
                  measures="nDCG@10,RR@10,R@10")
    s = imp.system

    def iv(target: str, measure: str, qid: str) -> tuple[float, float]:
        lo, hi = res.interval(s, target, measure)
        i = res.query_ids[s].index(qid)
        return float(lo[i]), float(hi[i])

    log3 = 1.584962500721156
    # c-1:q0: the raw item is at rank 2 of one group: nDCG = 1/log2(3), RR = 1/2
    assert iv("raw", "nDCG@10", "c-1:q0") == pytest.approx((1 / log3, 1 / log3))
    assert iv("raw", "RR@10", "c-1:q0") == (0.5, 0.5)
    # c-1:q1: ranks 1 and 3 fill both groups, whichever turn each raw item is (each turn has
    # one raw item): DCG 1 + 1/2, ideal 1 + 1/log2(3); exact, although nothing is assumed
    assert iv("raw", "nDCG@10", "c-1:q1") == pytest.approx((1.5 / (1 + 1 / log3),) * 2)
    assert iv("raw", "R@10", "c-1:q1") == (1.0, 1.0)
    # c-2:q0: the placeholder is never ranked: 0, not a zero-target case
    assert iv("raw", "nDCG@10", "c-2:q0") == (0.0, 0.0)
    # Source, c-1:q1: rank 1 ra (row 1 or 3), rank 2 o2 (flagged: row 1 or 3, or both),
    # rank 3 rb (the other row). Every lineage gains at rank 1. If o2 reaches the turn ra
    # does not fill, it gains at rank 2 (DCG 1 + 1/log2 3 = the ideal: nDCG 1); if o2 reaches
    # ra's turn only, rb fills the other at rank 3 (DCG 1 + 1/2): nDCG in
    # [1.5 / (1 + 1/log2 3), 1]; RR = 1 whatever the lineage (ra is credited)
    assert iv("source", "nDCG@10", "c-1:q1") == pytest.approx((1.5 / (1 + 1 / log3), 1.0))
    assert iv("source", "RR@10", "c-1:q1") == (1.0, 1.0)
    assert score_import(imp, "source")["c-1:q0"] == group_credit(
        ["o1", "r0", "r2"], [frozenset({"o1", "r0"})]
    )
    assert imp.report.counts()["query_status"]["source"] == {"exact": 2, "unknown": 1}
    assert "Raw values do not depend on which" in " ".join(imp.report.queries[1].reasons)


def test_query_ids_evidence_and_extras(flag_import: MtelImport) -> None:
    qs = {q.query_id: q for q in flag_import.queries}
    assert list(qs) == ["c-1:q0", "c-1:q1", "c-2:q0"]
    assert qs["c-1:q1"].evidence == ("c-1:D1:2", "c-1:D2:1")
    extra = dict(qs["c-1:q1"].extra)
    assert extra["mtel_query_index"] == 2 and extra["mtel_fixture_indexes"] == [1, 3]
    assert qs["c-1:q1"].category == "single-hop" and qs["c-1:q1"].collection_id == "c-1"
    rep = flag_import.report
    assert rep.locomo_queries_not_in_trace == ("c-1:q2", "c-1:q3", "c-2:q1")
    assert flag_import.run.system == flag_import.rankings[0].system
    assert flag_import.rankings[0].scores == (0.99, 0.98, 0.97)


# --------------------------------------------------------------------------------------------
# native (the paper's own store)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def native_rows() -> list[dict]:
    return [
        native_row(
            1,
            "c-1",
            "What did Ann adopt?",
            [0],
            [3],
            ["m_r0", "m_d0a", "m_d0b"],
            [
                ("m_d0a", "On 1 May 2023, Ann adopted a puppy named Rex."),
                ("m_x", raw_text("c-1", 1, 3)),
                ("m_r0", raw_text("c-1", 1, 1)),
            ],
        ),
        native_row(
            2,
            "c-1",
            "What is new?",
            [1, 3],
            [1, 2],
            ["m_r1", "m_r3", "m_d3"],
            [
                ("m_d3", "On 2 May 2023, Bob started a pottery class."),
                ("m_r1", raw_text("c-1", 1, 2)),
            ],
        ),
        native_row(
            3,
            "c-1",
            "Where did they hike?",
            [2],
            [2],
            ["m_x", "m_y"],
            [("m_z", "On 2 May 2023, Ann said pottery sounds fun.")],
        ),
        native_row(
            4,
            "c-2",
            "What did Di buy?",
            [6],
            [2],
            ["n_a", "n_b"],
            [("n_q", "On 1 May 2023, Cy said the sister moved.")],
        ),
        native_row(
            5,
            "c-2",
            "What is planned?",
            [7, 8],
            [2, 2],
            ["k1", "k2", "k3", "k4"],
            [
                ("k1", "On 1 May 2023, Di has violin lessons starting Monday."),
                ("zz", raw_text("c-2", 1, 1)),
            ],
        ),
    ]


def test_native_layout_recovers_families(tmp_path: Path, locomo: Path, native_rows) -> None:
    imp = import_mtel_trace(
        write_trace(tmp_path / "t.jsonl", native_rows, gz=False), locomo_path=locomo, system="toy"
    )
    assert imp.report.format == FORMAT_NATIVE and imp.run.system == "toy"
    it, m = items(imp), meta(imp)
    # raw items are named by their text: "Speaker (session date): text"
    assert it["m_r0"].kind == "raw" and m["m_r0"]["mtel_lineage"] == "content"
    assert it["m_x"].sources == ("c-1:D1:3",) and it["zz"].sources == ("c-2:D1:1",)
    # the family of row 0 is complete and its raw item known: the unranked member is derived
    assert it["m_d0b"].kind == "derived" and it["m_d0b"].sources == ("c-1:D1:1",)
    # row 1's family has one member (its raw item), so m_d3 and m_r3 are row 3's; the
    # complete family then has one item of unknown kind left: the raw one
    assert it["m_d3"].sources == ("c-1:D2:1",) and it["m_r3"].kind == "raw"
    # m_x is row 2's raw item (by text), so m_y is its derived member
    assert it["m_y"].kind == "derived" and it["m_y"].sources == ("c-1:D1:3",)
    # n_a / n_b: both unranked, one of them raw (which, the trace cannot tell): they change
    # no value, so they are folded into row 6's placeholders, which count the family exactly
    assert "n_a" not in it and "n_b" not in it
    assert it["mtel-unretrieved-raw:c-2:D1:2"].placeholder == Placeholder("certain", 1)
    assert it["mtel-unretrieved-derived:c-2:D1:2"].placeholder == Placeholder("certain", 1)
    # k1..k4: rows 7 and 8 always together: k1 (ranked) is one of them; k2..k4 (never
    # ranked, kinds unknown) are folded; placeholders keep all four groups, and the derived
    # ones cannot be counted (k1 may be either row's derived member)
    assert m["k1"]["mtel_lineage"] == "ambiguous" and it["k1"].sources == ()
    assert it["k1"].uncertain == Uncertainty(possible=("c-2:D1:3", "c-2:D1:4"),
                                             requires=(("c-2:D1:3", "c-2:D1:4"),),
                                             max_sources=1)
    assert set(imp.report.folded_items) == {"n_a", "n_b", "k2", "k3", "k4"}
    for unit in ("c-2:D1:3", "c-2:D1:4"):
        assert it[f"mtel-unretrieved-raw:{unit}"].placeholder == Placeholder("certain", 1)
        assert it[f"mtel-unretrieved-derived:{unit}"].placeholder == Placeholder("certain")
    assert status(imp) == {
        "c-1:q0": ("exact", "exact", "exact"),
        "c-1:q1": ("exact", "exact", "exact"),
        "c-1:q2": ("exact", "exact", "exact"),
        "c-2:q0": ("exact", "exact", "exact"),
        "c-2:q1": ("exact", "unknown", "unknown"),
    }
    # c-1:q1 under Canonical: row 1 has no derived member (size 1), so one group: {m_d3}
    can = score_import(imp, "canonical")
    assert can["c-1:q1"]["G"] == 1 and can["c-1:q1"]["ndcg"] == 1.0
    assert imp.report.inconsistencies == ()


def test_native_text_assignment(tmp_path: Path, locomo: Path, native_rows) -> None:
    imp = import_mtel_trace(
        write_trace(tmp_path / "t.jsonl.gz", native_rows), locomo_path=locomo, infer_from_text=True
    )
    it, m = items(imp), meta(imp)
    # "violin lessons starting Monday" shares most words with row 8 (c-2:D1:4)
    assert it["k1"].sources == ("c-2:D1:4",) and m["k1"]["mtel_lineage"] == "text"
    assert imp.report.text_inferred_items == ("k1",)
    assert status(imp)["c-2:q1"] == ("exact", "inferred", "inferred")


def test_native_contradiction_is_reported(tmp_path: Path, locomo: Path) -> None:
    rows = [
        native_row(
            1, "c-1", "What did Ann adopt?", [0], [1], ["m_r0"], [("m_r0", raw_text("c-1", 1, 3))]
        )
    ]  # row 2's text, listed for row 0
    rows[0]["ranked_preview"][0]["is_expected"] = True
    imp = import_mtel_trace(write_trace(tmp_path / "t.jsonl.gz", rows), locomo_path=locomo)
    assert imp.report.inconsistencies
    assert "m_r0" in " ".join(imp.report.inconsistencies)


# --------------------------------------------------------------------------------------------
# ids-only (MemoryOS transfer layout)
# --------------------------------------------------------------------------------------------


def test_ids_only_layout(tmp_path: Path, locomo: Path) -> None:
    rows = [
        {
            "query_index": 1,
            "tenant_id": "locomo_c-1",
            "query": "What did Ann adopt?",
            "expected_fixture_indexes": [0],
            "returned_ids_full": ["raw_0", "session_session_ab", "raw_4"],
            "returned_ids_topk": ["raw_0", "session_session_ab", "raw_4"],
            "top1_text": raw_text("c-1", 1, 1),
        },
        {
            "query_index": 2,
            "tenant_id": "locomo_c-1",
            "query": "What is new?",
            "expected_fixture_indexes": [1, 3],
            "returned_ids_full": ["session_session_ab", "raw_3"],
            "returned_ids_topk": ["session_session_ab", "raw_3"],
        },
    ]
    imp = import_mtel_trace(write_trace(tmp_path / "t.jsonl.gz", rows), locomo_path=locomo)
    assert imp.report.format == FORMAT_IDS_ONLY
    it = items(imp)
    assert it["raw_4"].sources == ("c-1:D2:2",) and it["raw_0"].text == raw_text("c-1", 1, 1)
    assert it["session_session_ab"].kind == "session_summary"
    # a session summary: it may derive from any turn of its conversation (the trace says
    # nothing), so it may be credited: rescoring bounds it instead of scoring it 0
    assert it["session_session_ab"].sources == ()
    assert it["session_session_ab"].uncertain == Uncertainty()
    assert imp.report.unknown_lineage_items == ("session_session_ab",)
    assert imp.report.placeholder_items == (  # raw_1: the store's own name for row 1
        "raw_1", *(f"mtel-unseen-derived:{u}" for u in ("c-1:D1:1", "c-1:D1:2", "c-1:D2:1")))
    assert imp.rankings[0].scores is None
    assert status(imp)["c-1:q1"] == ("exact", "unknown", "unknown")
    raw = score_import(imp, "raw")
    assert raw["c-1:q1"]["ndcg"] == pytest.approx(
        (1 / 1.584962500721156) / (1 + 1 / 1.584962500721156)
    )
    out = tmp_path / "out"
    assert write_mtel_import(imp, out) == {"items": 8, "queries": 2, "rankings": 2}
    assert [i.item_id for i in read_items(out / "items.jsonl")] == [i.item_id for i in imp.items]
    (run,) = read_run(out / "run.jsonl")
    assert run.query_ids == ("c-1:q0", "c-1:q1")


# --------------------------------------------------------------------------------------------
# Bad input: TiapError naming file and line
# --------------------------------------------------------------------------------------------


def _good_flag_row() -> dict:
    return flag_row(1, "c-1", "What did Ann adopt?", [0], [("r0", "raw_turn", True)])


def _error(tmp_path: Path, locomo: Path, rows: list[Any], gz: bool = True) -> str:
    path = write_trace(tmp_path / ("bad.jsonl.gz" if gz else "bad.jsonl"), rows, gz=gz)
    with pytest.raises(TiapError) as exc:
        import_mtel_trace(path, locomo_path=locomo)
    msg = str(exc.value)
    assert str(path) in msg
    return msg


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda r: r.pop("expected_fixture_indexes"), "no 'expected_fixture_indexes'"),
        (lambda r: (r.pop("returned_ids_full"), r.pop("returned_ids_topk")), "returned_ids_full"),
        (lambda r: r.update(tenant_id="longmemeval_x"), "only LoCoMo traces"),
        (lambda r: r.update(tenant_id="locomo_c-9"), "names no LoCoMo conversation"),
        (lambda r: r.update(expected_fixture_indexes=[6]), "c-2:D1:2, not a turn of c-1"),
        (lambda r: r.update(expected_fixture_indexes=[99]), "outside LoCoMo's 9 turns"),
        (lambda r: r.update(query="Who is Zed?"), "no such question in c-1"),
        (lambda r: r.update(query_index="1"), "'query_index' must be an integer"),
        (lambda r: r["ranked_preview"][0].pop("kind"), "unrecognised trace row"),
        (lambda r: r["ranked_preview"][0].update(memory_id="zz"), "does not follow the ranking"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, locomo: Path, change, expected) -> None:
    good = _good_flag_row()
    bad = _good_flag_row()
    bad["query_index"] = 2
    change(bad)
    msg = _error(tmp_path, locomo, [good, bad])
    assert ":2:" in msg and expected in msg


def test_truncated_gzip_names_file_and_line(tmp_path: Path, locomo: Path) -> None:
    rows = [_good_flag_row() for _ in range(200)]
    for i, r in enumerate(rows):
        r["query_index"] = i + 1
    path = write_trace(tmp_path / "t.jsonl.gz", rows)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TiapError) as exc:
        import_mtel_trace(path, locomo_path=locomo)
    (problem,) = exc.value.problems
    assert problem.file == str(path) and problem.line is not None and problem.line > 1
    assert "truncated" in problem.message


def test_bad_json_names_line(tmp_path: Path, locomo: Path) -> None:
    msg = _error(tmp_path, locomo, [_good_flag_row(), "{not json"], gz=False)
    assert ":2:" in msg and "invalid JSON" in msg


def test_duplicate_ranked_id_and_mixed_layouts(tmp_path: Path, locomo: Path) -> None:
    dup = flag_row(
        1, "c-1", "What did Ann adopt?", [0], [("r0", "raw_turn", True), ("r0", "raw_turn", True)]
    )
    assert "appears more than once in the ranking (ranks 1 and 2)" in _error(tmp_path, locomo,
                                                                            [dup])
    other = {
        "query_index": 2,
        "tenant_id": "locomo_c-1",
        "query": "What is new?",
        "expected_fixture_indexes": [1],
        "returned_ids_full": ["raw_1"],
    }
    msg = _error(tmp_path, locomo, [_good_flag_row(), other])
    assert "layout 'ids-only' differs" in msg and ":2:" in msg


def test_empty_trace(tmp_path: Path, locomo: Path) -> None:
    assert "no rows" in _error(tmp_path, locomo, [], gz=False)
