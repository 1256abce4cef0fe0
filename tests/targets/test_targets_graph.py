"""Graph targets (edge, node, path) on a small hand-made graph; expected groups and nDCG are
worked out by hand in the comments (docs/graph-targets.md gives the definitions).

The graph: four turns u1..u4, one episode each (ep1..ep4), four entity nodes and four edges

    e1: A -LIVES_IN-> C   episodes [ep1]          L(e1) = {u1}
    e2: A -KNOWS-> B      episodes [ep2]          L(e2) = {u2}
    e3: B -OWNS-> D       episodes [ep3, ep4]     L(e3) = {u3, u4}
    e4: D -LIKES-> C      episodes [ep4]          L(e4) = {u4}

Nodes take the lineage of their incident edges: A {u1,u2}, B {u2,u3,u4}, C {u1,u4},
D {u3,u4}. Paths take the union of their edges: p1 = (e1, e2) {u1,u2}, p2 = (e3,) {u3,u4},
p4 = (e1, e2, e3) {u1,u2,u3,u4}.

Query q: evidence [u1, u3], so G = 2 under every target and IDCG@60 = 1 + 1/log2(3).
"""

from __future__ import annotations

import math

import pytest

from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.runs import Ranking, Run
from tiap.scoring.rescore import rescore
from tiap.targets import (
    GraphEdge,
    GraphEpisode,
    GraphNode,
    GraphPath,
    build_groups,
    graph_items,
)

EPISODES = [GraphEpisode(f"ep{i}", (f"u{i}",), text=f"turn {i}") for i in range(1, 5)]
EDGES = [
    GraphEdge("e1", "A", "C", ("ep1",), fact="Alice lives in Paris", name="LIVES_IN"),
    GraphEdge("e2", "A", "B", ("ep2",), fact="Alice knows Bob", name="KNOWS"),
    GraphEdge("e3", "B", "D", ("ep3", "ep4"), fact="Bob owns Rex", name="OWNS"),
    GraphEdge("e4", "D", "C", ("ep4",), fact="Rex likes Paris", name="LIKES"),
]
NODES = [GraphNode("A", "Alice"), GraphNode("B", "Bob"), GraphNode("C", "Paris"),
         GraphNode("D", "Rex", "a dog")]
PATHS = [GraphPath("p1", ("e1", "e2")), GraphPath("p2", ("e3",)),
         GraphPath("p4", ("e1", "e2", "e3"))]
QUERY = Query("q", "c", "Where does Bob's dog like to go?", None, "1", ("u1", "u3"))
IDCG = 1 + 1 / math.log2(3)


def items():
    return graph_items(EPISODES, EDGES, NODES, PATHS)


def test_groups_by_hand() -> None:
    sets = build_groups(items(), [QUERY],
                        ["raw", "source", "canonical", "graph-edge", "graph-node", "graph-path"])
    assert sets["raw"]["q"] == (("ep1",), ("ep3",))
    assert sets["graph-edge"]["q"] == (("e1",), ("e3",))
    # u1: endpoints of e1 (A, C); u3: endpoints of e3 (B, D)
    assert sets["graph-node"]["q"] == (("A", "C"), ("B", "D"))
    # u1: p1 and p4 (through e1); u3: p2 and p4 (through e3)
    assert sets["graph-path"]["q"] == (("p1", "p4"), ("p2", "p4"))
    assert sets["source"]["q"] == (("A", "C", "e1", "ep1", "p1", "p4"),
                                   ("B", "D", "e3", "ep3", "p2", "p4"))
    assert sets["canonical"]["q"] == (("A", "C", "e1", "p1", "p4"), ("B", "D", "e3", "p2", "p4"))


def _ndcg(ranking: list[str], targets: list[str]) -> dict[str, float]:
    run = Run("g", (Ranking("q", "g", tuple(ranking)),))
    res = rescore([run], [QUERY], {None: items()}, targets=targets, measures="nDCG@60")
    return {t: float(res.value("g", t, "nDCG@60")[0]) for t in targets}


def test_edge_level_ndcg() -> None:
    # [e2, e3, e1]: e2 reaches u2 only (gain 0), e3 fills u3 at rank 2, e1 fills u1 at rank 3
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / IDCG  # 0.693426...
    got = _ndcg(["e2", "e3", "e1"], ["graph-edge", "graph-node", "source"])
    assert got["graph-edge"] == pytest.approx(expected, abs=1e-12)
    assert got["source"] == pytest.approx(expected, abs=1e-12)
    assert got["graph-node"] == 0.0  # no node ranked: defined (G = 2), nothing credited


def test_node_level_ndcg() -> None:
    # [D, B, C]: D fills u3 (rank 1); B is in u3's group, already matched (0);
    # C fills u1 at rank 3
    expected = (1 + 1 / math.log2(4)) / IDCG  # 1.5 / 1.6309 = 0.919721...
    got = _ndcg(["D", "B", "C"], ["graph-node", "graph-edge"])
    assert got["graph-node"] == pytest.approx(expected, abs=1e-12)
    assert got["graph-edge"] == 0.0


def test_path_level_ndcg() -> None:
    # [p4, p2]: p4 reaches u1 and u3, so at rank 1 it matches both groups with one gain of 1;
    # p2 is in u3's group, already matched (0)
    expected = 1 / IDCG  # 0.613147...
    got = _ndcg(["p4", "p2"], ["graph-path"])
    assert got["graph-path"] == pytest.approx(expected, abs=1e-12)
    # [p1, p2]: p1 fills u1 at rank 1, p2 fills u3 at rank 2: ideal
    assert _ndcg(["p1", "p2"], ["graph-path"])["graph-path"] == pytest.approx(1.0, abs=1e-12)


def test_graph_targets_by_name_in_rescore_cli_spelling() -> None:
    from tiap.targets import resolve_targets

    names = [t.name for t in resolve_targets(["graph-edge", "graph-node", "graph-path"])]
    assert names == ["graph-edge", "graph-node", "graph-path"]
    assert str(resolve_targets(["graph-node"])[0]) == "graph-node=kind == node"


def test_bad_graphs_are_reported_together() -> None:
    with pytest.raises(TiapError) as exc:
        graph_items(EPISODES[:3], EDGES, NODES,
                    [GraphPath("bad", ("e1", "e3")), GraphPath("ghost", ("e9",))])
    text = str(exc.value)
    assert "record e3: edge cites episodes that are not given: ep4" in text
    assert "record e4: edge cites episodes that are not given: ep4" in text
    assert "record bad: edges e1 and e3 share no node: not a path" in text
    assert "record ghost: path edges are not edges of the graph: e9" in text


def test_node_without_edges_has_no_source() -> None:
    its = graph_items(EPISODES, EDGES[:1], [GraphNode("Z", "lonely")])
    z = next(i for i in its if i.item_id == "Z")
    assert z.parents == () and z.sources == ()


def test_an_edge_endpoint_that_is_also_an_episode_id_is_refused() -> None:
    """Node items are made from edge endpoints: an endpoint id equal to an episode's would
    make two items of one id (the second silently shadowing the first)."""
    edges = [GraphEdge("e1", "ep1", "C", ("ep1",), fact="x")]
    with pytest.raises(TiapError) as info:
        graph_items(EPISODES, edges)
    (p,) = info.value.problems
    assert (p.code, p.record) == ("duplicate", "ep1")
    assert "edge e1 has endpoint ep1, which is also the id of an episode" in p.message
