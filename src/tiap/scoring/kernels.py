"""Pure, vectorised scoring kernels over integer-coded rankings and targets.

Inputs
------
* **Rankings**: an integer matrix ``[Q, D]`` of item codes, one row per query, in rank
  order (column 0 is rank 1). A row shorter than ``D`` is padded with ``-1`` at its end.
  Each row must already be deduplicated. The order of a row is authoritative: scores are
  never consulted, so there are no ties to break.
* **Targets**: per-query *groups* of item codes in CSR form (:class:`Targets`):
  ``group_ptr`` (``Q + 1``) gives the groups of each query, ``member_ptr``
  (``n_groups + 1``) the members of each group and ``items`` the member codes. An item may
  belong to several groups of the same query; an empty group is ignored (it is not counted
  in ``G``). Item codes are non-negative and below ``2**31 - 1``.

How it works
------------
A :class:`RankingIndex` turns every ranking row into a small hash table once: the row's
items sorted by (bucket, code), with a directory giving each bucket's start and size
(``np.sort`` of packed int64 keys). Looking up the rank of a target member is a hash, one
directory read and one candidate comparison, vectorised over blocks of members; members
whose bucket holds several items take a few more rounds. The index is reused when the
ranking stays fixed and only the targets change.

From the member ranks everything else is segment reductions over the CSR arrays and one
bit word per query per 64 ranks:

* group credit: the *first-match rank* of group ``g`` is the smallest rank among its
  members. Walking the list, group ``g`` becomes matched exactly at that rank, because the
  item there belongs to ``g`` and ``g`` is still unmatched; so the items with gain 1 are
  exactly the distinct first-match ranks. This gives the same result as the per-rank group
  bitmask walk (``gain_i = (mask_i & ~OR(mask_<i)) != 0``), at a cost proportional to the
  number of members instead of ``Q x D x words``, and with no limit on the number of groups.
* set credit: the relevant ranks are the ranks of all members (the union of the groups).

The relevant ranks of a query are OR-ed into ``uint64`` words; DCG and counts at a cutoff
``k`` are read from the words a byte at a time with 256-entry tables. Nothing here does I/O
or keeps global state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any, Literal, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tiap.errors import TiapError
from tiap.ids import MAX_CODE, MAX_DEPTH
from tiap.scoring.discounts import log2_discounts, row_dot
from tiap.scoring.families import FAMILIES
from tiap.scoring.intents import greedy_ideal_gains, intent_gains
from tiap.scoring.measures import Measure, MeasureSpec, parse_measures

__all__ = [
    "CREDIT_MODES",
    "MAX_CODE",
    "MAX_DEPTH",
    "Credit",
    "RankingIndex",
    "Targets",
    "check_credit",
    "known_distinct",
    "repeated_rows",
    "score",
    "score_many",
    "score_positions",
]

Credit = Literal["group", "set"]
CREDIT_MODES: tuple[str, ...] = ("group", "set")

_SENTINEL = np.int32(2**31 - 1)
_BLOCK = 32_768  # members per look-up block (the block's temporaries stay in L2 cache)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


# ----------------------------------------------------------------------------------------
# validation helpers


def _int_array(value: ArrayLike, name: str, ndim: int) -> NDArray[np.integer]:
    arr = np.asarray(value)
    if arr.size == 0 and arr.dtype.kind not in "iu":
        arr = arr.astype(np.int64)  # an empty list arrives as float64
    if arr.dtype.kind not in "iu":
        raise TiapError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise TiapError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr


def _pointer(value: ArrayLike, name: str, end: int | None) -> IntArray:
    """A CSR pointer array, copied: int32 when its values fit (half the memory of int64)."""
    arr = _int_array(value, name, 1)
    small = arr.size == 0 or (int(arr.max()) < 2**31 - 1 and int(arr.min()) >= 0)
    arr = arr.astype(np.int32 if small else np.int64)
    if arr.size == 0 or arr[0] != 0:
        raise TiapError(f"{name} must start with 0")
    if np.any(arr[1:] < arr[:-1]):
        raise TiapError(f"{name} must be non-decreasing")
    if end is not None and arr[-1] != end:
        raise TiapError(f"{name} must end with {end}, got {int(arr[-1])}")
    arr.setflags(write=False)
    return arr


def check_credit(credit: str) -> Credit:
    """``credit`` as a credit mode; a :class:`TiapError` naming the modes when unknown.

    >>> check_credit("set")
    'set'
    """
    if credit not in CREDIT_MODES:
        raise TiapError(f"unknown credit mode {credit!r}; known: {', '.join(CREDIT_MODES)}")
    return cast(Credit, credit)


_A = TypeVar("_A", bound="np.ndarray[Any, Any]")


def _readonly(arr: _A) -> _A:
    arr.setflags(write=False)
    return arr


# ----------------------------------------------------------------------------------------
# targets


@dataclass(frozen=True, eq=False, init=False)
class Targets:
    """Per-query groups of item codes, in CSR form.

    ``group_ptr[q]:group_ptr[q+1]`` are the groups of query ``q``;
    ``member_ptr[g]:member_ptr[g+1]`` index the codes of group ``g`` in ``items``.
    ``relevance`` (optional, one positive number per member) gives graded gains for set
    credit; an item listed more than once in a query takes its largest relevance.

    ``G`` of a query is its number of non-empty groups (:attr:`group_counts`); its set size
    is the number of distinct items over its groups (:attr:`set_sizes`). A query with
    ``G = 0`` is a zero-target case: every measure is NaN for it.

    The arrays are copied (pointers as int32 when their values fit) and made read-only;
    derived arrays are computed once and cached, so one ``Targets`` can be scored against
    many ranking matrices cheaply.

    Query 0 has two groups, ``{0, 1}`` and ``{2}``; query 1 has none (a zero-target case):

    >>> t = Targets.from_groups([[[0, 1], [2]], []])
    >>> t.n_queries, t.n_groups, t.group_counts.tolist(), t.set_sizes.tolist()
    (2, 2, [2, 0], [3, 0])
    >>> t.group_ptr.tolist(), t.member_ptr.tolist(), t.items.tolist()
    ([0, 2, 2], [0, 2, 3], [0, 1, 2])
    """

    group_ptr: NDArray[np.signedinteger]  # int32 when the values fit, else int64
    member_ptr: NDArray[np.signedinteger]
    items: NDArray[np.int32]
    relevance: FloatArray | None

    def __init__(
        self,
        group_ptr: ArrayLike,
        member_ptr: ArrayLike,
        items: ArrayLike,
        relevance: ArrayLike | None = None,
    ) -> None:
        codes = _int_array(items, "items", 1)
        if codes.size and (codes.min() < 0 or codes.max() > MAX_CODE):
            raise TiapError(f"item codes must be in [0, {MAX_CODE}]")
        codes32: NDArray[np.int32] = _readonly(codes.astype(np.int32))
        members = _pointer(member_ptr, "member_ptr", codes32.size)
        groups = _pointer(group_ptr, "group_ptr", members.size - 1)
        rel: FloatArray | None = None
        if relevance is not None:
            rel = np.array(relevance, dtype=np.float64)
            if rel.shape != codes32.shape:
                raise TiapError(f"relevance needs one value per member ({codes32.size})")
            if rel.size and not (np.all(np.isfinite(rel)) and rel.min() > 0):
                raise TiapError("relevance values must be finite and positive")
            _readonly(rel)
        object.__setattr__(self, "group_ptr", groups)
        object.__setattr__(self, "member_ptr", members)
        object.__setattr__(self, "items", codes32)
        object.__setattr__(self, "relevance", rel)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_groups(
        cls,
        groups: Sequence[Iterable[Iterable[int]]],
        relevance: Sequence[Iterable[Iterable[float]]] | None = None,
    ) -> Targets:
        """Build from nested Python lists: ``groups[q]`` is the list of groups of query ``q``.

        ``relevance`` (optional) has the same nesting and gives each member's gain.
        """
        group_sizes: list[int] = []
        query_sizes: list[int] = []
        flat: list[int] = []
        for query_groups in groups:
            n = 0
            for group in query_groups:
                before = len(flat)
                flat.extend(int(c) for c in group)
                group_sizes.append(len(flat) - before)
                n += 1
            query_sizes.append(n)
        rel: FloatArray | None = None
        if relevance is not None:
            rel = np.fromiter(
                (float(v) for qg in relevance for g in qg for v in g), dtype=np.float64
            )
        return cls(
            group_ptr=np.concatenate([[0], np.cumsum(query_sizes, dtype=np.int64)]),
            member_ptr=np.concatenate([[0], np.cumsum(group_sizes, dtype=np.int64)]),
            items=np.asarray(flat, dtype=np.int64),
            relevance=rel,
        )

    @classmethod
    def empty(cls, n_queries: int) -> Targets:
        """``n_queries`` zero-target queries."""
        return cls(np.zeros(n_queries + 1, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int32))

    # -- derived arrays (computed once, cached) ---------------------------------------------

    @property
    def n_queries(self) -> int:
        return int(self.group_ptr.size - 1)

    @property
    def n_groups(self) -> int:
        return int(self.member_ptr.size - 1)

    @property
    def n_members(self) -> int:
        return int(self.items.size)

    @property
    def group_sizes(self) -> IntArray:
        """Members per group (computed on each access: one int64 per group)."""
        return _readonly(np.diff(self.member_ptr))

    @cached_property
    def singleton_groups(self) -> bool:
        """Whether every group has exactly one member."""
        return bool(self.group_sizes.size == 0 or (self.group_sizes == 1).all())

    @cached_property
    def group_counts(self) -> IntArray:
        """``G`` per query: the number of non-empty groups."""
        return _readonly(_segment_sum((self.group_sizes > 0).astype(np.int64), self.group_ptr))

    @cached_property
    def group_query(self) -> NDArray[np.int32]:
        """The query of each group."""
        return _readonly(
            np.repeat(np.arange(self.n_queries, dtype=np.int32), np.diff(self.group_ptr))
        )

    @cached_property
    def member_query(self) -> NDArray[np.int32]:
        """The query of each member."""
        counts = np.diff(self.query_member_ptr)
        return _readonly(np.repeat(np.arange(self.n_queries, dtype=np.int32), counts))

    @cached_property
    def member_group(self) -> NDArray[np.int32]:
        """The group of each member."""
        return _readonly(np.repeat(np.arange(self.n_groups, dtype=np.int32), self.group_sizes))

    @cached_property
    def query_member_ptr(self) -> IntArray:
        """``query_member_ptr[q]:query_member_ptr[q+1]`` are the members of query ``q``."""
        return _readonly(self.member_ptr[self.group_ptr])

    def _lookup_keys(
        self, hash_bits: int, depth: int, start: int = 0, stop: int | None = None
    ) -> tuple[NDArray[Any], NDArray[Any]]:
        """Per member ``start:stop``, for a :class:`RankingIndex` of this geometry: the
        directory entry of its bucket in its query's row, and the start of that row."""
        big = self.n_queries * max(1 << hash_bits, depth) >= 2**31
        q = self.member_query[start:stop].astype(np.int64 if big else np.int32)
        row_start = q * depth
        q <<= hash_bits
        q += _bucket_of(self.items[start:stop], hash_bits).view(np.int32)
        return q, row_start

    @cached_property
    def repeated_members(self) -> IntArray:
        """Members whose item already occurs earlier among the members of the same query
        (in another group, or twice in one group), in increasing order."""
        return _readonly(self._distinct_scan[0])

    @cached_property
    def set_sizes(self) -> IntArray:
        """``|set|`` per query: distinct items over all its groups (the set-credit qrels)."""
        return _readonly(self._distinct_scan[1])

    @cached_property
    def _distinct_scan(self) -> tuple[IntArray, IntArray]:
        """(repeated members, distinct items per query), a block of queries at a time (the
        members of a query are contiguous), so that the sort's temporaries stay small."""
        sizes = np.zeros(self.n_queries, np.int64)
        repeated: list[IntArray] = []
        if self.n_members == 0:
            return np.zeros(0, np.int64), sizes
        qptr = self.query_member_ptr
        starts = np.unique(np.searchsorted(qptr, np.arange(0, self.n_members, _SCORE_BLOCK * 4),
                                           side="right") - 1)
        bounds = np.append(starts[starts < self.n_queries], self.n_queries).tolist()
        for q0, q1 in zip(bounds[:-1], bounds[1:], strict=True):
            m0, m1 = int(qptr[q0]), int(qptr[q1])
            keys = (self.member_query[m0:m1].astype(np.int64) - q0) << 31
            keys |= self.items[m0:m1]
            order = np.argsort(keys, kind="stable")
            ordered = keys[order]
            again = np.zeros(keys.size, bool)
            again[1:] = ordered[1:] == ordered[:-1]
            repeated.append(np.sort(order[again]).astype(np.int64) + m0)
            sizes[q0:q1] = np.bincount(ordered[~again] >> 31, minlength=q1 - q0)
        return np.concatenate(repeated), sizes


