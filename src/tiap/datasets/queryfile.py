"""The ``queries.jsonl`` interchange format (docs/datasets.md).

One query a line: ``query_id``, ``question``, ``answer``, ``category``, ``evidence`` (source
unit ids), optional ``collection``. TIAP also writes ``abstention``, ``evidence_given`` and,
where they apply, ``evidence_sessions`` and ``evidence_note``; other fields are kept.

Every field is type-checked: ``query_id`` a non-empty string or an integer; ``question``,
``category`` and ``collection`` strings (absent: empty; ``category`` may be a number);
``answer`` a string, a number or null; ``evidence`` and ``evidence_sessions`` lists of ids (a
string there is an error, never split into characters); ``abstention`` true or false;
``evidence_note`` a string or null. A wrong type, a bad JSON line, a query id given twice and
an extra key that is a near miss of a field's name (``"evidnce"``, ``"Answer"``:
:mod:`tiap.fields`) are located errors (file, line, query, field), all of a file reported in
one pass; other extra keys are kept (:attr:`Query.extra`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.fields import key_problems
from tiap.io import iter_jsonl, type_name, write_jsonl

_KNOWN = {
    "query_id", "question", "answer", "category", "evidence", "collection", "abstention",
    "evidence_given", "evidence_sessions", "evidence_note",
}


def _is_id(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def query_from_json(obj: Any, *, file: str | Path | None = None, line: int | None = None) -> Query:
    """One query record; every problem of the record is raised together, each naming the
    file, line, query and field."""
    probs = Problems(file)

    def bad(message: str, qid: str | None = None) -> None:
        probs.add(message, line, qid)

    if not isinstance(obj, dict):
        raise TiapError(f"a query must be a JSON object, found {type_name(obj)}", file=file,
                        line=line)
    raw_id = obj.get("query_id")
    if raw_id is None or raw_id == "":
        raise TiapError("query has no 'query_id'", file=file, line=line)
    if not _is_id(raw_id):
        raise TiapError(f"field 'query_id' is {type_name(raw_id)}; expected a string or an "
                        "integer", file=file, line=line)
    qid = str(raw_id)

    def text(key: str, *, numbers: bool = False, null: bool = False) -> str | None:
        v = obj.get(key, "")
        if isinstance(v, str):
            return v
        if numbers and _is_number(v):
            return str(v)
        if v is None and null:
            return None
        bad(f"field {key!r} is {type_name(v)}; expected "
            f"{'a string or a number' if numbers else 'a string'}", qid)
        return ""

    def ids(key: str) -> tuple[str, ...]:
        v = obj.get(key)
        if v is None and key not in obj:
            return ()
        if not isinstance(v, list):
            bad(f"field {key!r} is {type_name(v)}; expected a list of source unit ids", qid)
            return ()
        for i, e in enumerate(v):
            if not _is_id(e):
                bad(f"field {key!r}[{i}] is {type_name(e)}; expected a source unit id (a "
                    "string or an integer)", qid)
        return tuple(str(e) for e in v)

    for message in key_problems(obj, _KNOWN, "a query record", strict=False):
        bad(message, qid)
    question = text("question")
    answer = text("answer", numbers=True, null=True) if "answer" in obj else None
    category = text("category", numbers=True)
    collection = text("collection")
    evidence = ids("evidence")
    sessions = ids("evidence_sessions") if obj.get("evidence_sessions") is not None else ()
    abstention = obj.get("abstention", False)
    if not isinstance(abstention, bool):
        bad(f"field 'abstention' is {type_name(abstention)}; expected true or false", qid)
    note = obj.get("evidence_note")
    if note is not None and not isinstance(note, str):
        bad(f"field 'evidence_note' is {type_name(note)}; expected a string or null", qid)
    probs.raise_if_any()
    return Query(
        query_id=qid,
        collection_id=collection or "",
        question=question or "",
        answer=answer,
        category=category or "",
        evidence=evidence,
        evidence_given=obj.get("evidence_given", obj.get("evidence", [])),
        abstention=bool(abstention),
        evidence_sessions=sessions,
        evidence_note=note,
        extra=tuple(sorted((k, v) for k, v in obj.items() if k not in _KNOWN)),
    )


def read_queries(path: str | Path) -> list[Query]:
    """Read ``queries.jsonl``; every bad line and every query id given twice (naming both
    lines) is reported together.

    >>> from pathlib import Path
    >>> _ = Path("queries.jsonl").write_text(
    ...     '{"query_id": "q1", "question": "Who adopted a cat?", "evidence": ["c1:D1:1"],'
    ...     ' "collection": "c1"}\\n'
    ...     '{"query_id": "q2", "question": "Who has a dog?", "evidence": []}\\n')
    >>> [(q.query_id, q.collection_id, q.evidence) for q in read_queries("queries.jsonl")]
    [('q1', 'c1', ('c1:D1:1',)), ('q2', '', ())]
    """
    out: list[Query] = []
    seen: dict[str, int] = {}
    problems = Problems(path)
    for line, obj in iter_jsonl(path, problems):
        try:
            q = query_from_json(obj, file=path, line=line)
        except TiapError as exc:
            problems.extend(exc)
            continue
        if q.query_id in seen:
            problems.add(f"query id given twice (first on line {seen[q.query_id]}); expected "
                         "each query once", line, q.query_id, code="duplicate")
            continue
        seen[q.query_id] = line
        out.append(q)
    problems.raise_if_any()
    if not out:
        raise TiapError("empty queries file: it holds no queries", file=path)
    return out


def write_queries(path: str | Path, queries: Iterable[Query]) -> int:
    return write_jsonl(path, (q.to_json() for q in queries))
