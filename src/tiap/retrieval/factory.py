"""Build a retriever from its name and settings (what ``tiap retrieve`` does with its options)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from tiap.cache import cache_dir as tiap_cache_dir
from tiap.config import Invalid, Settings, did_you_mean, ranged, validate
from tiap.llm.client import BaseUrl
from tiap.retrieval.base import Retriever
from tiap.retrieval.bm25 import BM25Retriever
from tiap.retrieval.cache import EmbeddingCache
from tiap.retrieval.dense import DenseRetriever
from tiap.retrieval.encoders import make_encoder
from tiap.retrieval.hybrid import HybridRetriever
from tiap.retrieval.kernels import DEFAULT_RRF_K

RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid")


class RetrieverSettings(Settings):
    """The arguments of :func:`make_retriever`, declared (strict types, ranges, the settings
    that apply to each retriever)."""

    subject = "retriever"

    name: str
    model: str | None = Field(None, min_length=1)
    ollama_url: BaseUrl | None = None
    batch_size: Annotated[int | None, ranged("batch_size")] = None
    cache_dir: str | Path | None = None
    use_cache: bool = True
    rrf_k: Annotated[float, ranged("rrf_k")] = DEFAULT_RRF_K
    fusion_depth: Annotated[int | None, ranged("cutoff")] = None
    k1: Annotated[float, ranged("bm25_k1")] = 1.5
    b: Annotated[float, ranged("unit")] = 0.75

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        key = v.strip().lower()
        if key not in RETRIEVERS:
            raise Invalid(f"unknown retriever {v!r}{did_you_mean(key, RETRIEVERS)}; choose one "
                          f"of {', '.join(RETRIEVERS)}")
        return key

    @field_validator("cache_dir")
    @classmethod
    def _cache_dir(cls, v: str | Path | None) -> str | Path | None:
        if v is not None and not str(v).strip():
            raise Invalid("expected a folder, got an empty string")
        return v

    @model_validator(mode="after")
    def _applies(self) -> RetrieverSettings:
        """A setting the retriever would ignore is an error, not silently dropped."""
        given = {"model": self.model, "ollama_url": self.ollama_url,
                 "batch_size": self.batch_size, "cache_dir": self.cache_dir}
        problems = []
        if self.name == "bm25":
            problems += [((k,), f"applies to the dense and hybrid retrievers only, not to "
                                f"{self.name!r}") for k, v in given.items() if v is not None]
        if self.name != "hybrid" and self.fusion_depth is not None:
            problems.append((("fusion_depth",), f"applies to the hybrid retriever only, not to "
                                                f"{self.name!r}"))
        if self.cache_dir is not None and not self.use_cache:
            problems.append((("cache_dir",), "cache_dir and use_cache=False exclude each other"))
        if problems:
            raise Invalid(problems=problems)
        return self


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
        TiapError: a setting of the wrong type or out of range, an unknown name, a setting
            that does not apply to the retriever (:class:`RetrieverSettings`: code
            ``config``, or ``usage`` naming the option inside
            :func:`tiap.config.command_options`), a missing extra
            (:class:`~tiap.errors.MissingExtraError` naming ``bm25``, ``dense`` or ``llm``).

    >>> bm25 = make_retriever("bm25", k1=1.2)
    >>> bm25.name, bm25.spec()["k1"], bm25.spec()["b"]
    ('bm25', 1.2, 0.75)
    >>> hybrid = make_retriever("hybrid", use_cache=False)
    >>> [c["name"] for c in hybrid.spec()["components"]], hybrid.spec()["rrf_k"]
    (['bm25', 'dense'], 60.0)
    >>> make_retriever("bm25", fusion_depth=10)
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: retriever 'bm25': key fusion_depth: applies to the hybrid retriever
    only, not to 'bm25'
    >>> make_retriever("bm26")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: retriever: key name: unknown retriever 'bm26' (did you mean
    'bm25'?); choose one of bm25, dense, hybrid
    """
    key = name.strip().lower() if isinstance(name, str) else name
    s = validate(RetrieverSettings, {
        "name": name, "model": model, "ollama_url": ollama_url, "batch_size": batch_size,
        "cache_dir": cache_dir, "use_cache": use_cache, "rrf_k": rrf_k,
        "fusion_depth": fusion_depth, "k1": k1, "b": b},
        what=f"retriever {key!r}" if key in RETRIEVERS else "retriever")
    key, model, ollama_url, batch_size = s.name, s.model, s.ollama_url, s.batch_size
    rrf_k, fusion_depth, k1, b = s.rrf_k, s.fusion_depth, s.k1, s.b

    if key == "bm25":
        return BM25Retriever(k1=k1, b=b)

    encoder = make_encoder(model, ollama_url=ollama_url, batch_size=batch_size)
    cache = EmbeddingCache(
        (Path(cache_dir) if cache_dir is not None else tiap_cache_dir("embeddings"))
        if use_cache else None
    )
    dense = DenseRetriever(encoder, cache)
    if key == "dense":
        return dense

    return HybridRetriever([BM25Retriever(k1=k1, b=b), dense], rrf_k=rrf_k,
                           fusion_depth=fusion_depth)
