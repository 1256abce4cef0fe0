"""Contested credits: the retrieved items a relaxed target credits and Raw does not.

For one query, one system (a saved ranking) and one relaxed target ``T`` (``source`` or
``canonical`` by default), walk the ranking's top ``k`` with ``T``'s credit rule (the credit
mode of the rescoring: ``group`` or ``set``, :func:`tiap.scoring.score`). A retrieved item
is a *contested credit* when it earns gain under ``T`` and is not a member of the query's
Raw target (the union of its Raw groups): lineage alone gave it credit. The query has a
*case* under ``T`` when it has at least one contested credit; the case records

- the first contested credit: its rank (the paper's *credited rank*), id, kind and text;
- every contested credit (rank, id, kind), for the graded targets;
- the *raw support*: the first retrieved item credited under Raw, when Raw also hits
  within ``k`` (``case_type`` is then ``raw_hit``, else ``raw_miss``);
- the values of the measure (``nDCG@k``) under Raw and under ``T``, read from the
  rescoring's ``per_query.csv``;
- the question, the reference answer and the texts the judges read;
- the *store* of the run (its name, :func:`tiap.scoring.rescore.store_lineages`): item ids
  are unique only within a store, so a case's item is ``(store, item_id)``
  (:class:`tiap.ids.ItemKey`) and every label of it keeps the store.

The paper's 1,902 audited cases are exactly its ``raw_miss`` cases under Source and
Canonical (every row of its ``all_audit_cases.csv`` has Raw nDCG 0 and no raw support).

``case_id`` is ``SYSTEM:QUERY_ID:TARGET``. Rank buckets are ``1-5``, ``6-20``, ``21-60``
(the paper's) and ``61+``.

Sampling (:func:`sample_cases`): ``all``, or ``stratified``: the cases are split into strata
by (dataset, system, case type, rank bucket), and up to ``per_stratum`` cases are drawn
from each without replacement by a ``numpy`` Generator seeded with ``seed`` (strata in
sorted order, cases in ``case_id`` order before drawing), so a rerun draws the same cases.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tiap.errors import Problem, TiapError
from tiap.ids import ItemKey
from tiap.io import iter_jsonl, split_named, write_jsonl
from tiap.provenance import read_manifest, recorded_inputs, verify_input
from tiap.scoring.folder import read_per_query
from tiap.scoring.measures import parse_measure, primary_measure

__all__ = [
    "RANK_BUCKETS",
    "Case",
    "ContestedItem",
    "RescoreInputs",
    "contested_cases",
    "rank_bucket",
    "read_cases",
    "sample_cases",
    "write_cases",
]

RANK_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1-5", 1, 5), ("6-20", 6, 20), ("21-60", 21, 60), ("61+", 61, None),
)
Sampling = Literal["all", "stratified"]


_BUCKET_ORDER = {name: i for i, (name, _, _) in enumerate(RANK_BUCKETS)}


def _stratum_order(key: tuple[str, ...]) -> tuple[object, ...]:
    """Strata sorted by dataset, system, case type, then rank bucket in rank order."""
    return (*key[:-1], _BUCKET_ORDER.get(key[-1], len(_BUCKET_ORDER)), key[-1])


def rank_bucket(rank: int) -> str:
    """The paper's rank bucket of a 1-based rank: ``1-5``, ``6-20``, ``21-60`` (or ``61+``)."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise TiapError(f"a rank is a positive integer, got {rank!r}")
    for name, lo, hi in RANK_BUCKETS:
        if rank >= lo and (hi is None or rank <= hi):
            return name
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class ContestedItem:
    """One retrieved item credited by the relaxed target and not a Raw member."""

    rank: int
    item_id: str
    kind: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "item_id": self.item_id, "kind": self.kind}


