"""Stored items and the ``items.jsonl`` interchange format.

One item a line::

    {"item_id": "conv-26:D1:3", "store": "f5", "kind": "raw", "sources": ["conv-26:D1:3"],
     "parents": [], "serving": true, "text": "...", "collection": "conv-26"}

``item_id``, ``kind`` and ``sources`` are required (``sources`` may be empty for an item
derived only through ``parents``); ``store``, ``parents``, ``serving``, ``text`` and
``collection`` are optional. Derived items are serving by default; raw items' ``serving``
flag is kept but the Canonical target never credits raw items.

**Identity.** An item id is unique only within its store: two stores built from one dataset
reuse ids such as ``conv-26:D2:1#f1`` for different texts. An item is therefore
``(store, item_id)`` (:class:`tiap.ids.ItemKey`), and every ``items.jsonl`` TIAP writes
names its store on every row. One file holds one store. A file whose rows name no store
(written by hand, or by another tool) is named by :func:`store_name`: the folder of an
``items.jsonl``, else the file's stem. Store names are tokens (letters, digits, ``_``,
``.``, ``-``, starting with a letter or digit) because file names are made from them
(``qrels/<store>.<target>.qrels``).

**Partial lineage.** An importer that cannot determine an item's lineage says what it does
know, and nothing more, in an optional ``uncertain`` object (:class:`Uncertainty`)::

    {"item_id": "m17", "kind": "observation", "sources": ["conv-26:D3:4"],
     "uncertain": {"possible_sources": "any", "excluded_sources": ["conv-26:D1:3"],
                   "requires": [["conv-26:D2:1", "conv-26:D2:8"]]}}

``sources`` are then the units the lineage certainly reaches; ``possible_sources`` the
others it may reach (a list, or ``"any"``: any unit of the item's collection), minus
``excluded_sources``; every list of ``requires`` holds at least one unit of the lineage;
``max_sources`` caps how many units the lineage holds (1 for a raw turn); ``exclusive``
items never share a unit with another exclusive item (each turn has one raw item).

An import that *assumes* part of an item's lineage (a heuristic, such as ``tiap import
mtel-trace --infer-from-text`` giving an item the gold turn whose words it shares most)
writes the assumed lineage as the row's lineage and says so in an optional ``inferred``
object (:class:`Inference`)::

    {"item_id": "mem_15", "kind": "derived", "sources": ["conv-26:D1:18"],
     "inferred": {"possible_sources": ["conv-26:D1:18", "conv-26:D9:1"]}}

``possible_sources`` are the units the lineage may reach by what the import proves (a list,
or ``"any"``, the default); ``"kind": true`` says the kind is assumed too. Rescoring counts
the values that rest on such items as ``n_inferred``, never as exact.

An item the import knows exists but never saw is a *placeholder* (``"placeholder":
{"existence": "certain" | "possible", "count": N}``): it stands for ``count`` unseen items
(unknown when absent) of that kind and lineage, is never ranked, and with ``existence``
``possible`` may stand for none at all. Rescoring reports exact values where all this
determines them and ``[lower, upper]`` intervals elsewhere (docs/partial-lineage.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tiap.errors import Problems, TiapError
from tiap.fields import key_problems, near_miss, nearest
from tiap.ids import id_ok, id_problem
from tiap.io import gc_paused, iter_jsonl, write_jsonl

RAW_KIND = "raw"
_STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


ANY = "any"  # possible_sources: any unit of the item's collection
_EXISTENCE = ("certain", "possible")


@dataclass(frozen=True)
class Uncertainty:
    """What an item's lineage may be, beyond its certain ``sources`` (module docstring).

    Attributes:
        possible: units the lineage may reach besides the certain ones; ``None``: any unit
            of the item's collection except ``excluded``.
        excluded: units the lineage certainly does not reach (with ``possible=None``).
        requires: unit sets; the lineage holds at least one unit of each.
        max_sources: at most this many units in the lineage (``None``: no limit).
        exclusive: no other exclusive item of the store shares a unit with this one.
    """

    possible: tuple[str, ...] | None = None
    excluded: tuple[str, ...] = ()
    requires: tuple[tuple[str, ...], ...] = ()
    max_sources: int | None = None
    exclusive: bool = False

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"possible_sources": ANY if self.possible is None
                               else list(self.possible)}
        if self.excluded:
            row["excluded_sources"] = list(self.excluded)
        if self.requires:
            row["requires"] = [list(r) for r in self.requires]
        if self.max_sources is not None:
            row["max_sources"] = self.max_sources
        if self.exclusive:
            row["exclusive"] = True
        return row


@dataclass(frozen=True)
class Inference:
    """An item whose lineage (and, with ``kind``, kind) the import assumed rather than
    proved (module docstring): by proof alone the lineage may reach any unit of
    ``possible`` (``None``: any unit of the item's collection)."""

    possible: tuple[str, ...] | None = None
    kind: bool = False

    def may_reach(self, unit: str) -> bool:
        return self.possible is None or unit in self.possible

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"possible_sources": ANY if self.possible is None
                               else list(self.possible)}
        if self.kind:
            row["kind"] = True
        return row


