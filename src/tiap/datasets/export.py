"""``tiap datasets export``: a dataset as ``turns.jsonl`` and ``queries.jsonl``.

Also written: ``memories.jsonl`` (derived memories the dataset ships, with lineage),
``problems.jsonl`` (every evidence problem) and ``manifest.json`` (schema version, the input
files with the sha256 of the bytes actually read and whether they matched their pin, the
pinned files of the dataset that were not read and why (``pinned_not_read``: BEAM-1M's
questions of chats the release ships no ``chat.json`` for), ``verified``, TIAP's version, the
list of outputs). ``verified`` is true only when every input was checked against its pin and
matched (false with ``--no-verify``). Every pinned file the dataset reads must be present
(or downloadable): a missing one is an error before anything is read, as in every loader,
never an export of the other files. Everything is written into a temporary folder first and
swapped in whole only when complete (:func:`tiap.io.output_folder`): a bad record, or a
unit, query or memory id met twice, is an error and leaves nothing behind, and a rerun
leaves no file of an earlier export. A folder that is not an earlier export is refused
before anything is read (``error[stale-output]``) unless ``force``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tiap.datasets.base import Dataset
from tiap.datasets.files import DataSource, manifest
from tiap.datasets.registry import load
from tiap.errors import Problems
from tiap.io import check_output_folder, output_folder, sha256_file, write_jsonl
from tiap.provenance import Manifest

T = TypeVar("T")


def _unique(rows: Iterable[T], key: str, what: str, file: str,
            problems: Problems) -> Iterator[T]:
    """Pass rows through, recording every ``key`` value met twice as a ``duplicate``."""
    seen: dict[str, int] = {}
    for n, row in enumerate(rows, start=1):
        ident = getattr(row, key)
        if ident in seen:
            problems.add(f"{what} {ident!r} is exported twice (rows {seen[ident]} and {n}); "
                         f"expected each {what} once: the dataset's files repeat it",
                         record=ident, file=file, code="duplicate")
            continue
        seen[ident] = n
        yield row


#: The manifest ``command`` of an export.
COMMAND = "datasets export"
OUTPUTS = ("turns.jsonl", "queries.jsonl", "memories.jsonl", "problems.jsonl")


def export_dataset(ds: Dataset | str, out: str | Path, *, force: bool = False,
                   source: DataSource | None = None) -> dict[str, Any]:
    """Export ``ds`` into ``out`` (module docstring); returns the counts. ``ds``: a dataset,
    or a registered dataset's id, loaded from ``source`` after ``out`` is checked. ``force``:
    replace ``out`` even if it is not an earlier export (what it holds is deleted).

        >>> from tiap.datasets import Bundle, Collection, InlineDataset, Query, Session, Turn
        >>> turns = (Turn("c1:D1:1", "c1", "session_1", 1, "Ann", "I moved to Oslo."),)
        >>> queries = (Query("q1", "c1", "Where does Ann live?", "Oslo", "1", ("c1:D1:1",)),)
        >>> ds = InlineDataset([Bundle(Collection("c1", 1, 1, ("Ann", "Bob")),
        ...                            (Session("c1", "session_1", 1, "8 May, 2023"),),
        ...                            turns, queries)])
        >>> export_dataset(ds, "export")
        {'turns': 1, 'queries': 1, 'memories': 0, 'problems': 0}
        >>> Path("export/queries.jsonl").read_text().count("\\n")
        1
    """
    check_output_folder(out, COMMAND, force=force)  # before anything is read
    if isinstance(ds, str):
        ds = load(ds, source=source)
    ds.verify()  # every pinned file the dataset reads: present (or fetched) and checked
    counts = {"turns": 0, "queries": 0, "memories": 0, "problems": 0}
    pinned = manifest(ds.folder) if ds.folder else {}
    problems = Problems()
    with output_folder(out, COMMAND, force=force) as tmp:
        counts["turns"] = write_jsonl(
            tmp / "turns.jsonl",
            (t.to_json() for t in _unique(ds.turns_iter(), "unit_id", "unit id",
                                          "turns.jsonl", problems)))
        counts["queries"] = write_jsonl(
            tmp / "queries.jsonl",
            (q.to_json() for q in _unique(ds.queries_iter(), "query_id", "query id",
                                          "queries.jsonl", problems)))
        counts["memories"] = write_jsonl(
            tmp / "memories.jsonl",
            (
                {"item_id": m.item_id, "kind": m.kind, "sources": list(m.sources), "text": m.text,
                 "collection": m.collection_id, "session_id": m.session_id, "speaker": m.speaker}
                for m in _unique(ds.memories_iter(), "item_id", "memory id", "memories.jsonl",
                                 problems)
            ),
        )
        problems.raise_if_any()  # inside the temporary folder: nothing is moved into place
        counts["problems"] = write_jsonl(tmp / "problems.jsonl",
                                         (p.to_json() for p in ds.problems()))
        inputs = []
        for p in ds.file_paths():
            actual = sha256_file(ds.path(p))
            row: dict[str, Any] = {"path": f"{ds.folder}/{p}", "sha256": actual}
            if p in pinned:
                row["pinned_sha256"] = pinned[p].stored_sha256
                row["matches_pin"] = actual in (pinned[p].stored_sha256, pinned[p].source_sha256)
            inputs.append(row)
        verified = (bool(getattr(ds.source, "check", True)) and bool(inputs)
                    and all(row.get("matches_pin") is True for row in inputs))
        Manifest.new(COMMAND, inputs=inputs, outputs=list(OUTPUTS), extra={
            "dataset": ds.dataset_id,
            "pinned_not_read": [{"path": f"{ds.folder}/{p}", "reason": why}
                                for p, why in ds.unread_files().items()],
            "verified": verified,
            "counts": counts,
        }).write(tmp / "manifest.json")
    return counts
