"""Run a retriever over a store, one collection at a time, and write the ranked trace.

:func:`retrieve` reads a store folder (``items.jsonl``, optional ``manifest.json``) and a
``queries.jsonl``; for each query it ranks every item of the store whose ``collection`` is
the query's collection (never an item of another collection), to a fixed depth. It writes:

- the *trace*: a JSONL file whose first line is a header object (``"tiap_trace": 1``, the
  schema version, the dataset, the store and queries with their sha256, the retriever's
  full spec, the depth and package versions), followed by one ranking a line,
  ``{"query_id", "system", "ranking": [...], "scores": [...]}``, in the order of the
  queries file; :func:`tiap.runs.read_run` reads it (the header becomes
  ``Run.header``);
- a TREC run next to it (``bm25.jsonl`` -> ``bm25.trec``), written by
  :func:`tiap.runs.write_trec_run` (queries with an empty ranking are left out of it).

The header holds no timestamp: the same inputs and settings give a byte-identical trace.

On an engine (:mod:`tiap.engine`, ``--engine ray``) a portable retriever (BM25:
:attr:`Retriever.portable <tiap.retrieval.base.Retriever.portable>`) ranks each collection in
its own task; the rankings are the same and are written in the queries' order, so the trace
is byte-identical to a local run's. Dense retrieval (alone or in a hybrid) encodes on the
engine's workers (:mod:`tiap.retrieval.dense`) and ranks here.

Resuming: each finished collection's rankings are written (atomically) to a work folder
next to the output, ``<out>.work/``, together with the run's fingerprint (inputs' sha256,
retriever spec, depth, system). A rerun with the same fingerprint loads finished
collections instead of ranking them again; a different fingerprint discards the folder's
parts. The folder is removed once the trace and TREC run are written.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tiap.datasets.queryfile import read_queries
from tiap.datasets.records import Query
from tiap.engine import current_engine
from tiap.errors import Problem, Problems, TiapError
from tiap.io import atomic_write, iter_jsonl, sha256_file
from tiap.memory.store import Item, default_store_name, read_items, store_name
from tiap.memory.store import Store as ItemStore
from tiap.provenance import Manifest, peek_manifest, read_manifest
from tiap.provenance import versions as base_versions
from tiap.retrieval.base import Retriever
from tiap.retrieval.kernels import top_k
from tiap.runs import Ranking, Run, write_trec_run

if TYPE_CHECKING:
    from rich.progress import Progress

#: ``"tiap_trace"`` value: marks the header line of a trace file.
TRACE_MARK = 1
#: Version of the trace header's layout.
TRACE_SCHEMA_VERSION = 1
#: The default ranking depth (the paper's k = 60).
DEFAULT_DEPTH = 60
ITEMS_FILE = "items.jsonl"
MANIFEST_FILE = "manifest.json"
_PART_SUFFIX = ".part.jsonl"
_FINGERPRINT_FILE = "run.json"
#: Seconds between two saves of finished collections to the work folder (each save is one
#: file synced to disk; an interrupted run saves what it finished before it stops).
SAVE_EVERY = 5.0
_MAX_LISTED = 20
_COLLECTION, _TEXT, _ID = attrgetter("collection"), attrgetter("text"), attrgetter("item_id")


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Store:
    """A store folder as retrieval sees it."""

    path: Path
    items_path: Path
    items: tuple[Item, ...]
    items_sha256: str
    manifest: Mapping[str, Any] | None = None
    manifest_sha256: str | None = None

    @property
    def dataset(self) -> str | None:
        """The dataset id from the manifest (``"dataset": "locomo"`` or ``{"id": "locomo"}``)."""
        return _dataset_id((self.manifest or {}).get("dataset"))

    @property
    def built_collections(self) -> list[str] | None:
        """The collections the store was built for, when the manifest restricts them."""
        ds = (self.manifest or {}).get("dataset")
        chosen = ds.get("collections") if isinstance(ds, dict) else None
        return [str(c) for c in chosen] if isinstance(chosen, list) else None


def _dataset_id(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("id")
    return str(value) if isinstance(value, (str, int)) and str(value) else None


def open_store(path: str | Path | ItemStore) -> Store:
    """Read a store: a folder holding ``items.jsonl`` (gzip ok) and maybe ``manifest.json``.

    The path of an ``items.jsonl`` file is accepted too (its folder is the store), and so
    is a :class:`tiap.memory.Store` already read (:func:`tiap.memory.read_store`): its
    items are used as they are, only its file is hashed (:func:`tiap.io.sha256_file`: a
    large file once per process while it is unchanged) and its manifest read.
    """
    items: tuple[Item, ...] | None = None
    if isinstance(path, ItemStore):
        if path.path is None:
            raise TiapError(f"the store {path.name!r} was not read from a file; write it "
                            "(tiap.memory.write_items) and retrieve from the file")
        items = path.items
        path = path.path
    p = Path(path)
    if not p.exists():
        raise TiapError("store not found", file=p)
    if p.is_dir():
        items_path = p / ITEMS_FILE
        if not items_path.exists() and (p / (ITEMS_FILE + ".gz")).exists():
            items_path = p / (ITEMS_FILE + ".gz")
        if not items_path.exists():
            raise TiapError(f"not a store: no {ITEMS_FILE} in this folder", file=p)
        folder = p
    else:
        items_path, folder = p, p.parent
    manifest_path = folder / MANIFEST_FILE
    manifest: Manifest | None = None
    manifest_sha: str | None = None
    if manifest_path.exists():
        manifest, manifest_sha = read_manifest(manifest_path), sha256_file(manifest_path)
    return Store(
        path=folder,
        items_path=items_path,
        items=tuple(read_items(items_path)) if items is None else items,
        items_sha256=sha256_file(items_path),
        manifest=manifest,
        manifest_sha256=manifest_sha,
    )


def _sibling_dataset(path: Path) -> str | None:
    """The dataset named by the ``manifest.json`` next to a queries file, if any."""
    man = peek_manifest(path.parent / MANIFEST_FILE)
    return _dataset_id(man.get("dataset")) if man is not None else None


@dataclass(frozen=True)
class CollectionPlan:
    """One collection to rank: its items (store order) and its queries (file order)."""

    collection_id: str
    items: tuple[Item, ...]
    queries: tuple[Query, ...]


def _examples(values: Iterable[str], n: int = 5) -> str:
    vals = list(values)
    shown = ", ".join(repr(v) for v in vals[:n])
    return shown + (f" and {len(vals) - n} more" if len(vals) > n else "")


def plan_collections(
    store: Store,
    queries: Sequence[Query],
    *,
    queries_path: Path | None = None,
    queries_dataset: str | None = None,
) -> list[CollectionPlan]:
    """Group items and queries by collection, in order of the queries' first appearance.

    Raises :class:`TiapError` (all problems together) when the queries come from another
    dataset than the store (the manifests disagree, or no query collection has items), a
    query's collection has no items ("empty collection"), a query has no question text, or
    an item to rank has no text.
    """
    qfile = str(queries_path) if queries_path is not None else None
    if not queries:
        raise TiapError("no queries to rank", file=qfile)
    if queries_dataset and store.dataset and queries_dataset.lower() != store.dataset.lower():
        raise TiapError(
            f"the queries belong to dataset {queries_dataset!r} but the store "
            f"{store.path} was built from {store.dataset!r}",
            file=qfile,
        )
    by_coll: dict[str, list[Item]] = {}
    for cid, run in groupby(store.items, key=_COLLECTION):  # runs of one collection
        by_coll.setdefault(cid or "", []).extend(run)
    q_by_coll: dict[str, list[Query]] = {}
    for q in queries:
        q_by_coll.setdefault(q.collection_id or "", []).append(q)

    if not set(q_by_coll) & set(by_coll):
        known = f" (store: {store.dataset})" if store.dataset else ""
        raise TiapError(
            "the queries belong to another dataset than the store: none of their "
            f"{len(q_by_coll)} collections ({_examples(q_by_coll)}) has items in the store"
            f"{known}, whose {len(by_coll)} collections are {_examples(by_coll)}",
            file=qfile,
        )
    problems: list[Problem] = []
    for cid, qs in q_by_coll.items():
        if cid in by_coll:
            continue
        if cid == "":
            msg = ("the query names no collection, and the store's items are split into "
                   "collections; give the query a 'collection'")
        else:
            msg = (f"empty collection: the store has no items in collection {cid!r} "
                   f"({len(qs)} queries ask it)")
        problems.append(Problem(msg, file=qfile, query_id=qs[0].query_id))
    built = store.built_collections
    if problems and built is not None:
        problems.append(Problem(
            f"the store was built only for the collections {_examples(built)}; "
            "rank the queries of those collections, or build the store for all",
            file=str(store.path / MANIFEST_FILE)))
    for q in queries:
        if not q.question.strip():
            problems.append(Problem("the query has no question text to retrieve with",
                                    file=qfile, query_id=q.query_id))
    no_text = [it for cid in q_by_coll if None in map(_TEXT, by_coll.get(cid, ()))
               for it in by_coll[cid] if it.text is None]
    for it in no_text[:_MAX_LISTED]:
        problems.append(Problem("the item has no 'text'; retrieval needs the text of every "
                                "item", file=str(store.items_path), record=it.item_id))
    if len(no_text) > _MAX_LISTED:
        problems.append(Problem(f"... and {len(no_text) - _MAX_LISTED} more items without text",
                                file=str(store.items_path)))
    if problems:
        raise TiapError(problems=problems)
    return [CollectionPlan(cid, tuple(by_coll[cid]), tuple(qs)) for cid, qs in q_by_coll.items()]


# --------------------------------------------------------------------------------------------
# Ranking
# --------------------------------------------------------------------------------------------


def rank_collection(
    retriever: Retriever,
    items: Sequence[Item],
    queries: Sequence[Query],
    *,
    depth: int = DEFAULT_DEPTH,
    system: str | None = None,
) -> list[Ranking]:
    """Rank ``items`` (one collection, store order) for each query, to ``depth``.

    Order: score descending, ties by store order; items the retriever does not retrieve
    (``-inf``) are left out. Scores are kept with the ranking.

    >>> from tiap.retrieval import make_retriever
    >>> items = [Item("t1", "raw", ("c1:D1:1",), text="I adopted a cat"),
    ...          Item("t2", "raw", ("c1:D1:2",), text="The dog barks"),
    ...          Item("t3", "raw", ("c1:D1:3",), text="A cat and a dog")]
    >>> queries = [Query("q1", "c1", "cat", None, "single-hop", ("c1:D1:1",)),
    ...            Query("q2", "c1", "fish", None, "single-hop", ())]
    >>> q1, q2 = rank_collection(make_retriever("bm25"), items, queries, depth=60)
    >>> q1.system, q1.item_ids, [round(s, 6) for s in q1.scores]
    ('bm25', ('t1', 't3'), [0.188001, 0.188001])
    >>> q2.item_ids
    ()

    By hand: ``cat`` is in 2 of N = 3 texts, all of the mean length (2 tokens), so each
    scores idf x tf / (tf + k1) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) x 1 / 2.5 = 0.188001;
    the tie keeps store order. No text holds ``fish``: an empty ranking.
    """
    if depth < 1:
        raise TiapError(f"the ranking depth must be at least 1, got {depth}")
    system = system or retriever.name
    ids = list(map(_ID, items))
    texts = list(map(_TEXT, items))
    if None in texts:
        texts = [t or "" for t in texts]
    scores = np.asarray(retriever.score(texts, [q.question for q in queries]),
                        dtype=np.float64)
    if scores.shape != (len(queries), len(items)):
        raise ValueError(f"retriever {retriever.name!r} returned scores of shape {scores.shape} "
                         f"for {len(queries)} queries and {len(items)} items")
    out = []
    for i, q in enumerate(queries):
        idx = top_k(scores[i], depth)
        out.append(Ranking(q.query_id, system, tuple(ids[j] for j in idx),
                           tuple(float(s) for s in scores[i, idx])))
    return out


def _rank_job(job: tuple[Retriever, CollectionPlan, int, str]) -> list[dict[str, Any]]:
    """One collection's ranking rows, on an engine's worker."""
    retriever, plan, depth, system = job
    return [_row(r) for r in rank_collection(retriever, plan.items, plan.queries, depth=depth,
                                             system=system)]


def _ranked(retriever: Retriever, todo: Sequence[CollectionPlan], depth: int,
            system: str) -> Iterator[tuple[CollectionPlan, list[dict[str, Any]]]]:
    """Each collection of ``todo`` with its ranking rows, as each is finished: on the engine
    in use when the retriever is portable, else here, in order."""

    engine = current_engine()
    if engine.name != "local" and retriever.portable:
        jobs = [(retriever, plan, depth, system) for plan in todo]
        for i, rows in engine.imap_unordered(_rank_job, jobs, len(jobs)):
            yield todo[i], rows
        return
    for plan in todo:
        yield plan, _rank_job((retriever, plan, depth, system))


def _row(r: Ranking) -> dict[str, Any]:
    return {"query_id": r.query_id, "system": r.system, "ranking": list(r.item_ids),
            "scores": list(r.scores or ())}


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


# --------------------------------------------------------------------------------------------
# Work folder (resume)
# --------------------------------------------------------------------------------------------


def default_work_dir(out: str | Path) -> Path:
    """``<out>.work`` next to the output: where :func:`retrieve` keeps each finished
    collection's rankings until the trace is written (a rerun resumes from them).

    >>> default_work_dir("runs/bm25.jsonl")
    PosixPath('runs/bm25.jsonl.work')
    """
    out = Path(out)
    return out.with_name(out.name + ".work")


def _part_name(collection_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", collection_id)[:48] or "_"
    digest = hashlib.sha256(collection_id.encode("utf-8")).hexdigest()[:12]
    return f"{safe}-{digest}{_PART_SUFFIX}"


class _WorkDir:
    """Per-collection partial results of one run configuration (see the module docstring)."""

    def __init__(self, path: Path, fingerprint: dict[str, Any]) -> None:
        self.path = path
        self.discarded = 0
        self._rows: dict[str, dict[str, Any]] | None = None
        if path.exists() and not path.is_dir():
            raise TiapError("the work folder path exists and is not a folder", file=path)
        fp_file = path / _FINGERPRINT_FILE
        old: Any = None
        if fp_file.exists():
            with contextlib.suppress(OSError, ValueError):
                old = json.loads(fp_file.read_text(encoding="utf-8"))
        if old != fingerprint:
            for part in self._parts():
                part.unlink()
                self.discarded += 1
        path.mkdir(parents=True, exist_ok=True)
        if old != fingerprint:
            with atomic_write(fp_file) as fh:
                fh.write(json.dumps(fingerprint, indent=2, sort_keys=True, allow_nan=False) + "\n")

    def _parts(self) -> list[Path]:
        return sorted(self.path.glob("*" + _PART_SUFFIX)) if self.path.is_dir() else []

    def _saved_rows(self) -> dict[str, dict[str, Any]]:
        """Every saved row by query id; a part that does not read back is left out whole."""
        if self._rows is None:
            self._rows = {}
            for part in self._parts():
                problems = Problems(part)
                try:
                    rows = [row for _, row in iter_jsonl(part, problems)]
                except (OSError, TiapError):
                    continue
                if problems.total or not all(isinstance(r, dict) for r in rows):
                    continue
                for r in rows:
                    self._rows[str(r.get("query_id"))] = r
        return self._rows

    def load(self, plan: CollectionPlan, system: str) -> list[dict[str, Any]] | None:
        """The saved rows of a finished collection, or None (absent or not matching)."""
        saved = self._saved_rows()
        rows = [saved.get(q.query_id) for q in plan.queries]
        if any(r is None or r.get("system") != system for r in rows):
            return None
        return rows  # type: ignore[return-value]

    def save(self, done: Sequence[tuple[CollectionPlan, Sequence[dict[str, Any]]]]) -> None:
        """Save finished collections' rows, together in one part file."""
        if not done:
            return
        with atomic_write(self.path / _part_name(done[0][0].collection_id)) as fh:
            for _, rows in done:
                for row in rows:
                    fh.write(_dumps(row))

    def remove(self) -> None:
        for part in self._parts():
            part.unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.path / _FINGERPRINT_FILE).unlink()
        with contextlib.suppress(OSError):  # left in place if someone else put files there
            self.path.rmdir()


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def trec_path_for(out: str | Path) -> Path:
    """The TREC run written next to a trace: ``bm25.jsonl`` -> ``bm25.trec`` (``.gz`` kept)."""
    out = Path(out)
    name = out.name
    gz = name.lower().endswith(".gz")
    if gz:
        name = name[:-3]
    if name.lower().endswith(".jsonl"):
        name = name[: -len(".jsonl")]
    return out.with_name(name + ".trec" + (".gz" if gz else ""))


