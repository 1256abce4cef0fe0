"""Lineage: the transitive source units of every stored item, and the family index.

An item's *lineage* is the set of source units it traces back to: its own ``sources`` plus
the lineage of each of its ``parents``, transitively (a fact derived from a fact derived from
a turn reaches that turn). The *family* of a source unit ``u`` is every item whose lineage
contains ``u`` (docs/targets-and-scoring.md, "Targets").

The computation is iterative (Kahn's topological order over the ``parents`` edges), so deep
derived-from-derived chains never hit Python's recursion limit, and it is linear in the
number of items plus parent edges. Problems in the ``parents`` graph are collected and raised
together as one :class:`~tiap.errors.TiapError`:

- a *dangling parent*: a parent id that is not an item;
- a *cycle*: items that are (transitively) their own parents, named as a concrete path
  ``a -> b -> a`` (read "a lists b as a parent, b lists a");
- items that derive from a cycle without being on it (their lineage is undefined too);
- a duplicate item id.

Partial lineage (:class:`tiap.memory.store.Uncertainty`) is resolved the same way: an item
*may* reach a unit when its own ``uncertain`` says so or one of its parents may reach it;
its ``requires`` sets are its own and its parents'; a unit an item excludes is excluded for
everything it derives from too. :attr:`Lineage.possible` holds the result
(:class:`PossibleLineage`) for every item whose lineage is not fully determined; the
families (:attr:`Lineage.families`) hold only certain members.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from types import MappingProxyType

from tiap.errors import Problem, TiapError
from tiap.memory.store import Item

__all__ = ["Lineage", "PossibleLineage", "build_lineage"]

_MAX_LISTED = 20  # ids listed in one problem message before "... and N more"


def _listing(ids: Sequence[str], limit: int = _MAX_LISTED) -> str:
    shown = ", ".join(ids[:limit])
    if len(ids) > limit:
        shown += f", ... and {len(ids) - limit} more"
    return shown


@dataclass(frozen=True)
class PossibleLineage:
    """What an item's lineage may hold beyond its certain sources (transitive).

    The item may reach unit ``u`` when ``u`` is in ``units``, or when ``open`` and ``u`` is
    not in ``excluded`` (and ``u`` belongs to the item's collection, where both are known).
    Its lineage holds at least one unit of every set in ``requires`` (sets its certain
    sources already meet are dropped). ``single``: exactly one source unit in all;
    ``exclusive``: no other exclusive item shares a unit with it.
    """

    units: frozenset[str] = frozenset()
    open: bool = False
    excluded: frozenset[str] = frozenset()
    requires: tuple[frozenset[str], ...] = ()
    single: bool = False
    exclusive: bool = False

    def may_reach(self, unit: str) -> bool:
        return unit in self.units or (self.open and unit not in self.excluded)


@dataclass(frozen=True, eq=False)
class Lineage:
    """The resolved lineage of a store and its family index (immutable).

    Attributes:
        items: item id -> :class:`~tiap.memory.store.Item`, in input order.
        sources: item id -> its transitive source units, sorted and de-duplicated.
        families: source unit id -> ids of the items whose lineage reaches it, sorted.
        orphans: ids of items whose lineage is empty (no sources, no parents with
            sources) and certainly so; they belong to no family and can never be credited.
        possible: item id -> :class:`PossibleLineage`, for every item whose lineage is not
            fully determined (empty for a store whose lineage is complete).
        possible_families: unit -> ids of items that may (not certainly) reach it through
            an explicit list of possible sources.
        open_items: ids of items that may reach any unit (``possible_sources: "any"``).

    Two turns, a fact derived from both, and a fact derived from that fact:

    >>> lineage = build_lineage([Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...                          Item("m1", "fact", ("d1:1", "d1:2")),
    ...                          Item("m2", "fact", parents=("m1",))])
    >>> lineage.sources_of("m2")
    ('d1:1', 'd1:2')
    >>> lineage.family("d1:1"), lineage.has_unit("d1:3"), len(lineage)
    (('m1', 'm2', 't1'), False, 4)
    """

    items: Mapping[str, Item]
    sources: Mapping[str, tuple[str, ...]]
    families: Mapping[str, tuple[str, ...]]
    orphans: tuple[str, ...] = field(default=())
    possible: Mapping[str, PossibleLineage] = field(default_factory=dict)
    possible_families: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    open_items: tuple[str, ...] = ()

    #: items with a placeholder, as :func:`build_lineage` found them (``None``: not looked
    #: for; :attr:`uncertain` then looks)
    placeholders: int | None = field(default=None, repr=False, compare=False)
    #: items whose lineage the import inferred (``Item.inferred``), likewise
    inferred: int | None = field(default=None, repr=False, compare=False)

    @cached_property
    def uncertain(self) -> bool:
        """Whether some lineage, or the existence or number of some items, is not
        determined (partial lineage, placeholders)."""
        if self.placeholders is not None:
            return bool(self.possible) or self.placeholders > 0
        return bool(self.possible) or any(it.placeholder is not None
                                          for it in self.items.values())

    def sources_of(self, item_id: str) -> tuple[str, ...]:
        """The transitive source units of ``item_id`` (a ``KeyError`` if it is not an item)."""
        return self.sources[item_id]

    def family(self, unit_id: str) -> tuple[str, ...]:
        """Ids of the items whose lineage reaches ``unit_id``; empty if none does."""
        return self.families.get(unit_id, ())

    def has_unit(self, unit_id: str) -> bool:
        """Whether any stored item certainly traces back to ``unit_id``."""
        return unit_id in self.families

    def may_have_unit(self, unit_id: str) -> bool:
        """Whether some stored item certainly or possibly traces back to ``unit_id``."""
        return (unit_id in self.families or unit_id in self.possible_families
                or any(self.possible[i].may_reach(unit_id) for i in self.open_items))

    def item(self, item_id: str) -> Item:
        """The item with id ``item_id``."""
        return self.items[item_id]

    def __len__(self) -> int:
        return len(self.items)


def build_lineage(items: Iterable[Item]) -> Lineage:
    """Resolve every item's transitive source units and build the family index.

    Args:
        items: the stored items (raw and derived), each with ``sources`` and ``parents``.

    Returns:
        A :class:`Lineage`.

    Raises:
        TiapError: listing every duplicate id, dangling parent and cycle (with the items on
            it, and the items that derive from it) found in one pass.

    >>> lineage = build_lineage([Item("t1", "raw", ("d1:1",)),
    ...                          Item("m1", "fact", parents=("t1",))])
    >>> dict(lineage.families)
    {'d1:1': ('m1', 't1')}
    >>> build_lineage([Item("m1", "fact", parents=("m2",)), Item("m2", "fact", parents=("m1",))])
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: ...cycle...
    """
    by_id: dict[str, Item] = {}
    problems: list[Problem] = []
    for it in items:
        if it.item_id in by_id:
            problems.append(Problem("duplicate item id", record=it.item_id))
            continue
        by_id[it.item_id] = it
    if not problems:
        flat = _flat_lineage(by_id)
        if flat is not None:
            return flat

    # Parent edges. indegree counts an item's distinct, existing parents; children maps a
    # parent to the items that list it. Most items (raw turns) have no parents at all.
    indegree: dict[str, int] = {}
    children: dict[str, list[str]] = {}
    valid_parents: dict[str, tuple[str, ...]] = {}
    for iid, it in by_id.items():
        if not it.parents:
            continue
        seen: list[str] = []
        missing: list[str] = []
        for p in it.parents:
            if p not in by_id:
                if p not in missing:
                    missing.append(p)
            elif p not in seen:
                seen.append(p)
        if missing:
            problems.append(
                Problem(
                    "dangling parent: "
                    + ", ".join(repr(m) for m in missing)
                    + (" is not an item" if len(missing) == 1 else " are not items"),
                    record=iid,
                )
            )
        if seen:
            valid_parents[iid] = tuple(seen)
            indegree[iid] = len(seen)
            for p in seen:
                children.setdefault(p, []).append(iid)

    sources: dict[str, tuple[str, ...]] = {}
    possible: dict[str, PossibleLineage] = {}
    ready: deque[str] = deque(iid for iid in by_id if iid not in indegree)
    while ready:
        iid = ready.popleft()
        own = by_id[iid].sources
        parents = valid_parents.get(iid)
        if parents is None:
            # Reuse the item's own tuple when it is already sorted and unique (the common
            # raw-turn case: one source), so 250k items cost no extra tuples.
            if len(own) <= 1 or all(a < b for a, b in pairwise(own)):
                sources[iid] = own
            else:
                sources[iid] = tuple(sorted(set(own)))
        else:
            acc = set(own)
            for p in parents:
                acc.update(sources[p])
            sources[iid] = tuple(sorted(acc))
        item = by_id[iid]
        if item.uncertain is not None or (parents and any(p in possible for p in parents)):
            got = _possible(item, sources[iid], [possible[p] for p in parents or ()
                                                 if p in possible])
            if isinstance(got, Problem):
                problems.append(got)
            else:
                possible[iid] = got
        for ch in children.get(iid, ()):
            indegree[ch] -= 1
            if indegree[ch] == 0:
                ready.append(ch)

    if len(sources) < len(by_id):
        problems.extend(_cycle_problems(by_id, valid_parents, sources))

    if problems:
        raise TiapError(problems=problems)

    fam_lists: dict[str, list[str]] = {}
    orphans: list[str] = []
    maybe_lists: dict[str, list[str]] = {}
    open_items: list[str] = []
    for iid, pl in possible.items():
        if pl.open:
            open_items.append(iid)
        for u in pl.units:
            maybe_lists.setdefault(u, []).append(iid)
    for iid, units in sources.items():
        if not units and iid not in possible:
            orphans.append(iid)
        for u in units:
            lst = fam_lists.get(u)
            if lst is None:
                fam_lists[u] = [iid]
            else:
                lst.append(iid)
    families = {u: tuple(sorted(ids)) for u, ids in fam_lists.items()}
    ordered_sources = {iid: sources[iid] for iid in by_id}
    return Lineage(
        items=MappingProxyType(by_id),
        sources=MappingProxyType(ordered_sources),
        families=MappingProxyType(families),
        orphans=tuple(orphans),
        possible=MappingProxyType(possible),
        possible_families=MappingProxyType(
            {u: tuple(sorted(ids)) for u, ids in maybe_lists.items()}),
        open_items=tuple(sorted(open_items)),
    )


class _Families(Mapping[str, tuple[str, ...]]):
    """Unit -> its family, sorted when first read: the families of a store are many (one
    per turn), the ones a rescoring reads few (its queries' evidence)."""

    def __init__(self, lists: dict[str, list[str]]) -> None:
        self._lists = lists
        self._sorted: dict[str, tuple[str, ...]] = {}

    def __getitem__(self, unit: str) -> tuple[str, ...]:
        got = self._sorted.get(unit)
        if got is None:
            got = self._sorted[unit] = tuple(sorted(self._lists[unit]))
        return got

    def __contains__(self, unit: object) -> bool:
        return unit in self._lists

    def __iter__(self) -> Iterator[str]:
        return iter(self._lists)

    def __len__(self) -> int:
        return len(self._lists)

    def __repr__(self) -> str:
        return repr(dict(self))


def _flat_lineage(by_id: dict[str, Item]) -> Lineage | None:
    """The :class:`Lineage` of a store where no item has parents or partial lineage (every
    item's lineage is its own sources), in one pass; ``None`` for any other store."""
    sources: dict[str, tuple[str, ...]] = {}
    fam_lists: dict[str, list[str]] = {}
    orphans: list[str] = []
    placeholders = inferred = 0
    for iid, it in by_id.items():
        if it.parents or it.uncertain is not None:
            return None
        own = it.sources
        if len(own) == 1:
            u = own[0]
            lst = fam_lists.get(u)
            if lst is None:
                fam_lists[u] = [iid]
            else:
                lst.append(iid)
        else:
            if len(own) > 1 and not all(a < b for a, b in pairwise(own)):
                own = tuple(sorted(set(own)))
            if not own:
                orphans.append(iid)
            for u in own:
                lst = fam_lists.get(u)
                if lst is None:
                    fam_lists[u] = [iid]
                else:
                    lst.append(iid)
        sources[iid] = own
        if it.placeholder is not None:
            placeholders += 1
        if it.inferred is not None:
            inferred += 1
    return Lineage(items=MappingProxyType(by_id), sources=MappingProxyType(sources),
                   families=_Families(fam_lists), orphans=tuple(orphans),
                   possible=MappingProxyType({}), possible_families=MappingProxyType({}),
                   open_items=(), placeholders=placeholders, inferred=inferred)


def _possible(item: Item, certain: tuple[str, ...],
              parents: list[PossibleLineage]) -> PossibleLineage | Problem:
    """The :class:`PossibleLineage` of ``item`` from its own ``uncertain`` and its parents'."""
    own = item.uncertain
    units: set[str] = set()
    open_ = False
    excluded: set[str] = set()
    requires: list[frozenset[str]] = []
    if own is not None:
        if own.possible is None:
            open_ = True
            excluded = set(own.excluded)
        else:
            units.update(own.possible)
        requires.extend(frozenset(r) for r in own.requires)
    open_parents = [p for p in parents if p.open]
    for p in parents:
        units.update(p.units)
        requires.extend(p.requires)
    if not open_ and open_parents:
        open_ = True
        excluded = set.intersection(*(set(p.excluded) for p in open_parents))
    hard = set(own.excluded) if own is not None else set()
    clash = sorted(hard & set(certain))
    if clash:
        return Problem(f"the item excludes {', '.join(clash)}, which its parents reach",
                       record=item.item_id)
    units -= hard
    units -= set(certain)
    excluded -= set(certain)
    have = set(certain)
    left = tuple(dict.fromkeys(r for r in requires if not r & have))
    cap = own.max_sources if own is not None else None
    return PossibleLineage(
        units=frozenset(units), open=open_, excluded=frozenset(excluded), requires=left,
        single=cap == 1, exclusive=bool(own is not None and own.exclusive))


def _cycle_problems(
    by_id: Mapping[str, Item],
    valid_parents: Mapping[str, tuple[str, ...]],
    resolved: Mapping[str, tuple[str, ...]],
) -> list[Problem]:
    """Problems for the items Kahn's order could not resolve: cycles and their descendants."""
    stuck = [iid for iid in by_id if iid not in resolved]
    stuck_set = set(stuck)

    def succ(iid: str) -> list[str]:
        return [p for p in valid_parents.get(iid, ()) if p in stuck_set]

    problems: list[Problem] = []
    on_cycle: set[str] = set()
    for comp in _cyclic_components(stuck, succ):
        members = sorted(comp)
        on_cycle.update(members)
        path = _cycle_path(members[0], set(members), succ)
        msg = "cycle in parents: " + " -> ".join(path)
        if len(members) > len(path) - 1:
            msg += f" (strongly connected items: {_listing(members)})"
        problems.append(Problem(msg, record=members[0]))
    downstream = [iid for iid in stuck if iid not in on_cycle]
    if downstream:
        problems.append(
            Problem(
                f"{len(downstream)} item(s) derive through parents from a cycle, so their "
                f"lineage is undefined: {_listing(sorted(downstream))}"
            )
        )
    return problems


def _cycle_path(start: str, members: set[str], succ: Callable[[str], list[str]]) -> list[str]:
    """A shortest path ``start -> ... -> start`` along parent edges inside one component."""
    prev: dict[str, str] = {}
    queue: deque[str] = deque([start])
    visited = {start}
    while queue:
        v = queue.popleft()
        for w in succ(v):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in visited:
                visited.add(w)
                prev[w] = v
                queue.append(w)
    return [start, start]  # unreachable for a genuine cycle; kept total for safety


def _cyclic_components(nodes: Sequence[str], succ: Callable[[str], list[str]]) -> list[list[str]]:
    """Strongly connected components that contain a cycle (Tarjan's algorithm, iterative).

    Returns the components of more than one node, and single nodes with a self-loop.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, Iterable[str]]] = [(root, iter(succ(root)))]
        while work:
            v, it = work[-1]
            descended = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ(w))))
                    descended = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if descended:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in succ(v):
                    out.append(comp)
    return out
