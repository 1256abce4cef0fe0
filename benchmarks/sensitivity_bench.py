"""TIAP's Stage III test against scipy and ranx: many paired randomization tests at once.

    .venv/bin/python benchmarks/sensitivity_bench.py [--queries 2000] [--comparisons 100] \
        [--resamples 10000] [--repeats 3] [--json PATH]

Not collected by pytest; needs scipy and the ``bench`` extra (ranx, which pulls numba).
Results and the machine are recorded in ``benchmarks/README.md``.

Workload. K synthetic systems rank the same 100 candidates of each of Q queries (graded
qrels, grades 0-3; system ``r`` scores a candidate ``grade + sigma_r * noise``, with
``sigma_r = 1.00, 1.01, ...``, so that the p-values spread over (0, 1)). The comparisons
are every pair of systems under each of M measures, C(K, 2) x M of them; ``--comparisons
100`` gives K = 5 and M = 10 (nDCG@5/10/20/50, MAP@10/50, MRR@10, P@5/10, R@10), exactly
100. ranx computes the per-query values (``ranx.evaluate(..., return_mean=False)``, as
``ranx.compare`` does), and every tool tests the same difference vectors
``d = values[a] - values[b]``: two-sided, statistic the mean, ``B`` random sign vectors.

* TIAP: ``evaluate_gaps`` on 100 ``Gap``s over one shared subset (all Q queries): one sign
  matrix, every comparison tested by one matrix product; it also returns the Holm-adjusted
  p-values and the interval obtained by inverting the test, which the peers do not compute.
  Also timed: the same with one BLAS thread, and ``randomize`` alone (sign matrix given).
* scipy: ``scipy.stats.permutation_test((d,), mean, permutation_type="samples",
  vectorized=True)``, one call per comparison (default ``batch``), and one call for all
  comparisons at once (``axis=-1``, ``--scipy-batch``; the same permutations for all).
* ranx: the test stage of ``ranx.compare(..., stat_test="fisher")``, that is
  ``compute_statistical_significance`` on the per-query values ``compare`` computes (it
  tests every *ordered* pair: each comparison twice); and its numba kernel
  ``fisher_randomization_test`` called once per comparison. ``ranx.compare`` itself (metric
  computation included) is timed once. numba's start-up (loading the JIT cache) is paid
  by a toy call first and reported apart (``--ranx-cold``: also with an empty cache).

Each timed figure is the best of ``--repeats`` rounds; the rounds visit the tools in turn,
so drift of the machine hits all of them alike. Agreement: per tool, max |p_TIAP - p_tool|
over the comparisons (raw p-values, not adjusted) and how many differ by more than 3
Monte-Carlo standard errors. Batch invariance: TIAP run again on the comparisons shuffled,
and split into two calls; its p-values must be identical (the script fails otherwise).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from machine import machine_facts as _machine_facts

from tiap.sensitivity.stats import Gap, comparison_rng, evaluate_gaps, randomize, sign_vectors

#: Measures ranx computes; the first M are used.
METRICS = ("ndcg@5", "ndcg@10", "ndcg@20", "ndcg@50", "map@10", "map@50", "mrr@10",
           "precision@5", "precision@10", "recall@10", "recall@20", "r-precision")
POOL = 100  # candidates per query, all ranked by every system
GRADES = (0.75, 0.12, 0.08, 0.05)  # P(grade 0..3)
ALPHA = 0.05
SEED = 20261201
RANX_SEED = 42


# ----------------------------------------------------------------------------------------
# workload


def design(comparisons: int) -> tuple[int, int]:
    """(systems K, measures M) with C(K, 2) * M closest to ``comparisons`` (exact if it can
    be), the most systems first. At least two measures: ranx's ``evaluate`` with one metric
    and ``return_mean=False`` fails (KeyError) in ranx 0.3.21."""
    best: tuple[int, int, int] | None = None
    for k in range(2, 2 + math.isqrt(2 * comparisons) + 2):
        pairs = k * (k - 1) // 2
        for m in range(2, len(METRICS) + 1):
            miss = abs(pairs * m - comparisons)
            if best is None or (miss, -k) < (best[0], -best[1]):
                best = (miss, k, m)
    assert best is not None
    return best[1], best[2]


def make_workload(queries: int, systems: int, seed: int,
                  ) -> tuple[dict[str, dict[str, int]], list[dict[str, dict[str, float]]]]:
    """Graded qrels over ``POOL`` candidates per query and ``systems`` runs ranking them."""
    rng = np.random.default_rng(seed)
    grades = rng.choice(len(GRADES), size=(queries, POOL), p=GRADES)
    none = np.flatnonzero(grades.max(axis=1) == 0)
    grades[none, rng.integers(0, POOL, none.size)] = 1  # every query has a relevant item
    docs = [f"d{k}" for k in range(POOL)]
    qids = [f"q{i}" for i in range(queries)]
    qrels = {q: {docs[k]: int(g) for k, g in enumerate(row) if g}
             for q, row in zip(qids, grades)}
    sigmas = 1.0 + 0.01 * np.arange(systems)  # close: p-values spread over (0, 1)
    runs = []
    for sigma in sigmas:
        scores = grades + sigma * rng.standard_normal((queries, POOL))
        runs.append({q: dict(zip(docs, row.tolist())) for q, row in zip(qids, scores)})
    return qrels, runs


# ----------------------------------------------------------------------------------------
# the tools


def tiap_gaps(diffs: np.ndarray) -> list[Gap]:
    n = diffs.shape[1]
    return [Gap(family=("bench", "m"), subset=np.ones(n, bool), lo=diffs[j])
            for j in range(diffs.shape[0])]


def tiap_p(gaps: list[Gap], resamples: int) -> tuple[np.ndarray, list[Any]]:
    res = evaluate_gaps(gaps, seed=SEED, dataset="bench", resamples=resamples, alpha=ALPHA,
                        correction="holm")
    return np.array([r.p for r in res]), res


def tiap_signs(n: int, resamples: int) -> tuple[np.ndarray, bool]:
    """The sign matrix ``evaluate_gaps`` draws for a subset of all ``n`` queries (its key:
    the packed mask and ``n % 8``), so that ``randomize`` alone gives the same p-values."""
    key = np.packbits(np.ones(n, bool)).tobytes() + bytes([n % 8])
    rng = comparison_rng(SEED, "bench", "signs", hashlib.sha256(key).hexdigest())
    return sign_vectors(n, resamples, rng)


def ties(diffs: np.ndarray, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Per comparison: the share of TIAP's sign vectors whose |sum| equals the observed
    |sum| up to float noise (1e-9 of sum |d|), and whether the observed sum is 0 so."""
    signs, _ = tiap_signs(diffs.shape[1], resamples)
    sums = diffs @ signs.T.astype(np.float64)
    obs = np.array([math.fsum(d) for d in diffs])
    tol = 1e-9 * np.abs(diffs).sum(axis=1)
    share = (np.abs(np.abs(sums) - np.abs(obs)[:, None]) <= tol[:, None]).mean(axis=1)
    return share, np.abs(obs) <= tol


