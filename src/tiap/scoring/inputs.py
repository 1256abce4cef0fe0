"""What rescoring reads, given as objects, as plain Python data or as files.

:func:`tiap.scoring.rescore.rescore` takes its runs, queries and stores through here, so a
Python caller may pass a path where an object is expected and gets the checks the files'
readers make (a located :class:`~tiap.errors.TiapError`):

- runs: a :class:`~tiap.runs.Run`, a run file (any format :func:`read_run` reads),
  ``{system: {query_id: [item_id, ...]}}``, or a list of these;
- queries: a queries file, or :class:`~tiap.datasets.records.Query` objects or dicts in the
  queries file's JSON form (``query_id``, ``evidence``, ...);
- stores: one store for every run, or ``{run label: store}`` (the key ``None`` serves every
  run without a store of its own name); a store is a :class:`~tiap.memory.store.Store`, an
  ``items.jsonl`` path, its lineage, or items (:class:`~tiap.memory.store.Item` objects or
  dicts in the items file's JSON form).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from tiap.datasets.queryfile import query_from_json, read_queries
from tiap.datasets.records import Query
from tiap.errors import Problem, TiapError
from tiap.memory.store import Item, Store, item_from_json, read_store
from tiap.runs import Ranking, Run, read_run
from tiap.targets import Lineage

__all__ = ["as_queries", "as_runs", "as_stores"]


def _is_path(x: Any) -> bool:
    return isinstance(x, str | PathLike)


def as_runs(runs: Any, *, dedup: str = "error", order: str = "rank") -> list[Run]:
    """The runs of ``runs`` (see the module's doc), files read with ``dedup`` and ``order``
    as :func:`~tiap.runs.read_run` reads them.

    >>> [r.system for r in as_runs({"bm25": {"q1": ["t1", "t2"]}})]
    ['bm25']
    """
    if isinstance(runs, Run):
        return [runs]
    if _is_path(runs):
        return read_run(Path(runs), dedup=dedup, order=order)  # type: ignore[arg-type]
    if isinstance(runs, Mapping):
        return [_run_of(system, rankings) for system, rankings in runs.items()]
    out: list[Run] = []
    for r in runs:
        out.extend(as_runs(r, dedup=dedup, order=order))
    return out


def _run_of(system: Any, rankings: Any) -> Run:
    """``{query_id: [item_id, ...]}`` as a run; every bad ranking is reported at once."""
    if not isinstance(system, str) or not system:
        raise TiapError(f"a run's system name must be a non-empty string, got {system!r}",
                        code="invalid-value")
    if not isinstance(rankings, Mapping):
        raise TiapError(f"run {system!r}: expected {{query_id: [item_id, ...]}}, got "
                        f"{type(rankings).__name__}", code="invalid-value")
    got, problems = [], []
    for q, ids in rankings.items():
        if isinstance(ids, str) or not isinstance(ids, Iterable):
            problems.append(Problem(f"run {system!r}: query {q}: expected a list of item ids, "
                                    f"got {ids!r}", query_id=str(q), code="invalid-value"))
            continue
        try:
            got.append(Ranking(q, system, tuple(ids)))
        except ValueError as exc:
            problems.append(Problem(f"run {system!r}: {exc}", query_id=str(q),
                                    code="invalid-value"))
    if problems:
        raise TiapError(problems=problems, code="invalid-value")
    return Run(system, tuple(got))


def as_queries(queries: Any) -> list[Query]:
    """The queries of ``queries`` (see the module's doc); dicts are checked as the lines of a
    queries file, every bad one reported at once.

    >>> [q.query_id for q in as_queries([{"query_id": "q1", "evidence": ["d1:1"]}])]
    ['q1']
    """
    if _is_path(queries):
        return read_queries(Path(queries))
    out: list[Query] = []
    problems: list[Problem] = []
    for i, q in enumerate(queries):
        if not isinstance(q, Mapping):  # a Query, or an object with its fields
            out.append(q)
            continue
        try:
            out.append(query_from_json(q, line=i + 1))
        except TiapError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TiapError(problems=problems)
    return out


def as_stores(stores: Any) -> dict[str | None, Store | Lineage | tuple[Item, ...]]:
    """``{run label: store}`` of ``stores`` (see the module's doc); a single store serves
    every run (key ``None``).

    >>> as_stores([{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]}])[None][0].kind
    'raw'
    """
    if isinstance(stores, Mapping):
        return {k: _store(v) for k, v in stores.items()}
    return {None: _store(stores)}


def _store(store: Any) -> Store | Lineage | tuple[Item, ...]:
    if isinstance(store, Store | Lineage):
        return store
    if _is_path(store):
        return read_store(Path(store))
    items: list[Item] = []
    problems: list[Problem] = []
    for i, it in enumerate(store):
        if not isinstance(it, Mapping):
            items.append(it)
            continue
        try:
            items.append(item_from_json(it, line=i + 1))
        except TiapError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TiapError(problems=problems)
    return tuple(items)

