"""TIAP's caches: where they live, and how an SQLite cache file is opened, checked and used.

TIAP keeps three caches of finished work, each an SQLite file whose keys are content
addresses: the judges' verdicts (:class:`tiap.audit.run.VerdictCache`, by the sha256 of a
request), the ``llm`` parser's facts (:class:`tiap.memory.llm_parser.LlmCache`, by the
sha256 of a request) and text embeddings (:class:`tiap.retrieval.cache.EmbeddingCache`, by
model id and the sha256 of a text). Each is a :class:`KeyedCache` that declares its tables,
its schema version and how it encodes a value; this module does the rest, the same way for
all three:

- **Where**: :func:`cache_dir`: ``$TIAP_CACHE``, else ``~/.cache/tiap``. The downloaded
  data files and the local models are kept there too.
- **Opening**: WAL journal (several processes may read and write the file at once), a busy
  timeout of :data:`BUSY_TIMEOUT` seconds, and ``synchronous=FULL``: a committed row
  survives the process being killed at any moment, ``kill -9`` included.
- **Writing**: every write is one transaction (:meth:`KeyedCache.transaction`): a batch is
  in the file whole or not at all.
- **Checking**: the schema version is ``PRAGMA user_version`` (a file written before the
  caches carried one counts as :attr:`KeyedCache.UNVERSIONED`). A file that is not SQLite,
  holds the tables of another cache, or has another schema version is refused with
  ``error[cache]`` naming it; its rows are never mixed in.
- **Merging**: :meth:`KeyedCache.merge_file` adds the rows of another file of the same kind
  (another machine's or worker's) that this one lacks. A key present in both keeps this
  file's row; one whose value differs is counted, never silently replaced.
  :func:`merge_caches` (``tiap cache merge``) merges whole caches: it finds each source's
  kind among the kinds it is given (:meth:`KeyedCache.holds`), so it serves every kind
  without importing one.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from tiap.cache import KeyedCache, Table
    >>> class Notes(KeyedCache):
    ...     KIND, SCHEMA = "notes cache", 1
    ...     TABLES = (Table("notes", ("key TEXT PRIMARY KEY", "text TEXT NOT NULL"), ("key",)),)
    >>> with tempfile.TemporaryDirectory() as tmp, Notes(Path(tmp) / "n.sqlite") as notes:
    ...     notes.store("notes", [("a", "first"), ("b", "second")])
    ...     notes.lookup("notes", ("b",), ("text",))
    2
    ('second',)
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from tiap.errors import TiapError

__all__ = ["CacheMerge", "KeyedCache", "Table", "cache_dir", "merge_caches", "tables_of"]

#: Seconds a connection waits for another process's write to finish before it fails.
BUSY_TIMEOUT = 60.0
#: Keys per SQL statement (well under SQLite's limit on bound parameters).
CHUNK = 500


def cache_dir(*parts: str) -> Path:
    """TIAP's cache folder, ``$TIAP_CACHE`` (else ``~/.cache/tiap``), joined with ``parts``.

    The one lookup of the cache folder: the data files, the local models, the ``llm``
    parser's cache and the embeddings all live under it.

    Example:
        >>> cache_dir("models") == cache_dir() / "models"
        True
    """
    env = os.environ.get("TIAP_CACHE")
    return (Path(env) if env else Path.home() / ".cache" / "tiap").joinpath(*parts)


def tables_of(path: str | Path) -> set[str]:
    """The table names of the SQLite file at ``path``, read without writing to it.

    Raises ``error[io]`` naming the file when it is missing, ``error[cache]`` when it is
    not SQLite.

    Example:
        >>> import sqlite3, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     db = sqlite3.connect(f"{tmp}/x.sqlite")
        ...     _ = db.execute("CREATE TABLE vectors (k TEXT)"); db.close()
        ...     tables_of(f"{tmp}/x.sqlite")
        {'vectors'}
    """
    path = Path(path)
    if not path.is_file():
        raise TiapError("no such cache", file=path, code="io")
    try:
        with contextlib.closing(_read_only(path)) as db:
            return _tables(db)
    except sqlite3.DatabaseError as exc:
        raise TiapError(f"not a TIAP cache ({exc})", file=path, code="cache") from None


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                           timeout=BUSY_TIMEOUT)


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if not r[0].startswith("sqlite_")}


@dataclass(frozen=True)
class Table:
    """One table of a cache: its name, its column definitions (SQL) and its key columns.

    Example:
        >>> t = Table("vectors", ("model TEXT NOT NULL", "key TEXT NOT NULL"),
        ...           ("model", "key"), "UNIQUE (model, key)")
        >>> t.names
        ('model', 'key')
    """

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    #: table constraints after the columns (``UNIQUE (model, key)``)
    constraints: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(c.split()[0] for c in self.columns)

    def create(self) -> str:
        body = ", ".join(self.columns + ((self.constraints,) if self.constraints else ()))
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({body})"


class KeyedCache:
    """An SQLite file of rows by key, opened, checked and written by one policy (see the
    module docstring). A subclass declares :attr:`KIND`, :attr:`SCHEMA` and :attr:`TABLES`
    and adds its own methods (its value encodings) over :meth:`lookup`, :meth:`lookup_in`,
    :meth:`store`, :meth:`remove`, :meth:`scan`, :meth:`count_rows` and :meth:`merge_file`.

    Args:
        path: the SQLite file (its folder is created if needed), or ``None`` for a cache
            held in memory only.

    Example:
        >>> class Notes(KeyedCache):
        ...     KIND, SCHEMA = "notes cache", 1
        ...     TABLES = (Table("notes", ("key TEXT PRIMARY KEY", "text TEXT NOT NULL"),
        ...                     ("key",)),)
        >>> with Notes("notes.sqlite") as notes:
        ...     notes.store("notes", [("a", "first"), ("b", "second")])
        ...     notes.lookup("notes", ("a",), ("text",)), notes.count_rows("notes")
        2
        (('first',), 2)
        >>> with Notes("other.sqlite") as other:
        ...     other.store("notes", [("b", "second"), ("c", "third")])
        ...     other.merge_file("notes.sqlite", "notes", compare="text")
        2
        {'added': 1, 'same': 1, 'differing': 0}
        >>> import sqlite3
        >>> db = sqlite3.connect("v2.sqlite")
        >>> _ = db.execute("PRAGMA user_version=2"); _ = db.execute("CREATE TABLE notes (k)")
        >>> db.close()
        >>> Notes("v2.sqlite")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: v2.sqlite: this notes cache has schema 2, not 1: ...
    """

    #: what the cache is called in messages (``verdict cache``)
    KIND: ClassVar[str]
    #: the schema version this TIAP writes (``PRAGMA user_version``)
    SCHEMA: ClassVar[int]
    TABLES: ClassVar[tuple[Table, ...]]
    #: the version of a file with tables but no version (written before caches had one)
    UNVERSIONED: ClassVar[int] = 1
    #: why a file of an older schema is not reused (a sentence, ending with a space)
    OLDER: ClassVar[str] = "its rows cannot be matched to the keys TIAP uses now. "
    #: how to give another file, and what then happens
    ELSEWHERE: ClassVar[str] = "pass another file"
    AGAIN: ClassVar[str] = "the work is then done again"
    #: ``PRAGMA page_size`` of a new file (``None``: SQLite's default)
    PAGE_SIZE: ClassVar[int | None] = None
    #: what :func:`merge_caches` calls the rows of the first table (``verdicts``)
    NOUN: ClassVar[str] = "rows"
    #: the column of the first table whose value two caches compare when merging
    COMPARE: ClassVar[str] = ""
    #: a folder :meth:`holds` takes for this kind (``an embedding cache folder``), if any
    FOLDER: ClassVar[str] = ""

    @classmethod
    def file_in(cls, path: str | Path) -> Path:
        """The cache file that ``path`` names (a kind named by its folder overrides this)."""
        return Path(path)

    @classmethod
    def holds(cls, path: str | Path) -> bool:
        """Whether ``path`` (a file, or a folder for a kind that has one) is a cache of this
        kind: its file has the first of :attr:`TABLES`. A file that is not SQLite is an
        error (:func:`tables_of`)."""
        file = cls.file_in(path)
        return file.is_file() and cls.TABLES[0].name in tables_of(file)

    @classmethod
    def open_at(cls, path: str | Path) -> Self:
        """The cache that ``path`` names, opened (created if absent) to merge into."""
        return cls(path)

    def merge_from(self, other: str | Path) -> dict[str, int]:
        """Add the rows of the first table of another cache of this kind that this one
        lacks (:meth:`merge_file`, on :attr:`COMPARE`)."""
        return self.merge_file(self.file_in(other), self.TABLES[0].name, self.COMPARE)

    def size(self) -> int:
        """How many rows the first table holds (what :func:`merge_caches` reports)."""
        return self.count_rows(self.TABLES[0].name)

    def __init__(self, path: str | Path | None) -> None:
        self.path = None if path is None else Path(path)
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise TiapError(f"cannot create the {self.KIND}'s folder ({exc})",
                                file=self.path.parent, code="cache") from None
        target = ":memory:" if self.path is None else str(self.path)
        try:
            self._db = sqlite3.connect(target, timeout=BUSY_TIMEOUT, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise self._error(f"cannot open the {self.KIND} ({exc})") from None
        try:
            if self.PAGE_SIZE is not None:  # takes effect on a new file only
                self._db.execute(f"PRAGMA page_size={self.PAGE_SIZE}")
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
            self.check(version, _tables(self._db), self.path)
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
            with self.transaction():
                for table in self.TABLES:
                    self._db.execute(table.create())
                self._db.execute(f"PRAGMA user_version={self.SCHEMA}")
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._error(f"cannot open the {self.KIND} ({exc})") from None
        except TiapError:
            self._db.close()
            raise

    # -- checks ------------------------------------------------------------------------

    @classmethod
    def check(cls, version: int, tables: set[str], path: Path | None) -> None:
        """Refuse (``error[cache]``) a file that holds another cache's tables or has
        another schema version; a file without tables is a new cache."""
        if not tables:
            return
        own = {t.name for t in cls.TABLES}
        if not tables <= own:
            raise TiapError(f"this file is not a TIAP {cls.KIND}: it holds the tables "
                            f"{', '.join(sorted(tables))}, not {', '.join(sorted(own))}. "
                            f"Give the {cls.KIND}'s own file", file=path, code="cache")
        old = version or cls.UNVERSIONED
        if old != cls.SCHEMA:
            raise TiapError(
                f"this {cls.KIND} has schema {old}, not {cls.SCHEMA}: "
                + (cls.OLDER if old < cls.SCHEMA else "it was written by a newer TIAP. ")
                + f"Move it away (or {cls.ELSEWHERE}) and run again; {cls.AGAIN}",
                file=path, code="cache")

    @classmethod
    def check_file(cls, path: str | Path) -> None:
        """Check, without writing to it, that ``path`` is a cache of this kind and schema."""
        path = Path(path)
        if not path.is_file():
            raise TiapError(f"no {cls.KIND} here", file=path, code="io")
        try:
            with contextlib.closing(_read_only(path)) as db:
                version = int(db.execute("PRAGMA user_version").fetchone()[0])
                tables = _tables(db)
        except sqlite3.DatabaseError as exc:
            raise TiapError(f"not a {cls.KIND} ({exc})", file=path, code="cache") from None
        cls.check(version, tables, path)

    def _error(self, message: str, **where: Any) -> TiapError:
        return TiapError(message, file=self.path, code="cache", **where)

    def _table(self, name: str) -> Table:
        return next(t for t in self.TABLES if t.name == name)

    # -- reading -----------------------------------------------------------------------

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._error(f"cannot read the {self.KIND} ({exc})") from None

    def lookup(self, table: str, key: Sequence[Any], columns: Sequence[str]
               ) -> tuple[Any, ...] | None:
        """The ``columns`` of the row with this key (one value per key column), or ``None``."""
        t = self._table(table)
        where = " AND ".join(f"{k} = ?" for k in t.key)
        rows = self._read(f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", tuple(key))
        return rows[0] if rows else None

    def lookup_in(self, table: str, columns: Sequence[str], fixed: Sequence[Any],
                  last: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        """The rows whose key starts with ``fixed`` and ends with any value of ``last``
        (asked :data:`CHUNK` values at a time); in no particular order."""
        t = self._table(table)
        *head, tail = t.key
        where = "".join(f"{k} = ? AND " for k in head[: len(fixed)])
        for i in range(0, len(last), CHUNK):
            chunk = tuple(last[i : i + CHUNK])
            marks = ",".join("?" * len(chunk))
            yield from self._read(f"SELECT {', '.join(columns)} FROM {table} "
                                  f"WHERE {where}{tail} IN ({marks})", (*fixed, *chunk))

    def scan(self, table: str, columns: Sequence[str], **equal: Any) -> Iterator[tuple[Any, ...]]:
        """Every row of ``table`` (those whose columns equal the given values)."""
        where = " AND ".join(f"{k} = ?" for k in equal)
        yield from self._read(f"SELECT {', '.join(columns)} FROM {table}"
                              + (f" WHERE {where}" if where else ""), tuple(equal.values()))

    def count_rows(self, table: str, **equal: Any) -> int:
        """How many rows ``table`` holds (of those whose columns equal the given values)."""
        where = " AND ".join(f"{k} = ?" for k in equal)
        return int(self._read(f"SELECT COUNT(*) FROM {table}"
                              + (f" WHERE {where}" if where else ""),
                              tuple(equal.values()))[0][0])

    # -- writing -----------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction: committed when the block ends, rolled back on an exception.
        Nested blocks join the outer one."""
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def store(self, table: str, rows: Iterable[Sequence[Any]], *, replace: bool = True) -> int:
        """Write whole rows (values in column order) in one transaction; a key already
        present is replaced (``replace``) or kept as it is. Returns how many rows were
        written."""
        t = self._table(table)
        marks = ", ".join("?" * len(t.columns))
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self.transaction():
            cur = self._db.executemany(
                f"{verb} INTO {table} ({', '.join(t.names)}) VALUES ({marks})", list(rows))
        return int(cur.rowcount)

    def remove(self, table: str, keys: Iterable[Sequence[Any]]) -> None:
        """Delete the rows of these keys, in one transaction."""
        t = self._table(table)
        where = " AND ".join(f"{k} = ?" for k in t.key)
        with self.transaction():
            self._db.executemany(f"DELETE FROM {table} WHERE {where}", list(keys))

    def merge_file(self, other: str | Path, table: str, compare: str) -> dict[str, int]:
        """Add every row of ``table`` of another file of this kind that this cache lacks,
        in one transaction. Returns ``{"added", "same", "differing"}``: rows new here,
        present with the same ``compare`` column, and present with another (this cache's
        row is kept)."""
        path = Path(other)
        type(self).check_file(path)
        t = self._table(table)
        on = " AND ".join(f"v.{k} = o.{k}" for k in t.key)
        cols = ", ".join(t.names)
        self._db.execute("ATTACH DATABASE ? AS other", (str(path),))
        try:
            try:
                same, differing = self._db.execute(
                    f"SELECT SUM(o.{compare} = v.{compare}), SUM(o.{compare} != v.{compare}) "
                    f"FROM other.{table} o JOIN main.{table} v ON {on}").fetchone()
            except sqlite3.DatabaseError as exc:
                raise TiapError(f"cannot read this {self.KIND} ({exc})", file=path,
                                code="cache") from None
            with self.transaction():
                added = self._db.execute(f"INSERT OR IGNORE INTO main.{table} ({cols}) "
                                         f"SELECT {cols} FROM other.{table}").rowcount
        finally:
            self._db.execute("DETACH DATABASE other")
        return {"added": int(added), "same": int(same or 0), "differing": int(differing or 0)}

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class CacheMerge:
    """What :func:`merge_caches` did: the kind merged, each source with its counts
    (``{"added", "same", "differing"}``, see :meth:`KeyedCache.merge_file`) and how many
    rows the receiving cache holds after.

    Example:
        >>> res = CacheMerge(KeyedCache, Path("a.sqlite"),
        ...                  ((Path("b.sqlite"), {"added": 2, "same": 1, "differing": 0}),), 5)
        >>> sum(n["added"] for _, n in res.merged), res.total
        (2, 5)
    """

    kind: type[KeyedCache]
    into: Path
    merged: tuple[tuple[Path, dict[str, int]], ...]
    total: int


