"""Fixed-output rescoring (Stage II): saved runs scored under several targets at once.

:func:`rescore` takes the stores (items with lineage), the queries, and any number of runs,
builds each target's groups from lineage (:mod:`tiap.targets`), and scores every run under
every target with the vectorised kernels of :mod:`tiap.scoring.kernels`. The ranking matrix
of a run is coded once and kept fixed while the targets change. A run is scored whole, or in
shards of consecutive queries (the engine's ``query_shard``, :mod:`tiap.engine`), anywhere:
a query's values depend on its own ranking and groups alone, so the shards' values,
concatenated in query order, are the whole run's, bit for bit.

The query universe is explicit:

- a query in a run but not in the queries file is reported and left out;
- a query in the queries file that a run does not rank is reported; by default it is left
  out of that run (``missing="skip"``), or scored as an empty ranking (``missing="zero"``);
- a zero-target query (no group under a target) is undefined (NaN) under that target, with
  its reason, never 0;
- ranked ids unknown to the store are counted and earn nothing; evidence units unknown to
  the store are reported.

Results are long rows (``system, target, query_id, measure, value``); summaries and the
pairwise target comparison are computed from them.

:func:`rescore_qrels` is the same comparison when the targets come as TREC qrels files
instead of lineage: each qrels file is one target, each relevant judgment one group of one
item (so group and set credit agree on binary qrels), and the runs are read column-wise
(:func:`tiap.runs.read_run_columnar`), which keeps 10^6-query runs in memory as
one ``int32`` matrix. The query universe is then the queries the qrels files judge.
"""

from __future__ import annotations

import importlib.util
import re
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from tiap.engine import current_engine
from tiap.errors import Problem, TiapError
from tiap.ids import IdIndex
from tiap.memory.store import Item, Store, store_name
from tiap.runs import Run
from tiap.runs.formats import trace_store
from tiap.scoring import counts
from tiap.scoring.bounds import bounds_index, exact_problem, group_bounds, query_problem
from tiap.scoring.bounds import set_bounds as set_b
from tiap.scoring.cost import (
    DEFAULT_TOKENIZER,
    budget_cutoffs,
    cost_rows,
    get_tokenizer,
    token_counts,
)
from tiap.scoring.encode import Vocabulary, encode_rankings, encode_targets
from tiap.scoring.inputs import as_queries, as_runs, as_stores
from tiap.scoring.kernels import Credit, RankingIndex, Targets, check_credit, known_distinct
from tiap.scoring.measures import Measure, parse_measures
from tiap.scoring.scores import MAX_EXAMPLES, Scores, SystemReport, TargetLike, hit_cutoff, is_hit
from tiap.targets import Lineage, Target, TargetSets, build_groups, build_lineage, resolve_targets
from tiap.targets.folder import qrels_store
from tiap.targets.granularity import TURN, Blocks, effective_cutoffs
from tiap.targets.groups import QueryLike

if TYPE_CHECKING:  # pragma: no cover
    from tiap.engine import Shared
    from tiap.runs import ColumnarRun, Qrels

Missing = Literal["skip", "zero"]
_SAME = 1e-12  # bounds this close are one value (float noise of the two walks)


def _nothing_to_score(run: Any, scored: Sequence[str], ranked: Sequence[str],
                      judged: Sequence[str], universe: str) -> None:
    """A run none of whose queries is in the universe scores nothing: an error, never a
    summary of n = 0 (the wrong run, or a queries file of another dataset)."""
    if scored:
        return
    raise TiapError(
        f"no query of run {run.system!r} is in the {universe}: nothing to score (the run ranks "
        f"{', '.join(map(repr, ranked[:3])) or 'no query'}; the {universe} "
        f"{'hold' if universe.endswith('s') else 'holds'} "
        f"{', '.join(map(repr, judged[:3])) or 'no query'}); is it the run of these queries?",
        file=getattr(run, "source", None), code="invalid-value")



_QRELS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class QrelsTarget:
    """A target given as a TREC qrels file: one group per relevant (``rel > 0``) judgment."""

    name: str
    source: str | None = None
    graded: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _QRELS_NAME.fullmatch(self.name):
            raise TiapError(f"invalid target name {self.name!r}: use letters, digits, '_', '.' "
                            "and '-', starting with a letter or digit")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "qrels": self.source, "graded": self.graded}


#: Run findings that are notes, not warnings (they change nothing TIAP computes).
NOTE_CODES = frozenset({"score_ties"})


def _run_findings(run: Run | ColumnarRun, *, notes: bool) -> tuple[str, ...]:
    """The run reader's findings as sentences: the warnings, or (``notes``) the notes."""
    return tuple(f"{w.message} ({w.count:,} in {w.queries:,} queries)" for w in run.warnings
                 if (w.code in NOTE_CODES) == notes)


def store_lineages(
    runs: Sequence[Run], stores: Mapping[str | None, Store | Iterable[Item] | Lineage],
) -> dict[str, tuple[str, Lineage]]:
    """Each run's store: ``system -> (store name, lineage)``, one lineage per store.

    A :class:`~tiap.memory.store.Store` is named; plain items are named by their rows'
    ``store`` field, else by their key in ``stores`` (``default`` for the key ``None``).
    Two different stores under one name are an error: an item is ``(store, item id)``.
    """
    named: dict[str | None, tuple[str, Any]] = {}
    for label in {r.system if r.system in stores else None for r in runs}:
        st = stores[label]
        if isinstance(st, Store):
            named[label] = (st.name, st.items)
        elif isinstance(st, Lineage):
            named[label] = (store_name(list(st.items.values()), label or "default"), st)
        else:
            st = tuple(st)
            named[label] = (store_name(st, label or "default"), st)
    by_name: dict[str, tuple[str | None, Any]] = {}
    built: dict[str, Lineage] = {}
    for label, (name, content) in sorted(named.items(), key=lambda kv: str(kv[0])):
        prev = by_name.get(name)
        if prev is None:
            by_name[name] = (label, content)
            built[name] = content if isinstance(content, Lineage) else build_lineage(content)
        elif prev[1] is not content and _items_of(prev[1]) != _items_of(content):
            who = [x or "every other run" for x in (prev[0], label)]
            raise TiapError(f"two different stores are both named {name!r} (the stores of "
                            f"{who[0]} and {who[1]}): an item is identified by store and id, "
                            "so give them different names (build-store --name, or the "
                            "'store' field of items.jsonl)")
    out: dict[str, tuple[str, Lineage]] = {}
    wrong = []
    for r in runs:
        name = named[r.system if r.system in stores else None][0]
        if r.store is not None and r.store != name:
            wrong.append(Problem(f"run {r.system!r} ranks items of store {r.store!r}, but the "
                                 f"store given for it is {name!r}: item ids are only unique "
                                 "within a store, so give the run its own store's items",
                                 file=None if r.source is None else str(r.source)))
        out[r.system] = (name, built[name])
    if wrong:
        raise TiapError(problems=wrong)
    return out


def _items_of(content: Any) -> tuple[Item, ...]:
    return tuple(content.items.values()) if isinstance(content, Lineage) else tuple(content)


