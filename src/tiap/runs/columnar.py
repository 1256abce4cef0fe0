"""Columnar readers for TREC run and qrels files: from the file straight to integer arrays.

:func:`read_run` (:mod:`tiap.runs.formats`) gives Python :class:`~tiap.runs.formats.Ranking`
objects, one string per ranked item. That is the reference reader, and it is right for
small runs, but a run of 10^6 queries x 60 items would take tens of GB as Python strings.
This module reads the same files into what the scoring kernels use:

- :func:`read_run_columnar` -> :class:`ColumnarRun`: query ids, one ``int32 [Q, D]`` matrix
  of item codes in rank order (``-1`` padding at the end of a row), and the item ids by
  code (:class:`IdIndex`). ``RankingIndex(run.rankings)`` prepares it for scoring.
- :func:`fast_qrels`: TREC qrels (``qid iter docid rel``) as arrays of query index, item
  code and relevance, one entry per judgment line, for :func:`tiap.runs.qrels.read_qrels`.

**One set of rules.** The columnar reader accepts exactly the files :func:`read_run`
accepts and gives the same rankings: the rank column is authoritative, ranks must run
``1..n`` per query without ties, an item may not appear twice in a ranking (or, with
``dedup="first"``, its first occurrence is kept), scores must be finite numbers, and a
ranking whose scores rise is counted in a ``score_order`` warning, one whose scores only tie
in a ``score_ties`` warning. With ``order="score"`` the rank column is not used and each
query is sorted by :func:`~tiap.runs.formats.score_order`, the function :func:`read_run`
calls (trec_eval's order: score, then item id as bytes, descending). Scores are checked,
then dropped: TIAP scores by rank.

**How.** With pyarrow installed (the ``parquet`` extra), a TREC file whose columns are
separated by single spaces or single tabs is parsed by ``pyarrow.csv`` in pieces of 16 MB
(each split into 1 MB blocks over the cores). Query and item columns are dictionary-encoded per piece, so no Python string is
made per row, and each piece's items are written straight into the ranking matrix. The
pieces' dictionaries are merged at the end. With ``order="score"``, a row's lines fill it
in file order, their scores fill a float matrix beside it, and each row is sorted at the
end by its scores and the ids' byte order (``pyarrow.compute.sort_indices``). Ids of at
most 12 bytes (numbers, ``d123``, ``doc-00212336``) are hashed as integers, not strings:
up to 7 bytes, bytes and length make one exact 64-bit key; 8-12-byte ids are folded into
one, and rows whose folds agree are compared, so the codes are exact either way
(:mod:`tiap.ids`). Longer ids are hashed as strings. While reading,
pyarrow allocates from its jemalloc pool, which reuses freed pages (see
:func:`_reader_memory`). Memory is the matrix (4 bytes per ranked item; 12 while reading
with ``order="score"``) plus a few pieces.
Everything else takes the reference route (``read_run``, then
:meth:`ColumnarRun.from_run`): other run formats (JSONL, ranked-trace rows), other
whitespace, files with duplicates under ``dedup="first"``, a missing pyarrow, and every
file with a problem, so that errors are the reference reader's, each naming the file, line
and query. Where pyarrow is laxer than the reference (ids holding other whitespace, empty
fields, hexadecimal integers), the difference is checked and the file sent to the
reference reader.

Qrels follow the same pattern (:func:`tiap.runs.qrels.read_qrels`): :func:`fast_qrels`
when pyarrow is there and the file is clean; otherwise the plain reader of
:mod:`tiap.runs.qrels`, which reports every problem with its file, line and query.
"""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problem, TiapError
from tiap.ids import (
    MAX_DEPTH,
    IdIndex,
    Keys,
    Vocabulary,
    comparable,
    encode_keys,
    joined,
    keys_of,
    pyarrow_or_none,
)
from tiap.io import is_gzip, numbered_lines, open_text
from tiap.runs.formats import (
    FORMAT_TREC,
    MAX_EXAMPLES,
    WARNING_TEXT,
    Dedup,
    Order,
    Ranking,
    Run,
    RunWarning,
    check_order,
    detect_run_format,
    first_line,
    parse_int,
    read_run,
    score_order,
)

__all__ = [
    "ColumnarRun",
    "fast_qrels",
    "read_run_columnar",
]