@dataclass(frozen=True)
class Case:
    """One contested credit to judge (one line of ``cases.jsonl``).

    Example: a case as :func:`contested_cases` finds it, or built by hand for a judge.

    >>> c = Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...          "Where did Caroline go?", "the park", credited_rank=3, store="s1")
    >>> c.rank_bucket, c.stratum, str(c.item_key)
    ('1-5', ('', 'A', 'raw_miss', '1-5'), 's1/m1')
    >>> c.to_json()["item_text"]
    'Caroline visited the park.'
    """

    case_id: str
    system: str
    query_id: str
    target: str
    item_id: str
    item_text: str
    question: str
    answer: str
    credited_rank: int
    item_kind: str = ""
    dataset: str = ""
    store: str = ""  # the run's store ("" in files written before stores were named)
    raw_target: str = "raw"
    case_type: str = "raw_miss"
    measure: str = ""
    credit: str = "group"
    k: int | None = None
    raw_value: float | None = None
    target_value: float | None = None
    raw_support_rank: int | None = None
    raw_support_item_id: str | None = None
    raw_support_text: str | None = None
    contested: tuple[ContestedItem, ...] = ()
    category: str = ""
    collection: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: where the case was read from (file, line); not part of its value
    origin: tuple[str, int] | None = field(default=None, compare=False, repr=False)

    @property
    def item_key(self) -> ItemKey:
        """The credited item's identity, ``(store, item_id)``."""
        return ItemKey(self.store, self.item_id)

    @property
    def rank_bucket(self) -> str:
        return rank_bucket(self.credited_rank)

    @property
    def stratum(self) -> tuple[str, str, str, str]:
        """(dataset, system, case type, rank bucket): the sampling stratum."""
        return (self.dataset, self.system, self.case_type, self.rank_bucket)

    def judged_fields(self) -> dict[str, Any]:
        """The fields a judge may read. A judge's request (:meth:`Judge.request
        <tiap.audit.judges.Judge.request>`) is built from some of them, and only what it
        sends keys its verdict."""
        return {
            "question": self.question,
            "answer": self.answer,
            "item_text": self.item_text,
            "item_kind": self.item_kind,
            "raw_support_text": self.raw_support_text,
        }

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "case_id": self.case_id,
            "dataset": self.dataset,
            "system": self.system,
            "store": self.store or None,
            "query_id": self.query_id,
            "target": self.target,
            "raw_target": self.raw_target,
            "case_type": self.case_type,
            "rank_bucket": self.rank_bucket,
            "credited_rank": self.credited_rank,
            "item_id": self.item_id,
            "item_kind": self.item_kind,
            "item_text": self.item_text,
            "question": self.question,
            "answer": self.answer,
            "category": self.category,
            "collection": self.collection,
            "measure": self.measure,
            "credit": self.credit,
            "k": self.k,
            "raw_value": _num(self.raw_value),
            "target_value": _num(self.target_value),
            "raw_support_rank": self.raw_support_rank,
            "raw_support_item_id": self.raw_support_item_id,
            "raw_support_text": self.raw_support_text,
            "contested": [c.to_json() for c in self.contested],
        }
        if self.extra:
            row["extra"] = dict(self.extra)
        return row

    @classmethod
    def from_json(cls, obj: Any, *, file: str | Path | None = None,
                  line: int | None = None) -> Case:
        where: dict[str, Any] = {"file": file, "line": line}
        if not isinstance(obj, dict):
            raise TiapError("a case must be a JSON object", **where)
        missing = [k for k in ("case_id", "item_id", "question", "credited_rank")
                   if obj.get(k) in (None, "")]
        if missing:
            raise TiapError(f"case has no {', '.join(repr(m) for m in missing)}", **where)
        try:
            rank = int(obj["credited_rank"])
            contested = tuple(ContestedItem(int(c["rank"]), str(c["item_id"]),
                                            str(c.get("kind") or ""))
                              for c in obj.get("contested") or ())
        except (TypeError, ValueError, KeyError) as exc:
            raise TiapError(f"bad rank in case ({exc})", record=str(obj["case_id"]),
                            **where) from None
        if rank < 1:
            raise TiapError("credited_rank must be a positive integer",
                            record=str(obj["case_id"]), **where)
        k = obj.get("k")
        rsr = obj.get("raw_support_rank")
        return cls(
            case_id=str(obj["case_id"]),
            system=str(obj.get("system") or ""),
            query_id=str(obj.get("query_id") or ""),
            target=str(obj.get("target") or ""),
            item_id=str(obj["item_id"]),
            item_text=str(obj.get("item_text") or ""),
            question=str(obj["question"]),
            answer=str(obj.get("answer") or ""),
            credited_rank=rank,
            item_kind=str(obj.get("item_kind") or ""),
            dataset=str(obj.get("dataset") or ""),
            store=str(obj.get("store") or ""),
            raw_target=str(obj.get("raw_target") or "raw"),
            case_type=str(obj.get("case_type") or "raw_miss"),
            measure=str(obj.get("measure") or ""),
            credit=str(obj.get("credit") or "group"),
            k=None if k is None else int(k),
            raw_value=_float_or_none(obj.get("raw_value")),
            target_value=_float_or_none(obj.get("target_value")),
            raw_support_rank=None if rsr in (None, "") else int(rsr),
            raw_support_item_id=obj.get("raw_support_item_id") or None,
            raw_support_text=obj.get("raw_support_text") or None,
            contested=contested,
            category=str(obj.get("category") or ""),
            collection=str(obj.get("collection") or ""),
            extra=dict(obj.get("extra") or {}),
            origin=None if file is None or line is None else (str(file), line),
        )


