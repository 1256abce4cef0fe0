"""Counts and rates over queries whose values partial lineage only bounds
(:mod:`tiap.scoring.counts`, ``pairwise.csv``): exact where the lineage decides them, else an
interval that holds under every consistent lineage, checked by hand and by brute force over
every lineage of small stores."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from tiap.datasets.records import Query
from tiap.memory.store import Item, Uncertainty
from tiap.runs import Ranking, Run
from tiap.scoring import counts
from tiap.scoring.counts import CHANGED_EPS, EITHER, LARGE_DELTA
from tiap.scoring.rescore import rescore
from tiap.scoring.scores import PAIRWISE_BOUND_COLUMNS, PAIRWISE_COLUMNS, Scores

TARGETS = ("raw", "source", "canonical")


def test_count_cells_by_hand() -> None:
    ind = np.array([1, 0, EITHER, 1, EITHER], np.int8)
    c = counts.count(ind)
    # two certainly 1, two undecided: the count is 2 under some lineage, 4 under another
    assert (c.n, c.known, c.open, c.lower, c.upper, c.exact, c.value) == (5, 2, 2, 2, 4,
                                                                         False, None)
    assert counts.cells("hit_flips", c) == {"hit_flips": None, "hit_flips_lower": 2,
                                            "hit_flips_upper": 4}
    assert counts.rate_cells("r", c) == {"r": None, "r_lower": 0.4, "r_upper": 0.8}
    exact = counts.count(np.array([1, 0, 1], np.int8))
    assert counts.cells("x", exact) == {"x": 2, "x_lower": 2, "x_upper": 2}
    assert counts.rate_cells("r", exact)["r"] == 2 / 3
    assert counts.rate_cells("r", counts.count(np.zeros(0, np.int8)))["r_lower"] is None
    assert counts.mean_cells("m", np.array([0.2, 0.4]), np.array([0.2, 0.8])) == {
        "m": None, "m_lower": pytest.approx(0.3), "m_upper": pytest.approx(0.5)}


def test_indicators_from_bounds_by_hand() -> None:
    # q0: [0.2, 0.2] vs [0.5, 0.5]: changed; q1: [0.2, 0.4] vs [0.3, 0.6]: may or may not;
    # q2: [0.5, 0.5] vs [0.5, 0.5]: unchanged; q3: [0.0, 0.1] vs [0.5, 0.9]: certainly changed
    lo1, hi1 = np.array([0.2, 0.2, 0.5, 0.0]), np.array([0.2, 0.4, 0.5, 0.1])
    lo2, hi2 = np.array([0.5, 0.3, 0.5, 0.5]), np.array([0.5, 0.6, 0.5, 0.9])
    assert counts.changed(lo1, hi1, lo2, hi2, 1e-12).tolist() == [1, EITHER, 0, 1]
    # |Δ| >= 0.35: q0 0.3 no; q1 Δ in [-0.1, 0.4]: either; q2 no; q3 Δ in [0.4, 0.9]: yes
    assert counts.at_least(lo1, hi1, lo2, hi2, 0.35).tolist() == [0, EITHER, 0, 1]
    least, most = counts.abs_delta_bounds(lo1, hi1, lo2, hi2)
    assert least.tolist() == pytest.approx([0.3, 0.0, 0.0, 0.4])
    assert most.tolist() == pytest.approx([0.3, 0.4, 0.0, 0.9])
    hit1 = counts.truth(np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0]), lambda v: v > 0.5)
    hit2 = counts.truth(np.array([1.0, 1.0, 0.0]), np.array([1.0, 1.0, 0.0]), lambda v: v > 0.5)
    assert hit1.tolist() == [0, 1, EITHER] and hit2.tolist() == [1, 1, 0]
    assert counts.differ(hit1, hit2).tolist() == [1, 0, EITHER]


@pytest.mark.parametrize("seed", range(8))
def test_joint_flip_against_every_assignment(seed: int) -> None:
    """joint_flip against an enumeration of every assignment of the items: an item both
    targets may credit is one unknown (credited under both or neither), every other one
    credited under its target or not."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        ranks = list(range(1, int(rng.integers(1, 6)) + 1))
        first, second = [], []
        for r in ranks:
            where = rng.integers(0, 3)  # 0: first only, 1: second only, 2: both
            status = int(rng.choice([1, 2]))  # MAYBE or YES
            if where in (0, 2):
                first.append((r, status))
            if where in (1, 2):
                second.append((r, status))
        a, b = dict(first), dict(second)
        items = sorted(set(a) | set(b))
        seen = set()
        for bits in itertools.product((False, True), repeat=len(items)):
            got = dict(zip(items, bits, strict=True))
            if any(got[r] is False and (a.get(r) == 2 or b.get(r) == 2) for r in items):
                continue  # a certainly credited item is credited
            seen.add(any(got[r] for r in a) != any(got[r] for r in b))
        want = seen.pop() if len(seen) == 1 else None
        out = counts.joint_flip(first, second)
        assert out == (EITHER if want is None else int(want)), (first, second)


