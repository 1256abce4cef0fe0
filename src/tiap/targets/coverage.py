"""Coverage of each target: which queries it defines, why the others are undefined.

Per target: the queries with at least one group (*defined*), the zero-target cases by
reason, the number of groups, the group-size histogram and the multi-member groups (the
paper's ``group_size_histogram`` and ``multi_member_cases``). For the whole run: the
evidence units not in the store, and the distribution of the Source-minus-Raw target-set
size ``|∪ Source groups| - |∪ Raw groups|`` per query (the paper's cardinality analysis,
§5.2 and appendix I, bins it as 0, 1, 2+).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from tiap.targets.groups import TargetGroups, TargetSets, ZeroTarget

__all__ = ["COVERAGE_CSV_COLUMNS", "Coverage", "TargetCoverage", "coverage"]

COVERAGE_CSV_COLUMNS: tuple[str, ...] = (
    "target",
    "spec",
    "queries",
    "defined",
    "zero_target",
    *(f"zero_{z.value}" for z in ZeroTarget),
    "groups",
    "multi_member_groups",
    "mean_group_size",
    "max_group_size",
    "credited_pairs",
)


def _histogram(values: Counter[int]) -> Mapping[int, int]:
    return MappingProxyType(dict(sorted(values.items())))


@dataclass(frozen=True)
class TargetCoverage:
    """Coverage of one target.

    Attributes:
        target: the target's name; ``spec`` its canonical spec.
        queries: queries considered; ``defined`` those with at least one group;
            ``zero_target`` the others, counted by reason in ``zero_target_by_reason``.
        groups: groups over all queries; ``multi_member_groups`` those of size > 1.
        group_size_histogram: group size -> number of groups.
        credited_pairs: Σ over queries of |∪ groups| (the number of qrels lines).

    Under Source, q1's two groups are ``(m1, t1)`` and ``(m1, t2)``: two groups of two,
    three distinct members; q2 has no evidence:

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item
    >>> from tiap.targets import build_groups
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]}),
    ...            query_from_json({"query_id": "q2", "evidence": []})]
    >>> source = coverage(build_groups(items, queries))["source"]
    >>> source.defined, dict(source.zero_target_by_reason)
    (1, {'no_evidence': 1})
    >>> source.groups, source.multi_member_groups, source.mean_group_size, source.credited_pairs
    (2, 2, 2.0, 3)
    """

    target: str
    spec: str
    queries: int
    defined: int
    zero_target: int
    zero_target_by_reason: Mapping[str, int]
    groups: int
    multi_member_groups: int
    group_size_histogram: Mapping[int, int]
    credited_pairs: int

    @property
    def mean_group_size(self) -> float:
        """Mean group size; NaN when there is no group."""
        total = sum(size * n for size, n in self.group_size_histogram.items())
        return total / self.groups if self.groups else float("nan")

    @property
    def max_group_size(self) -> int:
        return max(self.group_size_histogram, default=0)

    def to_json(self) -> dict[str, Any]:
        mean = self.mean_group_size
        return {
            "target": self.target,
            "spec": self.spec,
            "queries": self.queries,
            "defined": self.defined,
            "zero_target": self.zero_target,
            "zero_target_by_reason": dict(self.zero_target_by_reason),
            "groups": self.groups,
            "multi_member_groups": self.multi_member_groups,
            "mean_group_size": None if mean != mean else mean,
            "max_group_size": self.max_group_size,
            "group_size_histogram": {str(k): v for k, v in self.group_size_histogram.items()},
            "credited_pairs": self.credited_pairs,
        }

    def csv_row(self) -> dict[str, Any]:
        """One row of the coverage CSV (columns :data:`COVERAGE_CSV_COLUMNS`)."""
        mean = self.mean_group_size
        row: dict[str, Any] = {
            "target": self.target,
            "spec": self.spec,
            "queries": self.queries,
            "defined": self.defined,
            "zero_target": self.zero_target,
        }
        for z in ZeroTarget:
            row[f"zero_{z.value}"] = self.zero_target_by_reason.get(z.value, 0)
        row.update(
            groups=self.groups,
            multi_member_groups=self.multi_member_groups,
            mean_group_size="" if mean != mean else f"{mean:.6g}",
            max_group_size=self.max_group_size,
            credited_pairs=self.credited_pairs,
        )
        return row


@dataclass(frozen=True)
class Coverage:
    """Coverage of every target of a :class:`~tiap.targets.groups.TargetSets`.

    Attributes:
        queries: number of queries.
        targets: one :class:`TargetCoverage` per target, in order.
        unknown_evidence: query id -> evidence units that no stored item reaches.
        source_minus_raw: |∪ Source| - |∪ Raw| -> number of queries, over the queries with
            at least one evidence unit in the store.
        n_items, n_units, orphans: the store's size, its reached source units, and the
            items whose lineage is empty.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item
    >>> from tiap.targets import build_groups
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]}),
    ...            query_from_json({"query_id": "q2", "evidence": []})]
    >>> cov = coverage(build_groups(items, queries))
    >>> cov.queries, cov.n_items, cov.n_units
    (2, 3, 2)
    >>> [(tc.target, tc.defined, tc.credited_pairs) for tc in cov.targets]
    [('raw', 1, 2), ('source', 1, 3), ('canonical', 1, 1)]

    q1's Source set ``{m1, t1, t2}`` is one item larger than its Raw set ``{t1, t2}``:

    >>> dict(cov.source_minus_raw)
    {1: 1}
    """

    queries: int
    targets: tuple[TargetCoverage, ...]
    unknown_evidence: Mapping[str, tuple[str, ...]]
    source_minus_raw: Mapping[int, int]
    n_items: int
    n_units: int
    orphans: tuple[str, ...]

    def __getitem__(self, target: str) -> TargetCoverage:
        for tc in self.targets:
            if tc.target == target.lower():
                return tc
        raise KeyError(target)

    def to_json(self, *, max_listed: int = 1000) -> dict[str, Any]:
        """A JSON-serialisable summary; long id lists are cut to ``max_listed`` entries
        (the counts are always complete)."""
        n_smr = sum(self.source_minus_raw.values())
        total_smr = sum(k * v for k, v in self.source_minus_raw.items())
        bins = {"0": 0, "1": 0, "2+": 0}
        for k, v in self.source_minus_raw.items():
            bins["0" if k == 0 else "1" if k == 1 else "2+"] += v
        unknown_rows = [
            {"query_id": q, "units": list(u)} for q, u in self.unknown_evidence.items()
        ]
        return {
            "queries": self.queries,
            "store": {
                "items": self.n_items,
                "source_units": self.n_units,
                "orphan_items": len(self.orphans),
                "orphan_item_ids": list(self.orphans[:max_listed]),
            },
            "unknown_evidence": {
                "queries": len(self.unknown_evidence),
                "units": sum(len(u) for u in self.unknown_evidence.values()),
                "listed": unknown_rows[:max_listed],
                "truncated": len(unknown_rows) > max_listed,
            },
            "targets": [tc.to_json() for tc in self.targets],
            "source_minus_raw": {
                "queries": n_smr,
                "mean": total_smr / n_smr if n_smr else None,
                "histogram": {str(k): v for k, v in self.source_minus_raw.items()},
                "bins": bins,
            },
        }


def _target_coverage(tg: TargetGroups) -> TargetCoverage:
    sizes: Counter[int] = Counter()
    reasons: Counter[str] = Counter()
    defined = pairs = 0
    for qg in tg:
        if qg.groups:
            defined += 1
            pairs += len(qg.members)
            sizes.update(len(g) for g in qg.groups)
        elif qg.zero_target is not None:
            reasons[qg.zero_target.value] += 1
    n_groups = sum(sizes.values())
    return TargetCoverage(
        target=tg.name,
        spec=tg.target.spec,
        queries=len(tg),
        defined=defined,
        zero_target=len(tg) - defined,
        zero_target_by_reason=MappingProxyType(
            {z.value: reasons[z.value] for z in ZeroTarget if reasons[z.value]}
        ),
        groups=n_groups,
        multi_member_groups=sum(n for size, n in sizes.items() if size > 1),
        group_size_histogram=_histogram(sizes),
        credited_pairs=pairs,
    )


def coverage(sets: TargetSets) -> Coverage:
    """Summarise the coverage of every target in ``sets``.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item
    >>> from tiap.targets import build_groups
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]}),
    ...            query_from_json({"query_id": "q2", "evidence": []})]
    >>> cov = coverage(build_groups(items, queries, ["raw", "canonical"]))
    >>> cov["raw"].defined, cov["raw"].zero_target, cov["canonical"].credited_pairs
    (1, 1, 1)
    """
    return Coverage(
        queries=len(sets.query_ids),
        targets=tuple(_target_coverage(tg) for tg in sets),
        unknown_evidence=sets.unknown_evidence,
        source_minus_raw=_histogram(Counter(sets.source_minus_raw.values())),
        n_items=sets.n_items,
        n_units=sets.n_units,
        orphans=sets.orphans,
    )
