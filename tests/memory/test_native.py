"""The native parser: LoCoMo's own observations and summaries, with their lineage."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from memory_fixtures import InlineDataset, read_rows

from tiap.datasets import load
from tiap.errors import TiapError
from tiap.memory import build_store, make_parser


@pytest.fixture(scope="module")
def locomo(data_dir: Path):  # type: ignore[no-untyped-def]
    return load("locomo", data_dir)


def test_conv26_lineage(locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = build_store(locomo, make_parser("native"), tmp_path / "s", collections=["conv-26"])
    rows = read_rows(tmp_path / "s" / "items.jsonl")
    kinds = Counter(r["kind"] for r in rows)
    # conv-26: 419 turns in 19 sessions; 184 observations, 19 session and 25 event summaries
    assert kinds == {"raw": 419, "observation": 184, "session_summary": 19, "event_summary": 25}
    assert res.counts["by_kind"] == {"raw": 419, "event_summary": 25, "observation": 184,
                                     "session_summary": 19}
    by_id = {r["item_id"]: r for r in rows}
    obs = by_id["conv-26:session_1:observation:1"]
    assert obs["sources"] == ["conv-26:D1:3"] and obs["speaker"] == "Caroline"
    assert obs["text"].startswith("Caroline attended an LGBTQ support group")
    # a session summary reaches every turn of its session (session 1 has 18 turns)
    summ = by_id["conv-26:session_1:session_summary"]
    assert summ["sources"] == [f"conv-26:D1:{i}" for i in range(1, 19)]
    ev = [r for r in rows if r["kind"] == "event_summary" and r["session_id"] == "session_1"]
    assert ev and all(r["sources"] == summ["sources"] for r in ev)
    # every derived item names turns of this conversation; every turn is reached
    units = {r["item_id"] for r in rows if r["kind"] == "raw"}
    assert all(set(r["sources"]) <= units and r["sources"] for r in rows)
    assert res.counts["turns_without_derived"] == 0
    assert res.manifest["parser"] == {
        "name": "native", "args": {"kinds": ["observation", "session_summary", "event_summary"]}}


def test_all_of_locomo_and_kind_selection(locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = build_store(locomo, "native", tmp_path / "all")
    assert res.counts["by_kind"] == {"raw": 5882, "event_summary": 669, "observation": 2541,
                                     "session_summary": 272}
    assert res.manifest["parser_stats"] == {"memories_shipped": 3482, "derived_without_sources": 0}
    only = build_store(locomo, "native", tmp_path / "obs", parser_args={"kinds": ["observation"]})
    assert only.counts["by_kind"] == {"raw": 5882, "observation": 2541}
    # observations reach 2,541 items' worth of turns through one or several dia ids
    man = json.loads((tmp_path / "obs" / "manifest.json").read_text())
    assert man["counts"]["turns_with_derived"] < 5882


def test_datasets_without_native_memories(inline_dataset: InlineDataset, data_dir: Path,
                                          tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="ships no derived memories"):
        build_store(inline_dataset, "native", tmp_path / "a")
    with pytest.raises(TiapError, match="ships no derived memories"):
        build_store(load("longmemeval/oracle", data_dir), "native", tmp_path / "b")
    with pytest.raises(TiapError, match="unknown native memory kind"):
        make_parser("native", kinds=["facts"])
    assert not any(tmp_path.iterdir())
