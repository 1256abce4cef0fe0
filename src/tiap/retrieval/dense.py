"""Dense retrieval: cosine similarity of L2-normalised embeddings, with an on-disk cache.

``score(q, d) = cos(e(q), e(d)) = e(q) · e(d)`` for unit vectors ``e``. Every item of the
collection is retrieved (ranked by score, ties by store order).

Vectors come from :class:`~tiap.retrieval.cache.EmbeddingCache`, keyed by the encoder's
model id and the sha256 of the text; only texts the cache lacks are encoded, in batches
(each batch stored in one transaction, so an interrupted run keeps what it encoded), with a
progress bar when one is given.

**On an engine** (:mod:`tiap.engine`, ``tiap retrieve --engine ray``) the batches are encoded
by the engine's workers, eight batches a task, each worker loading the model once; a text's
vector depends on the text alone (:mod:`tiap.retrieval.encoders`), whatever the batch or the
worker's thread count, so the vectors and the rankings are a local run's. A worker stores each batch it encodes in its task's shard, an
embedding cache of its own (``<cache>/shards/<sha256 of the task's keys>/``), before the next
batch; the driver puts a finished task's vectors in the cache and removes the shard. A killed
worker's task runs again and encodes only what its shard lacks; a killed driver's shards are
merged into the cache by the next run. Scoring (one product of unit vectors per collection)
stays in the driver.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tiap.engine import current_engine
from tiap.io import shard_path
from tiap.retrieval.base import Retriever
from tiap.retrieval.cache import DB_NAME, EmbeddingCache, text_key
from tiap.retrieval.encoders import Encoder

if TYPE_CHECKING:
    from rich.progress import Progress


#: Batches of texts an engine's task encodes.
TASK_BATCHES = 8


class DenseRetriever(Retriever):
    """Cosine similarity over an encoder's vectors, cached by (model id, text sha256).

    Args:
        encoder: a :class:`~tiap.retrieval.encoders.Encoder`.
        cache: where vectors are kept; ``None`` keeps them in memory for this retriever only.

    With a toy encoder (one dimension per keyword; the bundled model is
    :func:`~tiap.retrieval.make_retriever` ``("dense")``), the scores are cosines:

    >>> from tiap.retrieval import Encoder
    >>> class Keywords(Encoder):
    ...     model_id = "keywords-v1"
    ...     def encode(self, texts):
    ...         v = np.array([[t.count(w) for w in ("cat", "dog")] for t in texts], np.float32)
    ...         return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    ...     def spec(self):
    ...         return {"model": self.model_id}
    >>> dense = DenseRetriever(Keywords())
    >>> docs = ["I adopted a cat", "The dog barks", "A cat and a dog"]
    >>> dense.score(docs, ["cat"]).round(4).tolist()
    [[1.0, 0.0, 0.7071]]
    >>> dense.encoded, dense.score(docs, ["dog"]).round(4).tolist(), dense.encoded
    (4, [[0.0, 1.0, 0.7071]], 5)
    """

    name = "dense"

    def __init__(self, encoder: Encoder, cache: EmbeddingCache | None = None) -> None:
        self.encoder = encoder
        self.cache = cache if cache is not None else EmbeddingCache(None)
        #: How many texts this retriever has encoded (cache misses), for reports and tests.
        self.encoded = 0
        #: How many distinct texts :meth:`prepare` found in the cache (cache hits).
        self.cache_hits = 0
        #: Vectors of a killed run's shards that differed from the cache's (cache's kept).
        self.shard_differing = 0

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
        self.merge_shards()  # what a killed driver's workers encoded is not encoded again
        keys = [text_key(t) for t in texts]
        missing = self._ensure(keys, texts, progress)
        self.cache_hits += len(set(keys)) - missing

    def _ensure(self, keys: Sequence[str], texts: Sequence[str],
                progress: Progress | None = None) -> int:
        """Encode and cache the texts the cache lacks; returns how many distinct ones that was."""
        model = self.encoder.cache_id
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
            task = progress.add_task(f"encoding with {self.encoder.model_id}", total=len(order))
        bs = self.encoder.batch_size
        batches = [order[i : i + bs] for i in range(0, len(order), bs)]
        for batch, vecs in self._encoded(batches, todo):
            self.cache.put(model, batch, vecs)
            self.encoded += len(batch)
            if progress is not None and task is not None:
                progress.advance(task, len(batch))
        if progress is not None and task is not None:
            progress.remove_task(task)
        return len(order)

    def _encoded(self, batches: list[list[str]], texts: dict[str, str],
                 ) -> Iterator[tuple[list[str], np.ndarray]]:
        """Each batch (keys) with its vectors, as it is encoded: here, or by the engine's
        workers (module docstring), a finished task's batches at a time."""

        engine = current_engine()
        if engine.name == "local":
            for batch in batches:
                yield batch, self.encoder.encode([texts[k] for k in batch])
            return
        shards = self._shard_root()
        groups = [batches[i : i + TASK_BATCHES] for i in range(0, len(batches), TASK_BATCHES)]
        tasks = [_EncodeTask(self.encoder, tuple(tuple((k, texts[k]) for k in b) for b in g),
                             None if shards is None
                             else str(shard_path(shards, [k for b in g for k in b], "")))
                 for g in groups]
        with contextlib.closing(engine.imap_unordered(_encode_task, tasks, len(tasks))) as done:
            for n, vectors in done:
                for batch, vecs in zip(groups[n], vectors, strict=True):
                    yield batch, vecs
                if tasks[n].shard is not None:
                    shutil.rmtree(tasks[n].shard, ignore_errors=True)
        if shards is not None:
            with contextlib.suppress(OSError):
                shards.rmdir()

    def _shard_root(self) -> Path | None:
        """``<cache>/shards``, where workers keep what they encoded (``None``: the cache is
        held in memory; workers then keep nothing)."""
        return None if self.cache.directory is None else self.cache.directory / "shards"

    def merge_shards(self) -> int:
        """Put the vectors of every shard a killed driver left in the cache and remove the
        shards; returns how many vectors were new. A shard's vector that differs from the
        cache's (another machine's rounding) is not taken: counted in
        :attr:`shard_differing`, which the commands report."""
        root = self._shard_root()
        if root is None or not root.is_dir():
            return 0
        added = 0
        for shard in sorted(root.iterdir()):
            if (shard / DB_NAME).is_file():
                got = self.cache.merge_from(shard)
                added += got["added"]
                self.shard_differing += got["differing"]
            shutil.rmtree(shard, ignore_errors=True)
        with contextlib.suppress(OSError):
            root.rmdir()
        return added

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (cached, encoding the missing ones)."""
        keys = [text_key(t) for t in texts]
        self._ensure(keys, texts)
        return self.cache.get(self.encoder.cache_id, keys)

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        if not docs or not queries:
            return np.full((len(queries), len(docs)), -np.inf, dtype=np.float64)
        d = self.embed(docs).astype(np.float64)
        q = self.embed(queries).astype(np.float64)
        if d.shape[1] != q.shape[1]:  # pragma: no cover - one model gives one dimension
            raise ValueError("query and document vectors differ in dimension")
        return q @ d.T


@dataclass(frozen=True)
class _EncodeTask:
    """One engine task: the encoder (without a loaded model), batches of (key, text), and
    the task's shard folder (``None``: keep nothing)."""

    encoder: Encoder
    batches: tuple[tuple[tuple[str, str], ...], ...]
    shard: str | None


_WORKER_ENCODERS: dict[tuple[str, str, int], Encoder] = {}


def _encode_task(task: _EncodeTask) -> list[np.ndarray]:
    """Encode a task's batches on a worker (the model loaded once per worker process): a
    batch its shard holds (a killed attempt's) is read, not encoded again; each batch encoded
    is stored in the shard before the next. Returns the vectors of each batch, in order."""
    enc = task.encoder
    wkey = (type(enc).__qualname__, enc.model_id, enc.batch_size)
    enc = _WORKER_ENCODERS.setdefault(wkey, enc)
    model = enc.cache_id
    shard = EmbeddingCache(task.shard)
    out = []
    try:
        for batch in task.batches:
            keys = [k for k, _ in batch]
            if shard.missing(model, keys):
                vecs = enc.encode([t for _, t in batch])
                shard.put(model, keys, vecs)
            out.append(shard.get(model, keys))
    finally:
        shard.close()
    return out
