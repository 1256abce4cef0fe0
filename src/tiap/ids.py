"""Ids and their integer codes: one module below both :mod:`tiap.runs` and :mod:`tiap.scoring`.

Everything that turns string ids into integers lives here, so that the run readers and the
scoring kernels share it without importing each other:

- :class:`Vocabulary`: dense codes ``0, 1, 2, ...`` for ids in order of first appearance
  (the Python-object path of :mod:`tiap.scoring.encode`);
- :class:`IdIndex`: string ids indexed by code, with vectorised look-up (the columnar path
  of :mod:`tiap.runs.columnar`);
- integer *keys* for short ids (:func:`keys_of`, :func:`encode_keys`, :func:`comparable`,
  :func:`joined`), so that hashing integers stands in for hashing strings;
- the limits every coded array respects (:data:`MAX_CODE`, :data:`MAX_DEPTH`);
- :class:`ItemKey`, an item's identity: ``(store, item_id)``. An item id is only unique
  within its store; wherever two stores meet, items are keyed by both;
- :func:`id_problem`, the one rule for text that becomes an id: no whitespace and no
  control character (TREC files split on whitespace), never empty.

Integer keys
------------
pyarrow hashes a uint64 about twice as fast as a short string. The columnar readers key
every id of at most 12 bytes (:func:`keys_of`), dictionary-encode the keys
(:func:`encode_keys`), merge pieces and look ids up by key (:func:`comparable`,
:func:`joined`), and make strings once, for the distinct ids (:meth:`Keys.strings`). The
codes are always exact: a key either is the string (ids of at most 7 bytes) or is a fold
whose agreeing rows are compared, and a collision returns ``None`` so that the caller hashes
the strings instead.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "MAX_CODE",
    "MAX_DEPTH",
    "IdIndex",
    "ItemKey",
    "Keys",
    "Vocabulary",
    "comparable",
    "encode_keys",
    "id_ok",
    "id_problem",
    "joined",
    "keys_of",
    "pyarrow_or_none",
]

#: Largest item code accepted (codes are stored as int32; one value is kept as a sentinel).
MAX_CODE: int = 2**31 - 2
#: Deepest ranking supported (ranks, and the "not ranked" value, are stored as int16).
MAX_DEPTH: int = 2**15 - 64


class ItemKey(NamedTuple):
    """An item's identity: the store that holds it and its id there.

    Item ids are unique only within a store (two stores built from one dataset reuse ids
    such as ``conv-26:D2:1#f1`` for different texts), so everything that pools items of
    several stores (audit labels, graded targets, exports) keys them by ``ItemKey``.
    ``str()`` gives ``store/item_id``.
    """

    store: str
    item_id: str

    def __str__(self) -> str:
        return f"{self.store}/{self.item_id}"


# --------------------------------------------------------------------------------------------
# What text may become an id
# --------------------------------------------------------------------------------------------

#: Characters no id may hold: whitespace of any kind (TREC run and qrels lines are split on
#: it) and control characters (C0, DEL, C1: a tab, a newline, a NUL).
_NOT_IN_ID = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_NAMES = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return", "\x00": "a NUL",
          " ": "a space"}


def id_ok(text: str) -> bool:
    """Whether ``text`` can be an id (:func:`id_problem` finds nothing), answered fast.

    >>> id_ok("conv-26:D1:3"), id_ok("two words"), id_ok("")
    (True, False, False)
    """
    return bool(text) and _NOT_IN_ID.search(text) is None


def id_problem(text: str) -> str | None:
    """Why ``text`` cannot be an id or a part of one, or ``None`` when it can.

    An id is never empty and holds no whitespace and no control character: TREC files are
    whitespace-separated, so such an id would split a line or be read back as another id,
    and a control character is invisible in every report. Readers refuse such ids with a
    located error; they never escape or strip them (two different ids could become one).
    """
    if not text:
        return "is empty"
    m = _NOT_IN_ID.search(text)
    if m is None:
        return None
    ch = m.group()
    name = _NAMES.get(ch) or unicodedata.name(ch, "a control character").lower()
    return (f"holds {name} (U+{ord(ch):04X}) at character {m.start() + 1}; ids may hold no "
            "whitespace and no control character (TREC files split on whitespace)")


# --------------------------------------------------------------------------------------------
# Dense codes for Python ids
# --------------------------------------------------------------------------------------------


class Vocabulary:
    """Dense integer codes for ids, in order of first appearance (0, 1, 2, ...)."""

    def __init__(self, ids: Iterable[Hashable] = ()) -> None:
        self._codes: dict[Hashable, int] = {}
        for item_id in ids:
            self.code(item_id)

    def __len__(self) -> int:
        return len(self._codes)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._codes

    def code(self, item_id: Hashable) -> int:
        """The code of ``item_id``, assigning the next free code to a new id."""
        return self._codes.setdefault(item_id, len(self._codes))

    def get(self, item_id: Hashable) -> int | None:
        """The code of ``item_id``, or ``None`` when it has none (nothing is added)."""
        return self._codes.get(item_id)

    @property
    def ids(self) -> tuple[Hashable, ...]:
        """All ids, indexed by code."""
        return tuple(self._codes)

    def code_rows(self, rows: Iterable[Iterable[Hashable]]) -> NDArray[np.int32]:
        """Code id lists into a ``[len(rows), longest]`` int32 matrix padded with ``-1``,
        assigning codes to new ids (repeated ids are not looked for: callers that must
        refuse them check the matrix)."""
        codes = self._codes
        flat: list[int] = []
        lengths: list[int] = []
        for row in rows:
            before = len(flat)
            flat.extend([codes.setdefault(x, len(codes)) for x in row])
            lengths.append(len(flat) - before)
        if len(codes) > MAX_CODE + 1:
            raise ValueError(f"too many distinct ids ({len(codes)}); at most {MAX_CODE + 1}")
        lens = np.asarray(lengths, dtype=np.int64)
        width = int(lens.max(initial=0))
        matrix = np.full((lens.size, width), -1, np.int32)
        matrix[np.arange(width)[None, :] < lens[:, None]] = np.asarray(flat, dtype=np.int32)
        return matrix

    def decode(self, codes: ArrayLike) -> list[Hashable | None]:
        """Ids for ``codes`` (``None`` for ``-1`` padding)."""
        ids = self.ids
        return [None if c < 0 else ids[c] for c in np.asarray(codes).ravel().tolist()]


# --------------------------------------------------------------------------------------------
# Ids by code (columnar)
# --------------------------------------------------------------------------------------------


def pyarrow_or_none() -> Any | None:
    """The ``pyarrow`` module with its ``compute`` and ``csv`` parts, or ``None`` where it
    is not installed (the columnar readers then take the reference route)."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.compute  # noqa: F401
        import pyarrow.csv  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return pyarrow


class IdIndex:
    """String ids indexed by their code ``0..n-1`` (the vocabulary of a columnar file).

    Holds a pyarrow string array when pyarrow is installed, else a tuple of str.
    :meth:`codes` looks many ids up at once (``-1`` for an id not in the index).
    """

    def __init__(self, ids: Sequence[str] | pa.Array) -> None:
        pa = pyarrow_or_none()
        if pa is not None and isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        if pa is not None and not isinstance(ids, pa.Array):
            ids = pa.array(ids if isinstance(ids, list) else list(ids), pa.string())
        elif pa is None:
            ids = tuple(ids)
        self._ids: Any = ids
        self._dict: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, code: int) -> str:
        if not 0 <= code < len(self._ids):
            raise IndexError(f"no id has code {code}")
        value = self._ids[code]
        return value if isinstance(value, str) else str(value.as_py())

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_list())

    def __repr__(self) -> str:
        return f"IdIndex({len(self)} ids)"

    def to_list(self) -> list[str]:
        """Every id, in code order."""
        return list(self._ids) if isinstance(self._ids, tuple) else self._ids.to_pylist()

    def decode(self, codes: Iterable[int] | NDArray[np.integer]) -> list[str | None]:
        """Ids for ``codes`` (``None`` for ``-1``)."""
        flat = np.asarray(codes).ravel().tolist()
        return [None if c < 0 else self[c] for c in flat]

    def take(self, codes: Iterable[int] | NDArray[np.integer]) -> list[str]:
        """The ids of ``codes`` (all valid), as a list."""
        flat = np.asarray(codes, np.int64).ravel()
        if isinstance(self._ids, tuple):
            return [self._ids[c] for c in flat.tolist()]
        return list(self._ids.take(flat).to_pylist())

    @staticmethod
    def union(indexes: Iterable[IdIndex]) -> IdIndex:
        """Every id of ``indexes``, once, in order of first appearance."""
        parts = [ix._ids for ix in indexes]
        pa = pyarrow_or_none()
        if pa is not None and not any(isinstance(p, tuple) for p in parts):
            import pyarrow.compute as pc

            if not parts:
                return IdIndex([])
            return IdIndex(pc.unique(pa.chunked_array(parts, parts[0].type)))
        merged: dict[str, None] = {}
        for p in parts:
            merged.update(dict.fromkeys(p if isinstance(p, tuple) else p.to_pylist()))
        return IdIndex(list(merged))

    @cached_property
    def _keys(self) -> Keys | None:
        """The ids' integer keys (:func:`~tiap.ids.keys_of`), made once."""
        return keys_of(self._ids)

    def _inline_codes(self, values: pa.Array) -> NDArray[np.int64] | None:
        """:meth:`codes` by integer keys (:class:`Keys`), when the ids on both sides are
        at most 12 bytes; ``None`` when they are not, or when two folds collide."""
        import pyarrow as pa
        import pyarrow.compute as pc

        mine, theirs = self._keys, keys_of(values)
        if mine is None or theirs is None:
            return None
        mine, theirs = comparable([mine, theirs])
        found = pc.index_in(pa.array(theirs.keys), value_set=pa.array(mine.keys))
        codes = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
        if mine.records is not None and theirs.records is not None:
            hit = np.flatnonzero(codes >= 0)  # equal folds: equal ids iff the first words agree
            if not np.array_equal(mine.records[codes[hit], 0], theirs.records[hit, 0]):
                return None  # equal folds of different ids: compare the strings instead
        return codes

    def codes(self, ids: Sequence[str] | pa.Array | IdIndex) -> NDArray[np.int64]:
        """The code of each of ``ids``, ``-1`` where an id is not in this index."""
        if isinstance(ids, IdIndex):
            ids = ids._ids
        pa = pyarrow_or_none()
        if pa is not None and not isinstance(self._ids, tuple):
            import pyarrow.compute as pc

            values = ids if isinstance(ids, pa.Array) else pa.array(list(ids), pa.string())
            if values.type != self._ids.type:
                values = values.cast(self._ids.type)
            found = self._inline_codes(values)
            if found is not None:
                return found
            found = pc.index_in(values, value_set=self._ids)
            return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
        if self._dict is None:
            self._dict = {s: i for i, s in enumerate(self.to_list())}
        get = self._dict.get
        values_list = ids.to_pylist() if not isinstance(ids, (list, tuple)) else ids
        return np.fromiter((get(s, -1) for s in values_list), np.int64, len(values_list))


