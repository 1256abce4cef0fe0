"""Importers: other systems' saved outputs turned into TIAP records, with their lineage.

``tiap import SYSTEM PATH --out DIR`` is :func:`run_import`: it looks ``SYSTEM`` up in
:data:`IMPORTERS` and calls ``function(PATH, DIR, **options)``. Every importer writes, into ``DIR`` (built aside and moved
into place only when complete):

- ``items.jsonl``: the stored items, each with the lineage the system keeps
  (``sources``, ``parents``);
- ``queries.jsonl``: the queries with their evidence (source unit ids);
- ``run.jsonl``: the ranked item ids per query (JSONL rankings);
- ``lineage_coverage.json``: items with no recoverable source (counted and listed), items
  with partial lineage (counted and listed), ranked ids that are not items, evidence units no
  item certainly reaches, and the importer's own findings;
- ``manifest.json``: the inputs with their sha256, TIAP's version and the list of outputs.

``DIR`` is replaced whole (:func:`import_folder`): it then holds exactly one import, never
files of an earlier one beside the new ones; a folder that is not the output of a ``tiap
import`` command is refused (``error[stale-output]``) unless forced (``--force``,
``force=True``, or :func:`forced` around an importer that does not take ``force``).

One module per system (:mod:`.generic`, :mod:`.memoryos`, :mod:`.graphiti`, :mod:`.mem0`
and the harness that runs Mem0, :mod:`.mtel` for the paper's published MTEL-Mem traces);
each is registered by name below as ``"module:function"`` and imported only when used, so
a registered module that is absent from an installation gives a clear error instead of
breaking ``tiap``. The formats are documented in ``docs/import.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiap.datasets import load
from tiap.datasets.queryfile import read_queries, write_queries
from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.io import atomic_write, check_output_folder, output_folder, output_step
from tiap.lazy import lazy_exports
from tiap.memory.store import Item, read_items, stamp_store, write_items
from tiap.provenance import Manifest, input_entry
from tiap.runs import Run, read_run, warnings_json, write_jsonl_run

__all__ = [
    "COVERAGE_FILE",
    "IMPORTERS",
    "Imported",
    "Importer",
    "LineageCoverage",
    "Mem0RunConfig",
    "check_import_folder",
    "coverage_of_folder",
    "forced",
    "get_importer",
    "import_mem0_results",
    "importer_names",
    "lineage_coverage",
    "run_import",
    "run_mem0",
    "run_mem0_files",
    "write_coverage",
]

if TYPE_CHECKING:  # pragma: no cover
    from tiap.importers.mem0 import import_mem0_results
    from tiap.importers.mem0_harness import Mem0RunConfig, run_mem0, run_mem0_files

#: name -> module, imported on first use (PEP 562): the Mem0 importer and harness
_LAZY = {"import_mem0_results": "tiap.importers.mem0",
         "Mem0RunConfig": "tiap.importers.mem0_harness", "run_mem0": "tiap.importers.mem0_harness",
         "run_mem0_files": "tiap.importers.mem0_harness"}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

COVERAGE_FILE = "lineage_coverage.json"
_LISTED = 1000  # ids listed per category in lineage_coverage.json (all are counted)


@dataclass(frozen=True)
class Importer:
    """A registered importer: ``target`` is ``"module:function"``, imported on first use.

    >>> imp = IMPORTERS["generic"]
    >>> imp.name, imp.target, imp.available
    ('generic', 'tiap.importers.generic:import_generic', True)
    >>> imp.load().__name__
    'import_generic'
    """

    name: str
    target: str
    help: str

    def load(self) -> Any:
        module, _, func = self.target.partition(":")
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                raise TiapError(
                    f"importer {self.name!r} is registered but its module {module} is not in "
                    "this installation"
                ) from None
            raise
        fn = getattr(mod, func, None)
        if fn is None:
            raise TiapError(f"importer {self.name!r}: {module} has no function {func!r}")
        return fn

    @property
    def available(self) -> bool:
        return importlib.util.find_spec(self.target.partition(":")[0]) is not None


# The registry. One line per system; the function is called as fn(path, out_dir, **options).
IMPORTERS: dict[str, Importer] = {
    imp.name: imp
    for imp in (
        Importer("generic", "tiap.importers.generic:import_generic",
                 "TIAP's generic JSONL export (item, ranking and query records)"),
        Importer("memoryos", "tiap.importers.memoryos:import_memoryos",
                 "a MemoryOS store (pages, session summaries, knowledge) and retrieval results"),
        Importer("graphiti", "tiap.importers.graphiti:import_graphiti",
                 "Graphiti / Zep search results (edges, nodes, episodes) with their episodes"),
        Importer("mtel-trace", "tiap.importers.mtel:import_mtel",
                 "a trace of the paper's MTEL-Mem release (Mem0, MemoryOS, native runs)"),
        Importer("mem0", "tiap.importers.mem0:import_mem0_results",
                 "Mem0 search results (ids, memory, metadata, score)"),
    )
}


def importer_names() -> tuple[str, ...]:
    """The systems ``tiap import`` knows, in registry order.

    >>> importer_names()
    ('generic', 'memoryos', 'graphiti', 'mtel-trace', 'mem0')
    """
    return tuple(IMPORTERS)


def get_importer(name: str) -> Importer:
    """The importer registered as ``name`` (case and surrounding spaces ignored), called as
    ``function(path, out_dir, **options)``.

    Example: a system's export in TIAP's generic JSONL format (docs/import.md), imported:

    >>> rows = [
    ...     {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]},
    ...     {"type": "item", "item_id": "f1", "kind": "fact", "parents": ["t1"]},
    ...     {"type": "query", "query_id": "q1", "question": "Who has a cat?",
    ...      "evidence": ["c1:D1:1"]},
    ...     {"type": "ranking", "query_id": "q1", "ranked": ["f1", "t1"]}]
    >>> _ = Path("export.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> import_generic = get_importer(" Generic ").load()
    >>> result = import_generic("export.jsonl", "imports/mine")
    >>> result.system, len(result.items), result.run.ranking("q1").item_ids
    ('export', 2, ('f1', 't1'))
    >>> sorted(p.name for p in Path("imports/mine").iterdir())
    ['items.jsonl', 'lineage_coverage.json', 'manifest.json', 'queries.jsonl', 'run.jsonl']
    >>> get_importer("zep")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: unknown system 'zep'; importers: generic, memoryos, graphiti,
    mtel-trace, mem0
    """
    imp = IMPORTERS.get(name.strip().lower())
    if imp is None:
        raise TiapError(f"unknown system {name!r}; importers: {', '.join(IMPORTERS)}")
    return imp


# --------------------------------------------------------------------------------------------
# Results and the lineage-coverage report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    """What an importer produced: items with lineage, queries, one run, and its findings.

    ``findings`` holds importer-specific counts and listings (JSON-serialisable), written
    under ``"importer"`` in ``lineage_coverage.json``; ``inputs`` the files read.
    """

    system: str
    format: str
    items: tuple[Item, ...]
    queries: tuple[Query, ...]
    run: Run
    inputs: tuple[Path, ...] = ()
    findings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:  # the store is the system's: items and run name it
        object.__setattr__(self, "items", stamp_store(self.items, self.system))
        if self.run.store != self.system:
            object.__setattr__(self, "run", dataclasses.replace(self.run, store=self.system))


@dataclass(frozen=True)
class LineageCoverage:
    """Lineage coverage of an import (computed from the records, whatever the importer).

    ``no_source`` are items whose transitive lineage is certainly empty: no target ever
    credits them (an item with ``uncertain`` lineage, or deriving from one, is not among
    them: it may be credited, and rescoring bounds it). ``partial`` are the items whose
    lineage is only partly known (their own ``uncertain``, or a parent's), ``placeholders``
    the placeholder items. ``unknown_ranked`` are ranked ids that are not items (they can
    never be credited either). ``unreached_evidence`` are evidence units that no item's
    lineage certainly reaches (partial lineage may still reach them).

    >>> from tiap.runs import Ranking
    >>> items = [Item("t1", "raw", ("c1:D1:1",)), Item("f1", "fact", parents=("t1",)),
    ...          Item("m9", "fact", ())]
    >>> queries = [Query("q1", "c1", "Who has a cat?", None, "single-hop",
    ...                  ("c1:D1:1", "c1:D1:2"))]
    >>> run = Run("mine", [Ranking("q1", "mine", ["f1", "m9", "x7"])])
    >>> cov = lineage_coverage(items, queries, [run])
    >>> cov.no_source, cov.ranked, cov.ranked_no_source, cov.unknown_ranked
    (('m9',), 3, 1, ('x7',))
    >>> cov.queries_all_evidence_reached, cov.unreached_evidence
    (0, ('c1:D1:2',))
    >>> cov.to_json()["items_with_no_source_by_kind"]
    {'fact': 1}
    """

    items: int
    kinds: Mapping[str, int]
    no_source: tuple[str, ...]
    no_source_by_kind: Mapping[str, int]
    ranked: int
    ranked_no_source: int
    unknown_ranked: tuple[str, ...]
    queries: int
    queries_with_evidence: int
    queries_all_evidence_reached: int
    unreached_evidence: tuple[str, ...]
    findings: Mapping[str, Any] = field(default_factory=dict)
    partial: tuple[str, ...] = ()
    partial_by_kind: Mapping[str, int] = field(default_factory=dict)
    placeholders: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "kinds": dict(self.kinds),
            "items_with_no_source": len(self.no_source),
            "items_with_no_source_by_kind": dict(self.no_source_by_kind),
            "items_with_partial_lineage": len(self.partial),
            "items_with_partial_lineage_by_kind": dict(self.partial_by_kind),
            "placeholder_items": self.placeholders,
            "ranked_positions": self.ranked,
            "ranked_positions_with_no_source": self.ranked_no_source,
            "unknown_ranked_ids": len(self.unknown_ranked),
            "queries": self.queries,
            "queries_with_evidence": self.queries_with_evidence,
            "queries_all_evidence_reached": self.queries_all_evidence_reached,
            "unreached_evidence_units": len(self.unreached_evidence),
            "listed": {
                "items_with_no_source": list(self.no_source[:_LISTED]),
                "items_with_partial_lineage": list(self.partial[:_LISTED]),
                "unknown_ranked_ids": list(self.unknown_ranked[:_LISTED]),
                "unreached_evidence_units": list(self.unreached_evidence[:_LISTED]),
            },
            "importer": dict(self.findings),
        }


def _may_reach(it: Item) -> bool:
    """Whether an item's own lineage may reach some unit: certain sources, or partial
    lineage that allows one (``"any"``, or a non-empty list of possible sources)."""
    if it.sources:
        return True
    u = it.uncertain
    return u is not None and (u.possible is None or bool(u.possible))


def _transitive(items: Iterable[Item], own: Callable[[Item], bool]) -> dict[str, bool]:
    """item id -> whether ``own`` holds for it or for an item it derives from through
    ``parents`` (dangling parents ignored)."""
    by_id = {it.item_id: it for it in items}
    memo: dict[str, bool] = {}
    for start in by_id:
        if start in memo:
            continue
        stack = [start]
        on_path: set[str] = set()
        while stack:
            iid = stack[-1]
            if iid in memo:
                stack.pop()
                continue
            it = by_id[iid]
            if own(it):
                memo[iid] = True
                stack.pop()
                continue
            on_path.add(iid)
            pending = [p for p in it.parents if p in by_id and p not in memo and p not in on_path]
            if pending:
                stack.extend(pending)
                continue
            memo[iid] = any(memo.get(p, False) for p in it.parents)
            on_path.discard(iid)
            stack.pop()
    return memo


def lineage_coverage(
    items: Iterable[Item], queries: Iterable[Query], runs: Iterable[Run],
    findings: Mapping[str, Any] | None = None,
) -> LineageCoverage:
    """Count what lineage an import carries: see :class:`LineageCoverage`.

    ``f1`` derives from ``t1`` (``parents``), so it reaches ``c1:D1:1`` too; ``m9`` names
    no source, and ``x7`` is ranked but is no item:

    >>> from tiap.runs import Ranking
    >>> items = [Item("t1", "raw", ("c1:D1:1",)), Item("f1", "fact", parents=("t1",)),
    ...          Item("m9", "fact", ())]
    >>> queries = [Query("q1", "c1", "Who has a cat?", None, "single-hop", ("c1:D1:1",))]
    >>> run = Run("mine", [Ranking("q1", "mine", ["f1", "m9", "x7"])])
    >>> cov = lineage_coverage(items, queries, [run])
    >>> cov.items, cov.kinds, cov.no_source, cov.unknown_ranked
    (3, {'fact': 2, 'raw': 1}, ('m9',), ('x7',))
    >>> cov.queries_with_evidence, cov.queries_all_evidence_reached
    (1, 1)
    """
    item_list = list(items)
    has_source = _transitive(item_list, _may_reach)
    is_partial = _transitive(item_list, lambda it: it.uncertain is not None)
    reached: set[str] = {u for it in item_list for u in it.sources}
    no_source = tuple(i.item_id for i in item_list if not has_source[i.item_id])
    partial = tuple(i.item_id for i in item_list if is_partial[i.item_id])
    kinds = Counter(i.kind for i in item_list)
    kind_of = {i.item_id: i.kind for i in item_list}
    ranked = ranked_none = 0
    unknown: dict[str, None] = {}
    for run in runs:
        for r in run.rankings:
            for iid in r.item_ids:
                ranked += 1
                if iid not in kind_of:
                    unknown[iid] = None
                elif not has_source[iid]:
                    ranked_none += 1
    qlist = list(queries)
    with_ev = [q for q in qlist if q.evidence]
    unreached = tuple(dict.fromkeys(u for q in with_ev for u in q.evidence if u not in reached))
    all_reached = sum(1 for q in with_ev if all(u in reached for u in q.evidence))
    return LineageCoverage(
        items=len(item_list),
        kinds=dict(sorted(kinds.items())),
        no_source=no_source,
        no_source_by_kind=dict(sorted(Counter(kind_of[i] for i in no_source).items())),
        ranked=ranked,
        ranked_no_source=ranked_none,
        unknown_ranked=tuple(unknown),
        queries=len(qlist),
        queries_with_evidence=len(with_ev),
        queries_all_evidence_reached=all_reached,
        unreached_evidence=unreached,
        findings=dict(findings or {}),
        partial=partial,
        partial_by_kind=dict(sorted(Counter(kind_of[i] for i in partial).items())),
        placeholders=sum(1 for i in item_list if i.placeholder is not None),
    )


def coverage_json(cov: LineageCoverage) -> str:
    """The text of ``lineage_coverage.json``."""
    return json.dumps(cov.to_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_coverage(path: str | Path, cov: LineageCoverage) -> None:
    """Atomically write ``lineage_coverage.json`` (:data:`COVERAGE_FILE`) for ``cov``.

    >>> items = [Item("t1", "raw", ("c1:D1:1",)), Item("m9", "fact", ())]
    >>> write_coverage(COVERAGE_FILE, lineage_coverage(items, [], []))
    >>> report = json.loads(Path("lineage_coverage.json").read_text())
    >>> report["items"], report["items_with_no_source"], report["listed"]["items_with_no_source"]
    (2, 1, ['m9'])
    """
    with atomic_write(path) as fh:
        fh.write(coverage_json(cov))


#: Whether the import being run may replace a folder that is not an import's output (set
#: by :func:`forced`, read by every import writer whose ``force`` is not given).
_FORCE: ContextVar[bool] = ContextVar("tiap_import_force", default=False)
#: What an import folder may hold beside its manifest's outputs: the coverage report that
#: ``tiap import`` adds for an importer that does not write one.
IMPORT_KNOWN = (COVERAGE_FILE,)


@contextlib.contextmanager
def forced(force: bool = True) -> Iterator[None]:
    """Run importers (``fn(path, out_dir, ...)``) with ``force`` as their default: the
    CLI's ``--force`` reaches every registered importer, whatever its signature.

    A folder that is not an import's output is refused, unless forced:

    >>> rows = [{"type": "item", "item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]},
    ...         {"type": "query", "query_id": "q1", "question": "?", "evidence": ["c1:D1:1"]},
    ...         {"type": "ranking", "query_id": "q1", "ranked": ["t1"]}]
    >>> _ = Path("export.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> Path("notes").mkdir()
    >>> _ = Path("notes/todo.txt").write_text("my notes")
    >>> import_generic = get_importer("generic").load()
    >>> import_generic("export.jsonl", "notes")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: notes: the output folder is not empty and holds no manifest of
    `tiap import generic` (1 entry, first 'todo.txt'): it may be a folder of yours; refusing
    to write there: pass an empty or new --out, or --force to replace the folder whole
    >>> with forced():
    ...     result = import_generic("export.jsonl", "notes")
    >>> sorted(p.name for p in Path("notes").iterdir())
    ['items.jsonl', 'lineage_coverage.json', 'manifest.json', 'queries.jsonl', 'run.jsonl']
    """
    token = _FORCE.set(force)
    try:
        yield
    finally:
        _FORCE.reset(token)


def check_import_folder(out: str | Path, *, force: bool = False) -> Path:
    """Check, before any input is read, that an import may write the folder ``out``: a
    missing or empty folder, or an earlier output of any ``tiap import`` command (that
    step's :func:`tiap.io.check_output_folder` policy); anything else is refused
    (``error[stale-output]``) unless ``force``. Returns the folder.

        >>> check_import_folder("imported")
        PosixPath('imported')
        >>> Path("notes").mkdir(); _ = Path("notes/mine.txt").write_text("x")
        >>> check_import_folder("notes")
        Traceback (most recent call last):
        tiap.errors.TiapError: notes: the output folder is not empty and holds no manifest ...
    """
    found = output_step(out)
    return check_output_folder(out, found if is_import_step(found) else "import", force=force,
                               known=IMPORT_KNOWN)


def is_import_step(step: str | None) -> bool:
    """Whether a manifest's ``command`` is one of ``tiap import``'s (any system)."""
    return isinstance(step, str) and step.startswith("import")


@contextlib.contextmanager
def import_folder(out: str | Path, step: str, *, force: bool | None = None,
                  known: Iterable[str] = (), keep: Iterable[str] = ()) -> Iterator[Path]:
    """:func:`tiap.io.output_folder` for the output of ``step`` (``import <system>``): the
    folder is built aside and swapped in whole. An earlier output of any ``tiap import``
    command (another system's too) is replaced; anything else is refused with
    ``error[stale-output]`` unless ``force`` (default: :func:`forced`'s)."""
    force = _FORCE.get() if force is None else force
    found = None if force else output_step(out)
    if is_import_step(found) and is_import_step(step):
        step = found  # type: ignore[assignment]  # one command, whatever the system
    with output_folder(out, step, force=force, known=(*IMPORT_KNOWN, *known),
                       keep=keep) as tmp:
        yield tmp


def write_import(result: ImportResult, out: str | Path, *,
                 force: bool | None = None) -> LineageCoverage:
    """Write ``items.jsonl``, ``queries.jsonl``, ``run.jsonl``, ``lineage_coverage.json`` and
    ``manifest.json`` into ``out``, replacing it whole (:func:`import_folder`; ``force``:
    replace a folder that is not an import's output too)."""
    cov = lineage_coverage(result.items, result.queries, [result.run], result.findings)
    with import_folder(out, f"import {result.format}", force=force) as tmp:
        counts = {
            "items": write_items(tmp / "items.jsonl", result.items, store=result.system),
            "queries": write_queries(tmp / "queries.jsonl", result.queries),
            "rankings": write_jsonl_run(tmp / "run.jsonl", result.run),
        }
        write_coverage(tmp / COVERAGE_FILE, cov)
        Manifest.new(f"import {result.format}",
                     inputs=[input_entry(p) for p in result.inputs],
                     warnings=warnings_json(result.run.warnings),
                     outputs=["items.jsonl", "queries.jsonl", "run.jsonl", COVERAGE_FILE],
                     extra={"system": result.system, "store": result.system,
                            "format": result.format, "counts": counts},
                     ).write(tmp / "manifest.json")
    return cov


def coverage_of_folder(out: str | Path) -> LineageCoverage:
    """Lineage coverage of a folder an importer wrote (items.jsonl, queries.jsonl, run.jsonl).

    >>> rows = [{"type": "item", "item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]},
    ...         {"type": "item", "item_id": "m9", "kind": "fact", "sources": []},
    ...         {"type": "query", "query_id": "q1", "question": "?",
    ...          "evidence": ["c1:D1:1", "c1:D1:2"]},
    ...         {"type": "ranking", "query_id": "q1", "ranked": ["m9", "t1"]}]
    >>> _ = Path("export.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> _ = get_importer("generic").load()("export.jsonl", "imports/mine")
    >>> cov = coverage_of_folder("imports/mine")
    >>> cov.items, cov.no_source, cov.ranked_no_source, cov.unreached_evidence
    (2, ('m9',), 1, ('c1:D1:2',))
    """

    out = Path(out)
    queries = read_queries(out / "queries.jsonl") if (out / "queries.jsonl").exists() else []
    runs = read_run(out / "run.jsonl") if (out / "run.jsonl").exists() else []
    return lineage_coverage(read_items(out / "items.jsonl"), queries, runs)


@dataclass(frozen=True)
class Imported:
    """What :func:`run_import` did: ``result``, the importer's return value; ``out``, the
    folder it wrote; ``coverage``, the folder's ``lineage_coverage.json``
    (:meth:`LineageCoverage.to_json`).

    >>> rows = [{"type": "item", "item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]},
    ...         {"type": "query", "query_id": "q1", "question": "?", "evidence": ["c1:D1:1"]},
    ...         {"type": "ranking", "query_id": "q1", "ranked": ["t1"]}]
    >>> _ = Path("export.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> done = run_import("generic", "export.jsonl", "imported")
    >>> done.result.system, done.out, done.coverage["items_with_no_source"]
    ('export', PosixPath('imported'), 0)
    """

    result: Any
    out: Path
    coverage: Mapping[str, Any]


def run_import(name: str, path: str | Path, out: str | Path, *, force: bool = False,
               **options: Any) -> Imported:
    """Import ``path`` into the folder ``out`` with the importer registered as ``name``, as
    ``tiap import NAME`` does: the folder is checked before anything is read
    (:func:`check_import_folder`), the importer is called as ``fn(path, out, **options)``
    (an option given as ``None`` is left out: the importer's default), with ``force``
    reaching it whatever its signature (:func:`forced`), and the folder holds
    ``lineage_coverage.json`` afterwards, computed here (:func:`coverage_of_folder`) for an
    importer that does not write one.

    Returns an :class:`Imported`: the importer's result and the coverage.

        >>> rows = [{"type": "item", "item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]},
        ...         {"type": "item", "item_id": "m9", "kind": "fact", "sources": []},
        ...         {"type": "query", "query_id": "q1", "question": "?",
        ...          "evidence": ["c1:D1:1"]},
        ...         {"type": "ranking", "query_id": "q1", "ranked": ["m9", "t1"]}]
        >>> _ = Path("export.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in rows))
        >>> done = run_import("generic", "export.jsonl", "imported", system="mine", queries=None)
        >>> done.result.system, done.coverage["items_with_no_source"]
        ('mine', 1)
        >>> Path("notes").mkdir(); _ = Path("notes/mine.txt").write_text("x")
        >>> run_import("generic", "export.jsonl", "notes")
        Traceback (most recent call last):
        tiap.errors.TiapError: notes: the output folder is not empty and holds no manifest ...
    """
    fn = get_importer(name).load()
    check_import_folder(out, force=force)
    with forced(force):
        result = fn(path, out, **{k: v for k, v in options.items() if v is not None})
    file = Path(out) / COVERAGE_FILE
    if file.exists():
        coverage = json.loads(file.read_text(encoding="utf-8"))
    else:  # an importer that writes its own folder: add the report
        cov = coverage_of_folder(out)
        write_coverage(file, cov)
        coverage = cov.to_json()
    return Imported(result=result, out=Path(out), coverage=coverage)


# --------------------------------------------------------------------------------------------
# Checks every importer makes (docs/import.md, "What every import checks")
# --------------------------------------------------------------------------------------------


def require_queries(n_queries: int, file: str | Path, what: str = "rankings") -> None:
    """An import of nothing is an error, never an empty folder and exit status 0."""
    if n_queries == 0:
        name = Path(file).name or str(file)
        raise TiapError(f"no queries in {name}: it holds no {what}, so there is nothing to "
                        "import (is it the right file?)", file=file)


def named_units(item: Item) -> tuple[str, ...]:
    """The units an item's own lineage names: its sources, then its possible sources."""
    u = item.uncertain
    extra: tuple[str, ...] = ()
    if u is not None:
        extra = (*(u.possible or ()), *u.excluded, *(x for r in u.requires for x in r))
    return tuple(dict.fromkeys((*item.sources, *extra)))


def check_units(
    items: Iterable[Item],
    units: Iterable[str] | Callable[[str], bool] | None,
    probs: Problems,
    where: Callable[[Item], tuple[str | Path | None, int | None]],
    dataset: str = "the dataset",
) -> None:
    """A source unit an item names (certain, possible, excluded or required) that is no
    unit of the dataset is a located ``invalid-value`` problem: such a source can never be
    evidence, so the item would be counted as sourced while no target could credit it.
    ``where(item)`` gives the file and line to name; ``units`` ``None``: nothing to check
    against (no dataset given)."""
    if units is None:
        return
    unit_set = None if callable(units) else set(units)
    known = units if unit_set is None else unit_set.__contains__
    example: str | None = None
    for it in items:
        bad = [u for u in named_units(it) if not known(u)]  # type: ignore[operator]
        if not bad:
            continue
        if example is None and unit_set:
            example = min(unit_set)
        file, line = where(it)
        shown = ", ".join(repr(u) for u in bad[:5]) + (f" and {len(bad) - 5} more"
                                                      if len(bad) > 5 else "")
        probs.add(f"source {shown} of this item names no unit of {dataset}"
                  + (f" (units look like {example!r})" if example else "")
                  + "; give the dataset's unit ids, or \"sources\": [] for an item that "
                  "derives from none of them",
                  line, record=it.item_id, file=file, code="invalid-value")


# --------------------------------------------------------------------------------------------
# Queries from a dataset or a queries.jsonl (shared by the importers)
# --------------------------------------------------------------------------------------------


def external_queries(
    dataset: str | None = None,
    queries_path: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> tuple[dict[str, Query], Path | None]:
    """The queries an import is scored against, by id: from ``queries_path`` (a
    ``queries.jsonl``) or from a registered dataset (``locomo``, ...). Returns them with the
    file read (for the manifest; ``None`` for a dataset)."""
    if dataset is not None and queries_path is not None:
        raise TiapError("give the queries one way: --dataset or --queries, not both")
    if queries_path is not None:
        return {q.query_id: q for q in read_queries(queries_path)}, Path(queries_path)
    if dataset is None:
        raise TiapError("no queries: give --dataset ID (e.g. locomo) or --queries queries.jsonl")

    return {q.query_id: q for q in load(dataset, data_dir).queries_iter()}, None


def dataset_units(dataset: str | None, data_dir: str | Path | None = None) -> set[str] | None:
    """The source unit ids of a registered dataset (``None`` without one): what an item's
    sources are checked against (:func:`check_units`)."""
    if dataset is None:
        return None

    return {t.unit_id for t in load(dataset, data_dir).turns_iter()}
