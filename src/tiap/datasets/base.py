"""The shape every dataset loader shares.

A loader streams its data as *bundles*, one per collection (a LoCoMo conversation, a
LongMemEval question's haystack, a BEAM chat), so that a large dataset is never held in
memory at once. The ``*_iter`` methods and :meth:`Dataset.stats` are built on that one pass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tiap.datasets.files import DataSource
from tiap.datasets.records import (
    Collection,
    DatasetStats,
    DerivedMemory,
    EvidenceProblem,
    Query,
    Session,
    Turn,
)
from tiap.errors import Problems, TiapError


@dataclass(frozen=True)
class Bundle:
    """Everything about one collection: its sessions, turns, queries, the derived memories
    the dataset ships and the evidence problems found while reading it.

    >>> from tiap.datasets import Bundle, Collection, Query, Session, Turn
    >>> bundle = Bundle(
    ...     Collection("c1", n_sessions=1, n_turns=2, speakers=("Ana", "Ben")),
    ...     sessions=(Session("c1", "s1", 1, "8 May, 2023"),),
    ...     turns=(Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat."),
    ...            Turn("c1:D1:2", "c1", "s1", 2, "Ben", "What is her name?")),
    ...     queries=(Query("q1", "c1", "Who adopted a cat?", "Ana", "single-hop",
    ...                    ("c1:D1:1",)),))
    >>> [t.unit_id for t in bundle.turns], bundle.queries[0].evidence
    (['c1:D1:1', 'c1:D1:2'], ('c1:D1:1',))
    """

    collection: Collection
    sessions: tuple[Session, ...]
    turns: tuple[Turn, ...]
    queries: tuple[Query, ...]
    memories: tuple[DerivedMemory, ...] = ()
    problems: tuple[EvidenceProblem, ...] = ()
    notes: tuple[str, ...] = field(default=())


class Dataset(ABC):
    """A registered benchmark dataset (see :mod:`tiap.datasets.registry`).

    A loader streams its collections as :class:`Bundle` values (:meth:`bundles`); the
    ``*_iter`` methods, :meth:`problems` and :meth:`stats` are built on that one pass.

    >>> from tiap.datasets import Bundle, Collection, InlineDataset, Query, Session, Turn
    >>> turns = (Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat."),
    ...          Turn("c1:D2:1", "c1", "s2", 1, "Ana", "Her name is Miso."))
    >>> sessions = (Session("c1", "s1", 1, None), Session("c1", "s2", 2, None))
    >>> queries = (Query("q1", "c1", "What is the cat's name?", "Miso", "single-hop",
    ...                  ("c1:D2:1",)),
    ...            Query("q2", "c1", "Does Ana have a dog?", None, "adversarial", (),
    ...                  abstention=True))
    >>> ds = InlineDataset([Bundle(Collection("c1", 2, 2), sessions, turns, queries)])
    >>> isinstance(ds, Dataset)
    True
    >>> [t.unit_id for t in ds.turns_iter()], [q.query_id for q in ds.queries_iter()]
    (['c1:D1:1', 'c1:D2:1'], ['q1', 'q2'])
    >>> s = ds.stats()
    >>> s.queries, s.queries_with_evidence, s.abstention_queries
    (2, 1, 1)

    A registered dataset reads its pinned files (:class:`DataSource`) only when iterated:

    >>> from tiap.datasets import load
    >>> next(load("locomo").queries_iter()).evidence             # doctest: +SKIP
    ('conv-26:D1:3',)
    """

    dataset_id: str = ""
    description: str = ""
    folder: str = ""

    def __init__(self, source: DataSource | None = None) -> None:
        self.source = source if source is not None else DataSource()

    # -- what subclasses implement ---------------------------------------------------
    @abstractmethod
    def file_paths(self) -> list[str]:
        """Stored paths (inside :attr:`folder`) of the files this dataset reads."""

    @abstractmethod
    def bundles(self) -> Iterator[Bundle]:
        """One bundle per collection, in file order."""

    def dataset_notes(self) -> tuple[str, ...]:
        """Notes about the dataset as a whole (e.g. missing chats)."""
        return ()

    def unread_files(self) -> dict[str, str]:
        """Pinned files of :attr:`folder` that this dataset does not read, each with the
        reason (BEAM-1M questions of chats the release ships no ``chat.json`` for). Every
        other pinned file of the dataset is in :meth:`file_paths` and must be present."""
        return {}

    # -- shared API ---------------------------------------------------------------------
    def path(self, stored_path: str) -> Path:
        return self.source.path(self.folder, stored_path)

    def verify(self) -> list[Path]:
        """Check every file of the dataset against its pinned checksum."""
        return [self.path(p) for p in self.file_paths()]

    def collections_iter(self) -> Iterator[Collection]:
        for b in self.bundles():
            yield b.collection

    def sessions_iter(self) -> Iterator[Session]:
        for b in self.bundles():
            yield from b.sessions

    def turns_iter(self) -> Iterator[Turn]:
        for b in self.bundles():
            yield from b.turns

    def queries_iter(self) -> Iterator[Query]:
        for b in self.bundles():
            yield from b.queries

    def memories_iter(self) -> Iterator[DerivedMemory]:
        for b in self.bundles():
            yield from b.memories

    def problems(self) -> list[EvidenceProblem]:
        return [p for b in self.bundles() for p in b.problems]

    def expected_collections(self) -> int | None:
        """How many bundles :meth:`bundles` will yield, when known cheaply (for progress bars)."""
        return None

    def stats(self, bundles: Iterable[Bundle] | None = None) -> DatasetStats:
        """Counts, per-category counts, evidence problems and notes, in one streaming pass.

        ``bundles`` lets a caller wrap :meth:`bundles` (for example in a progress bar).
        """
        n_coll = n_sess = n_turns = n_q = n_ev = n_abs = n_mem = 0
        per_cat: dict[str, Counter[str]] = {}
        problems: list[EvidenceProblem] = []
        notes: list[str] = list(self.dataset_notes())
        for b in self.bundles() if bundles is None else bundles:
            n_coll += 1
            n_sess += len(b.sessions)
            n_turns += len(b.turns)
            n_mem += len(b.memories)
            problems.extend(b.problems)
            notes.extend(b.notes)
            for q in b.queries:
                n_q += 1
                c = per_cat.setdefault(q.category, Counter())
                c["queries"] += 1
                if q.evidence:
                    n_ev += 1
                    c["with_evidence"] += 1
                if q.abstention:
                    n_abs += 1
                    c["abstention"] += 1
        return DatasetStats(
            dataset_id=self.dataset_id,
            collections=n_coll,
            sessions=n_sess,
            turns=n_turns,
            queries=n_q,
            queries_with_evidence=n_ev,
            abstention_queries=n_abs,
            derived_memories=n_mem,
            per_category={
                k: {"queries": v["queries"], "with_evidence": v["with_evidence"],
                    "abstention": v["abstention"]}
                for k, v in sorted(per_cat.items())
            },
            evidence_problems=tuple(problems),
            notes=tuple(notes),
        )


class InlineDataset(Dataset):
    """A dataset built in code from bundles (no files): for tests, and for data in no
    registered format that a caller has already turned into :class:`Bundle` records.

    >>> from tiap.datasets import Bundle, Collection, Query, Session, Turn
    >>> turn = Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat named Miso.")
    >>> query = Query("q1", "c1", "What is the cat's name?", "Miso", "single-hop",
    ...               ("c1:D1:1",))
    >>> ds = InlineDataset([Bundle(Collection("c1", 1, 1), (Session("c1", "s1", 1, None),),
    ...                            (turn,), (query,))], dataset_id="pets")
    >>> ds.dataset_id, ds.file_paths(), ds.expected_collections()
    ('pets', [], 1)
    >>> [q.question for q in ds.queries_iter()]
    ["What is the cat's name?"]
    """

    dataset_id = "inline"
    description = "a dataset built in code"
    folder = ""

    def __init__(self, bundles: Iterable[Bundle], dataset_id: str | None = None) -> None:
        super().__init__()
        self._bundles = list(bundles)
        if dataset_id is not None:
            self.dataset_id = dataset_id

    def file_paths(self) -> list[str]:
        return []

    def bundles(self) -> Iterator[Bundle]:
        yield from self._bundles

    def expected_collections(self) -> int:
        return len(self._bundles)


def first_sessions(bundle: Bundle, n: int) -> Bundle:
    """The first ``n`` sessions of a collection (by position) as a bundle of their own.

    Kept: those sessions and their turns; the queries whose evidence is non-empty and lies
    wholly in the kept turns (a query citing a later turn, or none, cannot be answered from
    the slice and is dropped); the dataset's memories whose session is kept or, for one with
    no session, whose every source turn is kept; the evidence problems of kept queries.

    >>> from tiap.datasets import Bundle, Collection, Query, Session, Turn
    >>> turns = (Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat."),
    ...          Turn("c1:D2:1", "c1", "s2", 1, "Ana", "Her name is Miso."))
    >>> queries = (Query("q1", "c1", "Who adopted a cat?", "Ana", "single-hop", ("c1:D1:1",)),
    ...            Query("q2", "c1", "What is the cat's name?", "Miso", "single-hop",
    ...                  ("c1:D2:1",)))
    >>> bundle = Bundle(Collection("c1", 2, 2),
    ...                 (Session("c1", "s1", 1, None), Session("c1", "s2", 2, None)),
    ...                 turns, queries)
    >>> first = first_sessions(bundle, 1)
    >>> first.collection
    Collection(collection_id='c1', n_sessions=1, n_turns=1, speakers=())
    >>> [t.unit_id for t in first.turns], [q.query_id for q in first.queries]
    (['c1:D1:1'], ['q1'])
    """
    _check_sessions(n)
    keep = {s.session_id for s in sorted(bundle.sessions, key=lambda s: s.position)[:n]}
    turns = tuple(t for t in bundle.turns if t.session_id in keep)
    units = {t.unit_id for t in turns}
    queries = tuple(q for q in bundle.queries
                    if q.evidence and all(e in units for e in q.evidence))
    qids = {q.query_id for q in queries}
    memories = tuple(m for m in bundle.memories
                     if (m.session_id in keep if m.session_id is not None
                         else bool(m.sources) and all(u in units for u in m.sources)))
    sessions = tuple(s for s in bundle.sessions if s.session_id in keep)
    return Bundle(collection=replace(bundle.collection, n_sessions=len(sessions),
                                     n_turns=len(turns)),
                  sessions=sessions,
                  turns=turns, queries=queries, memories=memories,
                  problems=tuple(p for p in bundle.problems if p.query_id in qids),
                  notes=bundle.notes)


def _check_sessions(n: object) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise TiapError(f"sessions must be a whole number of at least 1, got {n!r}",
                        code="invalid-value")


class SessionSlice(Dataset):
    """A dataset cut to the first ``n`` sessions of every collection (:func:`first_sessions`):
    the same files, checksums and id, so stores, queries and traces built on it are the
    dataset's own records, fewer of them.

    >>> from tiap.datasets import Bundle, Collection, InlineDataset, Query, Session, Turn
    >>> turns = (Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat."),
    ...          Turn("c1:D2:1", "c1", "s2", 1, "Ana", "Her name is Miso."))
    >>> queries = (Query("q1", "c1", "Who adopted a cat?", "Ana", "single-hop", ("c1:D1:1",)),
    ...            Query("q2", "c1", "What is the cat's name?", "Miso", "single-hop",
    ...                  ("c1:D2:1",)))
    >>> ds = InlineDataset([Bundle(Collection("c1", 2, 2),
    ...                            (Session("c1", "s1", 1, None), Session("c1", "s2", 2, None)),
    ...                            turns, queries)], dataset_id="pets")
    >>> cut = SessionSlice(ds, 1)
    >>> cut.dataset_id, [q.query_id for q in cut.queries_iter()]
    ('pets', ['q1'])
    >>> cut.stats().notes
    ('first 1 sessions of each collection; queries whose evidence lies wholly in them',)
    """

    def __init__(self, dataset: Dataset, n: int) -> None:
        super().__init__(dataset.source)
        _check_sessions(n)
        self.base, self.n = dataset, n
        self.dataset_id = dataset.dataset_id
        self.description = f"{dataset.description} (first {n} sessions of each collection)"
        self.folder = dataset.folder

    def file_paths(self) -> list[str]:
        return self.base.file_paths()

    def verify(self) -> list[Path]:
        return self.base.verify()

    def unread_files(self) -> dict[str, str]:
        return self.base.unread_files()

    def bundles(self) -> Iterator[Bundle]:
        for b in self.base.bundles():
            yield first_sessions(b, self.n)

    def dataset_notes(self) -> tuple[str, ...]:
        return (*self.base.dataset_notes(),
                f"first {self.n} sessions of each collection; queries whose evidence lies "
                "wholly in them")

    def expected_collections(self) -> int | None:
        return self.base.expected_collections()


def stream_checked(
    reads: Iterable[Callable[[], tuple[Path, Bundle]]],
    id_field: str,
) -> Iterator[Bundle]:
    """Yield the bundles of a dataset kept in many files, one file at a time.

    ``reads`` gives, per file, a function returning ``(path, bundle)`` (raising
    :class:`TiapError` for a bad file). After the first bad file the remaining files are
    still read, so one pass reports every bad file, but no further bundle is yielded; all
    problems are raised together at the end. A collection id read from two files is a
    ``duplicate`` problem naming both. A missing file (code ``io``) stops at once.
    """
    problems = Problems()
    first: dict[str, Path] = {}
    for read in reads:
        try:
            path, bundle = read()
        except TiapError as exc:
            problems.extend(exc)
            if any(p.code == "io" for p in exc.problems):
                break
            continue
        cid = bundle.collection.collection_id
        if cid in first:
            problems.add(f"{id_field} {cid!r} is also the {id_field} of {first[cid]}; expected "
                         "each once", file=path, record=f".{id_field}", code="duplicate")
            continue
        first[cid] = path
        if not problems.total:
            yield bundle
    problems.raise_if_any()
