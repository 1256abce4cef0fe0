"""Floors of the retrieval step: what the libraries themselves take on the same documents.

    .venv/bin/python benchmarks/floors_retrieval.py STORE QUERIES [--dense] [--cache DIR]

Not collected by pytest; needs the ``bm25`` extra (and ``dense`` for ``--dense``). STORE is
a store folder (``items.jsonl``), QUERIES a ``queries.jsonl``; e.g. the LongMemEval-S run's
``<out>/longmemeval-s/stores/f5`` and ``<out>/longmemeval-s/queries.jsonl``. The store is
read once, outside every timing (the pipeline hands it to the step in memory).

- :func:`bm25_floor`: ``bm25s`` alone, per collection, on the texts ``tiap retrieve`` ranks:
  ``Tokenizer`` (the same regex, stopwords and PyStemmer stemmer) + ``BM25(method="lucene")
  .index`` + ``get_scores_from_ids`` for the collection's queries
  (:func:`tiap.retrieval.bm25.score_bm25s`).
- :func:`bm25_scoring`: TIAP's own :meth:`BM25Retriever.score` on the same texts (the
  scores are checked equal to bm25s's, bit for bit, when ``check=True``).
- :func:`bm25_step`: the whole :func:`tiap.retrieval.retrieve` call from the store in memory
  (planning, scoring, top-k, the trace, the TREC run and the work folder).
- :func:`dense_floor`: sentence-transformers' own ``SentenceTransformer.encode`` of the
  distinct texts (items and queries) with the same batch size, normalised.
- :func:`dense_step`: the whole dense :func:`retrieve` with an empty embedding cache; its
  excess over :func:`dense_floor` is what is not encoding (hashing, the cache, batching by
  width, ranking, writing).

Each function returns wall-clock seconds (``time.perf_counter``); the command prints them
with the CPU seconds of this process (``time.process_time``) beside.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tiap.datasets.queryfile import read_queries
from tiap.retrieval.bm25 import BM25Retriever, score_bm25s
from tiap.retrieval.retrieve import CollectionPlan, Store, open_store, plan_collections


def _plans(store: Store | str | Path, queries: str | Path) -> tuple[Store, list[CollectionPlan]]:
    st = store if isinstance(store, Store) else open_store(store)
    return st, plan_collections(st, read_queries(Path(queries)))


def _texts(plan: CollectionPlan) -> tuple[list[str], list[str]]:
    return [it.text or "" for it in plan.items], [q.question for q in plan.queries]


def bm25_floor(store: Store | str | Path, queries: str | Path) -> float:
    """Seconds bm25s takes to tokenize, index and score every collection."""
    _, plans = _plans(store, queries)
    ret = BM25Retriever()
    texts = [_texts(p) for p in plans]
    t = time.perf_counter()
    for docs, qs in texts:
        score_bm25s(ret, docs, qs)
    return time.perf_counter() - t


def bm25_scoring(store: Store | str | Path, queries: str | Path, *, check: bool = False) -> float:
    """Seconds :meth:`BM25Retriever.score` takes on every collection (one retriever, as
    :func:`retrieve` uses it); ``check`` compares each collection's scores with bm25s's
    (untimed) and raises on a difference."""
    _, plans = _plans(store, queries)
    ret = BM25Retriever()
    texts = [_texts(p) for p in plans]
    spent = 0.0
    for docs, qs in texts:
        t = time.perf_counter()
        got = ret.score(docs, qs)
        spent += time.perf_counter() - t
        if check and got.tobytes() != score_bm25s(ret, docs, qs).tobytes():
            raise AssertionError("BM25Retriever.score differs from bm25s")
    return spent


def bm25_step(store: Store | str | Path, queries: str | Path, *, depth: int = 60) -> float:
    """Seconds of the whole :func:`retrieve` call (BM25) from a store already read."""
    from tiap.retrieval import retrieve

    st = store if isinstance(store, Store) else open_store(store)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        retrieve(st, queries, BM25Retriever(), Path(tmp) / "bm25.jsonl", depth=depth)
        return time.perf_counter() - t


def dense_floor(store: Store | str | Path, queries: str | Path, *,
                batch_size: int = 64) -> float:
    """Seconds sentence-transformers' ``encode`` takes on the distinct texts (items and
    queries of every planned collection), batch size as ``tiap retrieve``'s, normalised;
    the model is loaded (and warmed on one text) before the clock starts."""
    from sentence_transformers import SentenceTransformer

    from tiap.retrieval.encoders import SentenceTransformerEncoder

    _, plans = _plans(store, queries)
    texts = list(dict.fromkeys(t for p in plans for part in _texts(p) for t in part))
    model = SentenceTransformer(str(SentenceTransformerEncoder().path), device="cpu")
    model.encode(["warm up"])
    t = time.perf_counter()
    model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                 convert_to_numpy=True)
    return time.perf_counter() - t


def dense_step(store: Store | str | Path, queries: str | Path, *, depth: int = 60,
               cache_dir: str | Path | None = None) -> float:
    """Seconds of the whole dense :func:`retrieve` with an empty embedding cache in
    ``cache_dir`` (default: a temporary folder); the model is loaded before the clock
    starts, as in :func:`dense_floor`."""
    from tiap.retrieval import make_retriever, retrieve

    st = store if isinstance(store, Store) else open_store(store)
    with tempfile.TemporaryDirectory() as tmp:
        ret = make_retriever("dense", cache_dir=cache_dir or Path(tmp) / "cache")
        ret.encoder._load()  # type: ignore[attr-defined]
        ret.encoder.encode(["warm up"])  # type: ignore[attr-defined]
        t = time.perf_counter()
        retrieve(st, queries, ret, Path(tmp) / "dense.jsonl", depth=depth)
        return time.perf_counter() - t


def _timed(f: Callable[[], float]) -> tuple[float, float]:
    c = time.process_time()
    wall = f()
    return wall, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store")
    ap.add_argument("queries")
    ap.add_argument("--dense", action="store_true", help="also the dense floor and step")
    args = ap.parse_args()
    t = time.perf_counter()
    st = open_store(args.store)
    print(f"reading the store (not in the figures below): {time.perf_counter() - t:.1f} s, "
          f"{len(st.items):,} items")
    rows = [("bm25 floor (bm25s)", lambda: bm25_floor(st, args.queries)),
            ("bm25 scoring (tiap)", lambda: bm25_scoring(st, args.queries)),
            ("bm25 step (retrieve)", lambda: bm25_step(st, args.queries))]
    if args.dense:
        rows += [("dense floor (encode)", lambda: dense_floor(st, args.queries)),
                 ("dense step (retrieve)", lambda: dense_step(st, args.queries))]
    for name, f in rows:
        wall, cpu = _timed(f)
        print(f"{name:24s} wall {wall:7.2f} s   cpu {cpu:7.2f} s", flush=True)


if __name__ == "__main__":
    main()
