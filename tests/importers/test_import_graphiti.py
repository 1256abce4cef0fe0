"""tiap import graphiti: edge- and node-level search results with lineage through episodes.

LoCoMo query conv-26:q2 has evidence D1:9 and D1:11 (G = 2, IDCG = 1 + 1/log2 3). The graph
(Graphiti's JSON field names):

    episodes  epA name conv-26:D1:9, epB name conv-26:D1:10, epC source_description
              conv-26:D1:11, epX name "note" (not a turn id: no source); epM is cited, not given
    edges     x1 N1->N2 [epA]   x2 N2->N3 [epB]   x3 N3->N4 [epC, epX]   x4 N4->N5 [epM]

so, certainly, L(x1) = {D1:9}, L(x2) = {D1:10}, L(x3) = {D1:11}, L(x4) = {}; epX and epM
hold turns nobody knows, so x3 and x4 may also reach any turn of conv-26 (partial lineage,
never "no source"); nodes take their edges': N1 {D1:9}, N2 {D1:9, D1:10}, N3 {D1:10, D1:11}
+ any, N4 {D1:11} + any, N5 {} + any.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError
from tiap.importers.graphiti import read_graphiti
from tiap.memory.store import Store, Uncertainty, read_items
from tiap.runs import read_run
from tiap.scoring.rescore import rescore
from tiap.targets.lineage import build_lineage

IDCG = 1 + 1 / math.log2(3)
D2, D3, D4 = 1 / math.log2(3), 1 / math.log2(4), 1 / math.log2(5)  # disc(rank 2..4)


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
    # no source recoverable, or not given: open to any turn of the group, not "no source"
    assert items["epX"].uncertain == Uncertainty() and items["epX"].collection == "conv-26"
    assert items["epM"].uncertain == Uncertainty() and items["epM"].collection == "conv-26"
    assert items["x4"].uncertain is None and items["x4"].parents == ("epM",)  # inherits
    assert build_lineage(items.values()).orphans == ()
    cov = json.loads((out / "lineage_coverage.json").read_text())
    found = cov["importer"]
    assert found["episodes_cited_not_given"] == 1
    assert found["episodes_without_source"] == 2  # epX, epM
    # epX, epM themselves; x3, x4 through them; N3, N4, N5 through x3 and x4
    assert found["partial_lineage_items"] == 7 and found["partial_lineage_own"] == 2
    assert found["partial_lineage_items_by_kind"] == {"edge": 2, "node": 3, "raw": 2}
    assert found["nodes_open_without_graph"] == 0  # --graph given
    if "items_with_partial_lineage" in cov:  # once lineage_coverage counts partial lineage
        assert (cov["items_with_no_source"], cov["items_with_partial_lineage"]) == (0, 7)
    (q,) = read_queries(out / "queries.jsonl")
    assert q.evidence == ("conv-26:D1:9", "conv-26:D1:11")
    res = rescore([run], [q], {None: list(items.values())},
                  targets=["raw", "graph-edge", "graph-node"], measures="nDCG@60")
    # graph-edge: groups {x1} (D1:9) and {x3} (D1:11) certainly exist (G = 2); ranking
    # x2 (D1:10 only: exact, no gain), x3 (rank 2: D1:11, and maybe D1:9 through epX),
    # x4 (rank 3: maybe either, through epM), x1 (rank 4: D1:9).
    # Lowest: x3 reaches both, so it fills both groups with one gain at rank 2, nothing else
    # gains: 1/log2 3 / IDCG = 0.3869. Highest: x3 takes D1:11 at rank 2, x4 D1:9 at rank 3:
    # (1/log2 3 + 1/log2 4) / IDCG = 0.6934. (Before, x4 counted for nothing and x3 for
    # D1:11 only: 0.6509, one value inside this interval.)
    lo, hi = res.interval(run.system, "graph-edge", "nDCG@60")
    assert (float(lo[0]), float(hi[0])) == pytest.approx((D2 / IDCG, (D2 + D3) / IDCG))
    assert math.isnan(res.value(run.system, "graph-edge", "nDCG@60")[0])
    assert (D2 + D4) / IDCG == pytest.approx(0.650921, abs=1e-6)  # the old exact value
    # raw: epA and epC certainly exist, no episode is ranked: 0, exact
    assert float(res.value(run.system, "raw", "nDCG@60")[0]) == 0.0


def test_node_level(data_dir: Path, tmp_path: Path) -> None:
    gpath, rpath = _write(tmp_path)
    imp = read_graphiti(rpath, graph=gpath, level="node", data_dir=data_dir)
    assert imp.run.rankings[0].item_ids == ("N5", "N3")
    res = rescore([imp.run], list(imp.queries), {None: imp.items}, targets=["graph-node"],
                  measures="nDCG@60")
    # groups: D1:9 {N1, N2} and D1:11 {N3, N4}, certain (G = 2). N5 (rank 1) is an endpoint
    # of x4 only, which may reach either turn; N3 (rank 2) certainly reaches D1:11 (x3), and
    # maybe D1:9 (x3's epX). Lowest: N5 in no group, N3 fills both with one gain at rank 2:
    # 1/log2 3 / IDCG = 0.3869 (the value before, when N5 counted for nothing); highest: N5
    # fills D1:9 at rank 1, N3 D1:11 at rank 2: (1 + 1/log2 3) / IDCG = 1.0
    lo, hi = res.interval(imp.system, "graph-node", "nDCG@60")
    assert (float(lo[0]), float(hi[0])) == pytest.approx((D2 / IDCG, 1.0))


def _zep(tmp_path: Path) -> Path:
    """Zep-like results without a graph file: episodes inline, edge z1 without episodes.

    q2 (evidence D1:9, D1:11): z1 N1->N2 (no episodes given), z2 N2->N3 [epA = D1:9],
    z3 N3->N4 [epC = D1:11], unranked; q0 (evidence D1:3): z4 N4->N5 [epD = D1:3]."""
    eps = [{"uuid": "epA", "name": "conv-26:D1:9", "group_id": "conv-26", "content": "..."},
           {"uuid": "epC", "name": "conv-26:D1:11", "group_id": "conv-26", "content": "..."},
           {"uuid": "epD", "name": "conv-26:D1:3", "group_id": "conv-26", "content": "..."}]
    z1 = _edge("z1", "N1", "N2", [])
    del z1["episodes"]  # Zep's REST results often leave them out
    rows = [
        {"query_id": "conv-26:q2", "edges": [z1, _edge("z2", "N2", "N3", ["epA"])],
         "episodes": eps[:2], "nodes": [{"uuid": "N1", "name": "Caroline"}]},
        {"query_id": "conv-26:q0", "edges": [_edge("z2", "N2", "N3", ["epA"]),
                                             _edge("z4", "N4", "N5", ["epD"])],
         "episodes": eps[2:]},
        {"query_id": "conv-26:q4", "edges": [_edge("z3", "N3", "N4", ["epC"])], "episodes": []},
    ]
    path = tmp_path / "zep.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_edges_without_episodes_are_bounded(data_dir: Path, tmp_path: Path) -> None:
    imp = read_graphiti(_zep(tmp_path), data_dir=data_dir)
    items = {i.item_id: i for i in imp.items}
    assert items["z1"].parents == () and items["z1"].uncertain == Uncertainty()
    assert items["z2"].parents == ("epA",) and items["z2"].uncertain is None
    # no --graph: a node's retrieved edges may not be all its edges
    assert all(items[n].uncertain == Uncertainty() for n in ("N1", "N2", "N3", "N4", "N5"))
    assert imp.findings["edges_without_episodes"] == 1
    assert imp.findings["listed_edges_without_episodes"] == ["z1"]
    assert imp.findings["nodes_open_without_graph"] == 5
    assert imp.findings["partial_lineage_own"] == 6  # z1 and the five nodes
    q2, q0, _ = imp.queries
    res = rescore([imp.run], [q2, q0], {None: Store(imp.system, imp.items)},
                  targets=["graph-edge"], measures="nDCG@60,R@60")
    lo, hi = res.interval(imp.system, "graph-edge", "nDCG@60")
    # q2, ranking z1, z2: groups {z2} (D1:9) and {z3} (D1:11) exist (G = 2); z1 may reach
    # any turn. z1 in neither: z2 at rank 2 -> 1/log2 3 / IDCG = 0.3869; z1 in D1:9 only, or
    # in both: one gain at rank 1 -> 1 / IDCG = 0.6131; z1 in D1:11: 1 + 1/log2 3 -> 1.0
    assert (float(lo[0]), float(hi[0])) == pytest.approx((D2 / IDCG, 1.0))
    # R@60: z2 alone, or z1 in D1:9, fill 1 of 2 groups (0.5); z1 in D1:11 with z2, both (1.0)
    r_lo, r_hi = res.interval(imp.system, "graph-edge", "R@60")
    assert (float(r_lo[0]), float(r_hi[0])) == pytest.approx((0.5, 1.0))
    # q0, ranking z2, z4: the group {z4} (D1:3) exists; z2 is exactly D1:9; z1 is not
    # ranked: z4 at rank 2 -> 1/log2 3 = 0.6309, exact
    assert float(res.value(imp.system, "graph-edge", "nDCG@60")[1]) == pytest.approx(D2)
    assert (float(lo[1]), float(hi[1])) == pytest.approx((D2, D2))
    # an edge given once without episodes and once with them keeps them
    again = tmp_path / "again.jsonl"
    again.write_text(_zep(tmp_path).read_text() + json.dumps(
        {"query_id": "conv-26:q1", "edges": [_edge("z1", "N1", "N2", ["epA"])]}) + "\n")
    got = {i.item_id: i for i in read_graphiti(again, data_dir=data_dir).items}
    assert got["z1"].parents == ("epA",) and got["z1"].uncertain is None


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
