"""Dense retrieval: cosine similarity of L2-normalised embeddings, with an on-disk cache.

``score(q, d) = cos(e(q), e(d)) = e(q) · e(d)`` for unit vectors ``e``. Every item of the
collection is retrieved (ranked by score, ties by store order).

Vectors come from :class:`~tiap.retrieval.cache.EmbeddingCache`, keyed by the encoder's
model id and the sha256 of the text; only texts the cache lacks are encoded, in batches
(each batch stored in one transaction, so an interrupted run keeps what it encoded), with a
progress bar when one is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tiap.retrieval.base import Retriever
from tiap.retrieval.cache import EmbeddingCache, text_key
from tiap.retrieval.encoders import Encoder

if TYPE_CHECKING:
    from rich.progress import Progress


class DenseRetriever(Retriever):
    """Cosine similarity over an encoder's vectors, cached by (model id, text sha256).

    Args:
        encoder: a :class:`~tiap.retrieval.encoders.Encoder`.
        cache: where vectors are kept; ``None`` keeps them in memory for this retriever only.
    """

    name = "dense"

    def __init__(self, encoder: Encoder, cache: EmbeddingCache | None = None) -> None:
        self.encoder = encoder
        self.cache = cache if cache is not None else EmbeddingCache(None)
        #: How many texts this retriever has encoded (cache misses), for reports and tests.
        self.encoded = 0
        #: How many distinct texts :meth:`prepare` found in the cache (cache hits).
        self.cache_hits = 0

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.encoder.spec(),
            "similarity": "cosine",
            "batch_size": self.encoder.batch_size,
            "ties": "score descending, then store order",
        }

    def versions(self) -> dict[str, str]:
        return self.encoder.versions()

    def prepare(self, texts: Sequence[str], progress: Progress | None = None) -> None:
        keys = [text_key(t) for t in texts]
        missing = self._ensure(keys, texts, progress)
        self.cache_hits += len(set(keys)) - missing

    def _ensure(self, keys: Sequence[str], texts: Sequence[str],
                progress: Progress | None = None) -> int:
        """Encode and cache the texts the cache lacks; returns how many distinct ones that was."""
        model = self.encoder.model_id
        missing = set(self.cache.missing(model, keys))
        if not missing:
            return 0
        todo: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k in missing and k not in todo:
                todo[k] = t
        # Longest first: batches of similar length pad little, and the slowest batches run
        # while the progress bar's estimate is still forming.
        order = sorted(todo, key=lambda k: (-len(todo[k]), k))
        task = None
        if progress is not None:
            task = progress.add_task(f"encoding with {model}", total=len(order))
        bs = self.encoder.batch_size
        for i in range(0, len(order), bs):
            batch = order[i : i + bs]
            vecs = self.encoder.encode([todo[k] for k in batch])
            self.cache.put(model, batch, vecs)
            self.encoded += len(batch)
            if progress is not None and task is not None:
                progress.advance(task, len(batch))
        if progress is not None and task is not None:
            progress.remove_task(task)
        return len(order)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (cached, encoding the missing ones)."""
        keys = [text_key(t) for t in texts]
        self._ensure(keys, texts)
        return self.cache.get(self.encoder.model_id, keys)

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        if not docs or not queries:
            return np.full((len(queries), len(docs)), -np.inf, dtype=np.float64)
        d = self.embed(docs).astype(np.float64)
        q = self.embed(queries).astype(np.float64)
        if d.shape[1] != q.shape[1]:  # pragma: no cover - one model gives one dimension
            raise ValueError("query and document vectors differ in dimension")
        return q @ d.T
