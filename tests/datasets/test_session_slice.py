"""The first N sessions of each collection (``first_sessions``, ``SessionSlice``): what is
kept, on a hand-built conversation and on real LoCoMo (turn counts read from the raw JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.datasets import (
    Bundle,
    Collection,
    DerivedMemory,
    EvidenceProblem,
    InlineDataset,
    Query,
    Session,
    SessionSlice,
    Turn,
    first_sessions,
    load,
)
from tiap.errors import TiapError


def _bundle() -> Bundle:
    # sessions listed out of order: position decides, not file order
    sessions = (Session("c", "s2", 2, None), Session("c", "s1", 1, None),
                Session("c", "s3", 3, None))
    turns = tuple(Turn(f"c:{s}:{i}", "c", s, i, "A", f"turn {s} {i}")
                  for s in ("s1", "s2", "s3") for i in (1, 2))
    q = [Query("q1", "c", "?", "a", "1", ("c:s1:1",)),             # in s1: kept
         Query("q2", "c", "?", "a", "1", ("c:s1:2", "c:s2:1")),    # s1 + s2: kept
         Query("q3", "c", "?", "a", "1", ("c:s2:2", "c:s3:1")),    # cites s3: dropped
         Query("q4", "c", "?", "a", "5", (), abstention=True)]     # no evidence: dropped
    memories = (DerivedMemory("m1", "c", "observation", "x", ("c:s1:1",), session_id="s1"),
                DerivedMemory("m2", "c", "observation", "x", ("c:s3:1",), session_id="s3"),
                DerivedMemory("m3", "c", "event_summary", "x", ("c:s1:1", "c:s2:2")),
                DerivedMemory("m4", "c", "event_summary", "x", ("c:s2:1", "c:s3:2")),
                DerivedMemory("m5", "c", "event_summary", "x", ()))
    problems = (EvidenceProblem("q2", "D1:9", "unresolvable"),
                EvidenceProblem("q3", "D3:9", "unresolvable"))
    return Bundle(Collection("c", 3, 6), sessions, turns, tuple(q), memories, problems)


def test_first_two_sessions_keep_what_lies_in_them() -> None:
    b = first_sessions(_bundle(), 2)
    assert [s.session_id for s in b.sessions] == ["s2", "s1"]  # the bundle's order kept
    assert [t.unit_id for t in b.turns] == ["c:s1:1", "c:s1:2", "c:s2:1", "c:s2:2"]
    assert [q.query_id for q in b.queries] == ["q1", "q2"]
    # a memory of a kept session, or with no session and every source kept
    assert [m.item_id for m in b.memories] == ["m1", "m3"]
    assert [p.query_id for p in b.problems] == ["q2"]
    assert (b.collection.n_sessions, b.collection.n_turns) == (2, 4)


def test_more_sessions_than_there_are_keep_everything_with_evidence() -> None:
    b = first_sessions(_bundle(), 10)
    assert len(b.turns) == 6 and [q.query_id for q in b.queries] == ["q1", "q2", "q3"]
    assert [m.item_id for m in b.memories] == ["m1", "m2", "m3", "m4"]


@pytest.mark.parametrize("n", [0, -1, True, 1.5])
def test_a_bad_count_is_an_error(n: object) -> None:
    with pytest.raises(TiapError, match="sessions must be a whole number of at least 1"):
        first_sessions(_bundle(), n)  # type: ignore[arg-type]
    with pytest.raises(TiapError, match="sessions must be"):
        SessionSlice(InlineDataset([_bundle()]), n)  # type: ignore[arg-type]


def test_session_slice_of_real_locomo(data_dir: Path) -> None:
    ds = SessionSlice(load("locomo", data_dir), 6)
    assert ds.dataset_id == "locomo" and ds.file_paths() == ["locomo10.json"]
    raw = json.loads((data_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    want = {c["sample_id"]: sum(len(c["conversation"].get(f"session_{i}", []))
                                for i in range(1, 7)) for c in raw}
    got = {b.collection.collection_id: b for b in ds.bundles()}
    assert {c: len(b.turns) for c, b in got.items()} == want
    assert want["conv-26"] + want["conv-30"] == 108 + 119  # the docs' 227 turns
    for b in got.values():
        units = {t.unit_id for t in b.turns}
        assert {t.session_id for t in b.turns} == {s.session_id for s in b.sessions}
        assert len(b.sessions) == 6
        assert all(q.evidence and set(q.evidence) <= units for q in b.queries)
    assert "first 6 sessions" in ds.description
