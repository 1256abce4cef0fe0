"""Reading an items.jsonl row: the fast path for plain rows builds the same item as the full
checks, and hands every row it cannot vouch for to them (so its problems are still found)."""

from __future__ import annotations

import pytest

from tiap.errors import TiapError
from tiap.memory.store import _checked_item, _plain_item, item_from_json

PLAIN = [
    {"item_id": "c1:D1:1", "store": "f5", "kind": "raw", "sources": ["c1:D1:1"],
     "text": "Ana: I adopted a cat.", "collection": "c1", "speaker": "Ana", "date": "May 1"},
    {"item_id": "c1:D1:1#f1", "kind": "fact", "sources": ["c1:D1:1"], "parents": ["c1:D1:1"],
     "serving": False, "text": "Ana adopted a cat.", "collection": "c1"},
    {"item_id": "m1", "kind": "fact", "sources": [], "parents": []},
    {"item_id": "m2", "kind": "fact", "sources": [], "zeta": [1, {"a": 2}], "alpha": None},
]

# rows the fast path must leave to the full checks: some are fine (an int id, an int
# collection, sources null, lineage fields), the others carry a problem
OTHER = [
    {"item_id": 7, "kind": "raw", "sources": ["c1:D1:1"]},
    {"item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"], "collection": 3},
    {"item_id": "t1", "kind": "raw", "sources": None},
    {"item_id": "t1", "kind": "raw", "sources": [1, "c1:D1:2"]},
    {"item_id": "t1", "kind": "fact", "sources": [], "uncertain": {"possible_sources": "any"}},
    {"item_id": "t1", "kind": "fact", "sources": [], "inferred": {"possible_sources": ["u1"],
                                                                  "kind": "session"}},
    {"item_id": "t 1", "kind": "raw", "sources": []},
    {"item_id": "", "kind": "raw", "sources": []},
    {"item_id": "t1", "kind": "", "sources": []},
    {"item_id": "t1", "kind": "raw"},
    {"item_id": "t1", "kind": "raw", "sources": "c1:D1:1"},
    {"item_id": "t1", "kind": "raw", "sources": [], "sorces": ["c1:D1:1"]},
    {"item_id": "t1", "kind": "raw", "sources": [], "text": ["a"]},
    {"item_id": "t1", "kind": "raw", "sources": [], "serving": "yes"},
    {"item_id": "t1", "kind": "raw", "sources": [], "store": "a b"},
    {"item_id": "t1", "kind": "raw", "sources": [], "parents": "t0"},
]


@pytest.mark.parametrize("row", PLAIN)
def test_plain_rows_read_fast_as_the_full_checks_read_them(row):
    fast = _plain_item(row, True)
    assert fast is not None
    full = _checked_item(row, None, None, True)
    assert fast == full
    assert fast.to_json() == full.to_json()
    assert hash(fast.item_id) == hash(full.item_id)


@pytest.mark.parametrize("row", OTHER)
def test_every_other_row_takes_the_full_checks(row):
    assert _plain_item(row, True) is None
    try:
        expected: object = _checked_item(row, "items.jsonl", 4, True)
    except TiapError as exc:
        expected = str(exc)
    try:
        got: object = item_from_json(row, file="items.jsonl", line=4)
    except TiapError as exc:
        got = str(exc)
    assert got == expected


def test_a_row_without_sources_is_plain_only_where_sources_may_be_left_out():
    row = {"item_id": "m1", "kind": "fact", "parents": ["t1"]}
    assert _plain_item(row, True) is None
    with pytest.raises(TiapError, match="item has no 'sources'"):
        item_from_json(row)
    assert _plain_item(row, False) == _checked_item(row, None, None, False)
