"""The rescore folder: written and read here, and nowhere else.

:func:`write_rescore` writes a rescoring into a folder (built beside ``--out`` and swapped
in at the end: it holds exactly one rescoring's files); :func:`read_folder` reads one back,
every file checked for what a cut or edited file shows (:func:`read_per_query`).

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
  :data:`tiap.scoring.scores.PAIRWISE_COLUMNS`, then those of
  :data:`tiap.scoring.scores.PAIRWISE_BOUND_COLUMNS` (every count's and rate's bounds,
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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from tiap.errors import TiapError, require
from tiap.io import check_output_folder, iter_csv, output_folder
from tiap.provenance import Manifest, input_entry, peek_manifest, read_manifest, verify_input
from tiap.scoring.cost import COST_COLUMNS
from tiap.scoring.measures import parse_measure

if TYPE_CHECKING:  # pragma: no cover
    from tiap.scoring.scores import Scores

PER_QUERY_COLUMNS = ("system", "target", "query_id", "measure", "value")
SUMMARY_COLUMNS = ("system", "target", "measure", "n", "n_exact", "n_possibly_empty", "mean",
                   "lower", "upper", "n_inferred")
INFERRED_COLUMNS = ("system", "target", "query_id", "reason")
FLIP_PAIR_COLUMNS = ("system", "target_1", "target_2", "k", "query_id", "flip")
INTERVAL_COLUMNS = ("system", "target", "query_id", "measure", "lower", "upper")
UNDETERMINED_COLUMNS = ("system", "target", "query_id", "possibly_empty", "reason")
#: ``integrity.csv``: the rows of :func:`tiap.scoring.rescore.integrity_rows`.
INTEGRITY_COLUMNS = ("system", "check", "cutoff", "queries", "flagged", "share", "detail")
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
        sibling = peek_manifest(Path(qpath).parent)
        value = sibling.get("dataset") if sibling is not None else None
        if isinstance(value, dict):
            value = value.get("id")
        if isinstance(value, str) and value.strip():
            return value
    from tiap.runs.formats import trace_dataset

    named = {trace_dataset(p) for k, p in inputs.items() if k.startswith("run:")}
    if len(named) == 1 and (name := named.pop()) is not None:
        return name
    return None


def check_rescore_folder(out: str | Path, *, force: bool = False) -> Path:
    """Check, before any work, that :func:`write_rescore` may replace the folder ``out``
    (:func:`tiap.io.check_output_folder`'s policy for the step ``rescore``); returns it.

        >>> check_rescore_folder("scored")
        PosixPath('scored')
        >>> Path("notes").mkdir(); _ = Path("notes/mine.txt").write_text("x")
        >>> check_rescore_folder("notes")
        Traceback (most recent call last):
        tiap.errors.TiapError: notes: the output folder is not empty and holds no manifest ...
    """
    return check_output_folder(out, "rescore", force=force, known=KNOWN_OUTPUTS)


def write_rescore(
    result: Scores,
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
    folder that is not a rescoring's output is refused unless ``force``. With ``shared``
    (``summary.csv`` over the queries of every target's universe), a system with no such
    query is an error before anything is written (:meth:`Scores.check_shared`).

        >>> _ = Path("run.trec").write_text("q1 Q0 a 1 2.0 bm25\\nq1 Q0 b 2 1.0 bm25\\n")
        >>> _ = Path("gold.qrels").write_text("q1 0 b 1\\n")
        >>> from tiap.runs import read_qrels, read_run_columnar
        >>> from tiap.scoring import rescore_qrels
        >>> scores = rescore_qrels(read_run_columnar("run.trec"),
        ...                        {"gold": read_qrels("gold.qrels")}, measures="RR@10")
        >>> write_rescore(scores, "scored")["command"]
        'rescore'
        >>> Path("scored/summary.csv").read_text().splitlines()[1]
        'bm25,gold,RR@10,1,1,0,0.5,0.5,0.5,0'
    """
    if parquet:
        require("pyarrow", "parquet")
    if shared:
        result.check_shared()  # a summary over no query would hold no value at all
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
            _write_dicts(tmp / "integrity.csv", INTEGRITY_COLUMNS, list(result.integrity))
        if result.cost:

            _write_dicts(tmp / "cost.csv", COST_COLUMNS, result.cost)
        parts: list[str] = []
        if parquet:
            parts = _write_parquet(tmp / "per_query", result)
        man = Manifest.new(
            "rescore",
            inputs={k: input_entry(p) for k, p in inputs.items()},
            options={
                **options,
                "credit": result.credit,
                "targets": [t.to_json() for t in result.targets],
                "measures": [str(m) for m in result.measures],
                "shared": shared,
                "cost": ({"tokenizer": dict(result.tokenizer)} if result.cost
                         else {"note": result.cost_note or "not computed"}),
            },
            outputs=["per_query.csv", "summary.csv", "pairwise.csv", "zero_targets.csv",
                     "target_sizes.csv", "intervals.csv", "undetermined.csv",
                     "queries.csv"] + extra + (["cost.csv"] if result.cost else []) + (
                ["integrity.csv"] if result.integrity else []) + (
                [f"per_query/{p}" for p in parts]),
            extra={
                "dataset": (dataset if dataset is not None
                            else queries_dataset(queries, inputs)),
                "integrity": [dict(r) for r in result.integrity],
                "systems": {s: result.reports[s].to_json() for s in result.systems},
            })
        man.write(tmp / "manifest.json")
    return man.to_json()


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


def write_per_query_csv(path: str | Path, result: Scores) -> int:
    """Write ``per_query.csv`` (the bytes ``csv.writer`` writes for
    :meth:`Scores.per_query_rows`, a block of lines at a time); returns the rows."""
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


def _write_parquet(root: Path, result: Scores) -> list[str]:
    """``per_query.csv`` as a Hive-partitioned Parquet dataset under ``root`` (one file per
    system and target, ``system=S/target=T/part-0.parquet``, written in a fixed order with
    fixed names, so a rerun writes the same files); returns their paths below ``root``."""
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
    return Summary(rows, read_manifest(folder, step="rescore")["options"]["credit"])


# ------------------------------------------------------------------------------------------
# reading


@dataclass(frozen=True, eq=False)
class FolderParts:
    """One rescore folder's files read back and checked (:func:`read_parts`), as plain
    parts: what :meth:`Scores.from_parts <tiap.scoring.scores.Scores.from_parts>` builds the
    folder's scores from, with what Stage III reads besides them (the queries' categories,
    ``cost.csv``'s rows as written). Measures are keyed by name, as the files write them."""

    path: Path
    manifest: Mapping[str, Any]
    #: per system, its queries in order of first appearance (``per_query.csv``)
    order: dict[str, dict[str, int]]
    #: (system, target, measure) -> one value per query of the system (NaN: undefined or
    #: only bounded)
    values: Mapping[tuple[str, str, str], NDArray[np.float64]]
    #: (system, target, measure) -> lower and upper bounds per query (``intervals.csv``)
    bounds: Mapping[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]
    #: (system, target) -> n_groups and n_members per query (``target_sizes.csv``; NaN: not
    #: known)
    sizes: Mapping[tuple[str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]
    #: (system, target 1, target 2, k) -> per query 0 or 1 where ``flip_pairs.csv`` decides
    #: the flip, else -1
    flip_pairs: Mapping[tuple[str, str, str, int], NDArray[np.int8]]
    #: (system, target) -> {query id: why} (``inferred.csv``)
    inferred: dict[tuple[str, str], dict[str, str]]
    #: (system, target) -> {query id: detail} and {query id: reason code}
    #: (``zero_targets.csv``)
    zero_reasons: dict[tuple[str, str], dict[str, str]]
    zero_codes: dict[tuple[str, str], dict[str, str]]
    #: (system, target) -> {query id: reason} and, per query of the system, whether its
    #: target may be empty (``undetermined.csv``)
    undetermined: dict[tuple[str, str], dict[str, str]]
    possibly_empty: dict[tuple[str, str], NDArray[np.bool_]]
    #: ``queries.csv``'s rows: query id, category, collection, abstention
    queries: tuple[tuple[str, str, str, bool], ...]
    categories: dict[str, str]
    category_source: str
    #: ``cost.csv``'s rows as written (:data:`tiap.scoring.cost.COST_COLUMNS`; none: no cost)
    cost: tuple[dict[str, str], ...] = ()


def _float(text: str, file: Path, line: int, *, lo: float | None = None,
           hi: float | None = None, what: str = "value", query_id: str | None = None) -> float:
    """A CSV cell as a float: empty is NaN (undefined); otherwise it must be a finite
    number, within ``[lo, hi]`` when given (code ``invalid-value``)."""
    if text == "":
        return np.nan
    try:
        v = float(text)
    except ValueError:
        v = None
    if (v is not None and math.isfinite(v) and (lo is None or v >= lo - _RANGE_EPS)
            and (hi is None or v <= hi + _RANGE_EPS)):
        return v
    where: dict[str, Any] = {"file": file, "line": line, "query_id": query_id,
                             "code": "invalid-value"}
    if v is None:
        raise TiapError(f"{what}: not a number: {text!r}", **where)
    if not math.isfinite(v):
        raise TiapError(f"{what}: {text!r} is not finite (an undefined value is written as "
                        "an empty field)", **where)
    if lo is not None and hi is not None:
        raise TiapError(f"{what}: {text} is outside [{lo:g}, {hi:g}]", **where)
    raise TiapError(f"{what}: {text} is not at least {lo:g}" if lo is not None
                    else f"{what}: {text} is not at most {hi:g}", **where)


#: Slack of the [0, 1] range check: a ratio of float sums may end a rounding error past 1.
_RANGE_EPS = 1e-9

PER_QUERY_HEADER = ("system", "target", "query_id", "measure", "value")


def _manifest_list(man: Mapping[str, Any], section: str, key: str, file: Path) -> list[Any]:
    """``man[section][key]`` as a list (empty when absent); another type is an error."""
    block = man.get(section)
    if block is None:
        return []
    if not isinstance(block, Mapping):
        raise TiapError(f"'{section}' must be an object", file=file, code="input")
    got = block.get(key)
    if got is None:
        return []
    if not isinstance(got, list | Mapping):
        raise TiapError(f"'{section}.{key}' must be a list", file=file, code="input")
    return list(got)


@dataclass(frozen=True, eq=False)
class PerQuery:
    """The values of a ``per_query.csv``: per system, its queries in order of first
    appearance; per (system, target, measure), one value per query of the system (NaN:
    undefined)."""

    order: dict[str, dict[str, int]]
    values: dict[tuple[str, str, str], NDArray[np.float64]]


def read_per_query(path: str | Path, manifest: Mapping[str, Any] | None = None,
                   manifest_path: str | Path | None = None) -> PerQuery:
    """Read a rescoring's ``per_query.csv``; every value that cannot be right is an error.

    Besides :func:`iter_csv`'s checks: a value is empty (undefined) or a finite number in
    [0, 1], the range of every measure (code ``invalid-value``); each (system, target,
    query, measure) occurs once (code ``duplicate``, naming both lines); the measure is one
    of the manifest's ``options.measures`` (without them: a measure name that parses), the
    target one of its ``options.targets`` and the system one of its ``systems``
    (``invalid-value``). Every system has a value for every target and measure, for as many
    queries as the manifest's ``systems.<s>.scored_queries`` says (without it: as many as
    its other values have): a missing system or row is code ``truncated``.
    """
    path = Path(path)
    man = manifest or {}
    mpath = Path(manifest_path) if manifest_path is not None else path.with_name(
        "manifest.json")
    measures = [str(m) for m in _manifest_list(man, "options", "measures", mpath)]
    targets = [str(t.get("name")) if isinstance(t, Mapping) else str(t)
               for t in _manifest_list(man, "options", "targets", mpath)]
    systems_block = man.get("systems")
    systems = dict(systems_block) if isinstance(systems_block, Mapping) else {}
    known_m: dict[str, bool] = {m: True for m in measures}
    qidx: dict[tuple[str, str, str], list[int]] = {}
    vals: dict[tuple[str, str, str], list[float]] = {}
    lines: dict[tuple[str, str, str], list[int]] = {}
    order: dict[str, dict[str, int]] = {}
    seen_t: dict[str, None] = {}
    seen_m: dict[str, None] = {}
    rows = iter_csv(path, PER_QUERY_HEADER)
    next(rows)
    for lineno, (s, t, q, m, v) in rows:
        if m not in known_m:
            if measures:
                raise TiapError(f"measure {m!r} is not one of the rescoring's measures "
                                f"({', '.join(measures)})", file=path, line=lineno,
                                query_id=q, code="invalid-value")
            try:
                parse_measure(m)
            except TiapError as exc:
                raise TiapError(exc.problems[0].message, file=path, line=lineno, query_id=q,
                                code="invalid-value") from None
            known_m[m] = True
        if targets and t not in targets:
            raise TiapError(f"target {t!r} is not one of the rescoring's targets "
                            f"({', '.join(targets)})", file=path, line=lineno, query_id=q,
                            code="invalid-value")
        if systems and s not in systems:
            raise TiapError(f"system {s!r} is not one of the rescoring's systems "
                            f"({', '.join(systems)})", file=path, line=lineno, query_id=q,
                            code="invalid-value")
        if v == "":
            value = np.nan
        else:
            try:
                value = float(v)
            except ValueError:
                value = np.nan
            if not -_RANGE_EPS <= value <= 1.0 + _RANGE_EPS:  # NaN too: _float says why
                _float(v, path, lineno, lo=0.0, hi=1.0, what=f"{s}/{t}/{m}", query_id=q)
        qs = order.setdefault(s, {})
        i = qs.setdefault(q, len(qs))
        key = (s, t, m)
        if key not in qidx:
            qidx[key], vals[key], lines[key] = [], [], []
            seen_t.setdefault(t)
            seen_m.setdefault(m)
        qidx[key].append(i)
        vals[key].append(value)
        lines[key].append(lineno)
    values: dict[tuple[str, str, str], NDArray[np.float64]] = {}
    for key, idx_list in qidx.items():
        idx = np.asarray(idx_list, np.int64)
        n = len(order[key[0]])
        counts = np.bincount(idx, minlength=n)
        if counts.max(initial=0) > 1:
            dup = int(np.flatnonzero(counts > 1)[0])
            at = [ln for i, ln in zip(idx_list, lines[key], strict=True) if i == dup]
            q = next(qq for qq, j in order[key[0]].items() if j == dup)
            raise TiapError(f"row ({key[0]}, {key[1]}, {q}, {key[2]}) occurs twice (first "
                            f"on line {at[0]})", file=path, line=at[1], query_id=q,
                            code="duplicate")
        arr = np.full(n, np.nan)
        arr[idx] = vals[key]
        values[key] = arr
    announced = [s for s in systems if s not in order]
    if announced:
        raise TiapError(f"no row of system {announced[0]!r}, which the manifest "
                        f"({mpath}) announces: the file misses rows", file=path,
                        code="truncated")
    all_t = targets or list(seen_t)
    all_m = measures or list(seen_m)
    for s, qs in order.items():
        rep = systems.get(s)
        n = rep.get("scored_queries") if isinstance(rep, Mapping) else None
        if isinstance(n, int) and not isinstance(n, bool):
            if len(qs) > n:
                raise TiapError(f"system {s!r} has values of {len(qs):,} queries, the "
                                f"manifest ({mpath}) says it scored {n:,}", file=path,
                                code="invalid-value")
        else:
            n = len(qs)
        for t in all_t:
            for m in all_m:
                got = len(qidx.get((s, t, m), ()))
                if got < n:
                    raise TiapError(f"{got:,} rows of {s}/{t}/{m}, expected one for each "
                                    f"of the {n:,} queries the system scored: the file misses "
                                    "rows", file=path, code="truncated")
    return PerQuery(order, values)


def per_query_of(result: Any) -> PerQuery:
    """The :class:`PerQuery` that :func:`read_per_query` reads back from the
    ``per_query.csv`` written for ``result`` (a :class:`tiap.scoring.scores.Scores`):
    the file holds every value by ``repr``, so the two are equal bit for bit (checked by the
    tests). For a caller that wrote the folder and still holds the result."""
    order = {s: {q: i for i, q in enumerate(result.query_ids[s])} for s in result.systems}
    values = {(s, t, str(m)): np.array(result.values[(s, t, m)], np.float64)
              for s in result.systems for t in result.target_names for m in result.measures}
    return PerQuery(order, values)


def as_written(rows: Sequence[Mapping[str, Any]], columns: Sequence[str],
               ) -> tuple[dict[str, str], ...]:
    """``rows`` as a folder's CSV file holds them: each cell of ``columns`` as its text
    (empty for ``None``, a float by ``repr``), what reading the file back gives.

        >>> as_written([{"n": 2, "mean": 0.5, "note": None}], ("n", "mean", "note"))
        ({'n': '2', 'mean': '0.5', 'note': ''},)
    """
    return tuple({c: str(_fmt(r[c])) for c in columns} for r in rows)


def read_parts(path: str | Path, *, per_query: PerQuery | None = None) -> FolderParts:
    """Read one rescore folder's files into :class:`FolderParts`, every file checked (what
    :meth:`Scores.from_folder <tiap.scoring.scores.Scores.from_folder>` builds its scores
    from).

    ``per_query``: the folder's ``per_query.csv`` as the caller that wrote it holds it
    (:func:`per_query_of`), instead of reading the file again."""
    path = Path(path)
    if not path.is_dir():
        raise TiapError("no such folder", file=path)
    man = read_manifest(path, step="rescore")
    pq = path / "per_query.csv"
    if not pq.exists():
        raise TiapError("per_query.csv is missing", file=path)
    if per_query is None:
        per_query = read_per_query(pq, man, path / "manifest.json")
    order, values = per_query.order, per_query.values
    bounds: dict[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    iv = path / "intervals.csv"
    if iv.exists():
        rows = iter_csv(iv, ("system", "target", "query_id", "measure", "lower", "upper"))
        next(rows)
        for lineno, (s, t, q, m, lo, hi) in rows:
            key = (s, t, m)
            if key not in values or q not in order.get(s, {}):
                raise TiapError(f"no per_query.csv row for {s}/{t}/{q}/{m}", file=iv,
                                line=lineno, query_id=q, code="invalid-value")
            i = order[s][q]
            if not np.isnan(values[key][i]):
                raise TiapError(f"{s}/{t}/{q}/{m} has both a value and bounds", file=iv,
                                line=lineno, query_id=q, code="invalid-value")
            if key not in bounds:
                bounds[key] = (values[key].copy(), values[key].copy())
            elif not np.isnan(bounds[key][0][i]):
                raise TiapError(f"the bounds of ({s}, {t}, {q}, {m}) occur twice", file=iv,
                                line=lineno, query_id=q, code="duplicate")
            lo_f = _float(lo, iv, lineno, lo=0.0, hi=1.0, what=f"lower of {s}/{t}/{m}", query_id=q)
            hi_f = _float(hi, iv, lineno, lo=0.0, hi=1.0, what=f"upper of {s}/{t}/{m}", query_id=q)
            if not lo_f <= hi_f:
                raise TiapError(f"lower {lo!r} above upper {hi!r}", file=iv, line=lineno,
                                query_id=q, code="invalid-value")
            bounds[key][0][i], bounds[key][1][i] = lo_f, hi_f
    sizes: dict[tuple[str, str], tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    ts = path / "target_sizes.csv"
    if ts.exists():
        rows = iter_csv(ts, ("system", "target", "query_id", "n_groups", "n_members"))
        next(rows)
        for lineno, (s, t, q, g, mem) in rows:
            if s not in order or q not in order[s]:
                raise TiapError(f"no per_query.csv row for system {s!r} and query {q!r}",
                                file=ts, line=lineno, query_id=q, code="invalid-value")
            if (s, t) not in sizes:
                n = len(order[s])
                sizes[(s, t)] = (np.full(n, np.nan), np.full(n, np.nan))
            i = order[s][q]
            if not np.isnan(sizes[(s, t)][0][i]):
                raise TiapError(f"the sizes of ({s}, {t}, {q}) occur twice", file=ts,
                                line=lineno, query_id=q, code="duplicate")
            sizes[(s, t)][0][i] = _whole(g, ts, lineno, "n_groups", q)
            sizes[(s, t)][1][i] = _whole(mem, ts, lineno, "n_members", q)
    targets = {str(t.get("name")) for t in folder_targets(man) if isinstance(t, Mapping)} or {
        k[1] for k in values}
    flip_pairs = _read_flip_pairs(path / "flip_pairs.csv", order, targets)
    inferred = _read_inferred(path / "inferred.csv", order, targets)
    categories, source = _categories(path, man)
    cost = _cost(path / "cost.csv")
    names = [str(t.get("name")) for t in folder_targets(man)] or list(
        dict.fromkeys(k[1] for k in values))
    zero_reasons: dict[tuple[str, str], dict[str, str]] = {}
    zero_codes: dict[tuple[str, str], dict[str, str]] = {}
    zpath = path / "zero_targets.csv"
    if zpath.exists():
        rows = iter_csv(zpath, ("system", "target", "query_id", "reason", "detail"))
        next(rows)
        for lineno, (s, t, q, code, detail) in rows:
            _per_query_row(zpath, lineno, s, q, set(names), (t,), order)
            zero_reasons.setdefault((s, t), {})[q] = detail
            zero_codes.setdefault((s, t), {})[q] = code
    undetermined: dict[tuple[str, str], dict[str, str]] = {}
    possibly_empty: dict[tuple[str, str], NDArray[np.bool_]] = {}
    upath = path / "undetermined.csv"
    if upath.exists():
        rows = iter_csv(upath, UNDETERMINED_COLUMNS)
        next(rows)
        for lineno, (s, t, q, empty, reason) in rows:
            i = _per_query_row(upath, lineno, s, q, set(names), (t,), order)
            if empty not in ("true", "false"):
                raise TiapError(f"possibly_empty must be true or false, got {empty!r}",
                                file=upath, line=lineno, query_id=q, code="invalid-value")
            undetermined.setdefault((s, t), {})[q] = reason
            possibly_empty.setdefault((s, t), np.zeros(len(order[s]), bool))[i] = (
                empty == "true")
    return FolderParts(path, man, order, values, bounds, sizes, flip_pairs, inferred,
                       zero_reasons, zero_codes, undetermined, possibly_empty,
                       tuple(_queries(path)), categories, source, cost)


def _whole(text: str, path: Path, line: int, what: str, query_id: str) -> float:
    """A target size of ``target_sizes.csv``: empty (not known: NaN) or a whole number >= 0
    (code ``invalid-value``)."""
    v = _float(text, path, line, lo=0.0, what=what, query_id=query_id)
    if not math.isnan(v) and not v.is_integer():
        raise TiapError(f"{what} must be a whole number, got {text!r}", file=path, line=line,
                        query_id=query_id, code="invalid-value")
    return v


def _cost(path: Path) -> tuple[dict[str, str], ...]:
    """``cost.csv`` (absent: no cost), checked as any table."""

    if not path.is_file():
        return ()
    it = iter_csv(path, required=COST_COLUMNS)
    _, head = next(it)
    return tuple({c: r[c] for c in COST_COLUMNS}
                 for r in (dict(zip(head, row, strict=True)) for _, row in it))


def _per_query_row(path: Path, lineno: int, s: str, q: str, targets: set[str],
                   names: Sequence[str], order: Mapping[str, Mapping[str, int]]) -> int:
    """The local index of a row of a per-query table of a rescore folder: its system,
    query and targets must be the rescoring's (code ``invalid-value``)."""
    if s not in order or q not in order[s]:
        raise TiapError(f"no per_query.csv row for system {s!r} and query {q!r}", file=path,
                        line=lineno, query_id=q, code="invalid-value")
    for t in names:
        if t not in targets:
            raise TiapError(f"target {t!r} is not one of the rescoring's targets "
                            f"({', '.join(sorted(targets))})", file=path, line=lineno,
                            query_id=q, code="invalid-value")
    return order[s][q]


def _read_flip_pairs(path: Path, order: Mapping[str, Mapping[str, int]], targets: set[str],
                     ) -> dict[tuple[str, str, str, int], NDArray[np.int8]]:
    """``flip_pairs.csv`` (absent: none): per (system, targets, k), 0 or 1 per query."""
    out: dict[tuple[str, str, str, int], NDArray[np.int8]] = {}
    if not path.exists():
        return out
    rows = iter_csv(path, ("system", "target_1", "target_2", "k", "query_id", "flip"))
    next(rows)
    for lineno, (s, t1, t2, k, q, flip) in rows:
        i = _per_query_row(path, lineno, s, q, targets, (t1, t2), order)
        if not k.isdigit() or int(k) < 1:
            raise TiapError(f"k must be a positive integer, got {k!r}", file=path,
                            line=lineno, query_id=q, code="invalid-value")
        if flip not in ("0", "1"):
            raise TiapError(f"flip must be 0 or 1, got {flip!r}", file=path, line=lineno,
                            query_id=q, code="invalid-value")
        key = (s, t1, t2, int(k))
        arr = out.setdefault(key, np.full(len(order[s]), -1, np.int8))
        if arr[i] >= 0:
            raise TiapError(f"the flip of ({s}, {t1}, {t2}, {k}, {q}) occurs twice",
                            file=path, line=lineno, query_id=q, code="duplicate")
        arr[i] = int(flip)
    return out


def _read_inferred(path: Path, order: Mapping[str, Mapping[str, int]], targets: set[str],
                   ) -> dict[tuple[str, str], dict[str, str]]:
    """``inferred.csv`` (absent: none): per (system, target), the inferred queries and why."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    if not path.exists():
        return out
    rows = iter_csv(path, INFERRED_COLUMNS)
    next(rows)
    for lineno, (s, t, q, reason) in rows:
        _per_query_row(path, lineno, s, q, targets, (t,), order)
        why = out.setdefault((s, t), {})
        if q in why:
            raise TiapError(f"({s}, {t}, {q}) occurs twice", file=path, line=lineno,
                            query_id=q, code="duplicate")
        why[q] = reason
    return out


def folder_dataset(man: Mapping[str, Any]) -> str | None:
    """The dataset of a rescore folder's queries: the manifest's ``dataset`` (``tiap
    rescore`` records it), else, for a folder written before it did, what
    :func:`queries_dataset` finds from the inputs the manifest names
    (the manifest beside the queries file, the run traces' headers) where they are still
    there. ``None`` when nothing names it (the folder's own name is the last resort)."""
    value = man.get("dataset")
    if isinstance(value, str) and value.strip():
        return value
    if "dataset" in man:  # recorded: nothing named it when the folder was written
        return None
    inputs = {k: Path(v["path"]) for k, v in (man.get("inputs") or {}).items()
              if isinstance(v, Mapping) and isinstance(v.get("path"), str)
              and (k == "queries" or k.startswith("run:"))}
    return queries_dataset((), inputs)


def _categories(path: Path, man: Mapping[str, Any]) -> tuple[dict[str, str], str]:
    """query id -> category from queries.csv, else from the queries file the manifest names."""
    qc = path / "queries.csv"
    out: dict[str, str] = {}
    if qc.exists():
        with open(qc, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                out[row.get("query_id", "")] = row.get("category") or ""
        if out:
            return out, "queries.csv"
    entry = (man.get("inputs") or {}).get("queries")
    if entry and Path(entry.get("path", "")).exists():
        from tiap.datasets.queryfile import read_queries

        qpath = verify_input(man, path / "manifest.json", "queries")
        for q in read_queries(qpath):
            out[q.query_id] = q.category
        return out, f"queries file {entry['path']} (queries.csv is empty)"
    return out, "none (no categories: queries.csv is empty and the queries file is not found)"


def folder_targets(man: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((man.get("options") or {}).get("targets") or [])




def _queries(path: Path) -> list[tuple[str, str, str, bool]]:
    qpath = path / "queries.csv"
    if not qpath.exists():
        return []
    rows = iter_csv(qpath, ("query_id", "category", "collection", "abstention"))
    next(rows)
    return [(q, c, col, ab == "true") for _, (q, c, col, ab) in rows]
