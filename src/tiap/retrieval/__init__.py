"""Retrieval: BM25, dense embeddings and their reciprocal-rank fusion, over one
collection of a store at a time, written as ranked traces of fixed depth (docs/retrieval.md).

>>> from tiap.retrieval import make_retriever, retrieve           # doctest: +SKIP
>>> retrieve("stores/raw", "locomo/queries.jsonl", make_retriever("bm25"),
...          "runs/bm25.jsonl", depth=60)                           # doctest: +SKIP

Importing this package loads neither ``bm25s`` nor torch: each retriever imports its
library when it first scores, and a missing one raises
:class:`~tiap.errors.MissingExtraError` naming the extra to install.
"""

from tiap.retrieval.base import Retriever
from tiap.retrieval.bm25 import BM25Retriever
from tiap.retrieval.cache import EmbeddingCache
from tiap.retrieval.dense import DenseRetriever
from tiap.retrieval.encoders import (
    Encoder,
    OllamaEncoder,
    SentenceTransformerEncoder,
    make_encoder,
)
from tiap.retrieval.factory import RETRIEVERS, make_retriever
from tiap.retrieval.files import Retrieved, retrieve_files
from tiap.retrieval.hybrid import HybridRetriever
from tiap.retrieval.retrieve import (
    RetrievalResult,
    default_work_dir,
    rank_collection,
    retrieve,
)

__all__ = [
    "RETRIEVERS",
    "BM25Retriever",
    "DenseRetriever",
    "EmbeddingCache",
    "Encoder",
    "HybridRetriever",
    "OllamaEncoder",
    "RetrievalResult",
    "Retrieved",
    "Retriever",
    "SentenceTransformerEncoder",
    "default_work_dir",
    "make_encoder",
    "make_retriever",
    "rank_collection",
    "retrieve",
    "retrieve_files",
]
