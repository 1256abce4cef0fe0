"""Import Mem0 search results, with the lineage their metadata carries.

Mem0 (PyPI ``mem0ai``) answers ``Memory.search(query, filters={"user_id": ...})`` with
``{"results": [{"id", "memory", "metadata", "score", ...}, ...]}``, best first. A harness that
wrote the source unit ids of the turns it fed into each ``add()`` call into that call's
``metadata`` gets them back on every memory the call produced, raw or derived. This module
turns saved search results into TIAP's interchange files: ``items.jsonl`` (one item per
Mem0 memory, with its sources), ``queries.jsonl``, ``run.jsonl`` (JSONL rankings in Mem0's
order, with Mem0's scores) and a report of what lineage is missing.

The saved-results format (``docs/mem0.md``)
------------------------------------------
JSONL, one query a line (or a JSON document holding a list of such objects)::

    {"query_id": "conv-26:q0", "collection": "conv-26",
     "question": "When did Caroline go to the LGBTQ support group?",      # optional
     "answer": "7 May 2023", "category": "2", "evidence": ["conv-26:D1:3"],  # optional
     "results": [{"id": "8bdb45fc-...", "memory": "Caroline: I went to ...",
                  "metadata": {"source_ids": ["conv-26:D1:3"], "tiap_kind": "raw"},
                  "score": 0.55}, ...]}

- ``results`` is the list Mem0's ``search`` returned, or that whole return value
  (``{"results": [...]}``); its order is the rank order (authoritative, never re-sorted).
- ``metadata[sources_key]`` (default ``source_ids``) holds the memory's source unit ids: a
  list, or one id as a string: its lineage, exactly (the memory derives from each of them).
- ``metadata[window_key]`` (default ``source_window``) says the memory came from an
  ``add()`` call over several turns and Mem0 does not say which: the memory derives from at
  least one of these units and from none outside them (and ``source_ids``, if given, which it
  certainly derives from). It becomes partial lineage (:mod:`tiap.memory.store`):
  ``sources`` = ``source_ids`` (or the window's one unit left, when that is all it can be),
  ``uncertain`` = ``{"possible_sources": [the other window units], "requires": [[them]]}``
  (``requires`` only while ``source_ids`` meets no unit of the window); rescoring gives the
  values this determines and ``[lower, upper]`` intervals elsewhere.
- A memory with neither has no recoverable source: it is imported with empty ``sources``
  (it can be credited under no target) and listed in the report.
- ``metadata[kind_key]`` (default ``tiap_kind``) names the item's kind (``raw`` for a turn
  stored verbatim with ``infer=False``); absent, the kind is ``default_kind``
  (``mem0_fact``: a memory Mem0's LLM derived).
- ``collection`` (else the memory's ``user_id``) names the retrieval universe.
- ``question``, ``answer``, ``category`` and ``evidence`` build ``queries.jsonl`` when no
  dataset or queries file is given.

An optional *memories file* (the store's full content, e.g. ``get_all`` per user) adds the
memories no query retrieved: JSONL of Mem0 memory objects (``id``, ``memory``,
``metadata``, optional ``user_id``/``collection``), or lines ``{"collection": ...,
"results": [...]}``. Without it the store is known only through what was retrieved, so a
turn's family (and with it the Source and Canonical groups) holds only retrieved memories;
the report says so.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tiap.datasets import DataSource, load
from tiap.datasets.base import Dataset
from tiap.datasets.queryfile import query_from_json, read_queries, write_queries
from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.importers import (
    COVERAGE_FILE,
    IMPORT_KNOWN,
    check_units,
    coverage_json,
    import_folder,
    lineage_coverage,
    require_queries,
)
from tiap.io import iter_jsonl, open_text, output_folder, read_json
from tiap.memory.store import RAW_KIND, Item, Uncertainty, stamp_store, write_items
from tiap.provenance import Manifest, input_entry
from tiap.runs import Ranking, Run, warnings_json, write_jsonl_run
from tiap.runs.formats import RunWarnings, dedup_ranking

__all__ = [
    "DEFAULT_KIND",
    "DEFAULT_KIND_KEY",
    "DEFAULT_SOURCES_KEY",
    "DEFAULT_WINDOW_KEY",
    "Mem0Import",
    "Mem0Report",
    "import_mem0_results",
    "read_mem0_import",
    "window_lineage",
    "write_mem0_import",
]

DEFAULT_SOURCES_KEY = "source_ids"
DEFAULT_WINDOW_KEY = "source_window"
DEFAULT_KIND_KEY = "tiap_kind"
DEFAULT_KIND = "mem0_fact"
DEFAULT_SYSTEM = "mem0"
MAX_LISTED = 200  # ids listed per report entry (the rest are counted)


@dataclass(frozen=True)
class Mem0Report:
    """What the import found, and what lineage is missing.

    ``items_without_source``: memories whose metadata gives no source unit id (never
    credited). ``partial_lineage_items``: memories of a window whose lineage is only bounded
    (one or more of the window's units, Mem0 does not say which). ``raw_not_single``: raw
    items without exactly one certain source. ``retrieved_not_in_memories``: retrieved
    memories missing from the memories file. ``duplicates_dropped``: repeated results
    dropped (also the run's ``duplicate_dropped`` warning, in the manifest). A source naming
    no unit of the dataset is an error (when the units are known), not a finding.
    """

    results_file: str
    memories_file: str | None
    system: str
    queries: int
    items: int
    kinds: dict[str, int]
    retrieved_items: int
    items_without_source: tuple[str, ...]
    partial_lineage_items: tuple[str, ...] = ()
    raw_not_single: tuple[str, ...] = ()
    retrieved_not_in_memories: tuple[str, ...] = ()
    duplicates_dropped: int = 0
    queries_without_scores: tuple[str, ...] = ()
    queries_without_evidence: tuple[str, ...] = ()
    depth: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def counts(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "items": self.items,
            "kinds": dict(self.kinds),
            "retrieved_items": self.retrieved_items,
            "items_without_source": len(self.items_without_source),
            "partial_lineage_items": len(self.partial_lineage_items),
            "raw_not_single": len(self.raw_not_single),
            "retrieved_not_in_memories": len(self.retrieved_not_in_memories),
            "duplicates_dropped": self.duplicates_dropped,
            "queries_without_scores": len(self.queries_without_scores),
            "queries_without_evidence": len(self.queries_without_evidence),
            "depth": dict(self.depth),
        }

    def to_json(self) -> dict[str, Any]:
        def listed(ids: tuple[Any, ...]) -> list[Any]:
            return [list(i) if isinstance(i, tuple) else i for i in ids[:MAX_LISTED]]

        return {
            "results_file": self.results_file,
            "memories_file": self.memories_file,
            "system": self.system,
            "counts": self.counts(),
            "items_without_source": listed(self.items_without_source),
            "partial_lineage_items": listed(self.partial_lineage_items),
            "raw_not_single": listed(self.raw_not_single),
            "retrieved_not_in_memories": listed(self.retrieved_not_in_memories),
            "queries_without_scores": listed(self.queries_without_scores),
            "queries_without_evidence": listed(self.queries_without_evidence),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Mem0Import:
    """An imported Mem0 run: the store's items with lineage, the queries, the run, a report."""

    items: tuple[Item, ...]
    queries: tuple[Query, ...]
    run: Run
    report: Mem0Report

    def __post_init__(self) -> None:  # the store is the system's: items and run name it
        object.__setattr__(self, "items", stamp_store(self.items, self.report.system))
        if self.run.store != self.report.system:
            object.__setattr__(self, "run", replace(self.run, store=self.report.system))


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line, object)`` from a JSONL file, or ``(index, object)`` from a JSON list."""
    with open_text(path) as fh:
        head = ""
        while not head and (chunk := fh.read(4096)):
            head = chunk.lstrip()[:1]
    if head == "[":
        doc = read_json(path)
        yield from enumerate(doc, start=1)
    else:
        yield from iter_jsonl(path)


@dataclass(frozen=True)
class _Memory:
    item: Item
    line: int
    file: str | None


def _sources(value: Any) -> tuple[str, ...] | None:
    """Source ids from a metadata value: a list of ids, or one id; None if malformed."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, int) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                       for v in value):
        return tuple(dict.fromkeys(str(v) for v in value if str(v)))
    return None


def window_lineage(sources: tuple[str, ...], window: tuple[str, ...],
                   ) -> tuple[tuple[str, ...], Uncertainty | None]:
    """The lineage a memory's metadata proves: it derives from every unit of ``sources`` and
    from at least one unit of ``window``, and from no other unit. Returns its certain sources
    and what is left open (``None``: nothing, the lineage is exact)."""
    rest = tuple(u for u in window if u not in sources)
    if not rest:
        return sources, None
    if len(rest) < len(window):  # the window's requirement is met by a certain source
        return sources, Uncertainty(possible=rest)
    if len(rest) == 1:
        return (*sources, rest[0]), None
    return sources, Uncertainty(possible=rest, requires=(rest,))


class _Reader:
    def __init__(self, sources_key: str, kind_key: str, default_kind: str,
                 window_key: str = DEFAULT_WINDOW_KEY) -> None:
        self.sources_key = sources_key
        self.window_key = window_key
        self.kind_key = kind_key
        self.default_kind = default_kind
        self.memories: dict[str, _Memory] = {}

    def memory(self, obj: Any, collection: str | None, line: int, probs: Problems,
               query_id: str | None = None) -> str | None:
        """Record one Mem0 memory object; returns its id (None when unusable)."""
        if not isinstance(obj, dict):
            probs.add("a Mem0 memory must be a JSON object", line, query_id)
            return None
        mid = obj.get("id")
        if not isinstance(mid, (str, int)) or isinstance(mid, bool) or str(mid) == "":
            probs.add("a Mem0 memory has no 'id'", line, query_id)
            return None
        mid = str(mid)
        if any(c.isspace() for c in mid):
            probs.add("memory ids may not contain whitespace", line, query_id, mid)
            return None
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            probs.add("field 'metadata' must be a JSON object", line, query_id, mid)
            return None
        sources = _sources(meta.get(self.sources_key))
        window = _sources(meta.get(self.window_key))
        if sources is None or window is None:
            for key, got in ((self.sources_key, sources), (self.window_key, window)):
                if got is None:
                    probs.add(f"metadata {key!r} must be a list of source unit ids (or one id)",
                              line, query_id, mid)
            return None
        certain, uncertain = window_lineage(sources, window)
        kind = meta.get(self.kind_key) or self.default_kind
        coll = obj.get("collection") or collection or obj.get("user_id")
        text = obj.get("memory")
        item = Item(mid, str(kind), certain, text=None if text is None else str(text),
                    collection=None if coll is None else str(coll), uncertain=uncertain)
        seen = self.memories.get(mid)
        if seen is None:
            self.memories[mid] = _Memory(item, line, probs.file)
        elif _lineage_of(seen.item) != _lineage_of(item):
            probs.add(f"memory {mid} has other sources or kind than on "
                      f"{seen.file}:{seen.line} ({_describe(seen.item)} "
                      f"vs {_describe(item)})", line, query_id, mid, code="duplicate")
        return mid


def _lineage_of(item: Item) -> tuple[Any, ...]:
    return item.kind, item.sources, item.uncertain


def _describe(item: Item) -> str:
    if item.uncertain is None or item.uncertain.possible is None:
        return str(list(item.sources))
    return f"{list(item.sources)} + one or more of {list(item.uncertain.possible)}"


@dataclass(frozen=True)
class _QueryRow:
    query_id: str
    line: int
    obj: dict[str, Any]
    ids: tuple[str, ...]
    scores: tuple[float, ...] | None
    dropped: int
    latency_ms: float | None = None


def _result_list(obj: dict[str, Any]) -> Any:
    res = obj.get("results")
    if isinstance(res, dict):  # the whole return value of Memory.search
        res = res.get("results")
    return res


def _read_results(path: Path, reader: _Reader, system: str = DEFAULT_SYSTEM,
                  warns: RunWarnings | None = None) -> list[_QueryRow]:
    probs = Problems(str(path))
    warns = RunWarnings() if warns is None else warns
    rows: list[_QueryRow] = []
    seen: dict[str, int] = {}
    for line, obj in _records(path):
        if not isinstance(obj, dict):
            probs.add("each query must be a JSON object", line)
            continue
        qid = obj.get("query_id")
        if not isinstance(qid, (str, int)) or isinstance(qid, bool) or str(qid) == "":
            probs.add("query has no 'query_id'", line)
            continue
        qid = str(qid)
        if qid in seen:
            probs.add(f"duplicate query id (first on line {seen[qid]})", line, qid,
                      code="duplicate")
            continue
        seen[qid] = line
        res = _result_list(obj)
        if not isinstance(res, list):
            probs.add("field 'results' must be the list Mem0's search returned "
                      "(or {\"results\": [...]})", line, qid)
            continue
        coll = obj.get("collection")
        coll = None if coll is None else str(coll)
        ids: list[str] = []
        scores: list[float | None] = []
        ok = True
        for pos, r in enumerate(res, start=1):
            mid = reader.memory(r, coll, line, probs, qid)
            if mid is None:
                ok = False  # reported; dropping it would move the later results up
                continue
            ids.append(mid)
            score = r.get("score")
            if score is None:  # a harness that kept no score: counted, the order still holds
                scores.append(None)
            elif (isinstance(score, (int, float)) and not isinstance(score, bool)
                    and math.isfinite(score)):
                scores.append(float(score))
            else:
                probs.add(f"memory {mid!r} has score {score!r}, not a finite number "
                          f"(rank {pos})", line, qid)
                ok = False
        if not ok:
            continue
        latency = obj.get("latency_ms")
        if latency is not None and (isinstance(latency, bool)
                                    or not isinstance(latency, (int, float))
                                    or not math.isfinite(latency) or latency < 0):
            probs.add(f"'latency_ms' is {latency!r}, not a number of milliseconds >= 0",
                      line, qid)
            continue
        n_scored = sum(v is not None for v in scores)
        if 0 < n_scored < len(scores):
            probs.add(f"{n_scored} of the {len(scores)} results have a 'score' (first "
                      f"without: rank {scores.index(None) + 1}); keep Mem0's score on every "
                      "result or on none", line, qid)
            continue
        # Mem0 should never return a memory twice: keep the first, counted and printed
        keep = dedup_ranking(ids, query_id=qid, system=system, dedup="first", probs=probs,
                             warns=warns, file=path, lines=[line] * len(ids)) or []
        rows.append(_QueryRow(qid, line, obj, tuple(ids[i] for i in keep),
                              tuple(float(scores[i]) for i in keep)  # type: ignore[arg-type]
                              if n_scored else None, len(ids) - len(keep),
                              None if latency is None else float(latency)))
    probs.raise_if_any()
    require_queries(len(rows), path, "query results")
    return rows


def _read_memories(path: Path, reader: _Reader) -> set[str]:
    probs = Problems(str(path))
    ids: set[str] = set()
    for line, obj in _records(path):
        if isinstance(obj, dict) and "id" not in obj and "results" in obj:
            res = _result_list(obj)
            if not isinstance(res, list):
                probs.add("field 'results' must be a list of Mem0 memories", line)
                continue
            coll = obj.get("collection") or obj.get("user_id")
            for r in res:
                mid = reader.memory(r, None if coll is None else str(coll), line, probs)
                if mid is not None:
                    ids.add(mid)
        else:
            mid = reader.memory(obj, None, line, probs)
            if mid is not None:
                ids.add(mid)
    probs.raise_if_any()
    return ids


# --------------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------------


def _queries_from_rows(path: Path, rows: list[_QueryRow]) -> dict[str, Query]:
    out: dict[str, Query] = {}
    for r in rows:
        obj = {k: v for k, v in r.obj.items() if k not in ("results",)}
        out[r.query_id] = query_from_json(obj, file=path, line=r.line)
    return out


def _query_index(queries: Dataset | str | Path | Iterable[Query]) -> dict[str, Query]:
    if isinstance(queries, Dataset):
        return {q.query_id: q for q in queries.queries_iter()}
    if isinstance(queries, (str, Path)):
        return {q.query_id: q for q in read_queries(queries)}
    return {q.query_id: q for q in queries}


# --------------------------------------------------------------------------------------------
# The import
# --------------------------------------------------------------------------------------------


def read_mem0_import(
    path: str | Path,
    *,
    memories: str | Path | None = None,
    queries: Dataset | str | Path | Iterable[Query] | None = None,
    units: Iterable[str] | None = None,
    system: str = DEFAULT_SYSTEM,
    sources_key: str = DEFAULT_SOURCES_KEY,
    kind_key: str = DEFAULT_KIND_KEY,
    default_kind: str = DEFAULT_KIND,
    window_key: str = DEFAULT_WINDOW_KEY,
) -> Mem0Import:
    """Read saved Mem0 search results (and optionally the store's memories) into TIAP records.

    Args:
        path: the saved search results (format in the module docstring).
        memories: the store's full content (every memory, retrieved or not).
        queries: where the queries come from: a :class:`~tiap.datasets.Dataset`, a
            ``queries.jsonl`` path, or :class:`~tiap.datasets.Query` records; ``None``: the
            results file's own ``question``/``evidence``/... fields. Every query id of the
            results must be found there; the queries keep the results file's order.
        units: the dataset's source unit ids, to report sources that name none of them
            (taken from ``queries`` when it is a dataset).
        system: the run's system name.
        sources_key / kind_key / default_kind / window_key: where the lineage and kind are
            in ``metadata`` (``window_key``: the units of a window the memory derives from
            one or more of, module docstring).

    Returns:
        A :class:`Mem0Import`. Items are the memories file's in its order, then retrieved
        memories it lacks, in order of first retrieval.
    """
    path = Path(path)
    reader = _Reader(sources_key, kind_key, default_kind, window_key)
    mem_ids: set[str] | None = None
    if memories is not None:
        mem_ids = _read_memories(Path(memories), reader)
    warns = RunWarnings()
    rows = _read_results(path, reader, system, warns)

    if queries is None:
        index = _queries_from_rows(path, rows)
    else:
        index = _query_index(queries)
    probs = Problems(str(path))
    out_queries: list[Query] = []
    for r in rows:
        q = index.get(r.query_id)
        if q is None:
            probs.add("query id not found among the queries given", r.line, r.query_id)
            continue
        out_queries.append(q)
    probs.raise_if_any()

    rankings = [Ranking(r.query_id, system, r.ids, r.scores, r.latency_ms) for r in rows]
    run = Run(system, tuple(rankings), source=path, format="mem0", warnings=warns.freeze())

    items = [m.item for m in reader.memories.values()]
    retrieved = {i for r in rows for i in r.ids}
    if units is None and isinstance(queries, Dataset):
        units = (t.unit_id for t in queries.turns_iter())
    # a source naming no unit would count the memory as sourced, yet no target credits it
    check_units(items, units, probs,
                lambda it: (reader.memories[it.item_id].file, reader.memories[it.item_id].line))
    probs.raise_if_any()
    depths = [len(r.ids) for r in rows]
    notes: list[str] = []
    if mem_ids is None:
        notes.append("no memories file: the store is known only through retrieved memories, "
                     "so families (Source/Canonical groups) hold only retrieved items")
    report = Mem0Report(
        results_file=str(path),
        memories_file=None if memories is None else str(memories),
        system=system,
        queries=len(rows),
        items=len(items),
        kinds=dict(sorted(Counter(i.kind for i in items).items())),
        retrieved_items=len(retrieved),
        items_without_source=tuple(i.item_id for i in items
                                   if not i.sources and i.uncertain is None),
        partial_lineage_items=tuple(i.item_id for i in items if i.uncertain is not None),
        raw_not_single=tuple(i.item_id for i in items
                             if i.kind == RAW_KIND and len(i.sources) != 1),
        retrieved_not_in_memories=() if mem_ids is None else tuple(
            i for i in dict.fromkeys(x for r in rows for x in r.ids) if i not in mem_ids),
        duplicates_dropped=sum(r.dropped for r in rows),
        queries_without_scores=tuple(r.query_id for r in rows if r.scores is None and r.ids),
        queries_without_evidence=tuple(q.query_id for q in out_queries if not q.evidence),
        depth={"min": min(depths, default=0), "max": max(depths, default=0),
               "queries_below_max": sum(d < max(depths, default=0) for d in depths)},
        notes=tuple(notes),
    )
    return Mem0Import(tuple(items), tuple(out_queries), run, report)


#: The manifest ``command`` of ``tiap import mem0``.
IMPORT_STEP = "import mem0"


def write_mem0_import(imp: Mem0Import, out: str | Path, *,
                      manifest_extra: Mapping[str, Any] | None = None,
                      force: bool | None = None, step: str | None = None,
                      keep: Sequence[str] = ()) -> dict[str, int]:
    """Write ``items.jsonl``, ``queries.jsonl``, ``run.jsonl``, ``mem0_report.json``,
    ``lineage_coverage.json`` and ``manifest.json`` into ``out``, built aside and swapped in
    whole when complete: no file of an earlier import survives, and a folder that is not an
    import's output is refused (``error[stale-output]``) unless ``force``
    (:func:`tiap.importers.import_folder`).

    ``step`` (default ``import mem0``) is the manifest's ``command``; a step of its own (the
    harness's ``mem0-run``) replaces only its own earlier output. ``keep`` names entries of
    ``out`` that survive the swap (the harness's resumable Mem0 stores); they are listed
    among the outputs.

    Returns:
        The number of lines written per file.
    """
    counts: dict[str, int] = {}
    rep = imp.report
    folder = (import_folder(out, IMPORT_STEP, force=force) if step is None else
              output_folder(out, step, force=bool(force), known=IMPORT_KNOWN, keep=keep))
    with folder as tmp:
        counts["items"] = write_items(tmp / "items.jsonl", imp.items, store=rep.system)
        counts["queries"] = write_queries(tmp / "queries.jsonl", imp.queries)
        counts["rankings"] = write_jsonl_run(tmp / "run.jsonl", imp.run)
        (tmp / "mem0_report.json").write_text(
            json.dumps(rep.to_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8")
        cov = lineage_coverage(imp.items, imp.queries, [imp.run], rep.counts())
        (tmp / COVERAGE_FILE).write_text(coverage_json(cov), encoding="utf-8")
        inputs = [input_entry(rep.results_file)]
        if rep.memories_file is not None:
            inputs.append(input_entry(rep.memories_file))
        Manifest.new(step or IMPORT_STEP, inputs=inputs,
                     warnings=warnings_json(imp.run.warnings),
                     outputs=["items.jsonl", "queries.jsonl", "run.jsonl", "mem0_report.json",
                              COVERAGE_FILE, *keep],
                     extra={"system": rep.system, "store": rep.system,
                            "counts": {**counts, "report": rep.counts()},
                            **(manifest_extra or {})},
                     ).write(tmp / "manifest.json")
    return counts


def import_mem0_results(
    path: str | Path,
    out_dir: str | Path | None,
    *,
    memories: str | Path | None = None,
    queries: Dataset | str | Path | Iterable[Query] | None = None,
    units: Iterable[str] | None = None,
    system: str = DEFAULT_SYSTEM,
    sources_key: str = DEFAULT_SOURCES_KEY,
    kind_key: str = DEFAULT_KIND_KEY,
    default_kind: str = DEFAULT_KIND,
    window_key: str = DEFAULT_WINDOW_KEY,
    manifest_extra: Mapping[str, Any] | None = None,
    force: bool | None = None,
    step: str | None = None,
    keep: Sequence[str] = (),
    dataset: str | None = None,
    data_dir: str | Path | None = None,
    verify: bool = True,
) -> Mem0Import:
    """:func:`read_mem0_import`, then :func:`write_mem0_import` into ``out_dir`` (unless None;
    ``force``, ``step`` and ``keep`` are its).

    ``dataset``: a registered dataset whose queries are used (instead of ``queries``, not
    with it), read from ``data_dir`` (``verify``: check the files' pinned sha256).

    One query, whose one result is a memory derived from turn ``c1:D1:1``::

        >>> import json
        >>> row = {"query_id": "q1", "collection": "c1", "question": "Where does Ann live?",
        ...        "evidence": ["c1:D1:1"],
        ...        "results": [{"id": "m1", "memory": "Ann lives in Oslo", "score": 0.9,
        ...                     "metadata": {"source_ids": ["c1:D1:1"]}}]}
        >>> _ = Path("results.jsonl").write_text(json.dumps(row) + "\\n")
        >>> imp = import_mem0_results("results.jsonl", "imported")
        >>> {k: imp.report.counts()[k] for k in ("queries", "items", "items_without_source")}
        {'queries': 1, 'items': 1, 'items_without_source': 0}
        >>> sorted(p.name for p in Path("imported").iterdir())  # doctest: +ELLIPSIS
        ['items.jsonl', 'lineage_coverage.json', 'manifest.json', ..., 'run.jsonl']
    """
    if dataset is not None:
        if queries is not None:
            raise TiapError("give the queries one way: --dataset or --queries, not both")

        queries = load(dataset, source=DataSource(data_dir, verify=verify))
    imp = read_mem0_import(path, memories=memories, queries=queries, units=units, system=system,
                           sources_key=sources_key, kind_key=kind_key, default_kind=default_kind,
                           window_key=window_key)
    if out_dir is not None:
        write_mem0_import(imp, out_dir, manifest_extra=manifest_extra, force=force, step=step,
                          keep=keep)
    return imp