#: Bytes of text parsed at a time (pyarrow splits them into 1 MB blocks over the cores).
BLOCK_BYTES = 1 << 24
#: Pending per-block item dictionaries are merged once they hold this many entries.
_MERGE_ENTRIES = 1 << 22
#: Rows per step when checking and re-coding the ranking matrix.
_ROW_BLOCK = 1 << 15


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ColumnarRun:
    """One system's rankings as arrays.

    ``rankings[i]`` is the ranking of ``query_ids[i]``: item codes in rank order (column 0
    is rank 1), ``-1`` after the last ranked item; ``items[c]`` is the id of code ``c``.
    The matrix is read-only and its rows hold no repeated code. ``warnings`` are the
    reader's counted findings (as on :class:`~tiap.runs.formats.Run`).

    >>> run = Run("bm25", [Ranking("q1", "bm25", ["d2", "d1"]), Ranking("q2", "bm25", ["d1"])])
    >>> col = ColumnarRun.from_run(run)
    >>> col.rankings.tolist(), col.items.to_list()
    ([[0, 1], [1, -1]], ['d2', 'd1'])
    >>> col.lengths.tolist(), col.ranking("q2")
    ([2, 1], ('d1',))
    >>> col.to_run().rankings == run.rankings
    True
    """

    system: str
    query_ids: tuple[str, ...]
    rankings: NDArray[np.int32]
    items: IdIndex
    source: Path | None = None
    format: str | None = None
    benchmark: str | None = None
    warnings: tuple[RunWarning, ...] = ()

    @property
    def n_queries(self) -> int:
        return int(self.rankings.shape[0])

    @property
    def depth(self) -> int:
        """The matrix width: the longest ranking."""
        return int(self.rankings.shape[1])

    @cached_property
    def lengths(self) -> NDArray[np.int64]:
        """Ranked items per query."""
        return np.asarray((self.rankings >= 0).sum(axis=1), np.int64).reshape(self.n_queries)

    def ranking(self, query_id: str) -> tuple[str, ...]:
        """The ranked ids of one query (:class:`KeyError` if the run has none)."""
        try:
            row = self.query_ids.index(query_id)
        except ValueError:
            raise KeyError(query_id) from None
        codes = self.rankings[row]
        return tuple(self.items.decode(codes[codes >= 0]))  # type: ignore[arg-type]

    @classmethod
    def from_run(cls, run: Run) -> ColumnarRun:
        """Code a :class:`~tiap.runs.formats.Run` (its rankings are already deduplicated)."""
        vocab = Vocabulary()
        qids = tuple(r.query_id for r in run.rankings)
        matrix = vocab.code_rows(r.item_ids for r in run.rankings)
        matrix.setflags(write=False)
        return cls(
            system=run.system,
            query_ids=qids,
            rankings=matrix,
            items=IdIndex([str(i) for i in vocab.ids]),
            source=run.source,
            format=run.format,
            benchmark=run.benchmark,
            warnings=run.warnings,
        )

    def to_run(self) -> Run:
        """The same rankings as a :class:`~tiap.runs.formats.Run` (without scores)."""
        ids = self.items.to_list()
        rankings = tuple(
            Ranking(q, self.system, tuple(ids[c] for c in row if c >= 0))
            for q, row in zip(self.query_ids, self.rankings.tolist(), strict=True)
        )
        return Run(self.system, rankings, source=self.source, format=self.format,
                   benchmark=self.benchmark, warnings=self.warnings)


# --------------------------------------------------------------------------------------------
# Shared pyarrow plumbing
# --------------------------------------------------------------------------------------------


class _GiveUp(Exception):
    """The fast path cannot vouch for this file; the reference reader decides."""


def _delimiter(path: Path, n_columns: int) -> str | None:
    """``' '`` or ``'\\t'`` when the first non-blank line splits into ``n_columns`` non-empty
    fields on it (the fast path's condition), else ``None``."""
    with open_text(path) as fh:
        first = first_line(numbered_lines(fh))
    if first is None:
        return None
    line = first[1].rstrip("\r\n")
    for delim in ("\t", " "):
        fields = line.split(delim)
        if len(fields) == n_columns and all(fields):
            return delim
    return None


#: Column kinds for :func:`_batches`.
_ID, _QID, _TEXT, _FLOAT, _INT = "id", "query id", "text", "float", "int"


@dataclass
class _Coded:
    """A column dictionary-encoded: ``indices`` (int32, pyarrow) into ``values``, the
    distinct values in order of first appearance, as strings or as :class:`Keys` (strings
    made only when :attr:`dictionary` is asked for)."""

    indices: Any
    values: Any

    @cached_property
    def dictionary(self) -> Any:
        return self.values.strings() if isinstance(self.values, Keys) else self.values


def _dictionary_encode(strings: Any) -> _Coded:
    """``pyarrow.compute.dictionary_encode`` of a string array (codes in order of first
    appearance): integer keys for ids of at most 12 bytes (:class:`Keys`), else the
    strings themselves."""
    import pyarrow.compute as pc

    keyed = keys_of(strings)
    if keyed is not None:
        encoded = encode_keys(keyed)
        if encoded is not None:
            return _Coded(*encoded)
    # longer ids: hashed as they are (as string views they hash ~25% slower: their bytes
    # no longer sit in the view)
    plain = pc.dictionary_encode(strings)
    return _Coded(plain.indices, plain.dictionary)