# --------------------------------------------------------------------------------------------
# Integer keys for short ids
# --------------------------------------------------------------------------------------------

#: Strings of at most this many bytes sit whole inside their Arrow string-view record.
INLINE_BYTES = 12
#: Strings of at most this many bytes, with their length, fit one uint64 exactly.
EXACT_BYTES = 7
#: Odd multipliers: the first column of a record, the last one.
FOLD = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
#: The inverse of ``FOLD[1]`` modulo 2**64 (reads a record's last column back from a fold).
UNFOLD = np.uint64(pow(int(FOLD[1]), -1, 2**64))


@dataclass
class Keys:
    """One uint64 per string, so that hashing integers (about twice as fast as strings) can
    stand in for hashing strings of up to 12 bytes. Two kinds:

    - ``exact`` (strings of at most 7 bytes): bytes and length make the key; ``records`` is
      ``None``.
    - ``view`` (at most 12 bytes): a string's 16-byte Arrow string-view record is its
      length followed by its bytes, zero-padded (the Arrow format's rule), so two records
      are equal exactly when the strings are. ``records`` is ``[n, 2]``; the keys are
      folds of the records (:func:`folded`), and ``records`` keeps them, so that strings
      whose folds agree can be told apart.
    """

    keys: NDArray[np.uint64]
    records: NDArray[np.uint64] | None

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def kind(self) -> str:
        return "exact" if self.records is None else "view"

    def view_records(self) -> NDArray[np.uint64]:
        """``[n, 2]`` string-view records (rebuilt from exact keys)."""
        if self.records is not None:
            return self.records
        keys = self.keys
        records = np.empty((keys.size, 2), np.uint64)
        records[:, 0] = (keys >> np.uint64(56)) | (keys << np.uint64(32))
        records[:, 1] = (keys >> np.uint64(32)) & np.uint64(0xFFFFFF)
        return records

    def strings(self) -> Any:
        """The strings, as a pyarrow string array."""
        import pyarrow as pa

        records = np.ascontiguousarray(self.view_records())
        views = pa.Array.from_buffers(pa.string_view(), len(records),
                                      [None, pa.py_buffer(records)])
        return views.cast(pa.string())


