"""Stage III: target sensitivity of fixed ranked outputs.

From the output folders of ``tiap rescore``: per-query change between targets, winner flips
between systems by one paired randomization (sign-flip) test with family-wise control and
its inverted interval (:mod:`tiap.sensitivity.stats`), design recommendations
per target, the same by category, cardinality, depth, aggregation and agreement filtering,
and answer-level alignment (docs/sensitivity.md).

>>> from tiap.sensitivity import analyze, write_sensitivity      # doctest: +SKIP
>>> res = analyze(["/tmp/s/rescore"], seed=0, resamples=10_000)   # doctest: +SKIP
>>> write_sensitivity(res, "/tmp/s/sensitivity")                  # doctest: +SKIP
"""

from tiap.sensitivity.analyze import SensitivityResult, Table, analyze, write_sensitivity
from tiap.sensitivity.compare import Comparison, compare
from tiap.sensitivity.design import parse_configs
from tiap.sensitivity.files import sensitivity_files
from tiap.sensitivity.flips import flip_undetermined, is_flip, is_flip_interval
from tiap.sensitivity.stats import CORRECTIONS, Gap, GapResult, adjust, evaluate_gaps

__all__ = [
    "CORRECTIONS",
    "Comparison",
    "Gap",
    "GapResult",
    "SensitivityResult",
    "Table",
    "adjust",
    "analyze",
    "compare",
    "evaluate_gaps",
    "flip_undetermined",
    "is_flip",
    "is_flip_interval",
    "parse_configs",
    "sensitivity_files",
    "write_sensitivity",
]
