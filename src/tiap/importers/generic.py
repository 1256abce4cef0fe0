"""``tiap import generic``: one JSONL file any system can export to (``docs/import.md``).

One JSON object a line, told apart by ``type``::

    {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["conv-26:D1:3"], "text": "..."}
    {"type": "item", "item_id": "f1", "kind": "fact", "parents": ["t1"], "text": "..."}
    {"type": "query", "query_id": "q1", "question": "...", "evidence": ["conv-26:D1:3"]}
    {"type": "ranking", "query_id": "q1", "ranked": [{"item_id": "f1", "score": 0.9}, "t1"]}

``item`` records are ``items.jsonl`` rows (``item_id``, ``kind``, ``sources``, optional
``parents``, ``serving``, ``text``, ``collection``, ``uncertain``, ``placeholder`` and any
extra field), read by :func:`tiap.memory.store.item_from_json`; ``query`` records are
``queries.jsonl`` rows. ``ranking`` records give one query's ranked list, best first: each
entry an item id or ``{"item_id", "score"}`` (scores on all entries or none). The list order
is the rank order. Every ranked id must have an ``item`` record. Records may come in any
order. Queries come from the ``query`` records, or else from ``--queries`` / ``--dataset``
(then only the ranked queries are kept).

Partial lineage is said as it is known (:mod:`tiap.memory.store`): ``sources`` the units the
item certainly derives from, ``uncertain`` what else it may derive from
(``possible_sources``: a list, or ``"any"`` unit of its collection minus
``excluded_sources``; ``requires``: lists each holding at least one unit of its lineage;
``max_sources``; ``exclusive``), and ``placeholder`` an item that stands for unseen items of
that lineage (never ranked). An item whose origin is unknown altogether is given
``"sources": [], "uncertain": {"possible_sources": "any"}`` (rescoring then bounds what it
may be worth); with ``"sources": []`` alone it is an item that certainly reaches no unit,
counted and listed as having no source. Checked besides the schema: a ranked placeholder, and
partial lineage that no lineage can satisfy (a ``requires`` list none of whose units the item
may reach, more certain sources than ``max_sources``, ``max_sources`` too small for the
``requires`` lists), each with its line.

Every problem in the file is reported together, each naming the file, line and query:
bad lines and records, references between records, lineage, units of ``--dataset`` and the
queries the rankings are for are all checked before the one error is raised (the first 50
listed, the rest counted). A key a record does not have is an error suggesting the nearest
key (:mod:`tiap.fields`): ranking records hold only ``type``, ``query_id``, ``ranked``, and
ranked entries only ``item_id``, ``score``; item and query records keep other keys as
metadata but refuse a near miss of a known one (``"sorces"``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tiap.datasets.queryfile import query_from_json
from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.fields import key_problems, nearest
from tiap.importers import (
    ImportResult,
    check_units,
    dataset_units,
    external_queries,
    require_queries,
    write_import,
)
from tiap.io import iter_jsonl
from tiap.memory.store import Item, item_from_json
from tiap.runs import Ranking, Run
from tiap.runs.formats import RunWarnings, dedup_ranking
from tiap.targets.lineage import Lineage, PossibleLineage, build_lineage

__all__ = ["RECORD_TYPES", "import_generic", "lineage_problems", "partial_lineage_findings",
           "read_generic"]

RECORD_TYPES = ("item", "query", "ranking")
#: The keys of a ranking record and of a ranked entry object: no other key is read.
RANKING_KEYS = ("type", "query_id", "ranked")
ENTRY_KEYS = ("item_id", "score")
_LISTED = 1000  # ids listed per finding (all are counted)


def _ranked(entries: Any, path: Path, line: int, qid: str, probs: Problems, system: str
            ) -> tuple[list[str], list[float] | None] | None:
    if not isinstance(entries, list):
        probs.add("'ranked' must be a list of item ids or {\"item_id\", \"score\"} objects",
                  line, qid)
        return None
    ids: list[str] = []
    scores: list[float | None] = []
    ok = True
    for pos, e in enumerate(entries, start=1):
        if isinstance(e, str):
            iid, score = e, None
        elif isinstance(e, dict) and isinstance(e.get("item_id"), (str, int)) \
                and not isinstance(e["item_id"], bool):
            unknown = key_problems(e, ENTRY_KEYS, "a ranked entry")
            for message in unknown:
                probs.add(f"rank {pos}: {message}", line, qid)
            if unknown:
                ok = False
                continue
            iid, score = str(e["item_id"]), e.get("score")
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                      or not math.isfinite(score)):
                probs.add(f"rank {pos}: score {score!r} is not a finite number", line, qid)
                ok = False
                continue
        else:
            probs.add(f"rank {pos}: expected an item id or {{\"item_id\", \"score\"}}, got {e!r}",
                      line, qid)
            ok = False
            continue
        if not iid:
            probs.add(f"rank {pos}: empty item id", line, qid)
            ok = False
            continue
        ids.append(iid)
        scores.append(None if score is None else float(score))
    if not ok:
        return None
    if len(set(ids)) != len(ids):  # the rank order is the data: a repeat is an error
        keep = dedup_ranking(ids, query_id=qid, system=system, dedup="error", probs=probs,
                             warns=RunWarnings(), file=path, lines=[line] * len(ids),
                             hint="remove the repeat: the rank order is the data")
        if keep is None:
            return None
    given = [s for s in scores if s is not None]
    if given and len(given) != len(scores):
        probs.add("some ranked entries have a score and others do not", line, qid)
        return None
    return ids, (given if given else None)


def read_generic(
    path: str | Path,
    *,
    system: str | None = None,
    dataset: str | None = None,
    queries_path: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> ImportResult:
    """Read and validate a generic export (module docstring); nothing is written.

    Raises:
        TiapError: every problem found, each naming the file, line and query or item.
    """
    path = Path(path)
    system = system or _stem(path)
    probs = Problems(path)
    items: list[Item] = []
    item_line: dict[str, int] = {}
    unread: set[str] = set()  # ids of item and query records refused above: not "missing"
    queries: list[Query] = []
    query_line: dict[str, int] = {}
    query_records = 0
    rankings: list[tuple[int, str, list[str], list[float] | None]] = []
    ranking_line: dict[str, int] = {}
    for line, obj in iter_jsonl(path, probs):
        if not isinstance(obj, dict):
            probs.add("a record must be a JSON object", line)
            continue
        kind = obj.get("type")
        body = {k: v for k, v in obj.items() if k != "type"}
        if kind == "item":
            try:
                it = item_from_json(body, file=path, line=line, require_sources=False)
            except TiapError as exc:
                probs.extend(exc)
                if isinstance(body.get("item_id"), (str, int)):
                    unread.add(str(body["item_id"]))
                continue
            if it.item_id in item_line:
                probs.add(f"duplicate item id (first on line {item_line[it.item_id]})",
                          line, record=it.item_id, code="duplicate")
                continue
            item_line[it.item_id] = line
            items.append(it)
        elif kind == "query":
            query_records += 1
            try:
                q = query_from_json(body, file=path, line=line)
            except TiapError as exc:
                probs.extend(exc)
                if isinstance(body.get("query_id"), (str, int)):
                    unread.add(str(body["query_id"]))
                continue
            if q.query_id in query_line:
                probs.add(f"duplicate query id (first on line {query_line[q.query_id]})",
                          line, q.query_id, code="duplicate")
                continue
            query_line[q.query_id] = line
            queries.append(q)
        elif kind == "ranking":
            qid = body.get("query_id")
            if isinstance(qid, bool) or not isinstance(qid, (str, int)) or qid == "":
                probs.add("ranking has no 'query_id'", line)
                continue
            qid = str(qid)
            for message in key_problems(obj, RANKING_KEYS, "a ranking record"):
                probs.add(message, line, qid)
            if qid in ranking_line:
                probs.add(f"query ranked twice (first on line {ranking_line[qid]})", line, qid,
                          code="duplicate")
                continue
            ranking_line[qid] = line
            got = _ranked(body.get("ranked"), path, line, qid, probs, system)
            if got is not None:
                rankings.append((line, qid, *got))
        else:
            near = [k for k in obj if k != "type" and nearest(k, ("type",)) == "type"]
            probs.add(f"unknown record type {kind!r}; expected one of "
                      f"{', '.join(RECORD_TYPES)} in the field 'type'"
                      + (f" (is {near[0]!r} meant to be 'type'?)"
                         if "type" not in obj and near else ""),
                      line)

    # references between records: dangling parents, ranked ids with no item record
    for it in items:
        for p in it.parents:
            if p not in item_line and p not in unread:
                probs.add(f"parent {p!r} is not an item", item_line[it.item_id], record=it.item_id)
    placeholders = {it.item_id for it in items if it.placeholder is not None}
    for line, qid, ids, _ in rankings:
        for pos, iid in enumerate(ids, start=1):
            if iid in unread:
                continue
            if iid not in item_line:
                probs.add(f"rank {pos}: {iid!r} has no item record (give it one; if its "
                          "lineage is unknown, \"sources\": [] with \"uncertain\": "
                          "{\"possible_sources\": \"any\"})",
                          line, qid)
            elif iid in placeholders:
                probs.add(f"rank {pos}: {iid!r} is a placeholder (it stands for unseen items "
                          "and is never ranked)", line, qid)
    if query_records and (dataset is not None or queries_path is not None):
        probs.add("the file has query records: do not also give --dataset or --queries")

    # lineage: cycles, and partial lineage that no lineage satisfies, checked on the items
    # whose parents all exist (a missing parent is reported above)
    linked = _linked(items, set(item_line))
    lineage: Lineage | None = None
    try:
        lineage = build_lineage(linked)
    except TiapError as exc:
        for prob in exc.problems:
            probs.add(prob.message, item_line.get(prob.record or ""), record=prob.record)
    if lineage is not None:
        for iid, message in lineage_problems(lineage):
            probs.add(message, item_line[iid], record=iid)

    # sources against the dataset's units
    try:
        units = dataset_units(dataset, data_dir)
    except TiapError as exc:
        probs.extend(exc)
    else:
        check_units(items, units, probs, lambda it: (path, item_line[it.item_id]),
                    f"dataset {dataset!r}")

    # the queries the rankings are for
    try:
        require_queries(len(ranking_line), path, "ranking records")
    except TiapError as exc:
        probs.extend(exc)
    notes: dict[str, Any] = {}
    ext_file: Path | None = None
    if query_records:
        known = {q.query_id for q in queries} | unread
        for line, qid, _, _ in rankings:
            if qid not in known:
                probs.add("ranking for a query with no query record", line, qid)
    elif dataset is not None or queries_path is not None or rankings:
        try:
            by_id, ext_file = external_queries(dataset, queries_path, data_dir)
        except TiapError as exc:
            probs.extend(exc)
        else:
            for line, qid, _, _ in rankings:
                if qid not in by_id:
                    src = queries_path if queries_path is not None else f"dataset {dataset!r}"
                    probs.add(f"ranking for a query that is not in {src}", line, qid)
            queries = [by_id[qid] for _, qid, _, _ in rankings if qid in by_id]
            notes["queries_not_ranked"] = len(by_id) - len(queries)
    probs.raise_if_any()
    assert lineage is not None
    notes = {**partial_lineage_findings(items, lineage), **notes}
    ranked = {qid for _, qid, _, _ in rankings}
    notes["queries_without_ranking"] = sum(1 for q in queries if q.query_id not in ranked)
    if any(lineage.possible.get(it.item_id) is not None and it.collection for it in items):
        # partial lineage reaches units of its own collection: a query naming none is not
        # told which collection its evidence is in
        notes["queries_without_collection"] = sum(1 for q in queries if not q.collection_id)
    run = Run(system=system, rankings=tuple(Ranking(qid, system, tuple(ids), None if s is None
                                                    else tuple(s))
                                            for _, qid, ids, s in rankings),
              source=path, format="generic")
    inputs = (path,) if ext_file is None else (path, ext_file)
    return ImportResult(system=system, format="generic", items=tuple(items),
                        queries=tuple(queries), run=run, inputs=inputs, findings=notes)


def _linked(items: list[Item], known: set[str]) -> list[Item]:
    """The items whose parents, and their parents' parents, are all items."""
    missing = {it.item_id for it in items if any(p not in known for p in it.parents)}
    while True:
        more = {it.item_id for it in items
                if it.item_id not in missing and any(p in missing for p in it.parents)}
        if not more:
            return [it for it in items if it.item_id not in missing]
        missing |= more


