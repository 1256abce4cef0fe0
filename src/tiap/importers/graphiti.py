"""``tiap import graphiti``: Graphiti / Zep search results, with lineage through episodes.

graphiti-core's data model (``graphiti_core.edges`` / ``.nodes`` / ``.search.search_config``):
an ``EntityEdge`` has ``uuid``, ``group_id``, ``source_node_uuid``, ``target_node_uuid``,
``name`` (the relation), ``fact``, ``episodes`` (the uuids of the episodes it was extracted
from), ``valid_at``, ``invalid_at``, ``expired_at``, ``created_at``, ``attributes``; an
``EpisodicNode`` has ``uuid``, ``name``, ``group_id``, ``source``, ``source_description``,
``content``, ``valid_at``, ``entity_edges``; an ``EntityNode`` has ``uuid``, ``name``,
``group_id``, ``labels``, ``summary``, ``attributes``. ``SearchResults`` holds ``edges``,
``nodes``, ``episodes`` and ``communities`` with ``*_reranker_scores`` lists beside them. Zep
returns the same edges (``episodes``; ``episode_uuids`` is read as a synonym).

Input (``docs/import.md``):

- ``PATH``: JSONL, one query a line: ``{"query_id", "edges": [...], "edge_reranker_scores":
  [...], "nodes": [...], "episodes": [...], ...}``, i.e. ``SearchResults.model_dump(mode=
  "json")`` plus the query id (``graphiti.search()``'s plain edge list as ``{"query_id",
  "edges"}`` works too). Each list is in rank order; scores come from the matching
  ``*_reranker_scores`` list, else from a ``score`` on every entry, else there are none.
- ``graph`` (optional): JSONL of the graph's episodes, edges and nodes (their JSON dumps;
  a record's ``type`` may say which, else an edge has ``source_node_uuid``, an episode
  ``content`` / ``source_description`` / ``sources``, anything else is a node), so that
  nodes get the lineage of *all* their edges and every cited episode is known.

Episode -> turns, in this order: an explicit ``sources`` list on the episode record (a
mapping file), else its ``name``, else its ``source_description``, when that is a turn id of
the dataset or a comma-separated list of them (put the unit id there when feeding Graphiti:
``add_episode(name="conv-26:D1:3", ...)``). Edges -> episodes -> turns and nodes -> incident
edges follow :mod:`tiap.targets.graph`; the run ranks edges, nodes or episodes (``level``).

What the input does not say is left open, never guessed and never taken for "no source"
(partial lineage, :mod:`tiap.memory.store`; rescoring bounds its effect):

- an episode whose turns are not recoverable (none of the above), and an episode an edge
  cites that the input never gives, may hold any turn of its group (``uncertain:
  {"possible_sources": "any"}``; a cited episode takes the group of the edges citing it);
- an edge whose episodes are not given (Zep's REST results often leave ``episodes`` out, or
  empty: every Graphiti edge comes from some episode) may derive from any turn of its group;
  an edge whose episodes are given inherits what they leave open through ``parents``;
- a node inherits its edges' (``parents``); without ``--graph`` only the retrieved edges of
  a node are known, so its lineage is those edges' and may be any turn of its group besides
  (with ``--graph``, the graph's edges are all its edges, as in ``docs/graph-targets.md``).

``lineage_coverage.json`` counts these under ``importer``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from tiap.datasets import load
from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.importers import (
    ImportResult,
    check_units,
    external_queries,
    require_queries,
    write_import,
)
from tiap.importers.generic import partial_lineage_findings
from tiap.io import iter_jsonl
from tiap.memory.store import Item, Uncertainty
from tiap.runs import Ranking, Run
from tiap.runs.formats import RunWarnings, dedup_ranking
from tiap.targets.graph import NODE_KIND, GraphEdge, GraphEpisode, GraphNode, graph_items

__all__ = ["LEVELS", "import_graphiti", "read_graphiti"]

LEVELS = ("edge", "node", "episode")
_LIST_KEY = {"edge": "edges", "node": "nodes", "episode": "episodes"}
_EPISODE_KEYS = ("content", "source_description", "sources", "entity_edges", "episode_metadata")


def _kind_of(rec: dict[str, Any]) -> str:
    t = rec.get("type")
    if t in LEVELS:
        return str(t)
    if "source_node_uuid" in rec:
        return "edge"
    if any(k in rec for k in _EPISODE_KEYS):
        return "episode"
    return "node"


class _Graph:
    """Episodes, edges and nodes by uuid, merged from the graph file and the results."""

    def __init__(self, units: set[str] | None) -> None:
        self.units = units
        self.episodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, GraphEdge] = {}
        self.nodes: dict[str, GraphNode] = {}
        #: uuid -> (kind, what decides its lineage, where it was first read)
        self.seen: dict[str, tuple[str, tuple[Any, ...], str]] = {}
        self.where: dict[str, tuple[Path, int]] = {}  # episode uuid -> its first record

    def _same(self, kind: str, uid: str, sig: tuple[Any, ...], file: Path, line: int,
              qid: str | None, probs: Problems) -> bool | None:
        """Whether a record repeats one read before (``None``: first seen). Graphiti's
        results repeat the same edges, nodes and episodes across queries and in the graph
        file; a repeat whose lineage differs is an error naming both places (an edge given
        without episodes, as Zep often does, agrees with any)."""
        first = self.seen.get(uid)
        if first is None:
            self.seen[uid] = (kind, sig, f"{file}:{line}")
            return None
        fkind, fsig, where = first
        if fkind == kind and all(a == b or a is None or b is None for a, b in zip(fsig, sig,
                                                                                 strict=True)):
            return True
        what = (f"a {fkind}" if fkind != kind else
                f"the same {kind} with another lineage ({_differs(fsig, sig, kind)})")
        probs.add(f"{kind} {uid} was read as {what} at {where}; one uuid names one record, "
                  "so neither can be imported as it is", line, qid, file=file, code="duplicate")
        return False

    def add(self, kind: str, rec: Any, file: Path, line: int, qid: str | None,
            probs: Problems) -> str | None:
        if not isinstance(rec, dict) or not isinstance(rec.get("uuid"), str) or not rec["uuid"]:
            probs.add(f"a{'n' if kind[0] in 'ae' else ''} {kind} must be an object with a "
                      "'uuid'",
                      line, qid, file=file)
            return None
        uid = rec["uuid"]
        if any(c.isspace() for c in uid):
            probs.add(f"{kind} uuid {uid!r} contains whitespace", line, qid, file=file)
            return None
        coll = rec.get("group_id")
        coll = None if coll in (None, "") else str(coll)
        if kind == "episode":
            given = rec.get("sources")
            if given is not None and (not isinstance(given, list) or not all(
                    isinstance(x, str) and x for x in given)):
                probs.add(f"episode {uid}: 'sources' must be a list of unit ids", line, qid,
                          file=file)
                return None
            sig = (tuple(given) if given else None, _text(rec.get("name")),
                   _text(rec.get("source_description")), coll)
            same = self._same(kind, uid, sig, file, line, qid, probs)
            if same is False:
                return None
            if same is None:
                self.episodes[uid] = rec
                self.where[uid] = (file, line)
        elif kind == "edge":
            src, dst = rec.get("source_node_uuid"), rec.get("target_node_uuid")
            eps = rec.get("episodes", rec.get("episode_uuids"))
            if not isinstance(src, str) or not isinstance(dst, str) or not src or not dst:
                probs.add(f"edge {uid} needs 'source_node_uuid' and 'target_node_uuid'",
                          line, qid, file=file)
                return None
            if eps is None:
                eps = []
            if not isinstance(eps, list) or not all(isinstance(e, str) and e for e in eps):
                probs.add(f"edge {uid}: 'episodes' must be a list of episode uuids",
                          line, qid, file=file)
                return None
            eps = list(dict.fromkeys(eps))
            same = self._same(kind, uid, (src, dst, tuple(eps) or None, coll), file, line, qid,
                              probs)
            if same is False:
                return None
            if same and (not eps or self.edges[uid].episodes):
                return uid  # seen before, with these episodes or with none named here
            if same:  # named without episodes before: now they are known
                self.seen[uid] = ("edge", (src, dst, tuple(eps), coll), f"{file}:{line}")
            valid = rec.get("valid_at")
            self.edges[uid] = GraphEdge(uid, src, dst, tuple(eps),
                                        fact=rec.get("fact"), name=rec.get("name"),
                                        collection=coll,
                                        valid_at=None if valid is None else str(valid))
        else:
            same = self._same(kind, uid, (coll,), file, line, qid, probs)
            if same is False:
                return None
            if same is None:
                self.nodes[uid] = GraphNode(uid, _text(rec.get("name")),
                                            _text(rec.get("summary")), coll)
        return uid

    def episode_sources(self, rec: dict[str, Any]) -> tuple[tuple[str, ...], str]:
        """(sources, how): how is ``sources``, ``name``, ``source_description`` or ``none``."""
        given = rec.get("sources")
        if isinstance(given, list) and given:
            return tuple(str(s) for s in given), "sources"
        if self.units is None:
            return (), "none"
        for key in ("name", "source_description"):
            value = rec.get(key)
            if isinstance(value, str) and value.strip():
                parts = [p.strip() for p in value.split(",") if p.strip()]
                if parts and all(p in self.units for p in parts):
                    return tuple(parts), key
        return (), "none"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _differs(a: tuple[Any, ...], b: tuple[Any, ...], kind: str) -> str:
    names = {"episode": ("sources", "name", "source_description", "group_id"),
             "edge": ("source_node_uuid", "target_node_uuid", "episodes", "group_id"),
             "node": ("group_id",)}[kind]
    return ", ".join(f"{n} {x!r} vs {y!r}" for n, x, y in zip(names, a, b, strict=True)
                     if x != y and x is not None and y is not None)


def _scores(rec: dict[str, Any], key: str, entries: list[Any], line: int, qid: str,
            file: Path, probs: Problems) -> tuple[float, ...] | None | Literal[False]:
    """The scores of a ranked list: its ``*_reranker_scores`` (absent or empty: none, as
    some Graphiti searches return), else a ``score`` on every entry, else none. ``False``
    (with a located problem) when they cannot be the list's: another length than the list,
    a score on some entries only, or a value that is not a finite number."""
    name = f"{key[:-1]}_reranker_scores"
    given = rec.get(name)
    if given is not None and not isinstance(given, list):
        probs.add(f"'{name}' must be a list of numbers", line, qid, file=file)
        return False
    if given:
        if len(given) != len(entries):
            probs.add(f"'{name}' has {len(given)} scores but '{key}' has {len(entries)} "
                      "entries; one score per ranked entry, in the same order", line, qid,
                      file=file)
            return False
        vals, where = given, f"'{name}'"
    else:
        scored = [isinstance(e, dict) and "score" in e for e in entries]
        if not any(scored):
            return None
        if not all(scored):
            probs.add(f"{sum(scored)} of the {len(entries)} '{key}' entries have a 'score' "
                      f"(first without: position {scored.index(False) + 1}); give one on every "
                      "entry or on none", line, qid, file=file)
            return False
        vals, where = [e["score"] for e in entries], f"'{key}' entry"
    for pos, v in enumerate(vals, start=1):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            probs.add(f"{where} score at position {pos} is {_short(v)}, not a finite number",
                      line, qid, file=file)
            return False
    return tuple(float(v) for v in vals)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _open(item: Item, open_: bool) -> Item:
    """``item``, left open to any turn of its group when the input does not say its turns."""
    return replace(item, uncertain=Uncertainty()) if open_ else item


def read_graphiti(
    path: str | Path,
    *,
    graph: str | Path | None = None,
    level: str = "edge",
    system: str | None = None,
    dataset: str | None = "locomo",
    queries_path: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> ImportResult:
    """Read Graphiti / Zep search results (module docstring); nothing is written."""
    if level not in LEVELS:
        raise TiapError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    path = Path(path)
    by_id, qfile = external_queries(dataset if queries_path is None else None, queries_path,
                                    data_dir)
    units: set[str] | None = None
    if dataset is not None:
        units = {t.unit_id for t in load(dataset, data_dir).turns_iter()}
    g = _Graph(units)
    probs = Problems()
    if graph is not None:
        for line, rec in iter_jsonl(graph):
            if not isinstance(rec, dict):
                probs.add("a graph record must be a JSON object", line, file=graph)
                continue
            g.add(_kind_of(rec), rec, Path(graph), line, None, probs)

    key = _LIST_KEY[level]
    rankings: list[Ranking] = []
    seen_q: dict[str, int] = {}
    communities = 0
    system = system or path.name.split(".")[0] or "graphiti"
    for line, rec in iter_jsonl(path):
        if not isinstance(rec, dict):
            probs.add("a search result must be a JSON object", line, file=path)
            continue
        qid = rec.get("query_id")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or qid == "":
            probs.add("search result has no 'query_id'", line, file=path)
            continue
        qid = str(qid)
        if qid in seen_q:
            probs.add(f"query has two search results (first on line {seen_q[qid]})",
                      line, qid, file=path)
            continue
        seen_q[qid] = line
        if qid not in by_id:
            src = queries_path if queries_path is not None else f"dataset {dataset!r}"
            probs.add(f"query is not in {src}", line, qid, file=path)
        found = rec.get("communities")
        if found is not None and not isinstance(found, list):
            probs.add("'communities' must be a list", line, qid, file=path)
        else:
            communities += len(found or [])
        if key not in rec:
            probs.add(f"no '{key}' list: --level {level} ranks the result's {key} (give "
                      f"them, even empty, or pass the --level the results hold)", line, qid,
                      file=path)
        for kind, k in _LIST_KEY.items():
            entries = rec.get(k)
            if entries is None:
                continue
            if not isinstance(entries, list):
                probs.add(f"'{k}' must be a list", line, qid, file=path)
                continue
            ids = [g.add(kind, e, path, line, qid, probs) for e in entries]
            if k != key:
                continue
            scores = _scores(rec, k, entries, line, qid, path, probs)
            if scores is False or None in ids:
                continue  # reported; dropping an entry would move the later ones up
            ranked = [i for i in ids if i is not None]
            keep = dedup_ranking(ranked, query_id=qid, system=system, dedup="error",
                                 probs=probs, warns=RunWarnings(), file=path,
                                 lines=[line] * len(ranked),
                                 hint="Graphiti returns each result once")
            if keep is not None:
                rankings.append(Ranking(qid, system, tuple(ranked), scores))
    probs.raise_if_any()
    require_queries(len(rankings), path, "search results")
    check_units((Item(uid, "raw", tuple(rec.get("sources") or ()))
                 for uid, rec in g.episodes.items()),
                units, probs, lambda it: g.where[it.item_id], f"dataset {dataset!r}")
    probs.raise_if_any()

    # episodes: the ones given, plus the ones edges cite without giving them
    cited: dict[str, set[str | None]] = {}
    for edge in g.edges.values():
        for e in edge.episodes:
            if e not in g.episodes:
                cited.setdefault(e, set()).add(edge.collection)
    episodes: list[GraphEpisode] = []
    how_counts: dict[str, int] = {}
    open_ids: set[str] = set()
    for uid, rec in g.episodes.items():
        sources, how = g.episode_sources(rec)
        how_counts[how] = how_counts.get(how, 0) + 1
        if how == "none":
            open_ids.add(uid)
        coll = rec.get("group_id")
        episodes.append(GraphEpisode(uid, sources, text=rec.get("content"),
                                     collection=None if coll in (None, "") else str(coll)))
    for uid, groups in cited.items():  # of the group of the edges citing it, when they agree
        episodes.append(GraphEpisode(uid, (), collection=next(iter(groups))
                                     if len(groups) == 1 else None))
        open_ids.add(uid)
    edges_open = {uid for uid, e in g.edges.items() if not e.episodes}
    open_ids |= edges_open
    nodes_open = graph is None
    items = tuple(_open(it, it.item_id in open_ids or (nodes_open and it.kind == NODE_KIND))
                  for it in graph_items(episodes, g.edges.values(), g.nodes.values()))

    queries: list[Query] = [by_id[r.query_id] for r in rankings]
    not_given = list(cited)
    n_nodes = sum(1 for i in items if i.kind == NODE_KIND)
    findings: dict[str, Any] = {
        "level": level,
        "episodes_by_lineage_source": how_counts,
        "episodes_cited_not_given": len(not_given),
        "episodes_without_source": how_counts.get("none", 0) + len(not_given),
        "edges": len(g.edges),
        "edges_without_episodes": len(edges_open),
        "nodes": n_nodes,
        "nodes_open_without_graph": n_nodes if nodes_open else 0,
        "communities_ignored": communities,
        "queries_not_ranked": len(by_id) - len(queries),
        **partial_lineage_findings(items),
        "listed_episodes_cited_not_given": not_given[:1000],
        "listed_edges_without_episodes": [i.item_id for i in items
                                          if i.item_id in edges_open][:1000],
    }
    run = Run(system=system, rankings=tuple(rankings), source=path, format=f"graphiti-{level}")
    inputs = tuple(p for p in (path, None if graph is None else Path(graph), qfile) if p)
    return ImportResult(system=system, format=f"graphiti-{level}", items=items,
                        queries=tuple(queries), run=run, inputs=inputs, findings=findings)


def import_graphiti(
    path: str | Path,
    out_dir: str | Path,
    *,
    graph: str | Path | None = None,
    level: str = "edge",
    system: str | None = None,
    dataset: str | None = "locomo",
    queries: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> ImportResult:
    """Read Graphiti / Zep search results and write the import folder."""
    result = read_graphiti(path, graph=graph, level=level, system=system, dataset=dataset,
                           queries_path=queries, data_dir=data_dir)
    write_import(result, out_dir)
    return result
