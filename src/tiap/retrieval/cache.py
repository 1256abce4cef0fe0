"""An on-disk embedding cache keyed by (model id, sha256 of the text).

Stores of different parser densities hold the same raw turns; keyed by the text's hash,
their vectors are computed once and shared by every store, run and retriever that uses the
same model id. The model id of an encoder that asks an endpoint names the endpoint too
(``ollama:NAME@URL``, :class:`tiap.retrieval.encoders.OllamaEncoder`), so vectors from one
server are never served for another; only vectors the encoder checked
(:func:`tiap.retrieval.encoders.read_embeddings`) reach :meth:`EmbeddingCache.put`.

The cache is one SQLite database, ``embeddings.sqlite3``, in WAL mode: every batch of
vectors is written in one transaction, so an interrupted run (Ctrl-C, a crash, a killed
process) loses at most the batch in flight and never leaves a half-written vector; several
processes may read and write it at once. Vectors are float32 blobs; a row also records its
dimension, and a model whose vectors change dimension is an error.

Mergeable: the keys are content addresses (model id, sha256 of the text), so caches filled
on several machines or by several workers, one file each, merge into one
(:meth:`EmbeddingCache.merge_from`, ``tiap cache merge``) without a conflict a key could hide:
a vector already present is kept, and one that differs from it (another machine's float
rounding) is counted, never silently replaced.

Location: ``cache_dir`` if given, else ``$TIAP_CACHE/embeddings``, else
``~/.cache/tiap/embeddings``. ``EmbeddingCache(None)`` keeps the vectors in memory only.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Self

import numpy as np

from tiap.errors import TiapError

DB_NAME = "embeddings.sqlite3"
#: Keys per SQL statement (well under SQLite's limit on bound parameters).
_CHUNK = 500

# A rowid table: a vector (1.5 kB for 384 dimensions) is too large a row for WITHOUT ROWID,
# which doubled the file size. 16 kB pages hold ten such rows with little slack.
_PAGE_SIZE = 16384
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    key   TEXT NOT NULL,
    dim   INTEGER NOT NULL,
    vec   BLOB NOT NULL,
    UNIQUE (model, key)
)
"""


def default_embedding_cache_dir() -> Path:
    """``$TIAP_CACHE/embeddings``, else ``~/.cache/tiap/embeddings``."""
    env = os.environ.get("TIAP_CACHE")
    return (Path(env) if env else Path.home() / ".cache" / "tiap") / "embeddings"


def text_key(text: str) -> str:
    """The cache key of a text: the hex sha256 of its UTF-8 bytes (no normalisation)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunks(seq: Sequence[str], n: int = _CHUNK) -> Iterable[Sequence[str]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


class EmbeddingCache:
    """Vectors by ``(model, key)``; see the module docstring.

    Args:
        directory: the cache folder (created if needed), or ``None`` for a cache held in
            memory only (nothing is written to disk).
    """

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = None if directory is None else Path(directory)
        if self.directory is None:
            target = ":memory:"
        else:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise TiapError(f"cannot create the embedding cache folder ({exc})",
                                file=self.directory) from exc
            target = str(self.directory / DB_NAME)
        try:
            self._db = sqlite3.connect(target, timeout=60, isolation_level=None)
            self._db.execute(f"PRAGMA page_size={_PAGE_SIZE}")  # takes effect on a new file only
            if self.directory is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                # In WAL mode, NORMAL survives a crash of the process intact (a power loss
                # may drop the last transactions, never corrupt the file).
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise TiapError(f"cannot open the embedding cache ({exc})", file=target) from exc

    @property
    def path(self) -> Path | None:
        return None if self.directory is None else self.directory / DB_NAME

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def missing(self, model: str, keys: Sequence[str]) -> list[str]:
        """The keys (unique, first-seen order) that have no vector for ``model``."""
        unique = list(dict.fromkeys(keys))
        have: set[str] = set()
        for chunk in _chunks(unique):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key FROM vectors WHERE model = ? AND key IN ({marks})", (model, *chunk)
            )
            have.update(r[0] for r in rows)
        return [k for k in unique if k not in have]

    def get(self, model: str, keys: Sequence[str]) -> np.ndarray:
        """The vectors of ``keys`` (in that order) as a float32 matrix; all must be present."""
        found: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, dim, vec FROM vectors WHERE model = ? AND key IN ({marks})",
                (model, *chunk),
            )
            for key, dim, blob in rows:
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
        rows = [(model, k, int(v.size), v.tobytes()) for k, v in zip(keys, vectors, strict=True)]
        with self._db:  # BEGIN ... COMMIT, or ROLLBACK on an exception
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR IGNORE INTO vectors (model, key, dim, vec) VALUES (?, ?, ?, ?)", rows
            )

    def merge_from(self, other: str | Path) -> dict[str, int]:
        """Add every vector of another cache file (``embeddings.sqlite3`` of another machine
        or worker) that this one lacks, in one transaction. Returns ``{"added", "same",
        "differing"}``: vectors new here, present with the same bytes, and present with other
        bytes (this cache's are kept)."""
        path = Path(other)
        if path.is_dir():
            path = path / DB_NAME
        if not path.is_file():
            raise TiapError("no embedding cache here", file=path)
        self._db.execute("ATTACH DATABASE ? AS other", (str(path),))
        try:
            try:
                same, differing = self._db.execute(
                    "SELECT SUM(o.vec = v.vec), SUM(o.vec != v.vec) FROM other.vectors o "
                    "JOIN vectors v ON v.model = o.model AND v.key = o.key").fetchone()
            except sqlite3.DatabaseError as exc:
                raise TiapError(f"not an embedding cache ({exc})", file=path) from None
            with self._db:
                self._db.execute("BEGIN")
                cur = self._db.execute(
                    "INSERT OR IGNORE INTO vectors (model, key, dim, vec) "
                    "SELECT model, key, dim, vec FROM other.vectors")
                added = cur.rowcount
        finally:
            self._db.execute("DETACH DATABASE other")
        return {"added": int(added), "same": int(same or 0), "differing": int(differing or 0)}

    def count(self, model: str | None = None) -> int:
        """How many vectors the cache holds (for one model, or in all)."""
        if model is None:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        return int(self._db.execute("SELECT COUNT(*) FROM vectors WHERE model = ?",
                                    (model,)).fetchone()[0])