def lineage_problems(lineage: Lineage) -> list[tuple[str, str]]:
    """``(item id, message)`` for every item whose partial lineage no lineage satisfies.

    Checked on the resolved lineage (certain sources and possible units through parents): a
    ``requires`` list none of whose units the item may reach; more certain sources than
    ``max_sources: 1`` allows; with ``max_sources: 1``, ``requires`` lists that no single
    unit the item may reach meets together. (Other ``max_sources`` are checked by
    :func:`tiap.memory.store.item_from_json` against the item's own sources.)
    """
    out: list[tuple[str, str]] = []
    for iid, item in lineage.items.items():  # in input order
        pl = lineage.possible.get(iid)
        if pl is None or item.uncertain is None:
            continue  # exact, or inherited only: the parents' own records are checked
        for r in pl.requires:
            if not any(pl.may_reach(u) for u in r):
                msg = (f"'uncertain.requires' {sorted(r)}: the item may reach none of these "
                       "units, so no lineage meets it")
                out.append((iid, msg))
        single = _single_problem(lineage.sources[iid], pl) if pl.single else None
        if single is not None:
            out.append((iid, single))
    return out


def _single_problem(certain: tuple[str, ...], pl: PossibleLineage) -> str | None:
    """Why no lineage of exactly one unit fits ``certain`` and ``pl`` (``None``: one does)."""
    if len(certain) > 1:
        return (f"max_sources 1, but the item certainly reaches {len(certain)} units "
                f"({', '.join(certain)}) through its sources and parents")
    if not pl.requires:
        return None
    if certain:
        return (f"max_sources 1 and the item's one source is {certain[0]}, which the "
                f"'uncertain.requires' list {sorted(pl.requires[0])} does not hold")
    common = set.intersection(*(set(r) for r in pl.requires))
    if not any(pl.may_reach(u) for u in common):
        return ("max_sources 1, but no single unit the item may reach is in every "
                "'uncertain.requires' list")
    return None