def merge_caches(sources: Sequence[str | Path], into: str | Path,
                 kinds: Sequence[type[KeyedCache]]) -> CacheMerge:
    """Add to ``into`` every row it lacks from each source: caches of one kind, found among
    ``kinds`` (the first whose :meth:`KeyedCache.holds` takes the path). A key in both keeps
    ``into``'s row; one that differs is counted. ``into`` is created when absent.

    Refused before anything is merged (``error[usage]``): sources of several kinds, an
    ``into`` of another kind, a source that is ``into`` itself. A path of no kind is
    ``error[cache]``. Errors name ``into`` as the command does (``--into``) inside
    :func:`tiap.config.command_options`.

    Example:
        >>> class Notes(KeyedCache):
        ...     KIND, SCHEMA, NOUN, COMPARE = "notes cache", 1, "notes", "text"
        ...     TABLES = (Table("notes", ("key TEXT PRIMARY KEY", "text TEXT NOT NULL"),
        ...                     ("key",)),)
        >>> with Notes("a.sqlite") as a, Notes("b.sqlite") as b:
        ...     a.store("notes", [("k1", "one")])
        ...     b.store("notes", [("k1", "uno"), ("k2", "two")])
        1
        2
        >>> res = merge_caches(["b.sqlite"], "a.sqlite", [Notes])
        >>> res.merged[0][1], res.total
        ({'added': 1, 'same': 0, 'differing': 1}, 2)
        >>> merge_caches(["a.sqlite"], "a.sqlite", [Notes])
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: a.sqlite: a source is the into cache itself
    """
    from tiap.config import option_name

    srcs, target = [Path(s) for s in sources], Path(into)
    found = [_kind_of(s, kinds) for s in srcs]
    if len(set(found)) > 1:
        mixed = " and ".join(k.KIND.removesuffix(" cache") for k in kinds if k in found)
        raise TiapError(f"the sources mix {mixed} caches; merge each kind into its own "
                        f"{option_name('into')}", code="usage")
    if not found:
        raise TiapError("no source to merge", code="usage")
    kind = found[0]
    if ((target.is_file() or any(k.file_in(target).is_file() for k in kinds))
            and _kind_of(target, kinds) is not kind):
        article = "an" if kind.KIND[0] in "aeiou" else "a"
        raise TiapError(f"{option_name('into')} is not {article} {kind.KIND.removesuffix(' cache')}"
                        " cache", file=target, code="usage")
    merged: list[tuple[Path, dict[str, int]]] = []
    with kind.open_at(target) as cache:
        own = Path(str(cache.path)).resolve()
        for src in srcs:
            if kind.file_in(src).resolve() == own:
                raise TiapError(f"a source is the {option_name('into')} cache itself",
                                file=src, code="usage")
        for src in srcs:
            merged.append((src, cache.merge_from(src)))
        total = cache.size()
    return CacheMerge(kind, target, tuple(merged), total)


def _kind_of(path: Path, kinds: Sequence[type[KeyedCache]]) -> type[KeyedCache]:
    """The first of ``kinds`` that holds ``path``; else ``error[cache]`` naming it."""
    for kind in kinds:
        if kind.holds(path):
            return kind
    if path.is_dir():
        folders = [k.FOLDER for k in kinds if k.FOLDER]
        raise TiapError(f"neither {' nor '.join(folders)}" if len(folders) > 1
                        else f"not {folders[0] if folders else 'a cache folder'}",
                        file=path, code="cache")
    tables = " nor a ".join(k.TABLES[0].name for k in kinds)
    raise TiapError(f"not a TIAP cache (it has neither a {tables} table)" if len(kinds) > 1
                    else f"not a TIAP cache (it has no {tables} table)", file=path, code="cache")
