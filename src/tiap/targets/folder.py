"""The targets folder of ``tiap targets``, written only here (docs/targets-and-scoring.md).

Targets are a property of a store: an item is ``(store, item_id)``, and two stores built
from one dataset reuse item ids for different items, so the Source and Canonical relevant
sets of one query differ from store to store. Everything written here therefore names its
store, and a run must be scored against the qrels of the store it ranked (docs/exports.md).

Every writer is atomic: rows go to a temporary file that is renamed into place only when
the whole file is written (:func:`tiap.io.atomic_write`), so an error never leaves a
partial file. :func:`write_targets` builds the whole folder beside ``out_dir`` and swaps it
in (:func:`tiap.io.output_folder`): either every file of the run lands, or none does, and
no file of an earlier run survives beside them.

Files written by :func:`write_targets` into ``out_dir``, for one or several stores side by
side:

- ``groups.jsonl``: one row per (store, query, target), store order, then query order,
  then target order::

      {"store": "f1", "query_id": "q1", "target": "raw", "groups": [["t1"], ["t2"]],
       "units": ["u1", "u2"], "n_groups": 2, "zero_target_reason": null}

- ``target_mapping.jsonl``: the paper package's target-mapping rows, one per (store,
  query), each list the sorted union of the groups (empty for a zero-target case)::

      {"store": "f1", "query_id": "q1", "raw_ids": [...], "source_ids": [...],
       "canonical_ids": [...]}

- ``qrels/<store>.<target>.qrels`` (:func:`qrels_name`): TREC qrels ``qid 0 docid 1``, one
  line per credited item; a zero-target query has *no* line, so trec_eval, ranx and
  ir_measures average over exactly the queries the target defines. Target names hold no
  ``.``, so the target is the part between the name's last two dots (store names may hold
  dots); the manifest says both;
- ``subtopic_qrels/<store>.<target>.qrels`` (:func:`subtopic_qrels_name`): the same groups
  as TREC *diversity* qrels, ``qid unit docid 1``, one line per (group, member): each
  evidence unit is a subtopic (an intent), as ndeval, pyndeval and ir_measures' diversity
  measures (alpha-nDCG, ERR-IA, subtopic recall) read them; TIAP's ``alpha_nDCG``,
  ``ERR_IA`` and ``R`` under group credit equal those tools' values on these files
  (:mod:`tiap.scoring.intents`). Undetermined and zero-target queries have no line here
  either;
- ``undetermined.csv`` (``store,target,query_id,reason``): the (query, target) pairs whose
  groups partial lineage leaves open (:mod:`tiap.targets.possible`); they have no qrels
  line, since a qrels file cannot say "maybe", and ``groups.jsonl`` says
  ``"determined": false`` with the ``open_units``. A placeholder standing for ``count``
  unseen items is ``count`` qrels lines (``<id>#1`` ...), so |R| is the family's size;
- ``coverage.json`` (``{"stores": [{"store", "items_sha256", "coverage"}]}``, the
  coverage of :class:`~tiap.targets.coverage.Coverage` per store) and ``coverage.csv``
  (one row per (store, target));
- ``manifest.json`` (:class:`tiap.provenance.Manifest`): schema version, package
  versions, the targets' specs, the stores (name; the items' record count and sha256 as
  TIAP writes ``items.jsonl``, and the path, sha256 and size of the items file read), the
  queries (record count, sha256) and any other input files, and every file written with
  its sha256; each qrels file's entry also names its ``store`` and ``target``, which is
  how :func:`qrels_store` tells whose qrels a file is.

The folder holds the stores of the last ``tiap targets`` run and nothing else: the new
folder replaces the earlier one whole, so no qrels file of another store or of a target no
longer requested is left beside the new ones. A folder that is not a ``tiap targets``
output (no such manifest, or files its manifest does not list) is refused unless forced.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tiap.datasets.overlays import read_overlay
from tiap.errors import Problem, TiapError
from tiap.io import (
    atomic_write,
    check_output_folder,
    output_folder,
    output_step,
    sha256_file,
    split_named,
    write_jsonl,
)
from tiap.memory.store import Item, Store, check_store_name
from tiap.provenance import Manifest, input_entry, peek_manifest
from tiap.runs.qrels import qrels_line, write_qrels_lines
from tiap.targets.coverage import COVERAGE_CSV_COLUMNS, Coverage, coverage
from tiap.targets.groups import DEFAULT_TARGETS, QueryLike, TargetGroups, TargetSets, build_groups
from tiap.targets.lineage import build_lineage
from tiap.targets.targets import (
    BUILTIN_TARGETS,
    TARGET_NAME_RE,
    Target,
    TargetRegistry,
    resolve_targets,
)

__all__ = [
    "COMMAND",
    "MANIFEST_FILE",
    "QRELS_DIR",
    "TargetsExport",
    "groups_rows",
    "mapping_rows",
    "qrels_lines",
    "qrels_name",
    "qrels_store",
    "subtopic_qrels_name",
    "write_coverage",
    "write_groups_jsonl",
    "write_qrels",
    "write_target_mapping",
    "write_targets",
]

COMMAND = "targets"  # the manifest's "command"
UNDETERMINED_FILE = "undetermined.csv"
MANIFEST_FILE = "manifest.json"
QRELS_DIR = "qrels"
SUBTOPIC_DIR = "subtopic_qrels"
#: What a targets folder may hold beside its manifest's outputs (files of older versions).
KNOWN_OUTPUTS = ("*.jsonl", "*.csv", "coverage.json", QRELS_DIR, SUBTOPIC_DIR)
COVERAGE_CSV_HEADER: tuple[str, ...] = ("store", *COVERAGE_CSV_COLUMNS)
_MAPPING_TARGETS = ("raw", "source", "canonical")


def qrels_name(store: str, target: str) -> str:
    """The path of a store's qrels file for ``target`` inside the output folder:
    ``qrels/<store>.<target>.qrels``."""
    check_store_name(store)
    return f"{QRELS_DIR}/{store}.{target}.qrels"


# ------------------------------------------------------------------------------------------
# rows and single files


def groups_rows(
    sets: TargetSets, targets: Iterable[str] | None = None, *, store: str
) -> Iterator[dict[str, Any]]:
    """Rows of ``groups.jsonl`` for one store: one per (query, target), query order then
    target order, each naming ``store``."""
    names = tuple(targets) if targets is not None else sets.target_names
    tgs = [sets[n] for n in names]
    for qid in sets.query_ids:
        for tg in tgs:
            qg = tg.queries[qid]
            yield {
                "store": store,
                "query_id": qid,
                "target": tg.name,
                "groups": [list(g) for g in qg.groups],
                "units": list(qg.units),
                "n_groups": qg.n_groups,
                "zero_target_reason": qg.zero_target_reason,
                "determined": qg.determined,
                "open_units": list(qg.open_units),
            }


def write_groups_jsonl(
    path: str | Path, sets: Mapping[str, TargetSets], targets: Iterable[str] | None = None
) -> int:
    """Atomically write ``groups.jsonl`` for the stores of ``sets`` (store name -> its
    groups), store by store; returns the number of rows."""
    names = tuple(targets) if targets is not None else None
    for ts in sets.values():
        for n in names if names is not None else ts.target_names:
            ts[n]  # fail before opening the file if a target is missing
    return write_jsonl(path, (row for store, ts in sets.items()
                              for row in groups_rows(ts, names, store=store)))


def mapping_rows(sets: TargetSets, *, store: str) -> Iterator[dict[str, Any]]:
    """The paper package's target-mapping rows of one store, each naming ``store`` (needs
    ``raw``, ``source`` and ``canonical``).

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
                "store": store,
                "query_id": qid,
                "raw_ids": list(raw.queries[qid].members),
                "source_ids": list(source.queries[qid].members),
                "canonical_ids": list(canonical.queries[qid].members),
            }

    return rows()


