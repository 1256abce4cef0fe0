"""Groups per (query, target): Stage I's output, the input of the scorer.

For a query with evidence units ``E`` (duplicates removed, first occurrence kept) and a
target ``T``, each unit ``u`` in ``E`` gives one *group*: the members of ``u``'s family that
``T`` credits, as item ids sorted by plain string order. Groups are listed in evidence order
(``QueryGroups.units`` says which unit each came from). Two units may give equal groups (one
fact derived from both turns); they stay two groups, since the scorer counts evidence units.

Empty groups are dropped. A query left with no group is a *zero-target case* under ``T``:
its measures are undefined (NaN), never 0, and the reason is recorded:

- ``no_evidence``: the query lists no evidence (abstention questions);
- ``unknown_evidence``: none of its evidence units is reached by any stored item;
- ``no_members``: its units are in the store, but ``T`` credits none of their members.

Evidence units that no stored item reaches are reported per query in
``TargetSets.unknown_evidence`` whatever the target.

A target at a coarser granularity (``raw@session``, ``source@window3``;
:mod:`tiap.targets.granularity`) has one group per evidence *block* (session or window of
turns) instead of per evidence turn: the members the target credits among the families of
every turn of the block; ``QueryGroups.units`` then names the blocks.

With partial lineage (:mod:`tiap.targets.possible`) the groups hold the *certain* members;
``QueryGroups.open_units`` names the units whose group may hold more (or may not exist),
and ``determined`` says whether the groups are known exactly (no possible member, no
placeholder of unknown count). A query with no certain group but a possible one is not a
zero-target case: its reason is ``undetermined``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from tiap.errors import Problem, TiapError
from tiap.memory.store import Item
from tiap.targets.granularity import TURN, Blocks
from tiap.targets.lineage import Lineage, build_lineage
from tiap.targets.possible import PossibleIndex
from tiap.targets.targets import Target, TargetRegistry, resolve_targets

if TYPE_CHECKING:  # pragma: no cover
    from tiap.datasets.records import Query  # noqa: F401  (documentation only)

__all__ = [
    "DEFAULT_TARGETS",
    "QueryGroups",
    "QueryLike",
    "TargetGroups",
    "TargetSets",
    "ZeroTarget",
    "build_groups",
]

DEFAULT_TARGETS: tuple[str, ...] = ("raw", "source", "canonical")

_ITEM_FIELDS = frozenset({"item_id", "kind", "sources", "parents", "serving", "text", "collection"})


class QueryLike(Protocol):
    """What :func:`build_groups` reads from a query (:class:`tiap.datasets.records.Query`)."""

    @property
    def query_id(self) -> str: ...

    @property
    def evidence(self) -> tuple[str, ...]: ...

    @property
    def abstention(self) -> bool: ...


class ZeroTarget(StrEnum):
    """Why a query has no group under a target.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": []}),
    ...            query_from_json({"query_id": "q2", "evidence": ["d1:9"]}),
    ...            query_from_json({"query_id": "q3", "evidence": ["d1:1"]})]
    >>> sets = build_groups(items, queries, ["raw", "facts=kind == fact", "notes=kind == note"])
    >>> [sets["raw"].queries[q].zero_target for q in ("q1", "q2", "q3")]
    [<ZeroTarget.NO_EVIDENCE: 'no_evidence'>,
     <ZeroTarget.UNKNOWN_EVIDENCE: 'unknown_evidence'>, None]
    >>> sets["notes"].queries["q3"].zero_target_reason
    "no members under target 'notes' (evidence units: d1:1)"
    """

    NO_EVIDENCE = "no_evidence"
    UNKNOWN_EVIDENCE = "unknown_evidence"
    NO_MEMBERS = "no_members"
    UNDETERMINED = "undetermined"  # no certain group; partial lineage leaves one possible


@dataclass(frozen=True)
class QueryGroups:
    """One query's groups under one target.

    Attributes:
        query_id: the query.
        target: the target's name.
        units: the evidence unit each group comes from (aligned with ``groups``).
        groups: one tuple of sorted item ids per evidence unit with a non-empty group.
        zero_target: why there is no group (``None`` when there is at least one).
        zero_target_reason: the same, as a sentence naming the units concerned.

    A query with two evidence turns: one group per turn. The fact derived from both is a
    member of both groups:

    >>> from tiap.datasets.queryfile import query_from_json
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> q = query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]})
    >>> qg = build_groups(items, [q])["source"].queries["q1"]
    >>> qg.units, qg.groups
    (('d1:1', 'd1:2'), (('m1', 't1'), ('m1', 't2')))
    >>> qg.n_groups, qg.members, qg.is_defined
    (2, ('m1', 't1', 't2'), True)
    """

    query_id: str
    target: str
    units: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    zero_target: ZeroTarget | None = None
    zero_target_reason: str | None = None
    open_units: tuple[str, ...] = ()  # partial lineage: units whose group is not known
    determined: bool = True

    @property
    def n_groups(self) -> int:
        """G, the number of groups."""
        return len(self.groups)

    @property
    def is_defined(self) -> bool:
        """Whether the query has at least one group (its measures are defined)."""
        return bool(self.groups)

    @property
    def members(self) -> tuple[str, ...]:
        """The union of the groups, sorted: the relevant set of the ``set`` credit mode."""
        return tuple(sorted({i for g in self.groups for i in g}))


@dataclass(frozen=True, eq=False)
class TargetGroups:
    """Every query's groups under one target, in query order.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]}),
    ...            query_from_json({"query_id": "q2", "evidence": []})]
    >>> canonical = build_groups(items, queries)["canonical"]
    >>> canonical["q1"], canonical["q2"]
    ((('m1',), ('m1',)), ())
    >>> canonical.defined_query_ids, dict(canonical.zero_target)
    (('q1',), {'q2': 'no evidence'})
    >>> canonical.qrels()
    {'q1': {'m1': 1}}
    """

    target: Target
    queries: Mapping[str, QueryGroups]

    @property
    def name(self) -> str:
        return self.target.name

    def __getitem__(self, query_id: str) -> tuple[tuple[str, ...], ...]:
        """The groups of ``query_id`` (empty for a zero-target case)."""
        return self.queries[query_id].groups

    def __iter__(self) -> Iterator[QueryGroups]:
        return iter(self.queries.values())

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def defined_query_ids(self) -> tuple[str, ...]:
        """Queries with at least one group, in query order."""
        return tuple(q for q, g in self.queries.items() if g.groups)

    @property
    def zero_target(self) -> Mapping[str, str]:
        """Query id -> zero-target reason (sentence) for the queries with no group."""
        return MappingProxyType(
            {q: g.zero_target_reason or "" for q, g in self.queries.items() if not g.groups}
        )

    def qrels(self) -> dict[str, dict[str, int]]:
        """The ``set``-mode qrels ``{query_id: {item_id: 1}}`` (zero-target queries left out),
        as pytrec_eval, ranx and ir_measures take them."""
        return {q: {i: 1 for i in g.members} for q, g in self.queries.items() if g.groups}


@dataclass(frozen=True, eq=False)
class TargetSets:
    """Groups for every (query, target), plus what a coverage report needs.

    Attributes:
        targets: the targets, in the order requested.
        query_ids: the queries, in input order.
        by_target: target name -> :class:`TargetGroups`.
        unknown_evidence: query id -> its evidence units that no stored item reaches (only
            queries that have some).
        source_minus_raw: query id -> |∪ Source groups| - |∪ Raw groups|, for the queries
            with at least one evidence unit in the store (Source defined).
        n_items: items in the store.
        n_units: source units reached by at least one item.
        orphans: ids of items whose lineage is empty (credited under no target).

    >>> from tiap.datasets.queryfile import query_from_json
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:9"]})]
    >>> sets = build_groups(items, queries, ["raw", "canonical"])
    >>> sets.target_names, sets["raw"]["q1"], sets["canonical"]["q1"]
    (('raw', 'canonical'), (('t1',),), (('m1',),))
    >>> dict(sets.unknown_evidence), dict(sets.source_minus_raw)
    ({'q1': ('d1:9',)}, {'q1': 1})
    """

    targets: tuple[Target, ...]
    query_ids: tuple[str, ...]
    by_target: Mapping[str, TargetGroups]
    unknown_evidence: Mapping[str, tuple[str, ...]]
    source_minus_raw: Mapping[str, int]
    n_items: int = 0
    n_units: int = 0
    orphans: tuple[str, ...] = ()

    def __getitem__(self, target: str) -> TargetGroups:
        """The groups under the target called ``target``."""
        try:
            return self.by_target[target.lower()]
        except KeyError:
            raise TiapError(
                f"target {target!r} was not computed; computed: {', '.join(self.by_target)}"
            ) from None

    def __iter__(self) -> Iterator[TargetGroups]:
        return iter(self.by_target.values())

    def __contains__(self, target: object) -> bool:
        return isinstance(target, str) and target.lower() in self.by_target

    @property
    def target_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)


def _zero_reason(
    kind: ZeroTarget, target: str, query: QueryLike, known: Sequence[str], unknown: Sequence[str]
) -> str:
    if kind is ZeroTarget.NO_EVIDENCE:
        return "no evidence (abstention)" if query.abstention else "no evidence"
    if kind is ZeroTarget.UNKNOWN_EVIDENCE:
        return "evidence units not in store: " + ", ".join(unknown)
    text = f"no members under target {target!r} (evidence units: {', '.join(known)})"
    if unknown:
        text += "; evidence units not in store: " + ", ".join(unknown)
    return text


def _check_fields(targets: Sequence[Target], lineage: Lineage) -> None:
    """Every field a target reads must be a standard field or an extra field of some item."""
    wanted = {f for t in targets for f in t.fields} - _ITEM_FIELDS
    if not wanted:
        return
    present: set[str] = set()
    for it in lineage.items.values():
        for key, _ in it.meta:
            if key in wanted:
                present.add(key)
        if present == wanted:
            return
    problems = []
    for t in targets:
        missing = sorted((t.fields - _ITEM_FIELDS) - present)
        if missing:
            problems.append(
                Problem(
                    f"target {t.name!r} ({t.spec}) reads field(s) "
                    f"{', '.join(repr(m) for m in missing)} that no item has; item fields are "
                    f"{', '.join(sorted(_ITEM_FIELDS))} and any extra field of items.jsonl"
                )
            )
    raise TiapError(problems=problems)


def build_groups(
    store: Lineage | Iterable[Item],
    queries: Iterable[QueryLike],
    targets: Iterable[Target | str] = DEFAULT_TARGETS,
    *,
    registry: TargetRegistry | None = None,
    overlays: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> TargetSets:
    """Compute every query's groups under every target.

    Args:
        store: the stored items, or a :class:`~tiap.targets.lineage.Lineage` built from them.
        queries: queries with ``query_id``, ``evidence`` (source unit ids) and
            ``abstention`` (e.g. :class:`tiap.datasets.records.Query`).
        targets: target names, ``name=spec`` definitions or :class:`Target` objects.
        registry: where names are looked up (the default registry if ``None``).
        overlays: evidence overlays by name (query id -> evidence units;
            :mod:`tiap.datasets.overlays`): a target ``T~NAME`` reads a query's evidence
            from overlay ``NAME`` where it has the query, else the query's own.

    Returns:
        A frozen :class:`TargetSets`.

    Raises:
        TiapError: for lineage problems, unknown or invalid targets, a target reading a
            field no item has, or duplicate query ids (all problems of a kind together).

    Two turns and one fact derived from both; a query whose evidence is both turns has
    two groups (one per evidence turn) under each target:

    >>> from tiap.datasets.queryfile import query_from_json
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]})]
    >>> sets = build_groups(items, queries, ["raw", "source", "canonical"])
    >>> for target in sets:
    ...     print(target.name, target["q1"])
    raw (('t1',), ('t2',))
    source (('m1', 't1'), ('m1', 't2'))
    canonical (('m1',), ('m1',))
    """
    lineage = store if isinstance(store, Lineage) else build_lineage(store)
    tlist = resolve_targets(targets, registry)
    if not tlist:
        raise TiapError("no targets requested")
    _check_fields(tlist, lineage)

    qlist = list(queries)
    seen: set[str] = set()
    dups = []
    for q in qlist:
        if q.query_id in seen:
            dups.append(Problem("duplicate query id", query_id=q.query_id))
        seen.add(q.query_id)
    if dups:
        raise TiapError(problems=dups)

    items = lineage.items
    open_index = ({t.name: PossibleIndex(lineage, t) for t in tlist} if lineage.uncertain
                  else {})
    blocks: dict[str, Blocks] = {}
    for t in tlist:
        if t.granularity != TURN and t.granularity not in blocks:
            if lineage.uncertain:
                raise TiapError(f"target {t.name}: partial lineage is not rolled up to "
                                f"{t.granularity}s (an item that may reach a turn cannot be "
                                "placed in its block); use turn-level targets for this store")
            blocks[t.granularity] = Blocks.build(lineage, t.granularity)
    unplaced: list[Problem] = []
    per_target: dict[str, dict[str, QueryGroups]] = {t.name: {} for t in tlist}
    unit_cache: dict[str, dict[str, tuple[str, ...]]] = {t.name: {} for t in tlist}
    unknown_evidence: dict[str, tuple[str, ...]] = {}
    source_minus_raw: dict[str, int] = {}

    given = dict(overlays or {})
    missing = sorted({t.overlay for t in tlist if t.overlay and t.overlay not in given})
    if missing:
        raise TiapError(problems=[Problem(
            f"targets read the evidence overlay {m!r}, which is not given (tiap rescore "
            f"--overlay {m}=PATH)", code="usage") for m in missing])

    for q in qlist:
        own = tuple(dict.fromkeys(q.evidence))
        own_known = tuple(u for u in own if lineage.has_unit(u))
        own_unknown = tuple(u for u in own if not lineage.has_unit(u))
        if own_known:
            union = {i for u in own_known for i in lineage.family(u)}
            source_minus_raw[q.query_id] = sum(1 for i in union if not items[i].is_raw)
        named = dict.fromkeys(own_unknown)  # every evidence set's units no item reaches

        for t in tlist:
            evidence, known, unknown = own, own_known, own_unknown
            if t.overlay and q.query_id in given[t.overlay]:
                evidence = tuple(dict.fromkeys(given[t.overlay][q.query_id]))
                known = tuple(u for u in evidence if lineage.has_unit(u))
                unknown = tuple(u for u in evidence if not lineage.has_unit(u))
                named.update(dict.fromkeys(unknown))
            cache = unit_cache[t.name]
            units: list[str] = []
            groups: list[tuple[str, ...]] = []
            rolled = blocks.get(t.granularity)
            if rolled is not None:  # one group per evidence block, over all its turns
                bad = [u for u in known if u not in rolled.of_unit]
                if bad and len(unplaced) < 5:
                    unplaced.append(Problem(
                        f"evidence turn {bad[0]} has no raw item in the store, so its "
                        f"{t.granularity} is not known", query_id=q.query_id))
                for blk in dict.fromkeys(rolled.of_unit[u] for u in known if u not in bad):
                    members = cache.get(blk)
                    if members is None:
                        members = tuple(sorted({i for u in rolled.units[blk]
                                                for i in lineage.family(u)
                                                if t.matches(items[i])}))
                        cache[blk] = members
                    if members:
                        units.append(blk)
                        groups.append(members)
            for u in (known if rolled is None else ()):
                members = cache.get(u)
                if members is None:
                    # families are sorted, so the filtered tuple is sorted too
                    members = tuple(i for i in lineage.family(u) if t.matches(items[i]))
                    cache[u] = members
                if members:
                    units.append(u)
                    groups.append(members)
            open_units: tuple[str, ...] = ()
            determined = True
            index = open_index.get(t.name)
            if index is not None:
                coll = getattr(q, "collection_id", None) or None
                open_units = tuple(u for u in evidence if index.n_possible(u, coll))
                determined = not open_units and not any(
                    items[i].placeholder is not None and items[i].placeholder.count is None
                    for g in groups for i in g)
            zero: ZeroTarget | None = None
            reason: str | None = None
            if not groups and open_units:
                zero = ZeroTarget.UNDETERMINED
                reason = ("not determined: no group is certain; partial lineage leaves one "
                          f"possible for {', '.join(open_units)}")
            elif not groups:
                if not evidence:
                    zero = ZeroTarget.NO_EVIDENCE
                elif not known:
                    zero = ZeroTarget.UNKNOWN_EVIDENCE
                else:
                    zero = ZeroTarget.NO_MEMBERS
                reason = _zero_reason(zero, t.name, q, known, unknown)
            per_target[t.name][q.query_id] = QueryGroups(
                query_id=q.query_id,
                target=t.name,
                units=tuple(units),
                groups=tuple(groups),
                zero_target=zero,
                zero_target_reason=reason,
                open_units=open_units,
                determined=determined,
            )

        if named:
            unknown_evidence[q.query_id] = tuple(named)
    if unplaced:
        raise TiapError(problems=unplaced)
    by_target = {
        t.name: TargetGroups(target=t, queries=MappingProxyType(per_target[t.name])) for t in tlist
    }
    return TargetSets(
        targets=tlist,
        query_ids=tuple(q.query_id for q in qlist),
        by_target=MappingProxyType(by_target),
        unknown_evidence=MappingProxyType(unknown_evidence),
        source_minus_raw=MappingProxyType(source_minus_raw),
        n_items=len(lineage.items),
        n_units=len(lineage.families),
        orphans=lineage.orphans,
    )
