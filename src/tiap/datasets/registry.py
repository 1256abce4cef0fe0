"""The dataset registry: hierarchical ids, as in ir_datasets."""

from __future__ import annotations

from pathlib import Path

from tiap.datasets.base import Dataset
from tiap.datasets.beam import Beam1M, Beam100K
from tiap.datasets.files import DataSource
from tiap.datasets.locomo import LoCoMo
from tiap.datasets.longmemeval import LongMemEvalOracle, LongMemEvalS
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
