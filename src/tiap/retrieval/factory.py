"""Build a retriever from its name and settings (what ``tiap retrieve`` does with its options)."""

from __future__ import annotations

from pathlib import Path

from tiap.errors import TiapError
from tiap.retrieval.base import Retriever
from tiap.retrieval.kernels import DEFAULT_RRF_K

RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid")


def make_retriever(
    name: str,
    *,
    model: str | None = None,
    ollama_url: str | None = None,
    batch_size: int | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    rrf_k: float = DEFAULT_RRF_K,
    fusion_depth: int | None = None,
    k1: float = 1.5,
    b: float = 0.75,
) -> Retriever:
    """``bm25``, ``dense`` or ``hybrid`` (RRF of the two), with every setting explicit.

    Args:
        name: the retriever.
        model: dense/hybrid only: ``all-MiniLM-L6-v2`` (default, bundled), a local
            sentence-transformers folder, or ``ollama:NAME``.
        ollama_url: the Ollama server for ``ollama:`` models.
        batch_size: texts per encoding batch (64 local, 32 Ollama by default).
        cache_dir: the embedding cache folder (default ``$TIAP_CACHE/embeddings`` or
            ``~/.cache/tiap/embeddings``); ``use_cache=False`` keeps vectors in memory only.
        rrf_k: hybrid only: the RRF constant (60).
        fusion_depth: hybrid only: how much of each component ranking is fused (all).
        k1, b: BM25 parameters.

    Raises:
        TiapError: an unknown name, a setting that does not apply, a missing extra
            (:class:`~tiap.errors.MissingExtraError` naming ``bm25``, ``dense`` or ``llm``).
    """
    key = name.strip().lower()
    if key not in RETRIEVERS:
        raise TiapError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")
    if key == "bm25" and (model is not None or ollama_url is not None):
        raise TiapError("--model and --ollama-url apply to the dense and hybrid retrievers")
    if rrf_k < 0:
        raise TiapError(f"the RRF constant must be >= 0, got {rrf_k}")
    if fusion_depth is not None and fusion_depth < 1:
        raise TiapError(f"the fusion depth must be at least 1, got {fusion_depth}")
    if k1 < 0 or not 0 <= b <= 1:
        raise TiapError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")

    from tiap.retrieval.bm25 import BM25Retriever

    if key == "bm25":
        return BM25Retriever(k1=k1, b=b)

    from tiap.retrieval.cache import EmbeddingCache, default_embedding_cache_dir
    from tiap.retrieval.dense import DenseRetriever
    from tiap.retrieval.encoders import make_encoder

    encoder = make_encoder(model, ollama_url=ollama_url, batch_size=batch_size)
    cache = EmbeddingCache(
        (Path(cache_dir) if cache_dir is not None else default_embedding_cache_dir())
        if use_cache else None
    )
    dense = DenseRetriever(encoder, cache)
    if key == "dense":
        return dense
    from tiap.retrieval.hybrid import HybridRetriever

    return HybridRetriever([BM25Retriever(k1=k1, b=b), dense], rrf_k=rrf_k,
                           fusion_depth=fusion_depth)