def partial_lineage_findings(items: Sequence[Item], lineage: Lineage | None = None,
                             ) -> dict[str, Any]:
    """What an import's findings say about partial lineage: how many items have it (their
    own ``uncertain``, or inherited through ``parents``), per kind, how many carry it
    themselves, how many are placeholders; the first ids listed."""
    lin = lineage if lineage is not None else build_lineage(items)
    partial = [it for it in items if it.item_id in lin.possible]
    return {
        "partial_lineage_items": len(partial),
        "partial_lineage_items_by_kind": dict(sorted(Counter(it.kind for it in partial).items())),
        "partial_lineage_own": sum(1 for it in partial if it.uncertain is not None),
        "placeholder_items": sum(1 for it in items if it.placeholder is not None),
        "listed_partial_lineage_items": [it.item_id for it in partial[:_LISTED]],
    }


def import_generic(
    path: str | Path,
    out_dir: str | Path,
    *,
    system: str | None = None,
    dataset: str | None = None,
    queries: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> ImportResult:
    """Read a generic export and write the import folder (:func:`write_import`)."""
    result = read_generic(path, system=system, dataset=dataset, queries_path=queries,
                          data_dir=data_dir)
    write_import(result, out_dir)
    return result


def _stem(path: Path) -> str:
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    return Path(name).stem or "run"