def write_target_mapping(path: str | Path, sets: Mapping[str, TargetSets]) -> int:
    """Atomically write the target-mapping JSONL for the stores of ``sets`` (store name ->
    its groups); returns the number of rows."""
    parts = [mapping_rows(ts, store=store) for store, ts in sets.items()]  # checks first
    return write_jsonl(path, (row for part in parts for row in part))


def _check_trec_ids(tg: TargetGroups, subtopics: bool = False) -> list[Problem]:
    problems: list[Problem] = []
    for qg in tg:
        if not qg.groups:
            continue
        if subtopics:
            problems += [Problem("evidence unit id contains whitespace; a diversity qrels file "
                                 "cannot hold it", query_id=qg.query_id, record=u)
                         for u in qg.units if not u or any(c.isspace() for c in u)]
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
    return problems


def qrels_lines(tg: TargetGroups, items: Mapping[str, Item] | None = None) -> Iterator[str]:
    """TREC qrels lines ``qid 0 docid 1`` (newline-terminated); none for zero-target queries
    and none for queries whose groups partial lineage leaves open (``undetermined.csv``
    lists them): a qrels file cannot say "maybe".

    Within a query, items are the sorted union of its groups (``set`` credit mode). A
    placeholder that stands for ``count`` unseen items (``items`` gives them) is written as
    ``count`` lines, ``<id>#1`` ... ``<id>#<count>``, so that |R| is the family's size.
    """
    for qg in tg:
        if not qg.determined:
            continue
        for iid in qg.members:
            yield from _judged(qg.query_id, "0", iid, items)


