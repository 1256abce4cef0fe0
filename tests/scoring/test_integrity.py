"""integrity.csv: the checks that flag a value looking better than it is, by hand."""

from __future__ import annotations

from tiap.datasets.records import Query
from tiap.memory.store import Item, Uncertainty
from tiap.scoring.measures import parse_measures
from tiap.scoring.rescore import integrity_rows
from tiap.targets.lineage import build_lineage


def _raw(n: int, coll: str, session: str) -> Item:
    return Item(f"t{n}", "raw", (f"u{n}",), collection=coll, meta=(("session_id", session),))


def test_integrity_by_hand() -> None:
    """Collection a holds 3 items, b holds 5. k = 3: a's query ranks its whole pool (recall
    there is 1 whatever the order), b's does not. Ranked: t1, m, zz (a: m has partial
    lineage, zz is not in the store) and t4, t5 (b): 3 of the 5 top-3 items have known
    lineage. Evidence: qa in a's session s1 only; qb across s2 and s3; qc names u9, no raw
    item: not determined."""
    items = [_raw(1, "a", "s1"), _raw(2, "a", "s1"),
             Item("m", "fact", (), collection="a",
                  uncertain=Uncertainty(possible=("u1", "u2"), requires=(("u1", "u2"),))),
             _raw(4, "b", "s2"), _raw(5, "b", "s3"), _raw(6, "b", "s3"), _raw(7, "b", "s3"),
             Item("f", "fact", ("u4",), collection="b")]
    qs = [Query("qa", "a", "?", "x", "c", ("u1", "u2")),
          Query("qb", "b", "?", "x", "c", ("u4", "u5")),
          Query("qc", "b", "?", "x", "c", ("u9",))]
    rows = integrity_rows("s", build_lineage(items), qs,
                          [["t1", "m", "zz"], ["t4", "t5"], []], parse_measures("nDCG@3"), None)
    got = {r["check"]: (r["cutoff"], r["queries"], r["flagged"], r["share"]) for r in rows}
    assert got["k_covers_pool"] == (3, 3, 1, 1 / 3)
    assert got["lineage_known_at_k"] == (3, 3, 2, 3 / 5)
    assert got["evidence_one_session"] == (None, 3, 1, 1 / 3)
    assert rows[2]["detail"] == "1 queries not determined (a turn's session unknown)"
