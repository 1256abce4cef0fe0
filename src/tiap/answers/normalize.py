"""Answer text normalisation and token scores, after LoCoMo's evaluation: one home.

LoCoMo's QA evaluation (``task_eval/evaluation.py`` of snap-research/locomo) normalises an
answer in this order: drop every comma, lower-case, drop ASCII punctuation
(:data:`string.punctuation`), replace the words ``a``, ``an``, ``the`` and ``and`` (whole
words) by a space, and split on whitespace. Token F1 then Porter-stems every token (NLTK's
``PorterStemmer`` in its default mode, the ``answers`` extra) and compares the multisets;
exact match compares the *sets* of normalised tokens, unstemmed.

Two options keep other users of the same rules on one function (:func:`answer_tokens`):

- ``stem=False``: no stemming (the answer-level alignment of :mod:`tiap.sensitivity.answers`,
  which stays dependency-free);
- ``typographic=True``: also drop the typographic quotes ``“ ” ‘ ’`` (the alignment again;
  LoCoMo keeps them).

Worked example: ``"The dogs, and a cat!"`` -> no comma ``"The dogs and a cat!"`` -> lower
``"the dogs and a cat!"`` -> no punctuation ``"the dogs and a cat"`` -> no article
``"dogs cat"`` -> tokens ``["dogs", "cat"]`` -> stemmed ``["dog", "cat"]``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Any

from tiap.errors import require

__all__ = ["answer_tokens", "exact_match", "normalize_answer", "token_f1"]

_PUNCT = str.maketrans("", "", string.punctuation)
_PUNCT_TYPO = str.maketrans("", "", string.punctuation + "“”‘’")
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def normalize_answer(text: str, *, typographic: bool = False) -> str:
    """LoCoMo's normalisation (module docstring), as one string of single-spaced tokens.

    >>> normalize_answer("The dogs, and a cat!")
    'dogs cat'
    >>> normalize_answer("“Oh,” she said", typographic=True)
    'oh she said'
    """
    s = str(text).replace(",", "").lower()
    s = s.translate(_PUNCT_TYPO if typographic else _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    nltk_porter = require("nltk.stem.porter", "answers")
    return nltk_porter.PorterStemmer()  # default mode: NLTK's extensions, as LoCoMo's


def answer_tokens(text: str, *, stem: bool = True, typographic: bool = False) -> list[str]:
    """The tokens LoCoMo scores: :func:`normalize_answer` split on spaces, Porter-stemmed
    unless ``stem=False``.

    >>> answer_tokens("The dogs, and a cat!")
    ['dog', 'cat']
    >>> answer_tokens("The dogs, and a cat!", stem=False)
    ['dogs', 'cat']
    """
    words = normalize_answer(text, typographic=typographic).split()
    if not stem:
        return words
    ps = _stemmer()
    return [ps.stem(w) for w in words]


def token_f1(prediction: str, reference: str, *, stem: bool = True,
             typographic: bool = False) -> float:
    """LoCoMo's token F1: with ``c`` the multiset intersection of the two token lists,
    ``P = |c| / |pred|``, ``R = |c| / |ref|``, ``F1 = 2PR / (P + R)``; 0 when ``c`` is
    empty (both texts empty included, as LoCoMo scores them).

    Worked example: ``"went to Paris in May"`` -> ``[went, to, pari, in, may]`` and ``"Paris"``
    -> ``[pari]``: ``c = 1``, ``P = 1/5``, ``R = 1``, ``F1 = 2 * 0.2 / 1.2 = 1/3``.

    >>> round(token_f1("went to Paris in May", "Paris"), 4)
    0.3333
    >>> token_f1("", "")
    0.0
    """
    p = answer_tokens(prediction, stem=stem, typographic=typographic)
    r = answer_tokens(reference, stem=stem, typographic=typographic)
    same = sum((Counter(p) & Counter(r)).values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(r)
    return 2 * prec * rec / (prec + rec)


def exact_match(prediction: str, reference: str) -> bool:
    """LoCoMo's exact match: the *sets* of normalised tokens are equal (no stemming).

    >>> exact_match("the Paris, paris", "Paris"), exact_match("Paris and Rome", "Rome Paris")
    (True, True)
    >>> exact_match("Pariss", "Paris")
    False
    """
    return set(normalize_answer(prediction).split()) == set(normalize_answer(reference).split())