def scipy_each(diffs: np.ndarray, resamples: int) -> np.ndarray:
    from scipy import stats

    def mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x, axis=axis)

    out = np.empty(diffs.shape[0])
    for j, d in enumerate(diffs):
        out[j] = stats.permutation_test(
            (d,), mean, permutation_type="samples", alternative="two-sided",
            n_resamples=resamples, vectorized=True, rng=np.random.default_rng([SEED, j]),
        ).pvalue
    return out


def scipy_all(diffs: np.ndarray, resamples: int, batch: int) -> np.ndarray:
    from scipy import stats

    def mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x, axis=axis)

    return np.asarray(stats.permutation_test(
        (diffs,), mean, permutation_type="samples", alternative="two-sided",
        n_resamples=resamples, vectorized=True, batch=batch, axis=-1,
        rng=np.random.default_rng([SEED, 1]),
    ).pvalue, np.float64)


def ranx_startup(metrics: list[str]) -> float:
    """Import ranx and run one tiny evaluation and one tiny Fisher test (numba JIT, or its
    on-disk cache)."""
    start = time.perf_counter()
    from ranx import Qrels, Run, evaluate
    from ranx.statistical_tests import fisher_randomization_test

    qrels = Qrels({"q1": {"d10": 1}, "q2": {"d12": 2}})  # ids as long as the workload's
    run = Run({"q1": {"d10": 2.0, "d11": 1.0}, "q2": {"d11": 2.0, "d12": 1.0}})
    evaluate(qrels, run, metrics[:2] if len(metrics) > 1 else list(METRICS[:2]),
             return_mean=False, save_results_in_run=False)
    fisher_randomization_test(np.array([0.1, 0.5, 0.2]), np.array([0.3, 0.1, 0.2]), 10,
                              ALPHA, RANX_SEED)
    return time.perf_counter() - start


