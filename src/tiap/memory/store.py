"""Stored items and the ``items.jsonl`` interchange format (ARCHITECTURE.md).

One item a line::

    {"item_id": "conv-26:D1:3", "kind": "raw", "sources": ["conv-26:D1:3"],
     "parents": [], "serving": true, "text": "...", "collection": "conv-26"}

``item_id``, ``kind`` and ``sources`` are required (``sources`` may be empty for an item
derived only through ``parents``); ``parents``, ``serving``, ``text`` and ``collection`` are
optional. Derived items are serving by default; raw items' ``serving`` flag is kept but the
Canonical target never credits raw items.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.errors import Problem, TiapError
from tiap.io import iter_jsonl, write_jsonl

RAW_KIND = "raw"


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

    @property
    def is_raw(self) -> bool:
        return self.kind == RAW_KIND

    @property
    def is_serving(self) -> bool:
        return True if self.serving is None else self.serving

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"item_id": self.item_id, "kind": self.kind, "sources": list(self.sources)}
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
        if name in {"item_id", "kind", "sources", "parents", "text", "collection"}:
            return getattr(self, name)
        if name == "serving":
            return self.is_serving
        return dict(self.meta).get(name)


_KNOWN = {"item_id", "kind", "sources", "parents", "serving", "text", "collection"}


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
    )


def iter_items(path: str | Path) -> Iterator[Item]:
    for line, obj in iter_jsonl(path):
        yield item_from_json(obj, file=path, line=line)


def read_items(path: str | Path) -> list[Item]:
    """Read ``items.jsonl``; duplicate item ids are an error naming both lines."""
    items: list[Item] = []
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    for line, obj in iter_jsonl(path):
        item = item_from_json(obj, file=path, line=line)
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


def write_items(path: str | Path, items: Iterable[Item]) -> int:
    return write_jsonl(path, (it.to_json() for it in items))
