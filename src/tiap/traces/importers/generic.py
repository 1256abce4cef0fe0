"""``tiap import generic``: one JSONL file any system can export to (``docs/import.md``).

One JSON object a line, told apart by ``type``::

    {"type": "item", "item_id": "t1", "kind": "raw", "sources": ["conv-26:D1:3"], "text": "..."}
    {"type": "item", "item_id": "f1", "kind": "fact", "parents": ["t1"], "text": "..."}
    {"type": "query", "query_id": "q1", "question": "...", "evidence": ["conv-26:D1:3"]}
    {"type": "ranking", "query_id": "q1", "ranked": [{"item_id": "f1", "score": 0.9}, "t1"]}

``item`` records are ``items.jsonl`` rows (``item_id``, ``kind``, ``sources``, optional
``parents``, ``serving``, ``text``, ``collection`` and any extra field); ``query`` records are
``queries.jsonl`` rows. ``ranking`` records give one query's ranked list, best first: each
entry an item id or ``{"item_id", "score"}`` (scores on all entries or none). The list order
is the rank order. Every ranked id must have an ``item`` record (an item whose lineage is
unknown is given ``"sources": []``: it is then counted and listed as having no source).
Records may come in any order. Queries come from the ``query`` records, or else from
``--queries`` / ``--dataset`` (then only the ranked queries are kept).

Every problem in the file is reported together, each naming the file, line and query.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tiap.datasets.queryfile import query_from_json
from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.io import iter_jsonl
from tiap.memory.store import Item, item_from_json
from tiap.targets.lineage import build_lineage
from tiap.traces.importers import (
    ImportResult,
    external_queries,
    write_import,
)
from tiap.traces.runs import Ranking, Run

__all__ = ["RECORD_TYPES", "import_generic", "read_generic"]

RECORD_TYPES = ("item", "query", "ranking")


def _ranked(entries: Any, path: Path, line: int, qid: str, probs: Problems
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
        elif isinstance(e, dict) and isinstance(e.get("item_id"), (str, int)):
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
        if iid in ids:
            probs.add(f"item {iid!r} is ranked twice (ranks {ids.index(iid) + 1} and {pos})",
                      line, qid)
            ok = False
            continue
        ids.append(iid)
        scores.append(None if score is None else float(score))
    if not ok:
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
    queries: list[Query] = []
    query_line: dict[str, int] = {}
    rankings: list[tuple[int, str, list[str], list[float] | None]] = []
    ranking_line: dict[str, int] = {}
    for line, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            probs.add("a record must be a JSON object", line)
            continue
        kind = obj.get("type")
        body = {k: v for k, v in obj.items() if k != "type"}
        if kind == "item":
            try:
                it = item_from_json(body, file=path, line=line)
            except TiapError as exc:
                probs.extend(exc)
                continue
            if it.item_id in item_line:
                probs.add(f"duplicate item id (first on line {item_line[it.item_id]})",
                          line, record=it.item_id)
                continue
            item_line[it.item_id] = line
            items.append(it)
        elif kind == "query":
            try:
                q = query_from_json(body, file=path, line=line)
            except TiapError as exc:
                probs.extend(exc)
                continue
            if q.query_id in query_line:
                probs.add(f"duplicate query id (first on line {query_line[q.query_id]})",
                          line, q.query_id)
                continue
            query_line[q.query_id] = line
            queries.append(q)
        elif kind == "ranking":
            qid = body.get("query_id")
            if not isinstance(qid, (str, int)) or qid == "":
                probs.add("ranking has no 'query_id'", line)
                continue
            qid = str(qid)
            if qid in ranking_line:
                probs.add(f"query ranked twice (first on line {ranking_line[qid]})", line, qid)
                continue
            ranking_line[qid] = line
            got = _ranked(body.get("ranked"), path, line, qid, probs)
            if got is not None:
                rankings.append((line, qid, *got))
        else:
            probs.add(f"unknown record type {kind!r}; expected one of "
                      f"{', '.join(RECORD_TYPES)} in the field 'type'",
                      line)

    # lineage: dangling parents and cycles, located
    for it in items:
        for p in it.parents:
            if p not in item_line:
                probs.add(f"parent {p!r} is not an item", item_line[it.item_id], record=it.item_id)
    for line, qid, ids, _ in rankings:
        for pos, iid in enumerate(ids, start=1):
            if iid not in item_line:
                probs.add(f"rank {pos}: {iid!r} has no item record (give it one, with "
                          "\"sources\": [] if its lineage is unknown)",
                          line, qid)
    if queries and (dataset is not None or queries_path is not None):
        probs.add("the file has query records: do not also give --dataset or --queries")
    probs.raise_if_any()
    try:
        build_lineage(items)
    except TiapError as exc:
        for p in exc.problems:
            where = item_line.get(p.record or "")
            probs.add(p.message, where, record=p.record)
        probs.raise_if_any()

    notes: dict[str, Any] = {}
    ext_file: Path | None = None
    if queries:
        known = {q.query_id for q in queries}
        for line, qid, _, _ in rankings:
            if qid not in known:
                probs.add("ranking for a query with no query record", line, qid)
    else:
        by_id, ext_file = external_queries(dataset, queries_path, data_dir)
        for line, qid, _, _ in rankings:
            if qid not in by_id:
                src = queries_path if queries_path is not None else f"dataset {dataset!r}"
                probs.add(f"ranking for a query that is not in {src}", line, qid)
        queries = [by_id[qid] for _, qid, _, _ in rankings if qid in by_id]
        notes["queries_not_ranked"] = len(by_id) - len(queries)
    probs.raise_if_any()
    ranked = {qid for _, qid, _, _ in rankings}
    notes["queries_without_ranking"] = sum(1 for q in queries if q.query_id not in ranked)
    run = Run(system=system, rankings=tuple(Ranking(qid, system, tuple(ids), None if s is None
                                                    else tuple(s))
                                            for _, qid, ids, s in rankings),
              source=path, format="generic")
    inputs = (path,) if ext_file is None else (path, ext_file)
    return ImportResult(system=system, format="generic", items=tuple(items),
                        queries=tuple(queries), run=run, inputs=inputs, findings=notes)


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
