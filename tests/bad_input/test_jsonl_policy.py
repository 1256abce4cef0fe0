"""One JSON Lines policy for every JSONL file TIAP reads (:func:`tiap.io.iter_jsonl`).

Runs, queries, items and generic imports were read by three readers with three rules (a
byte-order mark refused by one; a key given twice, ``NaN`` and lone surrogates accepted by
two; a bad line collected by two, raised at once by the third). Each reader here gets the
same defective files, built below, and must treat them the same way.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tiap.datasets.overlays import read_overlay
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError
from tiap.importers.generic import read_generic
from tiap.io import read_json
from tiap.memory.store import read_items
from tiap.runs import read_run

# one good record per reader, and a function reading a file of them (an evidence overlay
# row has the fields of a query row)
RUN = '{"query_id": "q%d", "ranking": ["a", "b"]}'
QUERY = '{"query_id": "q%d", "evidence": ["u1"]}'
ITEM = '{"item_id": "t%d", "kind": "raw", "sources": ["u1"]}'
GENERIC = '{"type": "item", "item_id": "t%d", "kind": "raw", "sources": ["u1"]}'

READERS: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "run": (RUN, read_run),
    "queries": (QUERY, read_queries),
    "items": (ITEM, read_items),
    "generic": (GENERIC, read_generic),
    "overlay": (QUERY, read_overlay),  # was parsed line by line with json.loads: NaN passed
}


def _lines(record: str, n: int) -> list[str]:
    return [record % i for i in range(1, n + 1)]


def _problems(read: Callable[[Path], Any], path: Path) -> list[tuple[int | None, str]]:
    with pytest.raises(TiapError) as info:
        read(path)
    return [(p.line, p.code) for p in info.value.problems
            if p.file == str(path) and p.line is not None]


@pytest.mark.parametrize("reader", READERS)
def test_a_byte_order_mark_is_skipped(tmp_path: Path, reader: str) -> None:
    """Was an error for items (``io.iter_jsonl``): 'Unexpected UTF-8 BOM'."""
    record, read = READERS[reader]
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(_lines(record, 2)).encode() + b"\n")
    if reader == "generic":  # a generic import holds items and no query: refused later on
        with pytest.raises(TiapError) as info:
            read(path)
        assert all(p.line is None for p in info.value.problems)  # not a line's problem
    else:
        assert read(path)


# A key twice (JSON keeps the last: a silent loss), NaN (not JSON), a lone surrogate
# (not a character): each was read in silence by the run reader and ``io.iter_jsonl``.
STRICT = {
    "duplicate": ('{"query_id": "q9", "query_id": "q8"}', "duplicate"),
    "nan": ('{"item_id": "t9", "x": NaN}', "invalid-value"),
    "surrogate": ('{"item_id": "t9", "x": "\\ud800"}', "encoding"),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("defect", STRICT)
def test_strict_json_on_every_reader(tmp_path: Path, reader: str, defect: str) -> None:
    record, read = READERS[reader]
    bad, code = STRICT[defect]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join([*_lines(record, 2), bad, record % 3]) + "\n", encoding="utf-8")
    assert (3, code) in _problems(read, path)


@pytest.mark.parametrize("reader", READERS)
def test_a_cut_last_line_is_truncated(tmp_path: Path, reader: str) -> None:
    """A last line without its newline that is not JSON: code ``truncated`` everywhere (was
    a plain JSON error for runs and items)."""
    record, read = READERS[reader]
    path = tmp_path / "f.jsonl"
    cut = (record % 3)[:15]
    path.write_text("\n".join([*_lines(record, 2), cut]), encoding="utf-8")
    assert _problems(read, path) == [(3, "truncated")]


@pytest.mark.parametrize("reader", READERS)
def test_bad_lines_are_reported_together(tmp_path: Path, reader: str) -> None:
    """Two lines that are not JSON: both reported, each with its line (items raised the
    first alone)."""
    record, read = READERS[reader]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join([record % 1, "{oops", record % 2, "[1,", record % 3]) + "\n",
                    encoding="utf-8")
    assert _problems(read, path) == [(2, "input"), (4, "input")]


@pytest.mark.parametrize("reader", READERS)
def test_a_cut_gzip_is_truncated(tmp_path: Path, reader: str) -> None:
    """A gzip stream cut short: code ``truncated`` everywhere (was so for queries only)."""
    record, read = READERS[reader]
    path = tmp_path / "f.jsonl.gz"
    text = "\n".join(_lines(record, 2000)) + "\n"
    path.write_bytes(gzip.compress(text.encode())[:-20])
    with pytest.raises(TiapError) as info:
        read(path)
    assert [(p.file, p.code) for p in info.value.problems] == [(str(path), "truncated")]


@pytest.mark.parametrize("defect", STRICT)
def test_one_json_document_under_the_same_policy(tmp_path: Path, defect: str) -> None:
    """:func:`tiap.io.read_json` (manifests, Mem0 and MemoryOS exports) read ``NaN``, a key
    twice and lone surrogates in silence; now each is a problem at its record path."""
    bad, code = STRICT[defect]
    path = tmp_path / "f.json"
    path.write_text('{"rows": [1, %s]}' % bad, encoding="utf-8")
    with pytest.raises(TiapError) as info:
        read_json(path)
    assert [(p.file, p.code, p.record) for p in info.value.problems] == [
        (str(path), code, ".rows[1]" if defect == "duplicate" else ".rows[1].x")]
