"""The vectorised kernels against the naive reference on random data, the member look-up
against brute force, and the input checks of the integer-coded API."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scoring_reference import reference

from tiap.errors import TiapError
from tiap.ids import MAX_DEPTH
from tiap.scoring import (
    Credit,
    RankingIndex,
    Targets,
    parse_measures,
    score,
    score_many,
)
from tiap.scoring.kernels import _bucket_of, score_positions

MEASURES = parse_measures(
    "nDCG@1,nDCG@5,nDCG@20,nDCG,R@5,R@20,R,RR@3,RR,Success@2,P@5,P@20,"
    "nDCG@63,nDCG@64,nDCG@65,P@63,P@64,P@65,R@64,RR@64,Success@65"  # word boundaries
)


def _random_case(seed: int, n_queries: int, depth: int, vocab: int, max_groups: int):  # type: ignore[no-untyped-def]
    """Integer rankings (padded, deduplicated rows) and nested integer groups, with
    overlapping groups, duplicate members, empty groups and zero-target queries."""
    rng = np.random.default_rng(seed)
    rankings = np.full((n_queries, depth), -1, np.int64)
    rows: list[list[int]] = []
    groups: list[list[list[int]]] = []
    for q in range(n_queries):
        n = int(rng.integers(0, depth + 1))
        row = [int(x) for x in rng.choice(vocab, size=n, replace=False)]
        rankings[q, :n] = row
        rows.append(row)
        qgroups = []
        for _ in range(int(rng.integers(0, max_groups + 1))):
            size = int(rng.integers(0, 6))
            members = [
                int(row[int(rng.integers(0, len(row)))])
                if row and rng.random() < 0.6
                else int(rng.integers(0, vocab))
                for _ in range(size)
            ]
            if members and rng.random() < 0.2:
                members.append(members[0])  # a duplicate inside the group
            qgroups.append(members)
        groups.append(qgroups)
    return rankings, rows, groups


def _check_against_reference(rankings, rows, groups, credit: Credit) -> None:  # type: ignore[no-untyped-def]
    targets = Targets.from_groups(groups)
    got = score(rankings, targets, MEASURES, credit=credit)
    for m in MEASURES:
        for q in range(len(rows)):
            expected = reference(rows[q], [set(g) for g in groups[q]], m.family, m.cutoff, credit)
            value = got[m][q]
            if math.isnan(expected):
                assert np.isnan(value), (credit, str(m), q)
            else:
                assert value == pytest.approx(expected, abs=1e-12), (
                    credit,
                    str(m),
                    q,
                    rows[q],
                    groups[q],
                )


@pytest.mark.parametrize("credit", ["group", "set"])
@pytest.mark.parametrize(
    ("depth", "vocab", "max_groups"),
    [(0, 10, 3), (1, 5, 3), (12, 30, 5), (60, 200, 6), (70, 120, 90), (300, 1000, 8)],
    ids=["depth0", "depth1", "small", "depth60", "many-groups", "depth300"],
)
def test_kernels_match_reference(depth: int, vocab: int, max_groups: int, credit: Credit) -> None:
    n_queries = 40 if depth < 100 else 12
    rankings, rows, groups = _random_case(
        depth * 31 + max_groups, n_queries, depth, vocab, max_groups
    )
    _check_against_reference(rankings, rows, groups, credit)


@pytest.mark.parametrize("credit", ["group", "set"])
def test_query_blocks_match_reference(credit: Credit, monkeypatch) -> None:
    """Large targets are scored a block of queries at a time (blocks of 16 members here)."""
    from tiap.scoring import kernels

    monkeypatch.setattr(kernels, "_SCORE_BLOCK", 16)
    rankings, rows, groups = _random_case(11, 40, 12, 30, 5)
    _check_against_reference(rankings, rows, groups, credit)


def _brute_positions(rankings: np.ndarray, targets: Targets) -> np.ndarray:
    mq = targets.member_query
    rows = rankings[mq]
    hit = rows == targets.items[:, None]
    return np.where(hit.any(axis=1), hit.argmax(axis=1), -1)


@pytest.mark.parametrize("depth", [1, 7, 60, 64, 65, 255, 256, 300])
def test_positions_match_brute_force(depth: int) -> None:
    rng = np.random.default_rng(depth)
    n_queries, vocab = 50, 5 * depth + 10
    rankings = np.full((n_queries, depth), -1, np.int64)
    for q in range(n_queries):
        n = int(rng.integers(0, depth + 1))
        rankings[q, :n] = rng.choice(vocab, size=n, replace=False)
    sizes = rng.integers(0, 8, n_queries)
    items = rng.integers(0, vocab, int(sizes.sum()))
    targets = Targets(np.arange(n_queries + 1), np.concatenate([[0], np.cumsum(sizes)]), items)
    index = RankingIndex(rankings)
    np.testing.assert_array_equal(index.positions(targets), _brute_positions(rankings, targets))


def test_index_built_in_row_blocks() -> None:
    """More rows than one build block (4,096 rows at depth 64): every block indexed, errors
    name the row in the whole matrix; a read-only int32 matrix is used without a copy."""
    rng = np.random.default_rng(7)
    n_queries, depth = 9_000, 64
    rankings = np.argsort(rng.random((n_queries, 200)), axis=1)[:, :depth].astype(np.int32)
    rankings[::7, 50:] = -1
    sizes = rng.integers(0, 6, n_queries)
    items = rng.integers(0, 200, int(sizes.sum()))
    targets = Targets(np.arange(n_queries + 1), np.concatenate([[0], np.cumsum(sizes)]), items)
    rankings.setflags(write=False)
    index = RankingIndex(rankings)
    assert index.rankings is rankings
    np.testing.assert_array_equal(index.positions(targets), _brute_positions(rankings, targets))
    assert index.lengths.tolist() == (rankings >= 0).sum(axis=1).tolist()
    bad = rankings.copy()
    bad[8_500, 3] = bad[8_500, 2]
    with pytest.raises(TiapError, match="row 8500 does"):
        RankingIndex(bad)
    assert RankingIndex(bad[:8_000]).rankings is not bad  # a writeable matrix is copied


def test_positions_when_every_item_of_a_row_hashes_to_one_bucket() -> None:
    # worst case for the per-row hash table: 60 codes sharing one bucket, look-ups of present
    # items (at every depth of the chain) and of absent items that hash to the same bucket
    codes = np.arange(2_000_000, dtype=np.int32)
    buckets = _bucket_of(codes, 7)  # depth 60 -> 128 buckets
    same = codes[buckets == buckets[0]][:90]
    assert same.size == 90
    rankings = np.stack([same[:60], same[30:90]]).astype(np.int64)
    items = np.concatenate([same, same])
    targets = Targets(np.array([0, 1, 2]), np.array([0, 90, 180]), items)
    index = RankingIndex(rankings)
    np.testing.assert_array_equal(index.positions(targets), _brute_positions(rankings, targets))
    # scoring reads whole buckets at once (another path than positions): same values
    singles = Targets(np.array([0, 90, 180]), np.arange(181), items)
    brute = _brute_positions(rankings, singles)
    got = index.score(singles, MEASURES, "set")
    expected = score_positions(brute, singles, MEASURES, credit="set", depth=60)
    for m in MEASURES:
        np.testing.assert_array_equal(got[m], expected[m])


def test_single_member_fast_path_needs_every_group_to_be_a_singleton() -> None:
    # as many groups as members, but one group has two members and one is empty:
    # ranking 5, 7; g1 = {7, 5}, g2 = {} -> G = 1, matched at rank 1; R@1 = 1
    targets = Targets.from_groups([[[7, 5], []]])
    assert targets.n_groups == targets.n_members and not targets.singleton_groups
    got = {str(m): v for m, v in score(np.array([[5, 7]]), targets, "R@1,nDCG@2,P@2").items()}
    assert got["R@1"][0] == 1.0 and got["nDCG@2"][0] == 1.0 and got["P@2"][0] == 0.5
    singles = Targets.from_groups([[[7], [5]]])
    assert singles.singleton_groups
    got = {str(m): v for m, v in score(np.array([[5, 7]]), singles, "R@1,nDCG@2").items()}
    assert got["R@1"][0] == 0.5 and got["nDCG@2"][0] == pytest.approx(1.0)


def test_score_many_and_positions_api_agree() -> None:
    rankings, _, groups = _random_case(5, 30, 20, 60, 4)
    t1 = Targets.from_groups(groups)
    t2 = Targets.from_groups([g[:1] for g in groups])
    index = RankingIndex(rankings)
    both = score_many(index, {"all": t1, "first": t2}, MEASURES, credit="group")
    assert list(both) == ["all", "first"]
    direct = score_positions(index.positions(t2), t2, MEASURES, credit="group", depth=20)
    for m in MEASURES:
        np.testing.assert_array_equal(both["first"][m], direct[m])
        np.testing.assert_array_equal(both["all"][m], score(rankings, t1, MEASURES)[m])


def test_inputs_are_not_modified() -> None:
    rankings, _, groups = _random_case(9, 10, 15, 40, 3)
    before = rankings.copy()
    targets = Targets.from_groups(groups)
    index = RankingIndex(rankings)
    score(index, targets, MEASURES, credit="set")
    np.testing.assert_array_equal(rankings, before)
    assert rankings.flags.writeable  # the caller's array keeps its flags
    assert not index.rankings.flags.writeable and not targets.items.flags.writeable


def test_graded_targets_score_set_credit_only() -> None:
    targets = Targets.from_groups([[[1, 2]], [[3]]], relevance=[[[2.0, 1.0]], [[3.0]]])
    rankings = np.array([[2, 1], [3, -1]])
    # query 0: gains 1 (item 2), 2 (item 1) -> DCG 1 + 2/log2(3); ideal 2 + 1/log2(3)
    got = score(rankings, targets, "nDCG@2", credit="set")
    value = next(iter(got.values()))
    assert value[0] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert value[1] == pytest.approx(1.0)
    with pytest.raises(TiapError, match="only defined for set credit"):
        score(rankings, targets, "nDCG@2", credit="group")


@pytest.mark.parametrize(
    ("rankings", "message"),
    [
        (np.array([[1, -1, 2]]), "padded with -1 at the end"),
        (np.array([[1, 2, 1]]), "must not repeat an item; row 0"),
        (np.array([[1, -2]]), "ranking codes"),
        (np.array([1, 2, 3]), "2-dimensional"),
        (np.array([[1.0, 2.0]]), "integers"),
        (np.full((1, MAX_DEPTH + 1), -1), "exceeds"),
    ],
)
def test_ranking_index_rejects_bad_matrices(rankings: np.ndarray, message: str) -> None:
    with pytest.raises(TiapError, match=message):
        RankingIndex(rankings)


def test_targets_reject_bad_arrays() -> None:
    with pytest.raises(TiapError, match="start with 0"):
        Targets(np.array([1, 1]), np.array([0, 1]), np.array([0]))
    with pytest.raises(TiapError, match="non-decreasing"):
        Targets(np.array([0, 2, 1]), np.array([0, 1, 2]), np.array([0, 1]))
    with pytest.raises(TiapError, match="member_ptr must end with 2"):
        Targets(np.array([0, 1]), np.array([0, 1]), np.array([0, 1]))
    with pytest.raises(TiapError, match="item codes"):
        Targets(np.array([0, 1]), np.array([0, 1]), np.array([-3]))
    with pytest.raises(TiapError, match="positive"):
        Targets(np.array([0, 1]), np.array([0, 1]), np.array([4]), relevance=np.array([0.0]))


def test_mismatches_are_reported() -> None:
    targets = Targets.from_groups([[[1]], [[2]]])
    with pytest.raises(TiapError, match="2 queries but the ranking matrix has 3 rows"):
        score(np.zeros((3, 2), np.int64) - 1, targets, "R@1")
    with pytest.raises(TiapError, match="unknown credit mode 'trec'"):
        score(np.array([[1], [2]]), targets, "R@1", credit="trec")  # type: ignore[arg-type]
    with pytest.raises(TiapError, match="one value per target member"):
        score_positions(np.array([0]), targets, "R@1", depth=1)
    with pytest.raises(TiapError, match="positions must be"):
        score_positions(np.array([0, 5]), targets, "R@1", depth=2)


def test_empty_inputs() -> None:
    # no query at all, and queries with neither rankings nor targets
    assert score(np.zeros((0, 5), np.int64), Targets.empty(0), "R@1")[
        parse_measures("R@1")[0]
    ].shape == (0,)
    out = score(np.zeros((3, 0), np.int64), Targets.empty(3), "nDCG@10,RR")
    for values in out.values():
        assert np.isnan(values).all() and values.shape == (3,)
