"""Writers for Stage I outputs (ARCHITECTURE.md, "Interchange formats": targets out).

Every writer is atomic: rows go to a temporary file that is renamed into place only when
the whole file is written (:func:`tiap.io.atomic_write`), so an error never leaves a
partial file. :func:`write_targets` writes the whole folder through
:func:`tiap.io.atomic_dir`: either every file of the run lands, or none does.

Files written by :func:`write_targets` into ``out_dir``:

- ``groups.jsonl``: one row per (query, target), query order then target order::

      {"query_id": "q1", "target": "raw", "groups": [["t1"], ["t2"]], "n_groups": 2,
       "zero_target_reason": null}

- ``target_mapping.jsonl``: the paper package's target-mapping rows, one per query, each
  list the sorted union of the groups (empty for a zero-target case)::

      {"query_id": "q1", "raw_ids": [...], "source_ids": [...], "canonical_ids": [...]}

- ``qrels/<target>.qrels``: TREC qrels ``qid 0 docid 1``, one line per credited item; a
  zero-target query has *no* line, so trec_eval, ranx and ir_measures average over exactly
  the queries the target defines;
- ``coverage.json`` and ``coverage.csv``: :class:`~tiap.targets.coverage.Coverage`;
- ``manifest.json`` (:func:`tiap.provenance.manifest_header`): schema version, package
  versions, the targets' specs, the inputs (record counts and the sha256 of the items and
  queries serialised as TIAP writes ``items.jsonl`` / ``queries.jsonl``, plus the path and
  sha256 of any input files given), and every file written with its sha256.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tiap.errors import Problem, TiapError
from tiap.io import atomic_dir, atomic_write, sha256_file, write_jsonl
from tiap.memory.store import Item
from tiap.provenance import input_entry, manifest_header
from tiap.targets.coverage import COVERAGE_CSV_COLUMNS, Coverage, coverage
from tiap.targets.groups import DEFAULT_TARGETS, QueryLike, TargetGroups, TargetSets, build_groups
from tiap.targets.lineage import Lineage, build_lineage
from tiap.targets.targets import BUILTIN_TARGETS, Target, TargetRegistry, resolve_targets

__all__ = [
    "SCHEMA_VERSION",
    "groups_rows",
    "mapping_rows",
    "qrels_lines",
    "write_coverage",
    "write_groups_jsonl",
    "write_qrels",
    "write_target_mapping",
    "write_targets",
]

SCHEMA_VERSION = 1
_MAPPING_TARGETS = ("raw", "source", "canonical")


def groups_rows(
    sets: TargetSets, targets: Iterable[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Rows of ``groups.jsonl``: one per (query, target), query order then target order."""
    names = tuple(targets) if targets is not None else sets.target_names
    tgs = [sets[n] for n in names]
    for qid in sets.query_ids:
        for tg in tgs:
            qg = tg.queries[qid]
            yield {
                "query_id": qid,
                "target": tg.name,
                "groups": [list(g) for g in qg.groups],
                "units": list(qg.units),
                "n_groups": qg.n_groups,
                "zero_target_reason": qg.zero_target_reason,
            }


def write_groups_jsonl(
    path: str | Path, sets: TargetSets, targets: Iterable[str] | None = None
) -> int:
    """Atomically write ``groups.jsonl``; returns the number of rows."""
    names = tuple(targets) if targets is not None else sets.target_names
    for n in names:
        sets[n]  # fail before opening the file if a target is missing
    return write_jsonl(path, groups_rows(sets, names))


def mapping_rows(sets: TargetSets) -> Iterator[dict[str, Any]]:
    """The paper package's target-mapping rows (needs ``raw``, ``source`` and ``canonical``).

    Raises:
        TiapError: at the call (not at the first row) if a built-in target is missing.
    """
    missing = [n for n in _MAPPING_TARGETS if n not in sets]
    if missing:
        raise TiapError(
            "target-mapping rows need the built-in targets raw, source and canonical; "
            f"not computed: {', '.join(missing)}"
        )
    raw, source, canonical = (sets[n] for n in _MAPPING_TARGETS)

    def rows() -> Iterator[dict[str, Any]]:
        for qid in sets.query_ids:
            yield {
                "query_id": qid,
                "raw_ids": list(raw.queries[qid].members),
                "source_ids": list(source.queries[qid].members),
                "canonical_ids": list(canonical.queries[qid].members),
            }

    return rows()


def write_target_mapping(path: str | Path, sets: TargetSets) -> int:
    """Atomically write the target-mapping JSONL; returns the number of rows."""
    return write_jsonl(path, mapping_rows(sets))


def _check_trec_ids(tg: TargetGroups) -> None:
    problems: list[Problem] = []
    for qg in tg:
        if not qg.groups:
            continue
        if not qg.query_id or any(c.isspace() for c in qg.query_id):
            problems.append(
                Problem("query id is empty or contains whitespace; a qrels file cannot hold it",
                        query_id=qg.query_id)
            )
        for iid in qg.members:
            if not iid or any(c.isspace() for c in iid):
                problems.append(
                    Problem("item id contains whitespace; a qrels file cannot hold it",
                            query_id=qg.query_id, record=iid)
                )
    if problems:
        raise TiapError(problems=problems)


def qrels_lines(tg: TargetGroups) -> Iterator[str]:
    """TREC qrels lines ``qid 0 docid 1`` (newline-terminated); none for zero-target queries.

    Within a query, items are the sorted union of its groups (``set`` credit mode).
    """
    for qg in tg:
        for iid in qg.members:
            yield f"{qg.query_id} 0 {iid} 1\n"


