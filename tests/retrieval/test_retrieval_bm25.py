"""BM25 (bm25s, Lucene variant, Snowball English stemmer, "en" stopwords), worked by hand."""

from __future__ import annotations

import math
import pickle
import random
import sys

import pytest
from retrieval_fixtures import ITEMS

from tiap.datasets.records import Query
from tiap.errors import MissingExtraError
from tiap.memory.store import Item, item_from_json
from tiap.retrieval import BM25Retriever, rank_collection
from tiap.retrieval.bm25 import score_bm25s

K1, B = 1.5, 0.75


def items_of(collection: str) -> list[Item]:
    return [item_from_json(r) for r in ITEMS if r["collection"] == collection]


def query(qid: str, text: str, collection: str = "c1") -> Query:
    return Query(query_id=qid, collection_id=collection, question=text, answer=None,
                 category="", evidence=())


def idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def tfc(tf: int, dl: float, avgdl: float) -> float:
    return tf / (tf + K1 * (1 - B + B * dl / avgdl))


def test_the_item_sharing_the_rare_stemmed_term_ranks_first() -> None:
    # Collection c1 after lower-casing, stopwords (on, the, to) and 1-letter tokens (a) go,
    # and stemming:  kayak: [kayak, lake]  trip-lake: [trip, lake]  trip-city: [trip, citi]
    # trip-home: [trip, home].  N = 4, every |d| = 2 = avgdl, so tfc(1) = 1 / 2.5 = 0.4.
    # Query "Who went kayaking on a trip?" -> [who, went, kayak, trip]; who/went are unknown.
    #   kayak (df 1): idf = ln(1 + 3.5/1.5) = 1.20397 -> c1:kayak = 0.48159
    #   trip  (df 3): idf = ln(1 + 1.5/3.5) = 0.35667 -> each trip item = 0.14267 (a 3-way tie,
    #   broken by store order).
    [r] = rank_collection(BM25Retriever(), items_of("c1"),
                          [query("q1", "Who went kayaking on a trip?")], depth=10)
    assert r.item_ids == ("c1:kayak", "c1:trip-lake", "c1:trip-city", "c1:trip-home")
    assert r.scores is not None
    assert r.scores[0] == pytest.approx(idf(1, 4) * 0.4, rel=1e-6)
    assert r.scores[1:] == pytest.approx([idf(3, 4) * 0.4] * 3, rel=1e-6)
    assert r.system == "bm25"


def test_stemming_matches_running_and_runs_to_run() -> None:
    # c2: kayak [kayak, lake] (2), run [love, run, along, river, everi, morn] (6),
    # fact [speaker, run, river] (3); avgdl = 11/3. Query "Where does she run?": only "run"
    # is known (df 2, N 3): idf = ln(1.6) = 0.47000.
    #   fact: 0.47000 * tfc(1, 3, 11/3) = 0.47000 / 2.29545 = 0.20476
    #   run:  0.47000 * tfc(1, 6, 11/3) = 0.47000 / 3.21591 = 0.14615
    # The shorter fact wins; the kayak item shares no token and is not retrieved.
    [r] = rank_collection(BM25Retriever(), items_of("c2"),
                          [query("q2", "Where does she run?", "c2")], depth=10)
    assert r.item_ids == ("c2:fact", "c2:run")
    assert r.scores == pytest.approx([idf(2, 3) * tfc(1, 3, 11 / 3),
                                      idf(2, 3) * tfc(1, 6, 11 / 3)], rel=1e-6)
    assert BM25Retriever().tokens(["Running runs", "The runner ran"]) == [
        ["run", "run"], ["runner", "ran"]]


def test_a_query_of_stopwords_only_retrieves_nothing() -> None:
    [r] = rank_collection(BM25Retriever(), items_of("c1"),
                          [query("q", "to be or not to be")], depth=5)
    assert r.item_ids == () and r.scores == ()


