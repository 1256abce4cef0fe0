"""Each step of `tiap audit-run`, timed beside its floor, for LoCoMo and LongMemEval-S.

    .venv/bin/python benchmarks/pipeline_bench.py [--only locomo,longmemeval-s]
        [--json benchmarks/pipeline_bench_results.json] [--work DIR]

For each config (configs/locomo.toml with BM25, configs/longmemeval-s.toml) the pipeline
runs in this process from nothing: an empty output folder and an empty TIAP cache. Each
step's time is the pipeline's own (``.steps/<step>.json``); its peak memory is this
process's resident set at its highest during the step (the kernel's high-water mark,
``VmHWM``, reset at each step's start through ``/proc/self/clear_refs``), and, where a
child process (a store's worker) reached a new peak during the step, that peak.

Then, in the same run and on the same machine, each step's *floor*: the least work that
step cannot avoid on the same data, measured directly with the libraries it builds on
(benchmarks/floors.py says what each floor is). Ratio = step time / floor.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from floors import FLOORS  # noqa: E402
from machine import machine_facts  # noqa: E402

CONFIGS = {"locomo": (ROOT / "configs" / "locomo.toml", ["bm25"]),
           "longmemeval-s": (ROOT / "configs" / "longmemeval-s.toml", None)}


def _status(field: str) -> int:
    """A field of /proc/self/status in kB (VmHWM, VmRSS)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets the resident set's high-water mark (Linux >= 4.0)
        return True
    except OSError:
        return False


class StepWatch:
    """The pipeline's log: a line ``<step>: <seconds> s`` ends a step; the next starts."""

    def __init__(self) -> None:
        self.peaks: dict[str, int] = {}
        self.children: dict[str, int] = {}
        self.lines: list[str] = []
        self._child0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        _reset_peak()

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        print("   ", line, flush=True)
        name, _, rest = line.partition(": ")
        if rest.endswith(" s") and rest[:-2].replace(".", "", 1).isdigit():
            self.peaks[name] = _status("VmHWM")
            child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            if child > self._child0:  # a worker of this step reached a new peak
                self.children[name] = child
                self._child0 = child
            _reset_peak()


def run_config(name: str, work: Path) -> dict:
    from tiap.pipeline import load_config, run_pipeline

    path, retrievers = CONFIGS[name]
    cfg = load_config(path, retrievers=retrievers)
    out = work / "out"
    os.environ["TIAP_CACHE"] = str(work / "cache")
    watch = StepWatch()
    t0 = time.perf_counter()
    res = run_pipeline(cfg, out, log=watch)
    total = time.perf_counter() - t0
    root = out / cfg.name
    steps = {}
    for stem in res.timings:  # the order the steps ran in
        rec = json.loads((root / ".steps" / f"{stem}.json").read_text())
        steps[stem] = {"seconds": rec["seconds"], "peak_mb": watch.peaks.get(stem, 0) / 1024,
                       "worker_peak_mb": watch.children.get(stem, 0) / 1024}
    print(f"  {name}: audit-run {total:.1f} s; floors:", flush=True)
    floors = {}
    for step in steps:
        kind = step.split("-", 1)[0]
        if kind in FLOORS:
            floors[step] = FLOORS[kind](root, step, cfg)
            print(f"    {step}: {floors[step]['seconds']:.2f} s ({floors[step]['what']})",
                  flush=True)
    return {"total_seconds": total, "steps": steps, "floors": floors,
            "timings": res.timings}


def table(name: str, got: dict) -> str:
    rows = [f"**{name}**: `tiap audit-run` from nothing {got['total_seconds']:.1f} s",
            "", "| step | time | floor | ratio | peak RSS | floor is |",
            "|---|---:|---:|---:|---:|---|"]
    step_sum = floor_sum = 0.0
    for step, s in got["steps"].items():
        f = got["floors"].get(step)
        step_sum += s["seconds"]
        peak = f"{s['peak_mb']:,.0f} MB"
        if s["worker_peak_mb"]:
            peak += f" (child processes {s['worker_peak_mb']:,.0f} MB)"
        if f:
            floor_sum += f["seconds"]
            rows.append(f"| {step} | {s['seconds']:.2f} s | {f['seconds']:.2f} s | "
                        f"{s['seconds'] / f['seconds']:.1f} | {peak} | {f['what']} |")
        else:
            rows.append(f"| {step} | {s['seconds']:.2f} s | | | {peak} | |")
    rows.append(f"| all steps | {step_sum:.1f} s | {floor_sum:.1f} s | "
                f"{step_sum / floor_sum if floor_sum else float('nan'):.1f} | | |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(CONFIGS))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    facts = machine_facts(("numpy", "bm25s", "PyStemmer", "scipy", "matplotlib"))
    results = {"machine": facts, "configs": {}}
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        for name in args.only.split(","):
            print(f"{name}:", flush=True)
            results["configs"][name] = run_config(name, Path(tmp) / name)
    results["machine"]["load_avg_after"] = os.getloadavg()
    for name, got in results["configs"].items():
        print()
        print(table(name, got))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
