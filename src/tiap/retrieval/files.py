"""Retrieval from a store and a queries file to a trace, as ``tiap retrieve`` does."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.config import option_name
from tiap.engine import make_engine, use_engine
from tiap.errors import TiapError
from tiap.retrieval.dense import DenseRetriever
from tiap.retrieval.factory import make_retriever
from tiap.retrieval.hybrid import HybridRetriever
from tiap.retrieval.kernels import DEFAULT_RRF_K
from tiap.retrieval.retrieve import DEFAULT_DEPTH, RetrievalResult, retrieve

__all__ = ["Retrieved", "retrieve_files"]


@dataclass(frozen=True)
class Retrieved:
    """What :func:`retrieve_files` did: ``result``, :func:`retrieve`'s; ``encoded``, the
    texts the embedding model encoded in this run (``None``: the retriever encodes none;
    the rest came from the embedding cache); ``shard_differing``, vectors an interrupted
    run's workers left in shards that differ from the cache's (the cache's are kept).

        >>> from tiap.memory import Item, write_items
        >>> _ = write_items("items.jsonl", [Item("t1", "raw", ("c1:D1:1",), text="a cat",
        ...                                      collection="c1")])
        >>> _ = Path("queries.jsonl").write_text('{"query_id": "q1", "question": "cat?", '
        ...                                      '"evidence": ["c1:D1:1"], "collection": "c1"}\\n')
        >>> done = retrieve_files("items.jsonl", "queries.jsonl", "bm25", "bm25.jsonl")
        >>> done.result.run.ranking("q1").item_ids, done.encoded, done.shard_differing
        (('t1',), None, 0)
    """

    result: RetrievalResult
    encoded: int | None
    shard_differing: int


def retrieve_files(
    store: str | Path,
    queries: str | Path,
    retriever: str,
    out: str | Path,
    *,
    depth: int = DEFAULT_DEPTH,
    system: str | None = None,
    work_dir: str | Path | None = None,
    engine: str = "local",
    progress: Any = None,
    model: str | None = None,
    ollama_url: str | None = None,
    batch_size: int | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    rrf_k: float = DEFAULT_RRF_K,
    k1: float = 1.5,
    b: float = 0.75,
) -> Retrieved:
    """Build the retriever named ``retriever`` (:func:`make_retriever`, with its settings:
    ``model`` ... ``b``), rank every query's collection on ``engine``
    (:func:`tiap.engine.make_engine`) and write the trace ``out`` with a TREC run beside it
    (:func:`retrieve`: ``depth``, ``system``, ``work_dir``, ``progress``).

    Every setting is checked before anything is read: ``cache_dir`` with ``use_cache=False``
    is an error (they exclude each other), as is a setting the retriever does not take.

        >>> from tiap.memory import Item, write_items
        >>> _ = write_items("items.jsonl", [Item("t1", "raw", ("c1:D1:1",), text="a cat",
        ...                                      collection="c1"),
        ...                                 Item("t2", "raw", ("c1:D1:2",), text="a dog",
        ...                                      collection="c1")])
        >>> _ = Path("queries.jsonl").write_text('{"query_id": "q1", "question": "cat?", '
        ...                                      '"evidence": ["c1:D1:1"], "collection": "c1"}\\n')
        >>> done = retrieve_files("items.jsonl", "queries.jsonl", "bm25", "runs/bm25.jsonl",
        ...                       depth=10)
        >>> done.result.trec_path.read_text().split()[:3]
        ['q1', 'Q0', 't1']
        >>> retrieve_files("items.jsonl", "queries.jsonl", "dense", "runs/dense.jsonl",
        ...                cache_dir="cache", use_cache=False)
        Traceback (most recent call last):
        tiap.errors.TiapError: cache_dir and use_cache=False exclude each other
    """

    if cache_dir is not None and not use_cache:
        no_cache = option_name("use_cache")
        raise TiapError(f"{option_name('cache_dir')} and "
                        f"{'use_cache=False' if no_cache == 'use_cache' else no_cache} "
                        "exclude each other")
    ret = make_retriever(retriever, model=model, ollama_url=ollama_url, batch_size=batch_size,
                         cache_dir=cache_dir, use_cache=use_cache, rrf_k=rrf_k, k1=k1, b=b)
    eng = make_engine(engine)
    with contextlib.closing(eng), use_engine(eng):
        result = retrieve(store, queries, ret, out, depth=depth, system=system,
                          work_dir=work_dir, progress=progress)
    differing = sum(getattr(p, "shard_differing", 0)
                    for p in (ret, *getattr(ret, "components", ())))
    return Retrieved(result=result, encoded=_encoded(ret), shard_differing=differing)


def _encoded(retriever: object) -> int | None:
    if isinstance(retriever, DenseRetriever):
        return retriever.encoded
    if isinstance(retriever, HybridRetriever):
        counts = [_encoded(c) for c in retriever.components]
        found = [c for c in counts if c is not None]
        return sum(found) if found else None
    return None
