"""Encoding Python rankings and groups of string ids into the kernels' arrays."""

from __future__ import annotations

import numpy as np
import pytest

from tiap.errors import TiapError
from tiap.ids import Vocabulary
from tiap.scoring import encode, score
from tiap.scoring.encode import encode_rankings, encode_targets


def test_one_vocabulary_for_rankings_and_all_targets() -> None:
    enc = encode([["a", "b"], ["c"]], [[{"b"}], [{"c", "z"}]], [[{"a"}], []])
    assert enc.rankings.tolist() == [[0, 1], [2, -1]]
    assert enc.rankings.dtype == np.int32
    assert len(enc.targets) == 2
    assert enc.vocabulary.ids == ("a", "b", "c", "z")
    assert enc.vocabulary.decode(enc.rankings[1]) == ["c", None]
    t0, t1 = enc.targets
    assert sorted(t0.items.tolist()) == [1, 2, 3]
    assert t0.group_counts.tolist() == [1, 1] and t1.group_counts.tolist() == [1, 0]


def test_depth_pads_and_truncates() -> None:
    vocab = Vocabulary()
    m = encode_rankings([["a", "b", "c"], ["d"]], vocab, depth=2)
    assert m.tolist() == [[0, 1], [3, -1]]
    m = encode_rankings([["a"]], vocab, depth=3)
    assert m.tolist() == [[0, -1, -1]]
    # None is an empty ranking
    assert encode_rankings([None, ["a"]], vocab).tolist() == [[-1], [0]]


def test_duplicate_ids_in_a_ranking() -> None:
    with pytest.raises(TiapError, match="query q2: the ranking repeats an id"):
        encode([["a"], ["a", "b", "a"]], [[], []], query_ids=["q1", "q2"])
    enc = encode([["a", "b", "a", "c"]], [[{"c"}]], duplicates="first")
    # first occurrence kept: a, b, c -> c at rank 3
    assert enc.vocabulary.decode(enc.rankings[0]) == ["a", "b", "c"]
    rr = next(iter(score(enc.rankings, enc.targets[0], "RR").values()))
    assert rr[0] == pytest.approx(1 / 3)


def test_duplicates_inside_a_group_are_dropped_and_empty_groups_kept() -> None:
    t = encode_targets([[["a", "a", "b"], [], {"c"}]], Vocabulary())
    assert t.group_sizes.tolist() == [2, 0, 1]
    assert t.group_counts.tolist() == [2]  # the empty group does not count in G
    assert t.set_sizes.tolist() == [3]


def test_graded_groups() -> None:
    enc = encode([["a", "b"]], [[{"a": 1, "b": 3}, {"b": 2}]])
    t = enc.targets[0]
    assert t.relevance is not None and t.relevance.tolist() == [1.0, 3.0, 2.0]
    with pytest.raises(TiapError, match="query q0: relevance values must be finite and positive"):
        encode([["a"]], [[{"a": 0}]], query_ids=["q0"])


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([["ab"]], "not the string 'ab'"),
        (["ab"], "list of groups"),
        ([{"a": 1}], "list of groups"),
        ([[[["nested"]]]], "unusable group"),
    ],
)
def test_bad_group_shapes(groups: list[object], message: str) -> None:
    with pytest.raises(TiapError, match=message):
        encode([["a"]], groups)  # type: ignore[arg-type]


def test_bad_rankings_and_counts() -> None:
    with pytest.raises(TiapError, match="not a string"):
        encode(["abc"], [[]])
    with pytest.raises(TiapError, match="target #0 lists 1 queries but there are 2 rankings"):
        encode([["a"], ["b"]], [[{"a"}]])
    with pytest.raises(TiapError, match="duplicates must be"):
        encode([["a"]], [[]], duplicates="last")  # type: ignore[arg-type]
    with pytest.raises(TiapError, match="depth"):
        encode([["a"]], [[]], depth=-1)


def test_non_string_ids_are_fine() -> None:
    enc = encode([[10, 20, 30]], [[{30}, {99}]])
    r = next(iter(score(enc.rankings, enc.targets[0], "R@3").values()))
    assert r[0] == pytest.approx(0.5)
