"""Ranked runs: records, a content-sniffing reader and atomic writers (docs/rescore.md: run formats).

A *run* is one system's saved ranked output: per query, an ordered list of stored item ids,
optionally with scores. Three interchange formats are read, recognised by their content
(never by the file name), plain or gzip-compressed:

``trec``
    ``qid Q0 docid rank score tag``, whitespace separated. The **rank column is
    authoritative**: items are ordered by it, and ranks must run ``1..n`` per query with no
    ties (or, with ``order="score"``, items are ordered by score as trec_eval does; see
    below). The tag names the system; scores are kept.
``jsonl``
    JSONL rankings, one query per line:
    ``{"query_id": ..., "system": ..., "ranking": [...], "scores": [...]}`` (and
    optionally ``"latency_ms"``, the system's time for the query, and ``"store"``). The list
    order is the rank order; ``scores`` is optional and, when given, as long as ``ranking``.
    ``system`` (and an optional ``benchmark``) may be omitted. No other key is read: one is
    an error suggesting the nearest key (:mod:`tiap.fields`), so a misspelled ``"sytem"`` or
    ``"score"`` is never dropped in silence. A first line holding
    ``"tiap_trace"`` is the header of a TIAP trace (``tiap retrieve``): it is skipped and kept
    as :attr:`Run.header`.
``rows-csv`` / ``rows-tsv`` / ``rows-jsonl``
    The paper package's ranked-trace rows, one retrieved item a row, with the columns
    ``benchmark, system, query_id, retrieved_id, rank, score``: a CSV or TSV file with that
    header, or JSONL objects with those keys. ``query_id``, ``retrieved_id`` and ``rank`` are
    required; ``benchmark``, ``system`` and ``score`` may be absent. Ordered by ``rank``,
    as for TREC. Other columns are ignored, except a near miss of one of these names
    (``scroe``, ``retreived_id``), which is an error suggesting the name.

By default (``order="rank"``) everything TIAP scores follows the rank order given, so the
readers never re-sort by score. trec_eval does the opposite: it ignores the rank column and
sorts by score, breaking ties by docno. ``order="score"`` (``--order score``) reads a run
as trec_eval does, by :func:`score_order`, the one rule every reader applies: the rank
column is not used (it must still hold an integer; repeated and constant ranks are fine),
every item needs a score, and each query's items are sorted by score, highest first, equal
scores by item id, the id that is greater as bytes (C's ``strcmp``) first. An item repeated
in one ranking is an error, as in trec_eval (or, with ``dedup="first"``, its first
occurrence in that order is kept). JSONL rankings are sorted the same way. In rank order,
two consequences:

- a ranking whose scores rise somewhere along the ranks is read as given, and counted in a
  ``score_order`` :class:`RunWarning`, because trec_eval would order it differently; one
  whose scores only tie (common with BM25) is counted apart, as ``score_ties``: trec_eval
  breaks ties by docno, so it may order such a ranking differently too;
- :func:`write_trec_run` replaces the scores by ``depth - rank + 1`` (``depth`` being the
  longest ranking written), which strictly decrease, so trec_eval, pytrec_eval, ranx and
  ir_measures all see exactly TIAP's order.

Bad input raises :class:`~tiap.errors.TiapError` carrying one
:class:`~tiap.errors.Problem` per problem found (file, line, query), collected over the
whole file. Non-fatal findings are returned as data, as :class:`RunWarning` values on each
:class:`Run`; nothing here prints or logs.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, pairwise
from operator import ge
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problem, Problems, TiapError
from tiap.fields import key_problems
from tiap.io import atomic_write, json_lines, numbered_lines, open_text

__all__ = [
    "FORMAT_JSONL",
    "FORMAT_ROWS_CSV",
    "FORMAT_ROWS_JSONL",
    "FORMAT_ROWS_TSV",
    "FORMAT_TREC",
    "ORDERS",
    "RUN_FORMATS",
    "Dedup",
    "Order",
    "Ranking",
    "Run",
    "RunWarning",
    "RunWarnings",
    "check_order",
    "dedup_ranking",
    "detect_run_format",
    "id_keys",
    "read_run",
    "score_order",
    "system_from_path",
    "trace_dataset",
    "trace_store",
    "warnings_json",
    "write_jsonl_run",
    "write_trec_run",
]

FORMAT_TREC = "trec"
FORMAT_JSONL = "jsonl"
FORMAT_ROWS_CSV = "rows-csv"
FORMAT_ROWS_TSV = "rows-tsv"
FORMAT_ROWS_JSONL = "rows-jsonl"
RUN_FORMATS: tuple[str, ...] = (
    FORMAT_TREC,
    FORMAT_JSONL,
    FORMAT_ROWS_CSV,
    FORMAT_ROWS_TSV,
    FORMAT_ROWS_JSONL,
)

Dedup = Literal["error", "first"]
#: How a reader orders each query's items: ``"rank"`` (the rank column, or the list order,
#: is the data) or ``"score"`` (trec_eval's rule, :func:`score_order`).
Order = Literal["rank", "score"]
ORDERS: tuple[str, ...] = ("rank", "score")
#: What the rank-order refusals suggest when the rows carry scores.
ORDER_HINT = "to order by score as trec_eval does, pass --order score (order='score')"

#: At most this many located examples are kept in one :class:`RunWarning`.
MAX_EXAMPLES = 5

ROW_COLUMNS: tuple[str, ...] = ("benchmark", "system", "query_id", "retrieved_id", "rank", "score")
#: The keys of a JSONL ranking; no other key is read.
JSONL_KEYS: tuple[str, ...] = ("query_id", "system", "benchmark", "store", "ranking", "scores",
                               "latency_ms")
_ROWS_EXTRA = "other columns are ignored"
_ROW_REQUIRED = frozenset({"query_id", "retrieved_id", "rank"})
_TREC_LAYOUT = "qid Q0 docid rank score tag"
_EXPECTED = (
    f"a TREC run ('{_TREC_LAYOUT}'), JSONL rankings (one "
    '{"query_id", "system", "ranking": [...], "scores": [...]} object a line) or ranked-trace '
    "rows (a CSV/TSV header, or JSONL keys, " + ", ".join(ROW_COLUMNS) + ")"
)
#: The key that marks the header line of a TIAP trace (``tiap retrieve``): skipped, kept
#: as ``Run.header``.
TRACE_HEADER_KEY = "tiap_trace"
_INT = re.compile(r"[+-]?[0-9]+")
_WHITESPACE = re.compile(r"\s")


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """One system's ranked list for one query.

    ``item_ids[i]`` is at rank ``i + 1``; the order is authoritative. ``scores`` is ``None``
    or holds one finite score per item (kept as read; they need not decrease).

    Invariants, checked on construction (a :class:`ValueError` is a programming error;
    the readers report bad input as :class:`~tiap.errors.TiapError` first): ids are
    non-empty strings, no id occurs twice, and scores are finite and as many as the ids.
    Lists are accepted and stored as tuples.

    >>> r = Ranking("q1", "bm25", ["d2", "d1"], [1.5, 0.5])
    >>> r.item_ids, r.scores, r.depth
    (('d2', 'd1'), (1.5, 0.5), 2)
    >>> Ranking("q1", "bm25", ["d1", "d1"])
    Traceback (most recent call last):
    ...
    ValueError: query q1: item 'd1' occurs more than once
    """

    query_id: str
    system: str
    item_ids: tuple[str, ...]
    scores: tuple[float, ...] | None = None
    #: the time the system took to answer the query, where the trace records it
    latency_ms: float | None = None

    def __post_init__(self) -> None:
        ids = tuple(self.item_ids)
        lat = self.latency_ms
        if lat is not None and (isinstance(lat, bool) or not isinstance(lat, (int, float))
                                or not math.isfinite(lat) or lat < 0):
            raise ValueError(f"query {self.query_id}: latency_ms must be a finite number >= 0, "
                             f"got {lat!r}")
        object.__setattr__(self, "item_ids", ids)
        if not isinstance(self.query_id, str) or not self.query_id:
            raise ValueError(f"query_id must be a non-empty string, got {self.query_id!r}")
        if not isinstance(self.system, str):
            raise ValueError(f"system must be a string, got {self.system!r}")
        try:
            "".join(ids)  # a TypeError names no position, so find the culprit below
            bad_id = "" in ids
        except TypeError:
            bad_id = True
        if bad_id:
            culprit = next(i for i in ids if not isinstance(i, str) or not i)
            raise ValueError(
                f"query {self.query_id}: item ids must be non-empty strings, got {culprit!r}"
            )
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            for item in ids:
                if item in seen:
                    raise ValueError(f"query {self.query_id}: item {item!r} occurs more than once")
                seen.add(item)
        if self.scores is not None:
            scores = tuple(map(float, self.scores))
            if len(scores) != len(ids):
                raise ValueError(
                    f"query {self.query_id}: {len(scores)} scores for {len(ids)} items"
                )
            if not all(map(math.isfinite, scores)):
                raise ValueError(f"query {self.query_id}: scores must be finite")
            object.__setattr__(self, "scores", scores)

    @property
    def depth(self) -> int:
        """The number of ranked items."""
        return len(self.item_ids)


@dataclass(frozen=True)
class RunWarning:
    """A counted, non-fatal finding made while reading a run.

    ``code`` is stable (``"duplicate_dropped"``, ``"score_order"``, ``"score_ties"``);
    ``count`` is the number of occurrences, ``queries`` the number of queries they touch,
    and ``examples`` the first few occurrences with their file, line and query.

    A ranking whose scores tie is read in its rank order and counted:

    >>> _ = Path("bm25.trec").write_text("q1 Q0 d1 1 2.0 bm25\\nq1 Q0 d2 2 2.0 bm25\\n"
    ...                                  "q2 Q0 d3 1 1.0 bm25\\n")
    >>> (w,) = read_run("bm25.trec")[0].warnings
    >>> w.code, w.count, w.queries
    ('score_ties', 1, 1)
    >>> print(w)
    rankings hold tied scores; ... (1 in 1 queries); first: bm25.trec:2, query q1: score 2.0 at
    rank 2 is equal to 2.0 at rank 1 (system 'bm25')
    """

    code: str
    message: str
    count: int
    queries: int
    examples: tuple[Problem, ...] = ()

    def __str__(self) -> str:
        text = f"{self.message} ({self.count} in {self.queries} queries)"
        if self.examples:
            text += "; first: " + str(self.examples[0])
        return text

    def to_json(self) -> dict[str, Any]:
        """The warning as a manifest entry: message, counts and the located examples."""
        return {"message": self.message, "count": self.count, "queries": self.queries,
                "examples": [str(e) for e in self.examples]}


def warnings_json(warnings: Iterable[RunWarning]) -> dict[str, dict[str, Any]]:
    """``{code: entry}`` for the ``warnings`` of a manifest (:meth:`RunWarning.to_json`).

    >>> w = RunWarning("score_ties", "rankings hold tied scores", count=2, queries=1)
    >>> warnings_json([w])
    {'score_ties': {'message': 'rankings hold tied scores', 'count': 2, 'queries': 1,
                    'examples': []}}
    """
    return {w.code: w.to_json() for w in warnings}


@dataclass(frozen=True)
class Run:
    """One system's rankings, in the order they were read (first appearance of each query).

    ``source`` and ``format`` say where the run came from (``None`` for runs built in code);
    ``benchmark`` is set when the file names one (ranked-trace rows, JSONL rankings);
    ``warnings`` holds what the reader counted but did not reject. Query ids are unique
    within a run and every ranking carries the run's ``system``.

    >>> run = Run("bm25", [Ranking("q1", "bm25", ["d2", "d1"]), Ranking("q2", "bm25", ["d3"])])
    >>> run.query_ids
    ('q1', 'q2')
    >>> run.ranking("q2").item_ids
    ('d3',)
    >>> "q3" in run
    False
    """

    system: str
    rankings: tuple[Ranking, ...]
    source: Path | None = None
    format: str | None = None
    benchmark: str | None = None
    warnings: tuple[RunWarning, ...] = ()
    #: The header object of a TIAP trace (a first line holding ``"tiap_trace"``), if any.
    header: dict[str, Any] | None = field(default=None, compare=False)
    #: The store whose items the run ranks, when the file says (a trace header, the
    #: ``store`` of JSONL rankings): an item is (store, item id)
    store: str | None = None
    _index: dict[str, Ranking] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rankings = tuple(self.rankings)
        object.__setattr__(self, "rankings", rankings)
        object.__setattr__(self, "warnings", tuple(self.warnings))
        if self.source is not None:
            object.__setattr__(self, "source", Path(self.source))
        index: dict[str, Ranking] = {}
        for r in rankings:
            if r.system != self.system:
                raise ValueError(
                    f"ranking of query {r.query_id} belongs to system {r.system!r}, "
                    f"not {self.system!r}"
                )
            if r.query_id in index:
                raise ValueError(f"query {r.query_id} has more than one ranking in the run")
            index[r.query_id] = r
        object.__setattr__(self, "_index", index)

    @property
    def query_ids(self) -> tuple[str, ...]:
        """The query ids, in the run's order."""
        return tuple(self._index)

    def ranking(self, query_id: str) -> Ranking:
        """The ranking of one query (:class:`KeyError` if the run has none)."""
        return self._index[query_id]

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._index


