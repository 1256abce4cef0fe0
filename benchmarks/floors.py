"""The floor of each step of `tiap audit-run`: the least work the step cannot avoid on the
same data, measured directly with the libraries it builds on (benchmarks/pipeline_bench.py).

Each floor is a function ``(root, step, cfg) -> {"seconds": s, "what": "..."}``, where
``root`` is the finished pipeline's output folder (``OUT/<name>``), ``step`` the step's name
(``store-f5``, ``retrieve-f5-bm25``) and ``cfg`` the pipeline's config. Times are wall
clock (``time.perf_counter``), best of ``REPEAT`` runs.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPEAT = 2

Floor = Callable[[Path, str, Any], dict[str, Any]]


def best(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    """The least wall time of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def write_bytes(data: bytes, folder: Path | None = None) -> None:
    """Write ``data`` to a new file, flushed to disk, as TIAP's atomic writes do."""
    fd, name = tempfile.mkstemp(dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        os.unlink(name)


def dataset_files(cfg: Any) -> list[Path]:
    from tiap.datasets import load

    ds = load(cfg.dataset)
    return [ds.path(p) for p in ds.file_paths()]


def read_json_file(path: Path) -> Any:
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def queries_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """Decoding every file of the dataset (gunzip and ``json.loads``) and writing the bytes
    of ``queries.jsonl``."""
    files = dataset_files(cfg)
    out = (root / "queries.jsonl").read_bytes()

    def run() -> None:
        for f in files:
            read_json_file(f)
        write_bytes(out, root)

    return {"seconds": best(run), "what": f"decode the {len(files):,} dataset files, "
                                          f"write queries.jsonl"}


def store_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """Decoding the dataset, one pass of the heuristic parser's tokenizer and patterns over
    every turn (a heuristic store), and encoding and writing the store's rows
    (benchmarks/floors_store.py)."""
    import floors_store

    name = step.split("-", 1)[1]
    spec = next(s for s in cfg.stores if s.name == name)
    parts = {"decode": floors_store.json_floor(cfg.dataset),
             "write": floors_store.write_floor(root / "stores" / name / "items.jsonl")}
    if spec.parser == "heuristic":
        parts["patterns"] = floors_store.parser_floor(cfg.dataset)
    return {"seconds": sum(parts.values()), "parts": parts,
            "what": " + ".join(parts) + " (one process)"}


def retrieve_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """bm25s tokenizing, indexing and scoring every collection's items for its queries, on
    the items already read (benchmarks/floors_retrieval.py); a dense step's floor is
    sentence-transformers' encode of the same texts."""
    import floors_retrieval

    from tiap.memory.store import read_store

    system = step.split("-", 1)[1]
    store_name, retriever = system.rsplit("-", 1)
    store = read_store(root / "stores" / store_name / "items.jsonl")
    queries = root / "queries.jsonl"
    if retriever == "bm25":
        return {"seconds": floors_retrieval.bm25_floor(store, queries),
                "what": "bm25s tokenize + index + score per collection"}
    return {"seconds": floors_retrieval.dense_floor(store, queries),
            "what": "sentence-transformers encode of the texts"}


def rescore_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """Reading the runs and queries, the scoring kernel on precomputed gains, writing the
    step's CSVs (benchmarks/floors_rescore.py)."""
    import floors_rescore

    parts = {"read": floors_rescore.read_floor(root, cfg),
             "score": floors_rescore.score_floor(root, cfg),
             "write": floors_rescore.write_floor(root / "rescore")}
    return {"seconds": sum(parts.values()), "parts": parts, "what": " + ".join(parts)}


def audit_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """The lexical judge's scoring of every case, reading the rescoring's inputs, writing
    the audit's files (benchmarks/floors_audit.py)."""
    import floors_audit

    parts = {"judge": floors_audit.judge_floor(root / "audit"),
             "read": floors_audit.read_floor(root / "rescore"),
             "write": floors_audit.write_floor(root / "audit")}
    return {"seconds": sum(parts.values()), "parts": parts, "what": " + ".join(parts)}


def sensitivity_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """Reading per_query.csv and, for every pair of systems under every target and measure,
    the sign-flip resampling a paired randomization test cannot skip: ``resamples`` random
    sign vectors times the pairs' per-query differences (numpy: one matrix product per set
    of shared queries)."""
    import csv

    import numpy as np

    path = root / "rescore" / "per_query.csv"
    t0 = time.perf_counter()
    by: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):  # system,target,query_id,measure,value
            if r["value"] != "":
                by.setdefault((r["target"], r["measure"]), {}).setdefault(
                    r["system"], {})[r["query_id"]] = float(r["value"])
    # one sign matrix per set of shared queries, times every pair's differences at once
    # (how any batched paired randomization test must at least work)
    rng = np.random.default_rng(cfg.seed)
    subsets: dict[tuple[str, ...], list[np.ndarray]] = {}
    for systems in by.values():
        names = sorted(systems)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                shared = tuple(sorted(systems[a].keys() & systems[b].keys()))
                subsets.setdefault(shared, []).append(
                    np.array([systems[a][q] - systems[b][q] for q in shared]))
    pairs = 0
    for diffs in subsets.values():
        d = np.stack(diffs, axis=1)
        signs = rng.integers(0, 2, size=(cfg.resamples, d.shape[0]), dtype=np.int8) * 2 - 1
        signs.astype(np.float64) @ d
        pairs += d.shape[1]
    return {"seconds": time.perf_counter() - t0,
            "what": f"read per_query.csv, {pairs:,} paired comparisons x {cfg.resamples:,} "
                    f"sign vectors ({len(subsets):,} query subsets)"}


def report_floor(root: Path, step: str, cfg: Any) -> dict[str, Any]:
    """Reading the CSVs and manifests the report reads, matplotlib's savefig of its
    figures, writing its bytes (benchmarks/floors_report.py)."""
    import floors_report

    parts = {"read": floors_report.read_floor(root), "render": floors_report.render_floor(root),
             "write": floors_report.write_floor(root)}
    return {"seconds": sum(parts.values()), "parts": parts, "what": " + ".join(parts)}


FLOORS: dict[str, Floor] = {"queries": queries_floor, "store": store_floor,
                            "retrieve": retrieve_floor, "rescore": rescore_floor,
                            "audit": audit_floor, "sensitivity": sensitivity_floor,
                            "report": report_floor}
