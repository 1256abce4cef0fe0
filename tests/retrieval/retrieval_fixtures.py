"""Small inline stores and queries for the retrieval tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tiap.retrieval.base import Retriever

# Two collections. Worked by hand for BM25 (Lucene variant, k1 = 1.5, b = 0.75) in
# test_retrieval_bm25.py. "c2" holds the same kayak text as "c1" so that isolation is visible:
# a query of c1 must never see c2:k.
ITEMS: list[dict[str, Any]] = [
    {"item_id": "c1:kayak", "kind": "raw", "sources": ["c1:1"], "collection": "c1",
     "text": "Kayaking on the lake"},
    {"item_id": "c1:trip-lake", "kind": "raw", "sources": ["c1:2"], "collection": "c1",
     "text": "A trip to the lake"},
    {"item_id": "c1:trip-city", "kind": "raw", "sources": ["c1:3"], "collection": "c1",
     "text": "Trip to the city"},
    {"item_id": "c1:trip-home", "kind": "raw", "sources": ["c1:4"], "collection": "c1",
     "text": "The trip home"},
    {"item_id": "c2:kayak", "kind": "raw", "sources": ["c2:1"], "collection": "c2",
     "text": "Kayaking on the lake"},
    {"item_id": "c2:run", "kind": "raw", "sources": ["c2:2"], "collection": "c2",
     "text": "I love running along the river every morning"},
    {"item_id": "c2:fact", "kind": "fact", "sources": ["c2:2"], "collection": "c2",
     "text": "The speaker runs by the river"},
]
QUERIES: list[dict[str, Any]] = [
    {"query_id": "q1", "question": "Who went kayaking on a trip?", "collection": "c1",
     "evidence": ["c1:1"]},
    {"query_id": "q2", "question": "Where does she run?", "collection": "c2",
     "evidence": ["c2:2"]},
    {"query_id": "q3", "question": "kayak", "collection": "c2", "evidence": ["c2:1"]},
]


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def make_store(folder: Path, items: Sequence[dict[str, Any]] = ITEMS,
               manifest: dict[str, Any] | None = None) -> Path:
    write_jsonl(folder / "items.jsonl", items)
    if manifest is not None:
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def make_queries(path: Path, queries: Sequence[dict[str, Any]] = QUERIES) -> Path:
    return write_jsonl(path, queries)


class CountingRetriever(Retriever):
    """Wraps a retriever, counts ``score`` calls, and can fail on the n-th call."""

    def __init__(self, inner: Retriever, *, fail_on: int | None = None,
                 exc: BaseException | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.fail_on = fail_on
        self.exc = exc if exc is not None else KeyboardInterrupt()

    def spec(self) -> dict[str, Any]:
        return self.inner.spec()

    def versions(self) -> dict[str, str]:
        return self.inner.versions()

    def prepare(self, texts: Sequence[str], progress: Any = None) -> None:
        self.inner.prepare(texts, progress)

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.fail_on is not None and self.calls == self.fail_on:
            raise self.exc
        return self.inner.score(docs, queries)
