"""Stage 4: traces. Saved ranked outputs, read and written in several formats (:mod:`.runs`;
column-wise into integer arrays for large runs, with TREC qrels: :mod:`.columnar`),
and importers of other systems' traces with their lineage (:mod:`.mtel`: the paper's
published MTEL-Mem traces; :mod:`.importers`: the ``tiap import`` registry, the generic
JSONL format, MemoryOS and Graphiti/Zep).
"""

from tiap.traces.columnar import (
    ColumnarRun,
    Qrels,
    read_qrels,
    read_run_columnar,
)
from tiap.traces.mtel import (
    FORMAT_IDS_ONLY,
    FORMAT_KIND_FLAG,
    FORMAT_NATIVE,
    MTEL_FORMATS,
    STATUS_EXACT,
    STATUS_INFERRED,
    STATUS_UNKNOWN,
    TARGET_NAMES,
    MtelImport,
    MtelReport,
    QueryRecovery,
    import_mtel_trace,
    write_mtel_import,
)
from tiap.traces.runs import (
    FORMAT_JSONL,
    FORMAT_ROWS_CSV,
    FORMAT_ROWS_JSONL,
    FORMAT_ROWS_TSV,
    FORMAT_TREC,
    RUN_FORMATS,
    Dedup,
    Ranking,
    Run,
    RunWarning,
    detect_run_format,
    read_run,
    write_jsonl_run,
    write_trec_run,
)

__all__ = [
    "FORMAT_IDS_ONLY",
    "FORMAT_JSONL",
    "FORMAT_KIND_FLAG",
    "FORMAT_NATIVE",
    "FORMAT_ROWS_CSV",
    "FORMAT_ROWS_JSONL",
    "FORMAT_ROWS_TSV",
    "FORMAT_TREC",
    "MTEL_FORMATS",
    "RUN_FORMATS",
    "STATUS_EXACT",
    "STATUS_INFERRED",
    "STATUS_UNKNOWN",
    "TARGET_NAMES",
    "ColumnarRun",
    "Dedup",
    "MtelImport",
    "MtelReport",
    "Qrels",
    "QueryRecovery",
    "Ranking",
    "Run",
    "RunWarning",
    "detect_run_format",
    "import_mtel_trace",
    "read_qrels",
    "read_run",
    "read_run_columnar",
    "write_jsonl_run",
    "write_mtel_import",
    "write_trec_run",
]
