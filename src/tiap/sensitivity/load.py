"""Reading the output folders of ``tiap rescore`` into :class:`Dataset` values.

A rescore folder holds ``per_query.csv`` (``system,target,query_id,measure,value``),
``target_sizes.csv`` (``system,target,query_id,n_groups,n_members``), ``queries.csv``
(``query_id,category,collection,abstention``) and ``manifest.json`` (inputs with sha256,
the targets' specs, the credit mode, the measures).

Folders whose queries file has the same sha256 (the same benchmark queries) are pooled into
one :class:`Dataset`, so systems rescored separately can still be compared; systems are
only ever compared within a dataset. Every (system, target, measure) becomes one array over
the dataset's *query universe* (the union of the scored queries, in order of first
appearance), with NaN where the value is undefined (a zero-target case) or the system did
not score the query.

Partial lineage: a value the lineage only bounds is NaN in ``values`` (it is not known)
and its ``[lower, upper]`` (``intervals.csv``) is kept in :attr:`SystemScores.lower` /
:attr:`SystemScores.upper`, so that the analyses that need a point value use the queries
whose values are determined, and the winner flips decide on the bounds. ``flip_pairs.csv``
(hit flips the items' shared lineage decides) is kept in :attr:`SystemScores.flip_pairs`,
``inferred.csv`` (values that rest on inferred lineage) in :attr:`SystemScores.inferred`.
"""

from __future__ import annotations

from itertools import combinations

import csv
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problem, TiapError
from tiap.io import json_error, split_named, utf8_error
from tiap.scoring.measures import Measure, parse_measure

__all__ = ["Dataset", "PerQuery", "SystemScores", "iter_csv", "load_datasets", "load_rescore_dir",
           "per_query_of", "read_per_query"]

csv.field_size_limit(1 << 30)