@dataclass(frozen=True)
class Placeholder:
    """An item the import knows of but never saw: it stands for ``count`` unseen items
    (``None``: an unknown number, at least one when ``existence`` is ``certain``)."""

    existence: str = "certain"
    count: int | None = None

    def __post_init__(self) -> None:
        if self.existence not in _EXISTENCE:
            raise ValueError(f"existence must be one of {_EXISTENCE}, got {self.existence!r}")

    @property
    def certain(self) -> bool:
        return self.existence == "certain"

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"existence": self.existence}
        if self.count is not None:
            row["count"] = self.count
        return row


@dataclass(frozen=True)
class Item:
    """One stored memory item with its lineage: the source units it derives from
    (``sources``) and the items it derives from (``parents``); see the module docstring for
    the ``items.jsonl`` row and partial lineage.

    >>> raw = Item("c1:D1:1", "raw", ("c1:D1:1",), text="Ana: I adopted a cat.",
    ...            collection="c1")
    >>> fact = Item("c1:D1:1#f1", "fact", ("c1:D1:1",), text="Ana adopted a cat.",
    ...             collection="c1", meta=(("speaker", "Ana"),))
    >>> raw.is_raw, fact.is_raw, fact.is_serving, fact.get("speaker")
    (True, False, True, 'Ana')
    >>> fact.to_json("f5")
    {'item_id': 'c1:D1:1#f1', 'store': 'f5', 'kind': 'fact', 'sources': ['c1:D1:1'],
     'text': 'Ana adopted a cat.', 'collection': 'c1', 'speaker': 'Ana'}
    """

    item_id: str
    kind: str
    sources: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    serving: bool | None = None  # None: the default (derived items serve)
    text: str | None = None
    collection: str | None = None
    meta: tuple[tuple[str, Any], ...] = ()
    store: str | None = None  # the store that holds the item (None: not named in the file)
    uncertain: Uncertainty | None = None  # None: the lineage is exactly sources (+ parents)
    placeholder: Placeholder | None = None
    inferred: Inference | None = None  # None: the lineage written is proven, not assumed

    @property
    def is_raw(self) -> bool:
        return self.kind == RAW_KIND

    @property
    def is_serving(self) -> bool:
        return True if self.serving is None else self.serving

    def to_json(self, store: str | None = None) -> dict[str, Any]:
        """The ``items.jsonl`` row; ``store`` (else the item's own) is written after the id."""
        row: dict[str, Any] = {"item_id": self.item_id}
        if store or self.store:
            row["store"] = store or self.store
        row["kind"] = self.kind
        row["sources"] = list(self.sources)
        if self.parents:
            row["parents"] = list(self.parents)
        if self.serving is not None:
            row["serving"] = self.serving
        if self.text is not None:
            row["text"] = self.text
        if self.collection is not None:
            row["collection"] = self.collection
        if self.uncertain is not None:
            row["uncertain"] = self.uncertain.to_json()
        if self.placeholder is not None:
            row["placeholder"] = self.placeholder.to_json()
        if self.inferred is not None:
            row["inferred"] = self.inferred.to_json()
        row.update(dict(self.meta))
        return row

    def get(self, name: str) -> Any:
        """A field by name, including extra metadata fields (for user-defined targets)."""
        if name in {"item_id", "kind", "sources", "parents", "text", "collection", "store"}:
            return getattr(self, name)
        if name == "serving":
            return self.is_serving
        return dict(self.meta).get(name)


