#!/usr/bin/env python3
"""The plug-ins in a clean venv: TIAP's demo headline, nDCG@60 under group credit, reproduced
through ir_measures (and ir_datasets and PyTerrier where they install) to 1e-12.

    python3.11 .ci/plugins.py WHEEL WORK [--expect out/locomo/rescore/summary.csv]

In a fresh venv ``WORK/venv`` with only the TIAP wheel (and its ``bm25`` extra, to rank),
``ir-measures``, and then, each where it installs, ``ir-datasets`` and ``pyterrier``, it
builds the LoCoMo demo's four stores (``f1``, ``f5``, ``f8``: the heuristic parser at 1, 5
and 8 facts a turn; ``native``: LoCoMo's own observations and summaries), ranks each with
BM25 (depth 60), rescores them as ``make demo`` does (group credit, nDCG@60 under Raw,
Source and Canonical), and writes ``tiap targets`` of the four stores. Then, inside the
venv, it computes each system's mean nDCG@60 under each target through the plug-ins:

- ``ir_measures``: ``GroupNDCG@60`` on the group qrels (``tiap.plugins.ir_measures``) and
  the TREC run;
- ``ir_datasets``: the same measure on the qrels of ``tiap/demo/<store>/<target>``;
- ``pyterrier``: ``pt.Experiment`` with ``GroupNDCG@60`` on
  ``pt.get_dataset("tiap:targets/<store>/<target>")`` (TIAP's entry point);

and prints them beside TIAP's (``rescore/summary.csv``, and the ``--expect`` file, e.g. the
``summary.csv`` of ``make demo``). Exit 0 when every value agrees to 1e-12; 1 otherwise, or
when TIAP or ir_measures cannot be installed. A plug-in whose tool does not install is
reported and left out. The data: ``$TIAP_DATA``, else ``../shared/data`` beside the checkout.
Takes about 3 minutes on 2 cores (the install is most of it).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

STORES = {"f1": ["--parser", "heuristic", "--max-facts", "1"],
          "f5": ["--parser", "heuristic", "--max-facts", "5"],
          "f8": ["--parser", "heuristic", "--max-facts", "8"],
          "native": ["--parser", "native"]}
TARGETS = ("raw", "source", "canonical")
MEASURE = "nDCG@60"
TOL = 1e-12
MARK = ".plugins-check"  # in the demo folder: an earlier run's, safe to remove
OPTIONAL = ("ir_datasets", "pyterrier")  # import names; PyPI: ir-datasets, pyterrier


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    """Run ``cmd``; its output is shown only when it fails."""
    proc = subprocess.run(cmd, check=False, cwd=cwd, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"plugins: failed ({proc.returncode}): {' '.join(cmd)}")


def pip(venv: Path, *args: str) -> bool:
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", *args],
                          check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write("\n".join(ln for ln in (proc.stdout + proc.stderr).splitlines()
                                   if not ln.startswith("WARNING: Location"))[-2000:] + "\n")
    return proc.returncode == 0


def outer(args: argparse.Namespace) -> int:
    wheel, work = Path(args.wheel).resolve(), Path(args.work).resolve()
    if not wheel.is_file():
        raise SystemExit(f"plugins: {wheel}: no such wheel")
    data = os.environ.get("TIAP_DATA") or str(Path(__file__).resolve().parents[2]
                                               / "shared" / "data")
    if not (Path(data) / "locomo").is_dir():
        raise SystemExit(f"plugins: LoCoMo not found under {data} (set TIAP_DATA)")
    work.mkdir(parents=True, exist_ok=True)
    venv, demo = work / "venv", work / "demo"
    for old in (venv, demo):  # an earlier run's: the venv is made anew, the demo rebuilt
        if (old / "pyvenv.cfg").is_file() or (old / MARK).is_file():
            shutil.rmtree(old)
        elif old.exists():
            raise SystemExit(f"plugins: {old} exists and is not an earlier run's: give "
                             "another work folder")
    t0 = time.time()
    run([sys.executable, "-m", "venv", str(venv)], cwd=work)
    if not pip(venv, f"{wheel}[bm25]", "ir-measures>=0.3.1"):
        print("plugins: TIAP (with its bm25 extra) and ir_measures did not install: FAILED")
        return 1
    installed = ["tiap", "ir_measures"]
    for name, req in zip(OPTIONAL, ("ir-datasets>=0.5", "pyterrier>=1.0"), strict=True):
        if pip(venv, req):
            installed.append(name)
        else:
            print(f"plugins: {req} did not install here: its check is left out")
    print(f"plugins: clean venv {venv}: {', '.join(installed)} ({time.time() - t0:.0f} s)")

    env = {**os.environ, "TIAP_DATA": data}
    tiap = str(venv / "bin" / "tiap")
    demo.mkdir()
    (demo / MARK).write_text("made by .ci/plugins.py: removed by its next run\n")
    for store, opts in STORES.items():
        run([tiap, "build-store", "locomo", *opts, "--out", f"stores/{store}"], demo, env)
    run([tiap, "datasets", "export", "locomo", "--out", "locomo"], demo, env)
    for store in STORES:
        run([tiap, "retrieve", "--store", f"stores/{store}", "--queries",
             "locomo/queries.jsonl", "--retriever", "bm25", "--k", "60",
             "--out", f"runs/{store}-bm25.jsonl", "--system", f"{store}-bm25"], demo, env)
    items = [a for s in STORES for a in ("--items", f"{s}-bm25=stores/{s}/items.jsonl")]
    runs = [a for s in STORES for a in ("--run", f"runs/{s}-bm25.jsonl")]
    run([tiap, "rescore", "--queries", "locomo/queries.jsonl", *items, *runs, "--measures",
         MEASURE, "--credit", "group", "--tokenizer", "none", "--out", "rescore"],
        demo, env)
    run([tiap, "targets", *[a for s in STORES for a in ("--items", f"stores/{s}/items.jsonl")],
         "--queries", "locomo/queries.jsonl", "--out", "targets"], demo, env)
    print(f"plugins: built the demo's stores, runs, rescore and targets in {demo} "
          f"({time.time() - t0:.0f} s)")
    inner = [str(venv / "bin" / "python"), str(Path(__file__).resolve()), "--inner", str(demo)]
    if args.expect:
        inner += ["--expect", str(Path(args.expect).resolve())]
    return subprocess.run(inner, check=False, cwd=demo, env=env).returncode


def summary(path: Path) -> dict[tuple[str, str], float]:
    """(system, target) -> mean nDCG@60 of a rescore summary.csv."""
    out = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["measure"] == MEASURE and row["target"] in TARGETS:
                out[row["system"], row["target"]] = float(row["mean"])
    return out


def inside(demo: Path, expect: Path | None) -> int:
    """In the venv: the means through each plug-in, beside TIAP's."""
    import importlib.util

    import ir_measures

    from tiap.plugins.ir_measures import GroupNDCG, group_qrels

    measure = GroupNDCG@60
    tiap_means = summary(demo / "rescore" / "summary.csv")
    expected = summary(expect) if expect else {}
    paths: dict[str, dict[tuple[str, str], float]] = {"ir_measures": {}}
    for store in STORES:
        run = list(ir_measures.read_trec_run(str(demo / "runs" / f"{store}-bm25.trec")))
        for target in TARGETS:
            qrels = group_qrels(demo / "targets", store, target)
            paths["ir_measures"][f"{store}-bm25", target] = ir_measures.calc_aggregate(
                [measure], qrels, run)[measure]
    if importlib.util.find_spec("ir_datasets"):
        import ir_datasets

        from tiap.plugins.ir_datasets import register

        register(demo / "targets", "demo")
        paths["ir_datasets"] = {}
        for store in STORES:
            run = list(ir_measures.read_trec_run(str(demo / "runs" / f"{store}-bm25.trec")))
            for target in TARGETS:
                ds = ir_datasets.load(f"tiap/demo/{store}/{target}")
                paths["ir_datasets"][f"{store}-bm25", target] = ir_measures.calc_aggregate(
                    [measure], ds.qrels_iter(), run)[measure]
    if importlib.util.find_spec("pyterrier"):
        import pyterrier as pt

        paths["pyterrier"] = {}
        for store in STORES:
            res = pt.io.read_results(str(demo / "runs" / f"{store}-bm25.trec"))
            for target in TARGETS:
                ds = pt.get_dataset(f"tiap:targets/{store}/{target}")
                table = pt.Experiment([res], ds.get_topics(), ds.get_qrels(),
                                      eval_metrics=[measure], names=[f"{store}-bm25"])
                paths["pyterrier"][f"{store}-bm25", target] = float(table[str(measure)][0])

    refs = {"tiap rescore (this venv)": tiap_means}
    if expected:
        refs[f"expected ({expect})"] = expected
    cols = [*refs, *paths]
    print(f"\nmean {MEASURE}, group credit, per system and target:")
    print(f"{'system':<12} {'target':<10} " + " ".join(f"{c[:24]:>24}" for c in cols))
    worst: dict[str, float] = {}
    for key, value in sorted(tiap_means.items()):
        row = [refs[c].get(key, float("nan")) if c in refs else paths[c].get(key, float("nan"))
               for c in cols]
        print(f"{key[0]:<12} {key[1]:<10} " + " ".join(f"{v:>24.17f}" for v in row))
        for c, v in zip(cols[1:], row[1:], strict=True):
            worst[c] = max(worst.get(c, 0.0), abs(v - value) if not math.isnan(v) else math.inf)
    missing = sorted(set(expected) - set(tiap_means)) if expected else []
    ok = all(w <= TOL for w in worst.values()) and len(tiap_means) == 12 and not missing
    for c, w in worst.items():
        print(f"plugins: {c}: largest |difference| from tiap rescore {w:.3g} "
              f"({'within' if w <= TOL else 'OVER'} {TOL:g})")
    print(json.dumps({"ok": ok, "paths": sorted(paths), "values": len(tiap_means)}))
    print(f"plugins: {'OK' if ok else 'FAILED'}: the demo headline through "
          f"{', '.join(sorted(paths))}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", nargs="?", help="the TIAP wheel")
    ap.add_argument("work", nargs="?", help="a work folder (the venv and the demo go here)")
    ap.add_argument("--expect", help="a summary.csv to agree with too (make demo's)")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inside(Path(args.inner), Path(args.expect) if args.expect else None)
    if not (args.wheel and args.work):
        ap.error("give the wheel and a work folder")
    return outer(args)


if __name__ == "__main__":
    sys.exit(main())
