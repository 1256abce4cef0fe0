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


def test_integrity_on_a_flat_store_by_hand() -> None:
    """A store without parents or partial lineage (the one-pass lineage). Two raw turns
    claim unit u1: z1 (session s1) comes first in the store, a1 (session s2) last, so u1's
    session is a:s2 (the last in store order, though a1 sorts first by id); u2's turn t2 is
    in s2 too, so qa's evidence lies in one session. Ranked at k = 3: m (known), p (a
    placeholder: not known), zz (not in the store): 1 of 3 known. Collection a holds 5
    items, more than k: no query ranks its whole pool."""
    from tiap.memory.store import Placeholder

    items = [Item("z1", "raw", ("u1",), collection="a", meta=(("session_id", "s1"),)),
             Item("t2", "raw", ("u2",), collection="a", meta=(("session_id", "s2"),)),
             Item("m", "fact", ("u2", "u1"), collection="a"),
             Item("p", "fact", ("u2",), collection="a", placeholder=Placeholder(count=2)),
             Item("a1", "raw", ("u1",), collection="a", meta=(("session_id", "s2"),))]
    lineage = build_lineage(items)
    assert lineage.sources_of("m") == ("u1", "u2")  # sorted
    assert lineage.family("u1") == ("a1", "m", "z1")
    assert lineage.family("u2") == ("m", "p", "t2")
    assert lineage.uncertain  # the placeholder
    qs = [Query("qa", "a", "?", "x", "c", ("u1", "u2"))]
    rows = integrity_rows("s", lineage, qs, [["m", "p", "zz"]], parse_measures("nDCG@3"), None)
    got = {r["check"]: (r["cutoff"], r["queries"], r["flagged"], r["share"]) for r in rows}
    assert got["k_covers_pool"] == (3, 1, 0, 0.0)
    assert got["lineage_known_at_k"] == (3, 1, 2, 1 / 3)
    assert got["evidence_one_session"] == (None, 1, 1, 1.0)
