"""Raw ⊆ Source, Canonical ⊆ Source, Raw ∩ Canonical = ∅ on a random store, and lineage
checked against a brute-force recursive definition."""

from __future__ import annotations

import random

from fixtures_targets import item, query

from tiap.memory.store import Item
from tiap.targets import build_groups, build_lineage


def random_store(seed: int) -> tuple[list[Item], list]:  # type: ignore[type-arg]
    rng = random.Random(seed)
    units = [f"u{i}" for i in range(60)]
    items: list[Item] = [item(f"t{i}", "raw", (u,)) for i, u in enumerate(units[:50])]
    # a few raw items marked non-serving: Canonical must still exclude all raw items
    items += [item("tx", "raw", ("u50",), serving=False)]
    kinds = ["fact", "observation", "event", "summary"]
    for j in range(300):
        srcs = tuple(rng.sample(units, rng.choice([0, 0, 1, 1, 2])))
        earlier = [it.item_id for it in items]
        pars = tuple(rng.sample(earlier, rng.choice([0, 1, 1, 2])))
        if not srcs and not pars:
            pars = (rng.choice(earlier),)
        serving = rng.choice([None, None, True, False])
        items.append(item(f"d{j}", rng.choice(kinds), srcs, pars, serving))
    rng.shuffle(items)
    qs = [query(f"q{k}", tuple(rng.sample(units + ["zz"], rng.randint(0, 4)))) for k in range(80)]
    return items, qs


def brute_lineage(items: list[Item]) -> dict[str, set[str]]:
    by_id = {it.item_id: it for it in items}

    def reach(iid: str) -> set[str]:
        it = by_id[iid]
        out = set(it.sources)
        for p in it.parents:
            out |= reach(p)
        return out

    return {iid: reach(iid) for iid in by_id}


def test_lineage_matches_brute_force() -> None:
    items, _ = random_store(7)
    lin = build_lineage(items)
    expected = brute_lineage(items)
    for iid, units in expected.items():
        assert set(lin.sources_of(iid)) == units
        for u in units:
            assert iid in lin.family(u)
    assert sum(len(f) for f in lin.families.values()) == sum(len(u) for u in expected.values())


def test_invariants_on_random_store() -> None:
    for seed in (1, 2, 3):
        items, qs = random_store(seed)
        sets = build_groups(items, qs)
        raw, source, canonical = sets["raw"], sets["source"], sets["canonical"]
        by_id = {it.item_id: it for it in items}
        n_canonical_defined = 0
        for q in qs:
            qid = q.query_id
            r, s, c = raw.queries[qid], source.queries[qid], canonical.queries[qid]
            s_by_unit = dict(zip(s.units, s.groups, strict=True))
            # per evidence unit: every Raw / Canonical group sits inside that unit's Source group
            for units, groups in ((r.units, r.groups), (c.units, c.groups)):
                for u, g in zip(units, groups, strict=True):
                    assert set(g) <= set(s_by_unit[u])
                    assert list(g) == sorted(g)
            assert set(r.members) <= set(s.members)
            assert set(c.members) <= set(s.members)
            assert not set(r.members) & set(c.members)
            assert all(by_id[i].is_raw for i in r.members)
            assert all(not by_id[i].is_raw and by_id[i].is_serving for i in c.members)
            # Source minus Raw size equals the non-raw part of the Source union
            if s.groups:
                assert sets.source_minus_raw[q.query_id] == len(s.members) - len(r.members)
            n_canonical_defined += bool(c.groups)
        assert n_canonical_defined > 0  # the fixture exercises non-empty Canonical sets
