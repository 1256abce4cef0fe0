"""What every retriever provides, and the check that its optional packages are installed."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

import numpy as np

from tiap.errors import MissingExtraError

if TYPE_CHECKING:  # rich is a core dependency, but only the CLI creates progress bars
    from rich.progress import Progress


def check_extra(module: str, extra: str) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` unless ``module`` can be imported.

    Looks the module up without importing it, so a retriever can fail early and cheaply
    (importing torch takes seconds).
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtraError(module, extra)


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


class Retriever(ABC):
    """Scores the items of one collection for a batch of queries.

    A retriever sees texts only: ``score(docs, queries)`` returns one row per query and one
    column per document (store order), ``-inf`` where a document is not retrieved. Ranking,
    depth and ties are handled by :func:`tiap.retrieval.kernels.top_k`, the same for every
    retriever.
    """

    #: The short name: the default system name of its runs.
    name: str = ""
    #: Whether the retriever travels to an engine's worker as it is (its settings are all
    #: its state: BM25), so that collections are ranked there (:mod:`tiap.engine`); a
    #: retriever holding encoded vectors and a cache connection (dense) ranks in the driver.
    portable: bool = False

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """Every setting that can change the scores (recorded in trace headers)."""

    def versions(self) -> dict[str, str]:
        """Versions of the packages the retriever relies on (recorded in trace headers)."""
        return {}

    def prepare(self, texts: Sequence[str], progress: Progress | None = None) -> None:
        """Do expensive per-text work for a whole run in one go (dense: encode missing texts).

        Called once before the collections are scored; optional.
        """

    @abstractmethod
    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        """A ``(len(queries), len(docs))`` float array; ``-inf`` marks "not retrieved"."""
