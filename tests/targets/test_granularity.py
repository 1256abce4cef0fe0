"""Targets rolled up to sessions and windows, and cutoffs that count blocks, by hand.

One collection ``c``: session s1 = turns u1, u2, u3 and session s2 = u4, u5 (raw items t1..t5,
in that order); fact f1 from u2, fact f2 from u3 and u4 (it lists both sessions).
"""

from __future__ import annotations

import math

import pytest

from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, Uncertainty
from tiap.runs import Ranking, Run
from tiap.scoring.rescore import rescore
from tiap.targets import build_groups


def _raw(n: int, session: str) -> Item:
    return Item(f"t{n}", "raw", (f"u{n}",), collection="c", meta=(("session_id", session),))


STORE = [_raw(1, "s1"), _raw(2, "s1"), _raw(3, "s1"), _raw(4, "s2"), _raw(5, "s2"),
         Item("f1", "fact", ("u2",), collection="c"), Item("f2", "fact", ("u3", "u4"),
                                                            collection="c")]


def _q(qid: str, *evidence: str) -> Query:
    return Query(qid, "c", "?", "a", "x", tuple(evidence))


def test_groups_per_block() -> None:
    ts = build_groups(STORE, [_q("q", "u1", "u2")],
                      ["raw", "raw@session", "source@session", "canonical@session",
                       "source@window2"])
    got = {t: (g.units, g.groups) for t, tg in ts.by_target.items() for g in [tg.queries["q"]]}
    assert got["raw"] == (("u1", "u2"), (("t1",), ("t2",)))
    # both evidence turns are in s1: one group, every turn of s1 and what derives from them
    assert got["raw@session"] == (("c:s1",), (("t1", "t2", "t3"),))
    assert got["source@session"] == (("c:s1",), (("f1", "f2", "t1", "t2", "t3"),))
    assert got["canonical@session"] == (("c:s1",), (("f1", "f2"),))
    # windows of 2 turns: s1 -> (u1, u2), (u3); u1 and u2 are both in the first
    assert got["source@window2"] == (("c:s1:w1",), (("f1", "t1", "t2"),))


def _rescore(rankings: dict[str, list[str]], measures: str, targets: list[str],
             queries: list[Query] | None = None):  # type: ignore[no-untyped-def]
    run = Run("sys", tuple(Ranking(q, "sys", tuple(r)) for q, r in rankings.items()))
    return rescore([run], queries or [_q(q, "u1") for q in rankings], {None: STORE},
                   targets=targets, measures=measures)


def test_cutoffs_count_blocks() -> None:
    """Ranking t4, t5, f2, t1. Blocks listed: s2, s2, {s1, s2}, s1. Evidence u1 (s1).
    @1: one block at rank 1 -> read 1 rank: t4 (s2), nothing credited.
    @2: the second block appears at rank 3 -> read 3 ranks: f2 reaches s1 (Source credits
    it, Raw does not). At turn level @2 reads 2 ranks and credits nothing."""
    res = _rescore({"q": ["t4", "t5", "f2", "t1"]}, "Success@1,Success@2,nDCG@2",
                   ["raw", "raw@session", "source@session"])

    def v(t: str, m: str) -> float:
        return float(res.value("sys", t, m)[0])

    assert v("raw@session", "Success@1") == 0.0 and v("source@session", "Success@1") == 0.0
    assert v("raw@session", "Success@2") == 0.0 and v("source@session", "Success@2") == 1.0
    assert v("raw", "Success@2") == 0.0
    # nDCG@2 read at rank 3: gain at rank 3 over the ideal of min(G = 1, 3) = 1 one
    assert v("source@session", "nDCG@2") == pytest.approx(1 / math.log2(4))


def test_a_short_ranking_is_bounded_unless_it_ranks_everything() -> None:
    """Two blocks wanted, one listed. Ranking only t4: 6 of the 7 items are unranked, so the
    ranks the rule reads next are unknown: not determined, [0, 1]. A ranking of all 7
    items lists both sessions; one of the 2 sessions only (t4, t5, and nothing else of c) is
    read whole when nothing else exists."""
    res = _rescore({"q": ["t4"]}, "Success@2", ["raw@session"])
    assert math.isnan(res.value("sys", "raw@session", "Success@2")[0])
    lo, hi = res.interval("sys", "raw@session", "Success@2")
    assert (lo[0], hi[0]) == (0.0, 1.0)
    assert "lists fewer than 2 sessions" in res.undetermined[("sys", "raw@session")]["q"]
    only_s2 = [it for it in STORE if it.item_id in ("t4", "t5")]
    run = Run("sys", (Ranking("q", "sys", ("t5", "t4")),))
    whole = rescore([run], [_q("q", "u4")], {None: only_s2}, targets=["raw@session"],
                    measures="Success@2,Rall@2")
    assert whole.value("sys", "raw@session", "Success@2")[0] == 1.0
    assert not whole.undetermined.get(("sys", "raw@session"))


def test_what_cannot_be_rolled_up_is_an_error() -> None:
    no_session = [*STORE, Item("t9", "raw", ("u9",), collection="c")]
    with pytest.raises(TiapError, match="no session_id") as err:
        build_groups(no_session, [_q("q", "u1")], ["raw@session"])
    assert err.value.problems[0].record == "t9"
    partial = [*STORE, Item("m", "fact", (), collection="c", uncertain=Uncertainty(
        possible=("u1", "u4"), requires=(("u1", "u4"),)))]
    with pytest.raises(TiapError, match="partial lineage is not rolled up"):
        build_groups(partial, [_q("q", "u1")], ["source@session"])
    with pytest.raises(TiapError, match="unknown granularity 'day'"):
        build_groups(STORE, [_q("q", "u1")], ["raw@day"])
