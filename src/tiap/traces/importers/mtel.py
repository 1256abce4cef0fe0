"""``tiap import mtel-trace``: the paper's published traces (:mod:`tiap.traces.mtel`), with the
lineage-coverage report every importer writes."""

from __future__ import annotations

from pathlib import Path

from tiap.traces.importers import COVERAGE_FILE, coverage_json, lineage_coverage
from tiap.traces.mtel import MtelImport, import_mtel_trace, write_mtel_import

__all__ = ["import_mtel"]


def import_mtel(
    path: str | Path,
    out_dir: str | Path,
    *,
    locomo_path: str | Path | None = None,
    system: str | None = None,
    infer_from_text: bool = False,
) -> MtelImport:
    """Import one MTEL-Mem trace into ``out_dir`` (see :func:`tiap.traces.import_mtel_trace`):
    ``items.jsonl``, ``queries.jsonl``, ``run.jsonl``, ``mtel_report.json``, ``manifest.json``
    and ``lineage_coverage.json`` (whose ``importer`` part is the report's counts)."""
    imp = import_mtel_trace(path, locomo_path=locomo_path, system=system,
                            infer_from_text=infer_from_text)
    cov = lineage_coverage(imp.items, imp.queries, [imp.run], imp.report.counts())
    write_mtel_import(imp, out_dir, extra_files={COVERAGE_FILE: coverage_json(cov)})
    return imp
