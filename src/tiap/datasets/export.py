"""``tiap datasets export``: a dataset as ``turns.jsonl`` and ``queries.jsonl``.

Also written: ``memories.jsonl`` (derived memories the dataset ships, with lineage),
``problems.jsonl`` (every evidence problem) and ``manifest.json`` (schema version, the pinned
input files with their sha256, TIAP's version). Everything is written into a temporary
folder first and moved into place only when complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiap.datasets.base import Dataset
from tiap.datasets.files import manifest
from tiap.io import atomic_dir, write_jsonl
from tiap.provenance import manifest_header

SCHEMA_VERSION = 1


def export_dataset(ds: Dataset, out: str | Path) -> dict[str, Any]:
    counts = {"turns": 0, "queries": 0, "memories": 0, "problems": 0}
    pinned = manifest(ds.folder)
    with atomic_dir(out) as tmp:
        counts["turns"] = write_jsonl(tmp / "turns.jsonl", (t.to_json() for t in ds.turns_iter()))
        counts["queries"] = write_jsonl(tmp / "queries.jsonl", (q.to_json() for q in ds.queries_iter()))
        counts["memories"] = write_jsonl(
            tmp / "memories.jsonl",
            (
                {"item_id": m.item_id, "kind": m.kind, "sources": list(m.sources), "text": m.text,
                 "collection": m.collection_id, "session_id": m.session_id, "speaker": m.speaker}
                for m in ds.memories_iter()
            ),
        )
        counts["problems"] = write_jsonl(tmp / "problems.jsonl", (p.to_json() for p in ds.problems()))
        man = manifest_header("datasets export", SCHEMA_VERSION)
        man["dataset"] = ds.dataset_id
        man["inputs"] = [
            {"path": f"{ds.folder}/{p}", "sha256": pinned[p].stored_sha256} for p in ds.file_paths()
        ]
        man["counts"] = counts
        (tmp / "manifest.json").write_text(json.dumps(man, indent=2) + "\n", encoding="utf-8")
    return counts
