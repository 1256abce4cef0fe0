"""The store reader (``items.jsonl``): any byte string either reads as a reference reader
written here from the documented format reads it, or raises a located ``TiapError``; no
field is ever turned into text it did not hold (a number, a list, ``null``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiap.errors import TiapError
from tiap.memory.store import read_items

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
                    st.sampled_from(["", "t1", "t 2", "raw", "fact", "u1", "x"]))
_VALUE = st.recursive(_SCALAR, lambda c: st.lists(c, max_size=3)
                      | st.dictionaries(st.sampled_from(["a", "b"]), c, max_size=2), max_leaves=6)
_ITEM = st.fixed_dictionaries(
    {}, optional={"item_id": _VALUE | st.sampled_from(["t1", "t2", "f1"]),
                  "kind": _VALUE | st.sampled_from(["raw", "fact"]),
                  "text": _VALUE | st.just("She moved."), "sources": _VALUE,
                  "parents": _VALUE, "serving": _VALUE, "collection": _VALUE,
                  "extra": _VALUE})


def _ids(v: object) -> tuple[str, ...] | None:
    """A list of ids as the format defines it (None: not one)."""
    if v is None:
        return ()
    if not isinstance(v, list) or not all(
            isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
        return None
    return tuple(str(x) for x in v)


def _reference(rows: list[object]) -> list[dict] | None:  # type: ignore[type-arg]
    """What the rows mean (None: the file must be refused)."""
    out, seen = [], set()
    for r in rows:
        if not isinstance(r, dict):
            return None
        iid, kind = r.get("item_id"), r.get("kind")
        if isinstance(iid, bool) or not isinstance(iid, (str, int)) or iid == "":
            return None
        if not isinstance(kind, str) or kind == "":
            return None
        iid = str(iid)
        if any(c.isspace() for c in iid) or iid in seen:
            return None
        seen.add(iid)
        text, coll = r.get("text"), r.get("collection")
        if text is not None and not isinstance(text, str):
            return None
        if coll is not None and (isinstance(coll, bool) or not isinstance(coll, (str, int))):
            return None
        serving = r.get("serving")
        if serving is not None and not isinstance(serving, bool):
            return None
        sources, parents = _ids(r.get("sources")), _ids(r.get("parents"))
        if sources is None or parents is None:
            return None
        out.append({"item_id": iid, "kind": kind, "text": text,
                    "collection": None if coll is None else str(coll),
                    "sources": sources, "parents": parents})
    return out or None  # an empty file is refused


@SETTINGS
@given(rows=st.lists(_ITEM, max_size=4))
def test_items_read_as_the_format_says_or_are_refused(tmp_path_factory, rows) -> None:
    path = tmp_path_factory.mktemp("s") / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = _reference(rows)
    try:
        got = read_items(path)
    except TiapError as exc:
        assert expected is None, (exc, rows)
        assert all(p.file == str(path) and (p.line or not rows) for p in exc.problems)
        return
    assert expected is not None, (got, rows)
    assert [{"item_id": i.item_id, "kind": i.kind, "text": i.text, "collection": i.collection,
             "sources": i.sources, "parents": i.parents} for i in got] == expected


@SETTINGS
@given(data=st.binary(max_size=120))
def test_any_bytes_read_or_raise_tiap_error(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("s") / "items.jsonl"
    path.write_bytes(data)
    try:
        read_items(path)
    except TiapError:
        pass


@pytest.mark.parametrize(("row", "message"), [
    ({"item_id": "t1", "kind": "raw", "sources": [], "text": 3}, "field 'text' must be a string, got the "
                                                  "number 3"),
    ({"item_id": "t1", "kind": ["raw"], "sources": []}, "field 'kind' must be a string, got a list"),
    ({"item_id": ["t1"], "kind": "raw", "sources": []}, "field 'item_id' must be a string, got a list"),
    ({"item_id": "t1", "kind": "raw", "sources": [True]}, "field 'sources' must be a list"),
    # no 'sources': the lineage is not taken to be empty (it was: the item never credited)
    ({"item_id": "t1", "kind": "raw"}, "item has no 'sources'"),
    ({"item_id": "f1", "kind": "fact", "parents": ["t1"]}, "item has no 'sources'"),
])
def test_no_value_is_turned_into_text(tmp_path: Path, row: dict, message: str) -> None:  # type: ignore[type-arg]
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(TiapError) as info:
        read_items(path)
    (p,) = info.value.problems
    assert p.file == str(path) and p.line == 1 and message in p.message


def test_duplicates_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"item_id": "t1", "kind": "raw", "sources": []}\n\n'
                    '{"item_id": "t1", "kind": "fact", "sources": []}\n')
    with pytest.raises(TiapError) as info:
        read_items(path)
    (p,) = info.value.problems
    assert (p.code, p.line, p.record) == ("duplicate", 3, "t1")
    assert "first on line 1" in p.message
    path.write_text("\n")
    with pytest.raises(TiapError, match="empty items file"):
        read_items(path)