def write_qrels(path: str | Path, tg: TargetGroups) -> int:
    """Atomically write one target's TREC qrels file; returns the number of lines."""
    _check_trec_ids(tg)
    n = 0
    with atomic_write(path) as fh:
        for line in qrels_lines(tg):
            fh.write(line)
            n += 1
    return n


def write_coverage(json_path: str | Path, csv_path: str | Path | None, cov: Coverage) -> None:
    """Atomically write the coverage summary as JSON and (if ``csv_path``) one CSV row per
    target."""
    with atomic_write(json_path) as fh:
        json.dump(cov.to_json(), fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    if csv_path is not None:
        with atomic_write(csv_path) as fh:
            writer = csv.DictWriter(fh, fieldnames=list(COVERAGE_CSV_COLUMNS), lineterminator="\n")
            writer.writeheader()
            for tc in cov.targets:
                writer.writerow(tc.csv_row())


def _rows_sha256(rows: Iterable[dict[str, Any]]) -> tuple[int, str]:
    """Count and sha256 of rows serialised exactly as :func:`tiap.io.write_jsonl` writes them."""
    h = hashlib.sha256()
    n = 0
    for row in rows:
        h.update(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        h.update(b"\n")
        n += 1
    return n, h.hexdigest()


def _query_row(q: QueryLike) -> dict[str, Any]:
    to_json = getattr(q, "to_json", None)
    if callable(to_json):
        row: dict[str, Any] = to_json()
        return row
    return {"query_id": q.query_id, "evidence": list(q.evidence), "abstention": q.abstention}


def _output_entry(path: Path, lines: int | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"sha256": sha256_file(path)}
    if lines is not None:
        entry["lines"] = lines
    return entry


def _qrels_name(target: str) -> str:
    return f"qrels/{target}.qrels"


def write_targets(
    out_dir: str | Path,
    items: Lineage | Iterable[Item],
    queries: Iterable[QueryLike],
    targets: Iterable[Target | str] = DEFAULT_TARGETS,
    *,
    registry: TargetRegistry | None = None,
    input_files: Mapping[str, str | Path] | None = None,
) -> Coverage:
    """Compute the groups of every (query, target) and write all Stage I outputs.

    Args:
        out_dir: the output folder (created if needed; files from earlier runs that this
            run does not rewrite are kept, see :func:`tiap.io.atomic_dir`).
        items: the stored items, or their :class:`~tiap.targets.lineage.Lineage`.
        queries: the queries (``query_id``, ``evidence``, ``abstention``).
        targets: names, ``name=spec`` definitions or :class:`Target` objects; groups, qrels
            and coverage are written for these. The target mapping always has the three
            built-ins, computed whether requested or not.
        registry: where target names are looked up (default registry if ``None``).
        input_files: label -> path of input files to record (with sha256) in the manifest.

    Returns:
        The :class:`~tiap.targets.coverage.Coverage` of the requested targets (also written
        to ``coverage.json``).

    Raises:
        TiapError: for bad lineage, targets or ids; nothing is written then.
    """
    lineage = items if isinstance(items, Lineage) else build_lineage(items)
    qlist = list(queries)
    requested = resolve_targets(targets, registry)
    names = tuple(t.name for t in requested)
    extra = tuple(b for b in BUILTIN_TARGETS if b.name not in names)
    sets = build_groups(lineage, qlist, requested + extra)

    view = TargetSets(
        targets=requested,
        query_ids=sets.query_ids,
        by_target={n: sets[n] for n in names},
        unknown_evidence=sets.unknown_evidence,
        source_minus_raw=sets.source_minus_raw,
        n_items=sets.n_items,
        n_units=sets.n_units,
        orphans=sets.orphans,
    )
    cov = coverage(view)
    for n in names:
        _check_trec_ids(sets[n])

    n_items, items_sha = _rows_sha256(it.to_json() for it in lineage.items.values())
    n_queries, queries_sha = _rows_sha256(_query_row(q) for q in qlist)
    inputs: dict[str, Any] = {
        "items": {"records": n_items, "sha256_as_jsonl": items_sha},
        "queries": {"records": n_queries, "sha256_as_jsonl": queries_sha},
    }
    missing = [Problem("input file not found", file=str(p)) for p in (input_files or {}).values()
               if not Path(p).is_file()]
    if missing:
        raise TiapError(problems=missing)
    for label, p in (input_files or {}).items():
        inputs[label] = input_entry(p)

    with atomic_dir(out_dir) as tmp:
        counts: dict[str, int] = {}
        counts["groups.jsonl"] = write_groups_jsonl(tmp / "groups.jsonl", sets, names)
        counts["target_mapping.jsonl"] = write_target_mapping(tmp / "target_mapping.jsonl", sets)
        for n in names:
            counts[_qrels_name(n)] = write_qrels(tmp / _qrels_name(n), sets[n])
        write_coverage(tmp / "coverage.json", tmp / "coverage.csv", cov)
        written = [*counts, "coverage.json", "coverage.csv"]
        manifest = manifest_header("targets", SCHEMA_VERSION)
        manifest["targets"] = [t.to_json() for t in requested]
        manifest["mapping_targets"] = [b.to_json() for b in BUILTIN_TARGETS]
        manifest["inputs"] = inputs
        manifest["outputs"] = {n: _output_entry(tmp / n, counts.get(n)) for n in written}
        with atomic_write(tmp / "manifest.json") as fh:
            json.dump(manifest, fh, ensure_ascii=False, indent=2)
            fh.write("\n")
    return cov