def ranx_cold(metrics: list[str]) -> float:
    """ranx's start-up in a fresh process with an empty numba cache."""
    env = os.environ | {"NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="numba-cold-")}
    code = ("import json, sys, warnings; warnings.filterwarnings('ignore'); "
            f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
            "import sensitivity_bench as b; "
            f"print(json.dumps(b.ranx_startup({list(metrics)!r})))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def ranx_values(qrels_d: dict, runs_d: list[dict], metrics: list[str],
                ) -> tuple[Any, list[Any], list[str], dict[str, dict[str, np.ndarray]]]:
    """ranx's objects and the per-query values, computed as ``ranx.compare`` does."""
    from ranx import Qrels, Run, evaluate

    qrels = Qrels(qrels_d)
    runs = [Run(r, name=f"r{i + 1}") for i, r in enumerate(runs_d)]
    names = [r.name for r in runs]
    values: dict[str, dict[str, np.ndarray]] = {}
    for run in runs:
        got = evaluate(qrels=qrels, run=run, metrics=metrics, return_mean=False)
        values[run.name] = got
    return qrels, runs, names, values


def ranx_evaluate(qrels: Any, runs: list[Any], metrics: list[str]) -> list[Any]:
    """The metric computation of ``ranx.compare`` alone."""
    from ranx import evaluate

    return [evaluate(qrels=qrels, run=run, metrics=metrics, return_mean=False)
            for run in runs]


def ranx_stats(names: list[str], values: dict, pairs: list[tuple[str, str, str]],
               resamples: int) -> np.ndarray:
    from ranx.statistical_tests import compute_statistical_significance

    comps = compute_statistical_significance(names, values, stat_test="fisher",
                                             n_permutations=resamples, max_p=ALPHA,
                                             random_seed=RANX_SEED)
    return np.array([comps[frozenset((a, b))][m]["p_value"] for a, b, m in pairs])


def ranx_kernel(values: dict, pairs: list[tuple[str, str, str]], resamples: int) -> np.ndarray:
    from ranx.statistical_tests import fisher_randomization_test

    return np.array([fisher_randomization_test(values[a][m], values[b][m], resamples, ALPHA,
                                               RANX_SEED)[0] for a, b, m in pairs])


def ranx_compare(qrels: Any, runs: list[Any], metrics: list[str],
                 pairs: list[tuple[str, str, str]], resamples: int) -> np.ndarray:
    from ranx import compare

    report = compare(qrels, runs=runs, metrics=metrics, stat_test="fisher",
                     n_permutations=resamples, max_p=ALPHA, random_seed=RANX_SEED)
    return np.array([report.comparisons[frozenset((a, b))][m]["p_value"] for a, b, m in pairs])


# ----------------------------------------------------------------------------------------
# agreement, machine


def agreement(p_ref: np.ndarray, p: np.ndarray, resamples: int, scipy_doubled: bool,
              tie_share: np.ndarray, labels: list[str]) -> dict[str, Any]:
    """max |diff| and counts beyond 3 Monte-Carlo standard errors of the difference.

    ``se`` is ``sqrt(2 p (1 - p) / B)`` at the two estimates' mean ``p`` (two independent
    binomial shares). scipy's two-sided p-value doubles one tail, ``2 (1 + #tail) / (1 + B)``,
    whose variance is ``p (2 - p) / B``: ``se_own`` uses it for scipy. A difference beyond
    3 se is *explained by ties* when the share of sign vectors tying the observed statistic
    (which TIAP counts as reaching it) is at least the excess over 3 se.
    """
    diff = np.abs(p_ref - p)
    pm = np.clip((p_ref + p) / 2, 0.0, 1.0)
    se = np.sqrt(2 * pm * (1 - pm) / resamples)
    var_tool = pm * (2 - pm) if scipy_doubled else pm * (1 - pm)
    se_own = np.sqrt((pm * (1 - pm) + var_tool) / resamples)
    far = np.flatnonzero(diff > 3 * se)
    detail = [{"index": int(i), "comparison": labels[i], "p_tiap": float(p_ref[i]),
               "p_tool": float(p[i]), "in_se": float(diff[i] / se[i]) if se[i] else math.inf,
               "tie_share": float(tie_share[i]),
               "explained_by_ties": bool(tie_share[i] >= diff[i] - 3 * se[i])} for i in far]
    return {
        "max_abs_diff": float(diff.max()),
        "beyond_3se_detail": detail,
        "beyond_3se_unexplained": sum(not x["explained_by_ties"] for x in detail),
        "mean_abs_diff": float(diff.mean()),
        "beyond_3se": int((diff > 3 * se).sum()),
        "beyond_3se_own": int((diff > 3 * se_own).sum()),
        "max_diff_in_se": float(np.max(diff / np.where(se > 0, se, np.inf))),
        "decisions_differ": int(((p_ref <= ALPHA) != (p <= ALPHA)).sum()),
    }


def machine_facts() -> dict[str, Any]:
    facts = _machine_facts(("tiap", "numpy", "scipy", "ranx", "numba", "threadpoolctl"))
    try:
        from threadpoolctl import threadpool_info

        facts["blas"] = [f"{i.get('internal_api')} {i.get('version')} "
                         f"({i.get('num_threads')} threads)" for i in threadpool_info()
                         if i.get("user_api") == "blas"]
    except ImportError:
        pass
    try:
        import numba

        facts["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    except ImportError:
        pass
    return facts


def one_blas_thread() -> Any:
    """A context limiting BLAS to one thread (threadpoolctl). Use it only in a ``with``:
    threadpoolctl applies the limit as soon as the object is made."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


# ----------------------------------------------------------------------------------------
# the driver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--comparisons", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each time is the best")
    parser.add_argument("--scipy-batch", type=int, default=50,
                        help="batch of scipy's all-comparisons-in-one-call variant")
    parser.add_argument("--ranx-cold", action="store_true",
                        help="also time ranx's start-up with an empty numba cache")
    parser.add_argument("--no-ranx-compare", action="store_true",
                        help="skip timing ranx.compare itself (metric computation included)")
    parser.add_argument("--json", type=Path, help="write every measurement to this file")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # numba's NumbaTypeSafetyWarning and the like
    b = args.resamples

    facts = machine_facts()
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    print("machine:", json.dumps(facts))
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}  ({started})")

    k, m = design(args.comparisons)
    metrics = list(METRICS[:m])
    names_all = [f"r{i + 1}" for i in range(k)]
    pairs = [(a, bb, mm) for a, bb in combinations(names_all, 2) for mm in metrics]
    c = len(pairs)
    print(f"workload: {args.queries:,} queries, {k} systems x {m} measures = {c} comparisons"
          f"{'' if c == args.comparisons else f' (asked {args.comparisons})'}, "
          f"{b:,} resamples")

    t_startup = ranx_startup(metrics)
    print(f"ranx start-up (imports, numba JIT cache, toy evaluate + Fisher test): "
          f"{t_startup:.2f} s")
    cold = ranx_cold(metrics) if args.ranx_cold else None
    if cold is not None:
        print(f"ranx start-up with an empty numba cache (fresh process): {cold:.1f} s")

    t0 = time.perf_counter()
    qrels_d, runs_d = make_workload(args.queries, k, SEED)
    qrels, runs, names, values = ranx_values(qrels_d, runs_d, metrics)
    assert names == names_all
    diffs = np.stack([values[a][mm] - values[bb][mm] for a, bb, mm in pairs])
    print(f"per-query values from ranx.evaluate: {time.perf_counter() - t0:.1f} s "
          f"(not timed); mean |d| = {np.abs(diffs).mean():.4f}, "
          f"share of d = 0: {(diffs == 0).mean():.3f}")
    gaps = tiap_gaps(diffs)

    # warm-ups, not timed: BLAS and TIAP on a toy, scipy on a toy
    toy = np.random.default_rng(0).standard_normal((2, 50))
    tiap_p(tiap_gaps(toy), 100)
    scipy_each(toy, 100)

    tools: dict[str, Callable[[], np.ndarray]] = {
        "TIAP evaluate_gaps": lambda: tiap_p(gaps, b)[0],
    }
    if importlib.util.find_spec("threadpoolctl") is not None:
        def tiap_one_thread() -> np.ndarray:
            with one_blas_thread():
                return tiap_p(gaps, b)[0]
        tools["TIAP, 1 BLAS thread"] = tiap_one_thread

    def tiap_randomize() -> np.ndarray:
        signs, exact = tiap_signs(args.queries, b)
        return randomize(diffs.T, signs, exact, ALPHA).p

    tools["TIAP sign_vectors + randomize"] = tiap_randomize
    tools["scipy, one call per comparison"] = lambda: scipy_each(diffs, b)
    tools[f"scipy, one call (axis=-1, batch={args.scipy_batch})"] = (
        lambda: scipy_all(diffs, b, args.scipy_batch))
    tools["ranx compare, test stage"] = lambda: ranx_stats(names, values, pairs, b)
    tools["ranx Fisher kernel per comparison"] = lambda: ranx_kernel(values, pairs, b)

    times: dict[str, list[float]] = {t: [] for t in tools}
    pvals: dict[str, list[np.ndarray]] = {t: [] for t in tools}
    for r in range(args.repeats):
        for tool, fn in tools.items():
            dt, p = timed(fn)
            times[tool].append(dt)
            pvals[tool].append(p)
            print(f"  round {r + 1}: {tool:40s} {dt:9.3f} s  (load {os.getloadavg()[0]:.2f})",
                  flush=True)
    compare_time = None
    if not args.no_ranx_compare:
        compare_time, p_cmp = timed(lambda: ranx_compare(qrels, runs, metrics, pairs, b))
        t_eval, _ = timed(lambda: ranx_evaluate(qrels, runs, metrics))
        print(f"  ranx.compare (metrics + tests + win/tie/loss), once: {compare_time:.1f} s")

    # batch invariance: shuffled order in one call, and split into two calls
    p_tiap, res = tiap_p(gaps, b)
    perm = np.random.default_rng(1).permutation(c)
    p_shuf, res_shuf = tiap_p([gaps[i] for i in perm], b)
    back = np.empty(c, int)
    back[perm] = np.arange(c)
    half = c // 2
    p_a, _ = tiap_p([gaps[i] for i in perm[:half]], b)
    p_b, _ = tiap_p([gaps[i] for i in perm[half:]], b)
    p_split = np.concatenate([p_a, p_b])[back]
    same_ci = all((res[i].ci_low, res[i].ci_high) == (res_shuf[back[i]].ci_low,
                                                       res_shuf[back[i]].ci_high)
                  for i in range(c))
    invariant = (np.array_equal(p_shuf[back], p_tiap) and np.array_equal(p_split, p_tiap)
                 and same_ci)
    if not invariant:
        raise AssertionError("TIAP's p-values depend on the order or batching of the gaps")
    print("batch-invariant: yes (shuffled order in one call: same p-values and intervals; "
          "split into two calls: same p-values)")

    # ties of the observed statistic (lattice-valued measures), for the agreement
    tie_share, zero_gap = ties(diffs, b)
    labels = [f"{a}-{bb} {mm}" for a, bb, mm in pairs]
    print(f"ties: {int((tie_share > 0).sum())} comparisons have sign vectors tying the observed "
          f"|sum| (max share {tie_share.max():.4f}); {int(zero_gap.sum())} have an observed "
          f"sum of 0 (p = 1 by definition; TIAP gives {p_tiap[zero_gap].tolist()})")

    # the table
    ref = "TIAP evaluate_gaps"
    best = {t: min(v) for t, v in times.items()}
    rows = []
    print(f"\n{c} comparisons x {args.queries:,} queries x {b:,} resamples, best of "
          f"{args.repeats}")
    print(f"  {'tool':40s} {'time':>9s} {'x TIAP':>8s} {'comp/s':>9s} {'max|dp|':>8s} "
          f"{'>3se':>5s}")
    for tool in tools:
        p0 = pvals[tool][0]
        ag = None if tool.startswith("TIAP") else agreement(
            p_tiap, p0, b, tool.startswith("scipy"), tie_share, labels)
        same_runs = all(np.array_equal(p0, q) for q in pvals[tool][1:])
        row = {"tool": tool, "times": times[tool], "best": best[tool],
               "x_tiap": best[tool] / best[ref], "comparisons_per_s": c / best[tool],
               "agreement": ag, "reproducible_across_rounds": same_runs,
               "p_values": p0.tolist()}
        if tool.startswith("TIAP") and tool != ref:
            row["same_p_as_evaluate_gaps"] = bool(np.array_equal(p0, p_tiap))
        rows.append(row)
        dp = "-" if ag is None else f"{ag['max_abs_diff']:.4f}"
        n3 = "-" if ag is None else f"{ag['beyond_3se']}"
        print(f"  {tool:40s} {best[tool]:8.3f}s {best[tool] / best[ref]:8.1f} "
              f"{c / best[tool]:9.1f} {dp:>8s} {n3:>5s}")
    for row in rows:
        ag = row["agreement"]
        if ag:
            print(f"  {row['tool']}: max |dp| = {ag['max_abs_diff']:.4f} "
                  f"({ag['max_diff_in_se']:.1f} se), mean {ag['mean_abs_diff']:.4f}, "
                  f"beyond 3 se: {ag['beyond_3se']} (own-variance se: "
                  f"{ag['beyond_3se_own']}), decisions at {ALPHA} differing: "
                  f"{ag['decisions_differ']}; same p in every round: "
                  f"{row['reproducible_across_rounds']}")
            for x in ag["beyond_3se_detail"]:
                why = " (ties explain it)" if x["explained_by_ties"] else ""
                print(f"    beyond 3 se: {x['comparison']}: TIAP {x['p_tiap']:.4f}, tool "
                      f"{x['p_tool']:.4f} ({x['in_se']:.1f} se), tie share "
                      f"{x['tie_share']:.4f}{why}")
    if compare_time is not None:
        print(f"  ranx.compare end to end (metrics, tests, win/tie/loss), once: "
              f"{compare_time:.1f} s = {compare_time / best[ref]:.0f} x TIAP; its metric "
              f"computation alone (evaluate): {t_eval:.1f} s")
    n_sig = int((p_tiap <= ALPHA).sum())
    n_sig_holm = int(sum(r.significant for r in res))
    print(f"  TIAP: {n_sig} of {c} raw p <= {ALPHA}, {n_sig_holm} significant after Holm; "
          f"p from {p_tiap.min():.2g} to {p_tiap.max():.2g}")
    load_after = os.getloadavg()
    ended = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} "
          f"{load_after[2]:.2f}  ({ended})")

    if args.json:
        out = {
            "machine": facts, "started": started, "ended": ended,
            "load_avg_before": load_before, "load_avg_after": load_after,
            "workload": {"queries": args.queries, "systems": k, "measures": metrics,
                         "comparisons": c, "resamples": b, "repeats": args.repeats,
                         "alpha": ALPHA, "seed": SEED, "ranx_seed": RANX_SEED,
                         "share_zero_differences": float((diffs == 0).mean())},
            "ranx_startup_s": t_startup, "ranx_cold_startup_s": cold,
            "ranx_compare_once_s": compare_time,
            "ranx_compare_once_p_values": None if compare_time is None else p_cmp.tolist(),
            "batch_invariant": invariant,
            "tiap_p_values": p_tiap.tolist(),
            "comparisons": labels,
            "tie_share": tie_share.tolist(), "zero_gap": zero_gap.tolist(),
            "tiap_p_adjusted": [r.p_adjusted for r in res],
            "tiap_intervals": [[r.ci_low, r.ci_high] for r in res],
            "records": rows,
        }
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
