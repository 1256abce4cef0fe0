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
  kernel from ``{item: relevance}`` groups (:func:`tiap.scoring.encode_targets`). A query
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
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tiap.audit.agreement import TieRule, majority_vote
from tiap.audit.labels import GRADES, SEMANTIC_LABELS, LabelRecord
from tiap.errors import Problems, TiapError

__all__ = [
    "GradedResult",
    "RelevanceKey",
    "graded_rescore",
    "item_relevance",
    "qrels_name",
    "retained_ndcg",
    "write_graded",
]

Unjudged = Literal["keep", "partial", "drop"]
UNJUDGED: Mapping[str, int] = {"keep": 2, "partial": 1, "drop": 0}
_CODE = {lab: i for i, lab in enumerate(SEMANTIC_LABELS)}
#: (store, query_id, item_id): what one graded relevance is about.
RelevanceKey = tuple[str, str, str]


def qrels_name(store: str, target: str) -> str:
    """The graded qrels file of one store and target: ``<store>.<target>.graded.qrels``."""
    return f"{store}.{target}.graded.qrels"


def item_relevance(labels: Iterable[LabelRecord], *, tie_rule: TieRule = "conservative",
                   judges: Sequence[str] | None = None,
                   grades: Mapping[str, int] = GRADES,
                   stores: Collection[str] | None = None) -> dict[RelevanceKey, int]:
    """``(store, query_id, item_id) -> grade`` from scored labels (majority vote per key).

    Args:
        stores: the names of the stores the labels will grade. A label without a store (a
            file written before stores were named) is taken to be of the only store when
            there is exactly one; otherwise it is ambiguous (its item id may name different
            texts in different stores) and is an error naming its file, line and case.
    """
    only = next(iter(stores)) if stores is not None and len(set(stores)) == 1 else None
    votes: dict[RelevanceKey, list[int]] = {}
    problems = Problems()
    for r in labels:
        if not r.scored or (judges is not None and r.judge not in judges):
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
        votes.setdefault((store, r.query_id, r.item_id), []).append(_CODE[r.label])
    problems.raise_if_any()
    if not votes:
        return {}
    keys = list(votes)
    width = max(len(v) for v in votes.values())
    codes = np.full((len(keys), width), -1, np.int64)
    for i, k in enumerate(keys):
        codes[i, : len(votes[k])] = votes[k]
    winner, _ = majority_vote(codes, 3, "conservative" if tie_rule == "none" else tie_rule)
    return {k: int(grades[SEMANTIC_LABELS[int(w)]]) for k, w in zip(keys, winner, strict=True)}


def retained_ndcg(ranking: Sequence[str], relevance: Mapping[str, float], k: int,
                  max_grade: float = 2.0) -> float:
    """``Σ_{i<=k} (rel_i / max_grade) / log2(i+1)`` over the DCG of ``min(|S|, k)`` ones,
    ``S`` = every key of ``relevance`` (zero-relevance members included in the ideal);
    NaN when ``S`` is empty."""
    if not relevance:
        return math.nan
    dcg = 0.0
    for i, item in enumerate(ranking[:k]):
        rel = relevance.get(item)
        if rel:
            dcg += (rel / max_grade) / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevance), k)))
    return dcg / ideal


