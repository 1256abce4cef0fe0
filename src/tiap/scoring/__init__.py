"""Stage II: fixed-output rescoring of saved rankings under a target and a credit mode.

Measures are values parsed from names (:func:`parse_measures`: ``nDCG@60``, ``R@60``,
``RR@60``, ``RR``, ``Success@1``, ``P@10``). Rankings and targets are integer-coded
(:func:`encode` turns Python lists of string ids into them); :func:`score` returns one
array of per-query values per measure, NaN for zero-target queries. Credit modes
(``group``, the paper's scorer and the default; ``set``, trec_eval semantics) and their
formulas are documented on :func:`score`.
"""

from tiap.scoring.encode import Encoded, encode
from tiap.scoring.kernels import CREDIT_MODES, Credit, RankingIndex, Targets, score, score_many
from tiap.scoring.measures import (
    KNOWN_MEASURES,
    Measure,
    MeasureSpec,
    parse_measure,
    parse_measures,
)

__all__ = [
    "CREDIT_MODES",
    "KNOWN_MEASURES",
    "Credit",
    "Encoded",
    "Measure",
    "MeasureSpec",
    "RankingIndex",
    "Targets",
    "encode",
    "parse_measure",
    "parse_measures",
    "score",
    "score_many",
]