def _judged(qid: str, field: str, iid: str, items: Mapping[str, Item] | None) -> Iterator[str]:
    """The qrels lines of one judged item (``field``: TREC's second column, ``0`` or the
    subtopic): a placeholder standing for ``count`` items is ``count`` lines."""
    ph = items[iid].placeholder if items is not None else None
    if ph is not None and ph.count is not None and ph.count > 1:
        for j in range(1, ph.count + 1):
            yield qrels_line(qid, field, f"{iid}#{j}", 1)
    else:
        yield qrels_line(qid, field, iid, 1)


def subtopic_qrels_name(store: str, target: str) -> str:
    """``subtopic_qrels/<store>.<target>.qrels``: the diversity qrels of a store's target."""
    return f"{SUBTOPIC_DIR}/{qrels_name(store, target).split('/', 1)[1]}"


def subtopic_qrels_lines(tg: TargetGroups, items: Mapping[str, Item] | None = None,
                         ) -> Iterator[str]:
    """TREC diversity qrels lines ``qid unit docid 1``: each group (evidence unit) is a
    subtopic; placeholders as in :func:`qrels_lines`."""
    for qg in tg:
        if not qg.determined:
            continue
        for unit, group in zip(qg.units, qg.groups, strict=True):
            for iid in group:
                yield from _judged(qg.query_id, unit, iid, items)


def undetermined_rows(tg: TargetGroups, *, store: str) -> Iterator[tuple[str, str, str, str]]:
    """``(store, target, query_id, reason)`` for every query whose groups partial lineage
    leaves open."""
    for qg in tg:
        if not qg.determined:
            why = (f"possible members for {', '.join(qg.open_units)}" if qg.open_units
                   else "a placeholder stands for an unknown number of items")
            yield store, tg.name, qg.query_id, why


def write_qrels(path: str | Path, tg: TargetGroups,
                items: Mapping[str, Item] | None = None, *, subtopics: bool = False) -> int:
    """Atomically write one target's TREC qrels file (of one store; ``subtopics``: its
    diversity qrels, :func:`subtopic_qrels_lines`); returns the number of lines."""
    problems = _check_trec_ids(tg, subtopics)
    if problems:
        raise TiapError(problems=problems)
    return write_qrels_lines(path, (subtopic_qrels_lines if subtopics else qrels_lines)(tg, items))


def write_coverage(
    json_path: str | Path,
    csv_path: str | Path | None,
    coverages: Mapping[str, Coverage],
    *,
    items_sha256: Mapping[str, str] | None = None,
) -> None:
    """Atomically write the coverage of each store (store name -> its coverage) as JSON
    and (if ``csv_path``) one CSV row per (store, target).

    ``items_sha256`` (store name -> sha256 of its items) is recorded with each store.
    """
    doc = {"stores": [
        {"store": store, "items_sha256": (items_sha256 or {}).get(store), "coverage": cov.to_json()}
        for store, cov in coverages.items()
    ]}
    with atomic_write(json_path) as fh:
        json.dump(doc, fh, ensure_ascii=False, indent=2, allow_nan=False)
        fh.write("\n")
    if csv_path is not None:
        with atomic_write(csv_path) as fh:
            writer = csv.DictWriter(fh, fieldnames=list(COVERAGE_CSV_HEADER), lineterminator="\n")
            writer.writeheader()
            for store, cov in coverages.items():
                for tc in cov.targets:
                    writer.writerow({"store": store, **tc.csv_row()})