_KNOWN = frozenset({"item_id", "kind", "sources", "parents", "serving", "text", "collection",
                    "store", "uncertain", "placeholder", "inferred"})


def _kind_of(value: Any) -> str:
    """How a JSON value is named in an error: ``a list``, ``the number 3``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), "null")


class _Record:
    """The problems of one item record, located at its file, line and (once known) id."""

    def __init__(self, file: str | Path | None, line: int | None) -> None:
        self.problems = Problems(file)
        self.line = line
        self.record: str | None = None

    def bad(self, message: str) -> None:
        self.problems.add(message, self.line, record=self.record)


def _str_list(value: Any, field: str, rec: _Record) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        rec.bad(f"field {field!r} must be a list of ids, got a string {value!r}")
        return ()
    if not isinstance(value, list) or not all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        rec.bad(f"field {field!r} must be a list of ids")
        return ()
    return tuple(str(v) for v in value)


_UNCERTAIN_KEYS = ("possible_sources", "excluded_sources", "requires", "max_sources",
                   "exclusive")
_PLACEHOLDER_KEYS = ("existence", "count")


def item_from_json(obj: Any, *, file: str | Path | None = None, line: int | None = None,
                   require_sources: bool = True) -> Item:
    """One ``items.jsonl`` row (module docstring); every problem of the row is raised
    together, each naming the file, line and item. Extra keys are kept as metadata
    (:attr:`Item.meta`), except a near miss of a known key (``"sorces"``), which is an error
    suggesting the key (:mod:`tiap.fields`). A row without ``sources`` is an error: its
    lineage is never taken to be empty by default (``require_sources=False``: a format whose
    items may state their lineage by ``parents`` or ``uncertain`` alone, the generic import)."""
    if type(obj) is dict and (item := _plain_item(obj, require_sources)) is not None:
        return item
    return _checked_item(obj, file, line, require_sources)


def _checked_item(obj: Any, file: str | Path | None, line: int | None,
                  require_sources: bool) -> Item:
    """:func:`item_from_json` with every check: each problem of the row, located."""
    if not isinstance(obj, dict):
        raise TiapError("an item must be a JSON object", file=file, line=line)
    rec = _Record(file, line)
    raw_id = obj.get("item_id")
    item_id: str | None = None
    if raw_id is None or raw_id == "":
        rec.bad("item has no 'item_id'")
    elif isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        rec.bad(f"field 'item_id' must be a string, got {_kind_of(raw_id)}")
    else:
        item_id = str(raw_id)
        problem = id_problem(item_id)
        if problem is None:
            rec.record = item_id
        else:
            rec.bad(f"item id {item_id!r} {problem}")
    if obj.get("kind") in (None, ""):
        rec.bad("item has no 'kind'")
    for key in ("kind", "text", "collection"):  # never a list or a number turned into text
        v = obj.get(key)
        if v is not None and not isinstance(v, str) and not (
                key == "collection" and isinstance(v, int) and not isinstance(v, bool)):
            rec.bad(f"field {key!r} must be a string, got {_kind_of(v)}")
    for message in key_problems(obj, _KNOWN, "an item record", strict=False):
        rec.bad(message)
    serving = obj.get("serving")
    if serving is not None and not isinstance(serving, bool):
        rec.bad("field 'serving' must be true or false")
    store = obj.get("store")
    if store is not None and (not isinstance(store, str) or not _STORE_NAME.fullmatch(store)):
        rec.bad(f"field 'store' must be a store name (letters, digits, '_', '.', '-'), "
                f"got {store!r}")
    if require_sources and "sources" not in obj:
        rec.bad("item has no 'sources' (the units it derives from; [] for none)")
    sources = _str_list(obj.get("sources"), "sources", rec)
    parents = _str_list(obj.get("parents"), "parents", rec)
    uncertain = _uncertainty(obj.get("uncertain"), sources, rec)
    placeholder = _placeholder(obj.get("placeholder"), rec)
    inferred = _inference(obj.get("inferred"), rec)
    rec.problems.raise_if_any()
    assert item_id is not None
    coll = obj.get("collection")
    return Item(
        item_id=item_id,
        kind=str(obj["kind"]),
        sources=sources,
        parents=parents,
        serving=serving,
        text=obj.get("text"),
        collection=None if coll is None else str(coll),
        meta=tuple(sorted((k, v) for k, v in obj.items() if k not in _KNOWN)),
        store=store,
        uncertain=uncertain,
        placeholder=placeholder,
        inferred=inferred,
    )


#: Keys a row may have for :func:`_plain_item` to read it (the others take the full checks).
_PLAIN_KEYS = frozenset({"item_id", "kind", "sources", "parents", "serving", "text",
                         "collection", "store"})
_STORE_NAMES_OK: set[str] = set()  # store names already checked (a file repeats one)
_EXTRA_OK: set[str] = set()  # extra keys already checked: metadata, no near miss


def _plain_ids(value: Any) -> tuple[str, ...] | None:
    """A plain row's ``sources`` or ``parents``: absent, ``[]`` or a list of strings as a
    tuple; ``None`` for anything else (the full checks then read the row)."""
    if value is None or value == []:
        return ()
    if type(value) is not list or not all(type(v) is str for v in value):
        return None
    return tuple(value)


def _plain_item(obj: dict[str, Any], require_sources: bool) -> Item | None:
    """The item of a row with exact lineage and well-typed fields (nearly every row of a
    store), read without building its problem list; ``None`` for any other row, which
    :func:`item_from_json` then checks in full (so every problem is still reported, and
    found by the same code). The item equals the one the full checks build."""
    item_id, kind, sources = obj.get("item_id"), obj.get("kind"), obj.get("sources")
    if (type(item_id) is not str or not id_ok(item_id) or type(kind) is not str or not kind
            or (sources is None and (require_sources or "sources" in obj))):
        return None
    meta = []
    for key in obj:
        if key not in _PLAIN_KEYS:
            if key not in _EXTRA_OK:
                if key in _KNOWN or near_miss(key, _KNOWN) is not None:
                    return None
                _EXTRA_OK.add(key)
            meta.append(key)
    text, coll, serving, store = (obj.get("text"), obj.get("collection"), obj.get("serving"),
                                  obj.get("store"))
    if ((text is not None and type(text) is not str)
            or (coll is not None and type(coll) is not str)
            or (serving is not None and type(serving) is not bool)):
        return None
    if store is not None and store not in _STORE_NAMES_OK:
        if type(store) is not str or not _STORE_NAME.fullmatch(store):
            return None
        _STORE_NAMES_OK.add(store)
    src, par = _plain_ids(sources), _plain_ids(obj.get("parents"))
    if src is None or par is None:
        return None
    meta.sort()
    # the dataclass's own __init__ sets each of its twelve fields through
    # object.__setattr__ (frozen): setting the instance's dict at once is several times faster
    item = object.__new__(Item)
    object.__setattr__(item, "__dict__", {
        "item_id": item_id, "kind": kind, "sources": src, "parents": par, "serving": serving,
        "text": text, "collection": coll, "meta": tuple([(k, obj[k]) for k in meta]),
        "store": store, "uncertain": None, "placeholder": None, "inferred": None})
    return item


_INFERRED_KEYS = ("possible_sources", "kind")


def _inference(value: Any, rec: _Record) -> Inference | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        rec.bad(f"field 'inferred' must be an object, got {_kind_of(value)}")
        return None
    before = rec.problems.total
    unknown = [k for k in value if k not in _INFERRED_KEYS]
    if unknown:
        rec.bad(f"field 'inferred' has unknown key(s) {', '.join(map(repr, unknown))}; "
                f"expected {', '.join(_INFERRED_KEYS)}")
    raw = value.get("possible_sources", ANY)
    possible = None if raw == ANY else _str_list(raw, "inferred.possible_sources", rec)
    kind = value.get("kind", False)
    if not isinstance(kind, bool):
        rec.bad(f"'inferred.kind' must be true or false, got {_kind_of(kind)}")
    if rec.problems.total > before:
        return None
    return Inference(possible=possible, kind=bool(kind))


def _uncertainty(value: Any, sources: tuple[str, ...], rec: _Record) -> Uncertainty | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        rec.bad("field 'uncertain' must be an object")
        return None
    before = rec.problems.total
    unknown = [k for k in value if k not in _UNCERTAIN_KEYS]
    if unknown:
        hints = [f" (did you mean {near!r}?)" if (near := nearest(k, _UNCERTAIN_KEYS)) else ""
                 for k in unknown]
        rec.bad("field 'uncertain' has unknown key(s) "
                + ", ".join(f"{k!r}{h}" for k, h in zip(unknown, hints, strict=True))
                + "; expected " + ", ".join(_UNCERTAIN_KEYS))
    raw_possible = value.get("possible_sources", ANY)
    possible = None if raw_possible == ANY else _str_list(
        raw_possible, "uncertain.possible_sources", rec)
    excluded = _str_list(value.get("excluded_sources"), "uncertain.excluded_sources", rec)
    if possible is not None and excluded:
        rec.bad("'excluded_sources' goes with possible_sources \"any\" only (a list "
                "of possible sources already excludes every other unit)")
    both = sorted(set(sources) & set(excluded))
    if both:
        rec.bad(f"units both in sources and excluded_sources: {', '.join(both)}")
    req_raw = value.get("requires") or []
    requires: tuple[tuple[str, ...], ...] = ()
    if not isinstance(req_raw, list):
        rec.bad("'uncertain.requires' must be a list of unit lists")
    else:
        requires = tuple(_str_list(r, "uncertain.requires[]", rec) for r in req_raw)
        if any(not r for r in requires):
            rec.bad("'uncertain.requires' holds an empty list (no lineage meets it)")
    cap = value.get("max_sources")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        rec.bad(f"'uncertain.max_sources' must be a positive integer, got {cap!r}")
        cap = None
    if cap is not None and len(set(sources)) > cap:
        rec.bad(f"{len(set(sources))} sources but max_sources {cap}")
    exclusive = value.get("exclusive", False)
    if not isinstance(exclusive, bool):
        rec.bad("'uncertain.exclusive' must be true or false")
    if rec.problems.total > before:
        return None
    return Uncertainty(possible=possible, excluded=excluded, requires=requires,
                       max_sources=cap, exclusive=exclusive)


def _placeholder(value: Any, rec: _Record) -> Placeholder | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(_PLACEHOLDER_KEYS):
        hint = ""
        if isinstance(value, dict):
            hint = "".join(f"; unknown key {k!r}" + (f" (did you mean {near!r}?)"
                                                     if (near := nearest(k, _PLACEHOLDER_KEYS))
                                                     else "")
                           for k in value if k not in _PLACEHOLDER_KEYS)
        rec.bad("field 'placeholder' must be an object with 'existence' and optional "
                "'count'" + hint)
        return None
    existence = value.get("existence", "certain")
    count = value.get("count")
    ok = True
    if existence not in _EXISTENCE:
        rec.bad(f"placeholder existence must be 'certain' or 'possible', got {existence!r}")
        ok = False
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        rec.bad(f"placeholder count must be a positive integer, got {count!r}")
        ok = False
    return Placeholder(existence, count) if ok else None


def iter_items(path: str | Path) -> Iterator[Item]:
    """The items of ``items.jsonl`` one at a time (a large store never sits in memory); a
    bad row stops the iteration with an error naming its line. :func:`read_items` checks the
    whole file (duplicate ids, the store) and reports every problem together.

    >>> _ = Path("items.jsonl").write_text(
    ...     '{"item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]}\\n'
    ...     '{"item_id": "m1", "kind": "fact", "sources": [], "parents": ["t1"]}\\n')
    >>> [(it.item_id, it.sources, it.parents) for it in iter_items("items.jsonl")]
    [('t1', ('c1:D1:1',), ()), ('m1', (), ('t1',))]
    """
    for line, obj in iter_jsonl(path):
        yield item_from_json(obj, file=path, line=line)


def read_items(path: str | Path) -> list[Item]:
    """Read ``items.jsonl``; bad rows, duplicate item ids, and rows naming two different
    stores are errors naming the lines, all of the file reported together (the first 50
    listed, the rest counted).

    >>> _ = Path("items.jsonl").write_text(
    ...     '{"item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"], "text": "I got a cat."}\\n'
    ...     '{"item_id": "f1", "kind": "fact", "sources": ["c1:D1:1"], "speaker": "Ana"}\\n')
    >>> items = read_items("items.jsonl")
    >>> [(it.item_id, it.kind, it.sources) for it in items], items[1].get("speaker")
    ([('t1', 'raw', ('c1:D1:1',)), ('f1', 'fact', ('c1:D1:1',))], 'Ana')
    >>> _ = Path("bad.jsonl").write_text('{"item_id": "t1", "sources": []}\\n'
    ...                                  '{"item_id": "t2", "kind": "raw", "sources": []}\\n'
    ...                                  '{"item_id": "t2", "kind": "raw", "sources": []}\\n')
    >>> read_items("bad.jsonl")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: bad.jsonl:1, record t1: item has no 'kind'
    bad.jsonl:3, record t2: duplicate item id (first on line 2)
    """
    return _read_rows(path).items()


def _read_rows(path: str | Path) -> StoreRows:
    rows = StoreRows(path)
    with gc_paused():
        for line, obj in iter_jsonl(path, rows.problems):
            rows.add(line, obj)
    return rows


class StoreRows:
    """A store's rows given one at a time, checked as :func:`read_items` checks a file's:
    how :func:`tiap.memory.build_store` hands over the store it builds without reading the
    file back (``path`` names the file the rows are in).

    >>> rows = StoreRows("stores/f5/items.jsonl")
    >>> rows.add(1, {"item_id": "t1", "store": "f5", "kind": "raw", "sources": ["c1:D1:1"]})
    >>> rows.add(2, {"item_id": "t1", "store": "f5", "kind": "raw", "sources": ["c1:D1:1"]})
    >>> rows.store()
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: stores/f5/items.jsonl:2, record t1: duplicate item id (first on line 1)
    """

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.problems = Problems(path)
        self._items: list[Item] = []
        self._seen: dict[str, int] = {}
        self._first_store: tuple[str | None, int] | None = None

    def add(self, line: int, obj: Any) -> None:
        """Check the row ``obj`` of line ``line`` and keep its item (a problem is kept)."""
        try:
            item = item_from_json(obj, file=self.path, line=line)
        except TiapError as exc:
            self.problems.extend(exc)
            return
        if self._first_store is None:
            self._first_store = (item.store, line)
        elif item.store != self._first_store[0]:
            self.problems.add(f"the row names store {item.store!r}, line "
                              f"{self._first_store[1]} names {self._first_store[0]!r}: one "
                              "items file holds one store", line, record=item.item_id)
        if item.item_id in self._seen:
            self.problems.add(f"duplicate item id (first on line {self._seen[item.item_id]})",
                              line, record=item.item_id, code="duplicate")
            return
        self._seen[item.item_id] = line
        self._items.append(item)

    def items(self) -> list[Item]:
        """The items, or the problems of every row together as a :class:`TiapError`."""
        self.problems.raise_if_any()
        if not self._items:
            raise TiapError("empty items file: it holds no items", file=self.path)
        return self._items

    def store(self, name: str | None = None) -> Store:
        """The :class:`Store` :func:`read_store` gives for the rows."""
        items = self.items()
        given = items[0].store
        if given is not None and name is not None and given != name:
            raise TiapError(f"the items name their store {given!r}, not {name!r}",
                            file=self.path)
        return Store(given or name or default_store_name(self.path), tuple(items),
                     Path(self.path))


@dataclass(frozen=True, eq=False)
class Store:
    """A named store: its items (one file, one store) and where they were read from."""

    name: str
    items: tuple[Item, ...]
    path: Path | None = None

    def __post_init__(self) -> None:
        check_store_name(self.name)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)


def read_store(path: str | Path, name: str | None = None) -> Store:
    """Read ``items.jsonl`` as a :class:`Store`, named by its rows (else ``name``, else
    :func:`default_store_name`). A ``name`` that contradicts the rows is an error.

    >>> Path("stores/f5").mkdir(parents=True)
    >>> _ = Path("stores/f5/items.jsonl").write_text(
    ...     '{"item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]}\\n'
    ...     '{"item_id": "f1", "kind": "fact", "sources": ["c1:D1:1"]}\\n')
    >>> store = read_store("stores/f5/items.jsonl")
    >>> store.name, len(store), [it.item_id for it in store]
    ('f5', 2, ['t1', 'f1'])
    """
    return _read_rows(path).store(name)


def write_items(path: str | Path, items: Iterable[Item], store: str | None = None) -> int:
    """Atomically write ``items.jsonl``; ``store`` names the store on every row (else each
    item's own ``store``). Returns the number of rows.

    >>> items = [Item("t1", "raw", ("c1:D1:1",), text="I got a cat."),
    ...          Item("f1", "fact", ("c1:D1:1",), text="Ana got a cat.")]
    >>> write_items("items.jsonl", items, store="f5")
    2
    >>> print(Path("items.jsonl").read_text(), end="")
    {"item_id":"t1","store":"f5","kind":"raw","sources":["c1:D1:1"],"text":"I got a cat."}
    {"item_id":"f1","store":"f5","kind":"fact","sources":["c1:D1:1"],"text":"Ana got a cat."}
    """
    if store is not None:
        check_store_name(store)
    return write_jsonl(path, (it.to_json(store) for it in items))


def stamp_store(items: Iterable[Item], store: str) -> tuple[Item, ...]:
    """The items, each naming ``store`` (items that already do are kept as they are)."""
    check_store_name(store)
    return tuple(it if it.store == store else replace(it, store=store) for it in items)


def check_store_name(name: str, what: str = "store name") -> str:
    """``name`` if it is a valid store name, else a :class:`TiapError` saying what is."""
    if not isinstance(name, str) or not _STORE_NAME.fullmatch(name):
        raise TiapError(f"invalid {what} {name!r}: use letters, digits, '_', '.' and '-', "
                        "starting with a letter or digit")
    return name


def default_store_name(path: str | Path) -> str:
    """The name of a store read from ``path`` whose rows name none: the folder of an
    ``items.jsonl`` (``out/stores/f5/items.jsonl`` -> ``f5``), else the file's stem; with
    characters a store name cannot hold replaced by ``_``."""
    p = Path(path)
    base = p.name
    for suffix in (".gz", ".jsonl", ".json"):
        base = base.removesuffix(suffix)
    if base == "items":
        base = p.resolve().parent.name or base
    return safe_store_name(base)


def safe_store_name(text: str) -> str:
    """``text`` made a store name: characters a name cannot hold become ``_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text).lstrip("_.-") or "store"


def store_name(items: Sequence[Item], fallback: str) -> str:
    """The store the items belong to: the name their rows give, else ``fallback`` (made a
    valid name by :func:`safe_store_name`).

    Raises:
        TiapError: when the items name two different stores.
    """
    names = {it.store for it in items}
    if len(names) > 1:
        named = sorted(n for n in names if n is not None)
        raise TiapError(f"the items name {len(named)} different stores ({', '.join(named)})"
                        + (" and some none" if None in names else "")
                        + ": one store at a time")
    name = next(iter(names), None)
    return name if name is not None else safe_store_name(fallback)
