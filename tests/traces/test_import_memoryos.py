"""tiap import memoryos: a hand-made MemoryOS store (memoryos-pypi layout) over LoCoMo conv-26,
with lineage found by text and session date, and the turn matcher on hand-made turns."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets import load
from tiap.datasets.records import Turn
from tiap.errors import TiapError
from tiap.memory.store import read_items
from tiap.traces.importers.memoryos import TurnIndex, read_memoryos

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
    assert items["page_c"].sources == ("conv-26:D1:5", "conv-26:D1:6")  # caption stripped
    assert items["page_d"].sources == ("conv-26:D1:4",)
    assert dict(items["page_d"].meta)["memoryos_lineage"] == "partial"
    assert items["short:conv-26:0"].sources == ("conv-26:D1:7", "conv-26:D1:8")
    assert items["session_5e6f7a8b"].kind == "summary"
    assert items["session_5e6f7a8b"].parents == ("page_b", "page_c")
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert sorted(cov["listed"]["items_with_no_source"]) == sorted(
        [i for i in items if i.startswith(("knowledge:", "assistant-knowledge:"))])
    assert cov["items_with_no_source"] == 2
    assert cov["listed"]["unreached_evidence_units"] == ["conv-26:D1:12"]  # q1's evidence
    run = [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]
    knowledge = next(i for i in items if i.startswith("knowledge:conv-26:"))
    assert run[0]["ranking"] == ["page_d", "page_b", knowledge]
    assert run[1]["ranking"] == ["session_1a2b3c4d", "page_a"]

    rs = tmp_path / "rs"
    assert main(["rescore", "--items", str(out / "items.jsonl"), "--queries",
                 str(out / "queries.jsonl"), "--run", str(out / "run.jsonl"), "--out", str(rs),
                 "--measures", "nDCG@60"]) == 0
    rows = [r.split(",") for r in (rs / "per_query.csv").read_text().splitlines()[1:]]
    got = {(r[1], r[2]): r[4] for r in rows}
    # q0 evidence D1:3: family {page_b, both sessions}. Raw {page_b}: rank 2 -> 1/log2 3
    assert float(got[("raw", "conv-26:q0")]) == pytest.approx(1 / math.log2(3))
    assert float(got[("source", "conv-26:q0")]) == pytest.approx(1 / math.log2(3))
    assert float(got[("canonical", "conv-26:q0")]) == 0.0  # sessions not ranked
    assert got[("raw", "conv-26:q1")] == ""  # D1:12 is in no item: undefined, not 0


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
    assert idx.match("hi", "bye", "d1").sources == ("c:S1:3", "c:S1:4")
    # the session date picks S2
    m = idx.match("hi", "ok", "d2")
    assert (m.sources, m.label) == (("c:S2:5", "c:S2:6"), "matched")
    # no date: (t1, t2) and (t5, t6) are both adjacent pairs: ambiguous
    m = idx.match("hi", "ok", "1999-01-01 00:00:00")
    assert (m.sources, m.label) == ((), "ambiguous")
    assert set(m.candidates) == {"c:S1:1", "c:S1:3", "c:S2:5", "c:S1:2", "c:S2:6"}
    assert idx.match("hi", "", "d1").label == "ambiguous"
    m = idx.match("never said", "bye", "d1")
    assert (m.sources, m.label) == (("c:S1:4",), "partial")
    assert idx.match("never said", "", None).label == "unmatched"
