"""The dataset registry: hierarchical ids, as in ir_datasets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tiap.datasets.base import Bundle, Dataset
from tiap.datasets.beam import Beam1M, Beam100K
from tiap.datasets.files import DataSource
from tiap.datasets.locomo import LoCoMo
from tiap.datasets.longmemeval import LongMemEvalOracle, LongMemEvalS
from tiap.datasets.records import DatasetStats
from tiap.errors import TiapError

REGISTRY: dict[str, type[Dataset]] = {
    cls.dataset_id: cls
    for cls in (LoCoMo, LongMemEvalS, LongMemEvalOracle, Beam100K, Beam1M)
}


def dataset_ids() -> list[str]:
    """The ids :func:`load` knows, in registry order.

    >>> dataset_ids()
    ['locomo', 'longmemeval/s', 'longmemeval/oracle', 'beam/100k', 'beam/1m']
    """
    return list(REGISTRY)


def load(
    dataset_id: str,
    data_dir: str | Path | None = None,
    *,
    source: DataSource | None = None,
) -> Dataset:
    """The dataset registered under ``dataset_id`` (e.g. ``"locomo"``, ``"beam/1m"``).

    Its files are found (``data_dir``, else ``$TIAP_DATA``, ...) and checked against their
    pinned sha256 only when it is first read (:class:`DataSource`):

    >>> ds = load("locomo")
    >>> ds.dataset_id, ds.file_paths()
    ('locomo', ['locomo10.json'])
    >>> load("locomo2")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: unknown dataset 'locomo2'; known: locomo, longmemeval/s,
    longmemeval/oracle, beam/100k, beam/1m

    Reading it needs the file (a data folder, the cache or a download):

    >>> next(ds.queries_iter()).evidence                         # doctest: +SKIP
    ('conv-26:D1:3',)
    """
    key = dataset_id.strip().lower()
    if key not in REGISTRY:
        raise TiapError(f"unknown dataset {dataset_id!r}; known: {', '.join(REGISTRY)}",
                        code="usage")
    if source is None:
        source = DataSource(data_dir)
    return REGISTRY[key](source)


@dataclass(frozen=True)
class DatasetFiles:
    """One registered dataset and how many of its files are here (``tiap datasets list``).

    Example:
        >>> row = DatasetFiles("locomo", "LoCoMo", here=1, files=1)
        >>> f"{row.here}/{row.files}"
        '1/1'
    """

    dataset_id: str
    description: str
    here: int
    files: int


def list_datasets(source: DataSource | None = None) -> list[DatasetFiles]:
    """Every registered dataset, in registry order, with how many of the files it reads are
    available locally (in the data folder or the cache; none is verified or downloaded).

    Example:
        >>> rows = list_datasets()
        >>> [r.dataset_id for r in rows][:2], rows[0].files
        (['locomo', 'longmemeval/s'], 1)
    """
    source = source if source is not None else DataSource()
    rows = []
    for did in dataset_ids():
        ds = load(did, source=source)
        paths = ds.file_paths()
        rows.append(DatasetFiles(did, ds.description,
                                 sum(source.has(ds.folder, p) for p in paths), len(paths)))
    return rows


#: wraps a dataset's bundles (a progress bar): (bundles, description, how many expected)
Track = Callable[[Iterable[Bundle], str, int | None], Iterable[Bundle]]


def dataset_stats(dataset: str | None = None, source: DataSource | None = None, *,
                  track: Track | None = None) -> Iterator[DatasetStats]:
    """The statistics of one dataset (or of each registered one, in registry order), each
    yielded when computed: every file is verified first (:meth:`Dataset.verify`), then the
    bundles are read once (:meth:`Dataset.stats`), through ``track`` when given.

    Example:
        >>> stats = next(dataset_stats("locomo"))                  # doctest: +SKIP
        >>> stats.dataset_id, stats.collections                    # doctest: +SKIP
        ('locomo', 10)
        >>> next(dataset_stats("locomo2"))
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: unknown dataset 'locomo2'; known: locomo, longmemeval/s,
        longmemeval/oracle, beam/100k, beam/1m
    """
    source = source if source is not None else DataSource()
    for did in [dataset] if dataset else dataset_ids():
        ds = load(did, source=source)
        ds.verify()
        bundles = ds.bundles()
        yield ds.stats(bundles if track is None
                       else track(bundles, f"reading {did}", ds.expected_collections()))
