"""What each speed mechanism buys, on the step a user waits for (benchmarks/README.md).

    PYTHONPATH=src .venv/bin/python benchmarks/mechanisms_bench.py --demo /tmp/hr_demo \\
        --rounds 3 --json benchmarks/mechanisms_bench_results.json

Each figure is one fresh process (so no variant inherits another's memory or caches); the
rounds visit the variants in turn, and each variant's figure is its best round. Variants
switch one mechanism off by replacing it, in the worker process only, with the plain way.

Steps:

- ``e2e``: ``tiap rescore --qrels``'s work through the API at 10^5 queries (the workload of
  rescore_bench.py, files reused from ``--data``): read the run and three qrels files,
  build the ``RankingIndex`` and the three targets, score nDCG@60, R@60, RR, Success@60.
  Variants: ``all`` (the code as it is), ``sequential`` (qrels read after the run, not in
  a second thread), ``no-jemalloc`` (pyarrow's default pool while reading), ``no-runs`` (query ids hashed
  row by row, not once per run of equal ids), ``ids-strings`` (ids hashed as strings, not
  as integer keys), ``reference`` (the record readers, ``read_run`` and the plain qrels
  reader, then coded). The same scores every time: the driver checks the digests.
  Mechanisms removed since are listed in benchmarks/README.md with the figures measured
  before their removal.
- ``demo-read``: the demo's four TREC runs (LoCoMo, 1,986 queries x 60) read with
  ``read_run`` (``record``, as ``tiap rescore --run`` without ``--qrels`` reads them), with
  ``read_run_columnar`` and turned into the same records (``columnar``), and the JSONL
  traces beside them read with ``read_run`` (``jsonl``: what ``tiap audit-run``'s rescore
  step reads).
- ``sens-demo``: the demo's sensitivity step, ``analyze`` on its rescoring (10,000 sign
  vectors, Holm, answer alignment). Variants: ``all``, ``blas-threads`` (OpenBLAS's own
  two threads in the randomization products, not one).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from machine import machine_facts

E2E = ("all", "sequential", "no-jemalloc", "no-runs", "ids-strings", "reference")
DEMO = ("record", "columnar", "jsonl")
SENS = ("all", "blas-threads")
MEASURES = "nDCG@60,R@60,RR@60,Success@60"


# ----------------------------------------------------------------------------------------
# variants: one mechanism replaced by the plain way, in this process only


def switch_off(variant: str) -> dict[str, Any]:
    """Patch the reader for ``variant``; returns options for the worker."""
    from tiap.runs import columnar

    options: dict[str, Any] = {"concurrent": True, "reference": False}
    if variant == "sequential":
        options["concurrent"] = False
    elif variant == "no-jemalloc":
        columnar._reader_memory = contextlib.nullcontext  # type: ignore[assignment]
    elif variant == "no-runs":
        encoded = columnar._encoded
        columnar._encoded = lambda column, grouped=False: encoded(column)  # type: ignore[assignment]
    elif variant == "ids-strings":
        columnar.keys_of = lambda strings, fold=False: None  # type: ignore[assignment]
    elif variant == "reference":
        options["reference"] = True
    elif variant != "all":
        raise SystemExit(f"unknown variant {variant!r}")
    return options


def work_e2e(data: Path, variant: str) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    import tiap.runs.qrels as qrels_module
    from tiap.ids import IdIndex
    from tiap.runs import read_qrels, read_run, read_run_columnar
    from tiap.runs.columnar import ColumnarRun
    from tiap.scoring import RankingIndex, parse_measures
    from tiap.scoring.rescore import qrels_targets

    pc.dictionary_encode(pa.array(["x"]))  # pyarrow.compute's one-time set-up
    options = switch_off(variant)
    measures = parse_measures(MEASURES)
    run_path = data / "run.trec"
    qrels_paths = [data / f"t{t}.qrels" for t in range(3)]
    if options["reference"]:
        qrels_module.fast_qrels = lambda path: None  # type: ignore[assignment]

    def read_one_run() -> Any:
        if options["reference"]:
            return ColumnarRun.from_run(read_run(run_path)[0])
        return read_run_columnar(run_path)[0]

    def read_all_qrels() -> list[Any]:
        return [read_qrels(p) for p in qrels_paths]

    from concurrent.futures import ThreadPoolExecutor

    start, cpu = time.perf_counter(), time.process_time()
    if options["concurrent"]:
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(read_all_qrels)
            run = read_one_run()
            qrels = pending.result()
    else:
        run = read_one_run()
        qrels = read_all_qrels()
    read = time.perf_counter() - start
    index = RankingIndex(run.rankings)
    queries = IdIndex(run.query_ids)
    targets = [qrels_targets(q, queries, run.items)[0] for q in qrels]
    values = [index.score(t, measures, "set") for t in targets]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    digest = hashlib.sha256()
    order = np.argsort(np.asarray(run.query_ids, dtype=object)).astype(np.int64)
    for got in values:
        for m in measures:
            digest.update(np.ascontiguousarray(got[m][order]).tobytes())
    return {"seconds": seconds, "cpu": cpu, "read": read, "digest": digest.hexdigest()}


def work_demo(demo: Path, variant: str, repeats: int = 5) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    from tiap.runs import read_run, read_run_columnar

    pc.dictionary_encode(pa.array(["x"]))
    paths = sorted((demo / "locomo" / "runs").glob("*.trec"))
    if not paths:
        raise SystemExit(f"no runs under {demo}/locomo/runs: run `tiap audit-run` first")

    def read_all() -> list[Any]:
        if variant == "record":
            return [r for p in paths for r in read_run(p)]
        if variant == "jsonl":  # the traces beside them, which `tiap audit-run` reads
            return [r for p in paths for r in read_run(p.with_suffix(".jsonl"))]
        return [c.to_run() for p in paths for c in read_run_columnar(p)]

    best, best_cpu, runs = float("inf"), float("inf"), []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        runs = read_all()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    # the rankings' ids (to_run keeps no scores: TIAP scores by rank)
    digest = hashlib.sha256(repr([(r.system, [(k.query_id, k.item_ids) for k in r.rankings])
                                  for r in runs]).encode()).hexdigest()
    lines = sum(1 for p in paths for _ in p.open())
    return {"seconds": best, "cpu": best_cpu, "digest": digest, "files": len(paths),
            "lines": lines}


def work_sens(demo: Path, variant: str) -> dict[str, Any]:
    """The demo's sensitivity step (``analyze`` on its rescoring, as `tiap audit-run` runs
    it: 10,000 sign vectors, Holm, answer alignment), its tables digested."""
    from tiap.sensitivity import analyze, stats

    if variant == "blas-threads":  # OpenBLAS's own threads (two here), not one
        stats.one_blas_thread = contextlib.nullcontext  # type: ignore[assignment]
    elif variant != "all":
        raise SystemExit(f"unknown variant {variant!r}")
    start, cpu = time.perf_counter(), time.process_time()
    res = analyze([demo / "locomo" / "rescore"])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    digest = hashlib.sha256(repr(sorted(res.tables.items())).encode()).hexdigest()
    return {"seconds": seconds, "cpu": cpu, "digest": digest}


# ----------------------------------------------------------------------------------------
# driver


def in_process(args: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryFile("w+") as out:
        done = subprocess.run([sys.executable, __file__, "--worker", *args], stdout=out,
                              check=False)
        out.seek(0)
        text = out.read()
    if done.returncode:
        raise SystemExit(f"worker {args} failed ({done.returncode}): {text[-2000:]}")
    return json.loads(text.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "tiap-bench")
    parser.add_argument("--demo", type=Path, default=None,
                        help="an `tiap audit-run configs/locomo.toml --out` folder")
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(E2E))
    parser.add_argument("--reference-rounds", type=int, default=1,
                        help="rounds that include the slow `reference` variant")
    parser.add_argument("--only", default=None, metavar="STYLE:V,V;STYLE:V,...",
                        help="only these id styles and variants of e2e (no demo steps)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", nargs=3, default=None, metavar=("STEP", "VARIANT", "PATH"))
    args = parser.parse_args()
    if args.worker:
        step, variant, path = args.worker
        work = {"e2e": work_e2e, "demo": work_demo, "sens": work_sens}[step]
        got = work(Path(path), variant)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open("/proc/self/status") as fh:  # VmHWM: this program's peak (not the driver's)
            got["peak_rss_mb"] = next(int(line.split()[1]) / 1024 for line in fh
                                      if line.startswith("VmHWM:"))
        got["process_cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole process
        got["load_avg"] = os.getloadavg()[0]
        print(json.dumps(got))
        return

    import rescore_bench

    results: dict[str, Any] = {"machine": machine_facts(("numpy", "pyarrow")),
                               "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                               "rounds": args.rounds, "steps": {}}
    jobs: list[tuple[str, str, Path]] = []
    # ids of 8-12 bytes (medium) are folded, those of 16-22 bytes (long) hashed as strings
    styles = {"short": [v for v in args.variants.split(",") if v],
              "medium": ["all", "ids-strings"]}
    if args.only:
        styles = {style: variants.split(",") for style, variants in
                  (part.split(":") for part in args.only.split(";"))}
        args.demo = None
    for style, variants in styles.items():
        folder = rescore_bench.data_folder(args.data, args.queries, style)
        rescore_bench.generate(folder, args.queries, style=style)
        jobs += [(f"e2e-{style}", v, folder) for v in variants]
    if args.demo is not None:
        jobs += [("demo-read", v, args.demo) for v in DEMO]
        jobs += [("sens-demo", v, args.demo) for v in SENS]
    for r in range(args.rounds):
        # every other round visits the variants backwards (drift in the machine's speed
        # then favours none); `reference` takes ~15 s a round, so only the first few
        ordered = jobs if r % 2 == 0 else jobs[::-1]
        for name, variant, path in ordered:
            if variant == "reference" and r >= args.reference_rounds:
                continue
            got = in_process([name.split("-")[0], variant, str(path)])
            step = results["steps"].setdefault(name, {})
            step.setdefault(variant, []).append(got)
            print(f"round {r + 1} {name:12} {variant:15} {got['seconds']:.3f} s "
                  f"cpu {got.get('cpu', np.nan):.3f} s {got['peak_rss_mb']:.0f} MB "
                  f"load {got['load_avg']:.1f}", flush=True)
    for name, step in results["steps"].items():
        digests = {runs[0]["digest"] for runs in step.values()}
        if len({d for runs in step.values() for d in (g["digest"] for g in runs)}) != 1:
            raise SystemExit(f"{name}: the variants' results differ: {digests}")
        base = min(g["seconds"] for g in next(iter(step.values())))
        base_cpu = min(g.get("cpu", np.nan) for g in next(iter(step.values())))
        print(f"\n{name}: best of {args.rounds}, ratio = variant / first")
        for variant, runs in step.items():
            best = min(g["seconds"] for g in runs)
            cpu = min(g.get("cpu", np.nan) for g in runs)
            print(f"  {variant:15} {best:7.3f} s  x{best / base:5.2f}  cpu {cpu:7.3f} s  "
                  f"x{cpu / base_cpu:5.2f}  peak {max(g['peak_rss_mb'] for g in runs):6.0f} MB")
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results["load_avg_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
