"""The per-query score model: :class:`Scores`, what a rescoring computes.

One table of per-query values per (system, target, measure), aligned with each system's
scored queries, with the bounds partial lineage leaves, the zero-target reasons, the target
sizes and what rescoring found per system (:class:`SystemReport`). Rescoring builds it
(:func:`tiap.scoring.rescore.rescore`), :mod:`tiap.scoring.folder` writes it to a folder and
reads the folder's files back (:meth:`Scores.from_folder` builds it from them), and Stage
III pools the per-system views it gives (:class:`SystemScores`, :meth:`Scores.system`) into
datasets (:mod:`tiap.sensitivity.load`).

Two words are kept apart: a query is *in a target's universe* when the target is not proven
empty for it (:meth:`Scores.in_universe`; its value may still be only bounded), and its value
is *determined* when the lineage fixes it to one number (not NaN in :attr:`Scores.values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problem, TiapError, require
from tiap.scoring import counts
from tiap.scoring.measures import Measure, parse_measure, parse_measures

if TYPE_CHECKING:  # pragma: no cover
    from tiap.scoring.folder import FolderParts
    from tiap.scoring.kernels import Credit
    from tiap.targets import TargetSets

_SAME = 1e-12  # bounds this close are one value (float noise of the two walks)
MAX_EXAMPLES = 20


@dataclass(frozen=True)
class SystemReport:
    """What rescoring one run found besides the scores (all counts, with a few examples)."""

    system: str
    store: str
    queries_in_run: int
    scored_queries: int
    not_in_queries_file: tuple[str, ...] = ()
    not_in_run: tuple[str, ...] = ()
    missing_policy: str = "skip"
    unknown_ranked_items: int = 0
    unknown_ranked_examples: tuple[tuple[str, str], ...] = ()
    queries_with_unknown_items: int = 0
    unknown_evidence_queries: int = 0
    unknown_evidence_examples: tuple[tuple[str, tuple[str, ...]], ...] = ()
    zero_target: Mapping[str, int] = field(default_factory=dict)
    #: per target, queries whose target the lineage may leave empty (not counted in
    #: ``zero_target``): the zero-target count lies in [zero, zero + possibly empty]
    possibly_empty: Mapping[str, int] = field(default_factory=dict)
    run_warnings: tuple[str, ...] = ()
    run_notes: tuple[str, ...] = ()
    universe: str = "queries file"  # where the scored queries come from ("qrels files")

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "store": self.store,
            "universe": self.universe,
            "queries_in_run": self.queries_in_run,
            "scored_queries": self.scored_queries,
            "queries_not_in_queries_file": {
                "count": len(self.not_in_queries_file),
                "examples": list(self.not_in_queries_file[:MAX_EXAMPLES]),
            },
            "queries_not_in_run": {
                "count": len(self.not_in_run),
                "policy": self.missing_policy,
                "examples": list(self.not_in_run[:MAX_EXAMPLES]),
            },
            "unknown_ranked_items": {
                "count": self.unknown_ranked_items,
                "queries": self.queries_with_unknown_items,
                "examples": [list(x) for x in self.unknown_ranked_examples],
            },
            "unknown_evidence": {
                "queries": self.unknown_evidence_queries,
                "examples": [[q, list(u)] for q, u in self.unknown_evidence_examples],
            },
            "zero_target_queries": dict(self.zero_target),
            "possibly_empty_queries": dict(self.possibly_empty),
            "run_warnings": list(self.run_warnings),
            "run_notes": list(self.run_notes),
        }

    def warnings(self) -> list[str]:
        """One sentence per finding a user should see (the rescoring's own, then the run
        reader's)."""
        return [f"{self.system}: {text}" for _, text in self.findings()] + [
            f"{self.system}: {w}" for w in self.run_warnings]

    def findings(self) -> list[tuple[str, str]]:
        """The rescoring's own counted findings as ``(code, sentence)``, codes registered in
        :data:`tiap.errors.CODES` (their counts are in :meth:`to_json`)."""
        out: list[tuple[str, str]] = []
        if self.not_in_queries_file:
            out.append(("query_not_judged",
                        f"{len(self.not_in_queries_file):,} ranked queries are not in the "
                        f"{self.universe} and were left out (e.g. "
                        f"{', '.join(self.not_in_queries_file[:3])})"))
        if self.not_in_run:
            what = "left out" if self.missing_policy == "skip" else "scored as empty rankings"
            out.append(("query_not_ranked",
                        f"{len(self.not_in_run):,} queries of the {self.universe} have no "
                        f"ranking in the run and were {what} (e.g. "
                        f"{', '.join(self.not_in_run[:3])})"))
        if self.unknown_ranked_items:
            ex = ", ".join(f"{q}: {i}" for q, i in self.unknown_ranked_examples[:3])
            out.append(("unknown_ranked_item",
                        f"{self.unknown_ranked_items:,} ranked ids in "
                        f"{self.queries_with_unknown_items:,} queries are not in the store "
                        f"{self.store} and earn nothing (e.g. {ex})"))
        if self.unknown_evidence_queries:
            q, u = self.unknown_evidence_examples[0]
            out.append(("unreachable_evidence",
                        f"{self.unknown_evidence_queries:,} queries name evidence units that "
                        f"no item of the store reaches (e.g. {q}: {', '.join(u[:3])})"))
        return out


class TargetLike(Protocol):
    """What a rescoring records about a target: its name and a JSON description."""

    @property
    def name(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...



@dataclass(frozen=True, eq=False)
class SystemScores:
    """One system's per-query values over a query universe: the view of a :class:`Scores`
    that Stage III works on (:meth:`Scores.system`), keyed by ``(target, measure)``.

    Every array is aligned with the universe the view was taken over (its own queries, or
    a dataset's pooled ones: :mod:`tiap.sensitivity.load`), NaN where the system did not
    score a query or its value is undefined.

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1"]}}, [{"query_id": "q1", "evidence": ["d1:1"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]}],
    ...                       targets=["raw"], measures="RR@5")
    >>> view = scores.system("A", ["q0", "q1"])
    >>> view.get("raw", scores.measures[0]).tolist()
    [nan, 1.0]
    >>> view.in_universe("raw", scores.measures).tolist()
    [False, True]
    """

    name: str
    source: Path
    values: Mapping[tuple[str, Measure], NDArray[np.float64]]  # (target, measure) -> values
    #: target -> (n_groups, n_members) per query (NaN where unknown); empty if not known
    sizes: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = field(
        default_factory=dict)
    #: what rescoring found for this system (:meth:`SystemReport.to_json`: unknown ids,
    #: missing queries, ...)
    report: Mapping[str, Any] = field(default_factory=dict)
    #: partial lineage: (target, measure) -> per-query bounds (equal to the value where it is
    #: determined, NaN where undefined), for the keys with some value only bounded
    lower: Mapping[tuple[str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    upper: Mapping[tuple[str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    #: (target 1, target 2, k) -> per query 0 or 1 where the items' shared lineage decides
    #: whether exactly one target credits something in the top k though each target's
    #: bounds leave it open (:meth:`Scores.flip_pair_rows`), -1 elsewhere
    flip_pairs: Mapping[tuple[str, str, int], NDArray[np.int8]] = field(default_factory=dict)
    #: target -> per query: does the value rest on lineage the import inferred; a target
    #: absent here has none
    inferred: Mapping[str, NDArray[np.bool_]] = field(default_factory=dict)

    def inferred_mask(self, target: str) -> NDArray[np.bool_] | None:
        """Queries whose value under ``target`` rests on inferred lineage (``None``: none)."""
        return self.inferred.get(target)

    def get(self, target: str, measure: Measure) -> NDArray[np.float64]:
        """Per-query values: NaN where undefined or only bounded (:meth:`interval`)."""
        return self.values[(target, measure)]

    def interval(self, target: str, measure: Measure,
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-query ``(lower, upper)``, NaN only where the query is undefined."""
        key = (target, measure)
        if key in self.lower:
            return self.lower[key], self.upper[key]
        return self.values[key], self.values[key]

    def in_universe(self, target: str, measures: Sequence[Measure]) -> NDArray[np.bool_]:
        """Queries in the universe of ``target`` (value determined or only bounded) for every
        measure."""
        mask = None
        for m in measures:
            ok = ~np.isnan(self.interval(target, m)[0])
            mask = ok if mask is None else mask & ok
        assert mask is not None
        return mask

    def determined(self, target: str, measures: Sequence[Measure]) -> NDArray[np.bool_]:
        """Queries whose value under ``target`` is determined (one number, not only bounded)
        for every measure; a subset of :meth:`in_universe`."""
        mask = None
        for m in measures:
            ok = ~np.isnan(self.values[(target, m)])
            mask = ok if mask is None else mask & ok
        assert mask is not None
        return mask


@dataclass(frozen=True, eq=False)
class Scores:
    """Per-query values of every (system, target, measure), aligned with ``query_ids``.

    What :func:`tiap.rescore` returns. Under Raw only the turn ``t1`` earns credit, so ``A``
    (``t1`` first) scores 1 and ``B`` (``t1`` second) 1/2; Canonical credits the fact
    ``m1`` instead, and the two systems swap:

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1", "m1"]}, "B": {"q1": ["m1", "t1"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
    ...                       measures=["RR@2"])
    >>> scores.systems, scores.target_names
    (('A', 'B'), ('raw', 'source', 'canonical'))
    >>> [float(scores.value(s, t, "RR@2")[0]) for t in ("raw", "canonical") for s in ("A", "B")]
    [1.0, 0.5, 0.5, 1.0]
    """

    systems: tuple[str, ...]
    targets: tuple[TargetLike, ...]
    measures: tuple[Measure, ...]
    credit: Credit
    query_ids: Mapping[str, tuple[str, ...]]  # system -> scored queries, queries-file order
    values: Mapping[tuple[str, str, Measure], NDArray[np.float64]]
    flips: Mapping[tuple[str, str, int], NDArray[np.float64]]  # (system, target, k) -> Success@k
    reports: Mapping[str, SystemReport]
    target_sets: Mapping[str, TargetSets] = field(default_factory=dict)  # store -> groups
    #: (system, target) -> {query id: why it is undefined}, in query order
    zero_reasons: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    #: the same queries' reason codes: no_evidence, unknown_evidence or no_members
    zero_codes: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    #: (system, target) -> (G, size of the union of the groups) per scored query (-1: not
    #: known; the queries of :attr:`undetermined` have none either)
    target_sizes: Mapping[tuple[str, str], tuple[NDArray[np.int64], NDArray[np.int64]]] = field(
        default_factory=dict)
    #: partial lineage: (system, target, measure) -> lower and upper bounds per query, for
    #: the keys with a value the lineage does not determine (``values`` is NaN there);
    #: a key absent here is exact wherever defined
    lower: Mapping[tuple[str, str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    upper: Mapping[tuple[str, str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    #: (system, target) -> queries in the universe whose target may yet be empty (no group
    #: certainly exists, some possibly does): kept, since nothing proves them zero-target
    possibly_empty: Mapping[tuple[str, str], NDArray[np.bool_]] = field(default_factory=dict)
    #: (system, target) -> {query id: why its groups are not determined}
    undetermined: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    #: ``cost.csv`` rows (:func:`tiap.scoring.cost.cost_rows`) and the tokenizer they count
    #: with (empty: not computed, and why in ``cost_note``)
    cost: tuple[Mapping[str, Any], ...] = ()
    tokenizer: Mapping[str, str] = field(default_factory=dict)
    cost_note: str = ""
    #: ``integrity.csv`` rows (:func:`integrity_rows`): what makes a value look better than
    #: it is, per system
    integrity: tuple[Mapping[str, Any], ...] = ()
    #: partial lineage: (system, target, k) -> bounds of the flips' Success@k per query, for
    #: the keys with a value the lineage does not determine (``flips`` is NaN there)
    flip_lower: Mapping[tuple[str, str, int], NDArray[np.float64]] = field(default_factory=dict)
    flip_upper: Mapping[tuple[str, str, int], NDArray[np.float64]] = field(default_factory=dict)
    #: partial lineage: (system, target 1, target 2, k) -> per query, whether something is
    #: credited in the top k under exactly one of the targets (0, 1 or
    #: :data:`tiap.scoring.counts.EITHER`), decided on the items' shared lineage
    #: (:func:`tiap.scoring.counts.joint_flip`) where each target's bounds leave it open
    flip_pairs: Mapping[tuple[str, str, str, int], NDArray[np.int8]] = field(
        default_factory=dict)
    #: (system, target) -> {query id: why}: the queries whose value (or bounds) rests on an
    #: item whose lineage the import inferred rather than proved (``Item.inferred``)
    inferred: Mapping[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    #: the k of the whole ranking's hit (:func:`hit_cutoff` ``None``): the longest ranking
    #: scored, so that its Success@k is the hit anywhere in the ranking
    whole_k: int = 1
    #: the queries scored against (their ids, categories, collections: ``queries.csv``)
    queries: tuple[Any, ...] = ()

    @property
    def target_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    def to_frame(self) -> Any:
        """The per-query table as a pandas DataFrame, one row per (system, target, query,
        measure): ``value`` (NaN where undefined or only bounded) and its ``lower`` and
        ``upper`` bounds (equal to ``value`` where the lineage determines it, NaN where the
        query is out of the target's universe). Needs pandas.

        >>> import tiap
        >>> scores = tiap.rescore({"A": {"q1": ["t1"]}}, [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]}],
        ...                       targets=["raw"], measures="RR@5")
        >>> scores.to_frame()[["system", "query_id", "value", "lower", "upper"]].values.tolist()
        [['A', 'q1', 1.0, 1.0, 1.0]]
        """

        pd = require("pandas", "frames")
        cols: dict[str, list[Any]] = {c: [] for c in (
            "system", "target", "query_id", "measure", "value", "lower", "upper")}
        for s in self.systems:
            qids = list(self.query_ids[s])
            for t in self.target_names:
                for m in self.measures:
                    lo, hi = self.interval(s, t, m)
                    n = len(qids)
                    cols["system"].append(np.full(n, s, object))
                    cols["target"].append(np.full(n, t, object))
                    cols["query_id"].append(np.array(qids, object))
                    cols["measure"].append(np.full(n, str(m), object))
                    cols["value"].append(self.values[(s, t, m)])
                    cols["lower"].append(lo)
                    cols["upper"].append(hi)
        return pd.DataFrame({c: (np.concatenate(v) if v else np.zeros(0)) for c, v in cols.items()})

    @property
    def summary(self) -> Any:
        """:meth:`summary_rows` as a pandas DataFrame (``summary.csv``'s columns). Needs
        pandas."""

        pd = require("pandas", "frames")
        from tiap.scoring.folder import SUMMARY_COLUMNS

        return pd.DataFrame(self.summary_rows(), columns=list(SUMMARY_COLUMNS))

    def to_folder(self, path: str | Path, **options: Any) -> dict[str, Any]:
        """Write the rescore folder (:func:`tiap.scoring.folder.write_rescore`, which takes
        ``options``; ``queries.csv`` lists :attr:`queries` unless ``queries`` is given);
        returns its manifest. :meth:`from_folder` reads it back.

        >>> import tempfile, tiap
        >>> scores = tiap.rescore({"A": {"q1": ["t1"]}}, [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]}],
        ...                       targets=["raw"], measures="RR@5")
        >>> folder = tempfile.mkdtemp() + "/rescore"
        >>> scores.to_folder(folder)["outputs"][:2]
        ['per_query.csv', 'summary.csv']
        >>> tiap.Scores.from_folder(folder).value("A", "raw", "RR@5").tolist()
        [1.0]
        """
        from tiap.scoring.folder import write_rescore

        options.setdefault("queries", self.queries)
        return write_rescore(self, path, **options)

    @classmethod
    def from_folder(cls, path: str | Path) -> Scores:
        """The :class:`Scores` a rescore folder holds (written by :meth:`to_folder` or
        ``tiap rescore``), every file checked as Stage III checks it
        (:func:`tiap.scoring.folder.read_parts`, then :meth:`from_parts`)."""
        from tiap.scoring.folder import read_parts

        return cls.from_parts(read_parts(path))

    @classmethod
    def from_parts(cls, parts: FolderParts) -> Scores:
        """The :class:`Scores` of a rescore folder's files as
        :func:`tiap.scoring.folder.read_parts` read them.

        The folder holds each per-query table, so the values, bounds, target sizes,
        zero-target and undetermined reasons, inferred queries and the manifest's reports
        come back as written. It holds no Success@k of its own: the hits the pairwise table
        compares are read from the measures, as Stage III reads them (:func:`hit_measure`:
        ``Success@k``, or a measure at cutoff ``k`` that is > 0 exactly when something is
        credited), so :meth:`pairwise_rows` needs such a measure at each ``hit_k`` and at
        rank 1 (the default measures have them); without one its hit counts are empty.
        """
        man = parts.manifest
        raw_values, decided_pairs = parts.values, parts.flip_pairs
        opts = man.get("options") or {}
        targets = tuple(SavedTarget(str(t.get("name")), t)
                        for t in (opts.get("targets") or ()))
        names = [t.name for t in targets] or list(dict.fromkeys(k[1] for k in raw_values))
        if not targets:
            targets = tuple(SavedTarget(n, {"name": n}) for n in names)
        measure_names = [str(m) for m in opts.get("measures") or ()] or sorted(
            {k[2] for k in raw_values})
        measures = tuple(parse_measure(m) for m in measure_names)
        systems = tuple(parts.order)
        query_ids = {s: tuple(parts.order[s]) for s in systems}
        values = {(s, t, m): raw_values[(s, t, str(m))] for s in systems for t in names
                  for m in measures if (s, t, str(m)) in raw_values}
        lower = {(s, t, parse_measure(m)): lo for (s, t, m), (lo, _) in parts.bounds.items()}
        upper = {(s, t, parse_measure(m)): hi for (s, t, m), (_, hi) in parts.bounds.items()}
        sizes = {}
        for key, (g, mem) in parts.sizes.items():  # not known (NaN): -1
            sizes[key] = (np.where(np.isnan(g), -1, g).astype(np.int64),
                          np.where(np.isnan(mem), -1, mem).astype(np.int64))
        # the hits of the pairwise table, read from the measures (see the docstring)
        cuts = {k for k in (hit_cutoff(m, measures) for m in measures) if k is not None}
        whole_k = next((k for (_, _, _, k) in decided_pairs if k not in cuts and k != 1), 0)
        wanted = {1: top1_measure(measures), **{k: hit_measure(k, measures) for k in cuts}}
        if any(hit_cutoff(m, measures) is None for m in measures):
            wanted[whole_k] = hit_measure(None, measures)
        flips: dict[tuple[str, str, int], NDArray[np.float64]] = {}
        flip_lower: dict[tuple[str, str, int], NDArray[np.float64]] = {}
        flip_upper: dict[tuple[str, str, int], NDArray[np.float64]] = {}
        for k, hm in wanted.items():
            if hm is None:
                continue
            test = hit_test(hm, one=(k == 1 and hm.cutoff != 1))
            for s in systems:
                for t in names:
                    v = values.get((s, t, hm))
                    if v is None:
                        continue
                    flips[(s, t, k)] = np.where(np.isnan(v), np.nan, test(v).astype(np.float64))
                    if (s, t, hm) in lower:
                        lo, hi = lower[(s, t, hm)], upper[(s, t, hm)]
                        flip_lower[(s, t, k)] = np.where(np.isnan(lo), np.nan,
                                                         test(lo).astype(np.float64))
                        flip_upper[(s, t, k)] = np.where(np.isnan(hi), np.nan,
                                                         test(hi).astype(np.float64))
        scores = cls(
            systems=systems, targets=targets, measures=measures,
            credit=str(opts.get("credit") or "group"),  # type: ignore[arg-type]
            query_ids=query_ids, values=values, flips=flips,
            reports={s: SavedReport(s, (man.get("systems") or {}).get(s) or {})
                     for s in systems},  # type: ignore[misc]
            zero_reasons=parts.zero_reasons, zero_codes=parts.zero_codes, target_sizes=sizes,
            lower=lower, upper=upper, possibly_empty=parts.possibly_empty,
            undetermined=parts.undetermined, cost=parts.cost,
            tokenizer=dict(((opts.get("cost") or {}).get("tokenizer")) or {}),
            cost_note=str((opts.get("cost") or {}).get("note") or ""),
            integrity=tuple(man.get("integrity") or ()),
            flip_lower=flip_lower, flip_upper=flip_upper, inferred=parts.inferred,
            whole_k=whole_k,
            queries=tuple(_SavedQuery(q, c, col, ab) for q, c, col, ab in parts.queries),
        )
        joint: dict[tuple[str, str, str, int], NDArray[np.int8]] = {}
        for (s, t1, t2, k), decided in decided_pairs.items():  # the rows flip_pairs.csv decides
            if (s, t1, k) not in flips or (s, t2, k) not in flips:
                continue  # no measure reads the hit at k: nothing to decide
            l1, h1 = scores.flip_interval(s, t1, k)
            l2, h2 = scores.flip_interval(s, t2, k)
            state = counts.differ(counts.truth(l1, h1, is_hit), counts.truth(l2, h2, is_hit))
            use = decided >= 0
            state[use] = decided[use]
            joint[(s, t1, t2, k)] = state
        object.__setattr__(scores, "flip_pairs", joint)
        return scores

    def value(self, system: str, target: str, measure: str | Measure) -> NDArray[np.float64]:
        """Per-query values: NaN where undefined *or* not determined by the lineage (see
        :meth:`interval`)."""
        m = parse_measures(measure)[0]
        return self.values[(system, target, m)]

    def interval(self, system: str, target: str, measure: str | Measure,
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-query ``(lower, upper)``: equal to the value where it is determined, NaN only
        where the query is undefined (a zero-target case)."""
        m = parse_measures(measure)[0]
        key = (system, target, m)
        if key in self.lower:
            return self.lower[key], self.upper[key]
        return self.values[key], self.values[key]

    def flip_interval(self, system: str, target: str, k: int,
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-query ``(lower, upper)`` of Success@k, the hit the flips compare."""
        key = (system, target, k)
        if key in self.flip_lower:
            return self.flip_lower[key], self.flip_upper[key]
        return self.flips[key], self.flips[key]

    @property
    def bounded(self) -> bool:
        """Whether some value is an interval (partial lineage)."""
        return bool(self.lower) or bool(self.flip_lower)

    def in_universe(self, system: str, target: str) -> NDArray[np.bool_]:
        """Queries in the target's universe (not proven zero-target; the value may be only
        bounded: it is *determined* where :attr:`values` is not NaN)."""
        return ~np.isnan(self.interval(system, target, self.measures[0])[0])

    def shared_mask(self, system: str) -> NDArray[np.bool_]:
        """Queries of ``system`` in the universe of every target."""
        mask = np.ones(len(self.query_ids[system]), dtype=bool)
        for t in self.target_names:
            mask &= self.in_universe(system, t)
        return mask

    def system(self, name: str, universe: Sequence[str] | None = None, *,
               targets: Sequence[str] | None = None, measures: Sequence[Measure] | None = None,
               source: str | Path = "<scores>") -> SystemScores:
        """The per-query values of system ``name`` as a :class:`SystemScores`, aligned with
        ``universe`` (default: the system's own scored queries; a query of the system that
        is not in it is an error), NaN where the system scored no query. ``targets`` and
        ``measures`` (default: all) choose the keys; a key the rescoring holds no values for
        is NaN throughout. ``source`` names where the scores came from (a rescore folder).

        Bounds are kept for the keys with some value only bounded; target sizes are NaN
        where the lineage does not determine them; the hit flips the items' shared lineage
        decides are :meth:`flip_pair_rows`'s.

        >>> import tiap
        >>> scores = tiap.rescore({"A": {"q1": ["t1"]}},
        ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]}],
        ...                       targets=["raw"], measures="RR@5")
        >>> view = scores.system("A")
        >>> view.name, view.get("raw", scores.measures[0]).tolist()
        ('A', [1.0])
        >>> scores.system("A", ["q2"])
        Traceback (most recent call last):
        ...
        ValueError: system 'A' scored queries not in the universe (e.g. q1)
        """
        local = self.query_ids[name]
        order = tuple(local) if universe is None else tuple(universe)
        index = {q: i for i, q in enumerate(order)}
        missing = [q for q in local if q not in index]
        if missing:
            raise ValueError(f"system {name!r} scored queries not in the universe "
                             f"(e.g. {', '.join(missing[:3])})")
        pos = np.fromiter((index[q] for q in local), np.int64, len(local))
        n = len(order)

        def spread(arr: NDArray[Any], fill: Any = np.nan, dtype: Any = np.float64,
                   ) -> NDArray[Any]:
            out = np.full(n, fill, dtype)
            out[pos] = arr
            return out

        ts = self.target_names if targets is None else tuple(targets)
        ms = self.measures if measures is None else tuple(measures)
        values: dict[tuple[str, Measure], NDArray[np.float64]] = {}
        lower: dict[tuple[str, Measure], NDArray[np.float64]] = {}
        upper: dict[tuple[str, Measure], NDArray[np.float64]] = {}
        for t in ts:
            for m in ms:
                v = self.values.get((name, t, m))
                values[(t, m)] = np.full(n, np.nan) if v is None else spread(v)
                lo = self.lower.get((name, t, m))
                if v is not None and lo is not None and (np.isnan(v) & ~np.isnan(lo)).any():
                    lower[(t, m)] = spread(lo)
                    upper[(t, m)] = spread(self.upper[(name, t, m)])
        sizes: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
        local_index = {q: i for i, q in enumerate(local)}
        for t in ts:
            got = self.target_sizes.get((name, t))
            if got is None:
                continue
            g, mem = got
            gf, mf = g.astype(np.float64), mem.astype(np.float64)
            gf[g < 0] = np.nan  # not known (a folder's empty n_groups)
            mf[mem < 0] = np.nan
            rows = [local_index[q] for q in self.undetermined.get((name, t), {})]
            gf[rows] = mf[rows] = np.nan
            sizes[t] = (spread(gf), spread(mf))
        pairs: dict[tuple[str, str, int], NDArray[np.int8]] = {}
        for s, t1, t2, k, q, flip in self.flip_pair_rows():
            if s == name and t1 in ts and t2 in ts:
                pairs.setdefault((t1, t2, k), np.full(n, -1, np.int8))[index[q]] = flip
        inferred = {t: spread(self.inferred_mask(name, t), False, bool) for t in ts
                    if self.inferred.get((name, t))}
        return SystemScores(name, Path(source), values, sizes, self.reports[name].to_json(),
                            lower, upper, pairs, inferred)

    def zero_target_rows(self) -> Iterable[tuple[str, str, str, str, str]]:
        """``(system, target, query_id, reason, detail)`` for every undefined (query,
        target): ``reason`` is ``no_evidence``, ``unknown_evidence`` or ``no_members``,
        ``detail`` a sentence naming the units (or the qrels file) concerned."""
        for s in self.systems:
            for t in self.target_names:
                codes = self.zero_codes.get((s, t), {})
                for q, detail in self.zero_reasons.get((s, t), {}).items():
                    yield s, t, q, codes.get(q, ""), detail

    def undetermined_rows(self) -> Iterable[tuple[str, str, str, bool, str]]:
        """``(system, target, query_id, possibly_empty, reason)`` for every (query, target)
        whose groups the lineage does not determine."""
        for s in self.systems:
            index = {q: i for i, q in enumerate(self.query_ids[s])}
            for t in self.target_names:
                maybe_empty = self.possibly_empty.get((s, t))
                for q, reason in self.undetermined.get((s, t), {}).items():
                    empty = bool(maybe_empty[index[q]]) if maybe_empty is not None else False
                    yield s, t, q, empty, reason

    def target_size_rows(self) -> Iterable[tuple[str, str, str, int | None, int | None]]:
        """``(system, target, query_id, n_groups, n_members)`` for every scored query (both
        ``None`` where the lineage does not determine them)."""
        for s in self.systems:
            for t in self.target_names:
                groups, members = self.target_sizes[(s, t)]
                g, mem = groups.tolist(), members.tolist()
                und = self.undetermined.get((s, t), {})
                for i, q in enumerate(self.query_ids[s]):
                    if q in und or g[i] < 0:  # not determined, or not known (read back)
                        yield s, t, q, None, None
                    else:
                        yield s, t, q, g[i], mem[i] if mem[i] >= 0 else None

    def per_query_rows(self) -> Iterable[tuple[str, str, str, str, float | None]]:
        """``(system, target, query_id, measure, value)``; ``value`` is ``None`` where
        undefined or not determined (:meth:`interval_rows` has the bounds)."""
        for s in self.systems:
            qids = self.query_ids[s]
            for t in self.target_names:
                for m in self.measures:
                    name = str(m)
                    for q, v in zip(qids, self.values[(s, t, m)].tolist(), strict=True):
                        yield s, t, q, name, (None if v != v else v)

    def interval_rows(self) -> Iterable[tuple[str, str, str, str, float, float]]:
        """``(system, target, query_id, measure, lower, upper)`` for every value the lineage
        bounds without determining it."""
        for (s, t, m), lo in self.lower.items():
            hi, v = self.upper[(s, t, m)], self.values[(s, t, m)]
            open_ = np.flatnonzero(np.isnan(v) & ~np.isnan(lo))
            qids = self.query_ids[s]
            for i in open_.tolist():
                yield s, t, qids[i], str(m), float(lo[i]), float(hi[i])

    def inferred_mask(self, system: str, target: str) -> NDArray[np.bool_]:
        """Queries of ``system`` whose value under ``target`` rests on inferred lineage."""
        why = self.inferred.get((system, target), {})
        return np.fromiter((q in why for q in self.query_ids[system]), bool,
                           len(self.query_ids[system]))

    def inferred_rows(self) -> Iterable[tuple[str, str, str, str]]:
        """``(system, target, query_id, reason)`` for every value that rests on inferred
        lineage."""
        for s in self.systems:
            for t in self.target_names:
                for q, why in self.inferred.get((s, t), {}).items():
                    yield s, t, q, why

    def check_shared(self) -> None:
        """Every system has a query in the universe of every target, so that means over the
        shared queries (``summary_rows(shared=True)``, ``--shared``) hold a value: else an
        error naming the targets that hold no query (code ``invalid-value``)."""
        problems = []
        for s in self.systems:
            if self.shared_mask(s).any():
                continue
            empty = [t for t in self.target_names if not self.in_universe(s, t).any()]
            why = (f"target(s) {', '.join(map(repr, empty))} define no query" if empty
                   else "no query is defined under every target")
            problems.append(Problem(f"--shared: system {s!r} has no query defined under every "
                                    f"target ({why}); drop --shared or those targets",
                                    code="invalid-value"))
        if problems:
            raise TiapError(problems=problems, code="invalid-value")

    def summary_rows(self, *, shared: bool = False) -> list[dict[str, Any]]:
        """``system, target, measure, n, n_exact, n_possibly_empty, mean, lower, upper,
        n_inferred``: the mean over the defined queries (with ``shared``: over the queries
        defined under every target); where some value is only bounded, ``mean`` is empty and
        ``[lower, upper]`` holds the mean under every consistent lineage. ``n_exact`` counts
        the values the lineage determines; ``n_inferred`` those that rest on lineage the
        import inferred (:attr:`inferred`; a single value, or bounds, that hold only if the
        inference is right), never counted as exact."""
        rows = []
        for s in self.systems:
            mask = self.shared_mask(s) if shared else None
            for t in self.target_names:
                pe = self.possibly_empty.get((s, t))
                inf = self.inferred_mask(s, t) if (s, t) in self.inferred else None
                for m in self.measures:
                    lo, hi = self.interval(s, t, m)
                    sel = mask if mask is not None else ~np.isnan(lo)
                    n = int(sel.sum())
                    point = ~np.isnan(self.values[(s, t, m)]) & sel
                    n_point = int(point.sum())
                    n_inferred = int((inf & sel).sum()) if inf is not None else 0
                    n_exact = int((point & ~inf).sum()) if inf is not None else n_point
                    mean_lo = float(lo[sel].mean()) if n else None
                    mean_hi = float(hi[sel].mean()) if n else None
                    rows.append({
                        "system": s, "target": t, "measure": str(m), "n": n,
                        "n_exact": n_exact,
                        "n_possibly_empty": int(pe[sel].sum()) if pe is not None else 0,
                        "mean": mean_lo if n and n_point == n else None,
                        "lower": mean_lo, "upper": mean_hi,
                        "n_inferred": n_inferred,
                    })
        return rows

    def pairwise_columns(self) -> tuple[str, ...]:
        """The columns of :meth:`pairwise_rows` as ``pairwise.csv`` writes them:
        :data:`PAIRWISE_COLUMNS`, then :data:`PAIRWISE_BOUND_COLUMNS` (always, so that one
        schema serves every lineage; equal to the plain column where it is exact)."""
        return PAIRWISE_COLUMNS + PAIRWISE_BOUND_COLUMNS

    def pairwise_rows(self) -> list[dict[str, Any]]:
        """Per system, measure and pair of targets: how the per-query values change.

        Over the ``n_shared`` queries in the universe of both targets. Every count and rate
        (:mod:`tiap.scoring.counts`) is exact where the lineage decides it, else its plain
        column is empty and ``<column>_lower`` / ``<column>_upper`` hold its bounds over
        every consistent lineage (``changed_max`` is ``changed_upper``); the mean change is
        ``[mean_delta_lower, mean_delta_upper]``, ``mean_delta`` empty unless every query is
        determined. ``n_undetermined`` counts the queries with a value only bounded.
        """
        rows = []
        for s in self.systems:
            for m in self.measures:
                k = hit_cutoff(m, self.measures)
                fk = k if k is not None else self.whole_k  # the key of the hit's flips
                for t1, t2 in combinations(self.target_names, 2):
                    (lo1, hi1), (lo2, hi2) = self.interval(s, t1, m), self.interval(s, t2, m)
                    hits = self.flip_state(s, t1, t2, fk)
                    # a hit measure changes exactly when its hit flips: where the items'
                    # shared lineage decides the flip, it decides the change too
                    binary = (m.family == "Success" and m.cutoff == k and not m.params
                              and (s, t1, t2, fk) in self.flip_pairs)
                    c = counts.change_counts(lo1, hi1, lo2, hi2, hits,
                                             self.flip_state(s, t1, t2, 1), binary=binary)
                    n = c["n_shared"]
                    row = {
                        "system": s, "measure": str(m), "target_1": t1, "target_2": t2,
                        "n_shared": n, "n_undetermined": c["n_undetermined"],
                        **_pick(c, "changed"), "changed_max": c["changed_upper"],
                        **_pick(c, "changed_fraction"),
                        "mean_delta": c["mean_delta"],
                        "mean_delta_lower": c["mean_delta_lower"],
                        "mean_delta_upper": c["mean_delta_upper"],
                        **_pick(c, "mean_abs_delta"), **_pick(c, "n_abs_delta_ge_0.1"),
                        "hit_k": k if k else "all",
                        **_pick(c, "hit_flips"), **_pick(c, "top1_flips"),
                    }
                    rows.append(row)
        return rows

    def flip_pair_rows(self) -> Iterable[tuple[str, str, str, int, str, int]]:
        """``(system, target_1, target_2, k, query_id, flip)`` for every query whose flip at
        ``k`` (something credited in the top ``k`` under exactly one of the targets) the
        items' shared lineage decides though each target's bounds leave it open
        (:func:`tiap.scoring.counts.joint_flip`); ``flip`` is 0 or 1."""
        for (s, t1, t2, k), joint in self.flip_pairs.items():
            l1, h1 = self.flip_interval(s, t1, k)
            l2, h2 = self.flip_interval(s, t2, k)
            apart = counts.differ(counts.truth(l1, h1, is_hit), counts.truth(l2, h2, is_hit))
            defined = ~np.isnan(l1) & ~np.isnan(l2)
            qids = self.query_ids[s]
            for i in np.flatnonzero(defined & (apart == counts.EITHER)
                                    & (joint != counts.EITHER)).tolist():
                yield s, t1, t2, k, qids[i], int(joint[i])

    def flip_state(self, system: str, t1: str, t2: str, k: int) -> NDArray[np.int8]:
        """Per query: is something credited in the top ``k`` under exactly one of the
        targets: 0, 1, or :data:`~tiap.scoring.counts.EITHER` where the lineage leaves it
        open (decided on the two targets' bounds, and, for two turn targets of partial
        lineage, on the items' shared lineage: :attr:`flip_pairs`). Meaningless where a
        query is undefined under either target."""
        joint = self.flip_pairs.get((system, t1, t2, k))
        if joint is not None:
            return joint
        l1, h1 = self.flip_interval(system, t1, k)
        l2, h2 = self.flip_interval(system, t2, k)
        return counts.differ(counts.truth(l1, h1, is_hit), counts.truth(l2, h2, is_hit))


def _pick(cells: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A count's three cells (``name``, ``name_lower``, ``name_upper``) of ``cells``."""
    return {k: cells[k] for k in (name, f"{name}_lower", f"{name}_upper")}


def is_hit(v: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether a Success value says something is credited."""
    return v > 0.5


PAIRWISE_COLUMNS = (
    "system", "measure", "target_1", "target_2", "n_shared", "n_undetermined", "changed",
    "changed_max", "changed_fraction", "mean_delta", "mean_delta_lower", "mean_delta_upper",
    "mean_abs_delta", "n_abs_delta_ge_0.1", "hit_k", "hit_flips", "top1_flips",
)
#: Appended to :data:`PAIRWISE_COLUMNS`: the bounds of every count and rate (equal to the
#: plain column where it is exact).
PAIRWISE_BOUND_COLUMNS = counts.bound_columns(
    ("changed", "changed_fraction", "mean_abs_delta", "n_abs_delta_ge_0.1", "hit_flips",
     "top1_flips"))


def hit_cutoff(m: Measure, measures: Sequence[Measure]) -> int | None:
    """The k of the hit (something credited in the top k) reported next to ``m``: its own
    cutoff, else the largest cutoff among the measures, else ``None``: the whole ranking (as
    cut by the rescoring's depth). Rescoring's ``pairwise.csv`` and Stage III's change table
    both take their ``hit_k`` from here."""
    if m.cutoff:
        return m.cutoff
    cuts = [x.cutoff for x in measures if x.cutoff]
    return max(cuts) if cuts else None


def hit_test(m: Measure, one: bool = False) -> Any:
    """Whether a value of ``m`` says something is credited (at rank 1 with ``one``)."""
    if m.family == "Success" or (m.family == "P" and m.cutoff == 1):
        return lambda v: v > 0.5
    if one and m.family == "RR":
        return lambda v: v >= 1 - 1e-12
    return lambda v: v > 0


def hit_measure(k: int | None, measures: Sequence[Measure]) -> Measure | None:
    """The measure a hit at ``k`` (``None``: the whole ranking) is read from:
    ``Success@k``, else a measure at cutoff ``k`` that is > 0 exactly when something is
    credited in the top ``k`` (``None``: none is)."""
    by_name = {str(m): m for m in measures}
    want = f"Success@{k}" if k else "Success"
    if want in by_name:
        return by_name[want]
    return next((m for m in measures
                 if m.cutoff == k and m.family in ("nDCG", "R", "RR", "P", "Success")), None)


def top1_measure(measures: Sequence[Measure]) -> Measure | None:
    """The measure the top-1 hit is read from (``Success@1``, ``P@1``, ``RR``, else
    ``nDCG@1`` or ``R@1``; ``None``: none is)."""
    for m in measures:
        if (m.family in ("Success", "P") and m.cutoff == 1) or m.family == "RR":
            return m
    return next((m for m in measures if m.family in ("nDCG", "R") and m.cutoff == 1), None)


@dataclass(frozen=True)
class SavedTarget:
    """A target as a rescore folder's manifest records it (its name and JSON description)."""

    name: str
    spec: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.spec)


@dataclass(frozen=True)
class SavedReport:
    """What rescoring found for one system, as the folder's manifest records it."""

    system: str
    json: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.json)


@dataclass(frozen=True)
class _SavedQuery:
    """A row of a rescore folder's ``queries.csv``."""

    query_id: str
    category: str
    collection_id: str
    abstention: bool
