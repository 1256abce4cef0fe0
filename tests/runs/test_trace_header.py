"""read_run on TIAP traces: a first line holding "tiap_trace" is a header, kept as Run.header."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tiap.errors import TiapError
from tiap.runs import Ranking, Run, detect_run_format, read_run
from tiap.runs.formats import FORMAT_JSONL

HEADER = {
    "tiap_trace": 1,
    "schema_version": 1,
    "dataset": "locomo",
    "system": "bm25",
    "store": {"path": "stores/raw", "items_sha256": "ab" * 32},
    "retriever": {"name": "bm25", "k1": 1.5, "b": 0.75},
    "k": 60,
    "versions": {"tiap": "0.1.0"},
}
ROWS = [
    {"query_id": "q1", "system": "bm25", "ranking": ["d1", "d2"], "scores": [2.5, 1.0]},
    {"query_id": "q2", "system": "bm25", "ranking": [], "scores": []},
]


def trace_text(header: dict | None = HEADER, rows: list[dict] = ROWS) -> str:
    lines = ([json.dumps(header)] if header is not None else []) + [json.dumps(r) for r in rows]
    return "\n".join(lines) + "\n"


def test_header_is_skipped_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "bm25.jsonl"
    path.write_text(trace_text(), encoding="utf-8")
    [run] = read_run(path)
    assert run.header == HEADER
    assert run.format == FORMAT_JSONL and run.system == "bm25"
    assert run.rankings == (Ranking("q1", "bm25", ("d1", "d2"), (2.5, 1.0)),
                            Ranking("q2", "bm25", (), ()))
    assert detect_run_format(path) == FORMAT_JSONL


def test_without_header_there_is_none(tmp_path: Path) -> None:
    path = tmp_path / "bm25.jsonl"
    path.write_text(trace_text(header=None), encoding="utf-8")
    [run] = read_run(path)
    assert run.header is None
    # The header is metadata: it does not take part in equality.
    with_header = Run(run.system, run.rankings, header=HEADER)
    assert with_header == Run(run.system, run.rankings)


def test_gzip_blank_lines_and_system_filter(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl.gz"
    path.write_bytes(gzip.compress(("\n" + trace_text()).encode("utf-8")))
    [run] = read_run(path, system="bm25")
    assert run.header == HEADER and run.query_ids == ("q1", "q2")


def test_problems_keep_their_file_lines(tmp_path: Path) -> None:
    # The header is line 1, so the bad ranking below is on line 3.
    bad = [ROWS[0], {"query_id": "q2", "system": "bm25", "ranking": ["d1"], "scores": [1, 2]}]
    path = tmp_path / "bm25.jsonl"
    path.write_text(trace_text(rows=bad), encoding="utf-8")
    with pytest.raises(TiapError) as exc:
        read_run(path)
    assert f"{path}:3, query q2: 'scores' has 2 values but 'ranking' has 1" in str(exc.value)


def test_a_header_without_rankings_is_an_empty_run(tmp_path: Path) -> None:
    path = tmp_path / "bm25.jsonl"
    path.write_text(json.dumps(HEADER) + "\n\n", encoding="utf-8")
    with pytest.raises(TiapError, match="a trace header but no rankings"):
        read_run(path)


def test_only_the_first_line_can_be_a_header(tmp_path: Path) -> None:
    # A header object after the first ranking is not a ranking: an error, not skipped.
    path = tmp_path / "bm25.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps(HEADER) + "\n", encoding="utf-8")
    with pytest.raises(TiapError, match=r"bm25.jsonl:2: 'query_id' is missing"):
        read_run(path)