def known_distinct(targets: Targets) -> Targets:
    """Record that no item repeats within a query of ``targets`` (its builder guarantees it,
    e.g. one group per judged item): the set sizes are then the member counts, and the
    check that would sort every member is skipped."""
    counts = np.diff(targets.query_member_ptr)
    targets.__dict__["_distinct_scan"] = (np.zeros(0, np.int64), counts)
    return targets


# ----------------------------------------------------------------------------------------
# segment reductions over CSR pointers (empty segments get the identity)


def _segment_sum(values: NDArray[np.generic], ptr: IntArray) -> IntArray:
    csum = np.zeros(values.size + 1, np.int64)
    np.cumsum(values, out=csum[1:])
    return csum[ptr[1:]] - csum[ptr[:-1]]


def _segment_reduce(
    ufunc: np.ufunc, values: NDArray[np.generic], ptr: IntArray, identity: int
) -> NDArray[np.generic]:
    n = ptr.size - 1
    out = np.full(n, identity, dtype=values.dtype)
    nonempty = ptr[1:] > ptr[:-1]
    if values.size and n:
        # reduceat over the non-empty segments only: each one then ends where the next
        # non-empty one starts, and the last one at the end of ``values``.
        out[nonempty] = ufunc.reduceat(values, ptr[:-1][nonempty])
    return out