def _write_text(path: Path, lines: Iterable[str]) -> None:
    """Atomically write lines; a ``.gz`` name is gzip-compressed reproducibly (mtime 0)."""
    if path.name.lower().endswith(".gz"):
        with (
            atomic_write(path, "wb", encoding=None) as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
            io.TextIOWrapper(gz, encoding="utf-8", newline="") as text,
        ):
            text.writelines(lines)
    else:
        with atomic_write(path) as fh:
            fh.writelines(lines)


def trace_header(
    store: Store,
    retriever: Retriever,
    *,
    depth: int,
    system: str,
    queries_path: Path | None,
    n_queries: int,
    queries_sha256: str | None,
    n_collections: int,
) -> dict[str, Any]:
    """The header object of a trace (first line); see docs/retrieval.md."""
    kinds = Counter(map(attrgetter("kind"), store.items))
    vers = base_versions()
    vers.update(retriever.versions())
    return {
        "tiap_trace": TRACE_MARK,
        "schema_version": TRACE_SCHEMA_VERSION,
        "dataset": store.dataset,
        "system": system,
        "store": {
            "name": store_name(store.items, default_store_name(store.items_path)),
            "path": str(store.path),
            "items_file": store.items_path.name,
            "items_sha256": store.items_sha256,
            "items": len(store.items),
            "kinds": dict(sorted(kinds.items())),
            "manifest_sha256": store.manifest_sha256,
            # How the store was built, as its manifest says (tiap build-store writes these).
            "parser": (store.manifest or {}).get("parser"),
            "seed": (store.manifest or {}).get("seed"),
        },
        "queries": {
            "path": None if queries_path is None else str(queries_path),
            "sha256": queries_sha256,
            "queries": n_queries,
            "collections": n_collections,
        },
        "retriever": retriever.spec(),
        "k": depth,
        "versions": vers,
    }


