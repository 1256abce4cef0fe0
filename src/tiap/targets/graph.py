"""Graph memories (Graphiti / Zep): lineage for episodes, edges, nodes and paths, and the
edge-, node- and path-level targets (``docs/graph-targets.md``).

A temporal knowledge graph stores *episodes* (the raw input, e.g. one dialogue turn), *entity
edges* (facts between two entity nodes, each listing the episodes it was extracted from) and
*entity nodes*. :func:`graph_items` turns them into :class:`~tiap.memory.store.Item` records
whose lineage encodes the definitions below, so that the ordinary family machinery
(:func:`~tiap.targets.build_groups`) computes the graph targets. For a source unit (turn) ``u``
and a turn set ``T(ep)`` per episode:

- episode ``ep`` (kind ``raw``, verbatim input): ``L(ep) = T(ep)``;
- edge ``e`` (kind ``edge``) with episodes ``E(e)``: ``L(e) = ∪_{ep ∈ E(e)} T(ep)``
  (``parents`` = its episodes);
- node ``n`` (kind ``node``): ``L(n) = ∪ {L(e) : e an edge with n as an endpoint}``
  (``parents`` = its incident edges): **a node is credited for ``u`` iff it is an endpoint of
  an edge whose episodes reach ``u``**;
- path ``P = (e_1, ..., e_m)`` (kind ``path``), consecutive edges sharing a node:
  ``L(P) = ∪_i L(e_i)`` (``parents`` = its edges): **a path is credited for ``u`` iff at least
  one of its edges' episodes reaches ``u``**; under group credit one path at one rank fills
  every unmatched gold group its edges reach (a multi-hop answer counts once per evidence
  turn it covers, at its rank).

The targets (registered in the default registry, usable as ``tiap rescore --targets
raw,source,graph-edge,graph-node``):

==============  =================  ============================================
name            spec               credits, for each gold turn ``u``
==============  =================  ============================================
``graph-edge``  ``kind == edge``   edges whose episodes reach ``u``
``graph-node``  ``kind == node``   endpoints of those edges
``graph-path``  ``kind == path``   paths with at least one such edge
==============  =================  ============================================

Raw credits the episodes that hold ``u``; Source the whole family (episodes, edges, nodes and
paths); Canonical every non-raw member (edges, nodes and paths).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tiap.errors import Problem, TiapError
from tiap.memory.store import RAW_KIND, Item
from tiap.targets.targets import DEFAULT_REGISTRY, Equals, Target

__all__ = [
    "EDGE_KIND",
    "GRAPH_EDGE",
    "GRAPH_NODE",
    "GRAPH_PATH",
    "GRAPH_TARGETS",
    "NODE_KIND",
    "PATH_KIND",
    "GraphEdge",
    "GraphEpisode",
    "GraphNode",
    "GraphPath",
    "graph_items",
]

EDGE_KIND = "edge"
NODE_KIND = "node"
PATH_KIND = "path"

GRAPH_EDGE = Target("graph-edge", Equals("kind", EDGE_KIND),
                    "graph edges whose episodes reach the evidence turn")
GRAPH_NODE = Target("graph-node", Equals("kind", NODE_KIND),
                    "graph nodes that are an endpoint of an edge whose episodes reach the turn")
GRAPH_PATH = Target("graph-path", Equals("kind", PATH_KIND),
                    "graph paths with at least one edge whose episodes reach the turn")
GRAPH_TARGETS: tuple[Target, ...] = (GRAPH_EDGE, GRAPH_NODE, GRAPH_PATH)
for _t in GRAPH_TARGETS:
    DEFAULT_REGISTRY.register(_t)


@dataclass(frozen=True)
class GraphEpisode:
    """An episode and the source units (turns) it holds.

    >>> ep = GraphEpisode("ep1", ("d1:1",), text="Alice: I moved to Paris.")
    >>> graph_items([ep], [])[0]  # doctest: +ELLIPSIS
    Item(item_id='ep1', kind='raw', sources=('d1:1',), parents=(), ...)
    """

    uuid: str
    sources: tuple[str, ...]
    text: str | None = None
    collection: str | None = None


@dataclass(frozen=True)
class GraphEdge:
    """An entity edge: a fact between two nodes, with the episodes it came from.

    The edge becomes an item of kind ``edge`` whose parents are its episodes; each
    endpoint becomes a node item whose parent is the edge:

    >>> edge = GraphEdge("e1", "alice", "paris", ("ep1",), fact="Alice lives in Paris")
    >>> items = graph_items([GraphEpisode("ep1", ("d1:1",))], [edge])
    >>> [(it.item_id, it.kind, it.parents) for it in items]
    [('ep1', 'raw', ()), ('e1', 'edge', ('ep1',)), ('alice', 'node', ('e1',)),
     ('paris', 'node', ('e1',))]
    """

    uuid: str
    source_node: str
    target_node: str
    episodes: tuple[str, ...]
    fact: str | None = None
    name: str | None = None
    collection: str | None = None
    valid_at: str | None = None


@dataclass(frozen=True)
class GraphNode:
    """An entity node (``name`` and ``summary`` become the item's text).

    >>> items = graph_items([GraphEpisode("ep1", ("d1:1",))],
    ...                     [GraphEdge("e1", "alice", "paris", ("ep1",))],
    ...                     [GraphNode("alice", name="Alice", summary="a painter")])
    >>> [(it.item_id, it.text) for it in items if it.kind == "node"]
    [('alice', 'Alice: a painter'), ('paris', None)]
    """

    uuid: str
    name: str | None = None
    summary: str | None = None
    collection: str | None = None


@dataclass(frozen=True)
class GraphPath:
    """A path: edges in order, each sharing a node with the next.

    >>> episodes = [GraphEpisode("ep1", ("d1:1",)), GraphEpisode("ep2", ("d1:2",))]
    >>> edges = [GraphEdge("e1", "alice", "paris", ("ep1",)),
    ...          GraphEdge("e2", "alice", "bob", ("ep2",))]
    >>> graph_items(episodes, edges, paths=[GraphPath("p1", ("e1", "e2"))])[-1].parents
    ('e1', 'e2')
    >>> graph_items(episodes, edges, paths=[GraphPath("p2", ("e1", "e9"))])
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: ...path edges are not edges of the graph: e9
    """

    path_id: str
    edges: tuple[str, ...]


def _check_path(path: GraphPath, edges: dict[str, GraphEdge], probs: list[Problem]) -> None:
    if not path.edges:
        probs.append(Problem("a path needs at least one edge", record=path.path_id))
        return
    missing = [e for e in path.edges if e not in edges]
    if missing:
        probs.append(Problem(f"path edges are not edges of the graph: {', '.join(missing)}",
                             record=path.path_id))
        return
    for a, b in zip(path.edges, path.edges[1:], strict=False):
        ea, eb = edges[a], edges[b]
        if not {ea.source_node, ea.target_node} & {eb.source_node, eb.target_node}:
            probs.append(Problem(f"edges {a} and {b} share no node: not a path",
                                 record=path.path_id))


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def graph_items(
    episodes: Iterable[GraphEpisode],
    edges: Iterable[GraphEdge],
    nodes: Iterable[GraphNode] = (),
    paths: Iterable[GraphPath] = (),
) -> tuple[Item, ...]:
    """Items for a graph, with the lineage of the module docstring.

    Every endpoint of an edge becomes a node item (``nodes`` supply text and collection).
    Episodes come first, then edges, nodes and paths, each in input order.

    Raises:
        TiapError: an edge citing an episode that is not given, a path whose edges are not
            given or do not chain, or an id used twice (all problems together).

    Two turns, each an episode; one edge from each; a path over both edges. Gold turn
    ``d1:1`` credits its episode under Raw, the edge extracted from it, that edge's two
    endpoints and the path that holds it:

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.targets import build_groups
    >>> items = graph_items(
    ...     [GraphEpisode("ep1", ("d1:1",)), GraphEpisode("ep2", ("d1:2",))],
    ...     [GraphEdge("e1", "alice", "paris", ("ep1",), fact="Alice lives in Paris"),
    ...      GraphEdge("e2", "alice", "bob", ("ep2",), fact="Alice knows Bob")],
    ...     paths=[GraphPath("p1", ("e1", "e2"))])
    >>> query = query_from_json({"query_id": "q1", "evidence": ["d1:1"]})
    >>> sets = build_groups(items, [query], ["raw", "graph-edge", "graph-node", "graph-path"])
    >>> for target in sets:
    ...     print(target.name, target["q1"])
    raw (('ep1',),)
    graph-edge (('e1',),)
    graph-node (('alice', 'paris'),)
    graph-path (('p1',),)
    """
    ep_list = list(episodes)
    edge_list = list(edges)
    node_list = list(nodes)
    path_list = list(paths)
    probs: list[Problem] = []
    seen: dict[str, str] = {}
    for what, ids in (("episode", [e.uuid for e in ep_list]), ("edge", [e.uuid for e in edge_list]),
                      ("node", [n.uuid for n in node_list]), ("path", [p.path_id for p in path_list])):
        for i in ids:
            if i in seen:
                probs.append(Problem(f"id used twice ({_a(seen[i])} and {_a(what)})", record=i,
                                     code="duplicate"))
            seen[i] = what
    ep_ids = {e.uuid for e in ep_list}
    for e in edge_list:
        missing = [x for x in e.episodes if x not in ep_ids]
        if missing:
            probs.append(Problem(f"edge cites episodes that are not given: {', '.join(missing)}",
                                 record=e.uuid))
    by_edge = {e.uuid: e for e in edge_list}
    for p in path_list:
        _check_path(p, by_edge, probs)
    incident: dict[str, list[str]] = {}
    for e in edge_list:
        for n in dict.fromkeys((e.source_node, e.target_node)):
            incident.setdefault(n, []).append(e.uuid)
    for n, cited_by in incident.items():  # an endpoint becomes a node item: never a 2nd id
        if seen.get(n, "node") != "node":
            probs.append(Problem(f"edge {cited_by[0]} has endpoint {n}, which is also the id "
                                 f"of {_a(seen[n])}: one id, two graph elements", record=n,
                                 code="duplicate"))
    if probs:
        raise TiapError(problems=probs)

    given = {n.uuid: n for n in node_list}
    node_ids = list(dict.fromkeys([*given, *incident]))

    items: list[Item] = [
        Item(item_id=ep.uuid, kind=RAW_KIND, sources=tuple(ep.sources), text=ep.text,
             collection=ep.collection, meta=(("graph_element", "episode"),))
        for ep in ep_list
    ]
    for e in edge_list:
        meta: list[tuple[str, Any]] = [("graph_element", "edge"), ("graph_source", e.source_node),
                                       ("graph_target", e.target_node)]
        if e.name:
            meta.append(("graph_relation", e.name))
        if e.valid_at:
            meta.append(("valid_at", e.valid_at))
        items.append(Item(item_id=e.uuid, kind=EDGE_KIND, parents=tuple(dict.fromkeys(e.episodes)),
                          text=e.fact, collection=e.collection, meta=tuple(sorted(meta))))
    for nid in node_ids:
        n = given.get(nid)
        text = None
        if n is not None and (n.name or n.summary):
            text = ": ".join(x for x in (n.name, n.summary) if x)
        items.append(Item(item_id=nid, kind=NODE_KIND, parents=tuple(incident.get(nid, ())),
                          text=text, collection=None if n is None else n.collection,
                          meta=(("graph_element", "node"),)))
    for p in path_list:
        items.append(Item(item_id=p.path_id, kind=PATH_KIND, parents=tuple(dict.fromkeys(p.edges)),
                          meta=(("graph_element", "path"), ("graph_edges", list(p.edges)))))
    return tuple(items)

