"""Hybrid retrieval: reciprocal-rank fusion (RRF) of BM25 and dense rankings.

For each query, every component ranks the collection (score descending, ties by store
order; BM25 ranks only the items sharing a token with the query, dense ranks all), cut to
``fusion_depth`` when one is set; the fused score of an item is

    RRF(d) = sum over components c that rank d of 1 / (rrf_k + rank_c(d))

with 1-based ranks and ``rrf_k = 60`` by default (Cormack, Clarke and Büttcher, SIGIR
2009). The fused ranking orders items by RRF descending, ties by store order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tiap.retrieval.base import Retriever
from tiap.retrieval.kernels import DEFAULT_RRF_K, rrf, top_k

if TYPE_CHECKING:
    from rich.progress import Progress


class HybridRetriever(Retriever):
    """RRF over the rankings of several retrievers (BM25 and dense for ``tiap retrieve``).

    Args:
        components: the retrievers to fuse, in a fixed order.
        rrf_k: the RRF constant (>= 0).
        fusion_depth: how much of each component ranking is fused; ``None`` fuses every
            item a component retrieves.

    BM25 fused with a toy dense retriever (one dimension per keyword):

    >>> from tiap.retrieval import BM25Retriever, DenseRetriever, Encoder
    >>> class Keywords(Encoder):
    ...     model_id = "keywords-v1"
    ...     def encode(self, texts):
    ...         v = np.array([[t.count(w) for w in ("cat", "dog")] for t in texts], np.float32)
    ...         return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    ...     def spec(self):
    ...         return {"model": self.model_id}
    >>> hybrid = HybridRetriever([BM25Retriever(), DenseRetriever(Keywords())], rrf_k=1)
    >>> docs = ["I adopted a cat", "The dog barks", "A cat and a dog"]
    >>> hybrid.score(docs, ["cat"]).round(4).tolist()
    [[1.0, 0.25, 0.6667]]

    By hand: BM25 ranks the two documents holding ``cat`` (equal scores, so in store
    order: 1st, 3rd), dense ranks all three (cosines 1, 0, 0.7071: 1st, 3rd, 2nd). With
    k = 1: 1/(1+1) + 1/(1+1) = 1 for the first, 1/(1+2) + 1/(1+2) = 0.6667 for the third,
    and 1/(1+3) = 0.25 for the second, which only dense ranks.
    """

    name = "hybrid"

    def __init__(self, components: Sequence[Retriever], *, rrf_k: float = DEFAULT_RRF_K,
                 fusion_depth: int | None = None) -> None:
        if not components:
            raise ValueError("hybrid retrieval needs at least one component")
        if rrf_k < 0:
            raise ValueError(f"the RRF constant must be >= 0, got {rrf_k}")
        if fusion_depth is not None and fusion_depth < 1:
            raise ValueError(f"fusion depth must be at least 1, got {fusion_depth}")
        self.components = tuple(components)
        self.rrf_k = rrf_k
        self.fusion_depth = fusion_depth

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fusion": "rrf",
            "rrf_k": self.rrf_k,
            "fusion_depth": self.fusion_depth,
            "components": [c.spec() for c in self.components],
            "ties": "fused score descending, then store order",
        }

    def versions(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for c in self.components:
            out.update(c.versions())
        return out

    def prepare(self, texts: Sequence[str], progress: Progress | None = None) -> None:
        for c in self.components:
            c.prepare(texts, progress)

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        n = len(docs)
        out = np.full((len(queries), n), -np.inf, dtype=np.float64)
        if not n or not queries:
            return out
        depth = n if self.fusion_depth is None else min(self.fusion_depth, n)
        per_component = [c.score(docs, queries) for c in self.components]
        for i in range(len(queries)):
            lists = [top_k(s[i], depth) for s in per_component]
            out[i] = rrf(lists, n, k=self.rrf_k)
        return out
