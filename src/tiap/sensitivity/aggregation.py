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

**Partial lineage.** A query whose value the lineage only bounds (``[lo, hi]``) is in the
common subset like an exact one (``C`` is over the targets' universes). Each aggregation is
monotone in every value, so a query's aggregated value lies in ``[f(lo), f(hi)]`` and a mean
over ``C`` in the mean of those bounds: ``means`` then shows ``name=[lower, upper]``. A
ranking is written only when the intervals decide it (every adjacent pair of systems apart:
the lower mean of one above the upper mean of the next, or both exact and equal); else it is
``not determined``, and ``novel`` is empty. A (system, query) pair agrees only when every
target's hit is decided (a hit the bounds leave open makes agreement open): ``n_agree`` is
then empty and ``n_agree_lower`` / ``n_agree_upper`` bound it (always written, equal to
``n_agree`` where it is exact); the agreement subset is then not determined and its
rankings are left out, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap import numfmt
from tiap.scoring import counts
from tiap.scoring.measures import Measure
from tiap.scoring.scores import hit_cutoff
from tiap.sensitivity.change import hit_state, hit_vector
from tiap.sensitivity.design import ranking_text
from tiap.sensitivity.flips import TIE_EPS, UNDETERMINED
from tiap.sensitivity.load import Dataset

__all__ = ["AGGREGATIONS", "AGG_COLUMNS", "AGREE_COLUMNS", "aggregation_rows"]

AGGREGATIONS = ("mean", "min", "max")
AGG_COLUMNS = ("dataset", "measure", "subset", "scheme", "kind", "n", "ranking", "means",
               "novel", "target_dependent")
AGREE_COLUMNS = ("dataset", "measure", "system", "hit_k", "n_common", "n_agree",
                 "retained_fraction", "mean_spread_common", "mean_spread_agree",
                 "n_agree_all_systems", "n_agree_lower", "n_agree_upper")

#: A mean as ``(lower, upper)``: equal ends where the lineage determines it.
Bounds = tuple[float, float]


def _fmt_means(means: dict[str, Bounds]) -> str:
    return "; ".join(f"{s}={lo:.4f}" if hi - lo <= TIE_EPS else
                     f"{s}={numfmt.interval(lo, hi, 4, sign=False)}"
                     for s, (lo, hi) in means.items())


def _ranking(means: dict[str, Bounds]) -> str:
    """:func:`~tiap.sensitivity.design.ranking_text` where every mean is exact, or where the
    intervals decide the order (sorted by lower mean, each apart from the next); else
    ``not determined``."""
    if all(hi - lo <= TIE_EPS for lo, hi in means.values()):
        return ranking_text({s: lo for s, (lo, _) in means.items()})
    items = sorted(means.items(), key=lambda kv: -kv[1][0])
    if all(a[1][0] > b[1][1] + TIE_EPS for a, b in zip(items, items[1:], strict=False)):
        return " > ".join(s for s, _ in items)
    return UNDETERMINED


def aggregation_rows(datasets: Sequence[Dataset]
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    agg: list[dict[str, Any]] = []
    agree: list[dict[str, Any]] = []
    notes: list[str] = []
    for ds in datasets:
        systems = list(ds.systems)
        targets = [t for t in ds.targets
                   if all(ds.systems[s].in_universe(t, ds.measures).any() for s in systems)]
        for t in ds.targets:
            if t not in targets:
                notes.append(f"{ds.name}: target {t!r} left out of aggregation and agreement "
                             "filtering (a system has no query defined under it)")
        if len(targets) < 2:
            continue
        common = ds.shared(systems, targets, bounded=True)
        for m in ds.measures:
            _one_measure(ds, m, systems, targets, common, agg, agree, notes)
    return agg, agree, notes


def _stack(ds: Dataset, s: str, targets: Sequence[str], m: Measure,
           mask: NDArray[np.bool_], side: int = 0) -> NDArray[np.float64]:
    """Per query (rows) and target (columns): the lower (``side`` 0) or upper (1) values."""
    return np.column_stack([ds.systems[s].interval(t, m)[side][mask] for t in targets])


def _mean_bounds(ds: Dataset, s: str, t: str, m: Measure, mask: NDArray[np.bool_]) -> Bounds:
    lo, hi = ds.systems[s].interval(t, m)
    return float(lo[mask].mean()), float(hi[mask].mean())


def _one_measure(ds: Dataset, m: Measure, systems: list[str], targets: list[str],
                 common: NDArray[np.bool_], agg: list[dict[str, Any]],
                 agree: list[dict[str, Any]], notes: list[str]) -> None:
    n = int(common.sum())
    base = {"dataset": ds.name, "measure": str(m)}
    if n == 0:
        agg.append({**base, "subset": "common", "scheme": "", "kind": "", "n": 0,
                    "ranking": "", "means": "", "novel": None, "target_dependent": None})
        return
    per_target: dict[str, str] = {}
    for t in targets:
        means = {s: _mean_bounds(ds, s, t, m, common) for s in systems}
        per_target[t] = _ranking(means)
        agg.append({**base, "subset": "common", "scheme": t, "kind": "target", "n": n,
                    "ranking": per_target[t], "means": _fmt_means(means), "novel": None,
                    "target_dependent": None})
    single = set(per_target.values())
    for name in AGGREGATIONS:
        f = getattr(np, name)  # monotone in every value: the bounds aggregate end by end
        means = {s: (float(f(_stack(ds, s, targets, m, common, 0), axis=1).mean()),
                     float(f(_stack(ds, s, targets, m, common, 1), axis=1).mean()))
                 for s in systems}
        text = _ranking(means)
        open_ = UNDETERMINED in (text, *single)
        agg.append({**base, "subset": "common", "scheme": name, "kind": "aggregate", "n": n,
                    "ranking": text, "means": _fmt_means(means),
                    "novel": None if open_ else text not in single, "target_dependent": None})

    k = hit_cutoff(m, ds.measures)
    agree_all = common.copy()
    per_system: list[dict[str, Any]] = []
    any_open = False
    for s in systems:
        hits = [hit_vector(ds.systems[s], t, k, ds.measures) for t in targets]
        states = [hit_state(ds.systems[s], t, k, ds.measures) for t in targets]
        if any(h is None for h in hits) or any(h is None for h in states):
            return
        st = np.column_stack([h[common] for h in states])  # type: ignore[index]
        decided = (st != counts.EITHER).all(axis=1)
        # agreement is certain where every hit is decided and equal, possible where the
        # decided hits are equal (an open hit can take either value)
        known = np.where(st == counts.EITHER, -1, st)
        ok = decided & (known == known[:, :1]).all(axis=1)
        lo_hit = np.where(st == counts.EITHER, 0, st).max(axis=1)  # some decided hit is 1
        hi_hit = np.where(st == counts.EITHER, 1, st).min(axis=1)  # some decided hit is 0
        maybe = ~decided & ~((lo_hit == 1) & (hi_hit == 0))
        any_open |= bool(maybe.any())
        full = np.zeros(ds.n, bool)
        full[np.flatnonzero(common)[ok]] = True
        agree_all &= full
        lo_v, hi_v = _stack(ds, s, targets, m, common, 0), _stack(ds, s, targets, m, common, 1)
        exact = bool(np.array_equal(lo_v, hi_v))
        spread = lo_v.max(axis=1) - lo_v.min(axis=1)
        n_ok, n_hi = int(ok.sum()), int((ok | maybe).sum())
        per_system.append({
            **base, "system": s, "hit_k": k if k else "all", "n_common": n,
            "n_agree": n_ok if n_ok == n_hi else None,
            "retained_fraction": n_ok / n if n_ok == n_hi else None,
            "mean_spread_common": float(spread.mean()) if exact else None,
            "mean_spread_agree": float(spread[ok].mean()) if ok.any() and exact
            and n_ok == n_hi else None,
            "n_agree_lower": n_ok, "n_agree_upper": n_hi})
    na = int(agree_all.sum())
    for row in per_system:
        row["n_agree_all_systems"] = None if any_open else na
        agree.append(row)
    if any_open:
        notes.append(f"{ds.name} / {m}: the agreement subset is not determined (partial "
                     "lineage leaves some hit open), so its rankings are left out of "
                     "aggregation.csv; agreement.csv bounds each system's n_agree")
        return
    if na == 0:
        return
    rankings = []
    for t in targets:
        means = {s: float(ds.systems[s].get(t, m)[agree_all].mean()) for s in systems}
        rankings.append((t, ranking_text(means), {s: (v, v) for s, v in means.items()}))
    dependent = len({r for _, r, _ in rankings}) > 1
    for t, text, means in rankings:
        agg.append({**base, "subset": "agreement", "scheme": t, "kind": "target", "n": na,
                    "ranking": text, "means": _fmt_means(means), "novel": None,
                    "target_dependent": dependent})
