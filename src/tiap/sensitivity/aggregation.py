"""Aggregation and agreement filtering as mitigations (the paper's Appendix B, Table 9).

Per dataset and measure, over the targets under which every system has at least one
defined query (others are left out, with a note), on the *common subset* ``C`` (queries
defined under all those targets for every system):

- **rankings under each target**: systems ordered by their mean on ``C``;
- **rankings under aggregations over targets**: each query's value is the mean, minimum or
  maximum of its values under the targets, ``agg_q = f(v_q(t_1), ..., v_q(t_T))``, and the
  systems are ordered by the mean of ``agg_q`` on ``C``. An aggregation is *novel* when its
  ranking is none of the single targets' rankings;
- **agreement filtering**: a (system, query) pair *agrees* when every target gives the same
  hit at ``hit_k`` (all credited in the top ``hit_k``, or none). Per system: the agreeing
  share of ``C`` and the mean per-query spread ``max_t v_q(t) - min_t v_q(t)`` left in it
  (and in all of ``C``); the agreement subset ``A`` (queries on which every system agrees)
  and the rankings under each target on ``A``: *target-dependent* when they differ.

Rankings are written ``a > b = c`` (equal means within 1e-12 are ties).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.scoring.measures import Measure
from tiap.scoring.scores import hit_cutoff
from tiap.sensitivity.change import hit_vector
from tiap.sensitivity.design import ranking_text
from tiap.sensitivity.load import Dataset

__all__ = ["AGGREGATIONS", "AGG_COLUMNS", "AGREE_COLUMNS", "aggregation_rows"]

AGGREGATIONS = ("mean", "min", "max")
AGG_COLUMNS = ("dataset", "measure", "subset", "scheme", "kind", "n", "ranking", "means",
               "novel", "target_dependent")
AGREE_COLUMNS = ("dataset", "measure", "system", "hit_k", "n_common", "n_agree",
                 "retained_fraction", "mean_spread_common", "mean_spread_agree",
                 "n_agree_all_systems")


def _fmt_means(means: dict[str, float]) -> str:
    return "; ".join(f"{s}={v:.4f}" for s, v in means.items())


def aggregation_rows(datasets: Sequence[Dataset]
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    agg: list[dict[str, Any]] = []
    agree: list[dict[str, Any]] = []
    notes: list[str] = []
    for ds in datasets:
        systems = list(ds.systems)
        targets = [t for t in ds.targets
                   if all(ds.systems[s].determined(t, ds.measures).any() for s in systems)]
        for t in ds.targets:
            if t not in targets:
                notes.append(f"{ds.name}: target {t!r} left out of aggregation and agreement "
                             "filtering (a system has no query defined under it)")
        if len(targets) < 2:
            continue
        common = ds.shared(systems, targets)
        for m in ds.measures:
            _one_measure(ds, m, systems, targets, common, agg, agree)
    return agg, agree, notes


def _stack(ds: Dataset, s: str, targets: Sequence[str], m: Measure,
           mask: NDArray[np.bool_]) -> NDArray[np.float64]:
    return np.column_stack([ds.systems[s].get(t, m)[mask] for t in targets])


def _one_measure(ds: Dataset, m: Measure, systems: list[str], targets: list[str],
                 common: NDArray[np.bool_], agg: list[dict[str, Any]],
                 agree: list[dict[str, Any]]) -> None:
    n = int(common.sum())
    base = {"dataset": ds.name, "measure": str(m)}
    if n == 0:
        agg.append({**base, "subset": "common", "scheme": "", "kind": "", "n": 0,
                    "ranking": "", "means": "", "novel": None, "target_dependent": None})
        return
    per_target: dict[str, str] = {}
    for t in targets:
        means = {s: float(ds.systems[s].get(t, m)[common].mean()) for s in systems}
        per_target[t] = ranking_text(means)
        agg.append({**base, "subset": "common", "scheme": t, "kind": "target", "n": n,
                    "ranking": per_target[t], "means": _fmt_means(means), "novel": None,
                    "target_dependent": None})
    single = set(per_target.values())
    for name in AGGREGATIONS:
        f = getattr(np, name)
        means = {s: float(f(_stack(ds, s, targets, m, common), axis=1).mean()) for s in systems}
        text = ranking_text(means)
        agg.append({**base, "subset": "common", "scheme": name, "kind": "aggregate", "n": n,
                    "ranking": text, "means": _fmt_means(means), "novel": text not in single,
                    "target_dependent": None})

    k = hit_cutoff(m, ds.measures)
    agree_all = common.copy()
    per_system: list[dict[str, Any]] = []
    for s in systems:
        hits = [hit_vector(ds.systems[s], t, k, ds.measures) for t in targets]
        if any(h is None for h in hits):
            return
        hm = np.column_stack([h[common] for h in hits])  # type: ignore[index]
        ok = (hm == hm[:, :1]).all(axis=1)
        full = np.zeros(ds.n, bool)
        full[np.flatnonzero(common)[ok]] = True
        agree_all &= full
        vals = _stack(ds, s, targets, m, common)
        spread = vals.max(axis=1) - vals.min(axis=1)
        per_system.append({**base, "system": s, "hit_k": k if k else "all", "n_common": n,
                           "n_agree": int(ok.sum()), "retained_fraction": float(ok.mean()),
                           "mean_spread_common": float(spread.mean()),
                           "mean_spread_agree": float(spread[ok].mean()) if ok.any() else None})
    na = int(agree_all.sum())
    for row in per_system:
        row["n_agree_all_systems"] = na
        agree.append(row)
    if na == 0:
        return
    rankings = []
    for t in targets:
        means = {s: float(ds.systems[s].get(t, m)[agree_all].mean()) for s in systems}
        rankings.append((t, ranking_text(means), means))
    dependent = len({r for _, r, _ in rankings}) > 1
    for t, text, means in rankings:
        agg.append({**base, "subset": "agreement", "scheme": t, "kind": "target", "n": na,
                    "ranking": text, "means": _fmt_means(means), "novel": None,
                    "target_dependent": dependent})
