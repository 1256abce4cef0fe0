"""Stage I: targets. Which stored items earn credit for a query's evidence.

From the store's lineage (:func:`build_lineage`) every source unit has a *family*: the
items whose lineage reaches it. A :class:`Target` (built-ins ``raw``, ``source``,
``canonical``; the graph targets ``graph-edge``, ``graph-node``, ``graph-path`` of
:mod:`.graph`; more from ``name=spec`` strings) picks members of each evidence unit's
family; :func:`build_groups` gives, per (query, target), one group per evidence unit, or a
zero-target case with its reason; :func:`coverage` summarises them and
:func:`write_targets` writes, per store, groups JSONL, target-mapping rows, TREC qrels
(``qrels/<store>.<target>.qrels``) and coverage; :func:`targets_files` is ``tiap targets``
(store and queries files in, the folder out).

>>> from tiap.targets import build_groups, write_targets      # doctest: +SKIP
>>> sets = build_groups(items, queries, ["raw", "source", "canonical",
...                                      "facts=kind in {fact, observation}"])  # doctest: +SKIP
>>> sets["canonical"]["q1"]                                    # doctest: +SKIP
(('f1', 'f2'), ('f3',))
"""

from tiap.targets.coverage import Coverage, TargetCoverage, coverage
from tiap.targets.files import targets_files
from tiap.targets.folder import (
    TargetsExport,
    check_targets_folder,
    qrels_store,
    read_overlays,
    write_targets,
)
from tiap.targets.granularity import parse_granularity
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
    parse_target,
    resolve_targets,
)

__all__ = [
    "BUILTIN_TARGETS",
    "CANONICAL",
    "DEFAULT_REGISTRY",
    "DEFAULT_TARGETS",
    "GRAPH_TARGETS",
    "RAW",
    "SOURCE",
    "Coverage",
    "GraphEdge",
    "GraphEpisode",
    "GraphNode",
    "GraphPath",
    "Lineage",
    "QueryGroups",
    "Target",
    "TargetCoverage",
    "TargetGroups",
    "TargetRegistry",
    "TargetSets",
    "TargetsExport",
    "ZeroTarget",
    "build_groups",
    "build_lineage",
    "check_targets_folder",
    "coverage",
    "get_target",
    "graph_items",
    "list_targets",
    "parse_granularity",
    "parse_target",
    "qrels_store",
    "read_overlays",
    "resolve_targets",
    "targets_files",
    "write_targets",
]
