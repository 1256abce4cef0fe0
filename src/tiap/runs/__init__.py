"""Runs: saved ranked outputs and qrels, read and written in one place.

- :mod:`.formats`: the run record (:class:`Run` of :class:`Ranking` values), the reader of
  every run format (TREC, JSONL rankings and TIAP traces, ranked-trace rows), recognised by
  content, and the atomic writers;
- :mod:`.columnar`: the same files read straight into integer arrays for large runs
  (:func:`read_run_columnar`), by the same rules (internal fast path: pyarrow when present);
- :mod:`.qrels`: TREC qrels, read (:func:`read_qrels`) and written (:func:`qrels_line`,
  :func:`write_qrels_lines`).

Other systems' outputs with their lineage are read by :mod:`tiap.importers`.
"""

from tiap.runs.columnar import ColumnarRun, read_run_columnar
from tiap.runs.formats import (
    FORMAT_JSONL,
    FORMAT_ROWS_CSV,
    FORMAT_ROWS_JSONL,
    FORMAT_ROWS_TSV,
    FORMAT_TREC,
    ORDERS,
    RUN_FORMATS,
    Dedup,
    Order,
    Ranking,
    Run,
    RunWarning,
    RunWarnings,
    check_order,
    dedup_ranking,
    detect_run_format,
    id_keys,
    read_run,
    score_order,
    system_from_path,
    trace_dataset,
    trace_store,
    warnings_json,
    write_jsonl_run,
    write_trec_run,
)
from tiap.runs.qrels import QRELS_LAYOUT, Qrels, qrels_line, read_qrels, write_qrels_lines

__all__ = [
    "FORMAT_JSONL",
    "FORMAT_ROWS_CSV",
    "FORMAT_ROWS_JSONL",
    "FORMAT_ROWS_TSV",
    "FORMAT_TREC",
    "ORDERS",
    "QRELS_LAYOUT",
    "RUN_FORMATS",
    "ColumnarRun",
    "Dedup",
    "Order",
    "Qrels",
    "Ranking",
    "Run",
    "RunWarning",
    "RunWarnings",
    "check_order",
    "dedup_ranking",
    "detect_run_format",
    "id_keys",
    "qrels_line",
    "read_qrels",
    "read_run",
    "read_run_columnar",
    "score_order",
    "system_from_path",
    "trace_dataset",
    "trace_store",
    "warnings_json",
    "write_jsonl_run",
    "write_qrels_lines",
    "write_trec_run",
]