def folded(records: NDArray[np.uint64]) -> Keys:
    """Keys folded from ``[n, 2]`` records: ``w0 * F0 ^ w1 * F1``. For a given first word
    the fold is one-to-one in the second (``F1`` is odd), so two records with the same fold
    are the same record exactly when their first words agree."""
    keys = records[:, 0] * FOLD[0]
    keys ^= records[:, 1] * FOLD[1]
    return Keys(keys, records)


def keys_of(strings: Any, *, fold: bool = False) -> Keys | None:
    """The :class:`Keys` of a string array, or ``None`` when a string is longer than 12
    bytes (or null, or the machine is big-endian): such ids are hashed as strings. ``fold``
    gives strings of at most 7 bytes ``view`` keys, not ``exact`` ones."""
    import pyarrow as pa

    n = len(strings)
    if strings.null_count or n == 0 or sys.byteorder != "little":
        return None
    if strings.type in (pa.string(), pa.large_string()):  # too long: known from the offsets
        wide = strings.type == pa.large_string()
        offsets = np.frombuffer(strings.buffers()[1], np.int64 if wide else np.int32,
                                count=n + 1, offset=(8 if wide else 4) * strings.offset)
        if int(np.diff(offsets).max()) > INLINE_BYTES:
            return None
    views = strings if strings.type == pa.string_view() else strings.cast(pa.string_view())
    buffer = views.buffers()[1]
    view_lengths = np.frombuffer(buffer, np.uint32, count=4 * n, offset=16 * views.offset)[::4]
    longest = int(view_lengths.max())
    if longest > INLINE_BYTES:
        return None
    records = np.frombuffer(buffer, np.uint64, count=2 * n, offset=16 * views.offset)
    records = records.reshape(n, 2)
    if longest > EXACT_BYTES or fold:
        return folded(records)
    # bytes 0-3 sit in the top half of the first word, bytes 4-6 at the bottom of the
    # second; byte 7 is padding (zero), so the length takes the top byte
    keys = records[:, 0] >> np.uint64(32)
    keys |= records[:, 1] << np.uint64(32)
    keys |= view_lengths.astype(np.uint64) << np.uint64(56)
    return Keys(keys, None)


