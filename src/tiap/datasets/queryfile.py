"""The ``queries.jsonl`` interchange format (ARCHITECTURE.md).

One query a line: ``query_id``, ``question``, ``answer``, ``category``, ``evidence`` (source
unit ids), optional ``collection``. TIAP also writes ``abstention``, ``evidence_given`` and,
where they apply, ``evidence_sessions`` and ``evidence_note``; other fields are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tiap.datasets.records import Query
from tiap.errors import Problem, TiapError
from tiap.io import iter_jsonl, write_jsonl

_KNOWN = {
    "query_id", "question", "answer", "category", "evidence", "collection", "abstention",
    "evidence_given", "evidence_sessions", "evidence_note",
}


def query_from_json(obj: Any, *, file: str | Path | None = None, line: int | None = None) -> Query:
    where: dict[str, Any] = {"file": file, "line": line}
    if not isinstance(obj, dict):
        raise TiapError("a query must be a JSON object", **where)
    if obj.get("query_id") in (None, ""):
        raise TiapError("query has no 'query_id'", **where)
    qid = str(obj["query_id"])
    where["query_id"] = qid
    ev = obj.get("evidence", [])
    if not isinstance(ev, list) or not all(isinstance(e, (str, int)) for e in ev):
        raise TiapError("field 'evidence' must be a list of source unit ids", **where)
    answer = obj.get("answer")
    return Query(
        query_id=qid,
        collection_id=str(obj.get("collection") or ""),
        question=str(obj.get("question") or ""),
        answer=None if answer is None else str(answer),
        category=str(obj.get("category") if obj.get("category") is not None else ""),
        evidence=tuple(str(e) for e in ev),
        evidence_given=obj.get("evidence_given", ev),
        abstention=bool(obj.get("abstention", False)),
        evidence_sessions=tuple(str(s) for s in obj.get("evidence_sessions") or ()),
        evidence_note=obj.get("evidence_note"),
        extra=tuple(sorted((k, v) for k, v in obj.items() if k not in _KNOWN)),
    )


def read_queries(path: str | Path) -> list[Query]:
    """Read ``queries.jsonl``; a duplicate query id is an error naming both lines."""
    out: list[Query] = []
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    for line, obj in iter_jsonl(path):
        q = query_from_json(obj, file=path, line=line)
        if q.query_id in seen:
            problems.append(
                Problem(f"duplicate query id (first on line {seen[q.query_id]})",
                        file=str(path), line=line, query_id=q.query_id)
            )
            continue
        seen[q.query_id] = line
        out.append(q)
    if problems:
        raise TiapError(problems=problems)
    return out


def write_queries(path: str | Path, queries: Iterable[Query]) -> int:
    return write_jsonl(path, (q.to_json() for q in queries))