# ------------------------------------------------------------------------------------------
# rescoring: pairwise.csv


def _query(qid: str, evidence: tuple[str, ...]) -> Query:
    return Query(qid, "c", "?", None, "", evidence)


def _memoryos_like() -> tuple[list[Item], list[Query], Run]:
    """Two turns c:1 and c:2 with raw items r1 and r2, and a summary s1 whose lineage is
    unknown (it may reach any turn), as MemoryOS session summaries. qA asks about c:1, qB
    about c:2; both rank s1, r1."""
    items = [Item("r1", "raw", ("c:1",), collection="c"),
             Item("r2", "raw", ("c:2",), collection="c"),
             Item("s1", "summary", (), collection="c", uncertain=Uncertainty())]
    queries = [_query("qA", ("c:1",)), _query("qB", ("c:2",))]
    run = Run("sys", (Ranking("qA", "sys", ("s1", "r1")), Ranking("qB", "sys", ("s1", "r1"))))
    return items, queries, run


def test_pairwise_counts_by_hand() -> None:
    """By hand (group credit; hit at k = 2, top-1 at k = 1). s1 may or may not be credited,
    r1 is credited for qA only (under Raw and Source).

    Raw:       qA hit 1, top-1 0, nDCG@2 = 1/log2 3; qB hit 0, top-1 0, nDCG@2 0 (exact).
    Source:    qA hit 1 (r1), top-1 s1?, nDCG@2 [1/log2 3, 1]; qB hit s1?, top-1 s1?, [0, 1].
    Canonical: qA and qB: hit s1?, top-1 s1?, nDCG@2 [0, 1] (the group may be empty).

    raw vs source: nDCG@2 changed: qA and qB may or may not -> [0, 2]; hit flips: qA no
    (1, 1), qB 0 vs s1? -> [0, 1]; top-1 flips: 0 vs s1? twice -> [0, 2].
    source vs canonical: each target's bounds leave every hit and top-1 open ([0, 2]), but s1
    is credited under both or neither (its lineage is one): top-1 = s1 under both -> no flip
    in either query, exactly 0; hit flips: qB hit = s1 under both -> 0; qA: Source hit 1,
    Canonical s1? -> may flip: [0, 1]."""
    items, queries, run = _memoryos_like()
    res = rescore([run], queries, {None: items}, measures="nDCG@2,Success@2,Success@1")
    assert res.pairwise_columns() == PAIRWISE_COLUMNS + PAIRWISE_BOUND_COLUMNS
    rows = {(r["measure"], r["target_1"], r["target_2"]): r for r in res.pairwise_rows()}
    r = rows[("nDCG@2", "raw", "source")]
    assert (r["n_shared"], r["n_undetermined"]) == (2, 2)
    assert (r["changed"], r["changed_lower"], r["changed_upper"], r["changed_max"]) == (
        None, 0, 2, 2)
    assert (r["changed_fraction"], r["changed_fraction_lower"],
            r["changed_fraction_upper"]) == (None, 0.0, 1.0)
    assert (r["hit_k"], r["hit_flips"], r["hit_flips_lower"], r["hit_flips_upper"]) == (
        2, None, 0, 1)
    assert (r["top1_flips"], r["top1_flips_lower"], r["top1_flips_upper"]) == (None, 0, 2)
    # mean change: qA [0, 1 - 1/log2 3], qB [0, 1]
    assert r["mean_delta"] is None
    assert (r["mean_delta_lower"], r["mean_delta_upper"]) == pytest.approx(
        (0.0, (1 - 1 / math.log2(3) + 1) / 2))
    r = rows[("nDCG@2", "source", "canonical")]
    assert (r["hit_flips"], r["hit_flips_lower"], r["hit_flips_upper"]) == (None, 0, 1)
    assert (r["top1_flips"], r["top1_flips_lower"], r["top1_flips_upper"]) == (0, 0, 0)
    # Success@1 between Source and Canonical changes exactly when the top-1 hit flips: never
    r = rows[("Success@1", "source", "canonical")]
    assert (r["changed"], r["changed_fraction"], r["n_abs_delta_ge_0.1"]) == (0, 0.0, 0)
    r = rows[("Success@2", "source", "canonical")]
    assert (r["changed"], r["changed_lower"], r["changed_upper"]) == (None, 0, 1)
    # each target on its own would leave both open ([0, 2]): what the shared lineage adds
    assert res.flip_state("sys", "source", "canonical", 1).tolist() == [0, 0]
    assert [tuple(x) for x in res.flip_pair_rows()] == [
        ("sys", "source", "canonical", 1, "qA", 0), ("sys", "source", "canonical", 1, "qB", 0),
        ("sys", "source", "canonical", 2, "qB", 0)]


