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
    return list(REGISTRY)


def load(
    dataset_id: str,
    data_dir: str | Path | None = None,
    *,
    source: DataSource | None = None,
) -> Dataset:
    """The dataset registered under ``dataset_id`` (e.g. ``"locomo"``, ``"beam/1m"``)."""
    key = dataset_id.strip().lower()
    if key not in REGISTRY:
        raise TiapError(f"unknown dataset {dataset_id!r}; known: {', '.join(REGISTRY)}",
                        code="usage")
    if source is None:
        source = DataSource(data_dir)
    return REGISTRY[key](source)
