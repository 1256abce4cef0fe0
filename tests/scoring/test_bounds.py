"""Bounds under partial lineage, checked against every consistent lineage by brute force.

Each random problem (a handful of evidence units, some whose group certainly exists and some
whose group may exist, and ranked items with certain and possible memberships, single-source,
exclusive and "requires" constraints) is expanded into every assignment of items to groups
that the constraints allow, and every choice of which possible groups exist. Each such
lineage is scored with a plain group-credit scorer written here from the definition; the
interval TIAP reports must contain every one of those values. Where nothing is uncertain,
lower and upper must equal the value.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tiap.scoring.bounds import MAYBE, YES, Position, QueryProblem, group_bounds
from tiap.scoring.measures import parse_measures

MEASURES = parse_measures("nDCG@3,nDCG@6,nDCG,R@3,R@6,RR@6,Success@2,Success@6,P@4")


def _score(ranking: list[set[int]], groups: set[int], depth: int) -> dict[str, float]:
    """Group credit (the paper's scorer) for ranked membership sets and existing groups."""
    out: dict[str, float] = {}
    for m in MEASURES:
        k = m.cutoff or depth
        matched: set[int] = set()
        dcg = 0.0
        gains = 0
        rr = 0.0
        for i, a in enumerate(ranking[:k], start=1):
            new = (a & groups) - matched
            if new:
                matched |= new
                dcg += 1 / math.log2(i + 1)
                gains += 1
                rr = rr or 1 / i
        g = len(groups)
        ideal = sum(1 / math.log2(i + 1) for i in range(1, (min(g, k) if m.cutoff else g) + 1))
        out[str(m)] = {"nDCG": dcg / ideal, "R": len(matched) / g, "RR": rr,
                       "Success": float(bool(matched)), "P": gains / k}[m.family]
    return out


def _choices(p: Position, n: int) -> list[set[int]]:
    units = [u for u in range(n) if p.possible >> u & 1]
    certain = {u for u in range(n) if p.certain >> u & 1}
    out = []
    for r in range(len(units) + 1):
        for a in itertools.combinations(units, r):
            s = set(a)
            if not certain <= s or (p.single and len(s) > 1):
                continue
            if p.credited == YES and not s:
                continue
            if any(not {u for u in range(n) if mask >> u & 1} & s for mask in p.requires):
                continue
            out.append(s)
    return out


def _lineages(q: QueryProblem) -> list[dict[str, float]]:
    n = q.n_units
    sure = {u for u in range(n) if q.certain_groups >> u & 1}
    maybe = [u for u in range(n) if u not in sure]
    occupied = {u for u in range(n) if q.occupied >> u & 1}
    values = []
    for combo in itertools.product(*(_choices(p, n) for p in q.positions)):
        held: list[int] = [u for p, a in zip(q.positions, combo, strict=True) if p.exclusive
                           for u in a]
        if len(held) != len(set(held)) or set(held) & occupied:
            continue
        assigned = set().union(*combo) if combo else set()
        for r in range(len(maybe) + 1):
            for extra in itertools.combinations(maybe, r):
                groups = sure | assigned | set(extra)
                if not groups:
                    continue
                ranking = [set() for _ in range(q.depth)]
                for p, a in zip(q.positions, combo, strict=True):
                    ranking[p.rank - 1] = a
                values.append(_score(ranking, groups, q.depth))
    return values


def _random_problem(rng: np.random.Generator) -> QueryProblem:
    n = int(rng.integers(1, 5))
    certain_groups = int(rng.integers(0, 1 << n))
    depth = int(rng.integers(1, 8))
    positions = []
    for rank in sorted(rng.choice(np.arange(1, depth + 1), size=int(rng.integers(0, depth + 1)),
                                  replace=False).tolist()):
        possible = int(rng.integers(1, 1 << n))
        single = bool(rng.random() < 0.4)
        bits = [u for u in range(n) if possible >> u & 1]
        if single:
            certain = (1 << int(rng.choice(bits))) if rng.random() < 0.3 else 0
            if certain:
                possible = certain | (possible if rng.random() < 0.2 else 0)
                possible = certain if (possible & ~certain) and certain else possible
        else:
            certain = int(rng.integers(0, possible + 1)) & possible
        requires: tuple[int, ...] = ()
        if rng.random() < 0.3:
            requires = (possible,)
        credited = YES if certain or requires else MAYBE
        exclusive = single and bool(rng.random() < 0.5)
        positions.append(Position(int(rank), certain, possible, credited, requires,
                                  single=single, exclusive=exclusive))
    return QueryProblem(units=tuple(f"u{i}" for i in range(n)), certain_groups=certain_groups,
                        positions=tuple(positions), depth=depth,
                        occupied=int(rng.integers(0, 1 << n)) if rng.random() < 0.2 else 0)


@pytest.mark.parametrize("seed", range(12))
def test_every_consistent_lineage_lies_within_the_bounds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(60):
        q = _random_problem(rng)
        values = _lineages(q)
        if not values:  # no lineage fits the constraints (or no group can exist)
            continue
        got = group_bounds(q, MEASURES)
        for m in MEASURES:
            lo, hi = got[m]
            vs = [v[str(m)] for v in values]
            assert lo - 1e-12 <= min(vs) and max(vs) <= hi + 1e-12, (q, m, lo, hi, min(vs),
                                                                     max(vs))
        checked += 1
    assert checked > 30


def test_determined_problems_are_exact() -> None:
    """Every membership certain and every group existing: lower = upper = the value."""
    q = QueryProblem(units=("a", "b", "c"), certain_groups=0b111, depth=6, positions=(
        Position(2, 0b001, 0b001, YES), Position(3, 0b011, 0b011, YES),
        Position(5, 0b100, 0b100, YES), Position(6, 0b001, 0b001, YES)))
    (value,) = _lineages(q)
    got = group_bounds(q, MEASURES)
    for m in MEASURES:
        assert got[m][0] == pytest.approx(value[str(m)], abs=1e-12)
        assert got[m][1] == pytest.approx(value[str(m)], abs=1e-12)


def test_exclusive_raw_items_ambiguous_between_gold_turns_stay_exact() -> None:
    """Two raw turns ranked, each one of two gold turns (which is which is unknown), each
    turn with one raw item: under Raw both always open a group, so nothing is uncertain."""
    q = QueryProblem(units=("u1", "u2"), certain_groups=0b11, depth=4, positions=(
        Position(1, 0, 0b11, YES, (0b11,), single=True, exclusive=True),
        Position(3, 0, 0b11, YES, (0b11,), single=True, exclusive=True)))
    got = group_bounds(q, MEASURES)
    # hand-worked: gains at ranks 1 and 3, G = 2: nDCG@3 = (1 + 1/2) / (1 + 1/log2 3)
    assert got[parse_measures("nDCG@3")[0]] == pytest.approx(
        (1.5 / (1 + 1 / math.log2(3)),) * 2, abs=1e-12)
    for m in MEASURES:
        assert got[m][0] == pytest.approx(got[m][1], abs=1e-12), m


def test_flags_make_reciprocal_rank_exact_while_ndcg_is_bounded() -> None:
    """A flagged item (credited for the query: its lineage meets the gold turns) of unknown
    turn at rank 1, and a raw turn of u1 at rank 2: RR is 1 whatever the lineage; nDCG is
    1 (item in u2) or 1 / ideal(2) (item in u1, the raw turn then earns nothing)."""
    q = QueryProblem(units=("u1", "u2"), certain_groups=0b11, depth=2, positions=(
        Position(1, 0, 0b11, YES, (0b11,)), Position(2, 0b01, 0b01, YES)))
    m = parse_measures("RR@2,nDCG@2")
    got = group_bounds(q, m)
    assert got[m[0]] == (1.0, 1.0)
    ideal = 1 + 1 / math.log2(3)
    assert got[m[1]][0] == pytest.approx(1 / ideal, abs=1e-12)
    assert got[m[1]][1] == pytest.approx(1.0, abs=1e-12)
