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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tiap.errors import Problem, TiapError
from tiap.io import iter_jsonl, write_jsonl

RAW_KIND = "raw"
_STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Item:
    item_id: str
    kind: str
    sources: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    serving: bool | None = None  # None: the default (derived items serve)
    text: str | None = None
    collection: str | None = None
    meta: tuple[tuple[str, Any], ...] = ()
    store: str | None = None  # the store that holds the item (None: not named in the file)

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
        row.update(dict(self.meta))
        return row

    def get(self, name: str) -> Any:
        """A field by name, including extra metadata fields (for user-defined targets)."""
        if name in {"item_id", "kind", "sources", "parents", "text", "collection", "store"}:
            return getattr(self, name)
        if name == "serving":
            return self.is_serving
        return dict(self.meta).get(name)


_KNOWN = {"item_id", "kind", "sources", "parents", "serving", "text", "collection", "store"}


def _str_list(value: Any, field: str, where: dict[str, Any]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        raise TiapError(f"field {field!r} must be a list of ids, got a string {value!r}", **where)
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
        raise TiapError(f"field {field!r} must be a list of ids", **where)
    return tuple(str(v) for v in value)


def item_from_json(obj: Any, *, file: str | Path | None = None, line: int | None = None) -> Item:
    where: dict[str, Any] = {"file": file, "line": line}
    if not isinstance(obj, dict):
        raise TiapError("an item must be a JSON object", **where)
    for key in ("item_id", "kind"):
        if key not in obj or obj[key] in (None, ""):
            raise TiapError(f"item has no {key!r}", **where)
    item_id = str(obj["item_id"])
    where["record"] = item_id
    if any(c.isspace() for c in item_id):
        raise TiapError("item ids may not contain whitespace (TREC files could not hold them)", **where)
    serving = obj.get("serving")
    if serving is not None and not isinstance(serving, bool):
        raise TiapError("field 'serving' must be true or false", **where)
    text = obj.get("text")
    coll = obj.get("collection")
    store = obj.get("store")
    if store is not None and (not isinstance(store, str) or not _STORE_NAME.fullmatch(store)):
        raise TiapError(f"field 'store' must be a store name (letters, digits, '_', '.', '-'), "
                        f"got {store!r}", **where)
    meta = tuple(sorted((k, v) for k, v in obj.items() if k not in _KNOWN))
    return Item(
        item_id=item_id,
        kind=str(obj["kind"]),
        sources=_str_list(obj.get("sources"), "sources", where),
        parents=_str_list(obj.get("parents"), "parents", where),
        serving=serving,
        text=None if text is None else str(text),
        collection=None if coll is None else str(coll),
        meta=meta,
        store=store,
    )


def iter_items(path: str | Path) -> Iterator[Item]:
    for line, obj in iter_jsonl(path):
        yield item_from_json(obj, file=path, line=line)


def read_items(path: str | Path) -> list[Item]:
    """Read ``items.jsonl``; duplicate item ids, and rows naming two different stores, are
    errors naming the lines."""
    items: list[Item] = []
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    first_store: tuple[str | None, int] | None = None
    for line, obj in iter_jsonl(path):
        item = item_from_json(obj, file=path, line=line)
        if first_store is None:
            first_store = (item.store, line)
        elif item.store != first_store[0]:
            problems.append(Problem(
                f"the row names store {item.store!r}, line {first_store[1]} names "
                f"{first_store[0]!r}: one items file holds one store", file=str(path),
                line=line, record=item.item_id))
        if item.item_id in seen:
            problems.append(
                Problem(
                    f"duplicate item id (first on line {seen[item.item_id]})",
                    file=str(path),
                    line=line,
                    record=item.item_id,
                )
            )
            continue
        seen[item.item_id] = line
        items.append(item)
    if problems:
        raise TiapError(problems=problems)
    return items


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
    :func:`default_store_name`). A ``name`` that contradicts the rows is an error."""
    items = read_items(path)
    given = items[0].store if items else None
    if given is not None and name is not None and given != name:
        raise TiapError(f"the items name their store {given!r}, not {name!r}", file=path)
    return Store(given or name or default_store_name(path), tuple(items), Path(path))


def write_items(path: str | Path, items: Iterable[Item], store: str | None = None) -> int:
    """Atomically write ``items.jsonl``; ``store`` names the store on every row (else each
    item's own ``store``). Returns the number of rows."""
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