def _encoded(column: Any, grouped: bool = False) -> _Coded:
    """A chunked string column dictionary-encoded as one (one dictionary); ``grouped``
    columns (query ids) usually repeat each value on consecutive rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()  # one array: one pass, one dictionary
    if grouped:  # query ids come in runs of equal values: hash one value per run
        runs = pc.run_end_encode(column)
        if len(runs.values) * 4 <= len(column):
            encoded = _dictionary_encode(runs.values)
            lengths = np.diff(runs.run_ends.to_numpy(), prepend=0)
            indices = np.repeat(encoded.indices.to_numpy(), lengths)
            return _Coded(pa.array(indices), encoded.values)
    return _dictionary_encode(column)


@dataclass
class _Batch:
    """Rows of one chunk of a file: ``columns[i]`` in the order asked for."""

    columns: list[Any]
    num_rows: int

    def column(self, i: int) -> Any:
        return self.columns[i]


def _text_chunks(path: Path) -> Iterator[memoryview]:
    """The bytes of a file (gunzipped) in pieces of about BLOCK_BYTES, cut after a newline.

    One buffer is reused: each piece is only valid until the next one is asked for.
    """

    gz = is_gzip(path)
    opener: Any = gzip.open if gz else open
    buf = bytearray(BLOCK_BYTES if gz else max(1, min(BLOCK_BYTES, path.stat().st_size)))
    view = memoryview(buf)
    kept = 0  # bytes of an unfinished line carried to the front of the buffer
    with opener(path, "rb") as fh:
        while True:
            if kept == len(buf):  # a line longer than the buffer: a bigger buffer
                bigger = bytearray(2 * len(buf))
                bigger[:kept] = buf
                buf, view = bigger, memoryview(bigger)
            got = fh.readinto(view[kept:])
            if not got:
                break
            end = kept + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:
                kept = end
                continue
            yield view[:cut]
            buf[: end - cut] = buf[cut:end]
            kept = end - cut
        if kept:
            yield view[:kept]


def _batches(path: Path, delimiter: str, columns: dict[int, str],
             n_columns: int) -> Iterator[_Batch]:
    """Parse ``path`` a chunk at a time with ``pyarrow.csv.read_csv`` (which uses every core
    on the 1 MB blocks of a chunk), keeping ``columns`` (index -> kind): ids come
    dictionary-encoded, text as strings, floats as float64. Any pyarrow error, or bytes that
    are not UTF-8, means :class:`_GiveUp`."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    names = [f"c{i}" for i in range(n_columns)]
    types = {names[i]: (pa.float64() if kind == _FLOAT else pa.string())
             for i, kind in columns.items()}
    # an integer column is parsed as int64 by pyarrow when the text holds no 'x' or 'X'
    # (pyarrow, unlike the reference reader, also reads hexadecimal 0x...); otherwise it
    # is read as text and parsed through its (small) dictionary, as the reference does
    int_types = types | {names[i]: pa.int64() for i, kind in columns.items() if kind == _INT}
    read_options = pa_csv.ReadOptions(column_names=names, block_size=1 << 20, use_threads=True)
    parse_options = pa_csv.ParseOptions(delimiter=delimiter, quote_char=False, double_quote=False,
                                        escape_char=False, newlines_in_values=False,
                                        ignore_empty_lines=True)
    options = {
        hex_free: pa_csv.ConvertOptions(
            include_columns=[names[i] for i in columns],
            column_types=int_types if hex_free else types,
            null_values=[], true_values=[], false_values=[],
            strings_can_be_null=False, quoted_strings_can_be_null=False, check_utf8=True,
        )
        for hex_free in (False, True)
    }
    try:
        for text in _text_chunks(path):
            raw = text.obj
            hex_free = raw.find(b"x", 0, len(text)) < 0 and raw.find(b"X", 0, len(text)) < 0
            table = pa_csv.read_csv(pa.BufferReader(pa.py_buffer(text)),
                                    read_options=read_options, parse_options=parse_options,
                                    convert_options=options[hex_free])
            if table.num_rows == 0:
                continue
            kinds = list(columns.values())
            cols: list[Any] = [table.column(j) for j in range(len(kinds))]
            ids = [j for j, kind in enumerate(kinds)
                   if kind in (_ID, _QID) or (kind == _INT and not hex_free)]
            for j in ids:
                cols[j] = _encoded(cols[j], kinds[j] == _QID)
            for j, kind in enumerate(kinds):
                if kind == _FLOAT or (kind == _INT and hex_free):
                    cols[j] = cols[j].to_numpy()
            yield _Batch(cols, table.num_rows)
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise _GiveUp(str(exc)) from exc


def _release_arrow_memory() -> None:
    """Hand the parser's freed blocks back to the system (pyarrow's allocator keeps them)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


_POOL_LOCK = threading.Lock()
_pool_state: dict[str, Any] = {"users": 0, "saved": None}


@contextmanager
def _reader_memory() -> Iterator[None]:
    """pyarrow's jemalloc pool as its default pool while files are read, where pyarrow has
    one and ``ARROW_DEFAULT_MEMORY_POOL`` does not choose another.

    The reader allocates and frees a few tens of MB per piece. The default pool (mimalloc)
    hands freed pages back to the system at once and asks for transparent huge pages, so
    every piece faults in and zeroes fresh 2 MB pages; jemalloc reuses the pages it freed.
    Measured here at 10^5 queries (benchmarks/README.md): median end to end 1.19 s against
    1.37 s over eight alternating runs, and steadier. Nested and concurrent readers share the switch; the last one out restores
    the previous pool.
    """
    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        yield
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowException):  # pragma: no cover - build-dependent
        yield
        return
    with _POOL_LOCK:
        if _pool_state["users"] == 0:
            _pool_state["saved"] = pa.default_memory_pool()
            pa.set_memory_pool(pool)
        _pool_state["users"] += 1
    try:
        yield
    finally:
        with _POOL_LOCK:
            _pool_state["users"] -= 1
            if _pool_state["users"] == 0:
                pa.set_memory_pool(_pool_state["saved"])
                _pool_state["saved"] = None


def _whitespace_pattern() -> str:
    """An RE2 pattern matching the empty string or any character ``str.split()`` splits on."""
    codes = [c for c in range(0x10000) if chr(c).isspace()]  # all lie in the BMP
    ranges: list[list[int]] = []
    for c in codes:
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    parts = "".join(
        f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges
    )
    return f"^$|[{parts}]"


_SPACE_PATTERN: list[str] = []


def _check_tokens(values: Any) -> None:
    """Give up unless every value is a non-empty token without whitespace.

    The reference reader splits lines on any whitespace (``str.split()``); pyarrow splits on
    one delimiter only, so an id holding, say, a tab or a no-break space, or an empty field
    between two spaces, must send the file to the reference reader.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values, pa.string())
    if len(values) == 0:
        return
    if not _SPACE_PATTERN:
        _SPACE_PATTERN.append(_whitespace_pattern())
    if pc.any(pc.match_substring_regex(values, _SPACE_PATTERN[0])).as_py():
        raise _GiveUp("an id is empty or holds whitespace")


