"""Graded targets: how much of a relaxed target's gain survives semantic checking.

The paper's targets are binary: every member of a Source or Canonical group earns full
credit (its section 7 names this as a limitation). Audit labels grade them instead: a
member of target ``T`` gets the relevance

- ``2`` when it is a member of the Raw target (the benchmark's own evidence turn);
- its label's grade when judged: ``supports`` = 2, ``partial`` = 1, ``does_not_support`` =
  0 (:data:`tiap.audit.labels.GRADES`). Labels are keyed by (store, query, item): an item is
  ``(store, item_id)`` (:class:`tiap.ids.ItemKey`), and each run's members are graded only
  with labels of its own store, since two stores reuse item ids for different texts.
  Several labels of the same (store, query, item) (several judges, or the Source and
  Canonical cases of one item) are combined by majority vote with the agreement report's
  tie rule (default ``conservative``: the least support);
- for an unjudged derived member, by policy: ``keep`` (2: trust lineage, the binary
  assumption; the default, since audits judge only the first contested credit of a case),
  ``partial`` (1) or ``drop`` (0).

Members of relevance 0 leave the target. Three nDCG@k values are computed per query, all
under **set credit** (trec_eval semantics, :func:`tiap.scoring.score`), so that Raw, the
binary target and its graded version are on one scale:

- ``binary``: ``T`` as it is (every member relevance 1);
- ``graded``: graded nDCG with linear gains, ``Σ rel_i / log2(i+1)`` over the ideal DCG of
  the graded set (trec_eval's ``ndcg_cut`` on graded qrels), computed by the scoring
  kernel from ``{item: relevance}`` groups (:func:`tiap.scoring.encode.encode_targets`). A query
  whose members are all rejected is undefined (NaN) under it;
- ``retained``: the same gains scaled to [0, 1] (``rel_i / 2``) over the *binary* ideal:
  ``Σ (rel_i / 2) / log2(i+1) / IDCG_binary``. It equals ``binary`` when every label is
  ``supports`` and can only fall below it: the share of the binary credit that the labels
  keep, with the ideal held fixed.

The summary compares, over the queries defined under Raw and ``T``, the mean gain of the
binary target over Raw with the gain that remains: ``survival = (retained - raw) / (binary
- raw)``.

Graded qrels are written per store and target (``qrels/<store>.<target>.graded.qrels``):
the same query and item id mean different texts in two stores, so a run must be scored
against its own store's qrels only; ``manifest.json`` says which systems use which store.

**Composed support** (:func:`composed_support`). nDCG credits items one at a time; these
measures ask whether the top ``k`` *together* support the answer, one evidence unit at a
time. Under a target ``T`` a query has one group per evidence unit (``QueryGroups.units``,
``.groups``; units with no member under ``T`` have no group and are not counted, as in
``Rall@k``). A member ``i`` of unit ``u``'s group has the support grade ``g(i)``: 1 when
``i`` is a Raw member (the evidence turn supports its unit by definition); its combined
label's grade / 2 when judged (``supports`` 1, ``partial`` 0.5, ``does_not_support`` 0);
for an unjudged derived member, by the support policy: ``unknown`` (the default) leaves it
open, ``keep`` 1, ``partial`` 0.5, ``drop`` 0. With ``top`` the first ``k`` items of the
ranking and ``G`` the groups:

- ``Coverage@k = |{u : some i in G_u ∩ top has g(i) = 1}| / |G|``;
- ``GradedCoverage@k = mean over u of max {g(i) : i in G_u ∩ top}`` (0 when none);
- ``Sufficient@k = 1`` when ``Coverage@k = 1`` (every unit supported by the union of the
  top ``k``), else 0.

Each is reported as ``[lower, upper]``: ``lower`` with every open grade 0, ``upper`` with
every open grade 1. Both bounds are attained (an open grade is one unknown label), so the
interval is tight; it is a point exactly when no open grade can change the value (the
query is *exact*). A chosen policy (``keep``, ``partial``, ``drop``) leaves no grade open:
every value is exact under that assumption, which the manifest records. A query that is a
zero-target case under ``T`` has no value; one whose groups partial lineage leaves open
(under ``T`` or Raw) has none either, and is counted apart.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tiap.audit.agreement import TieRule, majority_vote
from tiap.audit.labels import GRADES, SEMANTIC_LABELS, LabelRecord, select_judges
from tiap.errors import Problem, Problems, TiapError
from tiap.ids import Vocabulary
from tiap.io import output_folder, sha256_file
from tiap.provenance import Manifest, input_entry
from tiap.scoring import RankingIndex
from tiap.scoring.encode import encode_rankings, encode_targets
from tiap.scoring.measures import parse_measures

__all__ = [
    "SUPPORT_MEASURES",
    "SUPPORT_POLICIES",
    "GradedResult",
    "Relevance",
    "RelevanceKey",
    "SupportBounds",
    "composed_support",
    "graded_rescore",
    "item_relevance",
    "qrels_name",
    "retained_ndcg",
    "write_graded",
]

Unjudged = Literal["keep", "partial", "drop"]
UNJUDGED: Mapping[str, int] = {"keep": 2, "partial": 1, "drop": 0}
#: The unjudged policies of the composed-support measures: ``unknown`` bounds them.
SupportPolicy = Literal["unknown", "keep", "partial", "drop"]
SUPPORT_POLICIES: tuple[str, ...] = ("unknown", "keep", "partial", "drop")
#: The support grade of an unjudged derived member under each policy (None: open).
SUPPORT_UNJUDGED: Mapping[str, float | None] = {"unknown": None, "keep": 1.0, "partial": 0.5,
                                                "drop": 0.0}
#: The composed-support measures, in output order (the cutoff is appended: ``Coverage@20``).
SUPPORT_MEASURES: tuple[str, ...] = ("Coverage", "GradedCoverage", "Sufficient")
_CODE = {lab: i for i, lab in enumerate(SEMANTIC_LABELS)}
#: (store, query_id, item_id): what one graded relevance is about.
RelevanceKey = tuple[str, str, str]
_EXAMPLES = 5  # located examples kept per counted warning


def qrels_name(store: str, target: str) -> str:
    """The graded qrels file of one store and target: ``<store>.<target>.graded.qrels``."""
    return f"{store}.{target}.graded.qrels"


class Relevance(dict[RelevanceKey, int]):
    """:func:`item_relevance`'s ``(store, query_id, item_id) -> grade``, with ``origins``:
    the file and line of each key's first label (for located messages)."""

    def __init__(self, grades: Mapping[RelevanceKey, int] = {},
                 origins: Mapping[RelevanceKey, tuple[str, int]] = {}) -> None:
        super().__init__(grades)
        self.origins: dict[RelevanceKey, tuple[str, int]] = dict(origins)


