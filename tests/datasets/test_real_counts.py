"""Counts and first / tenth / last records of every real dataset (ir_datasets style).

Expected counts are those the data's own README and the issue state; the pinned records were
read off the raw files by hand (and are re-derived from the raw JSON here, independently of
the loaders, where that is cheap).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tiap.datasets import load


@pytest.fixture(scope="module")
def locomo(data_dir: Path):
    return load("locomo", data_dir)


def test_locomo_counts(locomo) -> None:
    s = locomo.stats()
    assert (s.collections, s.sessions, s.turns, s.queries) == (10, 272, 5882, 1986)
    # 446 adversarial (category 5) items are kept, with their adversarial answers
    assert s.per_category["adversarial"]["queries"] == 446
    assert s.per_category == {
        "adversarial": {"queries": 446, "with_evidence": 446, "abstention": 0},
        "multi-hop": {"queries": 282, "with_evidence": 282, "abstention": 0},
        "open-domain": {"queries": 96, "with_evidence": 92, "abstention": 0},
        "single-hop": {"queries": 841, "with_evidence": 841, "abstention": 0},
        "temporal": {"queries": 321, "with_evidence": 320, "abstention": 0},
    }


def test_locomo_records(locomo, data_dir: Path) -> None:
    raw = json.loads((data_dir / "locomo" / "locomo10.json").read_text())
    turns = list(locomo.turns_iter())
    queries = list(locomo.queries_iter())
    t0, t9, tl = turns[0], turns[9], turns[-1]
    assert (t0.unit_id, t0.session_id, t0.position, t0.speaker) == ("conv-26:D1:1", "session_1", 1, "Caroline")
    assert t0.text == "Hey Mel! Good to see you! How have you been?"
    assert (t9.unit_id, t9.speaker) == ("conv-26:D1:10", "Melanie")
    assert t9.text == raw[0]["conversation"]["session_1"][9]["text"]
    assert (tl.unit_id, tl.session_id, tl.position, tl.speaker) == ("conv-50:D30:24", "session_30", 24, "Calvin")
    assert tl.text == raw[-1]["conversation"]["session_30"][-1]["text"]

    q0, q9, ql = queries[0], queries[9], queries[-1]
    assert q0.query_id == "conv-26:q0"
    assert q0.question == "When did Caroline go to the LGBTQ support group?"
    assert (q0.answer, q0.category, q0.evidence) == ("7 May 2023", "temporal", ("conv-26:D1:3",))
    assert q9.query_id == "conv-26:q9" and q9.evidence == ("conv-26:D3:11",)
    assert q9.answer == raw[0]["qa"][9]["answer"]
    assert ql.query_id == "conv-50:q203" and ql.category == "adversarial"
    assert ql.answer is None
    assert dict(ql.extra)["adversarial_answer"] == raw[-1]["qa"][-1]["adversarial_answer"]
    assert ql.evidence == ("conv-50:D30:15",)


def test_locomo_evidence_problems(locomo) -> None:
    probs = {(p.query_id, p.evidence, p.problem) for p in locomo.problems()}
    # joined ids are split and resolved
    assert ("conv-26:q37", "D8:6; D9:17", "split") in probs
    assert ("conv-49:q31", "D9:1 D4:4 D4:6", "split") in probs
    # malformed ids
    assert ("conv-42:q88", "D", "malformed") in probs
    assert ("conv-43:q18", "D:11:26", "malformed") in probs
    assert ("conv-50:q69", "D30:05", "malformed") in probs
    # ids of turns that do not exist
    assert ("conv-42:q58", "D10:19", "unresolvable") in probs
    assert ("conv-47:q38", "D4:36", "unresolvable") in probs
    by_id = {q.query_id: q for q in locomo.queries_iter()}
    assert by_id["conv-26:q37"].evidence == ("conv-26:D8:6", "conv-26:D9:17")
    assert by_id["conv-49:q31"].evidence == ("conv-49:D9:1", "conv-49:D4:4", "conv-49:D4:6")
    assert by_id["conv-26:q37"].evidence_given == ["D8:6; D9:17"]
    assert by_id["conv-50:q69"].evidence_given == ["D30:05"]
    assert "conv-50:D30:5" not in by_id["conv-50:q69"].evidence


def test_locomo_derived_memories(locomo) -> None:
    mems = list(locomo.memories_iter())
    kinds: dict[str, int] = {}
    for m in mems:
        kinds[m.kind] = kinds.get(m.kind, 0) + 1
    assert kinds["session_summary"] == 272
    by_id = {m.item_id: m for m in mems}
    first = mems[0]
    assert first.kind == "observation" and first.sources == ("conv-26:D1:3",)
    assert first.text.startswith("Caroline attended an LGBTQ support group recently")
    # an observation given several dia ids keeps them all (conv-43 session_8 list form) ...
    multi = [m for m in mems if m.kind == "observation" and len(m.sources) > 1]
    assert any(m.sources == ("conv-43:D8:24", "conv-43:D8:26", "conv-43:D8:28") for m in multi)
    # ... and the comma-joined string form "D26:14, D26:34, D26:42" is split too
    assert any(m.sources == ("conv-44:D26:14", "conv-44:D26:34", "conv-44:D26:42") for m in multi)
    summ = by_id["conv-26:session_1:session_summary"]
    assert summ.sources[0] == "conv-26:D1:1" and len(summ.sources) == 18
    ev = [m for m in mems if m.kind == "event_summary" and m.collection_id == "conv-26"]
    assert ev[0].text == "Caroline attends an LGBTQ support group for the first time."
    assert ev[0].sources == summ.sources


def test_longmemeval_oracle(data_dir: Path) -> None:
    ds = load("longmemeval/oracle", data_dir)
    s = ds.stats()
    assert (s.collections, s.turns, s.queries) == (500, 10960, 500)
    assert (s.abstention_queries, s.queries_with_evidence) == (30, 470)
    turns = list(ds.turns_iter())
    assert turns[0].unit_id == "001be529:answer_530960c1:1" and turns[0].speaker == "user"
    assert turns[9].unit_id == "001be529:answer_530960c1:10" and turns[9].speaker == "assistant"
    assert turns[-1].unit_id == "gpt4_a1b77f9c:answer_e9ad5914_6:12"
    qs = list(ds.queries_iter())
    assert (qs[0].query_id, qs[0].answer, qs[0].category) == ("001be529", "over a year", "single-session-user")
    raw0 = json.loads((data_dir / "longmemeval/oracle/1_001be529.json").read_text())
    flagged = [
        f"001be529:answer_530960c1:{i}"
        for i, t in enumerate(raw0["haystack_sessions"][0], start=1) if t.get("has_answer")
    ]
    assert list(qs[0].evidence) == flagged == ["001be529:answer_530960c1:5"]
    assert qs[0].evidence_sessions == ("answer_530960c1",)
    assert qs[9].query_id == "0edc2aef" and qs[9].category == "single-session-preference"
    assert qs[-1].query_id == "gpt4_a1b77f9c" and len(qs[-1].evidence) == 6


def test_longmemeval_s(data_dir: Path) -> None:
    ds = load("longmemeval/s", data_dir)
    s = ds.stats()
    assert (s.collections, s.turns, s.queries) == (498, 245625, 498)
    assert (s.abstention_queries, s.queries_with_evidence) == (30, 468)
    # no non-abstention question of S needs the answer-session fallback
    assert not [p for p in s.evidence_problems if p.problem == "fallback"]
    # 13 haystacks repeat a session id: later copies get ~2
    assert len(s.notes) == 13
    qs = list(ds.queries_iter())
    assert qs[0].query_id == "28dc39ac" and qs[0].answer == "140 hours"
    assert qs[0].evidence[0] == "28dc39ac:answer_8d015d9d_3:7" and len(qs[0].evidence) == 5
    assert qs[9].query_id == "ba358f49" and qs[9].evidence == (
        "ba358f49:answer_cbd08e3c_1:1", "ba358f49:answer_cbd08e3c_2:3")
    assert qs[-1].query_id == "gpt4_e061b84g"
    assert qs[-1].evidence == ("gpt4_e061b84g:answer_8c64ce26_3:1",)
    raw = json.loads(gzip.open(data_dir / "longmemeval/s_cleaned/38_28dc39ac.json.gz").read())
    assert qs[0].evidence_sessions == tuple(raw["answer_session_ids"])
    # abstention questions: no evidence, flagged turns kept as given
    abs_q = next(q for q in qs if q.query_id == "982b5123_abs")
    assert abs_q.abstention and abs_q.evidence == ()
    assert len(abs_q.evidence_given["has_answer_turns"]) == 1


def test_longmemeval_duplicate_session_ids(data_dir: Path) -> None:
    ds = load("longmemeval/s", data_dir)
    b = next(b for b in ds.bundles() if b.collection.collection_id == "18bc8abd")
    sids = [s.session_id for s in b.sessions]
    assert "sharegpt_vyHqfrX_0" in sids and "sharegpt_vyHqfrX_0~2" in sids
    assert len({t.unit_id for t in b.turns}) == len(b.turns)


def test_beam_100k(data_dir: Path) -> None:
    ds = load("beam/100k", data_dir)
    s = ds.stats()
    assert (s.collections, s.turns, s.queries, s.queries_with_evidence) == (20, 5732, 400, 355)
    assert s.abstention_queries == 40 and s.per_category["abstention"]["with_evidence"] == 0
    turns = list(ds.turns_iter())
    assert (turns[0].unit_id, turns[0].session_id, turns[0].speaker) == ("chat-1:0", "batch-1", "user")
    assert turns[9].unit_id == "chat-1:9"
    assert turns[-1].unit_id == "chat-20:371" and turns[-1].speaker == "assistant"
    qs = list(ds.queries_iter())
    assert qs[0].query_id == "chat-1:abstention:0" and qs[0].evidence == () and qs[0].abstention
    assert qs[9].query_id == "chat-1:instruction_following:1" and qs[9].evidence == ("chat-1:110",)
    # dict form: {"first_event": [102], "second_event": [152]}
    assert qs[-1].evidence == ("chat-20:102", "chat-20:152")
    assert qs[-1].evidence_given == {"first_event": [102], "second_event": [152]}


def test_beam_1m_loads_present_chats(data_dir: Path) -> None:
    ds = load("beam/1m", data_dir)
    assert ds.available_chats() == ["3", "4", "6", "7", "8", "9", "10", "31", "32"]
    s = ds.stats()
    assert s.collections == 9 and s.queries == 180
    assert any("1-2, 5, 11-30, 33-35" in n for n in s.notes)
    qs = list(ds.queries_iter())
    # nested dict of lists: {"first_event": [646], "second_event": [646, 654, 660]}
    assert qs[-1].evidence == ("chat-32:646", "chat-32:654", "chat-32:660")