def test_ties_follow_store_order_and_reruns_are_identical() -> None:
    # Three identical texts score the same; the ranking follows the store order, which here
    # is the reverse of the ids' alphabetical order.
    items = [Item(f"d{i}", "raw", text="green tea with honey", collection="c")
             for i in (3, 2, 1)]
    items.append(Item("d0", "raw", text="coffee", collection="c"))
    qs = [query("q", "honey tea", "c")]
    [r1] = rank_collection(BM25Retriever(), items, qs, depth=10)
    [r2] = rank_collection(BM25Retriever(), list(items), qs, depth=10)
    assert r1.item_ids == ("d3", "d2", "d1")
    assert r1 == r2 and r1.scores == r2.scores
    assert len(set(r1.scores or ())) == 1


def test_depth_cuts_the_ranking() -> None:
    [r] = rank_collection(BM25Retriever(), items_of("c1"),
                          [query("q1", "kayaking trip")], depth=2)
    assert r.item_ids == ("c1:kayak", "c1:trip-lake")


def test_spec_records_every_setting() -> None:
    spec = BM25Retriever(k1=1.2, b=0.5).spec()
    assert spec["k1"] == 1.2 and spec["b"] == 0.5
    assert spec["stemmer"] == "snowball:english" and spec["stopwords"] == "en"
    assert spec["method"] == "lucene"


def test_missing_bm25s_names_the_bm25_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # makes the module unimportable
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[bm25\]'"):
        BM25Retriever()


# The reference for the next test is bm25s itself (score_bm25s: its tokenizer, a full
# BM25(method="lucene") index and get_scores_from_ids): BM25Retriever.score computes the
# same float32 terms and sums from the query's postings only, with its own splitting of the
# texts as bytes, and must give the same bits.
WORDS = ["the", "a", "I", "running", "runs", "ran", "cat", "Cats", "kayaking", "to", "be",
         "42", "a1", "__", "_", "x", "don't", "co-op", "HELLO", "e-mail", "__init__",
         # non-ASCII runs: split by the regex; a capital sigma sends its text to the regex
         "café", "RÉSUMÉ", "naïve’s", "ΣΟΦΙΑ", "ΑΣ.Β", "\u212aelvin", "İZMİR", "日本語",
         "😀", "x\u0301y", "क्षत्रिय", "²", "١٢٣", "straße", "\x01"]
GLUE = [" ", "", ",", "\n", "'", ".", "\x01", "\t"]


def random_text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(WORDS) + rng.choice(GLUE) for _ in range(rng.randint(0, most)))


def test_scores_are_bm25s_scores_bit_for_bit() -> None:
    rng = random.Random(7)
    bm25 = BM25Retriever()  # one retriever: its word memo carries across collections
    for _ in range(400):
        docs = [random_text(rng, 12) for _ in range(rng.randint(1, 25))]
        queries = [random_text(rng, 6) for _ in range(rng.randint(1, 4))]
        got, ref = bm25.score(docs, queries), score_bm25s(bm25, docs, queries)
        assert got.tobytes() == ref.tobytes(), (docs, queries)
    # A capital sigma's lower case depends on its neighbours, across the "." here
    # ("ΑΣ.Β" -> "ασ.β", not "ας"): such a text is lower-cased whole.
    docs, queries = ["ΑΣ.Β x", "ασ y", "ας z"], ["ασ", "ας"]
    assert bm25.score(docs, queries).tobytes() == score_bm25s(bm25, docs, queries).tobytes()
    tuned = BM25Retriever(k1=0.9, b=0.4)
    docs = ["Running runs", "the runner ran", "", "to be", "cats run far"]
    assert tuned.score(docs, ["run cat"]).tobytes() == \
        score_bm25s(tuned, docs, ["run cat"]).tobytes()


def test_the_retriever_pickles_without_its_word_memo() -> None:
    bm25 = BM25Retriever()
    before = bm25.score(["a cat", "a dog"], ["cat"])
    again = pickle.loads(pickle.dumps(bm25))
    assert again._words is None and bm25._words is not None
    assert again.score(["a cat", "a dog"], ["cat"]).tobytes() == before.tobytes()