@dataclass(frozen=True, eq=False)
class SystemScores:
    """One system's per-query values over its dataset's query universe."""

    name: str
    source: Path
    values: Mapping[tuple[str, Measure], NDArray[np.float64]]  # (target, measure) -> values
    #: target -> (n_groups, n_members) per query (NaN where unknown); empty if not written
    sizes: Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = field(
        default_factory=dict)
    #: the rescore manifest's report on this system (unknown ids, missing queries, ...)
    report: Mapping[str, Any] = field(default_factory=dict)
    #: partial lineage: (target, measure) -> per-query bounds (equal to the value where it is
    #: determined, NaN where undefined), for the keys with some value only bounded
    lower: Mapping[tuple[str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    upper: Mapping[tuple[str, Measure], NDArray[np.float64]] = field(default_factory=dict)
    #: (target 1, target 2, k) -> per query 0 or 1 where the items' shared lineage decides
    #: whether exactly one target credits something in the top k though each target's
    #: bounds leave it open (``flip_pairs.csv``), -1 elsewhere
    flip_pairs: Mapping[tuple[str, str, int], NDArray[np.int8]] = field(default_factory=dict)
    #: target -> per query: does the value rest on lineage the import inferred
    #: (``inferred.csv``); a target absent here has none
    inferred: Mapping[str, NDArray[np.bool_]] = field(default_factory=dict)

    def inferred_mask(self, target: str) -> NDArray[np.bool_] | None:
        """Queries whose value under ``target`` rests on inferred lineage (``None``: none)."""
        return self.inferred.get(target)

    def get(self, target: str, measure: Measure) -> NDArray[np.float64]:
        """Per-query values: NaN where undefined or only bounded (:meth:`interval`)."""
        return self.values[(target, measure)]

    def interval(self, target: str, measure: Measure,
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per-query ``(lower, upper)``, NaN only where the query is undefined."""
        key = (target, measure)
        if key in self.lower:
            return self.lower[key], self.upper[key]
        return self.values[key], self.values[key]

    def in_universe(self, target: str, measures: Sequence[Measure]) -> NDArray[np.bool_]:
        """Queries defined under ``target`` (value determined or bounded) for every measure."""
        mask = None
        for m in measures:
            ok = ~np.isnan(self.interval(target, m)[0])
            mask = ok if mask is None else mask & ok
        assert mask is not None
        return mask

    def defined(self, target: str, measures: Sequence[Measure]) -> NDArray[np.bool_]:
        """Queries whose value is defined under ``target`` for every measure."""
        mask = None
        for m in measures:
            ok = ~np.isnan(self.values[(target, m)])
            mask = ok if mask is None else mask & ok
        assert mask is not None
        return mask


@dataclass(frozen=True, eq=False)
class Dataset:
    """Systems scored on one set of queries, under the same targets and credit mode."""

    name: str
    dirs: tuple[Path, ...]
    query_ids: tuple[str, ...]
    systems: Mapping[str, SystemScores]
    targets: tuple[str, ...]
    target_specs: Mapping[str, Mapping[str, Any]]
    measures: tuple[Measure, ...]
    credit: str
    categories: tuple[str, ...]  # per query of the universe ("" when unknown)
    category_source: str
    queries_input: Mapping[str, Any] | None
    #: per system: the rescore inputs (``items`` and ``run`` entries with path and sha256)
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: the pairs of targets compared (empty: every pair, in target order)
    pairs: tuple[tuple[str, str], ...] = ()

    @property
    def n(self) -> int:
        return len(self.query_ids)

    @property
    def target_pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs of targets Stage III compares: ``pairs``, else every pair."""
        return self.pairs or tuple(combinations(self.targets, 2))

    def shared(self, systems: Iterable[str], targets: Iterable[str],
               measures: Sequence[Measure] | None = None, *,
               bounded: bool = False) -> NDArray[np.bool_]:
        """Queries defined under every given target for every given system (with
        ``bounded``, also those whose values partial lineage only bounds)."""
        ms = tuple(measures or self.measures)
        mask = np.ones(self.n, dtype=bool)
        for s in systems:
            for t in targets:
                sc = self.systems[s]
                mask &= sc.in_universe(t, ms) if bounded else sc.defined(t, ms)
        return mask


@dataclass(frozen=True, eq=False)
class _Folder:
    path: Path
    name: str
    manifest: Mapping[str, Any]
    query_ids: tuple[str, ...]
    per_system: dict[str, dict[str, int]]  # system -> {query_id: local index}
    values: dict[tuple[str, str, str], NDArray[np.float64]]  # (system, target, measure)
    #: (system, target, measure) -> (lower, upper), for keys with some value only bounded
    bounds: dict[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]
    sizes: dict[tuple[str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]
    categories: dict[str, str]
    category_source: str
    #: (system, target 1, target 2, k) -> per local query 0, 1 or -1 (flip_pairs.csv)
    flip_pairs: dict[tuple[str, str, str, int], NDArray[np.int8]] = field(default_factory=dict)
    #: (system, target) -> per local query: inferred (inferred.csv)
    inferred: dict[tuple[str, str], NDArray[np.bool_]] = field(default_factory=dict)


def _read_manifest(path: Path) -> dict[str, Any]:
    mf = path / "manifest.json"
    if not mf.exists():
        raise TiapError("not an output folder of 'tiap rescore' (no manifest.json)", file=path)
    try:
        man = json.loads(mf.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TiapError(json_error(exc), file=mf, line=exc.lineno) from exc
    if not isinstance(man, dict):
        raise TiapError("a manifest must be a JSON object", file=mf, code="input")
    if man.get("command") != "rescore":
        what = man.get("command")
        hint = (" (run 'tiap report' on the output of 'tiap sensitivity')"
                if what == "sensitivity" else "")
        raise TiapError(f"expected the output of 'tiap rescore', found {what!r}{hint}", file=mf)
    return man


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


def _utf8_error(path: Path) -> TiapError:
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return utf8_error(path, data, exc)
    return TiapError("not valid UTF-8", file=path, code="encoding")  # pragma: no cover


def iter_csv(path: str | Path, header: Sequence[str] | None = None, *,
             required: Sequence[str] = ()) -> Iterator[tuple[int, list[str]]]:
    """The records of a CSV file TIAP wrote, checked for what a cut or edited file shows.

    Yields ``(1, header)`` first, then ``(line, fields)`` for every record (``line`` is the
    line it starts on). The file must be UTF-8 (code ``encoding``), end with a line end (a
    last line without one was cut: code ``truncated``, as is an empty file), have the
    ``header`` given exactly (or hold the ``required`` columns, each column once) and as
    many fields in every record as in its header (code ``input``); CSV the ``csv`` module
    cannot read (a NUL, a stray quote) is code ``input`` at its line.
    """
    path = Path(path)
    if not path.is_file():
        raise TiapError("file not found", file=path, code="io")
    size = path.stat().st_size
    if size == 0:
        raise TiapError("the file is empty (not even its header): it was truncated",
                        file=path, line=1, code="truncated")
    with open(path, "rb") as bf:
        bf.seek(size - 1)
        last = bf.read(1)
        if last not in (b"\n", b"\r"):
            bf.seek(0)
            n = sum(block.count(b"\n") for block in iter(lambda: bf.read(1 << 20), b""))
            raise TiapError("the last line ends without a line end: the file was cut in the "
                            "middle of a record", file=path, line=n + 1, code="truncated")
    fh = open(path, encoding="utf-8", newline="")
    try:
        reader = csv.reader(fh, strict=True)
        start = 1
        head: list[str] | None = None
        width = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise TiapError(f"malformed CSV ({exc})", file=path, line=reader.line_num,
                                code="input") from None
            if head is None:
                head = row
                if header is not None and row != list(header):
                    raise TiapError(f"unexpected header {','.join(row)!r}: expected "
                                    f"{','.join(header)!r}", file=path, line=1, code="input")
                missing = [c for c in required if c not in row]
                if missing:
                    raise TiapError(f"the header has no column {', '.join(missing)}",
                                    file=path, line=1, code="input")
                twice = sorted({c for c in row if row.count(c) > 1})
                if twice:
                    raise TiapError(f"the header repeats column {', '.join(twice)}",
                                    file=path, line=1, code="input")
                width = len(row)
                yield 1, row
            else:
                if len(row) != width:
                    raise TiapError(f"expected {width} fields, found {len(row)}", file=path,
                                    line=start, code="input")
                yield start, row
            start = reader.line_num + 1
    except UnicodeDecodeError:
        raise _utf8_error(path) from None
    finally:
        fh.close()


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
    ``per_query.csv`` written for ``result`` (a :class:`tiap.scoring.rescore.RescoreResult`):
    the file holds every value by ``repr``, so the two are equal bit for bit (checked by the
    tests). For a caller that wrote the folder and still holds the result."""
    order = {s: {q: i for i, q in enumerate(result.query_ids[s])} for s in result.systems}
    values = {(s, t, str(m)): np.array(result.values[(s, t, m)], np.float64)
              for s in result.systems for t in result.target_names for m in result.measures}
    return PerQuery(order, values)


def load_rescore_dir(path: str | Path, name: str | None = None, *,
                     per_query: PerQuery | None = None) -> _Folder:
    """Read one rescore folder (the values stay keyed by system, target and measure).

    ``per_query``: the folder's ``per_query.csv`` as the caller that wrote it holds it
    (:func:`per_query_of`), instead of reading the file again."""
    path = Path(path)
    if not path.is_dir():
        raise TiapError("no such folder", file=path)
    man = _read_manifest(path)
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
            sizes[(s, t)][0][i] = _float(g, ts, lineno, lo=0.0, what="n_groups",
                                          query_id=q)
            sizes[(s, t)][1][i] = _float(mem, ts, lineno, lo=0.0, what="n_members",
                                          query_id=q)
    targets = {str(t.get("name")) for t in _targets(man) if isinstance(t, Mapping)} or {
        k[1] for k in values}
    flip_pairs = _read_flip_pairs(path / "flip_pairs.csv", order, targets)
    inferred = _read_inferred(path / "inferred.csv", order, targets)
    categories, source = _categories(path, man)
    universe: dict[str, None] = {}
    for qs in order.values():
        universe.update(dict.fromkeys(qs))
    return _Folder(path, name or folder_dataset(man) or path.name, man, tuple(universe),
                   order, values, bounds, sizes, categories, source, flip_pairs, inferred)


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
                   ) -> dict[tuple[str, str], NDArray[np.bool_]]:
    """``inferred.csv`` (absent: none): per (system, target), the inferred queries."""
    out: dict[tuple[str, str], NDArray[np.bool_]] = {}
    if not path.exists():
        return out
    rows = iter_csv(path, ("system", "target", "query_id", "reason"))
    next(rows)
    for lineno, (s, t, q, _) in rows:
        i = _per_query_row(path, lineno, s, q, targets, (t,), order)
        arr = out.setdefault((s, t), np.zeros(len(order[s]), bool))
        if arr[i]:
            raise TiapError(f"({s}, {t}, {q}) occurs twice", file=path, line=lineno,
                            query_id=q, code="duplicate")
        arr[i] = True
    return out


def folder_dataset(man: Mapping[str, Any]) -> str | None:
    """The dataset of a rescore folder's queries: the manifest's ``dataset`` (``tiap
    rescore`` records it), else, for a folder written before it did, what
    :func:`tiap.scoring.output.queries_dataset` finds from the inputs the manifest names
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
    from tiap.scoring.output import queries_dataset

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
        from tiap.provenance import verify_input

        qpath = verify_input(man, path / "manifest.json", "queries")
        for q in read_queries(qpath):
            out[q.query_id] = q.category
        return out, f"queries file {entry['path']} (queries.csv is empty)"
    return out, "none (no categories: queries.csv is empty and the queries file is not found)"


def _targets(man: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((man.get("options") or {}).get("targets") or [])


def _group_key(folder: _Folder) -> str:
    entry = (folder.manifest.get("inputs") or {}).get("queries")
    if entry and entry.get("sha256"):
        return "queries:" + entry["sha256"]
    return "folder:" + str(folder.path.resolve())


def load_datasets(specs: Sequence[str | Path | tuple[str | None, str | Path]], *,
                  preloaded: Mapping[Path, Any] | None = None) -> list[Dataset]:
    """Read rescore folders (``PATH`` or ``NAME=PATH``) and pool those sharing a queries file.

    Pooled folders must agree on the credit mode and on the spec of every target they share;
    only the targets and measures every pooled folder has are kept. A system name may occur
    once per dataset. ``preloaded`` maps the resolved path of a folder's ``per_query.csv`` to
    its :class:`PerQuery` where the caller holds it (:func:`per_query_of`).
    """
    folders: list[_Folder] = []
    problems: list[Problem] = []
    for spec in specs:
        name, path = _split(spec)
        got = (preloaded or {}).get((path / "per_query.csv").resolve())
        try:
            folders.append(load_rescore_dir(
                path, name, per_query=got if isinstance(got, PerQuery) else None))
        except TiapError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TiapError(problems=problems)
    if not folders:
        raise TiapError("no rescore folder given")
    groups: dict[str, list[_Folder]] = {}
    for f in folders:
        groups.setdefault(_group_key(f), []).append(f)
    datasets = [_pool(fs) for fs in groups.values()]
    names = [d.name for d in datasets]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TiapError(problems=[_same_name(n, [(k, fs) for (k, fs), d
                                                 in zip(groups.items(), datasets, strict=True)
                                                 if d.name == n]) for n in dupes])
    return datasets


def _same_name(name: str, groups: list[tuple[str, list[_Folder]]]) -> Problem:
    """Why folders that make two datasets of one name were not pooled, and what to do.

    Folders are pooled only when the queries files they were scored against are the same
    file (the same sha256); folders of one benchmark scored against two queries files (two
    slices, or one file changed between the runs) share a name but not their queries."""
    def where(fs: list[_Folder]) -> str:
        return " and ".join(str(f.path) for f in fs)

    scored = [(key.removeprefix("queries:"), fs) for key, fs in groups
              if key.startswith("queries:")]
    if len(scored) >= 2:
        told = "; ".join(
            f"{where(fs)} against "
            f"{((fs[0].manifest.get('inputs') or {}).get('queries') or {}).get('path', '?')} "
            f"(sha256 {sha})" for sha, fs in scored)
        return Problem(
            f"the rescore folders of dataset {name!r} were scored against different queries "
            f"files, so they are not pooled into one dataset (only folders scored against the "
            f"same queries file, the same sha256, are): {told}. To compare their systems, "
            "rescore them against one queries file (tiap rescore --queries FILE); to keep "
            "them apart, name them differently (NAME=PATH)", code="invalid-value")
    unscored = [where(fs) for key, fs in groups if not key.startswith("queries:")]
    return Problem(
        f"two datasets are named {name!r}: {', '.join(unscored)} record no queries file "
        "(no sha256 in the manifest), so no other folder is pooled with "
        f"{'it' if len(unscored) == 1 else 'them'}; name the folders with NAME=PATH",
        code="invalid-value")


def _split(spec: str | Path | tuple[str | None, str | Path]) -> tuple[str | None, Path]:
    if isinstance(spec, tuple):
        return spec[0], Path(spec[1])
    return split_named(spec, "rescore folder")


def _pool(folders: list[_Folder]) -> Dataset:
    first = folders[0]
    credit = (first.manifest.get("options") or {}).get("credit", "group")
    specs: dict[str, dict[str, Any]] = {}
    target_order: list[str] | None = None
    measure_order: list[str] | None = None
    problems: list[Problem] = []
    for f in folders:
        c = (f.manifest.get("options") or {}).get("credit", "group")
        if c != credit:
            problems.append(Problem(f"credit mode {c!r} differs from {credit!r} of {first.path}; "
                                    "systems scored under different credit modes are not "
                                    "comparable", file=str(f.path)))
        ts = _targets(f.manifest)
        names = [t["name"] for t in ts]
        for t in ts:
            prev = specs.get(t["name"])
            if prev is not None and _spec_text(prev) != _spec_text(t):
                problems.append(Problem(
                    f"target {t['name']!r} is {_spec_text(t)!r} here but {_spec_text(prev)!r} "
                    "in an earlier folder", file=str(f.path)))
            specs.setdefault(t["name"], dict(t))
        target_order = names if target_order is None else [t for t in target_order if t in names]
        ms = list((f.manifest.get("options") or {}).get("measures") or [])
        if not ms:
            ms = sorted({k[2] for k in f.values})
        measure_order = ms if measure_order is None else [m for m in measure_order if m in ms]
    if problems:
        raise TiapError(problems=problems)
    assert target_order is not None and measure_order is not None
    if not target_order:
        raise TiapError("the pooled rescore folders share no target", file=str(first.path))
    if not measure_order:
        raise TiapError("the pooled rescore folders share no measure", file=str(first.path))
    measures = tuple(parse_measure(m) for m in measure_order)

    universe: dict[str, int] = {}
    for f in folders:
        for q in f.query_ids:
            universe.setdefault(q, len(universe))
    n = len(universe)
    systems: dict[str, SystemScores] = {}
    inputs: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    noted: set[tuple[str, str]] = set()
    for f in folders:
        man_inputs = f.manifest.get("inputs") or {}
        for s, local in f.per_system.items():
            if s in systems:
                raise TiapError(f"system {s!r} occurs in two pooled rescore folders "
                                f"({systems[s].source} and {f.path}); rescore it once",
                                file=str(f.path))
            pos = np.fromiter((universe[q] for q in local), np.int64, len(local))
            vals: dict[tuple[str, Measure], NDArray[np.float64]] = {}
            lows: dict[tuple[str, Measure], NDArray[np.float64]] = {}
            highs: dict[tuple[str, Measure], NDArray[np.float64]] = {}
            for t in target_order:
                for m, mt in zip(measure_order, measures, strict=True):
                    arr = np.full(n, np.nan)
                    got = f.values.get((s, t, m))
                    if got is None:
                        notes.append(f"{f.path}: no values for {s}/{t}/{m}")
                    else:
                        arr[pos] = got
                    vals[(t, mt)] = arr
                    b = f.bounds.get((s, t, m))
                    if b is not None:
                        lo, hi = np.full(n, np.nan), np.full(n, np.nan)
                        lo[pos], hi[pos] = b
                        lows[(t, mt)], highs[(t, mt)] = lo, hi
                        n_b = int((np.isnan(arr) & ~np.isnan(lo)).sum())
                        if (s, t) not in noted:
                            noted.add((s, t))
                            notes.append(
                                f"{f.path}: {s}/{t}: {n_b:,} queries' {m} only bounded by "
                                "partial lineage; the winner flips, system means and change "
                                "tables use the bounds, every other table leaves those "
                                "queries out")
            sz: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
            for t in target_order:
                got_sz = f.sizes.get((s, t))
                if got_sz is not None:
                    g, mem = np.full(n, np.nan), np.full(n, np.nan)
                    g[pos], mem[pos] = got_sz
                    sz[t] = (g, mem)
            pairs: dict[tuple[str, str, int], NDArray[np.int8]] = {}
            for (s2, t1, t2, k), got_p in f.flip_pairs.items():
                if s2 == s and t1 in target_order and t2 in target_order:
                    arr_p = np.full(n, -1, np.int8)
                    arr_p[pos] = got_p
                    pairs[(t1, t2, k)] = arr_p
            inferred: dict[str, NDArray[np.bool_]] = {}
            for t in target_order:
                got_i = f.inferred.get((s, t))
                if got_i is not None:
                    arr_i = np.zeros(n, bool)
                    arr_i[pos] = got_i
                    inferred[t] = arr_i
            report = (f.manifest.get("systems") or {}).get(s, {})
            systems[s] = SystemScores(s, f.path, vals, sz, report, lows, highs, pairs,
                                      inferred)
            store = report.get("store", s)
            entry: dict[str, Any] = {}
            for key in (f"items:{store}", f"items:{s}", "items"):
                if key in man_inputs:
                    entry["items"], entry["items_key"] = man_inputs[key], key
                    break
            if f"run:{s}" in man_inputs:
                entry["run"], entry["run_key"] = man_inputs[f"run:{s}"], f"run:{s}"
            entry["run_name"] = s
            inputs[s] = entry
    query_ids = tuple(universe)
    cats: dict[str, str] = {}
    sources: list[str] = []
    for f in folders:
        for q, c in f.categories.items():
            cats.setdefault(q, c)
        if f.category_source not in sources:
            sources.append(f.category_source)
    name = "+".join(dict.fromkeys(f.name for f in folders))
    return Dataset(
        name=name,
        dirs=tuple(f.path for f in folders),
        query_ids=query_ids,
        systems=systems,
        targets=tuple(target_order),
        target_specs={t: specs[t] for t in target_order},
        measures=measures,
        credit=str(credit),
        categories=tuple(cats.get(q, "") for q in query_ids),
        category_source="; ".join(sources),
        queries_input=(first.manifest.get("inputs") or {}).get("queries"),
        inputs=inputs,
        options={k: v for k, v in (first.manifest.get("options") or {}).items()
                 if k in ("missing", "dedup", "order", "depth")},
        notes=tuple(notes),
    )


def _spec_text(t: Mapping[str, Any]) -> str:
    return str(t.get("spec") if t.get("spec") is not None else t.get("qrels", ""))
