"""Lexical retrieval: BM25 through ``bm25s``, with a Snowball (PyStemmer) English stemmer.

Text is lower-cased, split into word tokens of two or more characters (the regex
``(?u)\\b\\w\\w+\\b``), English stopwords (``bm25s``'s ``"en"`` list) are removed and each
token is stemmed, so "running" and "runs" both match "run". The statistics are per
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

The scores are ``bm25s``'s bit for bit (its float32 terms, summed in the query's token
order), computed from the postings of the queries' terms only, without a full index
(:meth:`BM25Retriever.score`); :func:`score_bm25s` computes them through ``bm25s`` itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import chain
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
        self._words: _Words | None = None

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

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_words"] = None  # a memo, rebuilt where the retriever is unpickled
        return state

    def _memo(self) -> _Words:
        words = self._words
        if words is None:
            from Stemmer import Stemmer

            tok = self._tokenizer()
            words = self._words = _Words(tok.splitter, tok.stopwords, Stemmer(self.stemmer))
        return words

    def score(self, docs: Sequence[str], queries: Sequence[str]) -> np.ndarray:
        """Scores as ``bm25s`` gives them (see :func:`score_bm25s`), computed from the
        postings of the queries' terms only: each distinct word is split off, checked
        against the stopwords and stemmed once per retriever (a memo kept across
        collections), and no full index is built."""
        out = np.full((len(queries), len(docs)), -np.inf, dtype=np.float64)
        if not docs or not queries:
            return out
        words = self._memo()
        n = len(docs)
        sids, doc_of = words.tokenize(docs)
        kept = sids >= 0
        # |d|: the tokens left after stopwords; a text left with none holds bm25s's empty
        # token, so its length is 1 (it changes avgdl, never a score).
        lengths = np.bincount(doc_of[kept], minlength=n)
        lengths[lengths == 0] = 1
        avgdl = lengths.mean()  # as bm25s: np.array(int lengths).mean()
        q_sids = [words.ids(words.split(q.lower())) for q in queries]
        q_sids = [q[q >= 0] for q in q_sids]
        wanted = np.unique(np.concatenate(q_sids)) if q_sids else np.empty(0, np.int64)
        if wanted.size == 0:
            return out
        # A lookup table over stem ids (+ 1: the -1 of stopwords; ids beyond the largest
        # one wanted are clipped to one that is not)
        top = int(wanted[-1]) + 1
        lut = np.zeros(top + 2, dtype=bool)
        lut[wanted + 1] = True
        hit = np.flatnonzero(lut[np.minimum(sids, top) + 1])
        hit_sid, hit_doc = sids[hit], doc_of[hit]
        # bm25s (lucene): idf in float32 (math.log, then stored), the term-frequency part
        # tf / (k1 * (1 - b + b * |d| / avgdl) + tf) with tf float32 and the length part
        # a float64 scalar (NumPy's promotion of the two decides the dtype), the product
        # stored as float32; a query's score sums its tokens' columns in float32, in the
        # query's token order.
        norm = self.k1 * ((1 - self.b) + self.b * lengths / avgdl)
        postings: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for sid in wanted.tolist():
            at, tf = np.unique(hit_doc[hit_sid == sid], return_counts=True)
            if at.size == 0:
                continue  # a stem this collection does not hold: dropped from the query
            idf = np.float32(math.log(1 + (n - at.size + 0.5) / (at.size + 0.5)))
            tf32 = tf.astype(np.float32)
            part = norm[at].astype(_TFC_DTYPE) + tf32
            postings[sid] = at, (idf * (tf32 / part)).astype(np.float32)
        for i, q in enumerate(q_sids):
            toks = [postings[s] for s in q.tolist() if s in postings]
            if not toks:
                continue
            acc = np.zeros(n, dtype=np.float32)
            for at, data in toks:
                acc[at] += data  # each item once per column: the same as np.add.at
            s = acc.astype(np.float64)
            out[i] = np.where(s > 0, s, -np.inf)
        return out


class _Words:
    """Each distinct word's stem id, or -1 for a stopword, kept across collections."""

    def __init__(self, splitter: Any, stopwords: Iterable[str], stemmer: Any) -> None:
        self.split = splitter
        self.stop = frozenset(stopwords)
        self.stem_words = stemmer.stemWords
        self.word_sid: dict[str, int] = {}
        self.stem_sid: dict[str, int] = {}
        self.bytes_sid: dict[bytes, int] = {b"\x01": _SEP_ID}
        self.runs: list[tuple[int, ...]] = []

    def ids(self, tokens: list[str]) -> np.ndarray:
        """The stem id of each word (-1: a stopword)."""
        known = self.word_sid
        new = list(set(tokens).difference(known))
        if new:
            new.sort()  # the ids do not depend on set order (they never reach a score)
            stop = self.stop
            stems = self.stem_words([w for w in new if w not in stop])
            stem_sid = self.stem_sid
            it = iter(stems)
            for w in new:
                if w in stop:
                    known[w] = -1
                else:
                    known[w] = stem_sid.setdefault(next(it), len(stem_sid))
        return np.fromiter(map(known.__getitem__, tokens), dtype=np.int64, count=len(tokens))

    def tokenize(self, docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every token of the docs as (stem id, doc index) arrays, in no particular order.

        The texts are split as UTF-8 bytes: one ``bytes.translate`` lower-cases ASCII
        letters and makes every other ASCII byte that is not ``[a-z0-9_]`` a space, then
        ``bytes.split`` cuts the runs. A run of ASCII bytes is exactly a run ``\\w+``
        gives (one of a single character, which ``\\w\\w+`` skips, gets the id -1 like
        a stopword); a run holding other characters is lower-cased and split by the regex
        itself, once per distinct run. Texts holding the separator or a capital sigma
        (whose lower case depends on the letters around it) go through the regex whole."""
        n = len(docs)
        text = _SEP.join(docs)
        regex_at: list[int] = []
        bytes_at: Sequence[int] = range(n)
        if text.count(_SEP_CHAR) != n - 1 or (not text.isascii() and _SIGMA in text):
            flags = [_SEP_CHAR in d or _SIGMA in d for d in docs]
            regex_at = [i for i, f in enumerate(flags) if f]
            bytes_at = [i for i, f in enumerate(flags) if not f]
            text = _SEP.join([docs[i] for i in bytes_at])
        sids_parts: list[np.ndarray] = []
        doc_parts: list[np.ndarray] = []
        if bytes_at:
            toks = text.encode("utf-8").translate(_BYTE_TABLE).split()
            known = self.bytes_sid
            new = set(toks).difference(known)
            if new:
                self._learn(sorted(new))
            codes = np.fromiter(map(known.__getitem__, toks), dtype=np.int64, count=len(toks))
            del toks
            doc = np.cumsum(codes == _SEP_ID)
            single = codes >= -1
            sids, at = codes[single], doc[single]
            multi = np.flatnonzero(codes <= _MULTI)
            if multi.size:
                runs = self.runs
                words = [runs[_MULTI - c] for c in codes[multi].tolist()]
                counts = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
                more = np.fromiter(chain.from_iterable(words), dtype=np.int64,
                                   count=int(counts.sum()))
                sids = np.concatenate([sids, more])
                at = np.concatenate([at, np.repeat(doc[multi], counts)])
            sids_parts.append(sids)
            doc_parts.append(at if isinstance(bytes_at, range)
                             else np.asarray(bytes_at, dtype=np.int64)[at])
        del text
        if regex_at:
            split = self.split
            per_doc = [split(docs[i].lower()) for i in regex_at]
            counts = np.fromiter(map(len, per_doc), dtype=np.int64, count=len(per_doc))
            sids_parts.append(self.ids(list(chain.from_iterable(per_doc))))
            doc_parts.append(np.repeat(np.asarray(regex_at, dtype=np.int64), counts))
        if len(sids_parts) == 1:
            return sids_parts[0], doc_parts[0]
        if not sids_parts:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return np.concatenate(sids_parts), np.concatenate(doc_parts)

    def _learn(self, runs: list[bytes]) -> None:
        """Give new byte runs their code: an ASCII run its word's stem id (-1: a stopword or
        one character), another run ``_MULTI - i`` for its words' stem ids ``self.runs[i]``
        (stopwords left out)."""
        known = self.bytes_sid
        plain = [r for r in runs if r.isascii()]
        if plain:
            for r, sid in zip(plain, self.ids([r.decode("ascii") for r in plain]).tolist(),
                              strict=True):
                known[r] = -1 if len(r) < 2 else sid
        for r in runs:
            if not r.isascii():
                words = self.ids(self.split(r.decode("utf-8").lower()))
                known[r] = _MULTI - len(self.runs)
                self.runs.append(tuple(words[words >= 0].tolist()))


_SEP_CHAR = "\x01"
_SEP = " \x01 "  # between two texts: a token of its own
_SEP_ID = -2
_MULTI = -3  # codes at or below: runs holding non-ASCII characters (see _Words._learn)
_SIGMA = "\u03a3"
_BYTE_TABLE = bytes(
    c + 32 if 65 <= c <= 90
    else c if (97 <= c <= 122 or 48 <= c <= 57 or c == 95 or c == 1 or c >= 128)
    else 32 for c in range(256))


#: The dtype bm25s's term-frequency part takes under this NumPy: float32 counts plus a
#: float64 scalar are float64 under NumPy 2's promotion rules, float32 under NumPy 1's.
_TFC_DTYPE = np.result_type(np.float64(1.0), np.zeros(1, dtype=np.float32))


def score_bm25s(retriever: BM25Retriever, docs: Sequence[str],
                queries: Sequence[str]) -> np.ndarray:
    """The same scores through bm25s itself: its tokenizer, a full ``BM25`` index of the
    docs and ``get_scores_from_ids`` (the reference :meth:`BM25Retriever.score` matches
    bit for bit, and the floor of benchmarks/floors_retrieval.py).

    >>> bm25 = BM25Retriever()
    >>> docs, queries = ["I adopted a cat", "The dog barks", ""], ["cat", "the"]
    >>> ref = score_bm25s(bm25, docs, queries)
    >>> ref.round(6).tolist()
    [[0.359937, -inf, -inf], [-inf, -inf, -inf]]

    By hand: the lengths are 2, 2 and 1 (the empty text holds bm25s's empty token), so
    avgdl = 5/3; ``cat`` is in 1 of 3 texts: ln(1 + 2.5 / 1.5) = 0.980829, times
    1 / (1 + 1.5 x (0.25 + 0.75 x 2 / (5/3))) = 1 / 2.725 gives 0.359937. "the" is a
    stopword: the second query retrieves nothing.
    >>> bool((ref == bm25.score(docs, queries)).all())
    True
    """
    import bm25s

    out = np.full((len(queries), len(docs)), -np.inf, dtype=np.float64)
    if not docs or not queries:
        return out
    tok = retriever._tokenizer()
    doc_ids = tok.tokenize(list(docs), update_vocab=True, return_as="ids",
                           show_progress=False, allow_empty=True)
    model = bm25s.BM25(k1=retriever.k1, b=retriever.b, method="lucene")
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
