"""Dense retrieval with the bundled all-MiniLM-L6-v2 on a small real LoCoMo slice.

The slice is the first 40 turns of conv-26 (raw items) and the conv-26 questions whose
evidence lies in them; encoding it takes about a second on a laptop CPU, loading the model
a few seconds (once per module).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.progress import Progress

from tiap.datasets import load
from tiap.errors import MissingExtraError
from tiap.memory.store import Item, write_items
from tiap.retrieval import (
    BM25Retriever,
    DenseRetriever,
    EmbeddingCache,
    Encoder,
    HybridRetriever,
    SentenceTransformerEncoder,
    make_retriever,
    retrieve,
)
from tiap.retrieval.cache import text_key
from tiap.runs import read_run

N_TURNS = 40


@pytest.fixture(scope="module")
def slice_(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bundle = next(load("locomo", data_dir).bundles())
    assert bundle.collection.collection_id == "conv-26"
    turns = bundle.turns[:N_TURNS]
    units = {t.unit_id for t in turns}
    raw = [Item(t.unit_id, "raw", (t.unit_id,), text=f"{t.speaker}: {t.text}",
                collection=t.collection_id) for t in turns]
    derived = [Item(m.item_id, m.kind, m.sources, text=m.text, collection=m.collection_id)
               for m in bundle.memories if m.sources and set(m.sources) <= units]
    queries = [q for q in bundle.queries if q.evidence and set(q.evidence) <= units]
    root = tmp_path_factory.mktemp("slice")
    (root / "raw").mkdir()
    write_items(root / "raw" / "items.jsonl", raw)
    (root / "raw" / "manifest.json").write_text(json.dumps({"dataset": "locomo"}))
    (root / "dense").mkdir()
    write_items(root / "dense" / "items.jsonl", raw + derived)
    qpath = root / "queries.jsonl"
    qpath.write_text("".join(json.dumps(q.to_json()) + "\n" for q in queries))
    return {"root": root, "raw": raw, "derived": derived, "queries": queries, "qpath": qpath}


@pytest.fixture(scope="module")
def encoder() -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(batch_size=16)


class Counting(Encoder):
    """Counts the texts it is asked to encode; raises on the n-th batch if told to."""

    def __init__(self, inner: Encoder, fail_on_batch: int | None = None) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.batch_size = inner.batch_size
        self.texts = 0
        self.batches = 0
        self.fail_on_batch = fail_on_batch

    @property
    def cache_id(self) -> str:
        return self.inner.cache_id

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.batches += 1
        if self.batches == self.fail_on_batch:
            raise KeyboardInterrupt
        self.texts += len(texts)
        return self.inner.encode(texts)

    def spec(self) -> dict[str, Any]:
        return self.inner.spec()

    def versions(self) -> dict[str, str]:
        return self.inner.versions()


def test_dense_ranks_real_turns_and_reuses_the_cache(
    slice_: dict[str, Any], encoder: SentenceTransformerEncoder, tmp_path: Path
) -> None:
    cache_dir = tmp_path / "cache"
    n_texts = len({it.text for it in slice_["raw"]} | {q.question for q in slice_["queries"]})
    assert len(slice_["queries"]) >= 5

    first = Counting(encoder)
    with EmbeddingCache(cache_dir) as cache:
        d1 = DenseRetriever(first, cache)
        res = retrieve(slice_["root"] / "raw", slice_["qpath"], d1, tmp_path / "dense.jsonl")
        assert cache.count(encoder.cache_id) == n_texts
    assert first.texts == n_texts  # every distinct text encoded once
    assert (d1.cache_hits, d1.encoded) == (0, n_texts)  # what tiap audit-run logs

    # conv-26:q0 "When did Caroline go to the LGBTQ support group?" -> D1:3, Caroline: "I went
    # to a LGBTQ support group yesterday and it was so powerful."
    r = res.run.ranking("conv-26:q0")
    assert "conv-26:D1:3" in r.item_ids[:3]
    assert len(r.item_ids) == N_TURNS  # dense retrieves every item of the collection
    assert r.scores is not None and all(-1.0 <= s <= 1.0 + 1e-6 for s in r.scores)
    assert list(r.scores) == sorted(r.scores, reverse=True)
    spec = res.header["retriever"]
    assert spec["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert spec["similarity"] == "cosine" and spec["normalize"] and spec["max_seq_length"] == 256
    assert "torch" in res.header["versions"]

    # A second run on the same cache encodes nothing, and never even loads a model.
    cold = SentenceTransformerEncoder(batch_size=16)
    second = Counting(cold)
    with EmbeddingCache(cache_dir) as cache:
        d2 = DenseRetriever(second, cache)
        res2 = retrieve(slice_["root"] / "raw", slice_["qpath"], d2, tmp_path / "dense2.jsonl")
    assert second.texts == 0 and not cold.loaded
    assert (d2.cache_hits, d2.encoded) == (n_texts, 0)
    assert (tmp_path / "dense2.jsonl").read_bytes() == (tmp_path / "dense.jsonl").read_bytes()
    assert read_run(tmp_path / "dense2.jsonl")[0].rankings == res2.run.rankings

    # A denser store shares the raw turns' vectors: only the derived texts are new.
    third = Counting(encoder)
    with EmbeddingCache(cache_dir) as cache, Progress(disable=True) as progress:
        d3 = DenseRetriever(third, cache)
        retrieve(slice_["root"] / "dense", slice_["qpath"], d3, tmp_path / "dense3.jsonl",
                 progress=progress)
    n_derived = len({m.text for m in slice_["derived"]})
    assert slice_["derived"] and third.texts == n_derived
    assert (d3.cache_hits, d3.encoded) == (n_texts, n_derived)

    # Hybrid on the same cache: no encoding; RRF still puts the evidence near the top.
    fourth = Counting(encoder)
    with EmbeddingCache(cache_dir) as cache:
        hybrid = HybridRetriever([BM25Retriever(), DenseRetriever(fourth, cache)])
        res4 = retrieve(slice_["root"] / "raw", slice_["qpath"], hybrid, tmp_path / "h.jsonl")
    assert fourth.texts == 0
    assert "conv-26:D1:3" in res4.run.ranking("conv-26:q0").item_ids[:3]


def test_an_interrupted_encoding_keeps_finished_batches(
    slice_: dict[str, Any], encoder: SentenceTransformerEncoder, tmp_path: Path
) -> None:
    texts = [it.text or "" for it in slice_["raw"]]
    cache_dir = tmp_path / "cache"
    with EmbeddingCache(cache_dir) as cache:
        broken = Counting(encoder, fail_on_batch=2)
        with pytest.raises(KeyboardInterrupt):
            DenseRetriever(broken, cache).prepare(texts)
        assert cache.count(encoder.cache_id) == encoder.batch_size  # batch 1 was committed
    with EmbeddingCache(cache_dir) as cache:
        again = Counting(encoder)
        dense = DenseRetriever(again, cache)
        vecs = dense.embed(texts)
    assert again.texts == len(set(texts)) - encoder.batch_size
    assert vecs.shape == (len(texts), 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # The same text gives the same vector whether it came from the first or the second run.
    direct = encoder.encode(texts[:3])
    assert np.allclose(vecs[:3], direct, atol=1e-5)


def test_cache_keys_are_model_and_text_hash(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cache.put("m1", [text_key("a"), text_key("b")], np.eye(2, dtype=np.float32))
        cache.put("m1", [text_key("a")], np.array([[0.0, 1.0]], dtype=np.float32))  # kept as is
        assert cache.missing("m1", [text_key("b"), text_key("c"), text_key("c")]) == [
            text_key("c")]
        assert cache.missing("m2", [text_key("a")]) == [text_key("a")]  # another model
        got = cache.get("m1", [text_key("b"), text_key("a"), text_key("b")])
        assert got.tolist() == [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
        with pytest.raises(KeyError):
            cache.get("m1", [text_key("c")])
    with EmbeddingCache(tmp_path) as reopened:  # persisted
        assert reopened.count("m1") == 2 and reopened.count() == 2
    with EmbeddingCache(None) as memory:  # in memory only: nothing on disk
        memory.put("m", [text_key("x")], np.ones((1, 3)))
        assert memory.count() == 1 and memory.path is None


def test_unknown_model_and_missing_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tiap.errors import TiapError

    with pytest.raises(TiapError, match="unknown embedding model 'no-such-model'"):
        make_retriever("dense", model="no-such-model", cache_dir=tmp_path)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[dense\]'"):
        make_retriever("dense", cache_dir=tmp_path)
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[dense\]'"):
        make_retriever("hybrid", cache_dir=tmp_path)
