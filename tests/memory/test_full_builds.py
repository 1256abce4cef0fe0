"""Whole-dataset builds: pinned counts, caps and streaming on the real data (LoCoMo and
BEAM-100K in seconds, run every time; LongMemEval-S, 245k turns, marked slow).

The pinned fact counts change when the heuristic parser changes on purpose; update them then.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.datasets import load
from tiap.memory import build_store, make_parser


@pytest.mark.parametrize(("n", "facts", "turns_at_cap"), [(1, 3537, 3537), (5, 6477, 155),
                                                         (8, 6554, 4)])
def test_locomo_densities(n: int, facts: int, turns_at_cap: int, data_dir: Path,
                          tmp_path: Path) -> None:
    res = build_store(load("locomo", data_dir), make_parser("heuristic", max_facts=n), tmp_path)
    c = res.counts
    assert c["by_kind"] == {"raw": 5882, "fact": facts}
    assert c["turns_with_derived"] == 3537  # the same turns at every density
    # the cap binds: some turns have exactly n facts, none more (so density 8 > density 5)
    assert max(int(k) for k in c["derived_per_turn"]) == n
    assert c["derived_per_turn"][str(n)] == turns_at_cap


@pytest.mark.slow
def test_longmemeval_s_density_5(data_dir: Path, tmp_path: Path) -> None:
    res = build_store(load("longmemeval/s", data_dir), make_parser("heuristic", max_facts=5),
                      tmp_path, workers=2)
    c = res.counts
    assert (c["collections"], c["turns"], c["by_kind"]["raw"]) == (498, 245625, 245625)
    assert max(int(k) for k in c["derived_per_turn"]) == 5
    assert c["by_kind"]["fact"] > 700_000
    # spot-check the rows: every fact names one turn of its collection, anchored in time
    with open(tmp_path / "items.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            row = json.loads(line)
            if row["kind"] == "fact":
                assert row["item_id"].startswith(row["sources"][0] + "#f")
                assert row["text"].startswith("On ")
            if i > 50_000:
                break


def test_beam_100k(data_dir: Path, tmp_path: Path) -> None:
    ds = load("beam/100k", data_dir)
    if ds.missing_chats():  # type: ignore[attr-defined]
        pytest.skip("BEAM 100K chats missing here")
    res = build_store(ds, make_parser("heuristic", max_facts=5), tmp_path)
    assert res.counts["by_kind"]["raw"] == 5732
    rows = [json.loads(x) for x in (tmp_path / "items.jsonl").read_text().splitlines()]
    facts = [r for r in rows if r["kind"] == "fact"]
    assert facts and all(r["text"].startswith("On ") for r in facts)
    assert not any("->->" in r["text"] for r in facts)  # BEAM's turn markers are removed
