"""The one keyed SQLite cache (:mod:`tiap.cache`) that the verdict, LLM parser and embedding
caches specialise: one cache folder, one opening policy, one schema and kind check, atomic
batches; and the files the three caches wrote before stay readable."""

from __future__ import annotations

import ast
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tiap
from tiap.audit.labels import Verdict
from tiap.audit.run import VerdictCache
from tiap.cache import KeyedCache, Table, cache_dir
from tiap.datasets.files import DataSource
from tiap.errors import TiapError
from tiap.memory.llm_parser import LlmCache, default_cache_path
from tiap.retrieval.cache import EmbeddingCache, text_key

SRC = Path(tiap.__file__).parent

# The CREATE statements and version each cache wrote before tiap.cache existed (copied
# from the code of that time), to build files "written by the previous TIAP".
OLD_VERDICTS = (2, [
    ("CREATE TABLE verdicts (request_key TEXT PRIMARY KEY, judge TEXT NOT NULL, "
     "case_id TEXT NOT NULL, label TEXT NOT NULL, request TEXT NOT NULL, "
     "verdict TEXT NOT NULL, timing TEXT NOT NULL, created TEXT NOT NULL)"),
    ("CREATE TABLE failures (request_key TEXT PRIMARY KEY, judge TEXT NOT NULL, "
     "case_id TEXT NOT NULL, reason TEXT NOT NULL, created TEXT NOT NULL)")])
OLD_FACTS = (2, [
    ("CREATE TABLE facts (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
     "prompt_version TEXT NOT NULL, unit_id TEXT, status TEXT NOT NULL, "
     "facts TEXT NOT NULL, detail TEXT, created TEXT NOT NULL)"),
    ("CREATE TABLE failures (key TEXT PRIMARY KEY, unit_id TEXT, "
     "reason TEXT NOT NULL, body TEXT, created TEXT NOT NULL)")])
OLD_VECTORS = (0, [("CREATE TABLE vectors (model TEXT NOT NULL, key TEXT NOT NULL, "
                    "dim INTEGER NOT NULL, vec BLOB NOT NULL, UNIQUE (model, key))")])


def _old_file(path: Path, schema: tuple[int, list[str]], rows: list[str] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    for sql in schema[1] + list(rows):
        db.execute(sql)
    db.execute(f"PRAGMA user_version={schema[0]}")
    db.commit()
    db.close()
    return path


def _version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


#: (name, how to open a file as that cache, the file's name, the old schema)
KINDS: list[tuple[str, Callable[[Path], KeyedCache], str, tuple[int, list[str]]]] = [
    ("verdict", VerdictCache, "v.sqlite", OLD_VERDICTS),
    ("llm", LlmCache, "llm.sqlite", OLD_FACTS),
    ("embedding", lambda p: EmbeddingCache(p.parent), "embeddings.sqlite3", OLD_VECTORS),
]


# -- the cache folder --------------------------------------------------------------------


def test_one_lookup_of_the_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIAP_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    assert cache_dir("embeddings") == tmp_path / "embeddings"
    assert DataSource(tmp_path).cache_dir == tmp_path
    assert default_cache_path() == tmp_path / "llm" / "parser-cache.sqlite"
    monkeypatch.delenv("TIAP_CACHE")
    assert cache_dir("models") == Path.home() / ".cache" / "tiap" / "models"
    assert DataSource(tmp_path).cache_dir == Path.home() / ".cache" / "tiap"


def test_only_tiap_cache_reads_the_variable() -> None:
    """No module but tiap/cache.py names the variable ``TIAP_CACHE`` as a string of its own
    (what ``os.environ.get`` and ``os.getenv`` are given; texts that mention it are longer)."""
    readers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                     if any(isinstance(n, ast.Constant) and n.value == "TIAP_CACHE"
                            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))))
    assert readers == ["cache.py"]


# -- opening: one policy -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
def test_every_cache_opens_with_the_one_policy(tmp_path: Path, kind) -> None:
    _, open_it, name, _ = kind
    with open_it(tmp_path / name) as cache:
        db = cache._db
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 60000
        assert db.execute("PRAGMA user_version").fetchone()[0] == cache.SCHEMA


# -- checks: another kind, another version, not SQLite ------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
def test_a_file_of_another_cache_is_refused(tmp_path: Path, kind) -> None:
    """Every other cache's file given where this one is expected: error[cache] naming it,
    and the file is left as it was (no table of this cache added to it)."""
    name, open_it, fname, _ = kind
    for other, other_open, _, _ in KINDS:
        if other == name:
            continue
        # an embedding cache is named by its folder: its file name is fixed
        path = tmp_path / other / ("embeddings.sqlite3" if "embedding" in (name, other)
                                   else fname)
        other_open(path).close()
        before = path.read_bytes()
        with pytest.raises(TiapError, match="is not a TIAP") as err:
            open_it(path)
        assert err.value.code == "cache" and str(path) in str(err.value)
        assert path.read_bytes() == before


@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
def test_a_newer_schema_is_refused(tmp_path: Path, kind) -> None:
    _, open_it, name, old = kind
    path = _old_file(tmp_path / name, (99, old[1]))
    with pytest.raises(TiapError, match="schema 99, not .*written by a newer TIAP") as err:
        open_it(path)
    assert err.value.code == "cache" and str(path) in str(err.value)
    assert _version(path) == 99  # untouched