def _num(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _float_or_none(v: Any) -> float | None:
    if v in (None, ""):
        return None
    f = float(v)
    return None if math.isnan(f) else f


def read_cases(path: str | Path) -> list[Case]:
    """Read ``cases.jsonl``; a repeated ``case_id`` is an error naming both lines.

    Example:

    >>> c = Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...          "Where did Caroline go?", "the park", credited_rank=1)
    >>> write_cases("cases.jsonl", [c, c])
    2
    >>> read_cases("cases.jsonl")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: cases.jsonl:2, record A:q1:canonical: duplicate case id (first on line 1)
    >>> write_cases("cases.jsonl", [c])
    1
    >>> read_cases("cases.jsonl") == [c]
    True
    """
    out: list[Case] = []
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    for line, obj in iter_jsonl(path):
        c = Case.from_json(obj, file=path, line=line)
        if c.case_id in seen:
            problems.append(Problem(f"duplicate case id (first on line {seen[c.case_id]})",
                                    file=str(path), line=line, record=c.case_id))
            continue
        seen[c.case_id] = line
        out.append(c)
    if problems:
        raise TiapError(problems=problems)
    return out


def write_cases(path: str | Path, cases: Iterable[Case]) -> int:
    """Atomically write ``cases.jsonl``; returns the number of cases.

    Example: one JSON object per line (:meth:`Case.to_json`, with the rank bucket).

    >>> c = Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...          "Where did Caroline go?", "the park", credited_rank=7)
    >>> write_cases("cases.jsonl", [c])
    1
    >>> import json
    >>> row = json.loads(open("cases.jsonl").readline())
    >>> row["case_id"], row["credited_rank"], row["rank_bucket"]
    ('A:q1:canonical', 7, '6-20')
    """
    return write_jsonl(path, (c.to_json() for c in cases))


# ------------------------------------------------------------------------------------------
# finding contested credits


def _credited(ranking: Sequence[str], groups: Sequence[Sequence[str]], k: int,
              credit: str) -> list[int]:
    """0-based ranks (within the top ``k``) of the items that earn gain under ``groups``.

    ``group`` credit: an item earns gain when it belongs to a group not yet matched (every
    unmatched group it belongs to is then matched). ``set`` credit: every member earns gain.
    """
    top = ranking[:k]
    seen = set(top)  # only the retrieved members are looked up: a group may be large
    member_of: dict[str, list[int]] = {}
    for g, members in enumerate(groups):
        for m in seen.intersection(members):
            member_of.setdefault(m, []).append(g)
    out: list[int] = []
    matched: set[int] = set()
    for i, item in enumerate(top):
        gs = member_of.get(item)
        if not gs:
            continue
        if credit == "set":
            out.append(i)
            continue
        new = [g for g in gs if g not in matched]
        if new:
            matched.update(new)
            out.append(i)
    return out


def _case(system: str, q: Any, target: str, ids: Sequence[str], h: int, hits: Sequence[int],
          raw_hits: Sequence[int], items: Mapping[str, Any], *, store: str, dataset: str,
          raw_target: str, measure: str, credit: str, k: int,
          values: Mapping[tuple[str, str, str], float], each: bool) -> Case:
    """The case of the contested credit at 0-based rank ``h`` of ranking ``ids``."""
    item = items.get(ids[h])
    raw_item = ids[raw_hits[0]] if raw_hits else None
    raw_it = items.get(raw_item) if raw_item else None
    return Case(
        case_id=f"{system}:{q.query_id}:{target}" + (f":{ids[h]}" if each else ""),
        system=system,
        query_id=q.query_id,
        target=target,
        item_id=ids[h],
        item_text=(item.text or "") if item is not None else "",
        item_kind=item.kind if item is not None else "",
        question=q.question,
        answer=q.answer or "",
        credited_rank=h + 1,
        dataset=dataset,
        store=store,
        raw_target=raw_target,
        case_type="raw_hit" if raw_hits else "raw_miss",
        measure=measure,
        credit=credit,
        k=k,
        raw_value=values.get((system, raw_target, q.query_id)),
        target_value=values.get((system, target, q.query_id)),
        raw_support_rank=raw_hits[0] + 1 if raw_hits else None,
        raw_support_item_id=raw_item,
        raw_support_text=raw_it.text if raw_it is not None else None,
        contested=tuple(ContestedItem(i + 1, ids[i], items[ids[i]].kind if ids[i] in items
                                      else "") for i in hits),
        category=q.category,
        collection=q.collection_id,
    )


def contested_cases(
    runs: Sequence[Any],
    queries: Sequence[Any],
    stores: Mapping[str | None, Any],
    *,
    targets: Sequence[str] = ("source", "canonical"),
    raw_target: str = "raw",
    target_defs: Sequence[Any] | None = None,
    k: int = 60,
    credit: str = "group",
    values: Mapping[tuple[str, str, str], float] | None = None,
    measure: str = "",
    dataset: str | Mapping[str, str] | None = None,
    each: bool = False,
    shared: RescoreInputs | None = None,
) -> list[Case]:
    """Every contested credit of every run, as cases (in run, query, target order).

    Args:
        runs: :class:`tiap.runs.Run` objects (one system each).
        queries: the queries (``query_id``, ``question``, ``answer``, ``evidence``, ...).
        stores: store label -> :class:`~tiap.memory.store.Store`, items or lineage, as for
            :func:`tiap.scoring.rescore.rescore`: the key ``None`` serves every run without a
            store of its own name. Each case records the name of its run's store
            (:func:`tiap.scoring.rescore.store_lineages`; two different stores under one name
            are an error).
        targets: the relaxed targets to audit.
        raw_target: the strict target whose members are never contested.
        target_defs: target names or ``name=spec`` definitions to build the groups with
            (default: ``raw_target`` and ``targets``); a rescoring's manifest records them.
        k: the depth of the walk (the measure's cutoff).
        credit: ``group`` or ``set``, the rescoring's credit mode.
        values: ``(system, target, query_id) -> value`` of the measure (``per_query.csv``).
        measure: the measure's name, recorded in each case.
        dataset: the dataset name of every case, or ``system -> dataset``; by default the
            run's ``benchmark``, else a ``dataset`` or ``benchmark`` field of the query.
        each: one case per contested credit (``case_id`` ``SYSTEM:QUERY:TARGET:ITEM``)
            instead of one per (query, system, target) for the first: every contested item
            then gets a label, for the graded targets.
        shared: the :class:`RescoreInputs` that ``runs``, ``queries`` and ``stores`` come
            from: its store lineages and target groups are used, and kept for the next step.

    Example: the store holds a raw turn and a derived fact for each of two evidence turns.
    System ``A`` ranks the fact ``m1`` above the turn ``t1`` for ``q1``, and only the fact
    ``m2`` for ``q2``. Under Source and Canonical each fact earns the gain at rank 1, and
    neither is a Raw member: four cases. Raw credits ``t1`` at rank 2 (``raw_hit``) and
    nothing for ``q2`` (``raw_miss``).

    >>> from tiap.datasets import Query
    >>> from tiap.memory import Item
    >>> from tiap.runs import Ranking, Run
    >>> queries = [Query("q1", "c1", "Where did Caroline go?", "the park", "", ("d1:1",)),
    ...            Query("q2", "c1", "What is the dog called?", "Max", "", ("d1:2",))]
    >>> items = [Item("t1", "raw", ("d1:1",), text="Caroline: I went to the park."),
    ...          Item("m1", "fact", ("d1:1",), text="Caroline visited the park."),
    ...          Item("t2", "raw", ("d1:2",), text="Melanie: our dog is Max."),
    ...          Item("m2", "fact", ("d1:2",), text="Melanie has a dog.")]
    >>> run = Run("A", (Ranking("q1", "A", ("m1", "t1")), Ranking("q2", "A", ("m2",))))
    >>> cases = contested_cases([run], queries, {None: items}, k=5)
    >>> for c in cases:
    ...     print(c.case_id, c.item_id, c.credited_rank, c.case_type, c.raw_support_rank)
    A:q1:source m1 1 raw_hit 2
    A:q1:canonical m1 1 raw_hit 2
    A:q2:source m2 1 raw_miss None
    A:q2:canonical m2 1 raw_miss None
    >>> cases[0].item_text, cases[0].answer, cases[0].store
    ('Caroline visited the park.', 'the park', 'default')
    """
    from tiap.scoring.rescore import store_lineages
    from tiap.targets import build_groups

    if credit not in ("group", "set"):
        raise TiapError(f"credit must be 'group' or 'set', got {credit!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise TiapError(f"k must be a positive integer, got {k!r}")
    if raw_target in targets:
        raise TiapError(f"the strict target {raw_target!r} cannot also be audited")
    defs = list(target_defs) if target_defs is not None else [raw_target, *targets]
    qlist = list(queries)
    qby = {q.query_id: q for q in qlist}
    values = values or {}
    for run in runs:
        if run.system not in stores and None not in stores:
            raise TiapError(f"no store for run {run.system!r}")
    run_stores = shared.lineages() if shared is not None else store_lineages(runs, stores)
    # store name -> its target sets
    groups_of: dict[str, Any] = shared.groups(defs) if shared is not None else {}
    out: list[Case] = []
    for run in runs:
        sname, lineage = run_stores[run.system]
        if sname not in groups_of:
            groups_of[sname] = build_groups(lineage, qlist, defs)
        tsets = groups_of[sname]
        items = lineage.items
        if isinstance(dataset, str):
            ds_run = dataset
        elif isinstance(dataset, Mapping) and run.system in dataset:
            ds_run = dataset[run.system]
        else:
            ds_run = run.benchmark or ""
        raw_tg = tsets[raw_target]
        target_tgs = [(t, tsets[t]) for t in targets]
        for ranking in run.rankings:
            q = qby.get(ranking.query_id)
            if q is None:
                continue
            ids = ranking.item_ids
            raw_groups = raw_tg[q.query_id]
            # what Raw credits, and the dataset, only for a query with a contested credit
            raw_members: set[str] | None = None
            raw_hits: list[int] | None = None
            ds = ""
            for t, tg in target_tgs:
                groups = tg[q.query_id]
                if not groups:
                    continue
                credited = _credited(ids, groups, k, credit)
                if not credited:
                    continue
                if raw_members is None:
                    raw_members = {i for g in raw_groups for i in g}
                hits = [i for i in credited if ids[i] not in raw_members]
                if not hits:
                    continue
                if raw_hits is None:
                    raw_hits = _credited(ids, raw_groups, k, credit) if raw_groups else []
                    extra = dict(getattr(q, "extra", ()) or ())
                    ds = ds_run or str(extra.get("dataset") or extra.get("benchmark") or "")
                for h in hits if each else hits[:1]:
                    out.append(_case(run.system, q, t, ids, h, hits, raw_hits, items,
                                     store=sname, dataset=ds, raw_target=raw_target,
                                     measure=measure, credit=credit, k=k, values=values,
                                     each=each))
    return out


def sample_cases(cases: Sequence[Case], how: Sampling = "all", *, per_stratum: int = 10,
                 seed: int = 0) -> list[Case]:
    """All cases, or up to ``per_stratum`` per (dataset, system, case type, rank bucket).

    The draw uses ``numpy.random.default_rng(seed)`` over the strata in order (dataset,
    system, case type, rank bucket), each
    stratum's cases sorted by ``case_id``; the result keeps the input order.

    Example: four cases credited at ranks 1-5, one at 6-20, one at 21-60; at most two per
    stratum keeps two of the first four and both others, the same ones on every run.

    >>> from collections import Counter
    >>> cases = [Case(f"A:q{i}:canonical", "A", f"q{i}", "canonical", f"m{i}", "a fact",
    ...               "a question?", "an answer", credited_rank=r)
    ...          for i, r in enumerate([1, 2, 3, 4, 7, 30], start=1)]
    >>> picked = sample_cases(cases, "stratified", per_stratum=2, seed=0)
    >>> sorted(Counter(c.rank_bucket for c in picked).items())
    [('1-5', 2), ('21-60', 1), ('6-20', 1)]
    >>> picked == sample_cases(cases, "stratified", per_stratum=2, seed=0)
    True
    >>> len(sample_cases(cases))  # "all"
    6
    """
    if how == "all":
        return list(cases)
    if how != "stratified":
        raise TiapError(f"sampling must be 'all' or 'stratified', got {how!r}")
    if isinstance(per_stratum, bool) or not isinstance(per_stratum, int) or per_stratum < 1:
        raise TiapError(f"per_stratum must be a positive integer, got {per_stratum!r}")

    rng = np.random.default_rng(seed)
    strata: dict[tuple[str, ...], list[Case]] = {}
    for c in cases:
        strata.setdefault(c.stratum, []).append(c)
    chosen: set[str] = set()
    for key in sorted(strata, key=_stratum_order):
        members = sorted(strata[key], key=lambda c: c.case_id)
        if len(members) <= per_stratum:
            chosen.update(c.case_id for c in members)
        else:
            idx = rng.choice(len(members), size=per_stratum, replace=False)
            chosen.update(members[int(i)].case_id for i in idx)
    return [c for c in cases if c.case_id in chosen]


def strata_counts(cases: Iterable[Case]) -> list[dict[str, Any]]:
    """Rows ``dataset, system, case_type, rank_bucket, n`` (sorted)."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for c in cases:
        counts[c.stratum] = counts.get(c.stratum, 0) + 1
    return [{"dataset": k[0], "system": k[1], "case_type": k[2], "rank_bucket": k[3],
             "n": counts[k]} for k in sorted(counts, key=_stratum_order)]


# ------------------------------------------------------------------------------------------
# reading a `tiap rescore` output folder


@dataclass(frozen=True)
class RescoreDir:
    """What ``tiap audit`` needs from a ``tiap rescore`` folder: its manifest and values."""

    path: Path
    manifest: Mapping[str, Any]

    @classmethod
    def open(cls, path: str | Path) -> RescoreDir:
        p = Path(path)
        if not p.is_dir():
            raise TiapError("not a folder: give the output folder of `tiap rescore`", file=p)
        if not (p / "manifest.json").exists() or not (p / "per_query.csv").exists():
            raise TiapError("not a `tiap rescore` output folder (manifest.json and "
                            "per_query.csv expected)", file=p)
        return cls(p, read_manifest(p, step="rescore"))

    @property
    def options(self) -> Mapping[str, Any]:
        return self.manifest.get("options") or {}

    @property
    def credit(self) -> str:
        return str(self.options.get("credit") or "group")

    @property
    def measures(self) -> list[str]:
        return [str(m) for m in self.options.get("measures") or ()]

    @property
    def target_defs(self) -> list[str]:
        """``name=spec`` of every target the rescoring used (rebuilds the same groups)."""
        from tiap.targets import BUILTIN_TARGETS

        builtin = {t.name: t.spec for t in BUILTIN_TARGETS}
        out = []
        for t in self.options.get("targets") or ():
            if "spec" not in t:
                raise TiapError("the rescoring used qrels files as targets: a contested-credit "
                                "audit needs lineage (--items/--queries)",
                                file=self.path / "manifest.json")
            if builtin.get(t["name"]) == t["spec"]:
                out.append(t["name"])
            else:
                out.append(f"{t['name']}={t['spec']}")
        return out

    def input_paths(self, prefix: str) -> dict[str | None, Path]:
        """Inputs recorded as ``prefix`` or ``prefix:NAME`` -> {NAME or None: path}."""
        out: dict[str | None, Path] = {}
        for key, entry in (self.manifest.get("inputs") or {}).items():
            if key == prefix:
                out[None] = Path(entry["path"])
            elif key.startswith(prefix + ":"):
                out[key.split(":", 1)[1]] = Path(entry["path"])
        return out

    def default_measure(self) -> str:
        """The headline measure (:func:`tiap.scoring.measures.primary_measure`: nDCG at its
        largest cutoff), as Stage III and the report use it."""

        if not any(m.startswith("nDCG") for m in self.measures):
            raise TiapError("the rescoring has no nDCG measure; pass --measure",
                            file=self.path / "manifest.json")
        return str(primary_measure(self.measures))

    def values(self, measure: str, per_query: Any = None) -> dict[tuple[str, str, str], float]:
        """``(system, target, query_id) -> value`` of ``measure`` (undefined: NaN), from
        ``per_query`` (the :class:`tiap.scoring.folder.PerQuery` of this folder's
        ``per_query.csv``, held by the caller that wrote it) or else read from the file."""
        path = self.path / "per_query.csv"
        # the whole file is checked (finite values in range, unique rows, none missing)
        pq = (per_query if per_query is not None
              else read_per_query(path, self.manifest, self.path / "manifest.json"))
        out: dict[tuple[str, str, str], float] = {}
        for (s, t, m), arr in pq.values.items():
            if m == measure:
                for q, i in pq.order[s].items():
                    out[(s, t, q)] = float(arr[i])
        if not out:
            raise TiapError(f"per_query.csv has no value of {measure!r} (measures: "
                            f"{', '.join(self.measures)})", file=path)
        return out


def measure_cutoff(measure: str) -> int | None:
    return parse_measure(measure).cutoff


def load_rescore_inputs(
    rescore_dir: RescoreDir,
    *,
    items: Sequence[str] = (),
    queries: str | Path | None = None,
    runs: Sequence[str] = (),
    held: Mapping[Path, Any] | None = None,
) -> tuple[dict[str | None, Any], list[Any], list[Any], dict[str, Path]]:
    """Stores, queries and runs of a rescoring: the paths given, else those its manifest
    records. Returns ``(stores, queries, runs, inputs)``; each store is a
    :class:`~tiap.memory.store.Store`, named as ``tiap rescore`` names it (by its rows'
    ``store`` field, else by its folder).

    Every file is verified against the rescoring's manifest
    (:func:`tiap.provenance.verify_input`): the recorded files must still have the sha256
    the rescoring read, and a file given instead (``--run X``) must have the sha256 of the
    input it replaces (a copy), since the cases carry the rescoring's values: another run,
    store or queries file would mix its ranks with the old values (code ``input-changed``).
    A run of a system the rescoring did not score is code ``invalid-value``. ``held``: stores
    and query lists a caller already read (:func:`~tiap.memory.store.read_store`,
    :func:`~tiap.datasets.queryfile.read_queries`), by resolved path: those files are still
    checked, not read again."""
    from tiap.datasets.queryfile import read_queries
    from tiap.memory.store import read_store
    from tiap.runs import read_named_run

    rescore_dir.target_defs  # noqa: B018 - a rescoring of qrels files has no lineage to audit
    man_path = rescore_dir.path / "manifest.json"
    recorded = recorded_inputs(rescore_dir.manifest, man_path)
    digests: dict[Path, str] = {}

    def check(key: str, path: Path | None, option: str) -> Path:
        return verify_input(rescore_dir.manifest, man_path, key, path, option=option,
                            digests=digests)

    inputs: dict[str, Path] = {}
    store_paths: dict[str | None, Path] = {}
    for spec in items:
        name, path = split_named(spec, "--items")
        store_paths[name] = path
    given_stores = bool(store_paths)
    if not store_paths:
        store_paths = rescore_dir.input_paths("items")
    if not store_paths:
        raise TiapError("no store: pass --items (the rescoring's manifest names none)")
    qpath = Path(queries) if queries is not None else rescore_dir.input_paths("queries").get(None)
    if qpath is None:
        raise TiapError("no queries file: pass --queries (the rescoring's manifest names none)")
    qpath = check("queries", qpath if queries is not None else None, "--queries")
    run_specs: list[tuple[str | None, Path]] = [split_named(s, "--run") for s in runs]
    given_runs = bool(run_specs)
    if not run_specs:
        run_specs = [(n, p) for n, p in rescore_dir.input_paths("run").items()]
    if not run_specs:
        raise TiapError("no run: pass --run (the rescoring's manifest names none)")
    scored = sorted(k.split(":", 1)[1] for k in recorded if k.startswith("run:"))
    loaded: list[Any] = []
    for name, path in run_specs:
        if not given_runs:
            check(f"run:{name}", None, "--run")
        inputs[f"run:{name or path.name}"] = path
        # a plain PATH (recorded under the file's name) is every system of the file
        chosen = read_named_run((None if name == path.name else name, path), dedup="first",
                                order=rescore_dir.options.get("order") or "rank")
        if given_runs:
            for r in chosen:
                if f"run:{r.system}" not in recorded:
                    raise TiapError(
                        f"holds system {r.system!r}, which the rescoring in "
                        f"{rescore_dir.path} did not score (it scored "
                        f"{', '.join(scored) or 'no run'}): its cases would carry no values; "
                        "rescore the run first, or name a scored system (--run NAME=PATH)",
                        file=path, code="invalid-value")
                check(f"run:{r.system}", path, "--run")
        loaded.extend(chosen)
    # each run's store must be the one the rescoring gave it
    for r in loaded:
        label = r.system if r.system in store_paths else None
        if label not in store_paths:
            continue  # no store for the run: the caller says so
        key = f"items:{r.system}" if f"items:{r.system}" in recorded else "items"
        store_paths[label] = check(key, store_paths[label] if given_stores else None,
                                   "--items")
    read: dict[Path, Any] = {}  # one Store per file, however many runs it serves
    stores: dict[str | None, Any] = {}
    for n, p in store_paths.items():
        key = p.resolve()
        if key not in read:
            read[key] = held[key] if held and key in held else read_store(p)
        stores[n] = read[key]
    for n, p in store_paths.items():
        inputs[f"items:{n}" if n else "items"] = p
    qs = held.get(qpath.resolve()) if held else None
    if qs is None:
        qs = read_queries(qpath)
    inputs["queries"] = qpath
    return stores, qs, loaded, inputs


@dataclass
class RescoreInputs:
    """The stores, queries and runs of a rescoring (:func:`load_rescore_inputs`: the files
    its manifest records, each checked against its recorded sha256), read once for several
    audit steps: :func:`tiap.audit.steps.find_cases` and
    :func:`tiap.audit.steps.graded_audit` take it as ``preloaded`` and then read no input
    again; the store lineages and target groups they build are kept here and shared.
    ``per_query``: the rescoring's values (:func:`tiap.scoring.folder.per_query_of`), when
    the caller holds them; else ``per_query.csv`` is read when needed.

    Example: the rescoring of :func:`tiap.audit.steps.find_cases`'s example, read once.

    >>> import json
    >>> from pathlib import Path
    >>> import tiap
    >>> def jsonl(path, rows):
    ...     return Path(path).write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> Path("s1").mkdir()
    >>> _ = jsonl("s1/items.jsonl", [
    ...     {"item_id": "t1", "kind": "raw", "sources": ["d1:1"], "text": "I went to the park."},
    ...     {"item_id": "m1", "kind": "fact", "sources": ["d1:1"], "text": "She saw the park."}])
    >>> _ = jsonl("queries.jsonl", [{"query_id": "q1", "question": "Where did she go?",
    ...                              "answer": "the park", "evidence": ["d1:1"]}])
    >>> _ = jsonl("A.jsonl", [{"query_id": "q1", "system": "A", "ranking": ["m1", "t1"]}])
    >>> scores = tiap.rescore("A.jsonl", "queries.jsonl", "s1/items.jsonl", measures="nDCG@5",
    ...                       tokenizer="none")
    >>> _ = scores.to_folder("rs", inputs={"queries": "queries.jsonl",
    ...                                    "items": "s1/items.jsonl", "run:A": "A.jsonl"})
    >>> ins = RescoreInputs.load("rs")
    >>> [r.system for r in ins.runs], [q.query_id for q in ins.queries], sorted(ins.inputs)
    (['A'], ['q1'], ['items', 'queries', 'run:A'])
    """

    rescore: RescoreDir
    stores: dict[str | None, Any]
    queries: list[Any]
    runs: list[Any]
    inputs: dict[str, Path]
    per_query: Any = field(default=None, repr=False)
    _lineages: dict[str, Any] | None = field(default=None, repr=False)
    _groups: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, rescore_dir: str | Path | RescoreDir, *, per_query: Any = None,
             held: Mapping[Path, Any] | None = None) -> RescoreInputs:
        """Read the inputs the rescoring in ``rescore_dir`` records (checked); ``held``:
        the stores and queries a caller already read (:func:`load_rescore_inputs`)."""
        rd = rescore_dir if isinstance(rescore_dir, RescoreDir) else RescoreDir.open(
            rescore_dir)
        stores, qs, loaded, inputs = load_rescore_inputs(rd, held=held)
        return cls(rd, stores, qs, loaded, inputs, per_query)

    def lineages(self) -> dict[str, Any]:
        """:func:`tiap.scoring.rescore.store_lineages` of the runs and stores, built once."""
        from tiap.scoring.rescore import store_lineages

        if self._lineages is None:
            self._lineages = store_lineages(self.runs, self.stores)
        return self._lineages

    def groups(self, defs: Sequence[Any]) -> dict[str, Any]:
        """Store name -> its target groups under ``defs`` (filled as they are built)."""
        return self._groups.setdefault(tuple(str(d) for d in defs), {})

    def of(self, rescore_dir: str | Path, given: bool) -> RescoreInputs:
        """These inputs, checked to be those of ``rescore_dir`` with no file given instead
        (``given``: the caller was also given --items, --queries or --run)."""
        if given:
            raise TiapError("give the inputs as files (--items, --queries, --run) or "
                            "preloaded, not both", code="usage")
        if Path(rescore_dir).resolve() != self.rescore.path.resolve():
            raise TiapError(f"the preloaded inputs are those of the rescoring in "
                            f"{self.rescore.path}, not of this one", file=rescore_dir,
                            code="usage")
        return self


def iter_strata(cases: Iterable[Case]) -> Iterator[tuple[tuple[str, ...], list[Case]]]:
    """Cases grouped by stratum, strata sorted."""
    strata: dict[tuple[str, ...], list[Case]] = {}
    for c in cases:
        strata.setdefault(c.stratum, []).append(c)
    for key in sorted(strata, key=_stratum_order):
        yield key, strata[key]