def test_complete_lineage_prints_exact_counts_with_equal_bounds() -> None:
    """The same store with s1's lineage known (c:1): every count is a plain number, as
    before partial lineage existed, and its bound columns equal it (one schema). By hand: Source
    and Canonical credit s1 at rank 1 for qA; qB is a zero-target case under Canonical.
    raw vs source, Success@1: qA flips (0 -> 1), qB does not (0, 0): 1 of 2."""
    items, queries, run = _memoryos_like()
    items[2] = replace(items[2], sources=("c:1",), uncertain=None)
    res = rescore([run], queries, {None: items}, measures="nDCG@2,Success@2,Success@1")
    assert not res.bounded
    assert res.pairwise_columns() == PAIRWISE_COLUMNS + PAIRWISE_BOUND_COLUMNS
    rows = {(r["measure"], r["target_1"], r["target_2"]): r for r in res.pairwise_rows()}
    r = rows[("Success@1", "raw", "source")]
    assert (r["n_shared"], r["changed"], r["changed_fraction"], r["top1_flips"]) == (2, 1, 0.5, 1)
    assert (r["changed_lower"], r["changed_upper"]) == (1, 1)
    r = rows[("nDCG@2", "raw", "canonical")]
    assert (r["n_shared"], r["changed"], r["hit_flips"], r["top1_flips"]) == (1, 1, 0, 1)


# ------------------------------------------------------------------------------------------
# brute force: every lineage a random small store allows


def _random_store(rng: np.random.Generator) -> tuple[list[Item], list[Query], Run]:
    units = ["c:1", "c:2", "c:3"]
    items = [Item(f"r{i}", "raw", (u,), collection="c") for i, u in enumerate(units, 1)]
    n_open = 0
    for i in range(int(rng.integers(2, 5))):
        kind = str(rng.choice(["fact", "summary"]))
        if rng.random() < 0.35 or n_open >= 2:
            k = int(rng.integers(0, 3))
            sources = tuple(sorted(rng.choice(units, size=k, replace=False).tolist()))
            items.append(Item(f"d{i}", kind, sources, collection="c"))
            continue
        n_open += 1
        if rng.random() < 0.4:
            unc = Uncertainty(max_sources=1 if rng.random() < 0.5 else None)  # any unit
            sources: tuple[str, ...] = ()
        else:
            pool = rng.choice(units, size=int(rng.integers(1, 4)), replace=False).tolist()
            sure = [u for u in pool if rng.random() < 0.3]
            maybe = tuple(sorted(u for u in pool if u not in sure)) or tuple(
                u for u in units if u not in sure)[:1]
            single = not sure and rng.random() < 0.5
            req = (maybe,) if rng.random() < 0.4 else ()
            unc = Uncertainty(possible=maybe, requires=req, max_sources=1 if single else None)
            sources = tuple(sorted(sure))
        items.append(Item(f"d{i}", kind, sources, collection="c", uncertain=unc))
    ids = [it.item_id for it in items]
    queries, rankings = [], []
    for q in range(3):
        ev = tuple(sorted(rng.choice(units, size=int(rng.integers(1, 3)), replace=False)))
        queries.append(_query(f"q{q}", ev))
        ranked = rng.choice(ids, size=int(rng.integers(1, 5)), replace=False).tolist()
        rankings.append(Ranking(f"q{q}", "sys", tuple(ranked)))
    return items, queries, Run("sys", tuple(rankings))


