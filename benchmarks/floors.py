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


FLOORS: dict[str, Floor] = {"queries": queries_floor}
