"""Datasets: benchmark datasets as typed records (LoCoMo, LongMemEval, BEAM).

>>> from tiap.datasets import load
>>> ds = load("locomo")                       # doctest: +SKIP
>>> next(ds.queries_iter()).evidence          # doctest: +SKIP
('conv-26:D1:3',)
"""

from typing import TYPE_CHECKING

from tiap.datasets.base import Bundle, Dataset, InlineDataset, SessionSlice, first_sessions
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
from tiap.datasets.registry import DatasetFiles, dataset_ids, dataset_stats, list_datasets, load
from tiap.lazy import lazy_exports

__all__ = [
    "Bundle",
    "Collection",
    "DataSource",
    "Dataset",
    "DatasetFiles",
    "DatasetStats",
    "DerivedMemory",
    "EvidenceProblem",
    "InlineDataset",
    "Query",
    "Session",
    "SessionSlice",
    "Turn",
    "dataset_ids",
    "dataset_stats",
    "export_dataset",
    "export_overlay",
    "first_sessions",
    "list_datasets",
    "load",
]

if TYPE_CHECKING:  # pragma: no cover
    from tiap.datasets.export import export_dataset
    from tiap.datasets.overlays import export_overlay

#: name -> module, imported on first use (PEP 562): the writers are not needed to read
_LAZY = {"export_dataset": "tiap.datasets.export", "export_overlay": "tiap.datasets.overlays"}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