# ------------------------------------------------------------------------------------------
# the whole folder


@dataclass(frozen=True)
class TargetsExport:
    """What :func:`write_targets` wrote.

    Attributes:
        out_dir: the output folder.
        stores: the stores' names, in the order given (repeats of one store dropped).
        coverage: store name -> the :class:`~tiap.targets.coverage.Coverage` of the
            requested targets (also in ``coverage.json``).
        qrels: ``(store, target)`` -> the qrels file written.
        removed: files of the earlier ``tiap targets`` run in ``out_dir`` that this run
            does not write again, removed with the old folder (relative paths).

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]}),
    ...            query_from_json({"query_id": "q2", "evidence": []})]
    >>> written = write_targets("targets", [Store("f1", tuple(items))], queries, ["raw", "source"])
    >>> written.stores, written.qrels["f1", "source"]
    (('f1',), PosixPath('targets/qrels/f1.source.qrels'))
    >>> written.coverage["f1"]["source"].credited_pairs
    3

    A second run into the same folder, without Source, removes the Source files:

    >>> write_targets("targets", [Store("f1", tuple(items))], queries, ["raw"]).removed
    ('qrels/f1.source.qrels', 'subtopic_qrels/f1.source.qrels')
    """

    out_dir: Path
    stores: tuple[str, ...]
    coverage: Mapping[str, Coverage]
    qrels: Mapping[tuple[str, str], Path]
    removed: tuple[str, ...] = ()


def _rows_sha256(rows: Iterable[dict[str, Any]]) -> tuple[int, str]:
    """Count and sha256 of rows serialised exactly as :func:`tiap.io.write_jsonl` writes them."""
    h = hashlib.sha256()
    n = 0
    for row in rows:
        h.update(json.dumps(row, ensure_ascii=False, separators=(",", ":"),
                            allow_nan=False).encode("utf-8"))
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


def _where(store: Store) -> str:
    return str(store.path) if store.path is not None else f"store {store.name!r}"


def _items_digest(st: Store) -> str:
    """The sha256 of the store's items as TIAP writes its ``items.jsonl`` (naming the store
    on every row, so items that leave it unnamed compare equal to items that name it)."""
    return _rows_sha256(it.to_json(st.name) for it in st.items)[1]


def _distinct_stores(stores: Sequence[Store]) -> list[Store]:
    """The stores, each once; two different stores under one name are an error, and so
    are items that name a store other than their own."""
    if isinstance(stores, Store):
        raise TypeError("write_targets takes a sequence of stores: pass [store]")
    out: dict[str, Store] = {}
    problems: list[Problem] = []
    for st in stores:
        if not isinstance(st, Store):
            raise TypeError(f"write_targets takes tiap.memory.store.Store objects (e.g. from "
                            f"read_store), got {type(st).__name__}")
        other = next((it for it in st.items if it.store not in (None, st.name)), None)
        if other is not None:
            problems.append(Problem(f"the item names store {other.store!r}, but it is in store "
                                    f"{st.name!r}", file=_where(st), record=other.item_id))
        prev = out.get(st.name)
        if prev is None:
            out[st.name] = st
        elif prev is not st and _items_digest(prev) != _items_digest(st):
            problems.append(Problem(
                f"two different stores are both named {st.name!r} ({_where(prev)} and "
                f"{_where(st)}): their qrels would share one file name; name them apart "
                "(build-store --name, or the 'store' field of items.jsonl)"))
    if problems:
        raise TiapError(problems=problems)
    if not out:
        raise TiapError("no store given: write_targets needs at least one store")
    return list(out.values())


def _in_store(exc: TiapError, st: Store) -> TiapError:
    """``exc`` with every problem that names no file located in the store ``st``."""
    return TiapError(problems=[
        p if p.file else Problem(f"{p.message} (store {st.name!r})", file=None if st.path is None
                                 else str(st.path), line=p.line, query_id=p.query_id,
                                 record=p.record)
        for p in exc.problems
    ])