def item_relevance(labels: Iterable[LabelRecord], *, tie_rule: TieRule = "conservative",
                   judges: Sequence[str] | None = None,
                   grades: Mapping[str, int] = GRADES,
                   stores: Collection[str] | None = None) -> Relevance:
    """``(store, query_id, item_id) -> grade`` from scored labels (majority vote per key).

    The labels are checked first (:func:`tiap.audit.labels.select_judges`): no label, a
    judge of ``judges`` that no label names, or a judge whose every label is unscored is
    an error naming the files and the judges they hold, never a survival computed from no
    label.

    Args:
        judges: the judges whose labels grade (default: every judge of ``labels``).
        stores: the names of the stores the labels will grade. A label without a store (a
            file written before stores were named) is taken to be of the only store when
            there is exactly one; otherwise it is ambiguous (its item id may name different
            texts in different stores) and is an error naming its file, line and case.

    Example: two judges on the item ``m1`` of query ``q1`` in store ``s1``; they split
    between supports (2) and partial (1), and the conservative tie rule takes the least
    support. The item ``m2`` has one label, does_not_support (0).

    >>> labels = [LabelRecord("A:q1:canonical", "a", "supports", store="s1", query_id="q1",
    ...                       item_id="m1"),
    ...           LabelRecord("A:q1:canonical", "b", "partial", store="s1", query_id="q1",
    ...                       item_id="m1"),
    ...           LabelRecord("A:q2:canonical", "a", "does_not_support", store="s1",
    ...                       query_id="q2", item_id="m2")]
    >>> dict(item_relevance(labels))
    {('s1', 'q1', 'm1'): 1, ('s1', 'q2', 'm2'): 0}
    >>> dict(item_relevance(labels, tie_rule="lenient"))
    {('s1', 'q1', 'm1'): 2, ('s1', 'q2', 'm2'): 0}
    >>> dict(item_relevance(labels, judges=["b"]))
    {('s1', 'q1', 'm1'): 1}
    """
    only = next(iter(stores)) if stores is not None and len(set(stores)) == 1 else None
    votes: dict[RelevanceKey, list[int]] = {}
    origins: dict[RelevanceKey, tuple[str, int]] = {}
    problems = Problems()
    for r in select_judges(labels, judges):
        if not r.scored:
            continue
        if not r.query_id or not r.item_id:
            problems.add("a label without query_id and item_id cannot grade a target",
                         record=r.case_id, **r.where())
            continue
        store = r.store or only
        if store is None:
            n = "no store" if stores is None else f"{len(set(stores))} stores"
            problems.add(f"the label names no store and the audit has {n}: its item id is "
                         "ambiguous; re-run `tiap audit cases` (cases now name their store) "
                         "and `tiap audit judge` (cached verdicts are reused)",
                         record=r.case_id, **r.where())
            continue
        key = (store, r.query_id, r.item_id)
        votes.setdefault(key, []).append(_CODE[r.label])
        if r.origin is not None:
            origins.setdefault(key, r.origin)
    problems.raise_if_any()
    keys = list(votes)
    width = max(len(v) for v in votes.values())  # select_judges: some label is scored
    codes = np.full((len(keys), width), -1, np.int64)
    for i, k in enumerate(keys):
        codes[i, : len(votes[k])] = votes[k]
    winner, _ = majority_vote(codes, 3, "conservative" if tie_rule == "none" else tie_rule)
    return Relevance({k: int(grades[SEMANTIC_LABELS[int(w)]])
                      for k, w in zip(keys, winner, strict=True)}, origins)


