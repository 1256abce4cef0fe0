"""An on-disk embedding cache keyed by (model id, sha256 of the text).

Stores of different parser densities hold the same raw turns; keyed by the text's hash,
their vectors are computed once and shared by every store, run and retriever that uses the
same model id. The model id of an encoder that asks an endpoint names the endpoint too
(``ollama:NAME@URL``, :class:`tiap.retrieval.encoders.OllamaEncoder`), so vectors from one
server are never served for another; only vectors the encoder checked
(:func:`tiap.retrieval.encoders.read_embeddings`) reach :meth:`EmbeddingCache.put`.

The cache is one SQLite database, ``embeddings.sqlite3`` (a :class:`tiap.cache.KeyedCache`:
WAL, ``synchronous=FULL``): every batch of vectors is written in one transaction, so an
interrupted run (Ctrl-C, a crash, a killed process) loses at most the batch in flight and
never leaves a half-written vector; several processes may read and write it at once. Its
schema is version 1 (a file written before the caches carried a version is version 1 too,
and is stamped so when opened); a file of another cache or version is ``error[cache]``.
Vectors are float32 blobs; a row also records its dimension, and a model whose vectors
change dimension is an error.

Mergeable: the keys are content addresses (model id, sha256 of the text), so caches filled
on several machines or by several workers, one file each, merge into one
(:meth:`EmbeddingCache.merge_from`, ``tiap cache merge``) without a conflict a key could hide:
a vector already present is kept, and one that differs from it (another machine's float
rounding) is counted, never silently replaced.

Location: ``cache_dir`` if given, else ``$TIAP_CACHE/embeddings``, else
``~/.cache/tiap/embeddings`` (:func:`tiap.cache.cache_dir`). ``EmbeddingCache(None)``
keeps the vectors in memory only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tiap.cache import KeyedCache, Table
from tiap.errors import TiapError

DB_NAME = "embeddings.sqlite3"


def text_key(text: str) -> str:
    """The cache key of a text: the hex sha256 of its UTF-8 bytes (no normalisation)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache(KeyedCache):
    """Vectors by ``(model, key)``; see the module docstring.

    Args:
        directory: the cache folder (created if needed), or ``None`` for a cache held in
            memory only (nothing is written to disk).

    >>> import numpy as np
    >>> cache = EmbeddingCache("cache")
    >>> keys = [text_key("a cat"), text_key("a dog")]
    >>> cache.missing("keywords-v1", keys) == keys
    True
    >>> cache.put("keywords-v1", keys, np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> cache.get("keywords-v1", keys[1:]).tolist(), cache.count()
    ([[0.0, 1.0]], 2)
    >>> EmbeddingCache("elsewhere").merge_from("cache")
    {'added': 2, 'same': 0, 'differing': 0}
    >>> cache.close()
    """

    KIND = "embedding cache"
    SCHEMA = 1
    TABLES = (Table("vectors", ("model TEXT NOT NULL", "key TEXT NOT NULL",
                                "dim INTEGER NOT NULL", "vec BLOB NOT NULL"),
                    ("model", "key"), "UNIQUE (model, key)"),)
    ELSEWHERE = "pass --cache-dir with another folder"
    AGAIN = "the texts are then encoded again"
    # A rowid table: a vector (1.5 kB for 384 dimensions) is too large a row for WITHOUT
    # ROWID, which doubled the file size. 16 kB pages hold ten such rows with little slack.
    PAGE_SIZE = 16384
    NOUN, COMPARE, FOLDER = "embeddings", "vec", "an embedding cache folder"

    @classmethod
    def file_in(cls, path: str | Path) -> Path:
        """A cache folder's file (``embeddings.sqlite3``), or ``path`` itself."""
        path = Path(path)
        return path / DB_NAME if path.is_dir() else path

    @classmethod
    def open_at(cls, path: str | Path) -> EmbeddingCache:
        """The cache of the folder ``path``, or of the folder of ``embeddings.sqlite3``."""
        path = Path(path)
        return cls(path.parent if path.suffix == ".sqlite3" else path)

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = None if directory is None else Path(directory)
        super().__init__(None if self.directory is None else self.directory / DB_NAME)

    def missing(self, model: str, keys: Sequence[str]) -> list[str]:
        """The keys (unique, first-seen order) that have no vector for ``model``."""
        unique = list(dict.fromkeys(keys))
        have = {r[0] for r in self.lookup_in("vectors", ("key",), (model,), unique)}
        return [k for k in unique if k not in have]

    def get(self, model: str, keys: Sequence[str]) -> np.ndarray:
        """The vectors of ``keys`` (in that order) as a float32 matrix; all must be present."""
        found: dict[str, np.ndarray] = {}
        for key, dim, blob in self.lookup_in("vectors", ("key", "dim", "vec"), (model,),
                                             list(dict.fromkeys(keys))):
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.size != dim:
                raise TiapError(f"corrupt cache entry for model {model!r} (key {key})",
                                file=self.path)
            found[key] = vec
        absent = [k for k in keys if k not in found]
        if absent:
            raise KeyError(f"{len(absent)} texts have no cached vector for {model!r}")
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        dims = {v.size for v in found.values()}
        if len(dims) > 1:
            raise TiapError(f"the cache holds vectors of several dimensions {sorted(dims)} for "
                            f"model {model!r}; remove it or use another model id", file=self.path)
        return np.stack([found[k] for k in keys])

    def put(self, model: str, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store one batch in one transaction (existing entries are kept as they are)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            raise ValueError(f"{len(keys)} keys but vectors of shape {vectors.shape}")
        self.store("vectors", [(model, k, int(v.size), v.tobytes())
                               for k, v in zip(keys, vectors, strict=True)], replace=False)

    def count(self, model: str | None = None) -> int:
        """How many vectors the cache holds (for one model, or in all)."""
        if model is None:
            return self.count_rows("vectors")
        return self.count_rows("vectors", model=model)