# --------------------------------------------------------------------------------------------
# Collecting problems and warnings
# --------------------------------------------------------------------------------------------


WARNING_TEXT = {
    "duplicate_dropped": (
        "rankings repeated items: each item's first occurrence was kept, its later ones "
        "dropped, and the items after a dropped one moved up one rank"
    ),
    "score_order": (
        "scores rise along the given ranks; TIAP keeps the rank order, but trec_eval would "
        "re-sort by score and score differently"
    ),
    "score_ties": (
        "rankings hold tied scores; TIAP keeps the given rank order, trec_eval would break "
        "the ties by docno"
    ),
}


class RunWarnings:
    """Counts warnings per code, keeping the first few located examples; :meth:`freeze`
    gives the :class:`RunWarning` values of a :class:`Run`. Importers collect theirs here,
    so that every reader of ranked lists counts the same findings the same way."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.queries: dict[str, set[str]] = {}
        self.examples: dict[str, list[Problem]] = {}

    def add(self, code: str, example: Problem) -> None:
        if example.code != code:
            example = replace(example, code=code)
        self.counts[code] = self.counts.get(code, 0) + 1
        self.queries.setdefault(code, set()).add(example.query_id or "")
        ex = self.examples.setdefault(code, [])
        if len(ex) < MAX_EXAMPLES:
            ex.append(example)

    def freeze(self) -> tuple[RunWarning, ...]:
        return tuple(
            RunWarning(
                code=code,
                message=WARNING_TEXT[code],
                count=n,
                queries=len(self.queries[code]),
                examples=tuple(self.examples[code]),
            )
            for code, n in self.counts.items()
        )


# --------------------------------------------------------------------------------------------
# Ordering by score
# --------------------------------------------------------------------------------------------


def check_order(order: str) -> None:
    """Refuse an ``order`` other than ``"rank"`` or ``"score"``."""
    if order not in ORDERS:
        raise TiapError(f"order must be 'rank' or 'score', not {order!r}", code="invalid-value")


def score_order(scores: NDArray[np.float64], keys: NDArray[np.int64]) -> NDArray[np.intp]:
    """trec_eval's order of ranked items, row by row: the one rule of ``order="score"``,
    which :func:`read_run` and the columnar reader both call.

    Along the last axis: by score, highest first; equal scores by item id, the id that is
    greater as UTF-8 bytes (C's ``strcmp``, trec_eval's tie rule) first. ``keys`` are
    integers that sort as the ids do (:func:`id_keys`); ``-0.0`` equals ``0.0``. A padding
    cell scored ``-inf`` sorts after every finite score. The sort is stable: entries equal in
    score and id (one id repeated with one score) keep their order.

    Returns:
        Per row, the indexes of the entries in that order (``numpy.lexsort``'s result).
    """
    return np.lexsort((-keys, -scores), axis=-1)


def id_keys(ids: Sequence[str]) -> NDArray[np.int64]:
    """Integers that sort as ``ids`` do as UTF-8 bytes (equal ids, equal keys).

    Python compares strings by code point, and UTF-8 keeps code-point order, so the sorted
    strings give the byte order."""
    rank = {v: i for i, v in enumerate(sorted(set(ids)))}
    return np.fromiter((rank[v] for v in ids), np.int64, len(ids))


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

_Key = tuple[str | None, str, str]  # (benchmark, system, query_id)


@dataclass
class _RowGroup:
    """The rows read for one (benchmark, system, query) of a rank-column format, column-wise."""

    line: int  # the first row's line
    items: list[str]
    scores: list[float | None]
    ranks: list[int]
    lines: list[int]


@dataclass
class _ListGroup:
    """One JSONL ranking: the list order is the rank order; all of it is on ``line``."""

    line: int
    items: list[str]
    scores: list[float] | None
    latency_ms: float | None = None


_Group = _RowGroup | _ListGroup


def first_line(lines: Iterator[tuple[int, str]]) -> tuple[int, str] | None:
    for lineno, line in lines:
        if line.strip():
            return lineno, line
    return None


def parse_int(text: str) -> int | None:
    """An ASCII integer (optional sign); no spaces, underscores or other digits."""
    if text.isascii() and text.isdigit():  # the common case, without the regex
        return int(text)
    text = text.strip()
    return int(text) if _INT.fullmatch(text) else None


def _parse_float(text: str) -> float | None:
    text = text.strip()
    if not text or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _preview(line: str, limit: int = 120) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= limit else line[:limit] + "..."


def _header_delimiter(line: str) -> str | None:
    """The delimiter of a ranked-trace rows header line, or None if it is not one."""
    delimiter = "\t" if "\t" in line else ","
    cols = next(csv.reader([line.strip("\r\n")], delimiter=delimiter), [])
    names = {c.strip().lower() for c in cols}
    return delimiter if _ROW_REQUIRED.issubset(names) else None


def _detect(path: Path, lineno: int, line: str) -> str:
    """Recognise a run format from its first non-blank line."""
    text = line.strip()
    unknown = f"unrecognised run format: expected {_EXPECTED}; first line: {_preview(text)!r}"
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:  # json's limits raise these too
            raise TiapError(
                f"{unknown} (not one JSON object on the line: {_json_reason(exc)})", file=path,
                line=lineno,
            ) from exc
        keys = set(obj) if isinstance(obj, dict) else set()
        if "ranking" in keys or TRACE_HEADER_KEY in keys:
            return FORMAT_JSONL
        if _ROW_REQUIRED.issubset(keys):
            return FORMAT_ROWS_JSONL
        if keys & {"returned_ids_full", "returned_ids_topk", "ranked_preview"}:
            raise TiapError(
                f"{unknown} (this looks like an MTEL-Mem trace; read it with the MTEL-Mem "
                "trace reader in tiap.importers.mtel)",
                file=path,
                line=lineno,
            )
        raise TiapError(unknown, file=path, line=lineno)
    delimiter = _header_delimiter(text)
    if delimiter is not None:
        return FORMAT_ROWS_TSV if delimiter == "\t" else FORMAT_ROWS_CSV
    toks = text.split()
    looks_trec = len(toks) >= 2 and toks[1].upper() == "Q0"
    if looks_trec or (
        len(toks) == 6 and parse_int(toks[3]) is not None and _parse_float(toks[4]) is not None
    ):
        return FORMAT_TREC
    raise TiapError(unknown, file=path, line=lineno)


def _json_reason(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0][:120]


def _trace_header(line: str) -> dict[str, Any] | None:
    """The header object of a TIAP trace (``{"tiap_trace": 1, ...}``), or None."""
    if TRACE_HEADER_KEY not in line:
        return None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) and TRACE_HEADER_KEY in obj else None


def _first_text_line(path: str | Path) -> str | None:
    """The first line of a run file with text on it (``None``: none, or unreadable)."""
    path = Path(path)
    try:
        with open_text(path) as fh:
            first = first_line(numbered_lines(fh))
    except (OSError, TiapError):
        return None
    return None if first is None else first[1]


def trace_store(path: str | Path) -> str | None:
    """The store a run file names: a TIAP trace's header (``tiap retrieve`` writes it) or
    the ``store`` of its first JSONL ranking (TIAP's imports write it), else ``None`` (TREC
    and ranked-trace rows name none)."""
    first = _first_text_line(path)
    if first is None:
        return None
    header = _trace_header(first)
    if header is not None:
        return _header_store(header)
    try:  # JSONL rankings name their store on every row
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return None
    name = obj.get("store") if isinstance(obj, dict) else None
    return name if isinstance(name, str) else None


def trace_dataset(path: str | Path) -> str | None:
    """The dataset a TIAP trace's header names (``tiap retrieve`` writes the store's), else
    ``None``."""
    first = _first_text_line(path)
    header = _trace_header(first) if first is not None else None
    value = (header or {}).get("dataset")
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value.strip() else None


def detect_run_format(path: str | Path) -> str:
    """The format of a run file (one of :data:`RUN_FORMATS`), recognised from its content.

    Raises :class:`~tiap.errors.TiapError` for an empty file or an unknown format, naming
    the file and quoting its first line.

    >>> _ = Path("a.jsonl").write_text('{"query_id": "q1", "ranking": ["d1"]}\\n')
    >>> _ = Path("b.txt").write_text("q1 Q0 d1 1 2.0 bm25\\n")
    >>> _ = Path("c.csv").write_text("query_id,retrieved_id,rank\\nq1,d1,1\\n")
    >>> detect_run_format("a.jsonl"), detect_run_format("b.txt"), detect_run_format("c.csv")
    ('jsonl', 'trec', 'rows-csv')
    """
    path = Path(path)
    with open_text(path) as fh:
        first = first_line(numbered_lines(fh))
    if first is None:
        raise TiapError("empty run file: it holds no rankings", file=path)
    return _detect(path, *first)


def _add_row(
    groups: dict[_Key, _Group], key: _Key, item: str, score: float | None, rank: int, line: int
) -> None:
    group = groups.get(key)
    if isinstance(group, _RowGroup):
        group.items.append(item)
        group.scores.append(score)
        group.ranks.append(rank)
        group.lines.append(line)
    else:
        groups[key] = _RowGroup(line, [item], [score], [rank], [line])


def _parse_trec(
    lines: Iterable[tuple[int, str]], path: Path, probs: Problems
) -> dict[_Key, _Group]:
    groups: dict[_Key, _Group] = {}
    for lineno, line in lines:
        toks = line.split()
        if not toks:
            continue
        if len(toks) != 6:
            probs.add(
                f"expected 6 whitespace-separated columns ({_TREC_LAYOUT}), found {len(toks)}",
                lineno,
                toks[0],
            )
            continue
        qid, _q0, item, rank_text, score_text, tag = toks
        rank = parse_int(rank_text)
        score = _parse_float(score_text)
        bad = False
        if rank is None:
            probs.add(f"rank {rank_text!r} is not an integer", lineno, qid)
            bad = True
        if score is None:
            probs.add(f"score {score_text!r} is not a number", lineno, qid)
            bad = True
        elif not math.isfinite(score):
            probs.add(f"score {score_text!r} is not finite", lineno, qid)
            bad = True
        if bad or rank is None or score is None:
            continue
        _add_row(groups, (None, tag, qid), item, score, rank, lineno)
    return groups


def _id_value(value: Any) -> str | None:
    """A JSON id as a string (strings and integers only), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value:
        return value
    return None


