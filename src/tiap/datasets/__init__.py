"""Datasets: benchmark datasets as typed records (LoCoMo, LongMemEval, BEAM).

>>> from tiap.datasets import load
>>> ds = load("locomo")                       # doctest: +SKIP
>>> next(ds.queries_iter()).evidence          # doctest: +SKIP
('conv-26:D1:3',)
"""

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
from tiap.datasets.registry import dataset_ids, load

__all__ = [
    "Bundle", "Collection", "DataSource", "Dataset", "DatasetStats", "DerivedMemory",
    "EvidenceProblem", "InlineDataset", "Query", "Session", "SessionSlice", "Turn",
    "dataset_ids", "first_sessions", "load",
]
