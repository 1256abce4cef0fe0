"""Stage III on many systems: the local engine against Ray on this machine's workers.

    .venv/bin/python benchmarks/engine_bench.py [--systems 30] [--queries 2000] \
        [--resamples 10000] [--workers 2] [--repeats 2] [--json PATH]

Not collected by pytest; needs the ``ray`` extra. Results and the machine are recorded in
``benchmarks/README.md``.

Workload. A synthetic store (every query has two evidence units, each with a raw turn and a
derived fact) and ``--systems`` runs of depth 20 whose rankings differ by system (each
system ranks the query's six relevant items at positions drawn from its own seed among 14
distractors): ``tiap rescore`` under Raw, Source and Canonical with 4 measures (nDCG@10,
nDCG@20, R@20, RR@20), then ``tiap sensitivity`` on it: winner flips of every pair of
systems under every pair of targets and measure (C(30, 2) x 3 x 4 = 5,220 gaps), design
pairs and categories too. Timed: ``tiap sensitivity`` in-process with ``--engine local``
and with ``--engine ray`` on a local Ray instance of ``--workers`` CPUs, Ray's start-up
apart. Each figure is the best of ``--repeats``. The script fails unless every CSV of the
Ray run is byte-identical to the local one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, systems: int, queries: int) -> Path:
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
            "--tokenizer", "none", "--out", str(root / "rescore")]
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
    from tiap.cli.main import main

    assert main(args) == 0
    return root / "rescore"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=30)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    from tiap.cli.main import main as tiap
    from tiap.engine import RayEngine, use_engine

    tmp = Path(tempfile.mkdtemp(prefix="tiap-engine-bench-"))
    t0 = time.perf_counter()
    rdir = build(tmp, a.systems, a.queries)
    build_s = time.perf_counter() - t0
    common = ["sensitivity", str(rdir), "--resamples", str(a.resamples), "--no-answers",
              "--configs", "g=" + ",".join(f"s{s}" for s in range(min(a.systems, 5)))]
    times: dict[str, list[float]] = {"local": [], "ray": []}
    t0 = time.perf_counter()
    engine = RayEngine(num_cpus=a.workers)
    ray_start = time.perf_counter() - t0
    try:
        for r in range(a.repeats):
            for name in ("local", "ray"):
                out = tmp / f"{name}{r}"
                t0 = time.perf_counter()
                if name == "ray":
                    with use_engine(engine):
                        rc = tiap([*common, "--engine", "ray", "--out", str(out)])
                else:
                    rc = tiap([*common, "--out", str(out)])
                times[name].append(time.perf_counter() - t0)
                assert rc == 0, name
    finally:
        engine.close()
    same = all((tmp / "ray0" / p.name).read_bytes() == p.read_bytes()
               for p in (tmp / "local0").glob("*.csv"))
    flips = sum(1 for _ in open(tmp / "local0" / "winner_flips.csv")) - 1
    res = {"systems": a.systems, "queries": a.queries, "resamples": a.resamples,
           "workers": a.workers, "winner_flip_rows": flips, "rescore_build_s": round(build_s, 2),
           "ray_start_s": round(ray_start, 2), "local_s": round(min(times["local"]), 2),
           "ray_s": round(min(times["ray"]), 2),
           "ratio_local_over_ray": round(min(times["local"]) / min(times["ray"]), 2),
           "byte_identical": same}
    print(json.dumps(res, indent=2))
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    if not same:
        sys.exit("the Ray run's CSVs differ from the local run's")


if __name__ == "__main__":
    main()
