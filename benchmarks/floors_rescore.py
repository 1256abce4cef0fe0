"""Floors of the rescore step (``tiap audit-run``'s ``rescore``): the least work any
rescoring of the same runs does, beside the step itself as ``tiap.pipeline`` runs it.

Each function returns CPU seconds (``time.process_time``) of one pass in this process:

- :func:`read_floor`: read and decode every line of the step's runs and queries file
  (``json.loads``), no checks and no records built (reading the store is the store
  reader's floor, ``floors_store.py``: not counted here);
- :func:`score_floor`: the numpy kernel's scoring of the same rankings under every target
  and measure (:meth:`tiap.scoring.kernels.RankingIndex.score`), the rankings and targets
  coded beforehand, untimed;
- :func:`write_floor`: write the bytes of every CSV the step wrote (read first, untimed);
- :func:`rescore_time`: the step itself, as ``run_rescore`` in ``tiap.pipeline`` runs it,
  split into reading the queries, the stores, the runs, ``rescore`` and ``write_rescore``.

Run it on a finished pipeline's output folder (``OUT/<name>``) and its config::

    PYTHONPATH=src TIAP_DATA=/work/shared/data python benchmarks/floors_rescore.py \\
        OUT/longmemeval-s configs/longmemeval-s.toml
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tiap.datasets.queryfile import read_queries
from tiap.engine import make_engine, use_engine
from tiap.memory.store import read_store
from tiap.pipeline import load_config
from tiap.runs import read_run
from tiap.scoring.encode import Vocabulary, encode_rankings, encode_targets
from tiap.scoring.folder import write_rescore
from tiap.scoring.kernels import RankingIndex
from tiap.scoring.rescore import rescore


def _inputs(root: Path, cfg: Any) -> dict[str, Path]:
    """The step's inputs, keyed as the pipeline keys them."""
    inputs = {"queries": root / "queries.jsonl"}
    for system, s, _ in cfg.systems():
        inputs[f"items:{system}"] = root / "stores" / s.name / "items.jsonl"
        inputs[f"run:{system}"] = root / "runs" / f"{system}.jsonl"
    return inputs


def read_floor(root: str | Path, cfg: Any) -> float:
    """CPU seconds to read and ``json.loads`` every line of the runs and the queries file."""
    paths = [p for k, p in _inputs(Path(root), cfg).items() if not k.startswith("items:")]
    t = time.process_time()
    for p in paths:
        with open(p, "rb") as fh:
            for line in fh:
                json.loads(line)
    return time.process_time() - t


def score_floor(root: str | Path, cfg: Any, result: Any = None) -> float:
    """CPU seconds of the kernel's scoring of every run under every target and measure,
    from coded rankings and targets (``result``: the step's :class:`Scores`, whose groups
    are coded; computed here when not given, untimed)."""
    root = Path(root)
    if result is None:
        result = rescore_time(root, cfg)["result"]
    inputs = _inputs(root, cfg)
    runs = {r.system: r for system, _, _ in cfg.systems()
            for r in read_run(inputs[f"run:{system}"], system=system)}
    work = []
    for system in result.systems:
        by_q = {rk.query_id: rk.item_ids for rk in runs[system].rankings}
        qids = result.query_ids[system]
        vocab = Vocabulary()
        matrix = encode_rankings([by_q.get(q, ()) for q in qids], vocab)
        store = result.reports[system].store
        for t in result.targets:
            groups = result.target_sets[store][t.name]
            work.append((matrix, encode_targets([groups[q] for q in qids], vocab)))
    measures = list(result.measures)
    t0 = time.process_time()
    for matrix, coded in work:
        RankingIndex(matrix).score(coded, measures, result.credit)
    return time.process_time() - t0


def write_floor(rescore_folder: str | Path) -> float:
    """CPU seconds to write the bytes of every CSV of the step's folder to a new folder."""
    files = {p.name: p.read_bytes() for p in sorted(Path(rescore_folder).glob("*.csv"))}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.process_time()
        for name, data in files.items():
            with open(Path(tmp) / name, "wb") as fh:
                fh.write(data)
        return time.process_time() - t


def rescore_time(root: str | Path, cfg: Any, out: str | Path | None = None) -> dict[str, Any]:
    """The step as the pipeline runs it: CPU seconds of each part, the peak memory
    (``ru_maxrss``, KiB) and the result. ``out``: where ``write_rescore`` writes (a
    temporary folder when not given)."""
    root = Path(root)
    inputs = _inputs(root, cfg)
    times: dict[str, Any] = {}
    t = time.process_time()
    qs = read_queries(inputs["queries"])
    times["read_queries"] = time.process_time() - t
    stores, runs, loaded = {}, [], {}
    times["read_store"] = times["read_run"] = 0.0
    for system, s, _ in cfg.systems():
        t = time.process_time()
        if s.name not in loaded:
            loaded[s.name] = read_store(inputs[f"items:{system}"])
        stores[system] = loaded[s.name]
        times["read_store"] += time.process_time() - t
        t = time.process_time()
        runs.extend(read_run(inputs[f"run:{system}"], system=system))
        times["read_run"] += time.process_time() - t
    gc.freeze()
    engine = make_engine(cfg.engine, query_shard=cfg.query_shard)
    try:
        t = time.process_time()
        with use_engine(engine):
            result = rescore(runs, qs, stores, targets=cfg.targets, measures=cfg.measures,
                             credit=cfg.credit)
        times["rescore"] = time.process_time() - t
        with tempfile.TemporaryDirectory() as tmp:
            t = time.process_time()
            write_rescore(result, Path(out) if out is not None else Path(tmp) / "rescore",
                          queries=qs, inputs=inputs, dataset=cfg.dataset,
                          options={"pipeline": cfg.source,
                                   "design": {k: list(v) for k, v in cfg.design.items()}})
            times["write_rescore"] = time.process_time() - t
    finally:
        engine.close()
        gc.unfreeze()
    times["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times["result"] = result
    return times


def main(argv: list[str]) -> None:
    root, cfg = Path(argv[0]), load_config(argv[1])
    step = rescore_time(root, cfg)
    result = step.pop("result")
    floors = {"read": read_floor(root, cfg), "score": score_floor(root, cfg, result),
              "write": write_floor(root / "rescore")}
    for k, v in step.items():
        print(f"step  {k:14s} {v:9.2f}" if k != "maxrss_kib" else f"step  peak RSS {v / 1024:9.0f} MB")
    for k, v in floors.items():
        print(f"floor {k:14s} {v:9.2f}")
    own = step["read_queries"] + step["read_run"] + step["rescore"] + step["write_rescore"]
    floor = sum(floors.values())
    print(f"step without reading the store {own:.2f} s CPU; floor {floor:.2f} s; "
          f"ratio {own / floor:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
