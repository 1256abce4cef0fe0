"""Stage II: fixed-output rescoring of saved rankings under a target and a credit mode.

Measures are values parsed from names (:func:`parse_measures`: ``nDCG@60``, ``R@60``,
``RR@60``, ``RR``, ``Success@1``, ``P@10``). Rankings and targets are integer-coded
(:func:`encode` turns Python lists of string ids into them); :func:`score` returns one
array of per-query values per measure, NaN for zero-target queries. Credit modes
(``group``, the paper's scorer and the default; ``set``, trec_eval semantics) and their
formulas are documented on :func:`score`. :func:`rescore_files` is ``tiap rescore``: run
files (with stores and a queries file, or qrels files) in, the rescore folder out.
"""

from typing import TYPE_CHECKING

from tiap.lazy import lazy_exports
from tiap.scoring.encode import Encoded, encode
from tiap.scoring.families import family_rows
from tiap.scoring.kernels import CREDIT_MODES, Credit, RankingIndex, Targets, score, score_many
from tiap.scoring.measures import (
    DEFAULT_K,
    KNOWN_MEASURES,
    MAX_CUTOFF,
    Measure,
    MeasureSpec,
    default_measures,
    parse_measure,
    parse_measures,
    primary_measure,
)

if TYPE_CHECKING:  # pragma: no cover
    from tiap.scoring.files import RescoredFolder, rescore_files
    from tiap.scoring.folder import check_rescore_folder, write_rescore
    from tiap.scoring.rescore import NOTE_CODES, rescore_qrels

__all__ = [
    "CREDIT_MODES",
    "DEFAULT_K",
    "KNOWN_MEASURES",
    "MAX_CUTOFF",
    "NOTE_CODES",
    "Credit",
    "Encoded",
    "Measure",
    "MeasureSpec",
    "RankingIndex",
    "RescoredFolder",
    "Targets",
    "check_rescore_folder",
    "default_measures",
    "encode",
    "family_rows",
    "parse_measure",
    "parse_measures",
    "primary_measure",
    "rescore_files",
    "rescore_qrels",
    "score",
    "score_many",
    "write_rescore",
]

#: name -> module, imported on first use (PEP 562): rescoring loads the stores' and runs'
#: readers, which ``import tiap.scoring`` does not need. (``rescore`` itself is the front
#: door's, ``tiap.rescore``: here the name is its module, ``tiap.scoring.rescore``.)
_LAZY = {
    "NOTE_CODES": "tiap.scoring.rescore",
    "rescore_qrels": "tiap.scoring.rescore",
    "check_rescore_folder": "tiap.scoring.folder",
    "write_rescore": "tiap.scoring.folder",
    "rescore_files": "tiap.scoring.files",
    "RescoredFolder": "tiap.scoring.files",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
