"""Design recommendations under each target (the paper's §5.3, Table 5).

A *configuration group* names systems that are configurations of one design choice, e.g.
``density=lexical_f1,lexical_f5,lexical_f8`` (parser densities 1, 5 and 8 of one retriever).
On the group's *matched subset* (queries defined under every target for every
configuration), per measure and target:

- the mean of each configuration, its rank (1 = best) and the **preferred** configuration:
  the one with the highest mean when its gap to every other configuration is significant
  after correction (the pairwise tests below, in their family), else ``tie (not
  significant): a, b``, naming the *tied set*: the top configuration and every one whose gap
  to it is not significant, by decreasing mean (equal means within 1e-12 rank together and
  are always tied); ``margin`` is the top two's difference of means, ``margin_p_adjusted``
  their gap's adjusted p-value;
- for every pair ``(c_i, c_j)`` (in the order given), the gap ``mean(c_i - c_j)``, tested
  by the procedure of :mod:`tiap.sensitivity.stats` (sign-flip test; p-values adjusted
  within the family of every pair and target of the group under one measure; the interval
  at the gap's effective level), its effect size, and the preferred one of the two;
- **recommendation changes**: a comparison (the overall preference, or one pair) whose
  preferred configuration differs between the two targets of a compared pair (every pair of
  targets, unless ``--pairs`` chose some; for the overall preference, the tied sets differ).
  A change is *significant* when the two targets of a compared pair prefer opposite
  configurations of a pair, both gaps significant after correction; for the overall
  preference, when the two tied sets share no configuration (then the top configuration of
  each is significantly worse than the other's under the other target: a significant
  reversal of that pair).

Targets under which some configuration has no query in the universe are left out (with a
note), since no matched subset can include them.

**Partial lineage.** A query whose value the lineage only bounds is in the matched subset
like an exact one: its gap is bounded as a winner flip's (:mod:`tiap.sensitivity.flips`,
the test covering every lineage), a mean is ``[lower, upper]`` (``mean`` and ``rank``
empty), and the ranking is written only where the intervals decide it (else ``not
determined``). The preferred configuration is then the one whose gap to every other is
significant and positive; else the tie names every configuration that no other beats
significantly; ``margin`` is empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from tiap.errors import TiapError
from tiap.sensitivity.flips import (
    TIE_EPS,
    UNDETERMINED,
    bounded_differences,
    winner,
    winner_interval,
)
from tiap.sensitivity.load import Dataset
from tiap.sensitivity.stats import (
    DEFAULT_ALPHA,
    DEFAULT_CORRECTION,
    DEFAULT_RESAMPLES,
    Gap,
    GapResult,
    evaluate_gaps,
)

__all__ = [
    "DESIGN_CHANGE_COLUMNS",
    "DESIGN_MEANS_COLUMNS",
    "DESIGN_PAIR_COLUMNS",
    "DESIGN_PREFERRED_COLUMNS",
    "design_recommendations",
    "parse_configs",
    "ranking_text",
]

DESIGN_MEANS_COLUMNS = ("dataset", "group", "measure", "target", "config", "n_matched",
                        "mean", "rank", "lower", "upper")
DESIGN_PREFERRED_COLUMNS = ("dataset", "group", "measure", "target", "n_matched",
                            "preferred", "ranking", "margin", "margin_p", "margin_p_adjusted",
                            "significant", "tied")
#: The preferred configuration when the top one does not beat every other significantly.
TIE = "tie (not significant)"
DESIGN_PAIR_COLUMNS = ("dataset", "group", "measure", "config_a", "config_b", "target",
                       "n_matched", "gap", "ci_low", "ci_high", "p", "p_adjusted", "effect",
                       "moved", "preferred", "significant", "gap_lower", "gap_upper")
DESIGN_CHANGE_COLUMNS = ("dataset", "group", "measure", "comparison", "preferences",
                         "changes", "significant_change")


def parse_configs(specs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """``NAME=sys1,sys2,...`` strings -> {NAME: (sys1, sys2, ...)}.

    >>> parse_configs(["density=f1,f5,f10", "retriever=bm25,dense"])
    {'density': ('f1', 'f5', 'f10'), 'retriever': ('bm25', 'dense')}
    >>> parse_configs(["density=f1"])
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: --configs 'density=f1': expected NAME=SYSTEM,SYSTEM[,...] ...
    """
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        name, eq, rest = spec.partition("=")
        systems = tuple(s.strip() for s in rest.split(",") if s.strip())
        if not eq or not name.strip() or len(systems) < 2:
            raise TiapError(f"--configs {spec!r}: expected NAME=SYSTEM,SYSTEM[,...] with at "
                            "least two systems")
        if len(set(systems)) != len(systems):
            raise TiapError(f"--configs {spec!r}: a system is listed twice")
        if name.strip() in out:
            raise TiapError(f"--configs: two groups are named {name.strip()!r}")
        out[name.strip()] = systems
    return out


def ranking_text(means: Mapping[str, float]) -> str:
    """``a > b = c``: names by decreasing mean (stable for ties, which are joined by ``=``)."""
    items = sorted(means.items(), key=lambda kv: -kv[1])
    out = ""
    for i, (name, v) in enumerate(items):
        if i:
            out += " = " if abs(items[i - 1][1] - v) <= TIE_EPS else " > "
        out += name
    return out


def _changes(pairs: Sequence[tuple[str, str]]) -> bool | None:
    """Whether a preference changes between the targets of some compared pair: ``None``
    (not determined) when none certainly does but a preference partial lineage leaves open
    is involved."""
    if any(a != b and UNDETERMINED not in (a, b) for a, b in pairs):
        return True
    return None if any(UNDETERMINED in (a, b) for a, b in pairs) else False


def _oriented(r: GapResult, a: str, b: str, forward: bool) -> tuple[float | None, float | None]:
    """The gap interval of ``a - b`` from a test of ``a - b`` (``forward``) or ``b - a``."""
    if forward:
        return r.gap_lower, r.gap_upper
    return (None if r.gap_upper is None else -r.gap_upper,
            None if r.gap_lower is None else -r.gap_lower)


def _interval_ranking(bounds: Mapping[str, tuple[float, float]]) -> str:
    """Names by decreasing lower mean, joined by ``>`` when every adjacent pair is apart
    (one's lower mean above the next one's upper mean); else ``not determined``."""
    items = sorted(bounds.items(), key=lambda kv: -kv[1][0])
    if all(x[1][0] > y[1][1] + TIE_EPS for x, y in zip(items, items[1:], strict=False)):
        return " > ".join(s for s, _ in items)
    return UNDETERMINED


def _ranks(means: Mapping[str, float]) -> dict[str, int]:
    vals = list(means.values())
    return {k: 1 + sum(1 for x in vals if x > v + TIE_EPS) for k, v in means.items()}


def design_recommendations(
    datasets: Sequence[Dataset],
    configs: Mapping[str, Sequence[str]],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The four design tables (``means``, ``preferred``, ``pairwise``, ``changes``) and notes."""
    tables: dict[str, list[dict[str, Any]]] = {"means": [], "preferred": [], "pairwise": [],
                                               "changes": []}
    notes: list[str] = []
    for group, systems in configs.items():
        homes = [ds for ds in datasets if all(s in ds.systems for s in systems)]
        if not homes:
            missing = [s for s in systems if not any(s in ds.systems for ds in datasets)]
            raise TiapError(f"--configs {group}: " + (
                f"no rescore folder has the system(s) {', '.join(missing)}" if missing else
                "the systems are in different datasets (different queries files)"))
        for ds in homes:
            _one_group(ds, group, tuple(systems), tables, notes, seed, resamples, alpha,
                       correction)
    return tables, notes