@dataclass(frozen=True)
class GradedResult:
    """Per-query rows and per (system, target) summary rows, and the graded qrels of each
    store (``qrels[store][target][query][item] = relevance``; ``systems[system] = store``)."""

    rows: tuple[dict[str, Any], ...]
    summary: tuple[dict[str, Any], ...]
    k: int
    unjudged: str
    qrels: Mapping[str, Mapping[str, Mapping[str, Mapping[str, int]]]]
    systems: Mapping[str, str]


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
    unjudged: Unjudged = "keep",
) -> GradedResult:
    """Raw, binary, graded and retained nDCG@k of every run under each relaxed target.

    ``stores`` maps run labels to stores as for :func:`tiap.scoring.rescore.rescore`;
    ``relevance`` is :func:`item_relevance`'s ``(store, query_id, item_id) -> grade``. A
    run's members are graded with the labels of its own store (by name,
    :func:`tiap.scoring.rescore.store_lineages`) only.
    """
    from tiap.scoring import RankingIndex, Vocabulary, encode_rankings, encode_targets
    from tiap.scoring.measures import parse_measures
    from tiap.scoring.rescore import store_lineages
    from tiap.targets import build_groups

    if unjudged not in UNJUDGED:
        raise TiapError(f"unjudged must be one of {', '.join(UNJUDGED)}, got {unjudged!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise TiapError(f"k must be a positive integer, got {k!r}")
    measure = parse_measures(f"nDCG@{k}")[0]
    defs = list(target_defs) if target_defs is not None else [raw_target, *targets]
    qlist = list(queries)
    qids = {q.query_id for q in qlist}
    default_rel = UNJUDGED[unjudged]
    for run in runs:
        if run.system not in stores and None not in stores:
            raise TiapError(f"no store for run {run.system!r}")
    run_stores = store_lineages(runs, stores)
    groups_of: dict[str, Any] = {}  # store name -> its target sets
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    qrels: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
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
    return GradedResult(rows=tuple(rows), summary=tuple(summary), k=k, unjudged=unjudged,
                        qrels=qrels, systems={r.system: run_stores[r.system][0] for r in runs})


def _v(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


ROW_COLUMNS = ("system", "store", "target", "query_id", "raw", "binary", "graded", "retained",
               "n_members", "n_judged", "n_rejected", "determined")
SUMMARY_COLUMNS = ("system", "store", "target", "measure", "n", "raw", "binary", "retained",
                   "gain",
                   "retained_gain", "survival", "n_graded", "graded", "raw_on_graded",
                   "judged_members", "rejected_members", "n_undetermined")


GRADED_COMMAND = "audit graded"
GRADED_SCHEMA_VERSION = 2  # 2: qrels per store, manifest stores/systems, outputs with sha256


def write_graded(result: GradedResult, out: str | Path, *,
                 inputs: Mapping[str, str | Path] = {},
                 options: Mapping[str, Any] = {}, force: bool = False) -> dict[str, Any]:
    """Write ``graded_per_query.csv``, ``graded_summary.csv``, graded TREC qrels per store
    and target (``qrels/<store>.<target>.graded.qrels``) and ``manifest.json``, whose
    ``stores`` and ``systems`` say which systems use which store and its qrels files, and
    whose ``outputs`` list every file with its sha256 (a qrels file also with its store,
    target and systems).

    ``out`` is replaced whole (:func:`tiap.io.output_folder`): graded qrels that an earlier
    run wrote and this one does not (a pooled file of the old layout, the qrels of a store no
    longer audited) do not survive, so a stale file cannot be scored by mistake. A folder
    that is not an earlier ``audit graded`` output, or that holds a file (in ``qrels/`` too)
    that output's manifest does not list (a file of yours), is refused
    (``error[stale-output]``) unless ``force``."""
    from tiap.io import output_folder, sha256_file
    from tiap.provenance import input_entry, manifest_header

    def fmt(v: Any) -> Any:
        if isinstance(v, bool):
            return "true" if v else "false"
        return "" if v is None else (repr(v) if isinstance(v, float) else v)

    out = Path(out)
    with output_folder(out, GRADED_COMMAND, force=force) as tmp:
        outputs: dict[str, dict[str, Any]] = {}
        for name, cols, rows in (("graded_per_query.csv", ROW_COLUMNS, result.rows),
                                 ("graded_summary.csv", SUMMARY_COLUMNS, result.summary)):
            with open(tmp / name, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(cols)
                for r in rows:
                    w.writerow([fmt(r[c]) for c in cols])
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
        man = manifest_header(GRADED_COMMAND, GRADED_SCHEMA_VERSION)
        man["inputs"] = {k: input_entry(p) for k, p in inputs.items()}
        man["options"] = {**options, "k": result.k, "unjudged": result.unjudged,
                          "grades": dict(GRADES), "credit": "set"}
        man["stores"] = {
            store: {"systems": sorted(s for s, n in result.systems.items() if n == store),
                    "qrels": files.get(store, {})}
            for store in sorted(set(result.systems.values()))}
        man["systems"] = {s: {"store": n, "qrels": files.get(n, {})}
                          for s, n in result.systems.items()}
        man["outputs"] = outputs
        (tmp / "manifest.json").write_text(json.dumps(man, indent=2) + "\n", encoding="utf-8")
    return man
