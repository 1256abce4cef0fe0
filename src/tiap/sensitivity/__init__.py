"""Stage III: target sensitivity of fixed ranked outputs.

From the output folders of ``tiap rescore``: per-query change between targets, winner flips
between systems with paired bootstrap intervals and sign-flip tests, design recommendations
per target, the same by category, cardinality, depth, aggregation and agreement filtering,
and answer-level alignment (docs/sensitivity.md).

>>> from tiap.sensitivity import analyze, write_sensitivity      # doctest: +SKIP
>>> res = analyze(["/tmp/s/rescore"], seed=0, resamples=10_000)   # doctest: +SKIP
>>> write_sensitivity(res, "/tmp/s/sensitivity")                  # doctest: +SKIP
"""

from tiap.sensitivity.analyze import SensitivityResult, Table, analyze, write_sensitivity
from tiap.sensitivity.design import parse_configs
from tiap.sensitivity.flips import is_flip, is_significant_flip, winner_flips
from tiap.sensitivity.load import Dataset, SystemScores, load_datasets
from tiap.sensitivity.stats import (
    PairedTest,
    bootstrap_means,
    comparison_rng,
    paired_test,
    percentile_interval,
    sign_flip_pvalue,
)

__all__ = [
    "Dataset",
    "PairedTest",
    "SensitivityResult",
    "SystemScores",
    "Table",
    "analyze",
    "bootstrap_means",
    "comparison_rng",
    "is_flip",
    "is_significant_flip",
    "load_datasets",
    "paired_test",
    "parse_configs",
    "percentile_interval",
    "sign_flip_pvalue",
    "winner_flips",
    "write_sensitivity",
]
