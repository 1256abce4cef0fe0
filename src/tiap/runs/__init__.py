"""Runs: saved ranked outputs and qrels, read and written in one place.

- :mod:`.formats`: the run record (:class:`Run` of :class:`Ranking` values), the reader of
  every run format (TREC, JSONL rankings and TIAP traces, ranked-trace rows), recognised by
  content, and the atomic writers;
- :mod:`.columnar`: the same files read straight into integer arrays for large runs
  (:func:`read_run_columnar`), by the same rules (internal fast path: pyarrow when present);
- :mod:`.named`: runs given as ``[NAME=]PATH`` specs (:func:`read_named_run`: a NAME
  renames a file's only system or picks one of several);
- :mod:`.qrels`: TREC qrels, read (:func:`read_qrels`) and written (the writer
  ``tiap targets`` uses).

Other systems' outputs with their lineage are read by :mod:`tiap.importers`.
"""

from tiap.runs.columnar import ColumnarRun, read_run_columnar
from tiap.runs.formats import (
    RUN_FORMATS,
    Ranking,
    Run,
    RunWarning,
    detect_run_format,
    read_run,
    system_from_path,
    warnings_json,
    write_jsonl_run,
    write_trec_run,
)
from tiap.runs.named import read_named_run
from tiap.runs.qrels import Qrels, read_qrels

__all__ = [
    "RUN_FORMATS",
    "ColumnarRun",
    "Qrels",
    "Ranking",
    "Run",
    "RunWarning",
    "detect_run_format",
    "read_named_run",
    "read_qrels",
    "read_run",
    "read_run_columnar",
    "system_from_path",
    "warnings_json",
    "write_jsonl_run",
    "write_trec_run",
]
