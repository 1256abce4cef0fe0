"""Lineage: the transitive source units of every stored item, and the family index.

An item's *lineage* is the set of source units it traces back to: its own ``sources`` plus
the lineage of each of its ``parents``, transitively (a fact derived from a fact derived from
a turn reaches that turn). The *family* of a source unit ``u`` is every item whose lineage
contains ``u`` (ARCHITECTURE.md, "Targets, exactly").

The computation is iterative (Kahn's topological order over the ``parents`` edges), so deep
derived-from-derived chains never hit Python's recursion limit, and it is linear in the
number of items plus parent edges. Problems in the ``parents`` graph are collected and raised
together as one :class:`~tiap.errors.TiapError`:

- a *dangling parent*: a parent id that is not an item;
- a *cycle*: items that are (transitively) their own parents, named as a concrete path
  ``a -> b -> a`` (read "a lists b as a parent, b lists a");
- items that derive from a cycle without being on it (their lineage is undefined too);
- a duplicate item id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from tiap.errors import Problem, TiapError
from tiap.memory.store import Item

__all__ = ["Lineage", "build_lineage"]

_MAX_LISTED = 20  # ids listed in one problem message before "... and N more"


def _listing(ids: Sequence[str], limit: int = _MAX_LISTED) -> str:
    shown = ", ".join(ids[:limit])
    if len(ids) > limit:
        shown += f", ... and {len(ids) - limit} more"
    return shown


@dataclass(frozen=True, eq=False)
class Lineage:
    """The resolved lineage of a store and its family index (immutable).

    Attributes:
        items: item id -> :class:`~tiap.memory.store.Item`, in input order.
        sources: item id -> its transitive source units, sorted and de-duplicated.
        families: source unit id -> ids of the items whose lineage reaches it, sorted.
        orphans: ids of items whose lineage is empty (no sources, no parents with
            sources); they belong to no family and can never be credited.
    """

    items: Mapping[str, Item]
    sources: Mapping[str, tuple[str, ...]]
    families: Mapping[str, tuple[str, ...]]
    orphans: tuple[str, ...] = field(default=())

    def sources_of(self, item_id: str) -> tuple[str, ...]:
        """The transitive source units of ``item_id`` (a ``KeyError`` if it is not an item)."""
        return self.sources[item_id]

    def family(self, unit_id: str) -> tuple[str, ...]:
        """Ids of the items whose lineage reaches ``unit_id``; empty if none does."""
        return self.families.get(unit_id, ())

    def has_unit(self, unit_id: str) -> bool:
        """Whether any stored item traces back to ``unit_id``."""
        return unit_id in self.families

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
    """
    by_id: dict[str, Item] = {}
    problems: list[Problem] = []
    for it in items:
        if it.item_id in by_id:
            problems.append(Problem("duplicate item id", record=it.item_id))
            continue
        by_id[it.item_id] = it

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
    ready: deque[str] = deque(iid for iid in by_id if iid not in indegree)
    while ready:
        iid = ready.popleft()
        own = by_id[iid].sources
        parents = valid_parents.get(iid)
        if parents is None:
            # Reuse the item's own tuple when it is already sorted and unique (the common
            # raw-turn case: one source), so 250k items cost no extra tuples.
            if len(own) <= 1 or all(a < b for a, b in zip(own, own[1:], strict=False)):
                sources[iid] = own
            else:
                sources[iid] = tuple(sorted(set(own)))
        else:
            acc = set(own)
            for p in parents:
                acc.update(sources[p])
            sources[iid] = tuple(sorted(acc))
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
    for iid, units in sources.items():
        if not units:
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
    )


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