def retained_ndcg(ranking: Sequence[str], relevance: Mapping[str, float], k: int,
                  max_grade: float = 2.0) -> float:
    """``Σ_{i<=k} (rel_i / max_grade) / log2(i+1)`` over the DCG of ``min(|S|, k)`` ones,
    ``S`` = every key of ``relevance`` (zero-relevance members included in the ideal);
    NaN when ``S`` is empty."""
    if not relevance:
        return math.nan
    log2, ideal = _discounts(k)
    dcg = 0.0
    for i, item in enumerate(ranking[:k]):
        rel = relevance.get(item)
        if rel:
            dcg += (rel / max_grade) / log2[i]
    return dcg / ideal[min(len(relevance), k)]


@functools.cache
def _discounts(k: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``log2(i + 2)`` for the ranks ``i < k``, and the ideal DCG of ``n`` ones for ``n <=
    k`` summed in rank order (the same floats as computing each anew)."""
    log2 = tuple(math.log2(i + 2) for i in range(k))
    ideal = [0]
    for i in range(k):
        ideal.append(ideal[-1] + 1.0 / log2[i])
    return log2, tuple(ideal)


@dataclass(frozen=True)
class SupportBounds:
    """One query's composed support under one target, each measure as ``(lower, upper)``.

    Attributes:
        n_units: the evidence units counted (the target's groups of the query).
        n_open: retrieved members whose grade is open (``None``).
    """

    n_units: int
    n_open: int
    coverage: tuple[float, float]
    graded_coverage: tuple[float, float]
    sufficient: tuple[float, float]

    def values(self) -> tuple[tuple[float, float], ...]:
        """The bounds in :data:`SUPPORT_MEASURES` order."""
        return (self.coverage, self.graded_coverage, self.sufficient)


def composed_support(ranking: Sequence[str], groups: Sequence[Collection[str]],
                     grades: Mapping[str, float | None], k: int) -> SupportBounds:
    """Coverage@k, GradedCoverage@k and Sufficient@k of one ranking, as bounds.

    Args:
        ranking: item ids, best first; its first ``k`` are the retrieved set.
        groups: one group of item ids per evidence unit (at least one group).
        grades: the support grade in [0, 1] of every member of ``groups`` that is in the top
            ``k``, or ``None`` when it is open (an unjudged derived member under
            ``unknown``). Lower bounds take every open grade as 0, upper bounds as 1.

    Raises:
        TiapError: no group, a grade outside [0, 1], or a retrieved member without a grade.
    """
    if not groups:
        raise TiapError("composed support needs at least one group (a zero-target query "
                        "has no value)")
    top = set(ranking[:k])
    covered_lo = covered_hi = 0
    best_lo = best_hi = 0.0
    opened: set[str] = set()
    for group in groups:
        hit = top.intersection(group)
        known: list[float] = []
        open_ = False
        for i in hit:
            if i not in grades:
                raise TiapError(f"item {i!r} is retrieved and a member of the target but has "
                                "no support grade")
            g = grades[i]
            if g is None:
                open_ = True
                opened.add(i)
            elif not 0.0 <= g <= 1.0:
                raise TiapError(f"the support grade of item {i!r} is {g!r}, not in [0, 1]")
            else:
                known.append(g)
        lo = max(known, default=0.0)
        supported = lo == 1.0
        covered_lo += supported
        covered_hi += supported or open_
        best_lo += lo
        best_hi += 1.0 if open_ else lo
    n = len(groups)
    return SupportBounds(
        n_units=n, n_open=len(opened),
        coverage=(covered_lo / n, covered_hi / n),
        graded_coverage=(best_lo / n, best_hi / n),
        sufficient=(float(covered_lo == n), float(covered_hi == n)))


@dataclass(frozen=True)
class GradedResult:
    """Per-query rows and per (system, target) summary rows, and the graded qrels of each
    store (``qrels[store][target][query][item] = relevance``; ``systems[system] = store``).

    ``support_rows`` and ``support_summary`` are the composed-support measures in long
    format (one row per (system, target, query, measure), and per (system, target, measure)),
    for Raw and each relaxed target. ``unjudged`` is the policy the nDCG columns used,
    ``support_unjudged`` the one of the composed-support measures, ``unjudged_given`` what
    the caller chose (``None``: each its default, ``keep`` and ``unknown``). ``warnings``
    are the manifest's counted warnings (``unmatched_label``: labelled items that grade no
    member)."""

    rows: tuple[dict[str, Any], ...]
    summary: tuple[dict[str, Any], ...]
    k: int
    unjudged: str
    qrels: Mapping[str, Mapping[str, Mapping[str, Mapping[str, int]]]]
    systems: Mapping[str, str]
    support_rows: tuple[dict[str, Any], ...] = ()
    support_summary: tuple[dict[str, Any], ...] = ()
    support_unjudged: str = "unknown"
    unjudged_given: str | None = None
    warnings: Mapping[str, Any] = field(default_factory=dict)


def graded_rescore(
    runs: Sequence[Any],
    queries: Sequence[Any],
    stores: Mapping[str | None, Any],
    relevance: Mapping[RelevanceKey, int],
    *,
    targets: Sequence[str] = ("source", "canonical"),
    raw_target: str = "raw",
    target_defs: Sequence[Any] | None = None,
    k: int = 60,
    unjudged: SupportPolicy | None = None,
    shared: Any = None,
) -> GradedResult:
    """Raw, binary, graded and retained nDCG@k of every run under each relaxed target, and
    the composed-support measures (:func:`composed_support`) under Raw and each of them.

    ``stores`` maps run labels to stores as for :func:`tiap.scoring.rescore.rescore`;
    ``relevance`` is :func:`item_relevance`'s ``(store, query_id, item_id) -> grade``. A
    run's members are graded with the labels of its own store (by name,
    :func:`tiap.scoring.rescore.store_lineages`) only.

    ``unjudged`` is the policy for unjudged derived members. ``None`` (not chosen) gives
    each family its default: ``keep`` for the nDCG columns, ``unknown`` (bounds) for the
    composed-support measures. A chosen ``keep``, ``partial`` or ``drop`` decides both
    exactly. ``unknown`` bounds the composed-support measures; the nDCG columns, which need
    one relevance per member, then use ``keep`` (:attr:`GradedResult.unjudged` says so).
    ``shared``: the :class:`tiap.audit.cases.RescoreInputs` that ``runs``, ``queries`` and
    ``stores`` come from (its store lineages and target groups are used and kept).

    Example: the store holds a raw turn and a fact for each of two evidence turns; ``A``
    ranks ``m1, t1`` for ``q1`` and ``m2`` alone for ``q2``. The judges say ``m1``
    supports (2) and ``m2`` does not (0); raw turns always grade 2. nDCG@5 under set
    credit, ``1/log2(3) = 0.6309``:

    - q1, Source ``{t1, m1}``: both retrieved, 1.0 binary and graded; Raw ``{t1}`` at rank 2:
      0.6309;
    - q2, Source ``{t2, m2}``: binary ``1 / (1 + 0.6309) = 0.6131``; graded, ``m2`` leaves
      the target and ``t2`` is not retrieved: 0.0;
    - q2, Canonical ``{m2}``: binary 1.0; graded, every member is rejected: undefined
      (``None``), and the retained share of the binary credit is 0.

    >>> from tiap.datasets import Query
    >>> from tiap.memory import Item
    >>> from tiap.runs import Ranking, Run
    >>> queries = [Query("q1", "c1", "Where did Caroline go?", "the park", "", ("d1:1",)),
    ...            Query("q2", "c1", "What is the dog called?", "Max", "", ("d1:2",))]
    >>> items = [Item(i, kind, (turn,), store="s1") for i, kind, turn in
    ...          [("t1", "raw", "d1:1"), ("m1", "fact", "d1:1"),
    ...           ("t2", "raw", "d1:2"), ("m2", "fact", "d1:2")]]
    >>> run = Run("A", (Ranking("q1", "A", ("m1", "t1")), Ranking("q2", "A", ("m2",))))
    >>> relevance = {("s1", "q1", "m1"): 2, ("s1", "q2", "m2"): 0}
    >>> result = graded_rescore([run], queries, {"A": items}, relevance, k=5)
    >>> result.systems
    {'A': 's1'}
    >>> for r in result.rows:
    ...     print(r["target"], r["query_id"], round(r["raw"], 4), round(r["binary"], 4),
    ...           r["graded"], r["retained"])
    source q1 0.6309 1.0 1.0 1.0
    source q2 0.0 0.6131 0.0 0.0
    canonical q1 0.6309 1.0 1.0 1.0
    canonical q2 0.0 1.0 None 0.0
    >>> [(s["target"], round(s["binary"], 4), s["retained"]) for s in result.summary]
    [('source', 0.8066, 0.5), ('canonical', 1.0, 0.5)]
    """
    from tiap.scoring.rescore import store_lineages
    from tiap.targets import build_groups

    if unjudged is not None and unjudged not in SUPPORT_POLICIES:
        raise TiapError(f"unjudged must be one of {', '.join(SUPPORT_POLICIES)}, got "
                        f"{unjudged!r}", code="invalid-value")
    given = unjudged
    support_policy = "unknown" if given is None else given
    unjudged = "keep" if given in (None, "unknown") else given  # the nDCG columns' policy
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise TiapError(f"k must be a positive integer, got {k!r}")
    measure = parse_measures(f"nDCG@{k}")[0]
    defs = list(target_defs) if target_defs is not None else [raw_target, *targets]
    qlist = list(queries)
    qids = {q.query_id for q in qlist}
    default_rel = UNJUDGED[unjudged]
    support_targets = list(dict.fromkeys([raw_target, *targets]))
    support_rows: list[dict[str, Any]] = []
    support_summary: list[dict[str, Any]] = []
    for run in runs:
        if run.system not in stores and None not in stores:
            raise TiapError(f"no store for run {run.system!r}")
    run_stores = shared.lineages() if shared is not None else store_lineages(runs, stores)
    # store name -> its target sets
    groups_of: dict[str, Any] = shared.groups(defs) if shared is not None else {}
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    qrels: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    used: set[RelevanceKey] = set()  # the labelled items that grade a member
    for run in runs:
        sname, lineage = run_stores[run.system]
        if sname not in groups_of:
            groups_of[sname] = build_groups(lineage, qlist, defs)
        tsets = groups_of[sname]
        scored = [r for r in run.rankings if r.query_id in qids]
        order = [r.query_id for r in scored]
        vocab = Vocabulary()
        matrix = encode_rankings([r.item_ids for r in scored], vocab, query_ids=order)
        index = RankingIndex(matrix)
        raw_groups = [tsets[raw_target][q] for q in order]
        raw_val = index.score(encode_targets(raw_groups, vocab, query_ids=order),
                              [measure], "set")[measure]
        for t in support_targets:
            rs, sm = _support(run.system, sname, scored, tsets, t, raw_target, relevance, k,
                              support_policy)
            support_rows.extend(rs)
            support_summary.extend(sm)
        for t in targets:
            groups = [tsets[t][q] for q in order]
            graded_groups: list[list[dict[str, float]]] = []
            rel_maps: list[dict[str, int]] = []
            stats: list[tuple[int, int, int]] = []
            # partial lineage: a query whose groups are open under the target or under Raw
            # has no graded value (they would be values of the certain members only)
            det = np.asarray([tsets[t].queries[q].determined
                              and tsets[raw_target].queries[q].determined for q in order], bool)
            for q, gs, rgs, known in zip(order, groups, raw_groups, det, strict=True):
                raw_members = {i for g in rgs for i in g}
                rel: dict[str, int] = {}
                judged = rejected = 0
                for g in gs:
                    for i in g:
                        if i in rel:
                            continue
                        if i in raw_members:
                            rel[i] = 2
                        elif (sname, q, i) in relevance:
                            rel[i] = relevance[(sname, q, i)]
                            used.add((sname, q, i))
                            judged += 1
                            rejected += rel[i] == 0
                        else:
                            rel[i] = default_rel
                rel_maps.append(rel)
                stats.append((len(rel), judged, rejected))
                graded_groups.append([{i: float(rel[i]) for i in g if rel[i] > 0} for g in gs])
                if known and any(v > 0 for v in rel.values()):
                    # a store's relevance of (query, item) is the same for all its runs
                    qrels.setdefault(sname, {}).setdefault(t, {}).setdefault(q, {}).update(
                        {i: v for i, v in rel.items() if v > 0})
            binary = index.score(encode_targets(groups, vocab, query_ids=order),
                                 [measure], "set")[measure]
            graded = index.score(encode_targets(graded_groups, vocab, query_ids=order),
                                 [measure], "set")[measure]
            retained = np.asarray([retained_ndcg(r.item_ids, m, k) for r, m in
                                   zip(scored, rel_maps, strict=True)], np.float64)
            open_ = ~det
            for a in (raw_t := raw_val.copy(), binary, graded, retained):
                a[open_] = np.nan
            for j, q in enumerate(order):
                rows.append({
                    "system": run.system, "store": sname, "target": t, "query_id": q,
                    "raw": _v(raw_t[j]), "binary": _v(binary[j]), "graded": _v(graded[j]),
                    "retained": _v(retained[j]), "n_members": stats[j][0],
                    "n_judged": stats[j][1], "n_rejected": stats[j][2],
                    "determined": bool(det[j]),
                })
            shared = ~np.isnan(raw_t) & ~np.isnan(binary)
            n = int(shared.sum())
            g_ok = shared & ~np.isnan(graded)

            def mean(a: np.ndarray, m: np.ndarray) -> float | None:
                return float(a[m].mean()) if m.any() else None

            mr, mb, mt = mean(raw_t, shared), mean(binary, shared), mean(retained, shared)
            gain = None if mr is None or mb is None else mb - mr
            kept = None if mr is None or mt is None else mt - mr
            summary.append({
                "system": run.system, "store": sname, "target": t, "measure": str(measure),
                "n": n,
                "raw": mr, "binary": mb, "retained": mt,
                "n_graded": int(g_ok.sum()), "graded": mean(graded, g_ok),
                "raw_on_graded": mean(raw_t, g_ok), "n_undetermined": int(open_.sum()),
                "gain": gain, "retained_gain": kept,
                "survival": (kept / gain) if gain and kept is not None else None,
                "judged_members": int(sum(s[1] for s, m in zip(stats, shared, strict=True)
                                          if m)),
                "rejected_members": int(sum(s[2] for s, m in zip(stats, shared, strict=True)
                                            if m)),
            })
    warnings = _unmatched_labels(relevance, used, targets,
                                 sorted({run_stores[r.system][0] for r in runs}))
    return GradedResult(rows=tuple(rows), summary=tuple(summary), k=k, unjudged=unjudged,
                        qrels=qrels, systems={r.system: run_stores[r.system][0] for r in runs},
                        support_rows=tuple(support_rows),
                        support_summary=tuple(support_summary),
                        support_unjudged=support_policy, unjudged_given=given,
                        warnings=warnings)


def _unmatched_labels(relevance: Mapping[RelevanceKey, int], used: Collection[RelevanceKey],
                      targets: Sequence[str], stores: Sequence[str]) -> dict[str, Any]:
    """The manifest's ``warnings`` for labelled items that grade no derived member of a
    relaxed target of the runs (``unmatched_label``); an error when labels were given and
    none of them grades one: every figure would be the binary target's, as if the labels
    all said ``supports``."""
    origins: Mapping[RelevanceKey, tuple[str, int]] = getattr(relevance, "origins", {})
    missed = [key for key in relevance if key not in used]
    if not missed:
        return {}

    def where(key: RelevanceKey) -> dict[str, Any]:
        f = origins.get(key)
        return {"file": f[0], "line": f[1]} if f else {}

    def what(key: RelevanceKey) -> str:
        return f"store {key[0]}, query {key[1]}, item {key[2]}"

    if len(missed) == len(relevance):
        theirs = sorted({key[0] for key in relevance})
        raise TiapError(f"none of the {len(relevance):,} labelled items is a derived member "
                        f"of a target ({', '.join(targets)}) of these runs, so the labels "
                        f"would grade nothing (first: {what(missed[0])}); are they of another "
                        f"audit? The labels' stores: {', '.join(theirs)}; the runs': "
                        f"{', '.join(stores)}", code="invalid-value", **where(missed[0]))
    examples = [str(Problem(f"{what(key)} grades no member", code="unmatched_label",
                            **where(key)))
                for key in missed[:_EXAMPLES]]
    return {"unmatched_label": {
        "message": f"labelled items that are no derived member of a target "
                   f"({', '.join(targets)}) of these runs grade nothing and are left out "
                   f"({len(missed):,} of {len(relevance):,} labelled items)",
        "count": len(missed), "examples": examples}}


def _support(system: str, store: str, rankings: Sequence[Any], tsets: Any, target: str,
             raw_target: str, relevance: Mapping[RelevanceKey, int], k: int,
             policy: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The composed-support rows of one run under one target (per query and measure) and
    its summary rows (per measure)."""
    open_grade = SUPPORT_UNJUDGED[policy]
    names = [f"{m}@{k}" for m in SUPPORT_MEASURES]
    rows: list[dict[str, Any]] = []
    bounds: list[SupportBounds] = []
    undetermined = zero = 0
    by_q, raw_by_q = tsets[target].queries, tsets[raw_target].queries
    for r in rankings:
        q = r.query_id
        qg = by_q[q]
        rq = raw_by_q[q]
        det = qg.determined and rq.determined
        base = {"system": system, "store": store, "target": target, "query_id": q}
        if not det or not qg.groups:
            undetermined += not det
            zero += det
            for m in names:
                rows.append({**base, "measure": m, "lower": None, "upper": None,
                             "exact": None, "n_units": len(qg.groups) if det else None,
                             "n_unjudged": None, "determined": det})
            continue
        raw_members = {i for g in rq.groups for i in g}
        top = set(r.item_ids[:k])
        grades: dict[str, float | None] = {}
        unjudged = 0
        for g in qg.groups:
            for i in top.intersection(g):
                if i in grades:
                    continue
                if i in raw_members:
                    grades[i] = 1.0  # the evidence turn supports its unit by definition
                elif (store, q, i) in relevance:  # only this store's labels
                    grades[i] = relevance[(store, q, i)] / 2
                else:
                    grades[i] = open_grade
                    unjudged += 1
        b = composed_support(r.item_ids, qg.groups, grades, k)
        bounds.append(b)
        for m, (lo, hi) in zip(names, b.values(), strict=True):
            rows.append({**base, "measure": m, "lower": lo, "upper": hi, "exact": lo == hi,
                         "n_units": b.n_units, "n_unjudged": unjudged, "determined": True})
    summary: list[dict[str, Any]] = []
    for j, m in enumerate(names):
        lo = np.asarray([b.values()[j][0] for b in bounds], np.float64)
        hi = np.asarray([b.values()[j][1] for b in bounds], np.float64)
        n = len(bounds)
        summary.append({
            "system": system, "store": store, "target": target, "measure": m, "n": n,
            "n_exact": int((lo == hi).sum()),
            "lower": float(lo.mean()) if n else None, "upper": float(hi.mean()) if n else None,
            "n_zero_target": zero, "n_undetermined": undetermined, "unjudged": policy})
    return rows, summary


