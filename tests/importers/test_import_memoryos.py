"""tiap import memoryos: a hand-made MemoryOS store (memoryos-pypi layout) over LoCoMo conv-26,
with lineage found by text and session date, and the turn matcher on hand-made turns. What the
text does not decide (a page side matching several turns, or none; knowledge, which records no
source) is partial lineage, and rescoring bounds it: checked by hand on conv-26 and conv-48."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets import load
from tiap.datasets.queryfile import read_queries
from tiap.datasets.records import Turn
from tiap.errors import TiapError
from tiap.importers.memoryos import TurnIndex, read_memoryos
from tiap.memory.store import Store, Uncertainty, read_items, read_store
from tiap.runs import read_run
from tiap.scoring.rescore import rescore
from tiap.targets.lineage import build_lineage

DATE1 = "1:56 pm on 8 May, 2023"  # LoCoMo conv-26 session_1_date_time


def _t(data_dir: Path) -> dict[str, Turn]:
    return {t.unit_id: t for t in load("locomo", data_dir).turns_iter()
            if t.collection_id == "conv-26" and t.session_id == "session_1"}


def _page(pid: str, user: str, agent: str, ts: str = DATE1) -> dict:
    return {"page_id": pid, "user_input": user, "agent_response": agent, "timestamp": ts,
            "preloaded": False, "analyzed": False, "pre_page": None, "next_page": None,
            "meta_info": None, "page_keywords": [], "page_embedding": [0.1, 0.2]}


def _run_folder(tmp_path: Path, data_dir: Path) -> Path:
    t = _t(data_dir)
    caption = " (image description: a photo of a dog walking past a wall with a painting of a woman)"
    pa = _page("page_a", t["conv-26:D1:1"].text, t["conv-26:D1:2"].text)
    pb = _page("page_b", t["conv-26:D1:3"].text, t["conv-26:D1:4"].text)
    pc = _page("page_c", t["conv-26:D1:5"].text + caption, t["conv-26:D1:6"].text)
    pd = _page("page_d", "something nobody said", t["conv-26:D1:4"].text)
    root = tmp_path / "memoryos-run"
    user = root / "users" / "conv-26"
    user.mkdir(parents=True)
    (root / "assistants" / "a1").mkdir(parents=True)
    (user / "short_term.json").write_text(json.dumps(
        [{"user_input": t["conv-26:D1:7"].text, "agent_response": t["conv-26:D1:8"].text,
          "timestamp": DATE1}]))
    sessions = {
        "session_1a2b3c4d": {"id": "session_1a2b3c4d", "summary": "Caroline's support group",
                             "summary_keywords": ["support"], "details": [pa, pb],
                             "L_interaction": 2, "N_visit": 0, "H_segment": 2.0},
        "session_5e6f7a8b": {"id": "session_5e6f7a8b", "summary": "A painting", "details": [pb, pc],
                             "L_interaction": 2, "N_visit": 0, "H_segment": 2.0},
    }
    (user / "mid_term.json").write_text(json.dumps({"sessions": sessions,
                                                    "access_frequency": {}}))
    (user / "long_term_user.json").write_text(json.dumps(
        {"user_profiles": {}, "knowledge_base": [{"knowledge": "Caroline is transgender",
                                                  "timestamp": "2025-01-01 10:00:00"}],
         "assistant_knowledge": []}))
    (root / "assistants" / "a1" / "long_term_assistant.json").write_text(json.dumps(
        {"assistant_knowledge": [{"knowledge": "I am Melanie", "timestamp": "x"}]}))
    results = [
        {"query_id": "conv-26:q0", "retrieved_pages": [pd, pb],
         "retrieved_user_knowledge": [{"knowledge": "Caroline is transgender"}],
         "retrieved_assistant_knowledge": [], "retrieved_at": "2025-01-01 10:00:00"},
        {"query_id": "conv-26:q1", "ranking": ["session_1a2b3c4d", "page_a"]},
    ]
    (root / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    return root


def test_store_lineage_and_rescore(data_dir: Path, tmp_path: Path) -> None:
    root = _run_folder(tmp_path, data_dir)
    out = tmp_path / "out"
    assert main(["import", "memoryos", str(root), "--out", str(out), "--data", str(data_dir)]) == 0
    items = {i.item_id: i for i in read_items(out / "items.jsonl")}
    assert items["page_a"].sources == ("conv-26:D1:1", "conv-26:D1:2")
    assert items["page_a"].uncertain is None  # both sides found: exact
    assert items["page_c"].sources == ("conv-26:D1:5", "conv-26:D1:6")  # caption stripped
    # page_d: the agent side is D1:4; the user side matches no turn: it may be any turn of
    # conv-26, and the page holds one turn a side (at most 2)
    assert items["page_d"].sources == ("conv-26:D1:4",)
    assert dict(items["page_d"].meta)["memoryos_lineage"] == "partial"
    assert items["page_d"].uncertain == Uncertainty(possible=None, max_sources=2)
    assert items["short:conv-26:0"].sources == ("conv-26:D1:7", "conv-26:D1:8")
    assert items["session_5e6f7a8b"].kind == "summary"
    assert items["session_5e6f7a8b"].parents == ("page_b", "page_c")
    knowledge = sorted(i for i in items if i.startswith(("knowledge:", "assistant-knowledge:")))
    assert len(knowledge) == 2
    for k in knowledge:  # no source recorded: may derive from any turn, not "no source"
        assert items[k].sources == () and items[k].uncertain == Uncertainty()
    assert build_lineage(items.values()).orphans == ()
    cov = json.loads((out / "lineage_coverage.json").read_text())
    found = cov["importer"]
    assert found["page_lineage"] == {"matched": 4, "partial": 1}  # a, b, c, short; d
    assert found["partial_lineage_items"] == 3 and found["partial_lineage_own"] == 3
    assert sorted(found["listed_partial_lineage_items"]) == sorted(["page_d", *knowledge])
    assert found["partial_lineage_items_by_kind"] == {"knowledge": 2, "raw": 1}
    if "items_with_partial_lineage" in cov:  # once lineage_coverage counts partial lineage
        assert (cov["items_with_no_source"], cov["items_with_partial_lineage"]) == (0, 3)
    run = [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]
    user_k = next(i for i in items if i.startswith("knowledge:conv-26:"))
    assert run[0]["ranking"] == ["page_d", "page_b", user_k]
    assert run[1]["ranking"] == ["session_1a2b3c4d", "page_a"]

    (r,) = read_run(out / "run.jsonl")
    res = rescore([r], read_queries(out / "queries.jsonl"), {None: read_store(out / "items.jsonl")},
                  measures="nDCG@60")

    def iv(target: str) -> list[tuple[float, float]]:
        lo, hi = res.interval(r.system, target, "nDCG@60")
        return [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]

    # q0, evidence D1:3, ranking page_d, page_b, knowledge. Raw: the group {page_b} exists;
    # page_d (rank 1) may hold D1:3 (its unknown side): outside, page_b at rank 2 ->
    # 1/log2 3 = 0.6309 (the value before, when page_d was taken to be D1:4 only); inside ->
    # 1.0. Source: the same (the knowledge at rank 3 can only add below rank 1).
    # Canonical: the sessions certainly reach D1:3 (through page_b) but are not ranked; the
    # knowledge at rank 3 may -> [0, 1/log2 4 = 0.5].
    assert iv("raw")[0] == pytest.approx((1 / math.log2(3), 1.0))
    assert iv("source")[0] == pytest.approx((1 / math.log2(3), 1.0))
    assert iv("canonical")[0] == pytest.approx((0.0, 0.5))
    # q1, evidence D1:12, which no item certainly holds: before, a zero-target query; now
    # page_d and the knowledge may hold it, unranked (the session and page_a cannot): its
    # group may exist, and then nothing of it is ranked -> [0, 0], possibly empty
    assert iv("raw")[1] == (0.0, 0.0)
    assert res.possibly_empty[(r.system, "raw")].tolist() == [False, True]


def _conv48_folder(tmp_path: Path, data_dir: Path) -> tuple[Path, Path]:
    """conv-48, where Jolene says "See you!" in D11:13 and D13:27 and Deborah in D14:23.
    page_q: D13:26 + "See you!" dated session 13 -> matched (D13:26, D13:27); page_s: only
    "See you!", dated no session -> ambiguous: exactly one of D11:13, D13:27, D14:23."""
    bundle = next(b for b in load("locomo", data_dir).bundles()
                  if b.collection.collection_id == "conv-48")
    text = {t.unit_id: t.text for t in bundle.turns}
    date13 = next(s.date for s in bundle.sessions if s.session_id == "session_13")
    root = tmp_path / "conv48"
    user = root / "users" / "conv-48"
    user.mkdir(parents=True)
    pq = _page("page_q", text["conv-48:D13:26"], "See you!", str(date13))
    ps = _page("page_s", "See you!", "", "2025-01-01 10:00:00")
    (user / "mid_term.json").write_text(json.dumps({"sessions": {"session_x": {
        "id": "session_x", "summary": "goodbyes", "details": [pq, ps]}}}))
    queries = [{"query_id": f"x:{q}", "collection": "conv-48", "question": "?",
                "evidence": [f"conv-48:{e}" for e in ev]}
               for q, ev in (("qb", ["D13:27"]), ("qc", ["D13:26"]), ("qd", ["D13:26", "D13:27"]))]
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "results.jsonl").write_text("".join(
        json.dumps({"query_id": q["query_id"], "ranking": ["page_s", "page_q"]}) + "\n"
        for q in queries))
    return root, qfile


def test_ambiguous_page_is_bounded_by_hand(data_dir: Path, tmp_path: Path) -> None:
    root, qfile = _conv48_folder(tmp_path, data_dir)
    imp = read_memoryos(root, queries_path=qfile, data_dir=data_dir)
    items = {i.item_id: i for i in imp.items}
    assert items["page_q"].sources == ("conv-48:D13:26", "conv-48:D13:27")
    assert items["page_q"].uncertain is None
    s = items["page_s"]
    cands = ("conv-48:D11:13", "conv-48:D13:27", "conv-48:D14:23")
    assert (s.sources, dict(s.meta)["memoryos_lineage"]) == ((), "ambiguous")
    assert s.uncertain == Uncertainty(possible=cands, requires=(cands,), max_sources=1)
    assert imp.findings["page_lineage"] == {"ambiguous": 1, "matched": 1}
    # page_s, and the session summary through it
    assert imp.findings["partial_lineage_items"] == 2
    assert imp.findings["partial_lineage_own"] == 1

    res = rescore([imp.run], list(imp.queries), {None: Store(imp.system, imp.items)},
                  targets=["raw", "source"], measures="nDCG@60")
    lo, hi = res.interval(imp.system, "raw", "nDCG@60")
    d2, idcg2 = 1 / math.log2(3), 1 + 1 / math.log2(3)
    # ranking page_s (rank 1), page_q (rank 2), for every query.
    # qb, evidence D13:27: the group {page_q} exists; page_s is D13:27 or not: page_q at
    # rank 2 -> 1/log2 3 = 0.6309, or page_s at rank 1 -> 1.0
    assert (lo[0], hi[0]) == pytest.approx((d2, 1.0))
    # qc, evidence D13:26: no candidate of page_s is D13:26 -> exact 0.6309
    assert (lo[1], hi[1]) == pytest.approx((d2, d2))
    assert res.value(imp.system, "raw", "nDCG@60")[1] == pytest.approx(d2)
    # qd, evidence D13:26 and D13:27 (G = 2, IDCG = 1 + 1/log2 3): page_s not D13:27 ->
    # page_q at rank 2 fills both groups with one gain: 0.6309 / 1.6309 = 0.3869; page_s
    # = D13:27 -> 1 at rank 1, page_q fills D13:26 at rank 2: 1.6309 / 1.6309 = 1.0
    assert (lo[2], hi[2]) == pytest.approx((d2 / idcg2, 1.0))
    # Source: the session (a summary of both pages) is not ranked; qc stays exact
    lo, hi = res.interval(imp.system, "source", "nDCG@60")
    assert (lo[1], hi[1]) == pytest.approx((d2, d2))
    assert set(res.undetermined[(imp.system, "raw")]) == {"x:qb", "x:qd"}


def test_mtel_trace_is_pointed_to_mtel_import(data_dir: Path) -> None:
    trace = data_dir / "mtel-mem/runs/transfer/locomo_memoryos/trace.jsonl.gz"
    with pytest.raises(TiapError, match="import it with 'tiap import mtel-trace'"):
        read_memoryos(trace, data_dir=data_dir)


def test_result_problems_are_located(data_dir: Path, tmp_path: Path) -> None:
    root = _run_folder(tmp_path, data_dir)
    res = root / "results.jsonl"
    res.write_text(json.dumps({"retrieved_pages": []}) + "\n"
                   + json.dumps({"query_id": "conv-26:q0", "ranking": ["page_zz"]}) + "\n")
    with pytest.raises(TiapError) as exc:
        read_memoryos(root, data_dir=data_dir)
    assert [str(p) for p in exc.value.problems] == [
        f"{res}:1: result has no 'query_id'",
        f"{res}:2, query conv-26:q0: rank 1: 'page_zz' is not a page or session of the store"]


def _turn(i: int, session: str, speaker: str, text: str) -> Turn:
    return Turn(f"c:{session}:{i}", "c", session, i, speaker, text)


def test_turn_matcher_by_hand() -> None:
    turns = [_turn(1, "S1", "A", "hi"), _turn(2, "S1", "B", "ok"), _turn(3, "S1", "A", "hi"),
             _turn(4, "S1", "B", "bye"), _turn(5, "S2", "A", "hi"), _turn(6, "S2", "B", "ok")]
    idx = TurnIndex(turns, {"S1": "d1", "S2": "d2"})
    # "hi" is t1 or t3 in S1; "bye" is t4: the closest pair (t3, t4) decides
    m = idx.match("hi", "bye", "d1")
    assert (m.sources, m.uncertainty()) == (("c:S1:3", "c:S1:4"), None)
    # the session date picks S2
    m = idx.match("hi", "ok", "d2")
    assert (m.sources, m.label) == (("c:S2:5", "c:S2:6"), "matched")
    # no date: (t1, t2) and (t5, t6) are both adjacent pairs: ambiguous, one turn a side
    m = idx.match("hi", "ok", "1999-01-01 00:00:00")
    assert (m.sources, m.label) == ((), "ambiguous")
    assert set(m.candidates) == {"c:S1:1", "c:S1:3", "c:S2:5", "c:S1:2", "c:S2:6"}
    user, agent = ("c:S1:1", "c:S1:3", "c:S2:5"), ("c:S1:2", "c:S2:6")
    assert m.uncertainty() == Uncertainty(possible=(*user, *agent), requires=(user, agent),
                                          max_sources=2)
    # one side only: exactly one of its candidates
    m = idx.match("hi", "", "d1")
    assert m.label == "ambiguous"
    assert m.uncertainty() == Uncertainty(possible=("c:S1:1", "c:S1:3"),
                                          requires=(("c:S1:1", "c:S1:3"),), max_sources=1)
    # a side that matches no turn may be any turn
    m = idx.match("never said", "bye", "d1")
    assert (m.sources, m.label) == (("c:S1:4",), "partial")
    assert m.uncertainty() == Uncertainty(possible=None, max_sources=2)
    m = idx.match("never said", "", None)
    assert (m.label, m.uncertainty()) == ("unmatched", Uncertainty(max_sources=1))
    # a side with candidates and a side with none: one of the first, and any turn
    m = idx.match("hi", "never said", "d1")
    assert (m.label, m.uncertainty()) == ("ambiguous", Uncertainty(
        requires=(("c:S1:1", "c:S1:3"),), max_sources=2))
    assert idx.match("", "", None).uncertainty() == Uncertainty()  # no text: anything