def _items_entry(st: Store) -> dict[str, Any]:
    n, digest = _rows_sha256(it.to_json(st.name) for it in st.items)
    entry: dict[str, Any] = {"records": n, "sha256_as_jsonl": digest}
    if st.path is not None:
        if not Path(st.path).is_file():
            raise TiapError("the store's items file is not found (it was read from here)",
                            file=st.path)
        entry.update(input_entry(st.path))
    return entry


def _earlier_files(out_dir: Path) -> set[str]:
    """The files (relative paths) of an earlier ``tiap targets`` run in ``out_dir``: what the
    swap of the new folder removes unless the new run writes it again."""
    if output_step(out_dir) != COMMAND:
        return set()
    return {p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*")
            if p.is_file() or p.is_symlink()}


def check_targets_folder(out: str | Path, *, force: bool = False) -> Path:
    """Check, before any input is read, that :func:`write_targets` may replace the folder
    ``out`` (:func:`tiap.io.check_output_folder`'s policy for the step ``targets``);
    returns it.

        >>> check_targets_folder("targets")
        PosixPath('targets')
        >>> Path("notes").mkdir(); _ = Path("notes/mine.txt").write_text("x")
        >>> check_targets_folder("notes")
        Traceback (most recent call last):
        tiap.errors.TiapError: notes: the output folder is not empty and holds no manifest ...
    """
    return check_output_folder(out, COMMAND, force=force, known=KNOWN_OUTPUTS)


def read_overlays(specs: Iterable[str], option: str = "--overlay",
                  ) -> tuple[dict[str, Mapping[str, tuple[str, ...]]], dict[str, Path]]:
    """Evidence overlays given as ``NAME=PATH`` (``option``'s values): each overlay's
    evidence by query id, and its file. Targets ``T~NAME`` read them (:func:`write_targets`,
    :func:`tiap.scoring.rescore`).

    NAME is lower-case letters, digits, ``_`` and ``-``, starting with a letter, and given
    once; anything else is an error naming ``option`` (``invalid-value``).

        >>> _ = Path("overlay.jsonl").write_text('{"query_id": "q1", "evidence": ["D1:2"]}\\n')
        >>> overlays, files = read_overlays(["fixed=overlay.jsonl"])
        >>> dict(overlays["fixed"]), files
        ({'q1': ('D1:2',)}, {'fixed': PosixPath('overlay.jsonl')})
        >>> read_overlays(["Fixed=overlay.jsonl"])
        Traceback (most recent call last):
        tiap.errors.TiapError: --overlay 'Fixed=overlay.jsonl': give NAME=PATH, NAME lower-case ...
    """

    overlays: dict[str, Mapping[str, tuple[str, ...]]] = {}
    files: dict[str, Path] = {}
    for spec in specs:
        name, path = split_named(spec, option)
        if not name or not TARGET_NAME_RE.match(f"t~{name}") or "~" in name:
            raise TiapError(f"{option} {spec!r}: give NAME=PATH, NAME lower-case letters, "
                            "digits, '_' and '-' starting with a letter (target T~NAME reads it)",
                            code="invalid-value")
        if name in overlays:
            raise TiapError(f"{option}: {name!r} given twice", code="invalid-value")
        overlays[name] = read_overlay(path).evidence
        files[name] = path
    return overlays, files


