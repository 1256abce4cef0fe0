"""Groups per (query, target), zero-target reasons and coverage, on the fixture store."""

from __future__ import annotations

import pytest
from fixtures_targets import item, queries, query, store

from tiap.errors import TiapError
from tiap.targets import ZeroTarget, build_groups, build_lineage, coverage


@pytest.fixture()
def sets():  # type: ignore[no-untyped-def]
    return build_groups(store(), queries())


def test_groups_per_unit(sets) -> None:  # type: ignore[no-untyped-def]
    # q1 = [u1, u2]; families u1: f1 f2 f3 s1 t1, u2: f3 o1 s1 t2
    assert sets["raw"]["q1"] == (("t1",), ("t2",))
    assert sets["source"]["q1"] == (("f1", "f2", "f3", "s1", "t1"), ("f3", "o1", "s1", "t2"))
    # o1 is non-serving: not canonical. f3 and s1 are in both groups (two families).
    assert sets["canonical"]["q1"] == (("f1", "f2", "f3", "s1"), ("f3", "s1"))
    assert sets["canonical"].queries["q1"].units == ("u1", "u2")
    assert sets["canonical"].queries["q1"].members == ("f1", "f2", "f3", "s1")
    # q5 = [u1, u1]: a repeated unit gives one group
    assert sets["raw"]["q5"] == (("t1",),)


def test_zero_target_reasons(sets) -> None:  # type: ignore[no-untyped-def]
    can = sets["canonical"].queries
    assert can["q2"].zero_target is ZeroTarget.NO_EVIDENCE
    assert can["q2"].zero_target_reason == "no evidence (abstention)"
    assert can["q3"].zero_target is ZeroTarget.UNKNOWN_EVIDENCE
    assert can["q3"].zero_target_reason == "evidence units not in store: u9"
    # q6 = [u4]: only the raw turn t4, so nothing canonical
    assert can["q6"].zero_target is ZeroTarget.NO_MEMBERS
    assert can["q6"].zero_target_reason == (
        "no members under target 'canonical' (evidence units: u4)"
    )
    assert sets["raw"]["q6"] == (("t4",),)
    assert sets["canonical"]["q6"] == ()
    # q4 = [u3, u9]: u3 gives a group, u9 is reported as unknown
    assert sets["canonical"]["q4"] == (("s1",),)
    assert can["q4"].zero_target is None
    assert dict(sets.unknown_evidence) == {"q3": ("u9",), "q4": ("u9",)}
    assert sets["canonical"].defined_query_ids == ("q1", "q4", "q5")
    assert dict(sets["canonical"].zero_target) == {
        "q2": "no evidence (abstention)",
        "q3": "evidence units not in store: u9",
        "q6": "no members under target 'canonical' (evidence units: u4)",
    }


def test_no_members_mentions_unknown_units_too() -> None:
    sets = build_groups(store(), [query("q", ("u4", "u9"))], ["canonical"])
    assert sets["canonical"].queries["q"].zero_target_reason == (
        "no members under target 'canonical' (evidence units: u4); "
        "evidence units not in store: u9"
    )
    sets = build_groups(store(), [query("q", ())], ["canonical"])
    assert sets["canonical"].queries["q"].zero_target_reason == "no evidence"


def test_custom_targets_on_store() -> None:
    sets = build_groups(
        build_lineage(store()),
        queries(),
        ["facts=kind in {fact, observation}", "conf=confidence == high", "hidden=not serving"],
    )
    assert sets["facts"]["q1"] == (("f1", "f2", "f3"), ("f3", "o1"))
    assert sets["conf"]["q1"] == (("f1",),)  # u2's family has no 'confidence' item
    assert sets["hidden"]["q1"] == (("o1",),)
    assert sets.target_names == ("facts", "conf", "hidden")


def test_target_reading_unknown_field_is_an_error() -> None:
    with pytest.raises(TiapError, match="reads field\\(s\\) 'confidance' that no item has"):
        build_groups(store(), queries(), ["c=confidance == high"])


def test_duplicate_query_ids() -> None:
    with pytest.raises(TiapError, match="duplicate query id"):
        build_groups(store(), [query("q", ("u1",)), query("q", ("u2",))])


def test_missing_target_in_sets(sets) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TiapError, match="was not computed"):
        sets["facts"]


def test_qrels_mapping(sets) -> None:  # type: ignore[no-untyped-def]
    assert sets["canonical"].qrels() == {
        "q1": {"f1": 1, "f2": 1, "f3": 1, "s1": 1},
        "q4": {"s1": 1},
        "q5": {"f1": 1, "f2": 1, "f3": 1, "s1": 1},
    }


def test_coverage(sets) -> None:  # type: ignore[no-untyped-def]
    cov = coverage(sets)
    can = cov["canonical"]
    assert (can.queries, can.defined, can.zero_target) == (6, 3, 3)
    assert dict(can.zero_target_by_reason) == {
        "no_evidence": 1, "unknown_evidence": 1, "no_members": 1,
    }
    # group sizes: q1 4 and 2, q4 1, q5 4
    assert dict(can.group_size_histogram) == {1: 1, 2: 1, 4: 2}
    assert can.groups == 4 and can.multi_member_groups == 3
    assert can.mean_group_size == pytest.approx(11 / 4)
    assert can.credited_pairs == 4 + 1 + 4
    raw = cov["raw"]
    # raw defines q1, q4, q5, q6; sizes all 1: q1 2 groups, q4 1, q5 1, q6 1
    assert (raw.defined, dict(raw.group_size_histogram)) == (4, {1: 5})
    # Source minus Raw per query: q1 {t1,f1,f2,f3,s1,t2,o1} - {t1,t2} = 5;
    # q4 {s1,t3} - {t3} = 1; q5 {f1,f2,f3,s1,t1} - {t1} = 4; q6 {t4} - {t4} = 0.
    assert dict(sets.source_minus_raw) == {"q1": 5, "q4": 1, "q5": 4, "q6": 0}
    assert dict(cov.source_minus_raw) == {0: 1, 1: 1, 4: 1, 5: 1}
    js = cov.to_json()
    assert js["source_minus_raw"]["bins"] == {"0": 1, "1": 1, "2+": 2}
    assert js["source_minus_raw"]["mean"] == pytest.approx(10 / 4)
    assert js["unknown_evidence"]["queries"] == 2 and js["unknown_evidence"]["units"] == 2
    assert js["store"]["orphan_item_ids"] == ["x1"]


def test_zero_target_never_zero_valued_only_absent() -> None:
    # an empty store: every query with evidence is unknown_evidence, none is defined
    sets = build_groups([item("t", "raw", ("u1",))], [query("q", ("u2",))])
    for tg in sets:
        assert tg.defined_query_ids == ()
        assert tg.qrels() == {}