def _v(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


ROW_COLUMNS = ("system", "store", "target", "query_id", "raw", "binary", "graded", "retained",
               "n_members", "n_judged", "n_rejected", "determined")
SUMMARY_COLUMNS = ("system", "store", "target", "measure", "n", "raw", "binary", "retained",
                   "gain",
                   "retained_gain", "survival", "n_graded", "graded", "raw_on_graded",
                   "judged_members", "rejected_members", "n_undetermined")


SUPPORT_ROW_COLUMNS = ("system", "store", "target", "query_id", "measure", "lower", "upper",
                       "exact", "n_units", "n_unjudged", "determined")
SUPPORT_SUMMARY_COLUMNS = ("system", "store", "target", "measure", "n", "lower", "upper",
                           "n_exact", "n_zero_target", "n_undetermined", "unjudged")
#: The support grade of each label in the composed-support measures (GRADES / 2).
SUPPORT_GRADES: Mapping[str, float] = {lab: g / 2 for lab, g in GRADES.items()}


GRADED_COMMAND = "audit graded"


def write_graded(result: GradedResult, out: str | Path, *,
                 inputs: Mapping[str, str | Path] = {},
                 options: Mapping[str, Any] = {}, force: bool = False) -> dict[str, Any]:
    """Write ``graded_per_query.csv``, ``graded_summary.csv``, ``support_per_query.csv``
    and ``support_summary.csv`` (composed support, long format: ``lower`` and ``upper`` per
    measure), graded TREC qrels per store and target
    (``qrels/<store>.<target>.graded.qrels``) and ``manifest.json``, whose
    ``stores`` and ``systems`` say which systems use which store and its qrels files, and
    whose ``outputs`` list every file with its sha256 (a qrels file also with its store,
    target and systems).

    ``out`` is replaced whole (:func:`tiap.io.output_folder`): graded qrels that an earlier
    run wrote and this one does not (a pooled file of the old layout, the qrels of a store no
    longer audited) do not survive, so a stale file cannot be scored by mistake. A folder
    that is not an earlier ``audit graded`` output, or that holds a file (in ``qrels/`` too)
    that output's manifest does not list (a file of yours), is refused
    (``error[stale-output]``) unless ``force``."""

    def fmt(v: Any) -> Any:
        t = type(v)  # the common types first, by one test
        if t is float:
            return repr(v)
        if t is str or t is int:
            return v
        if isinstance(v, bool):
            return "true" if v else "false"
        return "" if v is None else (repr(v) if isinstance(v, float) else v)

    out = Path(out)
    with output_folder(out, GRADED_COMMAND, force=force) as tmp:
        outputs: dict[str, dict[str, Any]] = {}
        for name, cols, rows in (
                ("graded_per_query.csv", ROW_COLUMNS, result.rows),
                ("graded_summary.csv", SUMMARY_COLUMNS, result.summary),
                ("support_per_query.csv", SUPPORT_ROW_COLUMNS, result.support_rows),
                ("support_summary.csv", SUPPORT_SUMMARY_COLUMNS, result.support_summary)):
            with open(tmp / name, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(cols)
                w.writerows([fmt(r[c]) for c in cols] for r in rows)
            outputs[name] = {"sha256": sha256_file(tmp / name), "rows": len(rows)}
        (tmp / "qrels").mkdir()
        files: dict[str, dict[str, str]] = {}  # store -> target -> qrels path
        for store, per_t in sorted(result.qrels.items()):
            for t, per_q in per_t.items():
                rel_path = f"qrels/{qrels_name(store, t)}"
                files.setdefault(store, {})[t] = rel_path
                lines = [f"{q} 0 {i} {v}\n" for q, rel in per_q.items()
                         for i, v in sorted(rel.items())]
                with open(tmp / rel_path, "w", encoding="utf-8") as fh:
                    fh.writelines(lines)
                outputs[rel_path] = {
                    "sha256": sha256_file(tmp / rel_path), "lines": len(lines),
                    "store": store, "target": t,
                    "systems": sorted(s for s, n in result.systems.items() if n == store)}
        man = Manifest.new(
            GRADED_COMMAND, inputs={k: input_entry(p) for k, p in inputs.items()},
            options={**options, "k": result.k, "unjudged": result.unjudged,
                     "grades": dict(GRADES), "credit": "set",
                     "unjudged_given": result.unjudged_given,
                     "support_unjudged": result.support_unjudged,
                     "support_grades": {"raw_member": 1.0, **SUPPORT_GRADES,
                                        "unjudged": SUPPORT_UNJUDGED[result.support_unjudged]},
                     "support_measures": [f"{m}@{result.k}" for m in SUPPORT_MEASURES]},
            extra={
                "stores": {
                    store: {"systems": sorted(s for s, n in result.systems.items()
                                              if n == store),
                            "qrels": files.get(store, {})}
                    for store in sorted(set(result.systems.values()))},
                "systems": {s: {"store": n, "qrels": files.get(n, {})}
                            for s, n in result.systems.items()}},
            warnings=dict(result.warnings) if result.warnings else None,
            outputs=outputs)
        man.write(tmp / "manifest.json")
    return man.to_json()