def _one_group(ds: Dataset, group: str, systems: tuple[str, ...],
               tables: dict[str, list[dict[str, Any]]], notes: list[str],
               seed: int, resamples: int, alpha: float, correction: str) -> None:
    targets = [t for t in ds.targets
               if all(ds.systems[s].in_universe(t, ds.measures).any() for s in systems)]
    for t in ds.targets:
        if t not in targets:
            notes.append(f"{ds.name}/{group}: target {t!r} left out of the design comparison "
                         "(a configuration has no query defined under it)")
    if not targets:
        return
    matched = ds.shared(systems, targets, bounded=True)
    n = int(matched.sum())
    base = {"dataset": ds.name, "group": group}
    pairs = list(combinations(systems, 2))
    gaps = [Gap((ds.name, "design", group, str(m)), matched,
                *bounded_differences(ds, a, b, t, m, matched))
            for a, b in pairs for t in targets for m in ds.measures]
    results = evaluate_gaps(gaps, seed=seed, dataset=ds.name, resamples=resamples, alpha=alpha,
                        correction=correction, notes=notes)
    nm, nt = len(ds.measures), len(targets)
    pair_tests = {pair: results[i * nt * nm:(i + 1) * nt * nm] for i, pair in enumerate(pairs)}

    def pair_test(a: str, b: str, ti: int, mi: int) -> GapResult:
        return (pair_tests[(a, b)] if (a, b) in pair_tests else pair_tests[(b, a)])[ti * nm + mi]

    for mi, m in enumerate(ds.measures):
        best_by_target: dict[str, str] = {}
        tied_by_target: dict[str, frozenset[str]] = {}
        for ti, t in enumerate(targets):
            bounds = {s: (float(ds.systems[s].interval(t, m)[0][matched].mean()),
                          float(ds.systems[s].interval(t, m)[1][matched].mean())) if n
                      else (float("nan"), float("nan")) for s in systems}
            exact = all(hi - lo <= TIE_EPS for lo, hi in bounds.values())
            means = {s: lo for s, (lo, _) in bounds.items()}
            ranks = _ranks(means) if n and exact else {s: None for s in systems}
            for s in systems:
                tables["means"].append({**base, "measure": str(m), "target": t, "config": s,
                                        "n_matched": n,
                                        "mean": means[s] if n and exact else None,
                                        "rank": ranks[s],
                                        "lower": bounds[s][0] if n else None,
                                        "upper": bounds[s][1] if n else None})
            if not n:
                continue
            if exact:
                text = ranking_text(means)
                order = sorted(systems, key=lambda s: -means[s])  # stable: as ranking_text
                first = order[0]
                tied = [first, *(s for s in order[1:]
                                 if not pair_test(first, s, ti, mi).significant)]
                margin = pair_test(first, order[1], ti, mi)
                margin_gap: float | None = means[first] - means[order[1]]
            else:  # partial lineage: only what every lineage's test decides
                beats = {(a, b) for a in systems for b in systems if a != b
                         and (r := pair_test(a, b, ti, mi)).significant
                         and winner_interval(_oriented(r, a, b, (a, b) in pair_tests),
                                             a, b) == a}
                text = _interval_ranking(bounds)
                tied = [s for s in sorted(systems, key=lambda s: -bounds[s][0])
                        if not any((o, s) in beats for o in systems)]
                first = tied[0] if tied else systems[0]
                margin, margin_gap = None, None
            preferred = first if len(tied) == 1 else f"{TIE}: {', '.join(tied)}"
            best_by_target[t] = preferred
            tied_by_target[t] = frozenset(tied)
            tables["preferred"].append({**base, "measure": str(m), "target": t,
                                        "n_matched": n, "preferred": preferred,
                                        "ranking": text,
                                        "margin": margin_gap,
                                        "margin_p": margin.p if margin else None,
                                        "margin_p_adjusted": margin.p_adjusted
                                        if margin else None,
                                        "significant": len(tied) == 1,
                                        "tied": ", ".join(tied)})
        compared = [(t1, t2) for t1, t2 in ds.target_pairs if t1 in targets and t2 in targets]
        if n:
            tables["changes"].append({
                **base, "measure": str(m), "comparison": "preferred",
                "preferences": "; ".join(f"{t}: {best_by_target[t]}" for t in targets),
                "changes": any(tied_by_target[t1] != tied_by_target[t2]
                               for t1, t2 in compared),
                "significant_change": any(not tied_by_target[t1] & tied_by_target[t2]
                                          for t1, t2 in compared),
            })
        for (a, b), test in pair_tests.items():
            prefs: dict[str, tuple[str, bool]] = {}
            for ti, t in enumerate(targets):
                r = test[ti * nm + mi]
                pref = (winner(r.gap, a, b) if r.gap is not None or r.gap_lower is None
                        else winner_interval((r.gap_lower, r.gap_upper), a, b))
                prefs[t] = (pref, r.significant)
                tables["pairwise"].append({
                    **base, "measure": str(m), "config_a": a, "config_b": b, "target": t,
                    "n_matched": n, "gap": r.gap, "ci_low": r.ci_low, "ci_high": r.ci_high,
                    "p": r.p, "p_adjusted": r.p_adjusted, "effect": r.effect,
                    "moved": r.moved, "preferred": pref, "significant": r.significant,
                    "gap_lower": r.gap_lower, "gap_upper": r.gap_upper,
                })
            if n:
                tables["changes"].append({
                    **base, "measure": str(m), "comparison": f"{a} vs {b}",
                    "preferences": "; ".join(f"{t}: {p}" for t, (p, _) in prefs.items()),
                    "changes": _changes([(prefs[t1][0], prefs[t2][0]) for t1, t2 in compared]),
                    "significant_change": any(
                        prefs[t1][1] and prefs[t2][1] and "tie" not in (prefs[t1][0], prefs[t2][0])
                        and prefs[t1][0] != prefs[t2][0] for t1, t2 in compared),
                })
