"""What partial lineage proves about a query's target: it "may be empty" only when nothing
proves a group exists. An item certainly credited (its lineage meets a set of units inside
the evidence), ranked or not, proves one does, even when which one is open (a Mem0
observation flagged as a family match). Built by hand, the expected values worked out in
the docstring."""

from __future__ import annotations

from tiap.datasets.records import Query
from tiap.memory.store import Item, Uncertainty
from tiap.runs import Ranking, Run
from tiap.scoring.rescore import rescore


def _query(qid: str, evidence: tuple[str, ...]) -> Query:
    return Query(qid, "c", "?", None, "", evidence)


def _run(rankings: dict[str, tuple[str, ...]]) -> Run:
    return Run("sys", tuple(Ranking(q, "sys", r) for q, r in rankings.items()))


def test_a_certainly_credited_item_proves_the_target_is_not_empty() -> None:
    """Turns c:1 and c:2 with raw items; o1 derives from one of them (a flag: "reaches one of
    this query's gold turns"), o2 may derive from either or neither. No derived item
    certainly reaches a given turn, so no Canonical group certainly exists. But:

    - q1 (c:1, c:2) ranks o1, which is certainly in one of its groups: not empty;
    - q2 (c:1, c:2) ranks only o2; o1, unranked, still is in one of its groups: not empty;
    - q3 (c:1) ranks only o2, and o1 may derive from c:2 alone: its target may be empty.
    """
    both = ("c:1", "c:2")
    items = [Item("r1", "raw", ("c:1",), collection="c"),
             Item("r2", "raw", ("c:2",), collection="c"),
             Item("o1", "observation", (), collection="c",
                  uncertain=Uncertainty(possible=both, requires=(both,))),
             Item("o2", "observation", (), collection="c", uncertain=Uncertainty(possible=both))]
    queries = [_query("q1", both), _query("q2", both), _query("q3", ("c:1",))]
    res = rescore([_run({"q1": ("o1",), "q2": ("o2",), "q3": ("o2",)})], queries,
                  {None: items}, targets=["canonical"], measures="RR@5", tokenizer="none")
    assert res.possibly_empty[("sys", "canonical")].tolist() == [False, False, True]
    (row,) = res.summary_rows()
    assert row["n_possibly_empty"] == 1
    # o1 is credited at rank 1 in q1 whichever turn it fills: RR exact 1; q2 and q3 open
    lo, hi = res.interval("sys", "canonical", "RR@5")
    assert lo.tolist() == [1.0, 0.0, 0.0] and hi.tolist() == [1.0, 1.0, 1.0]
    # under set credit too: o1 is a member of the union of the groups
    res = rescore([_run({"q1": ("o1",), "q2": ("o2",), "q3": ("o2",)})], queries,
                  {None: items}, targets=["canonical"], measures="RR@5", credit="set",
                  tokenizer="none")
    assert res.possibly_empty[("sys", "canonical")].tolist() == [False, False, True]
