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

    A retriever of one's own (here: how many words a document shares with the query):

    >>> from tiap.datasets import Query
    >>> from tiap.memory import Item
    >>> from tiap.retrieval import rank_collection
    >>> class Overlap(Retriever):
    ...     name = "overlap"
    ...     def spec(self):
    ...         return {"name": self.name}
    ...     def score(self, docs, queries):
    ...         return np.array([[len(set(q.split()) & set(d.split())) or -np.inf
    ...                           for d in docs] for q in queries])
    >>> items = [Item("t1", "raw", ("c1:D1:1",), text="I adopted a cat"),
    ...          Item("t2", "raw", ("c1:D1:2",), text="my dog likes the cat"),
    ...          Item("t3", "raw", ("c1:D1:3",), text="it rained")]
    >>> query = Query("q1", "c1", "who likes the cat", None, "single-hop", ("c1:D1:2",))
    >>> (ranking,) = rank_collection(Overlap(), items, [query], depth=5)
    >>> ranking.item_ids, ranking.scores
    (('t2', 't1'), (3.0, 1.0))
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