# --------------------------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalResult:
    """What :func:`retrieve` wrote and did.

    >>> import json
    >>> from tiap.memory import Item, write_items
    >>> from tiap.retrieval import make_retriever
    >>> _ = write_items("items.jsonl", [
    ...     Item("t1", "raw", ("c1:D1:1",), text="I adopted a cat", collection="c1"),
    ...     Item("t2", "raw", ("c1:D1:2",), text="The dog barks", collection="c1")])
    >>> _ = Path("queries.jsonl").write_text(json.dumps(
    ...     {"query_id": "q1", "question": "Who has a cat?", "evidence": ["c1:D1:1"],
    ...      "collection": "c1"}) + "\\n")
    >>> result = retrieve("items.jsonl", "queries.jsonl", make_retriever("bm25"), "bm25.jsonl")
    >>> result.trace_path, result.trec_path, result.collections, result.resumed
    (PosixPath('bm25.jsonl'), PosixPath('bm25.trec'), 1, 0)
    >>> result.run.ranking("q1").item_ids, result.short, result.empty
    (('t1',), 1, ())
    """

    trace_path: Path
    trec_path: Path
    header: dict[str, Any]
    run: Run
    collections: int
    resumed: int  # collections loaded from the work folder instead of ranked
    discarded: int  # stale partial results removed (another configuration)
    empty: tuple[str, ...] = ()  # queries with an empty ranking (left out of the TREC run)
    short: int = 0  # queries ranked to fewer items than the depth