def comparable(parts: list[Keys]) -> list[Keys]:
    """``parts`` as keys of one kind, so that equal strings have equal keys across them."""
    if len({p.kind for p in parts}) == 1:
        return parts
    return [p if p.kind == "view" else folded(p.view_records()) for p in parts]


def joined(parts: list[Keys]) -> Keys:
    """Comparable keys, concatenated."""
    records = None if parts[0].records is None else np.concatenate([p.records for p in parts])
    return Keys(np.concatenate([p.keys for p in parts]), records)


def encode_keys(keyed: Keys) -> tuple[Any, Keys] | None:
    """``(indices, distinct keys)`` of keyed strings; ``None`` when two different strings
    share a fold.

    Exact keys need no check. For folds, the records' first words are checked row by row
    against their code's (see :func:`folded`: with those equal, equal folds mean equal
    records), unless the first word holds one value throughout (ids of one length and one
    4-byte prefix, such as ``doc-00212336``). Each code's second word is read back from its
    fold.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pa.array(keyed.keys))
    distinct = encoded.dictionary.to_numpy()
    if keyed.records is None:
        return encoded.indices, Keys(distinct, None)
    first = np.ascontiguousarray(keyed.records[:, 0])
    kept = np.empty((len(distinct), 2), np.uint64)
    if (first == first[0]).all():
        kept[:, 0] = first[0]
    else:
        codes = encoded.indices.to_numpy().astype(np.intp)
        kept[codes, 0] = first
        if not np.array_equal(kept[:, 0].take(codes), first):
            return None  # a collision: the caller hashes the strings instead
    kept[:, 1] = (distinct ^ (kept[:, 0] * FOLD[0])) * UNFOLD
    return encoded.indices, Keys(distinct, kept)
