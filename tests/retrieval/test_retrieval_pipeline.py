"""retrieve(): collections, the trace and its TREC twin, resuming, and bad-input messages."""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from retrieval_fixtures import (
    ITEMS,
    QUERIES,
    CountingRetriever,
    make_queries,
    make_store,
    write_jsonl,
)

from tiap.errors import TiapError
from tiap.io import sha256_file
from tiap.memory.store import Store, read_store
from tiap.retrieval import (
    BM25Retriever,
    HybridRetriever,
    Retriever,
    default_work_dir,
    retrieve,
)
from tiap.retrieval.retrieve import trec_path_for
from tiap.runs import read_run

# the module (tiap.retrieval.retrieve is also the name of the function)
retrieve_module = importlib.import_module("tiap.retrieval.retrieve")
COLLECTION = {r["item_id"]: r["collection"] for r in ITEMS}


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    store = make_store(tmp_path / "store", manifest={"dataset": "toy", "parser": "raw"})
    return store, make_queries(tmp_path / "queries.jsonl")


def trace_rows(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    return lines[0], lines[1:]


def test_trace_header_rows_and_trec_run(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, queries = inputs
    out = tmp_path / "runs" / "bm25.jsonl"
    res = retrieve(store, queries, BM25Retriever(), out, depth=60)
    header, rows = trace_rows(out)
    assert header["tiap_trace"] == 1 and header["schema_version"] == 1
    assert header["dataset"] == "toy" and header["k"] == 60 and header["system"] == "bm25"
    assert header["store"]["items_sha256"] == sha256_file(store / "items.jsonl")
    assert header["store"]["manifest_sha256"] == sha256_file(store / "manifest.json")
    assert header["store"]["kinds"] == {"fact": 1, "raw": 6}
    assert header["queries"]["sha256"] == sha256_file(queries)
    assert header["queries"]["collections"] == 2
    assert header["retriever"] == BM25Retriever().spec()
    assert "bm25s" in header["versions"] and "PyStemmer" in header["versions"]
    assert "created" not in header  # no timestamp: reruns are byte-identical
    # One row per query, in the queries file's order; rankings worked by hand in
    # test_retrieval_bm25.py.
    assert [r["query_id"] for r in rows] == ["q1", "q2", "q3"]
    assert rows[0]["ranking"] == ["c1:kayak", "c1:trip-lake", "c1:trip-city", "c1:trip-home"]
    assert rows[1]["ranking"] == ["c2:fact", "c2:run"]
    assert set(rows[0]) == {"query_id", "system", "ranking", "scores"}
    assert len(rows[0]["scores"]) == 4
    # The TREC run sits next to the trace and holds the same order.
    assert res.trec_path == tmp_path / "runs" / "bm25.trec"
    trec = read_run(res.trec_path)[0]
    assert {r.query_id: r.item_ids for r in trec.rankings} == {
        r["query_id"]: tuple(r["ranking"]) for r in rows}
    # read_run reads the trace itself, header and all.
    [run] = read_run(out)
    assert run.rankings == res.run.rankings and run.header == header
    assert not default_work_dir(out).exists()


def test_never_ranks_another_collections_item(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    # c1 and c2 both hold "Kayaking on the lake"; q3 (collection c2) must only see c2's copy.
    store, queries = inputs
    res = retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    assert res.run.ranking("q3").item_ids == ("c2:kayak",)
    for r in res.run.rankings:
        qcoll = next(q["collection"] for q in QUERIES if q["query_id"] == r.query_id)
        assert {COLLECTION[i] for i in r.item_ids} <= {qcoll}


def test_reruns_are_byte_identical(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, queries = inputs
    retrieve(store, queries, BM25Retriever(), tmp_path / "a.jsonl")
    retrieve(store, queries, BM25Retriever(), tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.trec").read_bytes() == (tmp_path / "b.trec").read_bytes()


def test_system_name_depth_and_gzip(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, queries = inputs
    out = tmp_path / "lex.jsonl.gz"
    res = retrieve(store, queries, BM25Retriever(), out, depth=2, system="lexical")
    assert res.trec_path == tmp_path / "lex.trec.gz"
    [run] = read_run(out)
    assert run.system == "lexical" and run.header is not None and run.header["k"] == 2
    assert max(r.depth for r in run.rankings) == 2
    assert read_run(res.trec_path)[0].system == "lexical"
    # q1 and q2 fill the depth of 2; q3 retrieves one item only.
    assert res.short == 1 and res.empty == ()


class IndexScorer(Retriever):
    """Scores item i as i: the reverse of the store order (for fusion checked by hand)."""

    name = "index"

    def spec(self) -> dict[str, Any]:
        return {"name": self.name}

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        return np.tile(np.arange(len(docs), dtype=float), (len(queries), 1))


def test_hybrid_fuses_by_reciprocal_rank(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    # q1 in c1 (items 0 kayak, 1 trip-lake, 2 trip-city, 3 trip-home):
    #   BM25 ranks 0, 1, 2, 3; IndexScorer ranks 3, 2, 1, 0. With k = 60:
    #   item 0: 1/61 + 1/64 = 0.032018   item 3: 1/64 + 1/61 (the same)
    #   item 1: 1/62 + 1/63 = 0.032002   item 2: 1/63 + 1/62 (the same)
    #   -> 0, 3 (tie, store order), then 1, 2.
    store, queries = inputs
    hybrid = HybridRetriever([BM25Retriever(), IndexScorer()], rrf_k=60)
    res = retrieve(store, queries, hybrid, tmp_path / "hybrid.jsonl")
    r = res.run.ranking("q1")
    assert r.item_ids == ("c1:kayak", "c1:trip-home", "c1:trip-lake", "c1:trip-city")
    assert r.scores == pytest.approx([1 / 61 + 1 / 64] * 2 + [1 / 62 + 1 / 63] * 2)
    spec = res.header["retriever"]
    assert spec["name"] == "hybrid" and spec["rrf_k"] == 60 and spec["fusion"] == "rrf"
    assert [c["name"] for c in spec["components"]] == ["bm25", "index"]
    assert res.run.system == "hybrid"


def test_empty_ranking_stays_in_the_trace_but_not_in_trec(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    queries = make_queries(tmp_path / "q.jsonl", [
        {"query_id": "stop", "question": "to be or not to be", "collection": "c1"},
        {"query_id": "ok", "question": "kayak", "collection": "c1"},
    ])
    res = retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    assert res.empty == ("stop",)
    _, rows = trace_rows(tmp_path / "bm25.jsonl")
    assert rows[0] == {"query_id": "stop", "system": "bm25", "ranking": [], "scores": []}
    assert read_run(res.trec_path)[0].query_ids == ("ok",)


# --------------------------------------------------------------------------------------------
# Resuming
# --------------------------------------------------------------------------------------------


def test_an_interrupted_run_resumes_from_finished_collections(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    store, queries = inputs
    reference = tmp_path / "ref.jsonl"
    retrieve(store, queries, BM25Retriever(), reference)

    out = tmp_path / "runs" / "bm25.jsonl"
    broken = CountingRetriever(BM25Retriever(), fail_on=2)  # Ctrl-C in the second collection
    with pytest.raises(KeyboardInterrupt):
        retrieve(store, queries, broken, out)
    work = default_work_dir(out)
    assert not out.exists() and not trec_path_for(out).exists()
    assert len(list(work.glob("*.part.jsonl"))) == 1  # c1 finished, c2 did not

    again = CountingRetriever(BM25Retriever())
    res = retrieve(store, queries, again, out)
    assert again.calls == 1  # only c2 is ranked again
    assert res.resumed == 1 and res.collections == 2
    assert out.read_bytes() == reference.read_bytes()
    assert not work.exists()  # cleaned up once the trace is written


def test_partial_results_of_another_configuration_are_discarded(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    store, queries = inputs
    out = tmp_path / "bm25.jsonl"
    with pytest.raises(KeyboardInterrupt):
        retrieve(store, queries, CountingRetriever(BM25Retriever(), fail_on=2), out)
    again = CountingRetriever(BM25Retriever(k1=0.9))  # another setting: nothing is reused
    res = retrieve(store, queries, again, out)
    assert again.calls == 2 and res.resumed == 0 and res.discarded == 1
    assert res.header["retriever"]["k1"] == 0.9


def test_a_damaged_part_is_ranked_again(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, queries = inputs
    out = tmp_path / "bm25.jsonl"
    with pytest.raises(KeyboardInterrupt):
        retrieve(store, queries, CountingRetriever(BM25Retriever(), fail_on=2), out)
    [part] = default_work_dir(out).glob("*.part.jsonl")
    part.write_text('{"query_id": "q1", "sys', encoding="utf-8")
    again = CountingRetriever(BM25Retriever())
    res = retrieve(store, queries, again, out)
    assert again.calls == 2 and res.resumed == 0
    assert res.run.ranking("q1").item_ids[0] == "c1:kayak"


def test_finished_collections_are_saved_every_save_every_seconds(
    inputs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SAVE_EVERY = 0: each collection is saved as soon as it is ranked, so a run killed
    # (no chance to save) while ranking the second collection has the first one on disk.
    store, queries = inputs
    out = tmp_path / "bm25.jsonl"
    seen: list[int] = []

    class Watching(CountingRetriever):
        def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
            seen.append(len(list(default_work_dir(out).glob("*.part.jsonl"))))
            return super().score(docs, queries)

    monkeypatch.setattr(retrieve_module, "SAVE_EVERY", 0.0)
    retrieve(store, queries, Watching(BM25Retriever()), out)
    assert seen == [0, 1]
    monkeypatch.setattr(retrieve_module, "SAVE_EVERY", 1e9)  # only at the end: no part
    seen.clear()
    retrieve(store, queries, Watching(BM25Retriever()), tmp_path / "again.jsonl")
    assert seen == [0, 0]


def test_a_store_already_read_gives_the_same_trace(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    store, queries = inputs
    retrieve(store, queries, BM25Retriever(), tmp_path / "a" / "bm25.jsonl")
    read = read_store(store / "items.jsonl")
    res = retrieve(read, queries, BM25Retriever(), tmp_path / "b" / "bm25.jsonl")
    assert res.header["store"]["items_sha256"] == sha256_file(store / "items.jsonl")
    for name in ("bm25.jsonl", "bm25.trec"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
    unread = Store("f5", read.items)  # made in memory: no file to hash
    with pytest.raises(TiapError, match="was not read from a file"):
        retrieve(unread, queries, BM25Retriever(), tmp_path / "c.jsonl")


def test_a_custom_work_folder(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, queries = inputs
    work = tmp_path / "scratch"
    with pytest.raises(RuntimeError):
        retrieve(store, queries, CountingRetriever(BM25Retriever(), fail_on=2,
                                                   exc=RuntimeError("boom")),
                 tmp_path / "bm25.jsonl", work_dir=work)
    assert len(list(work.glob("*.part.jsonl"))) == 1
    res = retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl", work_dir=work)
    assert res.resumed == 1 and not work.exists()


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def messages(exc: pytest.ExceptionInfo[TiapError]) -> str:
    return "\n".join(str(p) for p in exc.value.problems)


def test_a_query_whose_collection_has_no_items(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = inputs
    queries = make_queries(tmp_path / "q.jsonl", [
        *QUERIES, {"query_id": "q9", "question": "anything", "collection": "c9"}])
    with pytest.raises(TiapError) as exc:
        retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    text = messages(exc)
    assert "empty collection" in text and "'c9'" in text and "query q9" in text
    assert str(queries) in text


def test_queries_of_another_dataset(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = inputs
    queries = make_queries(tmp_path / "q.jsonl", [
        {"query_id": "conv-26:q0", "question": "When?", "collection": "conv-26"},
        {"query_id": "conv-30:q0", "question": "Where?", "collection": "conv-30"},
    ])
    with pytest.raises(TiapError) as exc:
        retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    text = messages(exc)
    assert "another dataset than the store" in text
    assert "'conv-26'" in text and "'c1'" in text and "store: toy" in text


def test_manifests_naming_different_datasets(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = inputs
    queries = make_queries(tmp_path / "export" / "queries.jsonl")
    (tmp_path / "export" / "manifest.json").write_text(json.dumps({"dataset": "locomo"}))
    with pytest.raises(TiapError, match="dataset 'locomo' but the store .* 'toy'"):
        retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")


def test_items_without_text_and_queries_without_question(tmp_path: Path) -> None:
    items = [dict(ITEMS[0]), {k: v for k, v in ITEMS[1].items() if k != "text"}]
    store = make_store(tmp_path / "store", items)
    queries = make_queries(tmp_path / "q.jsonl", [
        {"query_id": "q1", "question": "kayak", "collection": "c1"},
        {"query_id": "q2", "question": "  ", "collection": "c1"},
    ])
    with pytest.raises(TiapError) as exc:
        retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    text = messages(exc)
    assert "record c1:trip-lake: the item has no 'text'" in text
    assert "query q2: the query has no question text" in text


@pytest.mark.parametrize("case", ["no store", "no items", "out is a folder", "out is trec",
                                  "depth 0", "system with space"])
def test_unusable_paths_and_settings(inputs: tuple[Path, Path], tmp_path: Path,
                                     case: str) -> None:
    store, queries = inputs
    out = tmp_path / "bm25.jsonl"
    kwargs: dict[str, Any] = {}
    expected = {
        "no store": "store not found",
        "no items": "not a store: no items.jsonl",
        "out is a folder": "--out is a folder",
        "out is trec": "the TREC run is written next to it",
        "depth 0": "at least 1",
        "system with space": "without whitespace",
    }[case]
    if case == "no store":
        store = tmp_path / "nowhere"
    elif case == "no items":
        store = tmp_path / "empty"
        store.mkdir()
    elif case == "out is a folder":
        out = tmp_path
    elif case == "out is trec":
        out = tmp_path / "bm25.trec"
    elif case == "depth 0":
        kwargs["depth"] = 0
    else:
        kwargs["system"] = "my bm25"
    with pytest.raises(TiapError, match=expected):
        retrieve(store, queries, BM25Retriever(), out, **kwargs)


def test_a_store_may_be_given_as_its_items_file(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    queries = write_jsonl(tmp_path / "q.jsonl", QUERIES[:1])
    res = retrieve(store / "items.jsonl", queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    assert res.header["dataset"] is None and res.header["store"]["manifest_sha256"] is None


def test_a_built_store_manifest(tmp_path: Path) -> None:
    # tiap build-store's manifest: "dataset" is an object; a store built for some
    # collections only says so, and the error about the others points at it.
    manifest = {"dataset": {"id": "toy", "collections": ["c1"]},
                "parser": {"name": "heuristic", "args": {"max_facts": 5}}, "seed": 1337}
    store = make_store(tmp_path / "store", [r for r in ITEMS if r["collection"] == "c1"],
                       manifest=manifest)
    queries = make_queries(tmp_path / "q.jsonl")
    with pytest.raises(TiapError) as exc:
        retrieve(store, queries, BM25Retriever(), tmp_path / "bm25.jsonl")
    text = messages(exc)
    assert "empty collection: the store has no items in collection 'c2' (2 queries ask it)" in text
    assert "the store was built only for the collections 'c1'; rank the queries" in text
    res = retrieve(store, make_queries(tmp_path / "q1.jsonl", QUERIES[:1]), BM25Retriever(),
                   tmp_path / "bm25.jsonl")
    assert res.header["dataset"] == "toy"
    assert res.header["store"]["parser"] == manifest["parser"]
    assert res.header["store"]["seed"] == 1337