def _all_equal(column: Any, value: str) -> bool:
    """Whether every row of a string column (array or chunked) holds ``value``.

    Read off the column's buffers: the offsets step by the value's length, and the bytes
    are the value repeated (several times faster than comparing row by row).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = value.encode("utf-8")
    width = len(raw)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        n = len(chunk)
        if n == 0:
            continue
        if chunk.null_count or chunk.type != pa.string():
            return bool(pc.all(pc.equal(chunk, value)).as_py())
        offsets = np.frombuffer(chunk.buffers()[1], np.int32, count=n + 1,
                                offset=4 * chunk.offset)
        start, stop = int(offsets[0]), int(offsets[-1])
        if stop - start != n * width:
            return False
        if width == 0:
            continue  # n empty strings
        if not (np.diff(offsets) == width).all():
            return False
        if not chunk.buffers()[2][start:stop].equals(pa.py_buffer(raw * n)):
            return False
    return True


def _constant_or_encoded(column: Any) -> Any:
    """A string column as a dictionary array (a column of one repeated value, such as the
    ``Q0`` or tag column of most runs, is recognised without hashing every row)."""
    import pyarrow as pa

    first = column[0].as_py()
    if _all_equal(column, first):
        return pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(len(column), np.int32)), pa.array([first], pa.string())
        )
    return _encoded(column)


def _ints(column: Any) -> NDArray[np.int64]:
    """The integers of an ``_INT`` column (int64 values, or a dictionary of texts)."""
    if isinstance(column, np.ndarray):
        return column
    return _int_lookup(column.dictionary)[column.indices.to_numpy()]


def _int_lookup(dictionary: Any) -> NDArray[np.int64]:
    """Integers for a dictionary of integer texts, parsed as the reference reader does."""
    texts = dictionary.to_pylist()
    values = [parse_int(s) for s in texts]
    if any(v is None for v in values) or any(len(s.split()) != 1 for s in texts):
        raise _GiveUp("a value is not an integer")
    return np.asarray(values, np.int64)


class _Dictionaries:
    """Unifies per-block dictionaries of ids into one index, without a Python string per id.

    Block ``b``'s local code ``c`` is first given the provisional code ``offset_b + c``;
    pending dictionaries are merged into the unified one every few million entries
    (dictionary-encoding the concatenation keeps the unified ids first, so their codes do
    not move), and :meth:`finish` returns the map from provisional to final codes. Final
    codes follow first appearance in the file. Dictionaries given as :class:`Keys` are
    merged by their keys; strings are made once, for the unified ids.
    """

    def __init__(self) -> None:
        self.unified: Any = None
        self.pending: list[Any] = []
        self.pending_entries = 0
        self.offset = 0
        self.maps: list[NDArray[np.int32]] = []

    def add(self, dictionary: Any) -> int:
        """Register one block's dictionary (strings or :class:`Keys`); returns its offset."""
        offset = self.offset
        self.pending.append(dictionary)
        self.offset += len(dictionary)
        self.pending_entries += len(dictionary)
        if self.offset >= 2**31 - 1:
            raise _GiveUp("too many distinct ids")
        if self.pending_entries >= _MERGE_ENTRIES:
            self._merge()
        return offset

    def _merge(self) -> None:
        import pyarrow as pa

        if not self.pending:
            return
        if self.unified is None and len(self.pending) == 1:  # already unique: nothing to merge
            self.unified = self.pending[0]
            self.maps.append(np.arange(len(self.unified), dtype=np.int32))
            self.pending, self.pending_entries = [], 0
            return
        parts = ([self.unified] if self.unified is not None else []) + self.pending
        merged: Any = None
        if all(isinstance(p, Keys) for p in parts):
            merged = encode_keys(joined(comparable(parts)))
        if merged is None:
            strings = [p.strings() if isinstance(p, Keys) else p for p in parts]
            if sum(p.nbytes for p in strings) > 2**30:
                strings = [p.cast(pa.large_string()) for p in strings]
            coded = _dictionary_encode(pa.concat_arrays(strings))
            merged = coded.indices, coded.values
        indices, self.unified = merged
        known = 0 if len(parts) == len(self.pending) else len(parts[0])
        self.maps.append(np.asarray(indices.to_numpy()[known:], np.int32))
        self.pending, self.pending_entries = [], 0

    def finish(self) -> tuple[Any, NDArray[np.int32]]:
        """(unified ids, provisional -> final code map with ``-1`` appended for padding)."""
        import pyarrow as pa

        self._merge()
        unified = self.unified if self.unified is not None else pa.array([], pa.string())
        if isinstance(unified, Keys):
            unified = unified.strings()
        return unified, np.concatenate([*self.maps, np.array([-1], np.int32)])


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