def _lineages(items: list[Item]) -> list[list[Item]]:
    """Every complete store the partial one allows."""
    units = ("c:1", "c:2", "c:3")
    options = []
    for it in items:
        unc = it.uncertain
        if unc is None:
            options.append([it])
            continue
        possible = units if unc.possible is None else unc.possible
        free = [u for u in possible if u not in it.sources]
        choices = []
        for r in range(len(free) + 1):
            for extra in itertools.combinations(free, r):
                s = set(it.sources) | set(extra)
                if unc.max_sources is not None and len(s) > unc.max_sources:
                    continue
                if any(not s & set(req) for req in unc.requires):
                    continue
                choices.append(replace(it, sources=tuple(sorted(s)), uncertain=None))
        options.append(choices)
    return [list(c) for c in itertools.product(*options)]


MEASURES = "nDCG@3,RR@3,R@3,Success@2,Success@1"


def _check_pairwise(res: Scores, concrete: list[Scores]) -> int:
    """Every lineage's per-query changes lie within the states the bounds give, and its
    counts within the pairwise intervals. Returns how many checks of counts ran."""
    checked = 0
    rows = {(r["measure"], r["target_1"], r["target_2"]): r for r in res.pairwise_rows()}
    universe = np.ones(len(res.query_ids["sys"]), bool)
    for t in TARGETS:
        universe &= res.in_universe("sys", t)
    for c in concrete:
        defined = {t: c.in_universe("sys", t) for t in TARGETS}
        for m in res.measures:
            k = m.cutoff or 3
            for t1, t2 in itertools.combinations(TARGETS, 2):
                both = defined[t1] & defined[t2]
                lo1, hi1 = res.interval("sys", t1, m)
                lo2, hi2 = res.interval("sys", t2, m)
                a, b = c.value("sys", t1, m), c.value("sys", t2, m)
                states = {
                    "changed": (counts.changed(lo1, hi1, lo2, hi2, CHANGED_EPS),
                                np.abs(b - a) > CHANGED_EPS),
                    "n_abs_delta_ge_0.1": (
                        counts.at_least(lo1, hi1, lo2, hi2, LARGE_DELTA - CHANGED_EPS),
                        np.abs(b - a) >= LARGE_DELTA - CHANGED_EPS),
                    "hit_flips": (res.flip_state("sys", t1, t2, k),
                                  c.flips[("sys", t1, k)] != c.flips[("sys", t2, k)]),
                    "top1_flips": (res.flip_state("sys", t1, t2, 1),
                                   c.flips[("sys", t1, 1)] != c.flips[("sys", t2, 1)]),
                }
                if m.family == "Success":  # changed exactly when the hit at k flips
                    states["changed"] = (res.flip_state("sys", t1, t2, k), states["changed"][1])
                for name, (state, got) in states.items():
                    for i in np.flatnonzero(both).tolist():
                        assert state[i] == EITHER or bool(state[i]) == bool(got[i]), (
                            name, m, t1, t2, i)
                if not (both | ~universe).all() or not universe.any():
                    continue  # the count is over the queries defined under every lineage
                row = rows[(str(m), t1, t2)]
                for name, (_, got) in states.items():
                    n = int(got[universe].sum())
                    assert row[f"{name}_lower"] <= n <= row[f"{name}_upper"], (name, m, t1, t2)
                    assert row[name] is None or row[name] == n
                    checked += 1
    return checked


@pytest.mark.parametrize("seed", range(10))
def test_counts_hold_under_every_lineage(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items, queries, run = _random_store(rng)
    res = rescore([run], queries, {None: items}, measures=MEASURES, tokenizer="none")
    concrete = [rescore([run], queries, {None: store}, measures=MEASURES, tokenizer="none")
                for store in _lineages(items)]
    assert concrete
    _check_pairwise(res, concrete)


def test_brute_force_checks_counts() -> None:
    """The brute force above does compare counts (some lineage defines every query)."""
    total = 0
    for seed in range(10):
        items, queries, run = _random_store(np.random.default_rng(seed))
        res = rescore([run], queries, {None: items}, measures=MEASURES, tokenizer="none")
        total += _check_pairwise(res, [
            rescore([run], queries, {None: s}, measures=MEASURES, tokenizer="none")
            for s in _lineages(items)])
    assert total > 100
