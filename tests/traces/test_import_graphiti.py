"""tiap import graphiti: edge- and node-level search results with lineage through episodes.

LoCoMo query conv-26:q2 has evidence D1:9 and D1:11 (G = 2, IDCG = 1 + 1/log2 3). The graph
(Graphiti's JSON field names):

    episodes  epA name conv-26:D1:9, epB name conv-26:D1:10, epC source_description
              conv-26:D1:11, epX name "note" (not a turn id: no source); epM is cited, not given
    edges     x1 N1->N2 [epA]   x2 N2->N3 [epB]   x3 N3->N4 [epC, epX]   x4 N4->N5 [epM]

so L(x1) = {D1:9}, L(x2) = {D1:10}, L(x3) = {D1:11}, L(x4) = {}; nodes take their edges':
N1 {D1:9}, N2 {D1:9, D1:10}, N3 {D1:10, D1:11}, N4 {D1:11}, N5 {}.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError
from tiap.memory.store import read_items
from tiap.scoring.rescore import rescore
from tiap.traces.importers.graphiti import read_graphiti
from tiap.traces.runs import read_run

IDCG = 1 + 1 / math.log2(3)


def _edge(uid: str, src: str, dst: str, eps: list[str], key: str = "episodes") -> dict:
    return {"uuid": uid, "group_id": "conv-26", "source_node_uuid": src, "target_node_uuid": dst,
            "name": "REL", "fact": f"fact {uid}", key: eps, "valid_at": "2023-05-08T13:56:00Z",
            "created_at": "2024-01-01T00:00:00Z", "attributes": {}}


def _write(tmp_path: Path) -> tuple[Path, Path]:
    graph = [
        {"uuid": "epA", "name": "conv-26:D1:9", "group_id": "conv-26", "source": "message",
         "source_description": "locomo turn", "content": "Caroline: ..."},
        {"uuid": "epB", "name": "conv-26:D1:10", "group_id": "conv-26", "source": "message",
         "source_description": "locomo turn", "content": "Melanie: ..."},
        {"uuid": "epC", "name": "turn", "group_id": "conv-26", "source": "message",
         "source_description": "conv-26:D1:11", "content": "Caroline: ..."},
        {"uuid": "epX", "name": "note", "group_id": "conv-26", "source": "text",
         "source_description": "a note", "content": "..."},
        {"uuid": "N1", "name": "Caroline", "group_id": "conv-26", "labels": ["Entity"],
         "summary": "a counsellor"},
    ]
    results = {
        "query_id": "conv-26:q2",
        # Zep spells the episode list episode_uuids on x3
        "edges": [_edge("x2", "N2", "N3", ["epB"]), _edge("x3", "N3", "N4", ["epC", "epX"],
                                                          key="episode_uuids"),
                  _edge("x4", "N4", "N5", ["epM"]), _edge("x1", "N1", "N2", ["epA"])],
        "edge_reranker_scores": [0.9, 0.8, 0.7, 0.6],
        "nodes": [{"uuid": "N5", "name": "N5"}, {"uuid": "N3", "name": "N3", "summary": ""}],
        "node_reranker_scores": [0.5, 0.4],
        "episodes": [], "communities": [],
    }
    gpath, rpath = tmp_path / "graph.jsonl", tmp_path / "results.jsonl"
    gpath.write_text("".join(json.dumps(r) + "\n" for r in graph))
    rpath.write_text(json.dumps(results) + "\n")
    return gpath, rpath


def test_edge_level_import_and_rescore(data_dir: Path, tmp_path: Path) -> None:
    gpath, rpath = _write(tmp_path)
    out = tmp_path / "out"
    assert main(["import", "graphiti", str(rpath), "--graph", str(gpath), "--out", str(out),
                 "--data", str(data_dir)]) == 0
    items = {i.item_id: i for i in read_items(out / "items.jsonl")}
    assert items["x3"].parents == ("epC", "epX") and items["x3"].kind == "edge"
    assert items["epA"].sources == ("conv-26:D1:9",) and items["epA"].kind == "raw"
    assert items["epC"].sources == ("conv-26:D1:11",)  # from source_description
    assert items["N3"].parents == ("x2", "x3")
    (run,) = read_run(out / "run.jsonl")
    assert run.ranking("conv-26:q2").item_ids == ("x2", "x3", "x4", "x1")
    assert run.ranking("conv-26:q2").scores == (0.9, 0.8, 0.7, 0.6)
    cov = json.loads((out / "lineage_coverage.json").read_text())
    assert sorted(cov["listed"]["items_with_no_source"]) == ["N5", "epM", "epX", "x4"]
    assert cov["importer"]["episodes_cited_not_given"] == 1
    (q,) = read_queries(out / "queries.jsonl")
    assert q.evidence == ("conv-26:D1:9", "conv-26:D1:11")
    res = rescore([run], [q], {None: list(items.values())},
                  targets=["raw", "graph-edge", "graph-node"], measures="nDCG@60")
    # graph-edge groups {x1}, {x3}: x3 at rank 2, x1 at rank 4
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / IDCG  # 0.650921...
    assert float(res.value(run.system, "graph-edge", "nDCG@60")[0]) == pytest.approx(expected)
    assert float(res.value(run.system, "raw", "nDCG@60")[0]) == 0.0  # no episode ranked


def test_node_level(data_dir: Path, tmp_path: Path) -> None:
    gpath, rpath = _write(tmp_path)
    imp = read_graphiti(rpath, graph=gpath, level="node", data_dir=data_dir)
    assert imp.run.rankings[0].item_ids == ("N5", "N3")
    res = rescore([imp.run], list(imp.queries), {None: imp.items}, targets=["graph-node"],
                  measures="nDCG@60")
    # N5 has no source (gain 0); N3 is in D1:11's group {N3, N4}: rank 2
    assert float(res.value(imp.system, "graph-node", "nDCG@60")[0]) == pytest.approx(
        (1 / math.log2(3)) / IDCG)  # 0.386853...


def test_problems_name_file_line_and_query(data_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"edges": []}),
        json.dumps({"query_id": "conv-26:q2", "edges": [{"uuid": "e", "episodes": []}]}),
        json.dumps({"query_id": "nope", "edges": []}),
    ]) + "\n")
    with pytest.raises(TiapError) as exc:
        read_graphiti(bad, data_dir=data_dir)
    lines = [str(p) for p in exc.value.problems]
    assert lines[0] == f"{bad}:1: search result has no 'query_id'"
    assert lines[1] == (f"{bad}:2, query conv-26:q2: edge e needs 'source_node_uuid' and "
                        "'target_node_uuid'")
    assert lines[2] == f"{bad}:3, query nope: query is not in dataset 'locomo'"
