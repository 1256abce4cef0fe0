"""Lineage: transitive sources, family index, cycles and dangling parents."""

from __future__ import annotations

import pytest
from fixtures_targets import item, store

from tiap.errors import TiapError
from tiap.memory.store import Item, Placeholder
from tiap.targets import build_lineage


def test_transitive_lineage_through_derived_facts() -> None:
    lin = build_lineage(store())
    # f2 has no sources of its own; it reaches u1 through its parent f1.
    assert lin.sources_of("f2") == ("u1",)
    # f3: own u2 + f2's {u1}
    assert lin.sources_of("f3") == ("u1", "u2")
    # s1: f3's {u1, u2} + t3's {u3}, three levels deep for u1 (s1 -> f3 -> f2 -> f1)
    assert lin.sources_of("s1") == ("u1", "u2", "u3")
    assert lin.sources_of("t1") == ("u1",)


def test_family_index() -> None:
    lin = build_lineage(store())
    assert lin.family("u1") == ("f1", "f2", "f3", "s1", "t1")
    assert lin.family("u2") == ("f3", "o1", "s1", "t2")
    assert lin.family("u3") == ("s1", "t3")
    assert lin.family("u4") == ("t4",)
    assert lin.family("u9") == ()
    assert not lin.has_unit("u9")
    assert lin.orphans == ("x1",)
    assert len(lin) == 10


def test_item_in_two_families() -> None:
    lin = build_lineage(store())
    # f3 derives from u2 directly and from u1 through f2 -> f1
    assert "f3" in lin.family("u1") and "f3" in lin.family("u2")


def test_duplicate_sources_deduplicated_and_sorted() -> None:
    lin = build_lineage([item("a", "raw", ("u2", "u1", "u2")), item("b", "fact", ("u1",), ("a",))])
    assert lin.sources_of("a") == ("u1", "u2")
    assert lin.sources_of("b") == ("u1", "u2")
    assert lin.family("u1") == ("a", "b")


def test_deep_chain_has_no_recursion_limit() -> None:
    # 20,000 facts each derived from the previous one: every one reaches u0.
    n = 20_000
    items = [item("r", "raw", ("u0",))]
    items += [item(f"f{i}", "fact", parents=("r" if i == 0 else f"f{i - 1}",)) for i in range(n)]
    lin = build_lineage(reversed(items))
    assert lin.sources_of(f"f{n - 1}") == ("u0",)
    assert len(lin.family("u0")) == n + 1


def test_cycle_is_an_error_naming_the_items() -> None:
    items = [
        item("t1", "raw", ("u1",)),
        item("a", "fact", parents=("b", "t1")),
        item("b", "fact", parents=("c",)),
        item("c", "fact", parents=("a",)),
        item("d", "fact", parents=("c",)),  # derives from the cycle, not on it
        item("e", "fact", parents=("e",)),  # self-parent
    ]
    with pytest.raises(TiapError) as ei:
        build_lineage(items)
    msgs = [p.message for p in ei.value.problems]
    # a lists b, b lists c, c lists a
    assert "cycle in parents: a -> b -> c -> a" in msgs
    assert "cycle in parents: e -> e" in msgs
    assert any("derive through parents from a cycle" in m and ": d" in m for m in msgs)
    assert len(msgs) == 3


def test_dangling_parents_and_cycles_reported_together() -> None:
    items = [
        item("t1", "raw", ("u1",)),
        item("f1", "fact", parents=("t1", "ghost")),
        item("f2", "fact", parents=("ghost", "spook")),
        item("a", "fact", parents=("b",)),
        item("b", "fact", parents=("a",)),
        item("t1", "raw", ("u1",)),
    ]
    with pytest.raises(TiapError) as ei:
        build_lineage(items)
    by_record = {(p.record, p.message) for p in ei.value.problems}
    assert ("t1", "duplicate item id") in by_record
    assert ("f1", "dangling parent: 'ghost' is not an item") in by_record
    assert ("f2", "dangling parent: 'ghost', 'spook' are not items") in by_record
    assert ("a", "cycle in parents: a -> b -> a") in by_record
    assert len(ei.value.problems) == 4
    # the CLI prints one line per problem, naming the item
    assert "record f1: dangling parent" in str(ei.value)


def test_flat_store_lineage_by_hand() -> None:
    """A store where no item has parents or partial lineage is resolved in one pass: each
    item's lineage is its own sources, sorted and de-duplicated; a family is its members
    sorted by id whatever the store order; an item without sources is an orphan; the
    families are listed in order of first appearance; a placeholder makes the lineage
    uncertain, and without one it is certain."""
    items = [Item("t2", "raw", ("u2",)), Item("m", "fact", ("u2", "u1", "u2")),
             Item("t1", "raw", ("u1",)), Item("o", "fact", ())]
    lineage = build_lineage(items)
    assert [lineage.sources_of(i) for i in ("t2", "m", "t1", "o")] == [
        ("u2",), ("u1", "u2"), ("u1",), ()]
    assert dict(lineage.families) == {"u2": ("m", "t2"), "u1": ("m", "t1")}
    assert list(lineage.families) == ["u2", "u1"] and len(lineage.families) == 2
    assert lineage.orphans == ("o",) and not lineage.uncertain
    assert lineage.family("u9") == () and not lineage.has_unit("u9")
    held = build_lineage([*items, Item("p", "fact", ("u1",), placeholder=Placeholder())])
    assert held.uncertain and held.family("u1") == ("m", "p", "t1")