def _score_value(value: Any) -> float | None:
    """A JSON score as a float (numbers only, booleans rejected), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _name_value(value: Any) -> str | None:
    """An optional name field (system, benchmark): None when absent or blank."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _json_objects(
    lines: Iterable[tuple[int, str]], probs: Problems
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of JSONL lines, read by TIAP's one JSON Lines policy
    (:func:`tiap.io.json_lines`); a line holding another JSON value is a problem."""
    for lineno, obj in json_lines(lines, probs):
        if not isinstance(obj, dict):
            probs.add("expected a JSON object", lineno)
            continue
        yield lineno, obj


def _parse_jsonl_rankings(
    lines: Iterable[tuple[int, str]], probs: Problems, default_system: str,
    stores: dict[tuple[str | None, str], tuple[str, int]] | None = None,
) -> dict[_Key, _Group]:
    groups: dict[_Key, _Group] = {}
    for lineno, obj in _json_objects(lines, probs):
        qid = _id_value(obj.get("query_id"))
        if qid is None:
            probs.add("'query_id' is missing or not a string/integer", lineno)
            continue
        unknown = key_problems(obj, JSONL_KEYS, "a JSONL ranking")
        for message in unknown:
            probs.add(message, lineno, qid)
        if unknown:
            continue
        system = _name_value(obj.get("system")) or default_system
        benchmark = _name_value(obj.get("benchmark"))
        store = obj.get("store")
        if store is not None and stores is not None:
            if not isinstance(store, str) or not store:
                probs.add("'store' must be a store name", lineno, qid)
                continue
            first = stores.setdefault((benchmark, system), (store, lineno))
            if first[0] != store:
                probs.add(f"system {system!r} ranks items of store {store!r} here and of "
                          f"{first[0]!r} on line {first[1]}: one run, one store", lineno, qid)
                continue
        ranking = obj.get("ranking")
        if not isinstance(ranking, list):
            probs.add("'ranking' must be a list of item ids", lineno, qid)
            continue
        # every id a non-empty string (a trace's rankings): the list as it is
        items = (ranking if {*map(type, ranking)} <= {str} and all(ranking)
                 else [_id_value(v) for v in ranking])
        bad_pos = [i + 1 for i, v in enumerate(items) if v is None]
        if bad_pos:
            probs.add(
                f"'ranking' holds {len(bad_pos)} values that are not item ids (non-empty "
                f"strings or integers), first at position {bad_pos[0]}",
                lineno,
                qid,
            )
            continue
        raw_scores = obj.get("scores")
        scores: list[float] | None = None
        if raw_scores is None:
            pass
        elif not isinstance(raw_scores, list):
            probs.add("'scores' must be a list of numbers", lineno, qid)
            continue
        elif len(raw_scores) != len(items):
            probs.add(
                f"'scores' has {len(raw_scores)} values but 'ranking' has {len(items)}",
                lineno,
                qid,
            )
            continue
        else:
            if {*map(type, raw_scores)} <= {float}:  # JSON reals: floats already
                values: list[float | None] = raw_scores
            else:
                values = [_score_value(v) for v in raw_scores]
            bad = [i + 1 for i, v in enumerate(values) if v is None]
            if bad:
                probs.add(f"'scores' value at position {bad[0]} is not a number", lineno, qid)
                continue
            scores = [v for v in values if v is not None]
            nonfinite = ([] if all(map(math.isfinite, scores)) else
                         [i + 1 for i, v in enumerate(scores) if not math.isfinite(v)])
            if nonfinite:
                probs.add(
                    f"'scores' holds {len(nonfinite)} values that are not finite (NaN or "
                    f"infinite), first at position {nonfinite[0]}",
                    lineno,
                    qid,
                )
                continue
        key = (benchmark, system, qid)
        if key in groups:
            probs.add(
                f"a second ranking for this query (system {system!r}; first on line "
                f"{groups[key].line})",
                lineno,
                qid,
            )
            continue
        latency = obj.get("latency_ms")
        if latency is not None and (isinstance(latency, bool)
                                    or not isinstance(latency, (int, float))
                                    or not math.isfinite(latency) or latency < 0):
            probs.add("'latency_ms' must be a finite number of milliseconds, at least 0",
                      lineno, qid)
            continue
        groups[key] = _ListGroup(lineno, [v for v in items if v is not None] if items is not
                                 ranking else ranking, scores,
                                 None if latency is None else float(latency))
    return groups


def _row_fields(
    get: dict[str, Any],
    lineno: int,
    probs: Problems,
    default_system: str,
    from_json: bool,
) -> tuple[_Key, str, float | None, int, int] | None:
    """Validate one ranked-trace row given as a column -> value mapping."""
    qid = _id_value(get.get("query_id")) if from_json else (get.get("query_id") or "").strip()
    if not qid:
        probs.add("'query_id' is missing or empty", lineno)
        return None
    raw_item = get.get("retrieved_id")
    item = _id_value(raw_item) if from_json else (raw_item or "").strip()
    if not item:
        probs.add("'retrieved_id' is missing or empty", lineno, qid)
        return None
    raw_rank = get.get("rank")
    rank: int | None
    if from_json:
        if isinstance(raw_rank, bool):
            rank = None
        elif isinstance(raw_rank, int):
            rank = raw_rank
        elif isinstance(raw_rank, float) and raw_rank.is_integer():
            rank = int(raw_rank)
        else:
            rank = None
    else:
        rank = parse_int(raw_rank or "")
    raw_score = get.get("score")
    score: float | None = None
    bad = False
    if rank is None:
        probs.add(f"rank {raw_rank!r} is not an integer", lineno, qid)
        bad = True
    if raw_score is not None and not (isinstance(raw_score, str) and not raw_score.strip()):
        score = _score_value(raw_score) if from_json else _parse_float(raw_score)
        if score is None:
            probs.add(f"score {raw_score!r} is not a number", lineno, qid)
            bad = True
        elif not math.isfinite(score):
            probs.add(f"score {raw_score!r} is not finite", lineno, qid)
            bad = True
    if bad or rank is None:
        return None
    system = _name_value(get.get("system")) or default_system
    benchmark = _name_value(get.get("benchmark"))
    return (benchmark, system, qid), item, score, rank, lineno


def _parse_rows_csv(
    lines: Iterable[tuple[int, str]],
    header_line: int,
    delimiter: str,
    probs: Problems,
    default_system: str,
) -> dict[_Key, _Group]:
    groups: dict[_Key, _Group] = {}
    physical = (line for _, line in lines)
    reader = csv.reader(physical, delimiter=delimiter)
    offset = header_line - 1
    header = [c.strip().lower() for c in next(reader)]
    dup_cols = sorted({c for c in header if c and header.count(c) > 1})
    if dup_cols:
        probs.add(f"the header repeats the columns {dup_cols}", header_line)
        return groups
    for message in key_problems(dict.fromkeys(header), ROW_COLUMNS, "the header",
                                strict=False, extras=_ROWS_EXTRA):
        probs.add(message, header_line)  # the rows are still read: all problems at once
    qid_col = header.index("query_id")
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise TiapError(
                f"malformed CSV/TSV ({exc})", file=probs.file, line=reader.line_num + offset
            ) from exc
        lineno = reader.line_num + offset
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            qid = row[qid_col].strip() if len(row) > qid_col else ""
            probs.add(
                f"expected {len(header)} columns as in the header, found {len(row)}",
                lineno,
                qid or None,
            )
            continue
        fields = dict(zip(header, row, strict=True))
        parsed = _row_fields(fields, lineno, probs, default_system, False)
        if parsed is not None:
            _add_row(groups, *parsed)
    return groups


def _parse_rows_jsonl(
    lines: Iterable[tuple[int, str]], probs: Problems, default_system: str
) -> dict[_Key, _Group]:
    groups: dict[_Key, _Group] = {}
    for lineno, obj in _json_objects(lines, probs):
        for message in key_problems(obj, ROW_COLUMNS, "a ranked-trace row", strict=False,
                                    extras=_ROWS_EXTRA):
            probs.add(message, lineno)  # the row is still read: all problems at once
        parsed = _row_fields(obj, lineno, probs, default_system, True)
        if parsed is not None:
            _add_row(groups, *parsed)
    return groups


def _rank_order(group: _RowGroup, qid: str, system: str, probs: Problems) -> list[int] | None:
    """Row indexes in rank order; ranks must be 1..n without ties (problems otherwise,
    naming ``--order score`` when every row has a score)."""
    ranks, n = group.ranks, len(group.ranks)
    order = sorted(range(n), key=ranks.__getitem__)
    hint = "" if None in group.scores else f"; {ORDER_HINT}"
    ok = True
    for a, b in pairwise(order):
        if ranks[a] == ranks[b]:
            probs.add(
                f"rank {ranks[b]} is given twice ({group.items[a]!r} on line {group.lines[a]} "
                f"and {group.items[b]!r}); ties in rank are not allowed (system {system!r})"
                + hint,
                group.lines[b],
                qid,
            )
            ok = False
    if not ok:
        return None
    for pos, i in enumerate(order):
        if ranks[i] != pos + 1:
            if pos == 0:
                found = f"the lowest rank is {ranks[i]}"
            else:
                found = (
                    f"rank {pos + 1} is missing "
                    f"(ranks jump from {ranks[order[pos - 1]]} to {ranks[i]})"
                )
            probs.add(
                f"ranks must run 1..{n} for the {n} items of this query; {found} "
                f"(system {system!r})" + hint,
                group.lines[i],
                qid,
            )
            return None
    return order


def dedup_ranking(
    items: Sequence[str],
    *,
    query_id: str,
    system: str,
    dedup: Dedup,
    probs: Problems,
    warns: RunWarnings,
    file: str | Path | None = None,
    lines: Sequence[int | None] | None = None,
    unit: str = "rank",
    hint: str = "",
) -> list[int] | None:
    """The one rule for an item repeated in a ranked list, shared by every run reader and
    importer: the indexes of ``items`` to keep, or ``None`` when a repeat is an error.

    The rank order is the data, so a repeat is never removed silently. ``dedup="error"``:
    each repeat is a ``duplicate`` problem in ``probs`` naming the item, both ranks (and
    lines), the query and ``hint`` (what the user can do). ``dedup="first"``: each item's
    first occurrence is kept and every later one counted in a ``duplicate_dropped`` warning
    of ``warns`` saying so (the items after a dropped repeat move up one rank). ``lines[i]``
    is the line of ``items[i]`` (``None``: not known); ``unit`` names a place in the list
    (``rank``, ``position``).
    """
    where_lines = list(lines) if lines is not None else [None] * len(items)
    first: dict[str, int] = {}
    keep: list[int] = []
    ok = True
    for i, item in enumerate(items):
        j = first.get(item)
        if j is None:
            first[item] = i
            keep.append(i)
            continue
        if dedup == "error":
            where = f"{unit}s {j + 1} and {i + 1}"
            if where_lines[j] != where_lines[i] and where_lines[j] is not None:
                where += f"; first on line {where_lines[j]}"
            probs.add(
                f"item {item!r} appears more than once in the ranking ({where}) "
                f"(system {system!r})" + (f"; {hint}" if hint else ""),
                where_lines[i],
                query_id,
                file=file,
                code="duplicate",
            )
            ok = False
        else:
            warns.add(
                "duplicate_dropped",
                Problem(
                    f"dropped item {item!r} at {unit} {i + 1} (kept its {unit} {j + 1}); "
                    f"the items after it moved up one {unit}",
                    file=None if file is None else str(file),
                    line=where_lines[i],
                    query_id=query_id,
                    code="duplicate_dropped",
                ),
            )
    return keep if ok else None


def _finish(
    key: _Key,
    group: _Group,
    dedup: Dedup,
    path: Path,
    probs: Problems,
    warns: RunWarnings,
    order_by: Order = "rank",
) -> Ranking | None:
    """Validate one query's rows or list and build its Ranking (None if it has problems).

    After ordering, the item at index ``i`` has rank ``i + 1`` (rank formats were checked to
    run 1..n, or were sorted by :func:`score_order`), so duplicates and warnings are
    described by that rank or list position.
    """
    _benchmark, system, qid = key
    items: list[str]
    scores: list[float] | None
    lines: list[int]
    if isinstance(group, _RowGroup):
        unit = "rank"
        if order_by == "score":  # file order here; sorted by score below
            order: list[int] | None = list(range(len(group.items)))
        else:
            order = _rank_order(group, qid, system, probs)
        if order is None:
            return None
        items = [group.items[i] for i in order]
        lines = [group.lines[i] for i in order]
        row_scores = [group.scores[i] for i in order]
        n_missing = row_scores.count(None)
        if 0 < n_missing < len(row_scores):
            at = row_scores.index(None)
            probs.add(
                f"some rows of this query have a score and others do not (first without: "
                f"{items[at]!r}) (system {system!r})",
                lines[at],
                qid,
            )
            return None
        scores = None if n_missing else [v for v in row_scores if v is not None]
    else:
        unit = "position"
        items, scores, lines = group.items, group.scores, [group.line] * len(group.items)
    if order_by == "score" and items:
        if scores is None:
            probs.add(f"--order score (order='score') orders items by score, but this "
                      f"ranking has no scores (system {system!r})", lines[0], qid)
            return None
        by_score = score_order(np.asarray(scores, np.float64), id_keys(items)).tolist()
        items = [items[i] for i in by_score]
        lines = [lines[i] for i in by_score]
        scores = [scores[i] for i in by_score]
        unit = "rank"
    if len(set(items)) != len(items):
        keep = dedup_ranking(items, query_id=qid, system=system, dedup=dedup, probs=probs,
                             warns=warns, file=path, lines=lines, unit=unit,
                             hint="pass dedup='first' to keep its first occurrence")
        if keep is None:
            return None
        items = [items[i] for i in keep]
        lines = [lines[i] for i in keep]
        if scores is not None:
            scores = [scores[i] for i in keep]
    if order_by == "rank" and scores is not None and any(map(ge, scores[1:], scores[:-1])):
        rises = [i for i in range(1, len(scores)) if scores[i] > scores[i - 1]]
        code = "score_order" if rises else "score_ties"
        bad = rises[0] if rises else next(
            i for i in range(1, len(scores)) if scores[i] == scores[i - 1])
        warns.add(
            code,
            Problem(
                f"score {scores[bad]!r} at rank {bad + 1} is "
                f"{'above' if rises else 'equal to'} {scores[bad - 1]!r} "
                f"at rank {bad} (system {system!r})",
                file=str(path),
                line=lines[bad],
                query_id=qid,
            ),
        )
    return Ranking(qid, system, tuple(items), None if scores is None else tuple(scores),
                   getattr(group, "latency_ms", None))


def system_from_path(path: Path) -> str:
    """A system name from a file name: ``runs/bm25.trec.gz`` -> ``bm25``.

    >>> system_from_path(Path("runs/bm25.trec.gz")), system_from_path(Path("dense.jsonl"))
    ('bm25', 'dense')
    """
    name = path.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    return Path(name).stem or name or "run"


def read_run(
    path: str | Path,
    *,
    system: str | None = None,
    dedup: Dedup = "error",
    order: Order = "rank",
) -> list[Run]:
    """Read a run file in any supported format, recognised by content; gzip is transparent.

    Returns one :class:`Run` per (benchmark, system) found in the file, in order of first
    appearance; each run's rankings are in order of first appearance of their query.

    Args:
        path: the file (plain or gzip; the name does not matter).
        system: the system to read. Rankings of other systems are left out, and it is an
            error if the file has none for it. Records that name no system (JSONL without
            ``"system"``, rows without a system column or value) are given this name, or the
            file name's stem when ``system`` is ``None``.
        dedup: ``"error"`` (default): an item appearing twice in one ranking is an error
            naming the query and the item. ``"first"``: keep each item's first occurrence in
            rank order, drop the rest, and count them in a ``duplicate_dropped``
            :class:`RunWarning` on the run.
        order: ``"rank"`` (default): the rank column (or the list order) is the data; ranks
            must run ``1..n`` per query without ties, and scores that do not strictly
            decrease are counted in ``score_order`` / ``score_ties`` warnings.
            ``"score"``: trec_eval's order (:func:`score_order`): the rank column is not used
            (it must still be an integer), every ranked item needs a score, and no score
            warning is counted, since the order is the scores'.

    Raises:
        TiapError: unknown format (naming the file and quoting its first line), an empty
            file, a truncated or corrupt gzip stream, text that is not UTF-8, or bad records.
            Record problems are collected over the whole file and raised together, each
            naming file, line and query: wrong column count, a non-integer rank, a
            non-numeric, NaN or infinite score, ranks of a query that are not ``1..n`` or
            tie (in rank order; the message names ``--order score`` when the rows have
            scores), a ranking without scores (in score order), a duplicate item (with
            ``dedup="error"``), a query ranked twice by one system (JSONL rankings), scores
            of another length than the ranking.

    Example: a TREC run, its lines out of rank order (the rank column decides):

    >>> _ = Path("bm25.trec").write_text("q1 Q0 d2 2 1.5 bm25\\nq1 Q0 d1 1 2.0 bm25\\n"
    ...                                  "q2 Q0 e1 1 9.0 bm25\\n")
    >>> (run,) = read_run("bm25.trec")
    >>> run.system, run.format, run.query_ids
    ('bm25', 'trec', ('q1', 'q2'))
    >>> run.ranking("q1").item_ids, run.ranking("q1").scores
    (('d1', 'd2'), (2.0, 1.5))

    JSONL rankings are read the same way; a ranking that repeats an item is refused, or
    with ``dedup="first"`` kept once and counted:

    >>> _ = Path("mem.jsonl").write_text('{"query_id": "q1", "ranking": ["m1", "m2", "m1"]}\\n')
    >>> read_run("mem.jsonl")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: mem.jsonl:1, query q1: item 'm1' appears more than once in the
    ranking (positions 1 and 3) (system 'mem'); pass dedup='first' to keep its first occurrence
    >>> (run,) = read_run("mem.jsonl", dedup="first")
    >>> run.system, run.ranking("q1").item_ids, run.warnings[0].code
    ('mem', ('m1', 'm2'), 'duplicate_dropped')
    """
    if dedup not in ("error", "first"):
        raise TiapError(f"dedup must be 'error' or 'first', not {dedup!r}")
    check_order(order)
    path = Path(path)
    default_system = system if system is not None else system_from_path(path)
    probs = Problems(path)
    stores: dict[tuple[str | None, str], tuple[str, int]] = {}
    with open_text(path) as fh:
        lines = numbered_lines(fh)
        first = first_line(lines)
        if first is None:
            raise TiapError("empty run file: it holds no rankings", file=path)
        header = _trace_header(first[1])
        if header is not None:  # a TIAP trace: keep its header line as run metadata
            first = first_line(lines)
            if first is None:
                raise TiapError("empty run file: a trace header but no rankings", file=path)
        fmt = _detect(path, *first)
        all_lines = chain([first], lines)
        if fmt == FORMAT_TREC:
            groups = _parse_trec(all_lines, path, probs)
        elif fmt == FORMAT_JSONL:
            groups = _parse_jsonl_rankings(all_lines, probs, default_system, stores)
        elif fmt == FORMAT_ROWS_JSONL:
            groups = _parse_rows_jsonl(all_lines, probs, default_system)
        else:
            delimiter = "\t" if fmt == FORMAT_ROWS_TSV else ","
            groups = _parse_rows_csv(all_lines, first[0], delimiter, probs, default_system)
    if not groups and not probs.total:
        raise TiapError("empty run file: a header but no rows", file=path, line=first[0])
    if system is not None:
        present = sorted({k[1] for k in groups})
        groups = {k: g for k, g in groups.items() if k[1] == system}
        if not groups and not probs.total:
            raise TiapError(
                f"no rankings for system {system!r}; the file holds "
                + (", ".join(repr(s) for s in present) or "none"),
                file=path,
            )
    per_run: dict[tuple[str | None, str], list[Ranking]] = {}
    per_run_warns: dict[tuple[str | None, str], RunWarnings] = {}
    for key, group in groups.items():
        run_key = (key[0], key[1])
        warns = per_run_warns.setdefault(run_key, RunWarnings())
        ranking = _finish(key, group, dedup, path, probs, warns, order)
        if ranking is not None:
            per_run.setdefault(run_key, []).append(ranking)
    probs.raise_if_any()
    return [
        Run(
            system=sys_name,
            rankings=tuple(rankings),
            source=path,
            format=fmt,
            benchmark=benchmark,
            warnings=per_run_warns[(benchmark, sys_name)].freeze(),
            header=header,
            store=(stores.get((benchmark, sys_name)) or (_header_store(header), 0))[0],
        )
        for (benchmark, sys_name), rankings in per_run.items()
    ]


def _header_store(header: dict[str, Any] | None) -> str | None:
    store = (header or {}).get("store")
    name = store.get("name") if isinstance(store, dict) else None
    return name if isinstance(name, str) else None


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _as_runs(runs: Run | Iterable[Run]) -> list[Run]:
    return [runs] if isinstance(runs, Run) else list(runs)


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    """Atomically write text lines; a ``.gz`` name is gzip-compressed (reproducibly: mtime 0)."""
    n = 0
    if path.name.lower().endswith(".gz"):
        with (
            atomic_write(path, "wb", encoding=None) as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            io.TextIOWrapper(gz, encoding="utf-8", newline="") as text,
        ):
            for line in lines:
                text.write(line)
                n += 1
    else:
        with atomic_write(path) as fh:
            for line in lines:
                fh.write(line)
                n += 1
    return n


def _trec_token_problem(value: str) -> str | None:
    if not value:
        return "is empty"
    if _WHITESPACE.search(value):
        return "contains whitespace"
    return None


def write_trec_run(path: str | Path, runs: Run | Iterable[Run], *, skip_empty: bool = False) -> int:
    """Atomically write runs as one TREC run file (``qid Q0 docid rank score tag``).

    Items are written in rank order with ``rank`` 1..n and ``score = depth - rank + 1``,
    where ``depth`` is the longest ranking written: scores strictly decrease within every
    query, so trec_eval (which ignores the rank column and sorts by score, then docno) and
    the tools built on it see exactly TIAP's order. The original scores are not written;
    JSONL keeps them. The tag is the run's system. A name ending in ``.gz`` is compressed.

    Everything is checked before anything is written, and all problems are raised together:
    a query id, item id or system containing whitespace or empty (a TREC line could not hold
    it), the same (system, query) in two runs, and, unless ``skip_empty``, an empty ranking
    (a TREC file cannot hold one; trec_eval then drops the query instead of scoring it 0).

    >>> run = Run("bm25", [Ranking("q1", "bm25", ["d2", "d1"], [0.9, 0.9]),
    ...                    Ranking("q2", "bm25", ["d3"])])
    >>> write_trec_run("bm25.trec", run)
    3
    >>> print(Path("bm25.trec").read_text(), end="")
    q1 Q0 d2 1 2 bm25
    q1 Q0 d1 2 1 bm25
    q2 Q0 d3 1 2 bm25

    Returns:
        The number of lines written.
    """
    path = Path(path)
    run_list = _as_runs(runs)
    probs = Problems(path)
    seen: dict[tuple[str, str], int] = {}
    for n, run in enumerate(run_list, start=1):
        bad = _trec_token_problem(run.system)
        if bad:
            probs.add(f"run {n}: system name {run.system!r} {bad}; it is the TREC tag column")
        for r in run.rankings:
            key = (run.system, r.query_id)
            if key in seen:
                probs.add(
                    f"system {run.system!r} ranks this query in two runs ({seen[key]} and {n})",
                    query_id=r.query_id,
                )
            seen[key] = n
            bad = _trec_token_problem(r.query_id)
            if bad:
                probs.add(
                    f"query id {r.query_id!r} {bad}; a TREC run cannot hold it",
                    query_id=r.query_id,
                )
            if not r.item_ids and not skip_empty:
                probs.add(
                    f"empty ranking (system {run.system!r}): a TREC run cannot hold it; "
                    "pass skip_empty=True to leave it out (trec_eval then drops the query)",
                    query_id=r.query_id,
                )
            for rank, item in enumerate(r.item_ids, start=1):
                bad = _trec_token_problem(item)
                if bad:
                    probs.add(
                        f"item id {item!r} at rank {rank} {bad}; a TREC run cannot hold it "
                        f"(system {run.system!r}, from {run.source or 'a run built in code'})",
                        query_id=r.query_id,
                    )
    probs.raise_if_any()
    depth = max((r.depth for run in run_list for r in run.rankings), default=0)

    def lines() -> Iterator[str]:
        for run in run_list:
            for r in run.rankings:
                for rank, item in enumerate(r.item_ids, start=1):
                    yield f"{r.query_id} Q0 {item} {rank} {depth - rank + 1} {run.system}\n"

    return _write_lines(path, lines())


def write_jsonl_run(path: str | Path, runs: Run | Iterable[Run]) -> int:
    """Atomically write runs as JSONL rankings, one query of one system a line.

    Each line is ``{"query_id", "system", "store"?, "benchmark"?, "ranking", "scores"?}``,
    with ``store`` and ``benchmark`` only when the run has them and ``scores`` only when
    the ranking has them;
    ids may hold any characters. A name ending in ``.gz`` is compressed.

    >>> run = Run("bm25", [Ranking("q1", "bm25", ["d2", "d1"], [0.9, 0.4])], store="raw")
    >>> write_jsonl_run("bm25.jsonl", run)
    1
    >>> print(Path("bm25.jsonl").read_text(), end="")
    {"query_id":"q1","system":"bm25","store":"raw","ranking":["d2","d1"],"scores":[0.9,0.4]}
    >>> read_run("bm25.jsonl")[0].rankings == run.rankings
    True

    Raises:
        TiapError: the same (benchmark, system, query) in two runs (nothing is written).

    Returns:
        The number of lines (rankings) written.
    """
    path = Path(path)
    run_list = _as_runs(runs)
    probs = Problems(path)
    seen: set[tuple[str | None, str, str]] = set()
    for run in run_list:
        for r in run.rankings:
            key = (run.benchmark, run.system, r.query_id)
            if key in seen:
                probs.add(
                    f"system {run.system!r} ranks this query in more than one run",
                    query_id=r.query_id,
                )
            seen.add(key)
    probs.raise_if_any()

    def lines() -> Iterator[str]:
        for run in run_list:
            for r in run.rankings:
                row: dict[str, Any] = {"query_id": r.query_id, "system": run.system}
                if run.store is not None:
                    row["store"] = run.store
                if run.benchmark is not None:
                    row["benchmark"] = run.benchmark
                row["ranking"] = list(r.item_ids)
                if r.scores is not None:
                    row["scores"] = list(r.scores)
                if r.latency_ms is not None:
                    row["latency_ms"] = r.latency_ms
                yield json.dumps(row, ensure_ascii=False, separators=(",", ":"),
                                 allow_nan=False) + "\n"

    return _write_lines(path, lines())
