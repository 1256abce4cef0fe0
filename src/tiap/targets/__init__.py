"""Stage I: targets. Which stored items earn credit for a query's evidence.

From the store's lineage (:func:`build_lineage`) every source unit has a *family*: the
items whose lineage reaches it. A :class:`Target` (built-ins ``raw``, ``source``,
``canonical``; the graph targets ``graph-edge``, ``graph-node``, ``graph-path`` of
:mod:`.graph`; more from ``name=spec`` strings) picks members of each evidence unit's
family; :func:`build_groups` gives, per (query, target), one group per evidence unit, or a
zero-target case with its reason; :func:`coverage` summarises them and
:func:`write_targets` writes, per store, groups JSONL, target-mapping rows, TREC qrels
(``qrels/<store>.<target>.qrels``) and coverage.

>>> from tiap.targets import build_groups, write_targets      # doctest: +SKIP
>>> sets = build_groups(items, queries, ["raw", "source", "canonical",
...                                      "facts=kind in {fact, observation}"])  # doctest: +SKIP
>>> sets["canonical"]["q1"]                                    # doctest: +SKIP
(('f1', 'f2'), ('f3',))
"""

from tiap.targets.coverage import COVERAGE_CSV_COLUMNS, Coverage, TargetCoverage, coverage
from tiap.targets.export import (
    TargetsExport,
    groups_rows,
    mapping_rows,
    qrels_lines,
    qrels_name,
    qrels_store,
    write_coverage,
    write_groups_jsonl,
    write_qrels,
    write_target_mapping,
    write_targets,
)
from tiap.targets.graph import (
    GRAPH_TARGETS,
    GraphEdge,
    GraphEpisode,
    GraphNode,
    GraphPath,
    graph_items,
)
from tiap.targets.groups import (
    DEFAULT_TARGETS,
    QueryGroups,
    QueryLike,
    TargetGroups,
    TargetSets,
    ZeroTarget,
    build_groups,
)
from tiap.targets.lineage import Lineage, build_lineage
from tiap.targets.targets import (
    BUILTIN_TARGETS,
    CANONICAL,
    DEFAULT_REGISTRY,
    RAW,
    SOURCE,
    Target,
    TargetRegistry,
    get_target,
    list_targets,
    parse_spec,
    parse_target,
    register_target,
    resolve_targets,
)

__all__ = [
    "BUILTIN_TARGETS",
    "CANONICAL",
    "COVERAGE_CSV_COLUMNS",
    "Coverage",
    "DEFAULT_REGISTRY",
    "DEFAULT_TARGETS",
    "GRAPH_TARGETS",
    "GraphEdge",
    "GraphEpisode",
    "GraphNode",
    "GraphPath",
    "Lineage",
    "QueryGroups",
    "QueryLike",
    "RAW",
    "SOURCE",
    "Target",
    "TargetCoverage",
    "TargetGroups",
    "TargetRegistry",
    "TargetSets",
    "TargetsExport",
    "ZeroTarget",
    "build_groups",
    "build_lineage",
    "coverage",
    "get_target",
    "graph_items",
    "groups_rows",
    "list_targets",
    "mapping_rows",
    "parse_spec",
    "parse_target",
    "qrels_lines",
    "qrels_name",
    "qrels_store",
    "register_target",
    "resolve_targets",
    "write_coverage",
    "write_groups_jsonl",
    "write_qrels",
    "write_target_mapping",
    "write_targets",
]