def _segment_min(
    values: NDArray[np.integer], segment: NDArray[np.int32], ptr: IntArray, none: int
) -> NDArray[np.int32]:
    """Per-segment minimum of ``values`` (all in ``[0, none]``); ``none`` for empty segments.

    ``segment[j]`` is the (non-decreasing) segment of element ``j``. Keys
    ``segment * (none + 1) + value`` grow from one segment to the next, so a running
    minimum taken from the end, read at a segment's start, is that segment's minimum: one
    streaming pass instead of a ``reduceat`` call per segment.
    """
    n = ptr.size - 1
    out = np.full(n, none, np.int32)
    if values.size == 0 or n == 0:
        return out
    span = none + 1
    key_type = np.int32 if n * span < 2**31 else np.int64
    key: NDArray[Any] = segment.astype(key_type)
    key *= span
    key += values
    suffix_min = np.minimum.accumulate(key[::-1])[::-1]
    starts = ptr[:-1]
    nonempty = ptr[1:] > starts
    seg_ids: NDArray[Any] = np.flatnonzero(nonempty).astype(key_type)
    out[nonempty] = suffix_min[starts[nonempty]] - seg_ids * span
    return out


# ----------------------------------------------------------------------------------------
# ranking index and member look-up


def _duplicate_rows(sorted_codes: NDArray[np.int32]) -> NDArray[np.intp]:
    """Rows of a row-sorted code matrix (padding = sentinel) holding a repeated code."""
    if sorted_codes.shape[1] < 2:
        return np.zeros(0, np.intp)
    dup = (sorted_codes[:, 1:] == sorted_codes[:, :-1]) & (sorted_codes[:, 1:] != _SENTINEL)
    return np.flatnonzero(dup.any(axis=1))


def repeated_rows(rankings: NDArray[np.integer]) -> NDArray[np.intp]:
    """Rows of a ranking matrix (``-1`` padding) that list an item twice, in increasing
    order (:class:`RankingIndex` refuses them).

    >>> repeated_rows(np.array([[3, 1, -1], [2, 2, -1], [5, -1, -1]])).tolist()
    [1]
    """
    return _duplicate_rows(np.sort(np.where(rankings < 0, _SENTINEL, rankings), axis=1))


#: Below this many codes (and at depth <= 255) a code and its rank share one int32.
_PACKED_CODES = 2**23


