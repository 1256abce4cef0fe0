"""Throughput of the scoring kernels (not collected by pytest; run it by hand).

    .venv/bin/python benchmarks/kernels_bench.py [--queries 100000] [--repeats 7]

Workload: Q queries x a ranked list of 60
distinct item codes; 3 alternative targets per query, each with 1-14 member items in 1-5
groups (about half drawn from the run, biased to the top; items may sit in two groups);
measures nDCG@60, R@60, RR@60 and Success@60. Throughput is (query x target) evaluations per
second, best of ``--repeats`` runs after one warm-up. Reported separately:

* index: building the :class:`RankingIndex` (once per ranking matrix / system run);
* look-up: ranks of the target members in their query's ranking (once per target);
* kernel: the credit computation from member ranks to the four per-query measures;
* score: look-up + kernel through the public ``RankingIndex.score`` (index prepared);
* encode: Python lists of string ids -> arrays (one vocabulary for rankings + 3 targets);
* pytrec_eval on the same set-credit data, when installed, for the ratio.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tiap.scoring import RankingIndex, Targets, encode, parse_measures
from tiap.scoring.kernels import Credit, _score_ranks, _unranked

DEPTH = 60
MEASURES = parse_measures("nDCG@60,R@60,RR@60,Success@60")


def make_data(n_queries: int, seed: int = 0) -> tuple[np.ndarray, list[Targets]]:
    rng = np.random.default_rng(seed)
    vocab_per_collection, n_collections = 5000, 50
    collection = rng.integers(0, n_collections, n_queries)
    rankings = np.argsort(rng.random((n_queries, 200)), axis=1)[:, :DEPTH]
    rankings = (rankings + collection[:, None] * vocab_per_collection).astype(np.int32)
    targets = []
    for _ in range(3):
        n_items = rng.integers(1, 15, n_queries)
        m = int(n_items.sum())
        query = np.repeat(np.arange(n_queries), n_items)
        from_run = rng.random(m) < 0.5
        top_biased = np.minimum(rng.geometric(0.08, m) - 1, DEPTH - 1)
        items = np.where(
            from_run,
            rankings[query, top_biased],
            collection[query] * vocab_per_collection + rng.integers(0, vocab_per_collection, m),
        )
        n_groups = np.minimum(rng.integers(1, 6, n_queries), n_items)
        offset = np.concatenate([[0], np.cumsum(n_items)])[:-1]
        within = np.arange(m) - offset[query]
        group = (within * n_groups[query]) // n_items[query]
        starts = np.ones(m, bool)
        starts[1:] = (query[1:] != query[:-1]) | (group[1:] != group[:-1])
        member_ptr = np.concatenate([np.flatnonzero(starts), [m]])
        group_ptr = np.concatenate([[0], np.cumsum(n_groups)])
        targets.append(Targets(group_ptr, member_ptr, items))
    return rankings, targets


def best(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--trec-queries", type=int, default=10_000)
    args = parser.parse_args()
    q, reps = args.queries, args.repeats
    rankings, targets = make_data(q)
    members = sum(t.n_members for t in targets)
    print(f"Q={q} depth={DEPTH} targets=3 members={members} ({members / (3 * q):.1f}/query/target)")
    for t in targets:  # cached per Targets, reused across systems: not part of the per-call cost
        _ = t.member_query, t.member_group, t.group_counts, t.set_sizes, t.query_member_ptr

    t_index = best(lambda: RankingIndex(rankings), max(1, reps // 2))
    index = RankingIndex(rankings)
    print(f"index build        {t_index * 1e3:8.1f} ms (once per ranking matrix)")
    n_eval = 3 * q
    t_lookup = best(lambda: [index._lookup(t, _unranked(DEPTH)) for t in targets], reps)
    print(
        f"look-up            {t_lookup / 3 * 1e3:8.1f} ms/target  {n_eval / t_lookup / 1e6:6.2f} M evals/s"
    )
    ranks = [index._lookup(t, _unranked(DEPTH)) for t in targets]
    modes: tuple[Credit, ...] = ("group", "set")
    for credit in modes:

        def kernel_only(credit: Credit = credit) -> None:
            for r, t in zip(ranks, targets, strict=True):
                _score_ranks(r, t, MEASURES, credit, DEPTH)

        def look_up_and_score(credit: Credit = credit) -> None:
            for t in targets:
                index.score(t, MEASURES, credit)

        t_kernel = best(kernel_only, reps)
        t_score = best(look_up_and_score, reps)
        print(
            f"{credit:5s} kernel       {t_kernel / 3 * 1e3:8.1f} ms/target  {n_eval / t_kernel / 1e6:6.2f} M evals/s"
        )
        print(
            f"{credit:5s} score        {t_score / 3 * 1e3:8.1f} ms/target  {n_eval / t_score / 1e6:6.2f} M evals/s"
            " (look-up + kernel)"
        )

    # from Python structures: strings, one vocabulary for the rankings and 3 targets
    small = min(q, args.trec_queries)
    str_rankings = [[f"i{x}" for x in row] for row in rankings[:small].tolist()]
    str_targets = []
    for t in targets:
        groups = []
        for qi in range(small):
            g0, g1 = t.group_ptr[qi], t.group_ptr[qi + 1]
            groups.append(
                [
                    {f"i{x}" for x in t.items[t.member_ptr[g] : t.member_ptr[g + 1]].tolist()}
                    for g in range(g0, g1)
                ]
            )
        str_targets.append(groups)
    t_encode = best(lambda: encode(str_rankings, *str_targets), max(1, reps // 2))
    print(
        f"encode (Q={small})   {t_encode * 1e3:8.1f} ms  ({3 * small / t_encode / 1e6:.2f} M evals/s incl. encode only)"
    )

    try:
        import pytrec_eval  # type: ignore[import-untyped]
    except ImportError:
        return
    enc = encode(str_rankings, *str_targets)
    idx = RankingIndex(enc.rankings)
    qrels_all, runs = [], {}
    for qi, row in enumerate(str_rankings):
        runs[f"q{qi}"] = {x: float(DEPTH - i) for i, x in enumerate(row)}
    for groups in str_targets:
        qrels_all.append(
            {f"q{qi}": {x: 1 for g in gs for x in g} for qi, gs in enumerate(groups) if gs}
        )
    evaluators = [
        pytrec_eval.RelevanceEvaluator(qr, {"ndcg_cut.60", "recall.60", "success.60", "recip_rank"})
        for qr in qrels_all
    ]
    t_trec = best(lambda: [ev.evaluate(runs) for ev in evaluators], max(1, reps // 2))
    t_ours = best(lambda: [idx.score(t, MEASURES, "set") for t in enc.targets], reps)
    print(
        f"pytrec_eval warm (Q={small}) {3 * small / t_trec / 1e3:8.0f} k evals/s; "
        f"tiap set score {3 * small / t_ours / 1e6:.2f} M evals/s -> ratio {t_trec / t_ours:.0f}x"
    )


if __name__ == "__main__":
    main()