def id_order(vocab: Vocabulary) -> NDArray[np.int64]:
    """``order[code]``: the place of each code's id among the vocabulary's ids sorted as
    strings, for the greedy ideal of alpha-nDCG and ERR-IA (a tie goes to the id that sorts
    last, as in ndeval)."""
    ids = [str(i) for i in vocab.ids]
    order = np.empty(len(ids), np.int64)
    order[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return order


def rescore(
    runs: Any,
    queries: Any,
    stores: Any,
    *,
    targets: Iterable[Target | str] = ("raw", "source", "canonical"),
    measures: str | Iterable[str | Measure] = "nDCG@60,R@60,RR@60,Success@60",
    credit: str = "group",
    missing: Missing = "skip",
    depth: int | None = None,
    overlays: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    tokenizer: str | None = None,
) -> Scores:
    """Score every run under every target.

    Args:
        runs: the runs (one system each; system names must be unique): :class:`Run`
            objects, run files, or ``{system: {query_id: [item_id, ...]}}``
            (:func:`tiap.scoring.inputs.as_runs`).
        queries: the queries with their evidence units (queries-file order is kept):
            a queries file, or queries (objects or dicts; :func:`~tiap.scoring.inputs.as_queries`).
        stores: run label -> its store (a :class:`~tiap.memory.store.Store`, an items
            file, items as objects or dicts, or their lineage), or one store for every run
            (:func:`~tiap.scoring.inputs.as_stores`). The key ``None`` is the store for
            every run without a store of its own name; a run named ``NAME`` uses
            ``stores["NAME"]`` when present. Runs whose stores have the same name share one
            store (and one lineage).
        targets: target names or ``name=spec`` definitions.
        measures: measure names (``nDCG@60,R@60,RR@60,Success@60``).
        credit: ``group`` (the paper's scorer) or ``set`` (trec_eval).
        missing: what to do with a query the run does not rank: ``skip`` or ``zero``.
        depth: cut every ranking to its top ``depth`` (default: keep them whole).
        overlays: evidence overlays by name (query id -> evidence), read by the targets
            named ``T~NAME`` (:mod:`tiap.datasets.overlays`).
        tokenizer: the tokenizer of ``cost.csv`` and of token-budget measures
            (``nDCG@tok2000``; :mod:`tiap.scoring.cost`): a name, ``"none"`` (no cost), or
            ``None``: ``cl100k_base`` where the cost extra is installed, else no cost (a
            budget measure then needs it).

    One system ranking turns; q1's evidence turn ``t1`` also has a derived fact ``m1``,
    q2's two evidence turns have none. Under Raw and Source the turns are credited (RR
    1 on both queries); under Canonical only ``m1`` is: q1's RR is 1/2 (``m1`` at rank
    2), and q2 has no Canonical target, so it is undefined and left out of the mean
    (``n`` is 1), never scored 0:

    >>> import tiap
    >>> items = [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...          {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]},
    ...          {"item_id": "t3", "kind": "raw", "sources": ["d1:3"]},
    ...          {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}]
    >>> queries = [{"query_id": "q1", "evidence": ["d1:1"]},
    ...            {"query_id": "q2", "evidence": ["d1:2", "d1:3"]}]
    >>> scores = tiap.rescore({"turns": {"q1": ["t1", "m1"], "q2": ["t2", "t3"]}}, queries,
    ...                       items, measures="RR@2", tokenizer="none")
    >>> for row in scores.summary_rows():
    ...     print(row["system"], row["target"], row["measure"], row["n"], row["mean"])
    turns raw RR@2 2 1.0
    turns source RR@2 2 1.0
    turns canonical RR@2 1 0.5
    """
    mode = check_credit(credit)
    ms = parse_measures(measures)
    ts = resolve_targets(targets)
    if missing not in ("skip", "zero"):
        raise TiapError(f"missing must be 'skip' or 'zero', got {missing!r}")
    runs, queries, stores = as_runs(runs), as_queries(queries), as_stores(stores)
    names = [r.system for r in runs]
    _check_systems(names)
    for r in runs:
        if r.system not in stores and None not in stores:
            raise TiapError(f"no store for run {r.system!r}: pass --items {r.system}=PATH or a "
                            "plain --items PATH for every run")

    engine = current_engine()
    qlist = list(queries)
    qindex = {q.query_id: i for i, q in enumerate(qlist)}
    run_stores = store_lineages(runs, stores)
    whole = max((len(rk.item_ids) for r in runs for rk in r.rankings), default=1)
    whole = max(1, min(whole, depth) if depth is not None else whole)
    flip_ks = tuple(sorted({1, *(hit_cutoff(m, ms) or whole for m in ms)}))
    budgeted = [m for m in ms if m.budget is not None]
    if budgeted and any(t.granularity != TURN for t in ts):
        raise TiapError("a token budget counts ranks, a session or window target's cutoff "
                        "counts blocks: rescore them apart", code="invalid-value")
    tok, cost_note = _tokenizer(tokenizer, budgeted)
    options = engine.share(_Options(ts, ms, mode, depth, overlays, flip_ks))
    sets: dict[str, TargetSets] = {}
    shared: dict[str, Shared[_StoreWork]] = {}
    cost: list[dict[str, Any]] = []
    integrity: list[dict[str, Any]] = []
    scored_by: dict[str, tuple[str, ...]] = {}
    reports: dict[str, SystemReport] = {}
    jobs: list[_Shard] = []

    for run in runs:
        sname, lineage = run_stores[run.system]
        if sname not in sets:
            sets[sname] = build_groups(lineage, qlist, ts, overlays=overlays)
            blocks = {g: Blocks.build(lineage, g)
                      for g in dict.fromkeys(t.granularity for t in ts) if g != TURN}
            shared[sname] = engine.share(_StoreWork(lineage, sets[sname], blocks))
        tsets = sets[sname]

        by_q = {rk.query_id: rk for rk in run.rankings}
        not_in_file = tuple(q for q in by_q if q not in qindex)
        not_in_run = tuple(q.query_id for q in qlist if q.query_id not in by_q)
        scored = [q.query_id for q in qlist if q.query_id in by_q or missing == "zero"]
        _nothing_to_score(run, scored, list(by_q), [q.query_id for q in qlist],
                          "queries file")
        rankings = [by_q[q].item_ids if q in by_q else () for q in scored]

        unknown = 0
        unknown_q = 0
        examples: list[tuple[str, str]] = []
        items = lineage.items
        for q, r in zip(scored, rankings, strict=True):
            bad = [i for i in r if i not in items]
            if bad:
                unknown += len(bad)
                unknown_q += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append((q, bad[0]))

        cut_rankings = [r[:depth] if depth is not None else r for r in rankings]
        tokens: dict[str, int | None] = {}
        if tok is not None:
            tokens = token_counts(_Texts(lineage.items), (i for r in cut_rankings for i in r),
                                  tok)
            cuts = sorted({m.cutoff for m in ms if m.cutoff is not None}) + (
                [None] if any(m.cutoff is None and m.budget is None for m in ms) else [])
            cost += cost_rows(run.system, cut_rankings, tokens, cuts,
                              [by_q[q].latency_ms if q in by_q else None for q in scored],
                              tok.name)
        run_queries = [qlist[qindex[q]] for q in scored]
        integrity += integrity_rows(run.system, lineage, run_queries, cut_rankings, ms, depth)
        step = engine.query_shard or len(scored)
        for a in range(0, len(scored), step):
            jobs.append(_Shard(run.system, shared[sname], options, run_queries[a:a + step],
                               rankings[a:a + step],
                               {i: tokens[i] for r in cut_rankings[a:a + step] for i in r}
                               if budgeted else {}))
        scored_set = set(scored)
        ue = {q: u for q, u in tsets.unknown_evidence.items() if q in scored_set}
        reports[run.system] = SystemReport(
            system=run.system,
            store=sname,
            queries_in_run=len(by_q),
            scored_queries=len(scored),
            not_in_queries_file=not_in_file,
            not_in_run=not_in_run,
            missing_policy=missing,
            unknown_ranked_items=unknown,
            unknown_ranked_examples=tuple(examples),
            queries_with_unknown_items=unknown_q,
            unknown_evidence_queries=len(ue),
            unknown_evidence_examples=tuple(list(ue.items())[:MAX_EXAMPLES]),
            run_warnings=_run_findings(run, notes=False),
            run_notes=_run_findings(run, notes=True),
        )
        scored_by[run.system] = tuple(scored)

    parts: dict[str, list[_Scored]] = {}
    for job, part in zip(jobs, engine.map(_score_shard, jobs), strict=True):
        parts.setdefault(job.system, []).append(part)
    merged = _Scored.concat([parts[s] for s in names], names, ts, ms, flip_ks)
    for s in names:
        reports[s] = replace(reports[s], zero_target=merged.zero[s], possibly_empty={
            t.name: int(merged.possibly_empty[(s, t.name)].sum())
            for t in ts if (s, t.name) in merged.possibly_empty})
    return Scores(
        systems=tuple(names),
        targets=ts,
        measures=ms,
        credit=mode,
        query_ids=scored_by,
        values=merged.values,
        flips=merged.flips,
        reports=reports,
        target_sets=sets,
        zero_reasons=merged.zero_reasons,
        zero_codes=merged.zero_codes,
        target_sizes=merged.target_sizes,
        lower=merged.lower,
        upper=merged.upper,
        possibly_empty=merged.possibly_empty,
        undetermined=merged.undetermined,
        cost=tuple(cost),
        tokenizer={"name": tok.name, "version": tok.version} if tok is not None else {},
        cost_note=cost_note,
        integrity=tuple(integrity),
        flip_lower=merged.flip_lower,
        flip_upper=merged.flip_upper,
        flip_pairs=merged.flip_pairs,
        inferred=merged.inferred,
        whole_k=whole,
        queries=tuple(qlist),
    )


class _Texts(Mapping[str, str | None]):
    """Item id -> its text, read from the items where asked (no copy of a store's texts)."""

    def __init__(self, items: Mapping[str, Item]) -> None:
        self._items = items

    def __getitem__(self, iid: str) -> str | None:
        return self._items[iid].text

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class _Options:
    """What every query shard is scored with (targets: lineage targets, or qrels files)."""

    targets: tuple[Any, ...]
    measures: tuple[Measure, ...]
    credit: Credit
    depth: int | None
    overlays: Mapping[str, Mapping[str, Sequence[str]]] | None
    flip_ks: tuple[int, ...]


@dataclass(frozen=True)
class _StoreWork:
    """A store as its shards read it: its lineage, every query's groups, its blocks."""

    lineage: Lineage
    sets: TargetSets
    blocks: Mapping[str, Blocks]


@dataclass(frozen=True)
class _Shard:
    """Consecutive scored queries of one run (a task): their queries and rankings, and the
    token counts of the ranked items for token-budget measures."""

    system: str
    store: Shared[_StoreWork]
    options: Shared[_Options]
    queries: list[QueryLike]
    rankings: list[tuple[str, ...]]
    tokens: dict[str, int | None]


@dataclass
class _Scored:
    """Per-query results of some queries of some runs, keyed as in :class:`Scores`
    (``zero``: system -> target -> undefined queries)."""

    values: dict[tuple[str, str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    flips: dict[tuple[str, str, int], NDArray[np.float64]] = field(default_factory=dict)
    zero_reasons: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    zero_codes: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    target_sizes: dict[tuple[str, str], tuple[NDArray[np.int64], NDArray[np.int64]]] = field(
        default_factory=dict)
    lower: dict[tuple[str, str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    upper: dict[tuple[str, str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    possibly_empty: dict[tuple[str, str], NDArray[np.bool_]] = field(default_factory=dict)
    undetermined: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    flip_lower: dict[tuple[str, str, int], NDArray[np.float64]] = field(default_factory=dict)
    flip_upper: dict[tuple[str, str, int], NDArray[np.float64]] = field(default_factory=dict)
    flip_pairs: dict[tuple[str, str, str, int], NDArray[np.int8]] = field(default_factory=dict)
    inferred: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    zero: dict[str, dict[str, int]] = field(default_factory=dict)
    n: int = 0

    @classmethod
    def concat(cls, runs: Sequence[Sequence[_Scored]], systems: Sequence[str],
               targets: Sequence[TargetLike], measures: Sequence[Measure],
               flip_ks: Sequence[int]) -> _Scored:
        """Each run's shards (``runs[i]``: the shards of ``systems[i]``, in query order) as
        one result, the keys in one order (system, target, measure) whatever the shards."""
        out = cls()
        for s, shards in zip(systems, runs, strict=True):
            out.zero[s] = {}
            for t in targets:
                key = (s, t.name)
                out.zero[s][t.name] = sum(p.zero[s][t.name] for p in shards)
                for m in measures:
                    k3 = (*key, m)
                    out.values[k3] = np.concatenate([p.values[k3] for p in shards])
                    if any(k3 in p.lower for p in shards):
                        out.lower[k3] = np.concatenate([p.lower.get(k3, p.values[k3])
                                                        for p in shards])
                        out.upper[k3] = np.concatenate([p.upper.get(k3, p.values[k3])
                                                        for p in shards])
                for k in flip_ks:
                    k3 = (*key, k)
                    out.flips[k3] = np.concatenate([p.flips[k3] for p in shards])
                    if any(k3 in p.flip_lower for p in shards):
                        out.flip_lower[k3] = np.concatenate([p.flip_lower.get(k3, p.flips[k3])
                                                             for p in shards])
                        out.flip_upper[k3] = np.concatenate([p.flip_upper.get(k3, p.flips[k3])
                                                             for p in shards])
                out.zero_reasons[key] = {q: r for p in shards for q, r in p.zero_reasons[key].items()}
                out.zero_codes[key] = {q: r for p in shards for q, r in p.zero_codes[key].items()}
                out.target_sizes[key] = (
                    np.concatenate([p.target_sizes[key][0] for p in shards]),
                    np.concatenate([p.target_sizes[key][1] for p in shards]))
                if any(key in p.possibly_empty for p in shards):
                    out.possibly_empty[key] = np.concatenate([
                        p.possibly_empty.get(key, np.zeros(p.n, bool)) for p in shards])
                if any(key in p.undetermined for p in shards):
                    out.undetermined[key] = {q: r for p in shards
                                             for q, r in p.undetermined.get(key, {}).items()}
            for key in dict.fromkeys(k for p in shards for k in p.flip_pairs):
                out.flip_pairs[key] = np.concatenate([p.flip_pairs[key] for p in shards])
            for key2 in dict.fromkeys(k for p in shards for k in p.inferred):
                out.inferred[key2] = {q: r for p in shards
                                      for q, r in p.inferred.get(key2, {}).items()}
        return out


def _score_shard(job: _Shard) -> _Scored:
    """Score one query shard of one run under every target. A query's values depend on its
    own ranking and groups alone (the kernels' rows are independent, and an intent-aware
    ideal only compares ids), so the shards of a run give the whole run's values."""
    work, o = job.store.get(), job.options.get()
    lineage, tsets, ms, mode, depth = work.lineage, work.sets, o.measures, o.credit, o.depth
    flip_measures = [parse_measures(f"Success@{k}")[0] for k in o.flip_ks]
    intent_aware = any(m.family in ("alpha_nDCG", "ERR_IA") for m in ms)
    budgeted = [m for m in ms if m.budget is not None]
    qlist, rankings, system = job.queries, job.rankings, job.system
    scored = [q.query_id for q in qlist]
    cut_rankings = [r[:depth] if depth is not None else r for r in rankings]
    out = _Scored(n=len(scored), zero={system: {}})
    vocab = Vocabulary()
    eff_cache: dict[str, dict[int, NDArray[np.int64]]] = {}
    index = RankingIndex(encode_rankings(rankings, vocab, depth=depth, query_ids=scored))
    for t in o.targets:
        key = (system, t.name)
        tg = tsets[t.name]
        groups = [tg[q] for q in scored]
        zt = tg.zero_target
        out.zero_reasons[key] = {q: zt[q] for q in scored if q in zt}
        out.zero_codes[key] = {q: str(tg.queries[q].zero_target) for q in scored if q in zt}
        zero = sum(1 for g in groups if not g)
        coded = encode_targets(groups, vocab, query_ids=scored)
        out.target_sizes[key] = (coded.group_counts, coded.set_sizes)
        order = id_order(vocab) if intent_aware else None
        if t.granularity == TURN:
            plain = [m for m in [*ms, *flip_measures] if m.budget is None]
            got = index.score(coded, plain, mode, ideal_order=order)
            if budgeted:
                got.update(_cutoff_scores(index, coded, mode, order, {
                    m: budget_cutoffs(cut_rankings, job.tokens, m.budget or 0,
                                      system=system, query_ids=scored)
                    for m in budgeted}))
        else:
            got, short = _block_scores(index, coded, [*ms, *flip_measures], mode, order,
                                       cut_rankings, work.blocks[t.granularity],
                                       eff_cache.setdefault(t.granularity, {}))
            lower: dict[tuple[str, str, Measure], NDArray[np.float64]] = {}
            upper: dict[tuple[str, str, Measure], NDArray[np.float64]] = {}
            _short_rankings(short, lineage, qlist, scored, cut_rankings, t,
                            [*ms, *flip_measures], got, key, lower, upper, out.undetermined,
                            out.possibly_empty)
            for m in ms:
                if (*key, m) in lower:
                    out.lower[(*key, m)], out.upper[(*key, m)] = lower[(*key, m)], upper[(*key, m)]
            for k, fm in zip(o.flip_ks, flip_measures, strict=True):
                if (*key, fm) in lower:
                    out.flip_lower[(*key, k)] = lower[(*key, fm)]
                    out.flip_upper[(*key, k)] = upper[(*key, fm)]
        if lineage.uncertain:  # (turn targets only: build_groups rolls up no partial lineage)
            open_ = _bound_pass(lineage, t, mode, [_under(q, t, o.overlays) for q in qlist],
                                scored, rankings, depth, [*ms, *flip_measures], got)
            if open_.members is not None:
                out.target_sizes[key] = (coded.group_counts, open_.members)
            zero -= int(open_.defined_now.sum())
            for q in open_.reasons:
                out.zero_reasons[key].pop(q, None)
                out.zero_codes[key].pop(q, None)
            out.undetermined[key] = open_.reasons
            out.possibly_empty[key] = open_.possibly_empty
            if open_.any:
                for m in ms:
                    out.lower[(*key, m)] = open_.lower[m]
                    out.upper[(*key, m)] = open_.upper[m]
                for k, fm in zip(o.flip_ks, flip_measures, strict=True):
                    out.flip_lower[(*key, k)] = open_.lower[fm]
                    out.flip_upper[(*key, k)] = open_.upper[fm]
        if _inference_index(lineage).items:
            out.inferred[key] = _inferred_queries(
                lineage, t, mode, [_under(q, t, o.overlays) for q in qlist], scored,
                cut_rankings)
        for m in ms:
            out.values[(*key, m)] = got[m]
        for k, fm in zip(o.flip_ks, flip_measures, strict=True):
            out.flips[(*key, k)] = got[fm]
        out.zero[system][t.name] = zero
    if lineage.uncertain:
        _joint_flips(lineage, o, system, qlist, rankings, out)
    return out


@dataclass(frozen=True)
class _Inferences:
    """A store's items whose lineage the import inferred (``Item.inferred``, passed on to
    the items derived from them through ``parents``): per item, the units its proven
    lineage may reach (``None``: any of its collection) and whether its kind is inferred;
    which items may reach each unit; those that may reach any unit, by collection."""

    items: Mapping[str, tuple[frozenset[str] | None, bool]]
    by_unit: Mapping[str, tuple[str, ...]]
    anywhere: Mapping[str | None, tuple[str, ...]]
    by_collection: Mapping[str | None, tuple[str, ...]]


_INFERENCES: weakref.WeakKeyDictionary[Lineage, _Inferences] = weakref.WeakKeyDictionary()


def _inference_index(lineage: Lineage) -> _Inferences:
    """The :class:`_Inferences` of a store, computed once per lineage."""
    if lineage in _INFERENCES:
        return _INFERENCES[lineage]
    if lineage.inferred == 0:  # counted when the lineage was built: nothing to look for
        _INFERENCES[lineage] = _Inferences({}, {}, {}, {})
        return _INFERENCES[lineage]
    items = lineage.items
    got: dict[str, tuple[frozenset[str] | None, bool] | None] = {}

    def of(iid: str, path: frozenset[str] = frozenset()) -> tuple[frozenset[str] | None,
                                                                   bool] | None:
        if iid in got:
            return got[iid]
        it = items[iid]
        parts = [of(p, path | {iid}) for p in it.parents if p in items and p not in path]
        parts = [x for x in parts if x is not None]
        own = it.inferred
        if own is None and not parts:
            got[iid] = None
            return None
        units: frozenset[str] | None = frozenset(lineage.sources[iid])
        kind = False
        if own is not None:
            units = None if own.possible is None else units | frozenset(own.possible)
            kind = own.kind
        for p_units, _ in parts:
            units = None if units is None or p_units is None else units | p_units
        got[iid] = (units, kind)
        return got[iid]

    found = {iid: v for iid in items if (v := of(iid)) is not None}
    by_unit: dict[str, list[str]] = {}
    anywhere: dict[str | None, list[str]] = {}
    by_coll: dict[str | None, list[str]] = {}
    for iid, (units, _) in found.items():
        coll = items[iid].collection
        by_coll.setdefault(coll, []).append(iid)
        if units is None:
            anywhere.setdefault(coll, []).append(iid)
        else:
            for u in units:
                by_unit.setdefault(u, []).append(iid)
    out = _Inferences(found, {u: tuple(v) for u, v in by_unit.items()},
                      {c: tuple(v) for c, v in anywhere.items()},
                      {c: tuple(v) for c, v in by_coll.items()})
    _INFERENCES[lineage] = out
    return out


def _inferred_queries(lineage: Lineage, target: Target, credit: Credit,
                      queries: Sequence[QueryLike], scored: Sequence[str],
                      rankings: Sequence[Sequence[str]]) -> dict[str, str]:
    """``{query id: why}`` for the queries whose value under ``target`` may depend on
    inferred lineage: an inferred item the target may credit (its kind
    matches, or is inferred too) that may reach an evidence unit by its proven lineage and
    is ranked (within the depth), or, unranked, may change the groups: under set credit
    any such item, under group credit one on which a group's existence rests (no item of
    proven lineage certainly in it). For a session or window target, any inferred item of
    the query's collection."""
    idx = _inference_index(lineage)
    items, families = lineage.items, lineage.families
    matches: dict[str, bool] = {}

    def credits(iid: str) -> bool:
        if iid not in matches:
            matches[iid] = target.matches(items[iid])
        return matches[iid]

    def proven_member(u: str) -> bool:
        for y in families.get(u, ()):
            ph = items[y].placeholder
            if y not in idx.items and credits(y) and (ph is None or ph.certain):
                return True
        return False

    out: dict[str, str] = {}
    for q, qid, ranking in zip(queries, scored, rankings, strict=True):
        coll = getattr(q, "collection_id", None) or None
        colls = [coll, None] if coll is not None else list(idx.by_collection)
        units = tuple(dict.fromkeys(q.evidence))
        evidence = frozenset(units)
        if target.granularity != TURN:
            cands = [x for c in dict.fromkeys(colls) for x in idx.by_collection.get(c, ())]
        else:
            cands = list(dict.fromkeys(
                [x for u in units for x in idx.by_unit.get(u, ())]
                + [x for c in dict.fromkeys(colls) for x in idx.anywhere.get(c, ())]))
        if not cands:
            continue
        ranked = frozenset(ranking)
        # ranked items first, in rank order, then the others: one reason, whatever the order
        # of the store or the process's string hashing
        listed = frozenset(cands)
        cands = [x for x in dict.fromkeys(ranking) if x in listed] + [
            x for x in cands if x not in ranked]
        for x in cands:
            reach, kind = idx.items[x]
            it = items[x]
            if not (kind or credits(x)):
                continue
            if coll is not None and it.collection is not None and it.collection != coll:
                continue
            if x in ranked:
                out[qid] = f"ranked item {x} has inferred lineage"
                break
            if credit == "set" or target.granularity != TURN:
                out[qid] = f"item {x}, of inferred lineage, may belong to its groups"
                break
            open_ = sorted(u for u in evidence if (reach is None or u in reach)
                           and not proven_member(u))
            if open_:
                out[qid] = (f"whether the group of {open_[0]} exists rests on item {x}, of "
                            "inferred lineage")
                break
    return out


def _joint_flips(lineage: Lineage, o: _Options, system: str, queries: Sequence[QueryLike],
                 rankings: Sequence[Sequence[str]], out: _Scored) -> None:
    """For every pair of turn targets and flip cutoff ``k``, per query: is something
    credited in the top ``k`` under exactly one of them (0, 1 or ``EITHER``)? Decided on
    each target's bounds where they decide it, else on the items' shared lineage
    (:func:`tiap.scoring.counts.joint_flip`): an item both targets may credit is credited
    under both or under neither (where both read the same evidence)."""

    turn = [t for t in o.targets if t.granularity == TURN]
    indexes: dict[str, Any] = {}
    for t1, t2 in combinations(turn, 2):
        for k in o.flip_ks:
            ends = []
            for t in (t1, t2):
                key = (system, t.name, k)
                lo, hi = out.flip_lower.get(key, out.flips[key]), out.flip_upper.get(
                    key, out.flips[key])
                ends.append(counts.truth(lo, hi, is_hit))
            flip = counts.differ(*ends)
            for i in np.flatnonzero(flip == counts.EITHER).tolist():
                q1, q2 = _under(queries[i], t1, o.overlays), _under(queries[i], t2, o.overlays)
                if tuple(q1.evidence) != tuple(q2.evidence):
                    continue  # two evidence sets: each target's own bounds
                ranked = rankings[i][:o.depth] if o.depth is not None else rankings[i]
                coll = getattr(queries[i], "collection_id", None) or None
                credit = []
                for t, q in ((t1, q1), (t2, q2)):
                    if t.name not in indexes:
                        indexes[t.name] = bounds_index(lineage, t)
                    problem = query_problem(indexes[t.name], q.evidence, ranked,
                                            collection=coll)
                    credit.append([(p.rank, p.credited) for p in problem.positions
                                   if p.rank <= k])
                flip[i] = counts.joint_flip(*credit)
            out.flip_pairs[(system, t1.name, t2.name, k)] = flip


@dataclass
class _Open:
    """What the bound pass found for one (run, target)."""

    any: bool
    lower: dict[Measure, NDArray[np.float64]]
    upper: dict[Measure, NDArray[np.float64]]
    possibly_empty: NDArray[np.bool_]
    defined_now: NDArray[np.bool_]  # undefined on certain lineage, possibly defined
    reasons: dict[str, str]
    #: the union's size where placeholders stand for several items (-1: not determined)
    members: NDArray[np.int64] | None = None


@dataclass(frozen=True)
class _QueryEvidence:
    """A query as a target under an evidence overlay reads it."""

    query_id: str
    evidence: tuple[str, ...]
    abstention: bool
    collection_id: str | None


def _under(q: QueryLike, target: Target,
           overlays: Mapping[str, Mapping[str, Sequence[str]]] | None) -> QueryLike:
    """``q`` with the evidence ``target`` reads (its overlay's, where it has the query)."""
    if not target.overlay or overlays is None or q.query_id not in overlays[target.overlay]:
        return q
    return _QueryEvidence(q.query_id, tuple(overlays[target.overlay][q.query_id]),
                          q.abstention, getattr(q, "collection_id", None))


def integrity_rows(system: str, lineage: Lineage, queries: Sequence[QueryLike],
                   rankings: Sequence[Sequence[str]], measures: Sequence[Measure],
                   depth: int | None) -> list[dict[str, Any]]:
    """Three checks of a run against its store and queries (``integrity.csv``):

    - ``k_covers_pool``: queries whose cutoff ``k`` (the largest rank cutoff of the
      measures) is at least the number of items the store holds for the query's collection:
      the top k is the whole pool, so recall at k is 1 whatever the order;
    - ``lineage_known_at_k``: the share of the top-k ranked items whose lineage the store
      determines (known sources, or certainly none), the "judged@k" of lineage: an item
      outside the store or with partial lineage is not known;
    - ``evidence_one_session``: queries whose evidence turns all lie in one session (from
      the store's raw items; ``not determined`` where a turn's session is not known): a
      session-level target treats them as single-evidence queries.
    """
    ks = [m.cutoff for m in measures if m.cutoff is not None]
    k = max(ks) if ks else (depth or max((len(r) for r in rankings), default=0))
    facts = _store_facts(lineage)
    pool, items, inexact = facts.pool, lineage.items, facts.inexact
    total = len(lineage.items)
    n = len(queries)
    covered = [q.query_id for q in queries
               if k >= pool.get(getattr(q, "collection_id", None) or None, total)]
    ranked = sum(min(len(r), k) for r in rankings)
    held = items.keys()  # (a set view: the ranked ids are looked up, the store not walked)
    known = sum(len((held & r[:k]) - inexact) if inexact else len(held & r[:k])
                for r in rankings)
    with_ev = [q for q in queries if q.evidence]
    sessions = [{facts.session(u) for u in dict.fromkeys(q.evidence)} for q in with_ev]
    one = [q.query_id for q, ss in zip(with_ev, sessions, strict=True)
           if None not in ss and len(ss) == 1]
    unknown = sum(1 for ss in sessions if None in ss)
    return [
        {"system": system, "check": "k_covers_pool", "cutoff": k, "queries": n,
         "flagged": len(covered), "share": len(covered) / n if n else None,
         "detail": (f"e.g. {', '.join(covered[:3])}" if covered else "")},
        {"system": system, "check": "lineage_known_at_k", "cutoff": k, "queries": n,
         "flagged": ranked - known, "share": known / ranked if ranked else None,
         "detail": f"{known:,} of {ranked:,} top-{k} items have known lineage"},
        {"system": system, "check": "evidence_one_session", "cutoff": None,
         "queries": len(with_ev), "flagged": len(one),
         "share": len(one) / len(with_ev) if with_ev else None,
         "detail": (f"{unknown:,} queries not determined (a turn's session unknown)"
                    if unknown else "")},
    ]


class _StoreFacts:
    """What :func:`integrity_rows` reads of a store, computed once per lineage (the runs of
    a store share it): items per collection (``pool``), the items whose lineage is not known
    (``inexact``: partial lineage or a placeholder), and the session of a raw turn, looked
    up for the units asked about."""

    def __init__(self, lineage: Lineage) -> None:
        self.lineage = lineage
        self.pool: dict[str | None, int] = dict(Counter(
            it.collection for it in lineage.items.values()))
        if lineage.placeholders == 0:  # counted when the lineage was built
            self.inexact: frozenset[str] = frozenset(lineage.possible)
        else:
            self.inexact = frozenset(lineage.possible).union(
                i for i, it in lineage.items.items() if it.placeholder is not None)
        self._sessions: dict[str, str | None] = {}
        self._order: dict[str, int] | None = None

    def session(self, unit: str) -> str | None:
        """``collection:session`` of the raw item whose one source is ``unit`` (the last
        such item in store order), ``None`` when no raw item with a session has it."""
        if unit in self._sessions:
            return self._sessions[unit]
        items = self.lineage.items
        found: list[tuple[str, str]] = []
        for iid in self.lineage.family(unit):
            it = items[iid]
            if len(it.sources) == 1 and it.sources[0] == unit and it.is_raw:
                sid = dict(it.meta).get("session_id")
                if sid is not None:
                    found.append((iid, f"{it.collection}:{sid}"))
        if len(found) > 1:  # several turns claim the unit: the last one in the store wins
            if self._order is None:
                self._order = {iid: n for n, iid in enumerate(items)}
            order = self._order
            found.sort(key=lambda f: order[f[0]])
        got = found[-1][1] if found else None
        self._sessions[unit] = got
        return got


_FACTS: weakref.WeakKeyDictionary[Lineage, _StoreFacts] = weakref.WeakKeyDictionary()


def _store_facts(lineage: Lineage) -> _StoreFacts:
    """The :class:`_StoreFacts` of a store, computed once per lineage."""
    if lineage not in _FACTS:
        _FACTS[lineage] = _StoreFacts(lineage)
    return _FACTS[lineage]


def _tokenizer(name: str | None, budgeted: Sequence[Measure]) -> tuple[Any, str]:
    """The tokenizer of the cost table and budget measures, or ``None`` with why."""

    if name == "none":
        if budgeted:
            raise TiapError(f"{budgeted[0]} needs a tokenizer (--tokenizer none given)",
                            code="invalid-value")
        return None, "not computed (--tokenizer none)"
    if name is None and not budgeted and importlib.util.find_spec("bpe_openai") is None:
        return None, "not computed: the cost extra is not installed (pip install -e '.[cost]')"
    return get_tokenizer(name or DEFAULT_TOKENIZER), ""


def _cutoff_scores(index: RankingIndex, coded: Targets, mode: Credit,
                   order: NDArray[np.int64] | None,
                   cutoffs: Mapping[Measure, NDArray[np.int64]],
                   ) -> dict[Measure, NDArray[np.float64]]:
    """Each measure at a cutoff of its own per query (``cutoffs[m][q]`` ranks; 0: nothing
    is read, so a defined query scores 0)."""
    out: dict[Measure, NDArray[np.float64]] = {}
    undefined = coded.group_counts == 0
    for m, eff in cutoffs.items():
        vals = np.where(undefined, np.nan, 0.0)
        for e in np.unique(eff).tolist():
            if e == 0:
                continue
            at = Measure(m.family, int(e), m.params)
            sel = eff == e
            vals[sel] = index.score(coded, [at], mode, ideal_order=order)[at][sel]
        out[m] = vals
    return out


def _block_scores(index: RankingIndex, coded: Targets, measures: Sequence[Measure],
                  mode: Credit, order: NDArray[np.int64] | None,
                  rankings: Sequence[Sequence[str]], blocks: Blocks,
                  cache: dict[int, NDArray[np.int64]],
                  ) -> tuple[dict[Measure, NDArray[np.float64]], dict[int, NDArray[np.bool_]]]:
    """Every measure with its cutoff counted in blocks (:mod:`tiap.targets.granularity`):
    a query's value of ``M@k`` is its value of ``M@e``, ``e`` its effective cutoff (the
    rank at which its ranking has listed ``k`` blocks). Returns the values and, per cutoff
    ``k``, the queries whose ranking lists fewer than ``k`` blocks."""
    out: dict[Measure, NDArray[np.float64]] = {}
    short: dict[int, NDArray[np.bool_]] = {}
    whole = [m for m in measures if m.cutoff is None]
    if whole:
        out.update(index.score(coded, whole, mode, ideal_order=order))
    by_k: dict[int, list[Measure]] = {}
    for m in measures:
        if m.cutoff is not None:
            by_k.setdefault(m.cutoff, []).append(m)
    for k, ms in by_k.items():
        if k not in cache:
            cache[k] = effective_cutoffs(rankings, blocks, k)
        eff = cache[k]
        short[k] = np.array([len({b for i in r for b in blocks.item_blocks(i)}) < k
                             for r in rankings], bool) if len(rankings) else np.zeros(0, bool)
        vals = {m: np.full(len(rankings), np.nan) for m in ms}
        for e in np.unique(eff).tolist():
            sel = eff == e
            got = index.score(coded, [m.at(max(e, 1)) for m in ms], mode, ideal_order=order)
            for m in ms:
                vals[m][sel] = got[m.at(max(e, 1))][sel]
        out.update(vals)
    return out, short


def _short_rankings(short: dict[int, NDArray[np.bool_]], lineage: Lineage,
                    queries: Sequence[QueryLike], scored: Sequence[str],
                    rankings: Sequence[Sequence[str]], target: Target, measures: Sequence[Measure],
                    got: dict[Measure, NDArray[np.float64]], key: tuple[str, str],
                    lower: dict[tuple[str, str, Measure], NDArray[np.float64]],
                    upper: dict[tuple[str, str, Measure], NDArray[np.float64]],
                    undetermined: dict[tuple[str, str], dict[str, str]],
                    possibly_empty: dict[tuple[str, str], NDArray[np.bool_]]) -> None:
    """A ranking that lists fewer than ``k`` blocks would be read further by the cutoff
    rule; where the store holds items of the query's collection that the run does not rank,
    those ranks are unknown, so the value is not determined: NaN, bounded by [0, 1], with
    the reason. (A ranking of every item is read whole: its value is exact.)"""
    sizes: dict[str | None, int] = {}
    for it in lineage.items.values():
        sizes[it.collection] = sizes.get(it.collection, 0) + 1
    total = len(lineage.items)
    reasons: dict[str, str] = {}
    for m in measures:
        if m.cutoff is None or m.cutoff not in short:
            continue
        lo, hi = got[m].copy(), got[m].copy()
        changed = False
        for i in np.flatnonzero(short[m.cutoff]).tolist():
            coll = getattr(queries[i], "collection_id", None) or None
            pool = sizes.get(coll, 0) if coll is not None else total
            if len(rankings[i]) >= pool or np.isnan(got[m][i]):
                continue  # every item ranked (or the query undefined): nothing is unknown
            got[m][i] = np.nan
            lo[i], hi[i] = 0.0, 1.0
            changed = True
            reasons[scored[i]] = (f"the run ranks {len(rankings[i])} of the {pool} items and "
                                  f"lists fewer than {m.cutoff} {target.granularity}s: the ranks "
                                  "the cutoff rule reads next are not in the run")
        if changed:
            lower[(*key, m)], upper[(*key, m)] = lo, hi
    if reasons:
        undetermined[key] = {**undetermined.get(key, {}), **reasons}
        possibly_empty.setdefault(key, np.zeros(len(scored), bool))


def _bound_pass(
    lineage: Lineage, target: Target, credit: Credit, queries: Sequence[QueryLike],
    scored: Sequence[str], rankings: Sequence[Sequence[str]], depth: int | None,
    measures: Sequence[Measure], got: dict[Measure, NDArray[np.float64]],
) -> _Open:
    """Replace, in ``got``, every value the partial lineage does not determine by NaN, and
    return its bounds (module :mod:`tiap.scoring.bounds`). Where the bounds agree (within
    float noise), the value and both bounds are the lower one."""

    index = bounds_index(lineage, target)
    n = len(scored)
    lower = {m: got[m].copy() for m in measures}
    upper = {m: got[m].copy() for m in measures}
    maybe_empty = np.zeros(n, bool)
    defined_now = np.zeros(n, bool)
    reasons: dict[str, str] = {}
    solve = group_bounds if credit == "group" else set_b
    placeholders = any(it.placeholder is not None for it in lineage.items.values())
    members = np.full(n, -1, np.int64) if placeholders else None
    for i, (q, r) in enumerate(zip(queries, rankings, strict=True)):
        if members is not None:
            members[i] = _union_size(lineage, target, q.evidence)
        ranked = r[:depth] if depth is not None else r
        problem = query_problem(index, q.evidence, ranked,
                                collection=getattr(q, "collection_id", None) or None)
        if exact_problem(problem, credit):
            continue
        if not problem.units:
            continue  # no group can exist: a zero-target case, as on certain lineage
        was_undefined = bool(np.isnan(got[measures[0]][i]))
        bounds = solve(problem, measures)
        empty = (problem.possibly_empty if credit == "group"
                 else problem.set_size[0] == 0 and not problem.proven_nonempty)
        determined = not empty and all(hi - lo <= _SAME for lo, hi in bounds.values())
        for m in measures:
            lo, hi = bounds[m]
            if hi - lo <= _SAME:
                lower[m][i] = upper[m][i] = got[m][i] = lo
            else:
                lower[m][i], upper[m][i], got[m][i] = lo, hi, np.nan
        if determined:
            continue  # every value agrees under every lineage the store allows
        maybe_empty[i] = empty
        defined_now[i] = was_undefined
        reasons[scored[i]] = _why(problem, credit, empty)
    return _Open(bool(reasons), lower, upper, maybe_empty, defined_now, reasons, members)


def _union_size(lineage: Lineage, target: Target, evidence: Sequence[str]) -> int:
    """Items in the union of the certain groups, a placeholder counting as the items it
    stands for; -1 when one stands for an unknown number of items."""
    seen: set[str] = set()
    n = 0
    for u in dict.fromkeys(evidence):
        for iid in lineage.family(u):
            it = lineage.items[iid]
            if iid in seen or not target.matches(it):
                continue
            seen.add(iid)
            if it.placeholder is None:
                n += 1
            elif it.placeholder.count is None:
                return -1
            else:
                n += it.placeholder.count
    return n


def _why(problem: Any, credit: str, empty: bool) -> str:
    parts = []
    n_maybe = problem.n_units - problem.certain_groups.bit_count()
    if n_maybe:
        parts.append(f"{n_maybe} of {problem.n_units} groups may or may not exist")
    open_items = sum(1 for p in problem.positions if p.possible != p.certain)
    if open_items:
        parts.append(f"{open_items} ranked items of undetermined group")
    if credit == "set" and problem.set_size[1] != problem.set_size[0]:
        hi = problem.set_size[1]
        parts.append(f"{problem.set_size[0]} to {'more' if hi is None else hi} members")
    if empty:
        parts.append("the target may be empty")
    return "; ".join(parts) or "undetermined lineage"


# ------------------------------------------------------------------------------------------
# targets from qrels files


def qrels_targets(
    qrels: Qrels,
    queries: IdIndex | Sequence[str],
    items: IdIndex,
    *,
    name: str = "qrels",
) -> tuple[Targets, dict[str, str]]:
    """The :class:`Targets` of ``queries`` (row order) under one qrels file, in ``items``' codes.

    Every relevant judgment (``rel > 0``) of a query becomes a group of one item, so
    ``G = |R|``: group credit then equals set credit (each relevant item is credited at its
    own rank, nDCG's ideal is ``min(|R|, k)`` ones, Recall is ``|top-k ∩ R| / |R|``), which
    is trec_eval's definition. One group holding all of ``R`` would instead make every
    measure a "first relevant item" measure (``G = 1``). With graded qrels (a relevance
    above 1) the relevances are the set-credit gains (``nDCG`` with linear gain, as
    trec_eval's ``ndcg_cut``); binary measures count every relevant item.

    Qrels ids that ``items`` does not hold get codes past its end (distinct, never ranked).
    Returns the targets and, in query order, why each query without a relevant judgment is
    undefined (``{query_id: reason}``).
    """
    if not isinstance(queries, IdIndex):
        queries = IdIndex(queries)
    return qrels_lines(qrels, queries, items).targets(queries, name=name)


@dataclass(frozen=True)
class QrelsLines:
    """A qrels file's relevant judgments of some queries, ready for :class:`Targets`: each
    judgment's query row (sorted), item code and relevance, and which rows the file judges
    at all. :meth:`shard` cuts out consecutive rows, so a query shard carries only its own
    judgments."""

    rows: NDArray[np.int32]
    items: NDArray[np.int32]
    relevance: NDArray[np.floating]
    judged: NDArray[np.bool_]
    graded: bool

    def shard(self, start: int, stop: int) -> QrelsLines:
        """The judgments of rows ``start:stop``, rows counted from ``start``."""
        lo, hi = np.searchsorted(self.rows, [start, stop]).tolist()
        return QrelsLines(self.rows[lo:hi] - np.int32(start), self.items[lo:hi],
                          self.relevance[lo:hi], self.judged[start:stop], self.graded)

    def targets(self, queries: IdIndex | Sequence[str], *,
                name: str = "qrels") -> tuple[Targets, dict[str, str]]:
        """The targets of the rows (``queries``: their ids) and the undefined queries'
        reasons, as :func:`qrels_targets`."""
        n_queries = len(queries)
        counts = np.bincount(self.rows, minlength=n_queries)
        targets = known_distinct(Targets(  # a qrels file judges an id once per query
            group_ptr=np.concatenate([[0], np.cumsum(counts)]),
            member_ptr=np.arange(self.rows.size + 1, dtype=np.int64),
            items=self.items,
            relevance=self.relevance.astype(np.float64) if self.graded else None,
        ))
        empty = np.flatnonzero(counts == 0)
        ids = (queries.take(empty) if isinstance(queries, IdIndex)
               else [queries[i] for i in empty.tolist()])
        non_relevant = f"only non-relevant judgments (rel <= 0) in qrels {name!r}"
        unjudged = f"no judgment in qrels {name!r}"
        reasons = dict(zip(ids, [non_relevant if j else unjudged
                                 for j in self.judged[empty].tolist()], strict=True))
        return targets, reasons


def qrels_lines(qrels: Qrels, queries: IdIndex, items: IdIndex) -> QrelsLines:
    """The relevant judgments of ``queries`` (rows) in one qrels file, in ``items``' codes
    (see :func:`qrels_targets`)."""
    n_queries = len(queries)
    row_of = queries.codes(qrels.query_ids).astype(np.int32)  # int32 keeps 10^7 lines small
    rows = row_of[qrels.query]
    keep = qrels.relevance > 0
    keep &= rows >= 0
    rows = rows[keep]
    codes = items.codes(qrels.items)
    unknown = codes < 0
    codes[unknown] = len(items) + np.arange(int(unknown.sum()))
    member_items = codes.astype(np.int32)[qrels.item[keep]]
    relevance = qrels.relevance[keep]
    del keep
    if rows.size > 1 and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")
        rows, member_items, relevance = rows[order], member_items[order], relevance[order]
    judged = np.zeros(n_queries, bool)
    judged[row_of[row_of >= 0]] = True
    return QrelsLines(rows, member_items, relevance, judged, qrels.graded)


def _check_systems(names: Sequence[str]) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TiapError(f"two runs have the same system name: {', '.join(dupes)}; name them "
                        "with NAME=PATH")
    if not names:
        raise TiapError("no run to score")


def check_qrels_stores(runs: Sequence[ColumnarRun], qrels: Mapping[str, Qrels]) -> None:
    """Refuse to score a run against another store's qrels when both files say their store
    (a TIAP trace's header; qrels written by ``tiap targets``): item ids are only unique
    within a store. Runs and qrels read from no file say nothing."""

    named = [(q.source, qrels_store(q.source)) for q in qrels.values() if q.source is not None]
    problems = []
    for path in dict.fromkeys(r.source for r in runs if r.source is not None):
        run_store = trace_store(path)
        for qpath, q_store in named:
            if run_store is not None and q_store is not None and run_store != q_store:
                problems.append(Problem(
                    f"the run ranks items of store {run_store!r}, but {qpath} holds the "
                    f"targets of store {q_store!r}: item ids are only unique within a store, "
                    f"so use {run_store}'s qrels", file=str(path)))
    if problems:
        raise TiapError(problems=problems)


def rescore_qrels(
    runs: Sequence[ColumnarRun],
    qrels: Mapping[str, Qrels],
    *,
    measures: str | Iterable[str | Measure] = "nDCG@60,R@60,RR@60,Success@60",
    credit: str = "group",
    missing: Missing = "skip",
    depth: int | None = None,
) -> Scores:
    """Score every run under every qrels file (each one target, named by its key).

    Args:
        runs: columnar runs (:func:`tiap.runs.read_run_columnar`), one system
            each; system names must be unique.
        qrels: target name -> qrels (:func:`tiap.runs.read_qrels`).
        measures: measure names.
        credit: ``group`` or ``set``; the same on binary qrels (:func:`qrels_targets`).
            Graded qrels need ``set``.
        missing: a judged query the run does not rank: ``skip`` (reported, left out) or
            ``zero`` (scored as an empty ranking).
        depth: cut every ranking to its top ``depth``.

    The queries scored for a run are the run's queries that some qrels file judges (in the
    run's order), plus, with ``missing="zero"``, the judged queries it does not rank. A
    query that one qrels file does not judge, or judges only as non-relevant, is undefined
    (NaN) under that target, with its reason; trec_eval instead drops the first kind and
    scores the second 0.

    A run ranking ``a`` then ``b`` for ``q1``, where only ``b`` is relevant: RR@10 = 1/2,
    Success@1 = 0::

        >>> from pathlib import Path
        >>> _ = Path("run.trec").write_text("q1 Q0 a 1 2.0 bm25\\nq1 Q0 b 2 1.0 bm25\\n")
        >>> _ = Path("gold.qrels").write_text("q1 0 b 1\\n")
        >>> from tiap.runs import read_qrels, read_run_columnar
        >>> scores = rescore_qrels(read_run_columnar("run.trec"),
        ...                        {"gold": read_qrels("gold.qrels")}, measures="RR@10,Success@1")
        >>> [(r["target"], r["measure"], r["mean"]) for r in scores.summary_rows()]
        [('gold', 'RR@10', 0.5), ('gold', 'Success@1', 0.0)]
    """
    mode = check_credit(credit)
    ms = parse_measures(measures)
    if missing not in ("skip", "zero"):
        raise TiapError(f"missing must be 'skip' or 'zero', got {missing!r}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise TiapError(f"depth must be a non-negative integer, got {depth!r}")
    _check_systems([r.system for r in runs])
    if not qrels:
        raise TiapError("no qrels file: pass at least one --qrels NAME=PATH")
    check_qrels_stores(runs, qrels)
    targets = tuple(
        QrelsTarget(n, None if q.source is None else str(q.source), q.graded)
        for n, q in qrels.items()
    )
    graded = [t.name for t in targets if t.graded]
    if graded and mode == "group":
        raise TiapError(f"qrels {', '.join(map(repr, graded))} grade relevance above 1: "
                        "graded gains are only defined for set credit (--credit set)")

    engine = current_engine()
    judged = IdIndex.union(q.query_ids for q in qrels.values())
    whole = max((r.rankings.shape[1] for r in runs), default=1)
    whole = max(1, min(whole, depth) if depth is not None else whole)
    flip_ks = tuple(sorted({1, *(hit_cutoff(m, ms) or whole for m in ms)}))
    options = engine.share(_Options(targets, ms, mode, depth, None, flip_ks))
    whole = engine.query_shard is None
    shared_qrels = engine.share(dict(qrels)) if whole else None
    qids_by_system: dict[str, tuple[str, ...]] = {}
    reports: dict[str, SystemReport] = {}
    jobs: list[_QrelsShard] = []
    parts: dict[str, list[_Scored]] = {}

    for run in runs:
        ranked = IdIndex(run.query_ids)
        in_run = judged.codes(ranked) >= 0
        matrix = run.rankings
        scored = list(run.query_ids)
        not_in_file: tuple[str, ...] = ()
        if not in_run.all():
            not_in_file = tuple(ranked.take(np.flatnonzero(~in_run)))
            keep = np.flatnonzero(in_run)
            matrix = matrix[keep]
            scored = ranked.take(keep)
        not_in_run = tuple(judged.take(np.flatnonzero(ranked.codes(judged) < 0)))
        if missing == "zero" and not_in_run:
            empty = np.full((len(not_in_run), matrix.shape[1]), -1, np.int32)
            matrix = np.concatenate([matrix, empty])
            scored.extend(not_in_run)
        _nothing_to_score(run, scored, list(ranked.take(np.arange(min(3, len(ranked))))),
                          list(judged.take(np.arange(min(3, len(judged))))), "qrels files")
        if depth is not None and depth < matrix.shape[1]:
            matrix = matrix[:, :depth]
        changed = bool(not_in_file) or (missing == "zero" and bool(not_in_run))
        ids = IdIndex(scored) if changed else ranked
        if whole:  # a task per run, all runs at once: each task finds its judgments
            jobs.append(_QrelsShard(run.system, options, ids, matrix,
                                    qrels=shared_qrels, items=engine.share(run.items)))
        else:  # the run's judgments found here once, each shard sent its own
            lines = {t.name: qrels_lines(qrels[t.name], ids, run.items) for t in targets}
            step = engine.query_shard or len(scored)
            shards = [_QrelsShard(run.system, options, tuple(scored[a:a + step]),
                                  matrix[a:a + step],
                                  lines={n: ln.shard(a, a + step) for n, ln in lines.items()})
                      for a in range(0, len(scored), step)]
            del lines
            parts[run.system] = engine.map(_score_qrels_shard, shards)
        reports[run.system] = SystemReport(
            system=run.system,
            store="-",
            queries_in_run=run.n_queries,
            scored_queries=len(scored),
            not_in_queries_file=not_in_file,
            not_in_run=not_in_run,
            missing_policy=missing,
            run_warnings=_run_findings(run, notes=False),
            run_notes=_run_findings(run, notes=True),
            universe="qrels files",
        )
        qids_by_system[run.system] = tuple(scored)
        del matrix

    for job, part in zip(jobs, engine.map(_score_qrels_shard, jobs), strict=True):
        parts[job.system] = [part]
    names = [r.system for r in runs]
    merged = _Scored.concat([parts[s] for s in names], names, targets, ms, flip_ks)
    for s in names:
        reports[s] = replace(reports[s], zero_target=merged.zero[s])
    return Scores(
        systems=tuple(r.system for r in runs),
        targets=targets,
        measures=ms,
        credit=mode,
        query_ids=qids_by_system,
        values=merged.values,
        flips=merged.flips,
        reports=reports,
        zero_reasons=merged.zero_reasons,
        zero_codes=merged.zero_codes,
        target_sizes=merged.target_sizes,
        whole_k=whole,
    )


@dataclass(frozen=True)
class _QrelsShard:
    """Consecutive scored queries of one columnar run (a task): their rows of its matrix,
    and their judgments (``lines``), or what to find them in (a whole run's task)."""

    system: str
    options: Shared[_Options]
    query_ids: IdIndex | tuple[str, ...]
    rankings: NDArray[np.int32]
    lines: Mapping[str, QrelsLines] | None = None
    qrels: Shared[dict[str, Qrels]] | None = None
    items: Shared[IdIndex] | None = None


def _score_qrels_shard(job: _QrelsShard) -> _Scored:
    """Score one query shard of a columnar run under every qrels file (as
    :func:`_score_shard`: the shards give the whole run's values)."""
    o = job.options.get()
    flip_measures = [parse_measures(f"Success@{k}")[0] for k in o.flip_ks]
    index = RankingIndex(job.rankings)
    queries = job.query_ids
    lines = job.lines
    if lines is None:  # a whole run's task (its query ids an IdIndex)
        assert isinstance(queries, IdIndex) and job.qrels is not None and job.items is not None
        qrels, items = job.qrels.get(), job.items.get()
        lines = {t.name: qrels_lines(qrels[t.name], queries, items) for t in o.targets}
    out = _Scored(n=len(queries), zero={job.system: {}})
    for t in o.targets:
        key = (job.system, t.name)
        coded, reasons = lines[t.name].targets(queries, name=t.name)
        out.zero[job.system][t.name] = len(reasons)
        out.zero_reasons[key] = reasons
        # in a qrels file: no judgment = no evidence; only rel <= 0 = no member credited
        out.zero_codes[key] = {
            q: "no_members" if r.startswith("only non-relevant") else "no_evidence"
            for q, r in reasons.items()}
        out.target_sizes[key] = (coded.group_counts, coded.set_sizes)
        got = index.score(coded, [*o.measures, *flip_measures], o.credit)
        for m in o.measures:
            out.values[(*key, m)] = got[m]
        for k, fm in zip(o.flip_ks, flip_measures, strict=True):
            out.flips[(*key, k)] = got[fm]
    return out
