"""Evidence parsing rules, on inline examples."""

from __future__ import annotations

from tiap.datasets.beam import _ranges, flatten_ids
from tiap.datasets.locomo import parse_dia_ids

KNOWN = {"D1:1", "D1:2", "D8:6", "D9:17", "D30:5", "D11:26"}


def test_single_id() -> None:
    assert parse_dia_ids("D1:2", KNOWN) == (["D1:2"], [])


def test_joined_ids_are_split() -> None:
    ok, probs = parse_dia_ids("D8:6; D9:17", KNOWN)
    assert ok == ["D8:6", "D9:17"]
    assert [p[1] for p in probs] == ["split"]
    ok, probs = parse_dia_ids("D1:1 D1:2, D8:6", KNOWN)
    assert ok == ["D1:1", "D1:2", "D8:6"]


def test_malformed_and_unresolvable() -> None:
    assert parse_dia_ids("D", KNOWN)[1][0][1] == "malformed"
    ok, probs = parse_dia_ids("D:11:26", KNOWN)
    assert ok == [] and probs[0][1] == "malformed" and "D11:26" in probs[0][2]
    ok, probs = parse_dia_ids("D30:05", KNOWN)  # zero-padded: reported, not used
    assert ok == [] and probs[0][1] == "malformed" and "D30:5" in probs[0][2]
    ok, probs = parse_dia_ids("D2:1", KNOWN)
    assert ok == [] and probs == [("D2:1", "unresolvable", "no such turn in this conversation")]
    ok, probs = parse_dia_ids("", KNOWN)
    assert ok == [] and probs[0][1] == "malformed"


def test_beam_flatten_shapes() -> None:
    assert flatten_ids([3, 4]) == [3, 4]
    assert flatten_ids([[3], [4, 5]]) == [3, 4, 5]
    assert flatten_ids({"original_info": [86], "updated_info": [114]}) == [86, 114]
    assert flatten_ids({"a": [[1], [2]], "b": 3}) == [1, 2, 3]
    assert flatten_ids(None) == []


def test_ranges() -> None:
    assert _ranges(["1", "2", "5", "11", "12", "13", "35"]) == "1-2, 5, 11-13, 35"