def write_targets(
    out_dir: str | Path,
    stores: Sequence[Store],
    queries: Iterable[QueryLike],
    targets: Iterable[Target | str] = DEFAULT_TARGETS,
    *,
    registry: TargetRegistry | None = None,
    input_files: Mapping[str, str | Path] | None = None,
    force: bool = False,
    overlays: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> TargetsExport:
    """Compute the groups of every (store, query, target) and write all Stage I outputs.

    Args:
        out_dir: the output folder (created if needed), replaced whole
            (:func:`tiap.io.output_folder`): it holds this run's files only, none of an
            earlier ``tiap targets`` run (qrels of targets no longer requested). A folder
            that is not a ``tiap targets`` output (no manifest of it, another command's,
            files its manifest does not list) is refused unless ``force``.
        stores: the stores (:class:`~tiap.memory.store.Store`, e.g. from
            :func:`~tiap.memory.store.read_store`), one or several; each store's qrels
            are ``qrels/<store>.<target>.qrels``. The same store given twice is written
            once; two different stores under one name are an error.
        queries: the queries (``query_id``, ``evidence``, ``abstention``).
        targets: names, ``name=spec`` definitions or :class:`Target` objects; groups, qrels
            and coverage are written for these. The target mapping always has the three
            built-ins, computed whether requested or not.
        registry: where target names are looked up (default registry if ``None``).
        input_files: label -> path of other input files to record (with sha256) in the
            manifest's ``inputs`` (e.g. ``{"queries": path}``); the stores' items files
            are recorded with the stores.
        force: replace ``out_dir`` even if it is not the output of ``tiap targets``.
        overlays: evidence overlays by name, read by targets ``T~NAME``
            (:mod:`tiap.datasets.overlays`): qrels under corrected evidence.

    Returns:
        What was written (:class:`TargetsExport`): the coverage of the requested targets
        per store, and the qrels files.

    Raises:
        TiapError: for bad lineage, targets, ids or store names (all problems together);
            nothing is written then.

    One store of two turns and a fact derived from both; q1's evidence is both turns:

    >>> from tiap.datasets.queryfile import query_from_json
    >>> items = (Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2")))
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]})]
    >>> written = write_targets("targets", [Store("f1", items)], queries)
    >>> sorted(p.name for p in Path("targets").iterdir())  # doctest: +NORMALIZE_WHITESPACE
    ['coverage.csv', 'coverage.json', 'groups.jsonl', 'manifest.json', 'qrels',
     'subtopic_qrels', 'target_mapping.jsonl', 'undetermined.csv']
    >>> print(written.qrels["f1", "canonical"].read_text(), end="")
    q1 0 m1 1
    >>> print(written.qrels["f1", "source"].read_text(), end="")
    q1 0 m1 1
    q1 0 t1 1
    q1 0 t2 1
    """
    out = check_output_folder(out_dir, COMMAND, force=force, known=KNOWN_OUTPUTS)
    distinct = _distinct_stores(stores)
    qlist = list(queries)
    requested = resolve_targets(targets, registry)
    names = tuple(t.name for t in requested)
    extra = tuple(b for b in BUILTIN_TARGETS if b.name not in names)

    sets: dict[str, TargetSets] = {}
    covs: dict[str, Coverage] = {}
    problems: list[Problem] = []
    item_maps: dict[str, Mapping[str, Item]] = {}
    for st in distinct:
        try:
            lineage = build_lineage(st.items)
            item_maps[st.name] = lineage.items
            full = build_groups(lineage, qlist, requested + extra, overlays=overlays)
        except TiapError as exc:
            problems.extend(_in_store(exc, st).problems)
            continue
        sets[st.name] = full
        covs[st.name] = coverage(TargetSets(
            targets=requested,
            query_ids=full.query_ids,
            by_target={n: full[n] for n in names},
            unknown_evidence=full.unknown_evidence,
            source_minus_raw=full.source_minus_raw,
            n_items=full.n_items,
            n_units=full.n_units,
            orphans=full.orphans,
        ))
        for n in names:
            found = _check_trec_ids(full[n])
            if found:
                problems.extend(_in_store(TiapError(problems=found), st).problems)
    if problems:
        raise TiapError(problems=problems)

    items_entries = {st.name: _items_entry(st) for st in distinct}
    items_sha = {name: str(e.get("sha256", e["sha256_as_jsonl"]))
                 for name, e in items_entries.items()}
    n_queries, queries_sha = _rows_sha256(_query_row(q) for q in qlist)
    inputs: dict[str, Any] = {"queries": {"records": n_queries, "sha256_as_jsonl": queries_sha}}
    missing = [Problem("input file not found", file=str(p)) for p in (input_files or {}).values()
               if not Path(p).is_file()]
    if missing:
        raise TiapError(problems=missing)
    for label, p in (input_files or {}).items():
        inputs[label] = {**inputs.get(label, {}), **input_entry(p)}
    earlier = _earlier_files(out)

    qrels: dict[tuple[str, str], str] = {(s, n): qrels_name(s, n) for s in sets for n in names}
    with output_folder(out, COMMAND, force=force, known=KNOWN_OUTPUTS) as tmp:
        counts: dict[str, int] = {}
        counts["groups.jsonl"] = write_groups_jsonl(tmp / "groups.jsonl", sets, names)
        counts["target_mapping.jsonl"] = write_target_mapping(tmp / "target_mapping.jsonl", sets)
        for (s, n), rel in qrels.items():
            counts[rel] = write_qrels(tmp / rel, sets[s][n], item_maps[s])
            sub = subtopic_qrels_name(s, n)
            counts[sub] = write_qrels(tmp / sub, sets[s][n], item_maps[s], subtopics=True)
        with atomic_write(tmp / UNDETERMINED_FILE) as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(("store", "target", "query_id", "reason"))
            counts[UNDETERMINED_FILE] = 0
            for s in sets:
                for n in names:
                    for row in undetermined_rows(sets[s][n], store=s):
                        w.writerow(row)
                        counts[UNDETERMINED_FILE] += 1
        write_coverage(tmp / "coverage.json", tmp / "coverage.csv", covs, items_sha256=items_sha)
        written = [*counts, "coverage.json", "coverage.csv"]
        outputs = {rel: _output_entry(tmp / rel, counts.get(rel)) for rel in written}
        for (s, n), rel in qrels.items():
            outputs[rel].update(store=s, target=n)
            outputs[subtopic_qrels_name(s, n)].update(store=s, target=n, subtopics=True)
        Manifest.new(COMMAND, inputs=inputs, outputs=outputs, extra={
            "stores": [{"name": name, "items": e} for name, e in items_entries.items()],
            "targets": [t.to_json() for t in requested],
            "mapping_targets": [b.to_json() for b in BUILTIN_TARGETS],
        }).write(tmp / MANIFEST_FILE)
    removed = sorted(earlier - {*written, MANIFEST_FILE})
    return TargetsExport(
        out_dir=Path(out_dir),
        stores=tuple(sets),
        coverage=MappingProxyType(covs),
        qrels=MappingProxyType({k: out / rel for k, rel in qrels.items()}),
        removed=tuple(removed),
    )


# ------------------------------------------------------------------------------------------
# which store a qrels file belongs to


def qrels_store(path: str | Path) -> str | None:
    """The store whose run a qrels file written by ``tiap targets`` scores, else ``None``.

    The answer comes from the ``manifest.json`` beside the file's ``qrels/`` folder: it
    lists every qrels file with its store, target and sha256. ``None`` means the file is
    not one TIAP vouches for: no such manifest (a foreign file), the manifest does not list
    it, or its content is no longer what was written (an edited file is not trusted).
    Symbolic links are followed to the file itself.

    Raises:
        TiapError: if ``path`` is not a file.

    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> items = [Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...          Item("m1", "fact", ("d1:1", "d1:2"))]
    >>> queries = [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]}),
    ...            query_from_json({"query_id": "q2", "evidence": []})]
    >>> written = write_targets("targets", [Store("f1", tuple(items))], queries)
    >>> qrels_store("targets/qrels/f1.source.qrels")
    'f1'
    >>> _ = Path("mine.qrels").write_text("q1 0 t1 1\\n")  # not written by TIAP
    >>> qrels_store("mine.qrels") is None
    True
    """
    p = Path(path)
    if not p.is_file():
        raise TiapError("qrels file not found" if not p.exists() else "not a qrels file",
                        file=p)
    real = p.resolve()
    if real.parent.name != QRELS_DIR:
        return None
    man = peek_manifest(real.parent.parent / MANIFEST_FILE)
    if man is None or man.get("command") != COMMAND:
        return None
    outputs = man.get("outputs")
    entry = outputs.get(f"{QRELS_DIR}/{real.name}") if isinstance(outputs, dict) else None
    if not isinstance(entry, dict):
        return None
    store, digest = entry.get("store"), entry.get("sha256")
    if not isinstance(store, str) or not isinstance(digest, str):
        return None
    return store if sha256_file(real) == digest else None
