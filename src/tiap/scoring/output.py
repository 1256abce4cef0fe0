"""Files written by ``tiap rescore`` (the whole folder is built beside ``--out`` and swapped
in at the end: it holds exactly one rescoring's files).

- ``per_query.csv``: ``system,target,query_id,measure,value`` (value empty where undefined,
  or where partial lineage does not determine it: ``intervals.csv`` then has its bounds);
- ``summary.csv``: ``system,target,measure,n,n_exact,n_possibly_empty,mean,lower,upper,
  n_inferred`` (``mean`` empty unless every value is a single number; ``[lower, upper]``
  bounds the mean; ``n_inferred``: values that rest on lineage the import inferred, never
  counted in ``n_exact``);
- ``inferred.csv`` (a header alone when nothing rests on inferred lineage): ``system,target,query_id,
  reason`` for every value that rests on it;
- ``flip_pairs.csv`` (a header alone with complete lineage): ``system,target_1,target_2,k,query_id,
  flip`` for every query whose hit flip at ``k`` the items' shared lineage decides though
  each target's bounds leave it open (read by ``tiap sensitivity`` for ``change.csv``);
- ``intervals.csv``: ``system,target,query_id,measure,lower,upper`` for every value that
  partial lineage bounds without determining (header only when every value is exact);
- ``undetermined.csv``: ``system,target,query_id,possibly_empty,reason`` for every (query,
  target) whose groups the lineage does not determine;
- ``pairwise.csv``: per system, measure and pair of targets, the columns of
  :data:`tiap.scoring.rescore.PAIRWISE_COLUMNS`, then those of
  :data:`tiap.scoring.rescore.PAIRWISE_BOUND_COLUMNS` (every count's and rate's bounds,
  equal to the count where the lineage decides it);
- ``zero_targets.csv``: ``system,target,query_id,reason,detail`` for every undefined value
  (``reason``: ``no_evidence``, ``unknown_evidence`` or ``no_members``; ``detail``: a
  sentence naming the units concerned);
- ``target_sizes.csv``: ``system,target,query_id,n_groups,n_members`` (G and the size of the
  union of the groups), the input of the cardinality analysis;
- ``queries.csv``: ``query_id,category,collection,abstention`` of every query in the queries
  file, so that the folder is self-contained for ``tiap sensitivity``;
- ``per_query/`` (optional, ``--parquet``, needs the ``parquet`` extra): ``per_query.csv``
  as a Parquet dataset partitioned Hive-style by system and target
  (``per_query/system=S/target=T/part-0.parquet``: ``query_id``, ``measure``, ``value``),
  which pyarrow, pandas, DuckDB and Spark read whole or one partition at a time;
- ``manifest.json``: schema version, inputs with sha256, options, versions, and per system
  what the rescoring found (unknown ids, missing queries, zero-target counts).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tiap.errors import require
from tiap.io import output_folder
from tiap.provenance import input_entry, manifest_header
from tiap.scoring.rescore import RescoreResult

SCHEMA_VERSION = 1
PER_QUERY_COLUMNS = ("system", "target", "query_id", "measure", "value")
SUMMARY_COLUMNS = ("system", "target", "measure", "n", "n_exact", "n_possibly_empty", "mean",
                   "lower", "upper", "n_inferred")
INFERRED_COLUMNS = ("system", "target", "query_id", "reason")
FLIP_PAIR_COLUMNS = ("system", "target_1", "target_2", "k", "query_id", "flip")
INTERVAL_COLUMNS = ("system", "target", "query_id", "measure", "lower", "upper")
UNDETERMINED_COLUMNS = ("system", "target", "query_id", "possibly_empty", "reason")
#: What a rescoring folder may hold beside its manifest's outputs (files of older versions).
KNOWN_OUTPUTS = ("*.csv", "per_query")


def _fmt(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return v


def queries_dataset(queries: Sequence[Any], inputs: Mapping[str, str | Path]) -> str | None:
    """The dataset the queries belong to, from the first source that names one: the
    queries' own ``dataset`` (or ``benchmark``) field, one value in every record; the
    ``manifest.json`` beside the queries file (``tiap datasets export`` writes it); the
    headers of the run traces (``tiap retrieve`` writes the store's dataset), one value in
    all of them. ``None`` when none does, or the records or traces disagree."""
    for key in ("dataset", "benchmark"):
        found = {str(dict(getattr(q, "extra", ()) or ()).get(key) or "") for q in queries}
        if len(found) == 1 and (name := found.pop()).strip():
            return name
    qpath = inputs.get("queries")
    if qpath is not None:
        sibling = Path(qpath).parent / "manifest.json"
        try:
            obj = json.loads(sibling.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            obj = None
        value = obj.get("dataset") if isinstance(obj, dict) else None
        if isinstance(value, dict):
            value = value.get("id")
        if isinstance(value, str) and value.strip():
            return value
    from tiap.runs import trace_dataset

    named = {trace_dataset(p) for k, p in inputs.items() if k.startswith("run:")}
    if len(named) == 1 and (name := named.pop()) is not None:
        return name
    return None


def write_rescore(
    result: RescoreResult,
    out: str | Path,
    *,
    queries: Sequence[Any] = (),
    inputs: Mapping[str, str | Path] = {},
    options: Mapping[str, Any] = {},
    shared: bool = False,
    parquet: bool = False,
    force: bool = False,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Write every output of a rescoring into ``out``; returns the manifest.

    The manifest's ``dataset`` is the queries' dataset: ``dataset`` when given, else what
    :func:`queries_dataset` finds (``null`` when nothing names it); ``tiap sensitivity``
    names the folder's dataset by it.

    ``out`` is replaced whole (:func:`tiap.io.output_folder`): an earlier rescoring's folder
    is swapped for the new one, so no file of it (an old ``per_query/`` partition) survives; a
    folder that is not a rescoring's output is refused unless ``force``."""
    if parquet:
        require("pyarrow", "parquet")
    with output_folder(out, "rescore", force=force, known=KNOWN_OUTPUTS) as tmp:
        write_per_query_csv(tmp / "per_query.csv", result)
        summary = result.summary_rows(shared=shared)
        _write_dicts(tmp / "summary.csv", SUMMARY_COLUMNS, summary)
        _write_dicts(tmp / "pairwise.csv", result.pairwise_columns(), result.pairwise_rows())
        with open(tmp / "zero_targets.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(("system", "target", "query_id", "reason", "detail"))
            w.writerows(result.zero_target_rows())
        with open(tmp / "target_sizes.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(("system", "target", "query_id", "n_groups", "n_members"))
            w.writerows(result.target_size_rows())
        with open(tmp / "intervals.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(INTERVAL_COLUMNS)
            w.writerows((s, t, q, m, repr(lo), repr(hi))
                        for s, t, q, m, lo, hi in result.interval_rows())
        with open(tmp / "undetermined.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(UNDETERMINED_COLUMNS)
            w.writerows((s, t, q, "true" if e else "false", r)
                        for s, t, q, e, r in result.undetermined_rows())
        # always written (a header alone where nothing rests on inferred lineage or no flip
        # needed the shared lineage): one set of files for every rescoring
        extra = ["inferred.csv", "flip_pairs.csv"]
        for name, cols, rows in (("inferred.csv", INFERRED_COLUMNS, result.inferred_rows()),
                                 ("flip_pairs.csv", FLIP_PAIR_COLUMNS,
                                  result.flip_pair_rows())):
            with open(tmp / name, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(cols)
                w.writerows(rows)
        with open(tmp / "queries.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(("query_id", "category", "collection", "abstention"))
            for q in queries:
                w.writerow((q.query_id, getattr(q, "category", ""),
                            getattr(q, "collection_id", ""),
                            "true" if getattr(q, "abstention", False) else "false"))
        if result.integrity:
            from tiap.scoring.rescore import INTEGRITY_COLUMNS

            _write_dicts(tmp / "integrity.csv", INTEGRITY_COLUMNS, list(result.integrity))
        if result.cost:
            from tiap.scoring.cost import COST_COLUMNS

            _write_dicts(tmp / "cost.csv", COST_COLUMNS, result.cost)
        parts: list[str] = []
        if parquet:
            parts = _write_parquet(tmp / "per_query", result)
        man = manifest_header("rescore", SCHEMA_VERSION)
        man["inputs"] = {k: input_entry(p) for k, p in inputs.items()}
        man["dataset"] = dataset if dataset is not None else queries_dataset(queries, inputs)
        man["options"] = {
            **options,
            "credit": result.credit,
            "targets": [t.to_json() for t in result.targets],
            "measures": [str(m) for m in result.measures],
            "shared": shared,
            "cost": ({"tokenizer": dict(result.tokenizer)} if result.cost
                     else {"note": result.cost_note or "not computed"}),
        }
        man["integrity"] = [dict(r) for r in result.integrity]
        man["systems"] = {s: result.reports[s].to_json() for s in result.systems}
        man["outputs"] = ["per_query.csv", "summary.csv", "pairwise.csv", "zero_targets.csv",
                          "target_sizes.csv", "intervals.csv", "undetermined.csv",
                          "queries.csv"] + extra + (["cost.csv"] if result.cost else []) + (
            ["integrity.csv"] if result.integrity else []) + (
            [f"per_query/{p}" for p in parts])
        (tmp / "manifest.json").write_text(json.dumps(man, indent=2) + "\n", encoding="utf-8")
    return man


def _csv_field(text: str) -> str:
    """``text`` as the csv module writes one field (minimal quoting, excel dialect)."""
    if "," in text or '"' in text or "\r" in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_fields(texts: Sequence[str]) -> list[str]:
    joined = "\x00".join(texts)
    if not any(c in joined for c in ',"\r\n'):
        return list(texts)
    return [_csv_field(t) for t in texts]


def write_per_query_csv(path: str | Path, result: RescoreResult) -> int:
    """Write ``per_query.csv`` (the bytes ``csv.writer`` writes for
    :meth:`RescoreResult.per_query_rows`, a block of lines at a time); returns the rows."""
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write(",".join(PER_QUERY_COLUMNS) + "\r\n")
        for s in result.systems:
            qids = _csv_fields(result.query_ids[s])
            for t in result.target_names:
                for m in result.measures:
                    prefix = f"{_csv_field(s)},{_csv_field(t)},"
                    middle = f",{_csv_field(str(m))},"
                    texts = [repr(v) for v in result.values[(s, t, m)].tolist()]
                    fh.write("".join([
                        f"{prefix}{q}{middle}{'' if v == 'nan' else v}\r\n"
                        for q, v in zip(qids, texts, strict=True)
                    ]))
                    n += len(qids)
    return n


def _write_dicts(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow([_fmt(r[c]) for c in columns])


def _write_parquet(root: Path, result: RescoreResult) -> list[str]:
    """``per_query.csv`` as a Hive-partitioned Parquet dataset under ``root`` (one file per
    system and target, ``system=S/target=T/part-0.parquet``, written in a fixed order with
    fixed names, so a rerun writes the same files); returns their paths below ``root``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    written = []
    for s in result.systems:
        qids = result.query_ids[s]
        for t in result.target_names:
            qcol, mcol, vcol = [], [], []
            for m in result.measures:
                v = result.values[(s, t, m)]
                qcol.append(pa.array(qids, pa.string()))
                mcol.append(pa.array([str(m)] * len(qids), pa.string()).dictionary_encode())
                vcol.append(pa.array(v, pa.float64(), mask=np.isnan(v)))
            table = pa.table({"query_id": pa.chunked_array(qcol, pa.string()),
                              "measure": pa.chunked_array(mcol),
                              "value": pa.chunked_array(vcol, pa.float64())})
            rel = f"system={_partition(s)}/target={_partition(t)}/part-0.parquet"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, root / rel)
            written.append(rel)
    return written


def _partition(value: str) -> str:
    """A partition value as a directory name (Hive style: ``/`` and ``=`` escaped)."""
    from urllib.parse import quote

    return quote(value, safe="@~+-_.,:")


class Summary:
    """A rescoring folder's ``summary.csv`` read back: what the CLI's summary table prints
    (``summary_rows()``, ``systems``, ``target_names``, ``measures``, ``credit``,
    ``bounded``), for a run that reuses a finished rescoring instead of computing it."""

    def __init__(self, rows: list[dict[str, Any]], credit: str) -> None:
        self._rows = rows
        self.credit = credit
        self.systems = list(dict.fromkeys(r["system"] for r in rows))
        self.target_names = list(dict.fromkeys(r["target"] for r in rows))
        self.measures = list(dict.fromkeys(r["measure"] for r in rows))
        self.bounded = any(r["mean"] is None and r["n"] for r in rows)

    def summary_rows(self, *, shared: bool = False) -> list[dict[str, Any]]:
        if shared:
            raise ValueError("summary.csv holds the means over each target's own queries; "
                             "the shared subset needs the per-query values")
        return self._rows


def read_summary(folder: str | Path) -> Summary:
    """``summary.csv`` and the credit mode of a rescoring folder written by
    :func:`write_rescore`."""
    folder = Path(folder)
    rows = []
    with (folder / "summary.csv").open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            r.setdefault("n_inferred", "0")  # a folder written before the column
            rows.append({**r, **{k: int(r[k]) for k in ("n", "n_exact", "n_possibly_empty",
                                                        "n_inferred")},
                         **{k: float(r[k]) if r[k] != "" else None
                            for k in ("mean", "lower", "upper")}})
    man = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return Summary(rows, man["options"]["credit"])