@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
def test_a_file_that_is_not_sqlite_is_a_located_cache_error(tmp_path: Path, kind) -> None:
    _, open_it, name, _ = kind
    path = tmp_path / name
    path.write_bytes(b"this is not a database, only text\n" * 40)
    with pytest.raises(TiapError) as err:
        open_it(path)
    assert err.value.code == "cache" and str(path) in str(err.value)


def test_merging_a_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    VerdictCache(tmp_path / "v.sqlite").close()
    with EmbeddingCache(tmp_path / "e") as emb, pytest.raises(TiapError) as err:
        emb.merge_from(tmp_path / "v.sqlite")
    assert err.value.code == "cache" and "not a TIAP embedding cache" in str(err.value)
    with VerdictCache(tmp_path / "w.sqlite") as v, pytest.raises(TiapError) as err:
        v.merge_from(tmp_path / "e" / "embeddings.sqlite3")
    assert err.value.code == "cache" and "not a TIAP verdict cache" in str(err.value)


# -- files written before tiap.cache stay readable -----------------------------------------


def test_an_old_verdict_cache_is_read_as_it_was(tmp_path: Path) -> None:
    path = _old_file(tmp_path / "v.sqlite", OLD_VERDICTS, [
        ("INSERT INTO verdicts VALUES ('k1', 'lexical', 'c1', 'supports', '{\"q\": 1}', "
         "'{\"label\": \"supports\", \"score\": 0.5}', '{\"seconds\": 1}', '2026-01-01')"),
        "INSERT INTO failures VALUES ('k2', 'openai', 'c2', 'not JSON', '2026-01-01')"])
    with VerdictCache(path) as cache:
        verdict, timing, case = cache.get("k1")
        assert (verdict.label, verdict.score, timing, case) == ("supports", 0.5,
                                                                {"seconds": 1}, "c1")
        assert cache.request("k1") == {"q": 1}
        assert cache.failed("k2") and not cache.failed("k1")
        assert len(cache) == 1 and cache.case_ids("lexical") == {"c1"}
        cache.put("k2", judge="openai", case_id="c2", request={"q": 2},
                  verdict=Verdict(label="partial"), timing={})
        assert not cache.failed("k2") and len(cache) == 2  # a verdict clears the failure


def test_an_old_parser_cache_is_read_as_it_was(tmp_path: Path) -> None:
    path = _old_file(tmp_path / "p.sqlite", OLD_FACTS, [
        ("INSERT INTO facts VALUES ('k1', 'm', 'tiap-facts-v2', 'c1:D1:1', 'ok', "
         "'[\"Ann likes tea.\"]', NULL, '2026-01-01')"),
        "INSERT INTO failures VALUES ('k2', 'c1:D1:2', 'not JSON', '<html>', '2026-01-01')"])
    with LlmCache(path) as cache:
        assert cache.get("k1") == ["Ann likes tea."] and cache.get("k2") is None
        assert cache.failed("k2") and len(cache) == 1
        cache.put("k2", model="m", unit_id="c1:D1:2", facts=["Bo runs."])
        assert cache.get("k2") == ["Bo runs."] and not cache.failed("k2")


def test_an_unversioned_embedding_cache_is_read_and_stamped(tmp_path: Path) -> None:
    """An embedding cache of TIAP before versions (user_version 0) is schema 1: its vectors
    are served, and opening it for writing records the version."""
    vec = np.arange(3, dtype=np.float32)
    key = text_key("hello")
    path = _old_file(tmp_path / "e" / "embeddings.sqlite3", OLD_VECTORS)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO vectors VALUES (?, ?, ?, ?)", ("m", key, 3, vec.tobytes()))
    db.commit()
    db.close()
    with EmbeddingCache(tmp_path / "e") as cache:
        np.testing.assert_array_equal(cache.get("m", [key]), vec[None, :])
        assert cache.missing("m", [key, text_key("x")]) == [text_key("x")]
    assert _version(path) == 1


# -- writing: one transaction per batch ----------------------------------------------------


class _Notes(KeyedCache):
    KIND, SCHEMA = "notes cache", 1
    TABLES = (Table("notes", ("key TEXT PRIMARY KEY", "text TEXT NOT NULL"), ("key",)),)


def test_a_batch_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    with _Notes(tmp_path / "n.sqlite") as notes:
        notes.store("notes", [("a", "kept")])
        with pytest.raises(sqlite3.IntegrityError):  # the second row breaks NOT NULL
            notes.store("notes", [("b", "first"), ("c", None)])
        assert notes.count_rows("notes") == 1 and notes.lookup("notes", ("b",), ("text",)) is None
        with pytest.raises(RuntimeError), notes.transaction():
            notes.store("notes", [("d", "inside")])
            raise RuntimeError("stop")
        assert sorted(notes.scan("notes", ("key",))) == [("a",)]
        assert notes.store("notes", [("a", "other"), ("e", "new")], replace=False) == 1
        assert notes.lookup("notes", ("a",), ("text",)) == ("kept",)
    with _Notes(tmp_path / "n.sqlite") as again:  # committed rows are in the file
        assert dict(again.scan("notes", ("key", "text"))) == {"a": "kept", "e": "new"}