@dataclass
class _Violations:
    """Score-order findings: per ranking (row), its first non-decreasing step."""

    rows: list[NDArray[np.int64]] = field(default_factory=list)
    ranks: list[NDArray[np.int64]] = field(default_factory=list)
    before: list[NDArray[np.float64]] = field(default_factory=list)
    after: list[NDArray[np.float64]] = field(default_factory=list)

    def add(self, rows: NDArray[Any], ranks: NDArray[Any], before: NDArray[Any],
            after: NDArray[Any]) -> None:
        if rows.size == 0:
            return
        order = np.lexsort((ranks, rows))
        rows, ranks, before, after = rows[order], ranks[order], before[order], after[order]
        first = np.ones(rows.size, bool)
        first[1:] = rows[1:] != rows[:-1]
        self.rows.append(rows[first])
        self.ranks.append(ranks[first])
        self.before.append(before[first])
        self.after.append(after[first])

    def per_row(self) -> tuple[NDArray[np.int64], ...]:
        """(row, rank, score before, score after) of each row's first step, by row."""
        if not self.rows:
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros(0), np.zeros(0)
        rows, ranks = np.concatenate(self.rows), np.concatenate(self.ranks)
        before, after = np.concatenate(self.before), np.concatenate(self.after)
        order = np.lexsort((ranks, rows))
        rows, ranks, before, after = rows[order], ranks[order], before[order], after[order]
        first = np.ones(rows.size, bool)
        first[1:] = rows[1:] != rows[:-1]
        return rows[first], ranks[first], before[first], after[first]