def _n_words(depth: int) -> int:
    """Number of 64-bit words holding one bit per rank."""
    return max(1, -(-depth // 64))


def _unranked(depth: int) -> int:
    """The rank value standing for "not ranked": the first bit past the last word, so that it
    is larger than every real rank and maps to no bit."""
    return 64 * _n_words(depth)


_HASH_MULT = np.uint32(0x9E3779B1)  # Fibonacci hashing: 2**32 / golden ratio


def _bucket_of(codes: NDArray[np.int32], n_bits: int) -> NDArray[np.uint32]:
    """Multiplicative hash of item codes into ``2**n_bits`` buckets."""
    h = codes.view(np.uint32) * _HASH_MULT
    h >>= np.uint32(32 - n_bits)
    return h


class RankingIndex:
    """A ranking matrix prepared for repeated look-ups of target members.

    Build it once per system run; then :meth:`positions` (and :func:`score` /
    :func:`score_many` given the index) cost only the look-up of each target's members.

    Each row becomes a small hash table: its items are sorted by ``(bucket, code)`` where
    ``bucket`` is a multiplicative hash of the code into ``B`` buckets (``B`` = twice the
    depth rounded up to a power of two, for depths up to 256), and a directory gives each
    bucket's start and size. A look-up hashes the member, reads the directory entry and
    compares the first candidate; the few members whose bucket holds more than one item
    take further rounds. Every step is a vectorised gather over a block of members.

    The rows are indexed in blocks, so that the temporaries stay small whatever the number
    of rows.

    Raises :class:`TiapError` when a code is below ``-1`` or above :data:`MAX_CODE`, when a
    row has ``-1`` padding before an item, when a row repeats an item (deduplicate the run
    first; the row index is reported), or when the depth exceeds :data:`MAX_DEPTH`.

    One ranking matrix (item codes, ``-1`` pads), indexed once and scored against two
    targets:

    >>> index = RankingIndex([[5, 7, 9], [7, -1, -1]])
    >>> index.n_queries, index.depth
    (2, 3)
    >>> first = Targets.from_groups([[[7]], [[7]]])
    >>> index.positions(first).tolist()  # 0-based rank of each member, -1 if not ranked
    [1, 0]
    >>> index.score(first, "RR@3")[parse_measures("RR@3")[0]].tolist()
    [0.5, 1.0]
    >>> second = Targets.from_groups([[[9]], [[9]]])
    >>> index.positions(second).tolist()
    [2, -1]
    """

    def __init__(self, rankings: ArrayLike) -> None:
        r = _int_array(rankings, "rankings", 2)
        if r.size and (r.min() < -1 or r.max() > MAX_CODE):
            raise TiapError(f"ranking codes must be -1 (padding) or in [0, {MAX_CODE}]")
        n_queries, depth = r.shape
        if depth > MAX_DEPTH:
            raise TiapError(f"ranking depth {depth} exceeds the supported {MAX_DEPTH}")
        r32: NDArray[np.int32]
        if r.dtype == np.int32 and r.flags.c_contiguous and not r.flags.writeable:
            r32 = r  # already a read-only int32 matrix (a columnar run's): shared, not copied
        else:
            r32 = np.array(r, dtype=np.int32, order="C")  # a private copy, made read-only below
        width_bits = max(0, (depth - 1).bit_length())  # 2**width_bits >= depth
        hash_bits = width_bits + 1 if depth <= 256 else width_bits
        n_buckets = 1 << hash_bits
        dir_shift = 8 if depth <= 255 else 16
        # small codes and ranks share one int32 (code << 8 | rank): one gather per look-up
        packed = depth <= 255 and (r32.size == 0 or int(r32.max()) < _PACKED_CODES)
        codes = np.empty((n_queries, depth), np.int32)
        ranks = np.empty((n_queries, 0 if packed else depth), np.int16)
        directory = np.zeros(n_queries * n_buckets, np.uint16 if depth <= 255 else np.uint32)
        lengths = np.empty(n_queries, np.int64)
        # row blocks keep the temporaries small (and in cache) whatever the number of rows
        block = max(1, _BLOCK * 8 // max(depth, 1))

        def index_block(start: int) -> None:  # rows start..stop
            stop = min(n_queries, start + block)
            block_codes, block_ranks = self._index_rows(
                r32[start:stop], start, hash_bits, dir_shift, directory, lengths[start:stop])
            if packed:  # padding (the sentinel code) becomes -1, which matches no code
                block_codes[block_codes == _SENTINEL] = -1
                np.left_shift(block_codes, 8, out=codes[start:stop], where=block_codes >= 0)
                codes[start:stop][block_codes < 0] = -1
                codes[start:stop] |= block_ranks
            else:
                codes[start:stop] = block_codes
                ranks[start:stop] = block_ranks

        for start in range(0, n_queries, block):
            index_block(start)

        self.rankings: NDArray[np.int32] = _readonly(r32)
        self.n_queries: int = n_queries
        self.depth: int = depth
        self.lengths: IntArray = _readonly(lengths)
        self._hash_bits = hash_bits
        self._dir_shift = dir_shift
        self._packed = packed
        self._codes = _readonly(codes.ravel())  # codes, or code << 8 | rank when packed
        self._ranks = _readonly(ranks.ravel())
        self._directory = _readonly(directory.ravel())

    @staticmethod
    def _index_rows(
        r32: NDArray[np.int32],
        first_row: int,
        hash_bits: int,
        dir_shift: int,
        directory: NDArray[Any],
        lengths_out: IntArray,
    ) -> tuple[NDArray[np.int32], NDArray[np.int16]]:
        """Index rows ``first_row ..`` of the matrix (``r32`` is that block of rows): fills
        their directory entries and lengths; returns their codes and ranks in bucket order."""
        n_rows, depth = r32.shape
        n_buckets = 1 << hash_bits
        valid = r32 >= 0
        lengths_out[:] = valid.sum(axis=1)
        if depth > 1:
            holes = np.flatnonzero((valid[:, 1:] & ~valid[:, :-1]).any(axis=1))
            if holes.size:
                raise TiapError(
                    f"ranking rows must be padded with -1 at the end only; row "
                    f"{first_row + int(holes[0])} has an item after padding"
                )
        # sort each row by (bucket, code, rank); padding goes to bucket n_buckets, last
        code_bits, rank_bits = 31, 15
        top = code_bits + rank_bits
        clean = np.maximum(r32, 0)
        bucket = _bucket_of(clean, hash_bits)
        bucket[~valid] = n_buckets
        key = bucket.astype(np.int64) << top
        key |= clean.astype(np.int64) << rank_bits
        key |= np.arange(depth, dtype=np.int64)
        key.sort(axis=1)
        sorted_bucket = key >> top
        codes = ((key >> rank_bits) & ((1 << code_bits) - 1)).astype(np.int32)
        codes[sorted_bucket == n_buckets] = _SENTINEL
        ranks = (key & ((1 << rank_bits) - 1)).astype(np.int16)
        if depth > 1:
            dups = _duplicate_rows(codes)
            if dups.size:
                raise TiapError(
                    f"ranking rows must not repeat an item; row {first_row + int(dups[0])} "
                    "does; deduplicate the run first"
                )
        # directory: start and size of every non-empty bucket of every row, packed in one
        # integer (an empty bucket reads start 0, size 0: its candidate never matches)
        if depth:
            run_start = np.ones((n_rows, depth), bool)
            run_start[:, 1:] = sorted_bucket[:, 1:] != sorted_bucket[:, :-1]
            row, col = np.nonzero(run_start)  # row-major order
            flat_start = row * depth + col
            run_length = np.diff(flat_start, append=n_rows * depth)
            run_bucket = sorted_bucket.ravel()[flat_start]
            real = run_bucket < n_buckets
            directory[(row[real] + first_row) * n_buckets + run_bucket[real]] = col[real] | (
                run_length[real] << dir_shift
            )
        return codes, ranks

    def __repr__(self) -> str:
        return f"RankingIndex(n_queries={self.n_queries}, depth={self.depth})"

    def positions(self, targets: Targets) -> NDArray[np.int16]:
        """0-based rank of every target member in its query's ranking, ``-1`` if absent.

        One int16 value per entry of ``targets.items``.
        """
        return self._lookup(targets, -1)

    def _lookup(self, targets: Targets, missing: int) -> NDArray[np.int16]:
        self._check(targets)
        directory_index, row_start = targets._lookup_keys(self._hash_bits, self.depth)
        return self._lookup_members(targets.items, directory_index, row_start, missing)

    def _lookup_members(
        self,
        items: NDArray[np.int32],
        directory_index: NDArray[Any],
        row_start: NDArray[Any],
        missing: int,
    ) -> NDArray[np.int16]:
        """Rank of each ``items[j]`` in its query's row (``missing`` if absent), given the
        directory entry of its bucket and the start of its row (:meth:`Targets._lookup_keys`)."""
        m = items.size
        out = np.empty(m, np.int16)
        if m == 0 or self.depth == 0:
            out.fill(missing)
            return out
        codes, ranks, directory = self._codes, self._ranks, self._directory
        slot_mask = (1 << self._dir_shift) - 1
        several = 2 << self._dir_shift  # an entry at least this large: 2+ items in the bucket
        block = min(_BLOCK, m)
        entry_buf: NDArray[Any] = np.empty(block, directory.dtype)
        slot_buf: NDArray[Any] = np.empty(block, row_start.dtype)
        val_buf = np.empty(block, np.int32)
        code_buf = np.empty(block, np.int32) if self._packed else val_buf
        miss_buf = np.empty(block, bool)
        more_buf = np.empty(block, bool)
        fix_buf = np.empty(block, np.int16)
        pending: list[NDArray[Any]] = []  # (member, slot, bucket size) left for later rounds
        for begin in range(0, m, block):
            n = min(block, m - begin)
            entry, slot, val = entry_buf[:n], slot_buf[:n], val_buf[:n]
            miss, more = miss_buf[:n], more_buf[:n]
            c = items[begin : begin + n]
            # directory entry of the member's bucket in its row, then the bucket's first item
            np.take(directory, directory_index[begin : begin + n], out=entry)
            np.bitwise_and(entry, slot_mask, out=slot)
            slot += row_start[begin : begin + n]
            np.take(codes, slot, out=val)
            o = out[begin : begin + n]
            if self._packed and missing >= self.depth:
                # val = code << 8 | rank; xor with c << 8 leaves exactly the rank on a hit
                # and a value >= 256 (as unsigned) on a miss, so min(., missing) is the answer
                code = code_buf[:n]
                np.left_shift(c, 8, out=code)
                val ^= code
                as_unsigned = val.view(np.uint32)
                np.greater_equal(as_unsigned, 256, out=miss)
                np.minimum(as_unsigned, np.uint32(missing), out=o, casting="unsafe")
            else:
                if self._packed:
                    code = code_buf[:n]
                    np.right_shift(val, 8, out=code)
                    np.not_equal(code, c, out=miss)
                    val &= 255
                    np.copyto(o, val, casting="unsafe")
                else:
                    np.not_equal(val, c, out=miss)
                    np.take(ranks, slot, out=o)
                # o = missing where miss: arithmetic, not a masked store (branch-free)
                fix = fix_buf[:n]
                np.subtract(np.int16(missing), o, out=fix)
                fix *= miss
                o += fix
            np.greater_equal(entry, several, out=more)
            more &= miss
            later = np.flatnonzero(more)
            if later.size and self._packed and missing >= self.depth:
                # the bucket's other items, all at once per round with no compaction: round
                # r reads item min(r, size - 1) of the bucket (an item of the bucket either
                # way), and the xor trick leaves the rank of a hit, >= 256 otherwise
                last = (entry[later] >> self._dir_shift).astype(slot.dtype) - 1
                first = slot[later]
                want = code[later]  # c << 8
                best = np.full(later.size, missing, np.uint32)
                for r in range(1, int(last.max()) + 1):
                    got = codes.take(first + np.minimum(last, r))
                    got ^= want
                    np.minimum(best, got.view(np.uint32), out=best)
                o[later] = best
            elif later.size:
                size = entry[later] >> self._dir_shift
                pending.append(np.stack([later + begin, slot[later], size]))
        if pending:
            # members not found whose bucket holds more items: try the next ones, all blocks
            # together (few members: about 8% at depth 60)
            todo, cand, left = np.concatenate(pending, axis=1).astype(np.int64)
            want = items[todo]
            while todo.size:
                cand += 1
                left -= 1
                if self._packed:
                    got = codes.take(cand)
                    found = (got >> 8) == want
                    out[todo[found]] = got[found] & 255
                else:
                    found = codes.take(cand) == want
                    out[todo[found]] = ranks.take(cand[found])
                more = ~found & (left > 1)
                todo, cand, left, want = todo[more], cand[more], left[more], want[more]
        return out

    def score(
        self,
        targets: Targets,
        measures: MeasureSpec,
        credit: Credit = "group",
        *,
        ideal_order: ArrayLike | None = None,
    ) -> dict[Measure, FloatArray]:
        """Per-query values of ``measures`` for ``targets`` (see :func:`score`;
        ``ideal_order`` too).

        Large targets are scored a block of queries at a time, so that the temporaries stay
        small (in cache) whatever the number of queries.
        """
        mode = check_credit(credit)
        ms = parse_measures(measures)
        self._check(targets)
        missing = _unranked(self.depth)
        order = None if ideal_order is None else np.asarray(ideal_order)
        if (targets.relevance is not None or targets.n_members <= _SCORE_BLOCK
                or any(FAMILIES[m.family].dense(m) for m in ms)):
            return _score_ranks(self._lookup(targets, missing), targets, ms, mode, self.depth,
                                order)
        # query blocks of about _SCORE_BLOCK members: look-up and kernel run on one block at
        # a time, so their temporaries stay small (cache-resident, reused by the allocator)
        out = {m: np.empty(self.n_queries, np.float64) for m in ms}
        qptr = targets.query_member_ptr
        bounds = np.unique(np.searchsorted(
            qptr, np.arange(0, targets.n_members, _SCORE_BLOCK), side="right") - 1)
        bounds = np.append(bounds[bounds < self.n_queries], self.n_queries).tolist()
        for q0, q1 in pairwise(bounds):
            block = _TargetsBlock(targets, q0, q1, mode)
            m0, m1 = int(qptr[q0]), int(qptr[q1])
            directory_index, row_start = targets._lookup_keys(self._hash_bits, self.depth, m0, m1)
            ranks = self._lookup_members(block.items, directory_index, row_start, missing)
            got = _score_ranks(ranks, block, ms, mode, self.depth)  # type: ignore[arg-type]
            for m in ms:
                out[m][q0:q1] = got[m]
        return out

    def _check(self, targets: Targets) -> None:
        if not isinstance(targets, Targets):
            raise TiapError(f"expected Targets, got {type(targets).__name__}")
        if targets.n_queries != self.n_queries:
            raise TiapError(
                f"targets have {targets.n_queries} queries but the ranking matrix has "
                f"{self.n_queries} rows"
            )


#: Members per query block when scoring large targets.
_SCORE_BLOCK = 1 << 17


class _TargetsBlock:
    """Queries ``q0:q1`` of a :class:`Targets`, with pointers rebased to the block: what
    :func:`_score_ranks` reads, for binary (ungraded) targets."""

    def __init__(self, t: Targets, q0: int, q1: int, mode: Credit) -> None:
        qptr = t.query_member_ptr
        m0, m1 = int(qptr[q0]), int(qptr[q1])
        g0, g1 = int(t.group_ptr[q0]), int(t.group_ptr[q1])
        self.n_queries = q1 - q0
        self.items = t.items[m0:m1]
        self.relevance = None
        self.singleton_groups = t.singleton_groups
        self.query_member_ptr = qptr[q0 : q1 + 1] - m0
        self.set_sizes = t.set_sizes[q0:q1]
        repeated = t.repeated_members
        lo, hi = np.searchsorted(repeated, [m0, m1])
        self.repeated_members = repeated[lo:hi] - m0
        self.group_counts = t.group_counts[q0:q1]
        self.group_ptr = t.group_ptr[q0 : q1 + 1] - g0
        if mode == "group" and not t.singleton_groups:
            self.member_group = t.member_group[m0:m1] - np.int32(g0)
            self.member_ptr = t.member_ptr[g0 : g1 + 1] - m0


# ----------------------------------------------------------------------------------------
# the credit kernel


def _rank_words(
    ranks: NDArray[np.integer], ptr: IntArray, n_words: int, distinct: bool = False
) -> NDArray[np.uint64]:
    """OR of ``1 << rank`` per segment, as ``[Q, n_words]`` words.

    ``ranks`` are real ranks or the unranked value ``64 * n_words``, which sets no bit. The
    bit of each rank comes from a small table (a gather), not a shift. When the real ranks of
    a segment are ``distinct``, the OR is a sum: one running (wrapping, exact) ``uint64`` sum
    read at the segment ends, 3-4x faster than ``bitwise_or.reduceat``.
    """
    words = np.zeros((ptr.size - 1, n_words), np.uint64)
    if ranks.size == 0:
        return words
    powers = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
    running = np.empty(ranks.size + 1, np.uint64) if distinct else None
    for w in range(n_words):
        table = np.zeros(64 * n_words + 1, np.uint64)
        table[64 * w : 64 * (w + 1)] = powers
        bits = table.take(ranks)
        if running is not None:
            running[0] = 0
            np.cumsum(bits, out=running[1:])
            words[:, w] = running.take(ptr[1:])
            words[:, w] -= running.take(ptr[:-1])
        else:
            words[:, w] = _segment_reduce(np.bitwise_or, bits, ptr, 0)
    return words


def _lowest_rank(words: NDArray[np.uint64], none: int) -> IntArray:
    """Index of the lowest set bit over each row's words (``none`` when all are zero)."""
    first = np.full(words.shape[0], none, np.int64)
    for w in reversed(range(words.shape[1])):
        x = words[:, w]
        lowest = x & (~x + np.uint64(1))  # isolates the lowest set bit (a power of two)
        _, exponent = np.frexp(lowest.astype(np.float64))  # 2**b -> exponent b + 1
        first = np.where(x != 0, 64 * w + exponent.astype(np.int64) - 1, first)
    return first


@lru_cache(maxsize=1)
def _dcg_table16() -> FloatArray:
    """``table[j, v]`` = DCG of the ranks ``16 j + b`` for the set bits ``b`` of ``v``."""
    bits = ((np.arange(1 << 16)[:, None] >> np.arange(16)[None, :]) & 1).astype(np.float64)
    disc = log2_discounts(64).reshape(4, 16)
    return _readonly(np.stack([row_dot(bits, disc[j]) for j in range(4)]))


class _WordReader:
    """Reads counts and DCG at a cutoff from per-query rank words, a byte at a time."""

    def __init__(self, words: NDArray[np.uint64]) -> None:
        self.words = words
        n_bytes = words.shape[1] * 8
        bit_of_byte = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float64)
        disc = log2_discounts(n_bytes * 8).reshape(n_bytes, 8)
        self._dcg_table = np.stack([row_dot(bit_of_byte, d) for d in disc])  # [n_bytes, 256]
        self._cache: dict[int, NDArray[np.uint64]] = {}

    def _masked(self, k: int) -> NDArray[np.uint64]:
        """The words with only the bits of ranks ``< k`` kept."""
        if k not in self._cache:
            words = self.words.copy()
            for w in range(words.shape[1]):
                keep = k - 64 * w
                if keep <= 0:
                    words[:, w] = 0
                elif keep < 64:
                    words[:, w] &= np.uint64((1 << keep) - 1)
            self._cache[k] = words
        return self._cache[k]

    def count(self, k: int) -> IntArray:
        counts = np.bitwise_count(self._masked(k)).astype(np.int64)
        return counts[:, 0] if counts.shape[1] == 1 else counts.sum(axis=1)

    def dcg(self, k: int) -> FloatArray:
        words = self._masked(k)
        if words.shape[1] == 1:  # depth <= 64: 16 bits at a time from a cached 2 MB table
            n_parts = -(-min(k, 64) // 16)
            table = _dcg_table16()
            parts = words.astype("<u8", copy=False).view(np.uint16).reshape(-1, 4)
            rows16 = parts[:, :n_parts].T.astype(np.intp)
            out = np.zeros(words.shape[0], np.float64)
            for j in range(n_parts):
                out += table[j].take(rows16[j])
            return out
        n_bytes = min(words.shape[1] * 8, -(-k // 8))
        as_bytes = words.astype("<u8", copy=False).view(np.uint8)
        # byte j of every query as one contiguous index row (take wants intp indices)
        rows = as_bytes.reshape(words.shape[0], words.shape[1] * 8)[:, :n_bytes].T.astype(np.intp)
        out = np.zeros(words.shape[0], np.float64)
        for j in range(n_bytes):
            out += self._dcg_table[j].take(rows[j])
        return out


def _graded_gains(
    positions: NDArray[np.integer], targets: Targets, relevance: FloatArray, depth: int
) -> FloatArray:
    """Gain matrix ``[Q, depth]``: the largest relevance of the item at each rank (0 if none)."""
    gains = np.zeros((targets.n_queries, depth), np.float64)
    hit = positions >= 0
    rows = targets.member_query[hit]
    np.maximum.at(gains, (rows, positions[hit].astype(np.int64)), relevance[hit])
    return gains


def _graded_ideal(targets: Targets, relevance: FloatArray, cutoff: int | None) -> FloatArray:
    """Ideal DCG: each query's distinct items, largest relevance first, cut at ``cutoff``."""
    n_queries = targets.n_queries
    if relevance.size == 0:
        return np.zeros(n_queries, np.float64)
    mq = targets.member_query
    # distinct (query, item), keeping the largest relevance of an item listed twice
    order = np.lexsort((-relevance, targets.items, mq))
    q_s, i_s, r_s = mq[order], targets.items[order], relevance[order]
    first = np.ones(order.size, bool)
    first[1:] = (q_s[1:] != q_s[:-1]) | (i_s[1:] != i_s[:-1])
    q_u, r_u = q_s[first], r_s[first]
    by_gain = np.lexsort((-r_u, q_u))  # per query, decreasing relevance
    q, r = q_u[by_gain].astype(np.int64), r_u[by_gain]
    rank = np.arange(q.size) - np.searchsorted(q, q)  # 0-based rank within the query
    keep = rank < cutoff if cutoff is not None else np.ones(q.size, bool)
    contrib = r[keep] / np.log2(rank[keep] + 2.0)
    ideal = np.bincount(q[keep], weights=contrib, minlength=n_queries)
    return ideal.astype(np.float64, copy=False)


def score_positions(
    positions: ArrayLike,
    targets: Targets,
    measures: MeasureSpec,
    *,
    credit: Credit = "group",
    depth: int,
) -> dict[Measure, FloatArray]:
    """The credit kernel: per-query measure values from the rank of every target member.

    ``positions[j]`` is the 0-based rank of member ``targets.items[j]`` in its query's
    ranking, or ``-1`` when it is not ranked (:meth:`RankingIndex.positions` computes it);
    ``depth`` is the ranking depth (ranks are below it). Formulas are in :func:`score`.
    """
    mode = check_credit(credit)
    ms = parse_measures(measures)
    pos = _int_array(positions, "positions", 1)
    if pos.size != targets.n_members:
        raise TiapError(f"positions need one value per target member ({targets.n_members})")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise TiapError(f"depth must be a non-negative integer, got {depth!r}")
    if pos.size and (pos.min() < -1 or pos.max() >= depth):
        raise TiapError(f"positions must be -1 or in [0, {depth})")
    ranks = pos.astype(np.int32)
    ranks[ranks < 0] = _unranked(depth)
    return _score_ranks(ranks, targets, ms, mode, depth)


class _Credited:
    """The credited ranks of a block of queries under one credit mode: what the kernel of
    every family reads (:class:`tiap.scoring.families.Ranked`). Unranked members carry
    ``_unranked(depth)``; ``order``: see :func:`score`. Derived arrays are computed on first
    use and kept."""

    def __init__(
        self,
        ranks: NDArray[np.integer],
        targets: Targets,
        mode: Credit,
        depth: int,
        order: NDArray[np.integer] | None,
    ) -> None:
        none = _unranked(depth)
        if mode == "group":
            if targets.relevance is not None:
                raise TiapError("graded relevance is only defined for set credit (credit='set')")
            # first-match rank of each group: the first rank holding one of its members
            if targets.singleton_groups:  # a group's first-match rank is its member's rank
                credited = ranks
            else:
                credited = _segment_min(ranks, targets.member_group, targets.member_ptr, none)
            ptr = targets.group_ptr
            n_targets = targets.group_counts
        else:
            credited = ranks
            ptr = targets.query_member_ptr
            n_targets = targets.set_sizes
            repeated = targets.repeated_members
            if repeated.size:  # an item listed twice in a query counts once: drop the repeats
                credited = ranks.copy()
                credited[repeated] = none
        # distinct ranks per segment: set credit once repeats are dropped; group credit when
        # no item sits in two groups of a query (then two groups never share a first-match
        # rank)
        distinct = mode == "set" or targets.repeated_members.size == 0
        words = _rank_words(credited, ptr, _n_words(depth), distinct)
        self.depth = depth
        self.n_targets: IntArray = n_targets
        self.first: IntArray = _lowest_rank(words, none)
        self.graded: FloatArray | None = None
        if mode == "set" and targets.relevance is not None:
            self.graded = _graded_gains(np.where(ranks < depth, ranks, -1), targets,
                                        targets.relevance, depth)
        self._ranks, self._targets, self._mode, self._order = ranks, targets, mode, order
        self._credited, self._ptr = credited, ptr
        self._reader = _WordReader(words)
        self._hits: dict[int, IntArray] = {}
        self._dense: dict[Any, Any] = {}

    def hits(self, k: int) -> IntArray:
        """Targets credited within the top ``k`` (group credit: matched groups)."""
        if k not in self._hits:
            if self._mode == "group":  # matched groups, not credited ranks (a rank may match two)
                self._hits[k] = _segment_sum(self._credited < k, self._ptr)
            else:
                self._hits[k] = self._reader.count(k)
        return self._hits[k]

    def count(self, k: int) -> IntArray:
        """Credited ranks within the top ``k``."""
        return self._reader.count(k)

    def dcg(self, k: int) -> FloatArray:
        """DCG of the credited ranks within the top ``k``."""
        return self._reader.dcg(k)

    def rank_gains(self) -> FloatArray:
        """``[Q, depth]``: 1 at each credited rank (group: a rank that matches a group)."""
        if "binary" not in self._dense:
            n, depth, credited = self.n_targets.size, self.depth, self._credited
            g = np.zeros((n, depth), np.float64)
            seg = np.repeat(np.arange(n), np.diff(self._ptr))
            ok = credited < depth
            g[seg[ok], credited[ok]] = 1.0
            self._dense["binary"] = g
        return cast(FloatArray, self._dense["binary"])

    def intents(self, alpha: float, k: int) -> tuple[FloatArray, FloatArray | None]:
        """(gain matrix ``[Q, depth]``, ideal gains ``[Q, k]``; None: all ones) with the
        groups as intents (group credit) or each distinct member (set credit)."""
        if self._mode == "set":
            return self.rank_gains(), None
        key = ("alpha", alpha, k)
        if key not in self._dense:
            t = self._targets
            gains = intent_gains(self._ranks, t.member_query, t.member_group, t.n_queries,
                                 self.depth, alpha)
            ideal = greedy_ideal_gains(t.items, t.member_group, t.member_query, t.n_queries,
                                       k, alpha, self._order)
            self._dense[key] = (gains, ideal)
        return cast(tuple[FloatArray, FloatArray], self._dense[key])

    def graded_ideal(self, cutoff: int | None) -> FloatArray:
        """Ideal DCG of the graded targets, cut at ``cutoff``."""
        relevance = self._targets.relevance
        assert relevance is not None  # called for graded targets only
        return _graded_ideal(self._targets, relevance, cutoff)


def _score_ranks(
    ranks: NDArray[np.integer],
    targets: Targets,
    measures: tuple[Measure, ...],
    mode: Credit,
    depth: int,
    order: NDArray[np.integer] | None = None,
) -> dict[Measure, FloatArray]:
    """:func:`score_positions` with unranked members already set to ``_unranked(depth)``
    (``order``: see :func:`score`): each measure by the kernel its family declares
    (:data:`tiap.scoring.families.FAMILIES`), NaN for zero-target queries."""
    credited = _Credited(ranks, targets, mode, depth, order)
    undefined = credited.n_targets == 0
    results: dict[Measure, FloatArray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for m in measures:
            k = depth if m.cutoff is None else min(m.cutoff, depth)
            value = np.asarray(FAMILIES[m.family].kernel(credited, m, k), dtype=np.float64)
            value[undefined] = np.nan
            results[m] = value
    return results


# ----------------------------------------------------------------------------------------
# high-level entry points


def score(
    rankings: ArrayLike | RankingIndex,
    targets: Targets,
    measures: MeasureSpec,
    credit: Credit = "group",
    *,
    ideal_order: ArrayLike | None = None,
) -> dict[Measure, FloatArray]:
    """Per-query values of ``measures`` (NaN where undefined), one array of length Q each.

    ``rankings`` is a ``[Q, D]`` code matrix (``-1`` padding) or a prepared
    :class:`RankingIndex`; ``targets`` holds the groups of the same Q queries.

    Notation for one query: ranks ``i = 1..n`` (n = ranked items, at most D), cutoff ``k``
    (no cutoff: ``k = n`` and the ideal is not cut), ``disc(i) = 1 / log2(i + 1)``,
    ``DCG_m = sum_{i=1..m} disc(i)`` (the DCG of ``m`` ones).

    **group credit** (the paper's scorer, default). Walk the list from rank 1; the item at
    rank ``i`` has gain ``g_i = 1`` when it belongs to at least one group not yet matched,
    and then every unmatched group it belongs to becomes matched; otherwise ``g_i = 0``.
    ``G`` = number of non-empty groups, ``hits@k`` = groups matched within the top k.

    * ``nDCG@k = sum_{i<=k} g_i disc(i) / DCG_{min(G, k)}``
    * ``R@k = hits@k / G``
    * ``RR@k = 1 / (rank of the first item with g_i = 1)`` if that rank is ``<= k``, else 0
    * ``Success@k = [hits@k > 0]``
    * ``P@k = sum_{i<=k} g_i / k``

    **set credit** (trec_eval semantics). The relevant set ``S`` is the union of the groups;
    every member is relevant (``rel_i = [item_i in S]``, or its relevance value when the
    targets are graded; binary measures count any member).

    * ``nDCG@k = sum_{i<=k} rel_i disc(i) / IDCG@k``, ``IDCG@k`` = ``DCG_{min(|S|, k)}``
      (graded: the ``k`` largest relevance values of ``S`` in decreasing order)
      -- trec_eval ``ndcg_cut.k``; bare ``nDCG`` is trec_eval ``ndcg``
    * ``R@k = |top-k ∩ S| / |S|`` -- ``recall.k``
    * ``RR@k = 1 / rank of the first member`` if within k, else 0 -- ``recip_rank`` on the
      run truncated to k
    * ``Success@k = [|top-k ∩ S| > 0]`` -- ``success.k``
    * ``P@k = |top-k ∩ S| / k`` -- ``P.k``

    **Undefined**: a query with no non-empty group (``G = 0``, so ``S`` is empty) gets NaN
    for every measure, never 0. A query with targets but an empty ranking gets 0.

    RR and Success coincide in the two modes (the first ranked member is always credited).

    One query ranking items 3, 0, 1; two groups, ``{0}`` and ``{1, 2}`` (item 2 is not
    ranked). Group credit: ranks 2 and 3 each fill a group, so ``R@2 = 1/2``,
    ``RR = 1/2`` and ``nDCG@3 = (0.6309 + 0.5) / (1 + 0.6309) = 0.6934``. Set credit: the
    relevant set is ``{0, 1, 2}``, so ``R@3 = 2/3`` and ``nDCG@3 = (0.6309 + 0.5) / (1 +
    0.6309 + 0.5) = 0.5307``:

    >>> targets = Targets.from_groups([[[0], [1, 2]]])
    >>> for credit in ("group", "set"):
    ...     values = score([[3, 0, 1]], targets, "nDCG@3,R@2,R@3,RR", credit)
    ...     print(credit, {str(m): round(float(v[0]), 4) for m, v in values.items()})
    group {'nDCG@3': 0.6934, 'R@2': 0.5, 'R@3': 1.0, 'RR': 0.5}
    set {'nDCG@3': 0.5307, 'R@2': 0.3333, 'R@3': 0.6667, 'RR': 0.5}

    **Further measures**, both modes with the same ``g_i``, ``rel_i``, ``G`` and ``S``:

    * ``Rall@k = [hits@k = G]`` (group; every evidence unit credited), ``[|top-k ∩ S| =
      |S|]`` (set) -- LongMemEval's ``recall_all@k``
    * ``nDCG(discount='jk')@k``: nDCG with the discount ``1`` at ranks 1 and 2 and
      ``1/log2(i)`` below, numerator and ideal (LongMemEval's ``ndcg_any@k`` under set
      credit)
    * ``alpha_nDCG(alpha=a)@k`` and ``ERR_IA(alpha=a)@k``: the groups are the intents (set
      credit: each member of ``S``); formulas, ndeval's greedy ideal and when group-credit
      nDCG equals alpha-nDCG in :mod:`tiap.scoring.intents`. ``ideal_order[code]`` ranks
      the item ids so that a tie in the greedy ideal goes to the id that sorts last, as in
      ndeval (default: the larger code); it matters only to these two measures.
    """
    mode = check_credit(credit)
    ms = parse_measures(measures)
    index = rankings if isinstance(rankings, RankingIndex) else RankingIndex(rankings)
    return index.score(targets, ms, mode, ideal_order=ideal_order)


def score_many(
    rankings: ArrayLike | RankingIndex,
    targets: Mapping[str, Targets],
    measures: MeasureSpec,
    credit: Credit = "group",
) -> dict[str, dict[Measure, FloatArray]]:
    """:func:`score` for several targets against one fixed ranking matrix.

    The ranking matrix is indexed once; each target then costs one member look-up and the
    credit kernel. Returns ``{target name: {measure: per-query values}}``.

    >>> raw = Targets.from_groups([[[1], [2]]])  # two evidence turns, codes 1 and 2
    >>> canonical = Targets.from_groups([[[0], [0]]])  # one fact (code 0) derived from both
    >>> values = score_many([[0, 1, 2]], {"raw": raw, "canonical": canonical}, "RR,R@1")
    >>> {t: {str(m): v.tolist() for m, v in by_m.items()} for t, by_m in values.items()}
    {'raw': {'RR': [0.5], 'R@1': [0.0]}, 'canonical': {'RR': [1.0], 'R@1': [1.0]}}
    """
    mode = check_credit(credit)
    ms = parse_measures(measures)
    index = rankings if isinstance(rankings, RankingIndex) else RankingIndex(rankings)
    return {name: index.score(t, ms, mode) for name, t in targets.items()}
