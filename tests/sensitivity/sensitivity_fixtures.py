"""Small rescore folders written inline, in the format ``tiap rescore`` writes
(docs/targets-and-scoring.md, "Outputs of tiap rescore")."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

TARGETS = ("raw", "source", "canonical")
SPECS = {"raw": "kind == raw", "source": "true", "canonical": "kind != raw and serving"}


def write_rescore_dir(
    path: Path,
    values: Mapping[tuple[str, str, str], Sequence[float | None]],
    query_ids: Sequence[str],
    *,
    targets: Sequence[str] = TARGETS,
    sizes: Mapping[tuple[str, str], Sequence[int | None]] | None = None,
    categories: Mapping[str, str] | None = None,
    queries_sha: str = "q" * 64,
    credit: str = "group",
) -> Path:
    """``values[(system, target, measure)]`` aligned with ``query_ids`` (None = undefined)."""
    path.mkdir(parents=True, exist_ok=True)
    systems = list(dict.fromkeys(k[0] for k in values))
    measures = list(dict.fromkeys(k[2] for k in values))
    with open(path / "per_query.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(("system", "target", "query_id", "measure", "value"))
        for (s, t, m), vals in values.items():
            for q, v in zip(query_ids, vals, strict=True):
                w.writerow((s, t, q, m, "" if v is None or (isinstance(v, float)
                                                            and math.isnan(v)) else repr(v)))
    with open(path / "target_sizes.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(("system", "target", "query_id", "n_groups", "n_members"))
        for (s, t), mem in (sizes or {}).items():
            for q, n in zip(query_ids, mem, strict=True):
                w.writerow((s, t, q, 0 if n is None else 1, 0 if n is None else n))
    with open(path / "queries.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(("query_id", "category", "collection", "abstention"))
        for q in query_ids:
            w.writerow((q, (categories or {}).get(q, "c"), "conv", "false"))
    man = {
        "schema_version": 1,
        "command": "rescore",
        "inputs": {"queries": {"path": str(path / "missing-queries.jsonl"),
                               "sha256": queries_sha, "bytes": 0}},
        "options": {"credit": credit, "missing": "skip", "dedup": "error", "depth": None,
                    "targets": [{"name": t, "spec": SPECS.get(t, "true")} for t in targets],
                    "measures": measures, "shared": False},
        "systems": {s: {"system": s, "store": s, "scored_queries": len(query_ids)}
                    for s in systems},
    }
    (path / "manifest.json").write_text(json.dumps(man, indent=2), encoding="utf-8")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))