def retrieve(
    store: str | Path | Store | ItemStore,
    queries: str | Path,
    retriever: Retriever,
    out: str | Path,
    *,
    depth: int = DEFAULT_DEPTH,
    system: str | None = None,
    work_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> RetrievalResult:
    """Rank every query's collection and write the trace (and a TREC run beside it).

    Args:
        store: a store folder (``items.jsonl`` + optional ``manifest.json``), the path of an
            ``items.jsonl``, a :class:`Store`, or a :class:`tiap.memory.Store` already read
            (its items are not read again; see :func:`open_store`).
        queries: ``queries.jsonl`` (gzip ok); each query's ``collection`` selects the items
            it is ranked against.
        retriever: e.g. :func:`tiap.retrieval.make_retriever` ``("bm25")``.
        out: the trace (``.jsonl``, or ``.jsonl.gz`` to compress); the TREC run goes to
            :func:`trec_path_for` ``(out)``.
        depth: ranking depth k (at most this many items per query).
        system: the system name in the rows and the TREC tag (default: the retriever's name).
        work_dir: where partial results are kept (default ``<out>.work``).
        progress: a rich progress display to report collections and encoding on.

    Raises:
        TiapError: bad inputs (see :func:`plan_collections`), an unusable output path.

    Example: a store of two collections; each query is ranked against its own collection:

    >>> import json
    >>> from tiap.memory import Item, write_items
    >>> from tiap.retrieval import make_retriever
    >>> Path("stores/raw").mkdir(parents=True)
    >>> _ = write_items("stores/raw/items.jsonl", [
    ...     Item("c1:D1:1", "raw", ("c1:D1:1",), text="I adopted a cat", collection="c1"),
    ...     Item("c1:D1:2", "raw", ("c1:D1:2",), text="The dog barks", collection="c1"),
    ...     Item("c2:D1:1", "raw", ("c2:D1:1",), text="My cat sleeps", collection="c2")])
    >>> queries = [{"query_id": "q1", "question": "Who has a cat?", "collection": "c1",
    ...             "evidence": ["c1:D1:1"]},
    ...            {"query_id": "q2", "question": "Whose cat sleeps?", "collection": "c2",
    ...             "evidence": ["c2:D1:1"]}]
    >>> _ = Path("queries.jsonl").write_text("".join(json.dumps(q) + "\\n" for q in queries))
    >>> result = retrieve("stores/raw", "queries.jsonl", make_retriever("bm25"),
    ...                   "runs/bm25.jsonl", depth=60)
    >>> [(r.query_id, r.item_ids) for r in result.run.rankings]
    [('q1', ('c1:D1:1',)), ('q2', ('c2:D1:1',))]
    >>> result.header["store"]["name"], result.header["k"], result.header["retriever"]["name"]
    ('raw', 60, 'bm25')
    >>> print(Path("runs/bm25.trec").read_text(), end="")
    q1 Q0 c1:D1:1 1 1 bm25
    q2 Q0 c2:D1:1 1 1 bm25
    """
    if depth < 1:
        raise TiapError(f"the ranking depth k must be at least 1, got {depth}")
    out = Path(out)
    trec_path = trec_path_for(out)
    if out.name.lower().removesuffix(".gz").endswith(".trec"):
        raise TiapError("--out names the trace, a JSONL file (e.g. bm25.jsonl); the TREC run "
                        "is written next to it", file=out)
    if out.is_dir():
        raise TiapError("--out is a folder; give the trace's file name (e.g. runs/bm25.jsonl)",
                        file=out)
    system = system or retriever.name
    if not system or any(c.isspace() for c in system):
        raise TiapError(f"the system name {system!r} must be non-empty without whitespace "
                        "(it is the TREC tag)")
    st = store if isinstance(store, Store) else open_store(store)
    qpath = Path(queries)
    qs = read_queries(qpath)
    plans = plan_collections(st, qs, queries_path=qpath, queries_dataset=_sibling_dataset(qpath))
    q_sha = sha256_file(qpath)
    header = trace_header(st, retriever, depth=depth, system=system, queries_path=qpath,
                          n_queries=len(qs), queries_sha256=q_sha, n_collections=len(plans))
    fingerprint = {
        "store_items_sha256": st.items_sha256,
        "queries_sha256": q_sha,
        "retriever": header["retriever"],
        "k": depth,
        "system": system,
    }
    work = _WorkDir(Path(work_dir) if work_dir is not None else default_work_dir(out), fingerprint)

    rows_by_coll: dict[str, list[dict[str, Any]]] = {}
    todo: list[CollectionPlan] = []
    for plan in plans:
        rows = work.load(plan, system)
        if rows is None:
            todo.append(plan)
        else:
            rows_by_coll[plan.collection_id] = rows
    resumed = len(rows_by_coll)
    if todo:
        if type(retriever).prepare is not Retriever.prepare:
            texts = [it.text or "" for p in todo for it in p.items]
            texts += [q.question for p in todo for q in p.queries]
            retriever.prepare(texts, progress)
        task = progress.add_task("ranking collections", total=len(todo)) if progress else None
        pending: list[tuple[CollectionPlan, list[dict[str, Any]]]] = []
        saved = time.monotonic()
        try:
            for plan, rows in _ranked(retriever, todo, depth, system):
                pending.append((plan, rows))
                rows_by_coll[plan.collection_id] = rows
                if time.monotonic() - saved >= SAVE_EVERY:
                    work.save(pending)
                    pending, saved = [], time.monotonic()
                if progress is not None and task is not None:
                    progress.advance(task)
        except BaseException:
            work.save(pending)  # an interrupted run keeps what it finished
            raise
        if progress is not None and task is not None:
            progress.remove_task(task)

    by_qid = {row["query_id"]: row for rows in rows_by_coll.values() for row in rows}
    ordered = [by_qid[q.query_id] for q in qs]

    def lines() -> Iterator[str]:
        yield _dumps(header)
        for row in ordered:
            yield _dumps(row)

    _write_text(out, lines())
    run = Run(system, tuple(Ranking(r["query_id"], system, tuple(r["ranking"]),
                                    tuple(r["scores"])) for r in ordered),
              source=out, format="jsonl", header=header, store=header["store"]["name"])
    write_trec_run(trec_path, run, skip_empty=True)
    work.remove()
    return RetrievalResult(
        trace_path=out,
        trec_path=trec_path,
        header=header,
        run=run,
        collections=len(plans),
        resumed=resumed,
        discarded=work.discarded,
        empty=tuple(r["query_id"] for r in ordered if not r["ranking"]),
        short=sum(1 for r in ordered if len(r["ranking"]) < depth),
    )
