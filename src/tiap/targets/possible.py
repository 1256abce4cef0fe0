"""Who may belong to a target's group of a unit, when lineage is partial.

For a store whose lineage is complete, a unit's group under a target is its family's
members the target credits (:mod:`tiap.targets.groups`). With partial lineage
(:class:`tiap.memory.store.Uncertainty`, :class:`tiap.memory.store.Placeholder`) some items
*may* belong to it: :class:`PossibleIndex` answers, per (store, target), whether a unit's
group certainly, possibly or never exists and how many items may (not certainly) be in it.
Items of a known collection only reach units of queries of that collection.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property

from tiap.targets.lineage import Lineage
from tiap.targets.targets import Target

__all__ = ["MAYBE", "NO", "YES", "PossibleIndex"]

YES, MAYBE, NO = 2, 1, 0


class PossibleIndex:
    """Per (store lineage, target): certain and possible membership of units' groups."""

    def __init__(self, lineage: Lineage, target: Target) -> None:
        self.lineage = lineage
        self.target = target
        items = lineage.items
        self.match = {iid: target.matches(it) for iid, it in items.items()}
        self.open_by_collection: dict[str | None, list[str]] = {}
        for iid in lineage.open_items:
            if self.match[iid]:
                self.open_by_collection.setdefault(items[iid].collection, []).append(iid)

    def open_items(self, collection: str | None) -> list[str]:
        """Target-credited items of open lineage that may reach units of ``collection``."""
        if collection is None:
            return [i for ids in self.open_by_collection.values() for i in ids]
        return self.open_by_collection.get(collection, []) + self.open_by_collection.get(
            None, [])

    @cached_property
    def _not_maybe(self) -> dict[str | None, Counter[str]]:
        """collection -> unit -> how many of its open items cannot be only possible members
        of the unit's group (they exclude the unit, or certainly reach it)."""
        out: dict[str | None, Counter[str]] = {}
        for coll, ids in self.open_by_collection.items():
            c: Counter[str] = Counter()
            for iid in ids:
                c.update(self.lineage.possible[iid].excluded)
                c.update(self.lineage.sources[iid])
            out[coll] = c
        return out

    def existence(self, unit: str, collection: str | None) -> int:
        """:data:`YES` when an existing item certainly in the unit's family is credited by
        the target, :data:`MAYBE` when one may be, else :data:`NO`."""
        items, match, lin = self.lineage.items, self.match, self.lineage
        maybe = False
        for iid in lin.families.get(unit, ()):
            if not match[iid]:
                continue
            ph = items[iid].placeholder
            if ph is None or ph.certain:
                return YES
            maybe = True
        if maybe or self.n_possible(unit, collection, certain_family=False):
            return MAYBE
        return NO

    def n_possible(self, unit: str, collection: str | None, *,
                   certain_family: bool = True) -> int:
        """Items that may, but need not, be in the unit's group: of possible lineage, or
        (with ``certain_family``) placeholders of possible existence in its family."""
        lin, match = self.lineage, self.match
        n = sum(1 for iid in lin.possible_families.get(unit, ()) if match[iid])
        colls = [collection] if collection is not None else list(self.open_by_collection)
        for coll in dict.fromkeys([*colls, None]):
            ids = self.open_by_collection.get(coll)
            if ids:
                n += len(ids) - self._not_maybe[coll][unit]
        if certain_family:
            for iid in lin.families.get(unit, ()):
                ph = lin.items[iid].placeholder
                if match[iid] and ph is not None and not ph.certain:
                    n += 1
        return n
