"""Lexical retrieval: BM25 through ``bm25s``, with a Snowball (PyStemmer) English stemmer.

Text is lower-cased, split into word tokens of two or more characters (the regex
``(?u)\\b\\w\\w+\\b``), English stopwords (``bm25s``'s ``"en"`` list) are removed and each
token is stemmed, so "running" and "runs" both match "run". One index is built per
collection. Scoring is Lucene's variant of BM25 (Robertson et al., TREC-3, 1994; the variant
as named by Kamphuis, de Vries, Boytsov and Lin, "Which BM25 Do You Mean? A Large-Scale
Reproducibility Study of Scoring Variants", ECIR 2020; ``bm25s`` method ``"lucene"``)::

    score(q, d) = sum over query tokens t of
        idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

with ``k1 = 1.5`` and ``b = 0.75`` by default, ``|d|`` the number of tokens of ``d`` after
stopword removal and ``avgdl`` its mean over the collection (a query token that occurs twice
counts twice). ``idf`` is always positive, so an item scores above 0 exactly when it shares a
token with the query; items that share none are *not retrieved* (as in Lucene/Pyserini),
so a ranking may be shorter than the requested depth, and a query left with no token (all
stopwords) gets an empty ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tiap.retrieval.base import Retriever, check_extra, package_version

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
EXTRA = "bm25"


class BM25Retriever(Retriever):
    """BM25 over each collection's texts (see the module docstring for the exact formula).

    Needs the ``bm25`` extra. Items that share no token with the query are not retrieved
    (``-inf``):

    >>> bm25 = BM25Retriever()
    >>> bm25.score(["I adopted a cat", "The dog barks"], ["cat"]).round(6).tolist()
    [[0.277259, -inf]]

    By hand: the tokens (lower case, stemmed, stop words and one-letter words dropped) are
    ``adopt cat`` and ``dog bark``, so every length is the mean length (2) and ``cat`` is
    in 1 of N = 2 documents: idf = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2 = 0.693147,
    times tf / (tf + k1) = 1 / 2.5 = 0.4, gives 0.277259.

    >>> bm25.tokens(["I adopted a cat"])
    [['adopt', 'cat']]
    """

    name = "bm25"
    portable = True

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        stemmer: str = "english",
        stopwords: str = "en",
    ) -> None:
        if k1 < 0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be in [0, 1], got {b}")
        check_extra("bm25s", EXTRA)
        check_extra("Stemmer", EXTRA)
        self.k1 = float(k1)
        self.b = float(b)
        self.stemmer = stemmer
        self.stopwords = stopwords

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "implementation": "bm25s",
            "method": "lucene",
            "k1": self.k1,
            "b": self.b,
            "lowercase": True,
            "token_pattern": TOKEN_PATTERN,
            "stopwords": self.stopwords,
            "stemmer": f"snowball:{self.stemmer}",
            "not_retrieved": "items sharing no token with the query",
            "ties": "score descending, then store order",
        }

    def versions(self) -> dict[str, str]:
        return {"bm25s": package_version("bm25s"), "PyStemmer": package_version("PyStemmer")}

    def _tokenizer(self) -> Any:
        from bm25s.tokenization import Tokenizer
        from Stemmer import Stemmer

        return Tokenizer(
            lower=True,
            splitter=TOKEN_PATTERN,
            stopwords=self.stopwords,
            stemmer=Stemmer(self.stemmer),
        )

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """The stemmed tokens of each text, as BM25 sees them (for inspection and tests)."""
        tok = self._tokenizer()
        ids = tok.tokenize(list(texts), update_vocab=True, return_as="ids",
                           show_progress=False, allow_empty=False)
        return tok.decode(ids)  # type: ignore[no-any-return]

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        import bm25s

        out = np.full((len(queries), len(docs)), -np.inf, dtype=np.float64)
        if not docs or not queries:
            return out
        tok = self._tokenizer()
        doc_ids = tok.tokenize(list(docs), update_vocab=True, return_as="ids",
                               show_progress=False, allow_empty=True)
        model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        model.index((doc_ids, tok.get_vocab_dict()), show_progress=False)
        # update_vocab=False: query tokens unknown to this collection are dropped.
        query_ids = tok.tokenize(list(queries), update_vocab=False, return_as="ids",
                                 show_progress=False, allow_empty=False)
        for i, ids in enumerate(query_ids):
            if not ids:
                continue
            s = np.asarray(model.get_scores_from_ids(ids), dtype=np.float64)
            out[i] = np.where(s > 0, s, -np.inf)
        return out
