"""Rescoring and Stage III on many systems: the local engine against Ray on this machine's
workers.

    .venv/bin/python benchmarks/engine_bench.py [--systems 30] [--queries 2000] \
        [--resamples 10000] [--workers 2] [--repeats 2] [--query-shard 500] \
        [--stages rescore,sensitivity,qrels] [--qrels-queries 100000] [--json PATH]

Not collected by pytest; needs the ``ray`` extra. Results and the machine are recorded in
``benchmarks/README.md``.

Workload. A synthetic store (every query has two evidence units, each with a raw turn and a
derived fact) and ``--systems`` runs of depth 20 whose rankings differ by system (each
system ranks the query's six relevant items at positions drawn from its own seed among 14
distractors): ``tiap rescore`` under Raw, Source and Canonical with 4 measures (nDCG@10,
nDCG@20, R@20, RR@20), then ``tiap sensitivity`` on it: winner flips of every pair of
systems under every pair of targets and measure (C(30, 2) x 3 x 4 = 5,220 gaps), design
pairs and categories too. Timed, in-process: ``tiap rescore`` with ``--engine local``, with
``--engine ray`` (a task per run) and with ``--engine ray --query-shard N`` (a task per N
queries of a run), and ``tiap sensitivity`` with ``--engine local`` and ``--engine ray``, on
a local Ray instance of ``--workers`` CPUs, Ray's start-up apart. Each figure is the best of
``--repeats``. The script fails unless every CSV of each Ray run is byte-identical to the
local one's.

Stage ``qrels``: one run of ``--qrels-queries`` queries under three qrels files (the
workload of ``rescore_bench.py``), ``tiap rescore --qrels`` locally, on Ray (a task for the
run) and on Ray in ``--workers`` query shards (``--query-shard`` = queries / workers).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, systems: int, queries: int) -> list[str]:
    """Write the store, the queries and the runs; return the ``tiap rescore`` arguments."""
    items, qs = [], []
    for q in range(queries):
        qs.append({"query_id": f"q{q}", "question": "?", "category": f"c{q % 4}",
                   "evidence": [f"q{q}:u1", f"q{q}:u2"]})
        for u in ("u1", "u2"):
            items.append({"item_id": f"q{q}:t-{u}", "kind": "raw", "sources": [f"q{q}:{u}"]})
            items.append({"item_id": f"q{q}:f-{u}", "kind": "fact", "sources": [f"q{q}:{u}"]})
        items += [{"item_id": f"q{q}:x{j}", "kind": "raw", "sources": [f"q{q}:z{j}"]}
                  for j in range(16)]
    (root / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    args = ["rescore", "--items", str(root / "items.jsonl"), "--queries",
            str(root / "queries.jsonl"), "--measures", "nDCG@10,nDCG@20,R@20,RR@20",
            "--tokenizer", "none"]
    for s in range(systems):
        rng = random.Random(s)
        lines = []
        for q in range(queries):
            ids = [f"q{q}:{x}" for x in ("t-u1", "t-u2", "f-u1", "f-u2",
                                         *(f"x{j}" for j in range(16)))]
            rng.shuffle(ids)
            lines.append(json.dumps({"query_id": f"q{q}", "ranking": ids}) + "\n")
        (root / f"s{s}.jsonl").write_text("".join(lines))
        args += ["--run", f"s{s}={root / f's{s}.jsonl'}"]
    return args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=30)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--query-shard", type=int, default=500)
    ap.add_argument("--stages", default="rescore,sensitivity,qrels",
                    help="rescore (always run: Stage III reads it), sensitivity, qrels")
    ap.add_argument("--qrels-queries", type=int, default=100_000)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    from tiap.cli.main import main as tiap
    from tiap.engine import LocalEngine, RayEngine, use_engine

    tmp = Path(tempfile.mkdtemp(prefix="tiap-engine-bench-"))
    rescore_args = build(tmp, a.systems, a.queries)
    rdir = tmp / "rescore-local0"
    common = ["sensitivity", str(rdir), "--resamples", str(a.resamples), "--no-answers",
              "--configs", "g=" + ",".join(f"s{s}" for s in range(min(a.systems, 5)))]
    shard = ["--engine", "ray", "--query-shard", str(a.query_shard)]
    variants = {  # name: (command, engine options)
        "rescore-local": (rescore_args, []), "rescore-ray": (rescore_args, ["--engine", "ray"]),
        "rescore-ray-shards": (rescore_args, shard),
        "sensitivity-local": (common, []), "sensitivity-ray": (common, ["--engine", "ray"])}
    variants = {n: v for n, v in variants.items()
                if n.startswith("rescore") or "sensitivity" in a.stages}
    if "qrels" in a.stages:  # one run of many queries under three qrels files
        sys.path.insert(0, str(Path(__file__).parent))
        from rescore_bench import generate

        paths = generate(tmp / "qrels", a.qrels_queries)
        qrels_args = ["rescore", "--run", str(paths["run"]),
                      *(x for t in range(3) for x in ("--qrels", f"t{t}={paths[f't{t}']}")),
                      "--measures", "nDCG@60,R@60,RR@60,Success@60", "--credit", "set"]
        variants |= {"qrels-local": (qrels_args, []),
                     "qrels-ray": (qrels_args, ["--engine", "ray"]),
                     "qrels-ray-shards": (qrels_args, [
                         "--engine", "ray", "--query-shard",
                         str(-(-a.qrels_queries // a.workers))])}
    times: dict[str, list[float]] = {n: [] for n in variants}
    t0 = time.perf_counter()
    engine = RayEngine(num_cpus=a.workers)
    ray_start = time.perf_counter() - t0
    try:
        for r in range(a.repeats):
            for name, (cmd, opts) in variants.items():
                out = tmp / f"{name}{r}"
                t0 = time.perf_counter()
                with use_engine(engine if opts else LocalEngine()):
                    rc = tiap([*cmd, *opts, "--out", str(out)])
                times[name].append(time.perf_counter() - t0)
                assert rc == 0, name
    finally:
        engine.close()

    def same(a_dir: str, b_dir: str) -> bool:
        return all((tmp / b_dir / p.name).read_bytes() == p.read_bytes()
                   for p in (tmp / a_dir).glob("*.csv"))

    identical = {n: same(f"{n.split('-')[0]}-local0", f"{n}0") for n in variants
                 if not n.endswith("-local")}
    flips = (len((tmp / "sensitivity-local0" / "winner_flips.csv").read_text().splitlines()) - 1
             if "sensitivity-local" in variants else None)
    best = {n: round(min(t), 2) for n, t in times.items()}
    res = {"systems": a.systems, "queries": a.queries, "resamples": a.resamples,
           "workers": a.workers, "query_shard": a.query_shard, "winner_flip_rows": flips,
           "ray_start_s": round(ray_start, 2), "seconds": best,
           "ratio_local_over": {n: round(best[f"{n.split('-')[0]}-local"] / best[n], 2)
                                for n in identical},
           "byte_identical": identical}
    print(json.dumps(res, indent=2))
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    if not all(identical.values()):
        sys.exit("a Ray run's CSVs differ from the local run's")


if __name__ == "__main__":
    main()