class _RunBuilder:
    """Places the rows of a TREC run, block by block, into a growing ranking matrix.

    Row ``r`` of the matrix is the ranking of the ``r``-th (tag, query) pair met in the
    file; the line with rank ``k`` writes its item's provisional code into column ``k - 1``.
    ``counts[r]`` counts the lines of row ``r``: when every row has ``counts[r]`` filled
    cells and no gap, its ranks were exactly ``1..n`` (a repeated rank overwrites a cell).

    With ``by_score`` (``order="score"``) the rank column is not used: a row's lines fill
    its columns in file order, their scores a matrix beside it, and :meth:`finish` sorts
    each row by :func:`~tiap.runs.formats.score_order`.
    """

    def __init__(self, max_depth: int, size_hint: int, by_score: bool = False) -> None:
        self.max_depth = max_depth
        self.size_hint = size_hint
        self.by_score = by_score
        #: with ``by_score``: the score of each cell of the matrix (-inf: padding)
        self.score_matrix = np.full((0, 0), -np.inf)
        self.tags: dict[str, int] = {}
        self.rows_by_tag: list[dict[str, int]] = []  # per tag: query id -> row
        self.row_qids: list[str] = []
        self.row_tags: list[int] = []
        self.matrix = np.full((0, 0), -1, np.int32)
        self.counts = np.zeros(0, np.int64)
        self.items = _Dictionaries()
        self.rows_read = 0
        self.pairs_checked = 0
        self.last: tuple[int, int, float] | None = None  # (row, rank, score) of the last line
        self.rises = _Violations()  # a score above the one of the rank before
        self.ties = _Violations()  # a score equal to the one of the rank before

    @property
    def n_rows(self) -> int:
        return len(self.row_qids)

    # -- growth ----------------------------------------------------------------------------

    def _reserve(self, n_rows: int, width: int) -> None:
        cap, cur_width = self.matrix.shape
        if n_rows <= cap and width <= cur_width:
            return
        new_cap = cap
        if n_rows > cap:
            new_cap = max(n_rows, cap + cap // 2, self.size_hint if cap == 0 else 0, 1024)
        new_width = max(width, cur_width)
        grown = np.full((new_cap, new_width), -1, np.int32)
        grown[:cap, :cur_width] = self.matrix
        self.matrix = grown
        if self.by_score:
            scores = np.full((new_cap, new_width), -np.inf)
            scores[:cap, :cur_width] = self.score_matrix
            self.score_matrix = scores
        counts = np.zeros(new_cap, np.int64)
        counts[:cap] = self.counts
        self.counts = counts

    def _tag_code(self, tag: str) -> int:
        tc = self.tags.get(tag)
        if tc is None:
            _check_tokens([tag])
            tc = self.tags[tag] = len(self.tags)
            self.rows_by_tag.append({})
        return tc

    def _pair_rows(self, tags: list[int], qids: list[str]) -> list[int]:
        """Rows of the (tag code, query id) pairs, in order (a new pair gets the next row)."""
        local = []
        row_qids, row_tags, by_tag = self.row_qids, self.row_tags, self.rows_by_tag
        for tc, q in zip(tags, qids, strict=True):
            known = by_tag[tc]
            row = known.get(q)
            if row is None:
                row = known[q] = len(row_qids)
                row_qids.append(q)
                row_tags.append(tc)
            local.append(row)
        return local

    def _rows(self, qcol: Any, tcol: Any) -> NDArray[np.int64]:
        """The matrix row of every line of a block (rows follow first appearance)."""
        tcol = _constant_or_encoded(tcol)
        tag_codes = [self._tag_code(t) for t in tcol.dictionary.to_pylist()]
        qids = qcol.dictionary.to_pylist()  # in order of first appearance in the block
        q_local = qcol.indices.to_numpy()
        if len(self.tags) == 1:  # one system so far: its rows are all the rows
            known = self.rows_by_tag[0]
            before = len(known)
            setdefault = known.setdefault
            local = [setdefault(q, len(known)) for q in qids]
            if len(known) > before:
                self.row_qids.extend([q for q, r in zip(qids, local, strict=True) if r >= before])
                self.row_tags.extend([0] * (len(known) - before))
            return np.asarray(local, np.int64)[q_local]
        if len(tag_codes) == 1:
            known = self.rows_by_tag[tag_codes[0]]
            get = known.get
            local = [get(q, -1) for q in qids]
            if -1 in local:
                local = self._pair_rows([tag_codes[0]] * len(qids), qids)
            return np.asarray(local, np.int64)[q_local]
        n_q = len(qids)
        pair = tcol.indices.to_numpy().astype(np.int64) * n_q + q_local
        uniq, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # pairs in order of first appearance
        pairs = uniq[order].tolist()
        rows = self._pair_rows([tag_codes[p // n_q] for p in pairs], [qids[p % n_q] for p in pairs])
        local = np.empty(uniq.size, np.int64)
        local[order] = rows
        return local[inverse.ravel()]

    # -- one block -------------------------------------------------------------------------

    def add(self, batch: Any) -> None:
        qcol, q0col, dcol, rcol, scol, tcol = (batch.column(i) for i in range(6))
        n = batch.num_rows
        if n == 0:
            return
        _check_tokens(_constant_or_encoded(q0col).dictionary)
        rows = self._rows(qcol, tcol)
        ranks = _ints(rcol)
        scores = scol
        if not np.isfinite(scores).all():
            raise _GiveUp("a score is not finite")
        if self.by_score:
            self._add_by_score(rows, dcol, scores)
            return
        lo, hi = int(ranks.min()), int(ranks.max())
        if lo < 1 or hi > self.max_depth:
            raise _GiveUp("a rank is out of range")
        self._reserve(self.n_rows, hi)
        width = self.matrix.shape[1]
        offset = self.items.add(dcol.values)
        codes = dcol.indices.to_numpy() + np.int32(offset)
        flat = rows * width
        flat += ranks
        flat -= 1
        self.matrix.reshape(-1)[flat] = codes
        low = int(rows.min())
        counted = np.bincount(rows - low)
        self.counts[low : low + counted.size] += counted
        self.rows_read += n
        self._check_order(rows, ranks, scores)

    def _add_by_score(self, rows: NDArray[np.int64], dcol: Any,
                      scores: NDArray[np.float64]) -> None:
        """Place a block's lines in file order: the next free column of their row."""
        n = rows.size
        by_row = np.argsort(rows, kind="stable")
        sorted_rows = rows[by_row]
        starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
        within = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        cols = np.empty(n, np.int64)
        cols[by_row] = within
        self._reserve(self.n_rows, 0)  # counts covers every row before it is read
        cols += self.counts[rows]
        width = int(cols.max()) + 1
        if width > self.max_depth:
            raise _GiveUp("a ranking is longer than the matrix allows")
        self._reserve(self.n_rows, width)
        offset = self.items.add(dcol.values)
        self.matrix[rows, cols] = dcol.indices.to_numpy() + np.int32(offset)
        self.score_matrix[rows, cols] = scores
        low = int(rows.min())
        counted = np.bincount(rows - low)
        self.counts[low : low + counted.size] += counted
        self.rows_read += n

    def _check_order(self, rows: NDArray[np.int64], ranks: NDArray[np.int64],
                     scores: NDArray[np.float64]) -> None:
        """Score order of consecutive lines holding ranks r and r + 1 of one ranking."""
        if self.last is not None:  # the pair across the block boundary
            r0, k0, s0 = self.last
            if rows[0] == r0 and ranks[0] == k0 + 1:
                self.pairs_checked += 1
                found = self.rises if scores[0] > s0 else self.ties if scores[0] == s0 else None
                if found is not None:
                    found.add(rows[:1], np.array([k0]), np.array([s0]), scores[:1])
        step = ranks[1:] - ranks[:-1] == 1
        step &= rows[1:] == rows[:-1]
        self.pairs_checked += int(np.count_nonzero(step))
        step &= scores[1:] >= scores[:-1]
        if step.any():
            bad = np.flatnonzero(step)
            rise = scores[bad + 1] > scores[bad]
            for found, sel in ((self.rises, bad[rise]), (self.ties, bad[~rise])):
                found.add(rows[sel + 1], ranks[sel], scores[sel], scores[sel + 1])
        self.last = (int(rows[-1]), int(ranks[-1]), float(scores[-1]))

    # -- after the last block --------------------------------------------------------------

    def finish(self) -> tuple[NDArray[np.int32], Any]:
        """Check ranks and duplicates, re-code items; returns (matrix, item ids)."""
        n_rows = self.n_rows
        width = int(self.matrix.shape[1])
        unified, code_map = self.items.finish()
        _check_tokens(unified)
        _check_tokens(self.row_qids)
        if self.matrix.shape[0] != n_rows:  # drop the spare rows (in place: no copy)
            self.matrix.resize((n_rows, width), refcheck=False)
        counts = self.counts[:n_rows]
        matrix = self.matrix
        keys = None
        if self.by_score:
            import pyarrow.compute as pc

            if self.score_matrix.shape[0] != n_rows:
                self.score_matrix.resize((n_rows, width), refcheck=False)
            # the ids' byte order (pyarrow compares strings as bytes, as strcmp does); the
            # padding code -1 takes the last key, and its score -inf puts it last anyway
            keys = np.zeros(len(unified) + 1, np.int64)
            keys[np.asarray(pc.sort_indices(unified))] = np.arange(len(unified))
        for start in range(0, n_rows, _ROW_BLOCK):
            block = matrix[start : start + _ROW_BLOCK]
            valid = block >= 0
            # ranks 1..n without ties: n cells filled (a tie overwrites one) and no hole
            if (valid.sum(axis=1) != counts[start : start + _ROW_BLOCK]).any():
                raise _GiveUp("ranks do not run 1..n")
            if width > 1 and (valid[:, 1:] & ~valid[:, :-1]).any():
                raise _GiveUp("ranks do not run 1..n")
            block[...] = code_map[block]
            if width > 1:
                ordered = np.sort(block, axis=1)
                if ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any():
                    raise _GiveUp("an item appears twice in a ranking")
            if keys is not None and width > 1:
                perm = score_order(self.score_matrix[start : start + _ROW_BLOCK], keys[block])
                block[...] = np.take_along_axis(block, perm, axis=1)
        self.score_matrix = np.full((0, 0), -np.inf)
        return matrix, unified

    @property
    def order_fully_checked(self) -> bool:
        """Whether every (rank r, rank r + 1) pair came on consecutive lines (in score
        order there is nothing to check: the order is the scores')."""
        return self.by_score or self.pairs_checked == self.rows_read - self.n_rows

    def recheck_order(self, batches: Iterable[Any]) -> None:
        """Second pass for files not in rank order: place every score, then compare."""
        n_rows, width = self.n_rows, int(self.matrix.shape[1])
        scores = np.full((n_rows, width), np.nan)
        for batch in batches:
            qcol, rcol, scol, tcol = (batch.column(i) for i in range(4))
            rows = self._rows(qcol, tcol)
            ranks = _ints(rcol)
            scores[rows, ranks - 1] = scol
        self.rises, self.ties = _Violations(), _Violations()
        with np.errstate(invalid="ignore"):  # NaN (past the end) compares False
            for found, bad in ((self.rises, scores[:, 1:] > scores[:, :-1]),
                               (self.ties, scores[:, 1:] == scores[:, :-1])):
                rows, cols = np.nonzero(bad)
                found.add(rows.astype(np.int64), (cols + 1).astype(np.int64),
                          scores[rows, cols], scores[rows, cols + 1])

    def score_findings(self) -> dict[str, tuple[NDArray[Any], ...]]:
        """Per warning code, (row, rank, score before, score after) of each row's first
        finding: ``score_order`` for rows whose score rises somewhere, ``score_ties`` for
        the other rows with a tie."""
        rises = self.rises.per_row()
        ties = self.ties.per_row()
        only_ties = ~np.isin(ties[0], rises[0])
        return {"score_order": rises, "score_ties": tuple(a[only_ties] for a in ties)}


def _score_warning(
    code: str, path: Path, system: str, qids: Sequence[str], local_rows: NDArray[np.int64],
    ranks: NDArray[np.int64], before: NDArray[np.float64], after: NDArray[np.float64],
) -> RunWarning:
    relation = "above" if code == "score_order" else "equal to"
    examples = tuple(
        Problem(
            f"score {after[i].item()!r} at rank {int(ranks[i]) + 1} is {relation} "
            f"{before[i].item()!r} at rank {int(ranks[i])} (system {system!r})",
            file=str(path),
            query_id=qids[int(local_rows[i])],
        )
        for i in range(min(MAX_EXAMPLES, local_rows.size))
    )
    return RunWarning(code=code, message=WARNING_TEXT[code], count=int(local_rows.size),
                      queries=int(local_rows.size), examples=examples)


def _fast_trec(path: Path, delimiter: str, system: str | None,
               order: str = "rank") -> list[ColumnarRun]:
    size_hint = 0
    if not is_gzip(path):  # about 30 bytes a line, 60 lines a query: a first guess only
        size_hint = max(1024, path.stat().st_size // 1500)
    builder = _RunBuilder(MAX_DEPTH, size_hint, by_score=order == "score")
    columns = {0: _QID, 1: _TEXT, 2: _ID, 3: _INT, 4: _FLOAT, 5: _TEXT}
    for batch in _batches(path, delimiter, columns, 6):
        builder.add(batch)
    if builder.rows_read == 0:
        raise _GiveUp("no rows")
    if not builder.order_fully_checked:
        builder.recheck_order(_batches(path, delimiter, {0: _QID, 3: _INT, 4: _FLOAT, 5: _TEXT},
                                       6))
    matrix, unified = builder.finish()
    _release_arrow_memory()
    items = IdIndex(unified)
    row_tags = np.asarray(builder.row_tags, np.int32)
    tag_names = list(builder.tags)
    findings = builder.score_findings()
    runs = []
    for tc, name in enumerate(tag_names):
        if system is not None and name != system:
            continue
        if len(tag_names) == 1:
            rows = None
            sub = matrix
            qids = tuple(builder.row_qids)
        else:
            rows = np.flatnonzero(row_tags == tc)
            sub = np.ascontiguousarray(matrix[rows])
            qids = tuple(builder.row_qids[r] for r in rows.tolist())
        warnings: list[RunWarning] = []
        for code, (v_rows, v_ranks, v_before, v_after) in findings.items():
            sel = np.ones(v_rows.size, bool) if rows is None else np.isin(v_rows, rows)
            if sel.any():
                mine = v_rows[sel]
                local = mine if rows is None else np.searchsorted(rows, mine)
                warnings.append(_score_warning(code, path, name, qids, local, v_ranks[sel],
                                               v_before[sel], v_after[sel]))
        sub.setflags(write=False)
        runs.append(ColumnarRun(system=name, query_ids=qids, rankings=sub, items=items,
                                source=path, format=FORMAT_TREC, warnings=tuple(warnings)))
    if system is not None and not runs:
        raise TiapError(
            f"no rankings for system {system!r}; the file holds "
            + ", ".join(repr(s) for s in tag_names),
            file=path,
        )
    return runs


def read_run_columnar(
    path: str | Path,
    *,
    system: str | None = None,
    dedup: Dedup = "error",
    order: Order = "rank",
) -> list[ColumnarRun]:
    """Read a run file into :class:`ColumnarRun` values, one per (benchmark, system).

    Same arguments, rules and errors as :func:`~tiap.runs.formats.read_run` (any format,
    gzip transparent; ``order="score"`` sorts by the same
    :func:`~tiap.runs.formats.score_order`); the difference is the result: arrays instead
    of Python rankings, read with pyarrow when possible (see the module notes).

    >>> _ = Path("bm25.trec").write_text("q1 Q0 d2 2 1.5 bm25\\nq1 Q0 d1 1 2.0 bm25\\n"
    ...                                  "q2 Q0 d1 1 9.0 bm25\\n")
    >>> (col,) = read_run_columnar("bm25.trec")
    >>> col.system, col.query_ids, col.depth
    ('bm25', ('q1', 'q2'), 2)
    >>> col.ranking("q1"), col.ranking("q2")
    (('d1', 'd2'), ('d1',))
    """
    if dedup not in ("error", "first"):
        raise TiapError(f"dedup must be 'error' or 'first', not {dedup!r}")
    check_order(order)
    path = Path(path)
    fmt = detect_run_format(path)  # also: missing, empty, unknown format
    if fmt == FORMAT_TREC and pyarrow_or_none() is not None:
        delimiter = _delimiter(path, 6)
        if delimiter is not None:
            try:
                with _reader_memory():
                    return _fast_trec(path, delimiter, system, order)
            except _GiveUp:
                pass  # the reference reader reports the problem, or reads what it accepts
    return [ColumnarRun.from_run(r)
            for r in read_run(path, system=system, dedup=dedup, order=order)]


# --------------------------------------------------------------------------------------------
# Qrels (the record and the reference reader: tiap.runs.qrels)
# --------------------------------------------------------------------------------------------


def fast_qrels(path: Path) -> tuple[Any, Any, NDArray[np.int32], NDArray[np.int32],
                                    NDArray[np.int64]] | None:
    """A TREC qrels file read with pyarrow: ``(query ids, item ids, query codes, item codes,
    relevance)``, one entry per judgment line in file order, or ``None`` when this route
    cannot vouch for the file (no pyarrow, another layout, or any problem): the reference
    reader (:func:`tiap.runs.qrels.read_qrels`) then reads it and reports what is wrong."""
    if pyarrow_or_none() is None:
        return None
    delimiter = _delimiter(path, 4)
    if delimiter is None:
        return None
    try:
        with _reader_memory():
            return _fast_qrels(path, delimiter)
    except _GiveUp:
        return None


def _fast_qrels(path: Path, delimiter: str) -> tuple[Any, Any, NDArray[np.int32],
                                                     NDArray[np.int32], NDArray[np.int64]]:
    queries, items = _Dictionaries(), _Dictionaries()
    q_parts: list[NDArray[np.int32]] = []
    d_parts: list[NDArray[np.int32]] = []
    r_parts: list[NDArray[np.int64]] = []
    for batch in _batches(path, delimiter, {0: _QID, 1: _TEXT, 2: _ID, 3: _INT}, 4):
        if batch.num_rows == 0:
            continue
        qcol, itercol, dcol, rcol = (batch.column(i) for i in range(4))
        _check_tokens(_constant_or_encoded(itercol).dictionary)
        q_parts.append(qcol.indices.to_numpy() + np.int32(queries.add(qcol.values)))
        d_parts.append(dcol.indices.to_numpy() + np.int32(items.add(dcol.values)))
        r_parts.append(_ints(rcol))
    if not q_parts:
        raise _GiveUp("no rows")
    q_ids, q_map = queries.finish()
    d_ids, d_map = items.finish()
    _check_tokens(q_ids)
    _check_tokens(d_ids)
    query = q_map[np.concatenate(q_parts)]
    item = d_map[np.concatenate(d_parts)]
    key = np.sort((query.astype(np.int64) << 32) | item.astype(np.int64))
    if (key[1:] == key[:-1]).any():
        raise _GiveUp("an id is judged twice")
    relevance = np.concatenate(r_parts)
    if relevance.size and (relevance.min() < -(2**31) or relevance.max() >= 2**31):
        raise _GiveUp("a relevance does not fit 32 bits")
    del key, q_parts, d_parts, r_parts
    _release_arrow_memory()
    return q_ids, d_ids, query, item, relevance
