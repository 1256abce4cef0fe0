"""Floors of the report step (issue 37): what any report of the same outputs must spend.

Each function returns seconds of CPU (``time.process_time``: the machine is shared, so wall
clock is noise) for one output folder of ``tiap audit-run`` (``ROOT``: the dataset's folder, holding ``rescore/``, ``sensitivity/``,
``audit/graded/`` and ``report/``):

- :func:`read_floor`: read and split into rows every CSV the report reads (the sensitivity
  folder's tables, the rescoring's ``per_query.csv`` and ``intervals.csv``, the graded
  audit's tables) and parse the manifests;
- :func:`write_floor`: write the bytes of every file of ``ROOT/report`` to a new folder;
- :func:`render_floor`: matplotlib's ``savefig`` of the report's figures (the figures drawn
  by a run of ``build_report`` without the per-query view; only the savefig calls are
  timed);
- :func:`report_time`: ``build_report`` itself, as the pipeline calls it (without what the
  pipeline holds in memory: it reads the stores, queries and runs the rescoring read).

Run as ``python benchmarks/floors_report.py ROOT`` (the source to measure first on
``PYTHONPATH``) to print each, the floor (their sum, less ``report_time``) and the ratio.
Not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import tempfile
import time
from pathlib import Path


def _read_paths(root: Path) -> list[Path]:
    paths = sorted((root / "sensitivity").glob("*.csv"))
    paths += [root / "rescore" / n for n in ("per_query.csv", "intervals.csv")]
    paths += sorted((root / "audit" / "graded").glob("*.csv"))
    return [p for p in paths if p.is_file()]


def read_floor(root: str | Path) -> float:
    """Seconds to read and split into rows the CSV files and manifests the report reads."""
    root = Path(root)
    paths = _read_paths(root)
    mans = [p for p in (root / "sensitivity" / "manifest.json", root / "rescore" / "manifest.json",
                        root / "audit" / "graded" / "manifest.json") if p.is_file()]
    t0 = time.process_time()
    for p in paths:
        with p.open(newline="", encoding="utf-8") as f:
            list(csv.reader(f))
    for p in mans:
        json.loads(p.read_text(encoding="utf-8"))
    return time.process_time() - t0


def write_floor(root: str | Path) -> float:
    """Seconds to write the bytes of every file of ``root/report`` into a new folder."""
    src = Path(root) / "report"
    files = {p.relative_to(src): p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.process_time()
        for rel, data in files.items():
            out = Path(tmp) / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        return time.process_time() - t0


def render_floor(root: str | Path) -> float:
    """Seconds matplotlib spends in ``savefig`` on the report's figures."""
    import matplotlib

    matplotlib.use("Agg")
    from tiap.report import build_report, plots

    root = Path(root)
    spent = [0.0]
    original = plots._png

    def timed(fig: object) -> bytes:
        plt = plots.pyplot()
        buf = io.BytesIO()
        t0 = time.process_time()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight",  # type: ignore[attr-defined]
                    metadata={"Software": None})
        spent[0] += time.process_time() - t0
        plt.close(fig)
        return buf.getvalue()

    plots._png = timed  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            build_report([root / "sensitivity"], Path(tmp) / "report", query_view=False,
                         audits=[root / "audit" / "graded"]
                         if (root / "audit" / "graded").is_dir() else ())
    finally:
        plots._png = original  # type: ignore[assignment]
    return spent[0]


def report_time(root: str | Path) -> float:
    """Seconds of ``build_report`` as the pipeline calls it (into a new folder)."""
    from tiap.report import build_report

    root = Path(root)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.process_time()
        build_report([root / "sensitivity"], Path(tmp) / "report",
                     audits=[root / "audit" / "graded"]
                     if (root / "audit" / "graded").is_dir() else ())
        return time.process_time() - t0


def main(root: str) -> None:
    got = {"read": read_floor(root), "write": write_floor(root), "render": render_floor(root)}
    floor = sum(got.values())
    took = report_time(root)
    print(" ".join(f"{k} {v:.2f} s" for k, v in got.items()),
          f"floor {floor:.2f} s report {took:.2f} s ratio {took / floor:.1f}")


if __name__ == "__main__":
    main(sys.argv[1])
